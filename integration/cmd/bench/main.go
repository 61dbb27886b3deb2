// Command bench measures what the relay costs: its throughput, client CPU
// and latency side by side with the baselines a user would compare it
// with, in one run, on one broker at a time. It is a measurement, not a
// test: it fails only when it cannot measure, and prints a warning when a
// sanity check does not hold.
//
//	make bench BENCH_ARGS='-records 20000 -runs 1'
//	go run ./integration/cmd/bench [flags]
//
// The broker is the cluster in KAFKA_BOOTSTRAP_SERVERS when set, otherwise
// a local Apache Kafka broker started with integration/kafkatest (with the
// JVM flags of Kafka's own start scripts rather than the test defaults,
// which cap the JIT for a fast start) and stopped at the end, also on
// SIGINT or SIGTERM. -memory-limit-mib gives this process, where the
// relay runs, a soft memory limit, as GOMEMLIMIT would (none by default:
// the relay binary sets none).
//
// Three nodes (-nodes 3, make bench-cluster). The local broker is a
// three-node KRaft cluster instead (integration/kafkatest's, every node
// with the single broker's properties, JVM flags and heap, and Kafka's
// own replica lag and session timers), and every topic the bench creates
// has replication factor 3 and min.insync.replicas 2, as the brokers'
// internal topics and the relay's claim ledger do. Every producer writes
// with acks=all either way: the relay's (txn enforces it), the copiers'
// and classic-alo's (idempotent, acks=all set), classic-eos's
// (transactional, acks=all set), the loader's (set) and the latency
// producer's (franz-go's default, idempotent and acks=all). The brokers'
// CPU a record (see Client CPU), every node's summed, then includes the
// replication. Every table, summary and goal is labelled "3 nodes, RF 3,
// min.insync.replicas 2; …", and the JSON holds nodes,
// replication_factor and min_insync_replicas.
//
// Across two clusters (-cross, make bench-cross). A second local broker,
// its own KRaft cluster (its own cluster id) with the first one's
// properties, JVM flags and heap, is started beside the first (and stopped with it), and the
// contender relay-eos-cross joins the throughput table right after
// relay-eos and its variants: the same relay, the same pipeline file but
// for source.cluster naming the second broker, where its copy of the
// source topic (the same records, loaded the same way) and its share
// group live; its outputs, dead letters and claim ledger are on the first
// broker, as relay-eos's. Each table then gives relay-eos-cross/relay-eos
// beside the other ratios, and a table of its own per broker setting the
// two side by side: records/s, the paired ratio and that of the medians,
// client and broker CPU a record (broker: both JVMs, in every row, as
// the second broker idles while the others run), and a goal reported
// without a target. The warm-up runs relay-eos-cross in every round, and
// its transactions of 20 records once more across the clusters, so that
// the second broker's JVM compiles what the first one's does. -cross
// takes one-node clusters and no external cluster: both are the bench's.
//
// Broker settings (-broker-record-locks). The local broker keeps Kafka's
// default share-group limits (0, the default: 4,000 record locks a
// partition, what a user's broker has), or lets a share group hold up to
// that many record locks per partition
// (group.share.max.partition.max.record.locks, 2,000 to 10,000; 10,000 is
// the setting docs/operations.md gives for the relay). A list, e.g.
// 0,10000, measures the warm-up and the throughput tables (and the
// -classic-workers comparison) once per setting, each on its own freshly
// started broker, one stopped before the next starts; every table, summary
// and goal is labelled with its setting, and the JSON holds each under
// brokers. The scaling table and the latency runs run on the first
// setting only. On an external cluster (KAFKA_BOOTSTRAP_SERVERS) the
// cluster's own limits apply, and a setting other than 0 is an error.
//
// Throughput. For each value size (-sizes) a source topic of 3 partitions
// is loaded once with -records records (keyed, JSON values with an id).
// Then seven contenders read that same topic, each through its own fresh
// group, until every record is acknowledged:
//
//	raw-share    franz-go share consumers that accept every record
//	             explicitly and produce nothing: the ceiling
//	copier       the copier a user would write by hand: share consume,
//	             idempotent produce (acks=all) to an output topic, wait for
//	             the batch's produce acks, accept the batch; no transaction
//	copier-strict  the copier acquiring at most a poll's records, splitting
//	             the source's record batches, as the relay does by default
//	             (acquire_mode record_limit; franz-go's
//	             ShareMaxRecordsStrict, which also stops its fetches from
//	             running ahead of the polls): the relay against the same
//	             loop doing the same broker work
//	relay-alo    the relay in-process, delivery: at-least-once, no
//	             transforms, the default batch settings (-relay-batch
//	             tries others)
//	relay-eos    the same with delivery: exactly-once (its own claim
//	             ledger, <pipeline>.ledger)
//	classic-eos  the exactly-once copier a team would write without share
//	             groups: franz-go's GroupTransactSession on a classic
//	             consumer group, read_committed, each poll produced and
//	             committed with its offsets in one transaction
//	classic-alo  the same loop without the transaction: each poll
//	             produced (idempotent, acks=all), then its offsets
//	             committed; classic-eos/classic-alo is what Kafka's
//	             exactly-once costs a hand-written loop on this machine
//
// Variants (-relay-variants 'consumers=2;consumers=1,max_records=4000'):
// each batch setting, key=value,... as -relay-batch takes them, separated
// by semicolons, is one more exactly-once relay contender of the
// throughput table, named after its settings
// (relay-eos{consumers=1,max_records=4000}), run right after relay-eos in
// every run so that their runs sit side by side, with its paired ratio to
// relay-eos (the defaults) printed under the table. A variant starting
// alo: is at-least-once and compared with relay-alo. Its settings go over
// -relay-batch's; a setting the relay refuses fails before any broker
// starts.
//
// The hand-written contenders (raw-share, copier, copier-strict,
// classic-eos, classic-alo) poll -hand-max-records records at a time, by
// default the relay's batch.max_records, so that every contender moves as many
// records per poll and a transaction of classic-eos holds as many records
// as one poll of the relay (Kafka's own max.poll.records default, 500,
// makes them pay their per-poll costs four times as often).
//
// A warm-up (-warmup) first runs every contender, untimed, -warmup-rounds
// times over a topic of -warmup-records, then relay-eos once more over it
// in transactions of 20 records: a fresh broker creates its internal
// share-group and transaction state topics on first use, and its JVM
// spends much of its CPU compiling at first and compiles a path fully
// only after some thousands of calls (see warmUp).
//
// Every contender runs -workers consumers, and every contender that writes
// gets a fresh output topic of 3 partitions, read back afterwards
// (read_committed) to check it holds one output per source record. A run is
// timed from the first record received to the last record acknowledged
// (the acknowledgement handed to the share consumer, which sends it with
// its next fetch; for classic-eos, the commit); the share group's lag must
// then reach 0 before the contender is stopped. The contender set is
// repeated -runs times, interleaved (a b c d e, a b c d e, ...) to spread
// machine noise, and the median records/s of each contender is reported
// with the ratios between them, the peak resident set size of this process
// during the run (the relay runs in it), and for the relay the share of the
// workers' time per phase of a batch (sharerelay_phase_seconds: poll, idle,
// transform, produce, claim_check, commit, ack).
//
// relay-eos and classic-eos are also compared at each of -classic-workers
// on the first size. The scaling table (-scaling) gives every record a
// transform of -scaling-delay (a delay step; for classic-eos a sleep per
// record): classic-eos with one consumer per partition against relay-eos
// at each of -scaling-workers, and at the first of them with
// batch.transform_concurrency -scaling-concurrency. Polls are 20 records
// there, so that every worker gets records.
//
// Client CPU. Every run records the client CPU it cost, user+system over
// the records, printed as µs/rec CPU in the run's progress line and the
// tables (the median of the runs) and written to the JSON. For a contender
// in this process (the hand-written ones, and the relay in-process) it is
// this process's CPU from the start of the contender (creating its
// clients) to its end (closing them), its bookkeeping of the run
// included; for the relay as its own process (-relay-bin), that process's
// CPU from its start to just before it is sent SIGTERM. Start and stop are
// a fixed cost: with few -records they weigh on the figure. Beside it, for
// a local broker, broker µs/rec is the CPU its JVMs (every node of a
// cluster, summed) used over the same span, over the records: on one
// machine the brokers and the clients compete for the same cores.
//
// The live auditor (-audit-runs, with -relay-bin). relay-eos runs once
// more as its own process per size with `relay audit` beside it, as an
// operator runs the two; the auditor's CPU (from its start until it has
// judged every record) in seconds per million records and its peak RSS
// are printed beside the relay's of the same run (audit.go). This run is
// apart from relay-eos-bin's, whose figures stay the relay's alone.
//
// Goals are checked at the end (and written to the JSON output), per
// broker setting: per size relay-eos ≥ 1.0× classic-eos at -workers and
// ≥ 0.9× relay-alo, relay-eos ≥ 0.95× the best of its variants (the
// defaults land within 5% of the best hand-tuned setting tried), and, from
// the throughput issue before, relay-alo ≥ 0.9× copier, relay-eos ≥ 0.8×
// copier and the relay process's peak RSS; relay-eos over classic-eos at
// each of -classic-workers is reported without a target.
// On the first setting: relay-eos ≥ 1.8× classic-eos at 6 workers in the
// scaling table, and the latency against the baseline's. A throughput
// ratio is the median of the paired per-run ratios (run i of one
// contender over run i of the other, taken side by side), the ratio of
// the two medians printed beside it: on a shared machine the same
// contender's speed drifts over minutes, and only runs side by side
// compare (docs/benchmarks.md).
//
// Latency (-latency). For relay-alo and relay-eos in turn, a steady producer
// writes -rate records/s for -latency-duration into a fresh source topic
// while the relay runs; a read_committed consumer on the output takes, for
// each output, the time it became visible minus the time the producer's
// promise reported the source record appended (both on this process's
// monotonic clock, so a remote broker's clock does not matter), matched
// through the sharerelay.source.* lineage headers. p50/p90/p99/max are
// reported in milliseconds.
//
// -trace prints, after every contender run, the latency of each kind of
// Kafka request its clients made, the CPU time the local broker and this
// process used (per record, and the broker's by thread job: request
// handlers, JIT compilers, share-state persister, transaction marker
// sender, ...), and, for the relay, the time per batch and in the
// exactly-once claim (through a wrapped eos.Guard on a ledger opened the
// way the relay opens it). -cpuprofile-dir writes a CPU profile of this
// process (the relay runs in it) per contender run and, for a local
// broker, a Java Flight Recorder recording of the broker (through the
// JDK's jcmd; `jfr print --events jdk.ExecutionSample` reads it).
//
// -relay-batch, -relay-group and -relay-compression try other settings of
// the relay contenders (batch:, source.group_configs and
// client.producer.compression) in the throughput and latency runs.
//
// The elastic fleet (-fleet, make bench-fleet) runs instead of all of the
// above: the shipped relay (-relay-bin) as processes, each its own
// instance, scaled along -fleet-schedule under a backlog that never runs
// dry, and per plateau the committed output rate against N × one
// instance's, the time to reach it and the CPU of the relays and the
// broker, then the verifier's verdict (fleet.go says how each figure is
// taken). -fleet-csv keeps the samples, which integration/cmd/fleetchart
// draws.
//
// Progress goes to stderr, the result tables to stdout, and with -json the
// results also to a file.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/sharerelay/sharerelay/config"
	"github.com/sharerelay/sharerelay/integration/kafkatest"
)

// sourceRecordOverhead is what a record batch of the source topics holds
// beyond one record's value: the batch header (61 bytes), the record's
// framing and its key, with room to spare.
const sourceRecordOverhead = 1024

// options are the command's flags.
type options struct {
	records         int
	sizes           []int
	runs            int
	workers         int
	latency         bool
	rate            int
	latencyDuration time.Duration
	jsonPath        string
	warmUp          bool
	warmUpRecords   int
	warmUpRounds    int
	trace           bool
	cpuProfileDir   string

	// handMaxRecords is the poll size of the hand-written contenders
	// (raw-share, copier, classic-eos, classic-alo).
	handMaxRecords int
	// sourceBatchBytes caps the record batches the source topics are
	// written in (0: franz-go's default, 1 MiB).
	sourceBatchBytes int
	// classicWorkers are the extra worker counts at which relay-eos and
	// classic-eos are compared (the throughput table covers workers).
	classicWorkers []int
	// The scaling table.
	scaling            bool
	scalingRecords     int
	scalingDelay       time.Duration
	scalingWorkers     []int
	scalingConcurrency int
	// only, when set, limits the throughput table to these contenders.
	only []string
	// relayBatch are batch settings of the relay contenders
	// (-relay-batch key=value,...), e.g. to try other defaults.
	relayBatch map[string]string
	// relayGroup are share-group configs of the relay contenders
	// (-relay-group key=value,...: source.group_configs).
	relayGroup map[string]string
	// relayClient are client settings of the relay contenders
	// (-relay-client section.key=value,...), e.g.
	// consumer.fetch_max_bytes.
	relayClient map[string]string
	// relayCompression is the relay contenders' client.producer.compression
	// ("": the relay's default).
	relayCompression string
	// brokerRecordLocks are the local broker's settings of
	// group.share.max.partition.max.record.locks (0: Kafka's default),
	// one fresh broker each, measured in turn.
	brokerRecordLocks []int
	// nodes is the size of the local cluster: 1 broker, or 3 nodes
	// with every topic at replication factor 3 (-nodes).
	nodes int
	// variants are the extra relay contenders of -relay-variants: relay-eos
	// (or relay-alo) with batch settings of their own.
	variants []contender
	// memoryLimitMiB is this process's soft memory limit
	// (debug.SetMemoryLimit; 0: the runtime's, from GOMEMLIMIT).
	memoryLimitMiB int
	// relayBin is the shipped relay binary; when set, each relay
	// contender also runs as its own process (relay run) over each
	// source topic, for that process's peak RSS.
	relayBin    string
	processRuns int
	// auditRuns are the runs of relay-eos as its own process with the
	// live auditor beside it, per size (with relayBin; audit.go).
	auditRuns int
	// latencyBaseline is a bench binary built from an earlier commit
	// (make bench: BENCH_BASELINE); its latency runs alternate with
	// this one's on the same broker, latencyRounds times.
	latencyBaseline string
	latencyRounds   int
	// cross starts a second local broker as the source cluster of the
	// contender relay-eos-cross (-cross).
	cross bool
	// fleet measures the elastic fleet (fleet.go) instead of the
	// tables, as fleetOpts say.
	fleet     bool
	fleetOpts fleetOptions
}

// parseFlags parses and checks the command's flags.
func parseFlags(args []string) (options, error) {
	var o options
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	lists := o.defineFlags(fs)
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	if o.memoryLimitMiB < 0 {
		return o, fmt.Errorf("-memory-limit-mib: %d is negative (0: the runtime's own limit)", o.memoryLimitMiB)
	}
	if err := o.parseLists(lists); err != nil {
		return o, err
	}
	if err := o.checkFleet(*lists.fleetSchedule); err != nil {
		return o, err
	}
	if fs.NArg() > 0 {
		return o, fmt.Errorf("unexpected arguments: %v", fs.Args())
	}
	for s := range strings.SplitSeq(*lists.sizes, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || n < 1 || n > 512<<10 {
			return o, fmt.Errorf("-sizes: %q is not a size between 1 and %d bytes", s, 512<<10)
		}
		o.sizes = append(o.sizes, n)
	}
	if err := o.check(); err != nil {
		return o, err
	}
	if err := o.checkRelaySettings(); err != nil {
		return o, err
	}
	return o, nil
}

// checkRelaySettings parses the pipeline file of every relay contender of
// the throughput table, so that a setting the relay refuses fails before
// a broker starts, not after the warm-up.
func (o options) checkRelaySettings() error {
	b := &bench{opts: o, br: &broker{seeds: []string{"localhost:9092"}}}
	cs := append([]contender{relayALO, relayEOS}, o.variants...)
	if o.cross {
		b.src = &bench{opts: o, br: &broker{seeds: []string{"localhost:9093"}}}
		cs = append(cs, relayEOSCross)
	}
	for _, c := range cs {
		t := trial{c: c, name: "check", source: "check.src", output: "check.out", dlq: "check.dlq", workers: o.workers}
		if _, err := b.pipeline(t); err != nil {
			if c.base != "" {
				return fmt.Errorf("-relay-variants, %s: %w", c.name, err)
			}
			return fmt.Errorf("-relay-batch, -relay-group, -relay-client or -relay-compression: %w", err)
		}
	}
	return nil
}

// listFlags are the flags given as lists, parsed into options after
// fs.Parse.
type listFlags struct {
	sizes, classicWorkers, scalingWorkers, only, relayBatch, relayGroup, relayClient *string
	brokerRecordLocks, relayVariants, fleetSchedule                                  *string
}

// defineFlags defines the command's flags on fs: the plain ones into o, the
// lists into the returned listFlags.
func (o *options) defineFlags(fs *flag.FlagSet) listFlags {
	var l listFlags
	fs.IntVar(&o.records, "records", 1000000, "records per source topic")
	l.sizes = fs.String("sizes", "200,1024", "value sizes in bytes, comma separated; one source topic each")
	fs.IntVar(&o.runs, "runs", 5, "runs of the whole contender set per size (the median is reported)")
	fs.IntVar(&o.workers, "workers", 2, "share consumers per contender (the relay's workers)")
	fs.BoolVar(&o.latency, "latency", true, "measure end-to-end latency of relay-alo and relay-eos")
	fs.IntVar(&o.rate, "rate", 2000, "records/s of the latency producer")
	fs.DurationVar(&o.latencyDuration, "latency-duration", 15*time.Second, "how long the latency producer runs per contender")
	fs.StringVar(&o.jsonPath, "json", "", "also write the results as JSON to this file")
	fs.BoolVar(&o.warmUp, "warmup", true, "first run every contender over a warm-up topic, untimed")
	fs.IntVar(&o.warmUpRecords, "warmup-records", 100000, "records of the warm-up topic")
	fs.IntVar(&o.warmUpRounds, "warmup-rounds", 3, "warm-up rounds (every contender once each)")
	fs.BoolVar(&o.trace, "trace", false, "print request latencies and relay batch phases after each contender run")
	fs.StringVar(&o.cpuProfileDir, "cpuprofile-dir", "", "write a CPU profile of each contender run, and a heap profile at half of it, into this directory")
	l.classicWorkers = fs.String("classic-workers", "3", "extra worker counts, comma separated, at which relay-eos and classic-eos are compared on the first size (\"\" for none)")
	fs.BoolVar(&o.scaling, "scaling", true, "run the scaling table (a slow transform)")
	fs.IntVar(&o.scalingRecords, "scaling-records", 6000, "records of the scaling table")
	fs.DurationVar(&o.scalingDelay, "scaling-delay", 5*time.Millisecond, "transform time per record in the scaling table")
	l.scalingWorkers = fs.String("scaling-workers", "3,6,12", "relay-eos worker counts of the scaling table")
	fs.IntVar(&o.scalingConcurrency, "scaling-concurrency", 8, "batch.transform_concurrency of an extra scaling row at the first worker count (0 or 1: no extra row)")
	l.only = fs.String("contenders", "", "only these contenders in the throughput table, comma separated (default all)")
	l.relayBatch = fs.String("relay-batch", "", "batch settings of the relay contenders in the throughput and latency runs, e.g. consumers=4,linger=10ms (default: the relay's defaults)")
	l.relayGroup = fs.String("relay-group", "", "share-group configs of the relay contenders in the throughput and latency runs (source.group_configs), e.g. share.partition.max.record.locks=4000")
	l.relayClient = fs.String("relay-client", "", "client settings of the relay contenders in the throughput and latency runs, section.key=value, e.g. consumer.fetch_max_bytes=4194304 (default: the relay's defaults)")
	fs.StringVar(&o.relayCompression, "relay-compression", "", "client.producer.compression of the relay contenders in the throughput and latency runs (default: the relay's default)")
	fs.IntVar(&o.memoryLimitMiB, "memory-limit-mib", 0, "soft memory limit of this process, where the relay runs, in MiB, as GOMEMLIMIT would set it (0: the runtime's own, from GOMEMLIMIT); see docs/operations.md, Memory")
	fs.StringVar(&o.relayBin, "relay-bin", "", "the relay binary (make build: bin/relay); each relay contender then also runs as its own process over each source topic, for the relay's own peak RSS")
	fs.IntVar(&o.handMaxRecords, "hand-max-records", config.DefaultMaxRecords, "records per poll of the hand-written contenders (raw-share, copier, copier-strict, classic-eos, classic-alo); the default is the relay's batch.max_records, Kafka's max.poll.records default is 500")
	fs.IntVar(&o.sourceBatchBytes, "source-batch-bytes", 0, "the largest record batch the source topics are written in (0: franz-go's default, 1 MiB; 16384 is the Java producer's batch.size): a share fetch that acquires part of a batch makes the broker track each of its records apart")
	fs.IntVar(&o.processRuns, "process-runs", 1, "runs of each relay contender as its own process per size (with -relay-bin)")
	fs.IntVar(&o.auditRuns, "audit-runs", 1, "runs per size of relay-eos as its own process with the live auditor (relay audit) beside it, for the auditor's CPU and peak RSS beside the relay's (with -relay-bin; 0: none)")
	fs.StringVar(&o.latencyBaseline, "latency-baseline", "", "a bench binary of an earlier commit (make bench builds BENCH_BASELINE's); its latency runs alternate with this one's on the same broker, and the goal is the p99 ratio")
	fs.IntVar(&o.latencyRounds, "latency-rounds", 3, "rounds of the latency runs (each relay contender, and the baseline's, once a round); the medians are reported")
	l.brokerRecordLocks = fs.String("broker-record-locks", "0", "the local broker's group.share.max.partition.max.record.locks, the most record locks a share group may set per partition, comma separated: the warm-up and throughput tables run once per setting, each on a fresh broker, latency and scaling on the first (0: Kafka's default share-group limits; 10000: the setting docs/operations.md gives; e.g. 0,10000)")
	fs.IntVar(&o.nodes, "nodes", 1, "nodes of the local broker: 1, or 3 for a three-node KRaft cluster with every topic at replication factor 3 and min.insync.replicas 2 (a fresh cluster per -broker-record-locks setting)")
	fs.BoolVar(&o.cross, "cross", false, "also run relay-eos-cross beside relay-eos: the same relay with its source topic and share group on a second local broker (its own KRaft cluster, the same settings) and its outputs, dead letters and claim ledger on the first; the tables give cross-cluster over same-cluster (one-node clusters only, no external cluster)")
	l.fleetSchedule = o.defineFleetFlags(fs)
	l.relayVariants = fs.String("relay-variants", "", "extra relay-eos contenders of the throughput table, each with batch settings of its own, separated by semicolons, e.g. 'consumers=2;consumers=1,max_records=4000'; a variant starting alo: is relay-alo's (e.g. alo:consumers=2)")
	return l
}

// parseLists parses the worker-count, key=value and contender lists of l
// into o.
func (o *options) parseLists(l listFlags) error {
	var err error
	if o.classicWorkers, err = intList("-classic-workers", *l.classicWorkers, 1, config.MaxWorkers); err != nil {
		return err
	}
	if o.scalingWorkers, err = intList("-scaling-workers", *l.scalingWorkers, 1, config.MaxWorkers); err != nil {
		return err
	}
	if o.scaling && len(o.scalingWorkers) == 0 {
		return fmt.Errorf("-scaling-workers: at least one worker count")
	}
	if o.relayBatch, err = keyValues("-relay-batch", *l.relayBatch); err != nil {
		return err
	}
	if o.relayGroup, err = keyValues("-relay-group", *l.relayGroup); err != nil {
		return err
	}
	if o.relayClient, err = keyValues("-relay-client", *l.relayClient); err != nil {
		return err
	}
	for k := range o.relayClient {
		if sec, key, ok := strings.Cut(k, "."); !ok || sec == "" || key == "" {
			return fmt.Errorf("-relay-client: %q is not section.key (e.g. consumer.fetch_max_bytes)", k)
		}
	}
	if o.only, err = contenderList(*l.only); err != nil {
		return err
	}
	if o.variants, err = parseVariants(*l.relayVariants, o.only); err != nil {
		return err
	}
	external := len(kafkatest.ExternalSeeds()) > 0
	if o.brokerRecordLocks, err = recordLockSettings(*l.brokerRecordLocks, external); err != nil {
		return err
	}
	if err := checkNodes(o.nodes, external); err != nil {
		return err
	}
	return checkCross(o.cross, o.only, o.nodes, external)
}

// checkCross checks -cross against the contenders and the cluster.
// relay-eos-cross reads from the second broker that -cross starts, and is
// compared with relay-eos, which must run beside it. Both clusters are
// the bench's own one-node brokers, of the same settings: against an
// external cluster, or a three-node one, the cluster split would not be
// the only difference between the two rows. external is whether
// KAFKA_BOOTSTRAP_SERVERS names a cluster.
func checkCross(cross bool, only []string, nodes int, external bool) error {
	switch {
	case !cross && slices.Contains(only, relayEOSCross.name):
		return fmt.Errorf("-contenders: %s reads its source from a second local broker, which -cross starts; add -cross", relayEOSCross.name)
	case !cross:
		return nil
	case external:
		return fmt.Errorf("-cross: starts a second local broker as the source cluster, to compare with one local broker, but %s names an external cluster; unset %s", kafkatest.EnvBootstrap, kafkatest.EnvBootstrap)
	case nodes != 1:
		return fmt.Errorf("-cross: the source cluster is one local broker, and the sink must be its like; leave out -nodes %d", nodes)
	case len(only) > 0 && !slices.Contains(only, relayEOS.name):
		return fmt.Errorf("-cross: %s is compared with %s, which -contenders leaves out", relayEOSCross.name, relayEOS.name)
	}
	return nil
}

// checkNodes checks -nodes: 1, or kafkatest.ClusterSize (3), the
// replication factor of production clusters; two nodes would mean
// replication factor 2 with min.insync.replicas 1, which a node's loss
// can cost acknowledged records, not a setting worth measuring. external
// is whether KAFKA_BOOTSTRAP_SERVERS names a cluster, whose nodes the
// bench does not choose.
func checkNodes(n int, external bool) error {
	switch {
	case n != 1 && n != kafkatest.ClusterSize:
		return fmt.Errorf("-nodes: %d is neither 1 (one broker) nor %d (a local cluster, replication factor %d)", n, kafkatest.ClusterSize, kafkatest.ClusterSize)
	case external && n != 1:
		return fmt.Errorf("-nodes %d: starts a local cluster, but %s names an external cluster, which has its own nodes; leave the flag out, or unset %s", n, kafkatest.EnvBootstrap, kafkatest.EnvBootstrap)
	}
	return nil
}

// contenderList parses -contenders: names of the contenders of the
// throughput table (nil for all).
func contenderList(s string) ([]string, error) {
	var out []string
	for name := range strings.SplitSeq(s, ",") {
		name = strings.TrimSpace(name)
		if name == "" {
			continue
		}
		if !slices.ContainsFunc(contenders, func(c contender) bool { return c.name == name }) {
			return nil, fmt.Errorf("-contenders: unknown contender %q", name)
		}
		out = append(out, name)
	}
	return out, nil
}

// recordLockSettings parses -broker-record-locks: the local broker's
// settings of group.share.max.partition.max.record.locks, each 0 (Kafka's
// default) or in Kafka's range. external is whether KAFKA_BOOTSTRAP_SERVERS
// names a cluster: its own limits apply, which the bench cannot set.
func recordLockSettings(s string, external bool) ([]int, error) {
	var out []int
	for part := range strings.SplitSeq(s, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		n, err := strconv.Atoi(part)
		if err != nil || (n != 0 && (n < minMaxRecordLocks || n > maxMaxRecordLocks)) {
			return nil, fmt.Errorf("-broker-record-locks: %q is not 0 (Kafka's default) or a number between %d and %d (Kafka's range)", part, minMaxRecordLocks, maxMaxRecordLocks)
		}
		if slices.Contains(out, n) {
			return nil, fmt.Errorf("-broker-record-locks: %d is listed twice", n)
		}
		out = append(out, n)
	}
	switch {
	case len(out) == 0:
		return nil, fmt.Errorf("-broker-record-locks: at least one setting (0: Kafka's default)")
	case external && len(out) > 1:
		return nil, fmt.Errorf("-broker-record-locks %s: one fresh local broker per setting, but %s names an external cluster; list one setting, or unset %s", s, kafkatest.EnvBootstrap, kafkatest.EnvBootstrap)
	case external && out[0] != 0:
		return nil, fmt.Errorf("-broker-record-locks %d: sets a local broker's limit, but %s names an external cluster, which keeps its own; leave the flag out, or unset %s", out[0], kafkatest.EnvBootstrap, kafkatest.EnvBootstrap)
	}
	return out, nil
}

// check checks the parsed options' numbers against each other and their
// ranges.
func (o *options) check() error {
	switch {
	case o.records < 1:
		return fmt.Errorf("-records must be at least 1, got %d", o.records)
	case o.warmUp && (o.warmUpRecords < 1 || o.warmUpRounds < 1):
		return fmt.Errorf("-warmup-records and -warmup-rounds must be at least 1")
	case o.runs < 1:
		return fmt.Errorf("-runs must be at least 1, got %d", o.runs)
	case o.handMaxRecords < 1 || o.handMaxRecords > config.MaxMaxRecords:
		return fmt.Errorf("-hand-max-records must be between 1 and %d (the relay's batch.max_records range), got %d", config.MaxMaxRecords, o.handMaxRecords)
	case o.workers < 1 || o.workers > config.MaxWorkers:
		return fmt.Errorf("-workers must be between 1 and %d, got %d", config.MaxWorkers, o.workers)
	case o.latency && o.rate < 1:
		return fmt.Errorf("-rate must be at least 1, got %d", o.rate)
	case o.latency && o.latencyRounds < 1:
		return fmt.Errorf("-latency-rounds must be at least 1, got %d", o.latencyRounds)
	case o.sourceBatchBytes != 0 && (o.sourceBatchBytes < slices.Max(o.sizes)+sourceRecordOverhead || o.sourceBatchBytes > 16<<20):
		return fmt.Errorf("-source-batch-bytes must hold one record of the largest of -sizes (at least %d) and be at most %d (0: franz-go's default), got %d",
			slices.Max(o.sizes)+sourceRecordOverhead, 16<<20, o.sourceBatchBytes)
	case o.relayBin != "" && o.processRuns < 0:
		return fmt.Errorf("-process-runs must not be negative, got %d", o.processRuns)
	case o.auditRuns < 0:
		return fmt.Errorf("-audit-runs must not be negative, got %d", o.auditRuns)
	case o.latency && o.latencyDuration <= 0:
		return fmt.Errorf("-latency-duration must be positive, got %s", o.latencyDuration)
	case o.scaling && (o.scalingRecords < 1 || o.scalingDelay < 0):
		return fmt.Errorf("-scaling-records must be at least 1 and -scaling-delay not negative")
	}
	return nil
}

// keyValues parses a comma-separated list of key=value pairs (nil when
// empty).
func keyValues(flag, s string) (map[string]string, error) {
	var out map[string]string
	for kv := range strings.SplitSeq(s, ",") {
		if kv = strings.TrimSpace(kv); kv == "" {
			continue
		}
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" || v == "" {
			return nil, fmt.Errorf("%s: %q is not key=value", flag, kv)
		}
		if out == nil {
			out = make(map[string]string)
		}
		out[k] = v
	}
	return out, nil
}

// intList parses a comma-separated list of integers between lo and hi.
func intList(flag, s string, lo, hi int) ([]int, error) {
	var out []int
	for part := range strings.SplitSeq(s, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		n, err := strconv.Atoi(part)
		if err != nil || n < lo || n > hi {
			return nil, fmt.Errorf("%s: %q is not a number between %d and %d", flag, part, lo, hi)
		}
		out = append(out, n)
	}
	return out, nil
}

func main() {
	opts, err := parseFlags(os.Args[1:])
	if errors.Is(err, flag.ErrHelp) {
		return
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	go func() {
		<-ctx.Done()
		// From now on a second signal kills the process at once.
		stop()
	}()
	err = run(ctx, opts)
	stop()
	if err != nil {
		if ctx.Err() != nil {
			err = fmt.Errorf("interrupted: %w", err)
		}
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

// run does the whole measurement: the warm-up and the throughput tables
// on each broker setting in turn, the scaling table and the latency runs
// on the first. It stops every broker it started, and every goroutine it
// started, before it returns.
func run(ctx context.Context, opts options) error {
	began := time.Now()
	if opts.memoryLimitMiB > 0 {
		debug.SetMemoryLimit(int64(opts.memoryLimitMiB) << 20)
	}
	if opts.fleet {
		return runFleet(ctx, opts)
	}
	res := newResults(opts, began, len(kafkatest.ExternalSeeds()) > 0)
	for i, locks := range opts.brokerRecordLocks {
		if err := measureOnBroker(ctx, opts, locks, i == 0, &res); err != nil {
			return err
		}
	}
	return finish(opts, res, began)
}

// newResults returns the results of a run begun at began, before anything
// is measured: what was asked, and on a local broker (not external) its
// node count and the replication of the topics the bench creates.
func newResults(opts options, began time.Time, external bool) results {
	res := results{
		Started: began.UTC(), MemoryLimitMiB: memoryLimitMiB(), Records: opts.records, Runs: opts.runs,
		Workers: opts.workers, Sizes: opts.sizes, HandMaxRecords: opts.handMaxRecords, Cross: opts.cross,
	}
	if !external {
		res.Nodes = opts.nodes
		res.ReplicationFactor, res.MinInsyncReplicas = replication(opts.nodes)
	}
	return res
}

// measureOnBroker starts the broker of one -broker-record-locks setting
// (or takes the external cluster), runs the warm-up and the throughput
// tables on it into res, and on the first setting the scaling table and
// the latency runs too, then stops the broker: one broker at a time on
// the machine.
func measureOnBroker(ctx context.Context, opts options, locks int, first bool, res *results) (err error) {
	br, err := getBroker(ctx, locks, opts.nodes, "")
	if err != nil {
		return err
	}
	defer func() {
		if serr := br.stop(); serr != nil {
			err = errors.Join(err, serr)
		}
	}()
	b, err := newBench(opts, br)
	if err != nil {
		return err
	}
	defer b.close()
	if opts.cross {
		stopSource, serr := b.startSource(ctx, locks)
		if serr != nil {
			return serr
		}
		defer func() { err = errors.Join(err, stopSource()) }()
	}
	setting := b.describeLimits(ctx)
	res.Broker = br.kind
	progress("broker %s (%s, %s); %d records per size, sizes %v, %d runs, %d workers, hand-written contenders poll %d records; this process's memory limit %s",
		strings.Join(br.seeds, ","), br.kind, setting, opts.records, opts.sizes, opts.runs, opts.workers, opts.handMaxRecords, memoryLimitNote())

	if b.src != nil {
		progress("-cross: %s reads its source from the second broker %s, and writes to %s", relayEOSCross.name, strings.Join(b.src.br.seeds, ","), strings.Join(br.seeds, ","))
	}
	if opts.warmUp {
		if err := b.warmUp(ctx); err != nil {
			return err
		}
	}
	brr := brokerResult{RecordLocks: locks, Setting: setting}
	if err := b.throughputTables(ctx, &brr); err != nil {
		return err
	}
	res.Brokers = append(res.Brokers, brr)
	if !first {
		return nil
	}
	if opts.scaling {
		sc, err := b.scaling(ctx)
		if err != nil {
			return fmt.Errorf("scaling: %w", err)
		}
		res.Scaling = sc
		printScaling(os.Stdout, setting, sc)
	}
	if opts.latency {
		if err := b.latencyTable(ctx, setting, res); err != nil {
			return err
		}
	}
	return nil
}

// sourceClusterID is the KRaft cluster id of the second broker (-cross):
// another than the first one's, as two clusters have.
var sourceClusterID = kafkatest.NamedClusterID("bench-source")

// startSource starts the source cluster of relay-eos-cross (-cross): a
// second local broker with the first one's settings (recordLocks among
// them: the share group lives there) and a cluster id of its own, as
// b.src. stop stops it and removes its directory.
func (b *bench) startSource(ctx context.Context, recordLocks int) (stop func() error, err error) {
	progress("-cross: starting the source cluster of %s, a second local broker with the same settings", relayEOSCross.name)
	sb, err := getBroker(ctx, recordLocks, 1, sourceClusterID)
	if err != nil {
		return nil, fmt.Errorf("-cross: the source cluster: %w", err)
	}
	src, err := newBench(b.opts, sb)
	if err != nil {
		return nil, errors.Join(err, sb.stop())
	}
	src.runID = b.runID // the same names on both clusters
	b.src = src
	return func() error {
		src.close()
		b.src = nil
		if err := sb.stop(); err != nil {
			return fmt.Errorf("-cross: the source cluster: %w", err)
		}
		return nil
	}, nil
}

// throughputTables measures and prints the throughput table of each size,
// then relay-eos against classic-eos at each of -classic-workers, into br.
func (b *bench) throughputTables(ctx context.Context, br *brokerResult) error {
	opts := b.opts
	for _, size := range opts.sizes {
		sr, err := b.throughput(ctx, size)
		if err != nil {
			return fmt.Errorf("throughput, %d B values (broker: %s): %w", size, br.Setting, err)
		}
		br.Throughput = append(br.Throughput, sr)
		printSize(os.Stdout, br.Setting, sr)
	}
	for _, w := range opts.classicWorkers {
		if w == opts.workers {
			continue // in the throughput table
		}
		cr, err := b.compareClassic(ctx, opts.sizes[0], w)
		if err != nil {
			return fmt.Errorf("relay-eos vs classic-eos at %d workers (broker: %s): %w", w, br.Setting, err)
		}
		br.Classic = append(br.Classic, cr)
	}
	printClassic(os.Stdout, br.Setting, br.Classic)
	return nil
}

// latencyTable measures the latency rounds on the first size and prints
// their medians, into res; setting names the broker setting.
func (b *bench) latencyTable(ctx context.Context, setting string, res *results) error {
	rounds, err := b.latencyRounds(ctx, b.opts.sizes[0])
	if err != nil {
		return err
	}
	res.LatencyRounds = rounds
	res.Latency = latencyMedians(rounds, func(r latencyRound) []latencyResult { return r.Now })
	res.LatencyBaseline = latencyMedians(rounds, func(r latencyRound) []latencyResult { return r.Baseline })
	printLatency(os.Stdout, setting, *res)
	return nil
}

// finish prints the summary of each broker setting and the goals, and
// writes res to -json; began is when the run began.
func finish(opts options, res results, began time.Time) error {
	for i := range res.Brokers {
		br := &res.Brokers[i]
		printCross(os.Stdout, br.Setting, br.Throughput)
		br.EOSOverALO = printSummary(os.Stdout, br.Setting, br.Throughput)
	}
	res.Goals = goals(res)
	printGoals(os.Stdout, res.Goals)
	res.Elapsed = time.Since(began).Round(time.Millisecond).String()
	if opts.jsonPath != "" {
		if err := writeJSON(opts.jsonPath, res); err != nil {
			return err
		}
		progress("results written to %s", opts.jsonPath)
	}
	progress("done in %s", time.Since(began).Round(time.Second))
	return nil
}

// progress prints a timestamped progress line to stderr.
func progress(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "%s bench: %s\n", time.Now().Format("15:04:05.000"), fmt.Sprintf(format, args...))
}
