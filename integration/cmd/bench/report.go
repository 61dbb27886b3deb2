package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// results is everything measured, as written by -json.
type results struct {
	Started time.Time `json:"started"`
	Elapsed string    `json:"elapsed"`
	Broker  string    `json:"broker"`
	Records int       `json:"records"`
	Runs    int       `json:"runs"`
	Workers int       `json:"workers"`
	Sizes   []int     `json:"sizes"`
	// HandMaxRecords is the poll size of the hand-written contenders.
	HandMaxRecords int `json:"hand_max_records"`
	// Brokers are the warm-up and throughput tables once per broker
	// setting (-broker-record-locks), in the order they ran.
	Brokers []brokerResult `json:"brokers"`
	// Scaling and the latency runs ran on the first broker setting only.
	Scaling *scalingResult `json:"scaling,omitempty"`
	// Latency are the medians over the latency rounds; LatencyBaseline
	// the baseline bench's (-latency-baseline), run side by side.
	Latency         []latencyResult `json:"latency,omitempty"`
	LatencyBaseline []latencyResult `json:"latency_baseline,omitempty"`
	LatencyRounds   []latencyRound  `json:"latency_rounds,omitempty"`
	// Goals are the targets checked, each naming the broker setting it
	// was measured on.
	Goals []goal `json:"goals"`
	// MemoryLimitMiB is this process's soft memory limit (0: none).
	MemoryLimitMiB int `json:"memory_limit_mib,omitempty"`
	// Nodes is the local broker's node count (-nodes), and
	// ReplicationFactor and MinInsyncReplicas those of every topic the
	// bench created on it; all 0 on an external cluster.
	Nodes             int `json:"nodes,omitempty"`
	ReplicationFactor int `json:"replication_factor,omitempty"`
	MinInsyncReplicas int `json:"min_insync_replicas,omitempty"`
	// Cross says relay-eos-cross ran, its source on a second local
	// broker (-cross); each size's CrossCluster compares it with
	// relay-eos.
	Cross bool `json:"cross,omitempty"`
}

// brokerResult is what was measured on one broker setting.
type brokerResult struct {
	// RecordLocks is the local broker's
	// group.share.max.partition.max.record.locks as set (0: Kafka's
	// default, or an external cluster's own setting).
	RecordLocks int `json:"record_locks"`
	// Setting says it in words, with the limit the broker reported:
	// the label of its tables and goals.
	Setting    string          `json:"setting"`
	Throughput []sizeResult    `json:"throughput"`
	Classic    []classicResult `json:"classic,omitempty"`
	// EOSOverALO is relay-eos over relay-alo, the geometric mean over
	// the sizes of the ratios of the medians.
	EOSOverALO float64 `json:"eos_over_alo"`
}

// sizeResult is the throughput of every contender for one value size.
type sizeResult struct {
	Size       int                `json:"size"`
	Records    int                `json:"records"`
	Contenders []contenderResult  `json:"contenders"`
	Ratios     map[string]float64 `json:"ratios"`
	// Paired are the medians of the per-run ratios: run i of a over run
	// i of b, which ran side by side (see pairedRatio).
	Paired map[string]float64 `json:"paired_ratios"`
	// Process are the relay contenders run as their own process, the
	// shipped binary (-relay-bin): the relay's own peak RSS.
	Process []contenderResult `json:"relay_process,omitempty"`
	// ProcessEOSOverALO is relay-eos-bin over relay-alo-bin, paired
	// (pairedRatio) and as the ratio of the medians: exactly-once's cost
	// as an operator runs the relay, printed beside the goal (which is
	// measured on the in-process runs, like every other contender's).
	ProcessEOSOverALO       float64 `json:"process_eos_over_alo_paired,omitempty"`
	ProcessEOSOverALOMedian float64 `json:"process_eos_over_alo,omitempty"`
	// Variants are each -relay-variants contender over the contender
	// it varies.
	Variants []variantRatio `json:"variants,omitempty"`
	// Audit is the live auditor's cost beside relay-eos run as its own
	// process (-audit-runs, with -relay-bin).
	Audit *auditSummary `json:"live_audit,omitempty"`
	// CrossCluster is relay-eos-cross against relay-eos (-cross); nil
	// unless both ran.
	CrossCluster *crossResult `json:"cross_cluster,omitempty"`
}

// crossResult is exactly-once across two clusters (relay-eos-cross: the
// source topic and share group on the second broker, the outputs, dead
// letters and claim ledger on the first) against the same pipeline on
// one cluster (relay-eos), for one value size: the medians of each, and
// cross over same.
type crossResult struct {
	Size           int     `json:"size"`
	SameRecPerSec  float64 `json:"same_cluster_median_rec_per_s"`
	CrossRecPerSec float64 `json:"cross_cluster_median_rec_per_s"`
	// Paired is the median of the per-run ratios cross/same
	// (pairedRatio), OfMedians the ratio of the two medians.
	Paired    float64 `json:"paired_ratio"`
	OfMedians float64 `json:"ratio_of_medians"`
	// The medians of the client CPU a record, and of the brokers' (both
	// JVMs, in both rows), in µs.
	SameCPU        float64 `json:"same_cluster_cpu_us_per_rec"`
	CrossCPU       float64 `json:"cross_cluster_cpu_us_per_rec"`
	SameBrokerCPU  float64 `json:"same_cluster_broker_cpu_us_per_rec,omitempty"`
	CrossBrokerCPU float64 `json:"cross_cluster_broker_cpu_us_per_rec,omitempty"`
}

// crossOf compares relay-eos-cross with relay-eos among the contenders
// of a size's table; nil unless both ran.
func crossOf(size int, cs []contenderResult) *crossResult {
	same, cross := findContender(cs, relayEOS.name), findContender(cs, relayEOSCross.name)
	if same == nil || cross == nil {
		return nil
	}
	p, m := pairedAndOfMedians(cross.Runs, same.Runs)
	return &crossResult{
		Size: size, SameRecPerSec: same.Median, CrossRecPerSec: cross.Median, Paired: p, OfMedians: m,
		SameCPU: same.CPUMicrosPerRecord, CrossCPU: cross.CPUMicrosPerRecord,
		SameBrokerCPU: same.BrokerCPUMicrosPerRecord, CrossBrokerCPU: cross.BrokerCPUMicrosPerRecord,
	}
}

// contenderResult summarises a contender's runs.
type contenderResult struct {
	Name       string      `json:"name"`
	Workers    int         `json:"workers"`
	Runs       []runResult `json:"runs"`
	Median     float64     `json:"median_rec_per_s"`
	Min        float64     `json:"min_rec_per_s"`
	Max        float64     `json:"max_rec_per_s"`
	RatioVsRaw float64     `json:"ratio_vs_raw,omitempty"`
	// PeakRSSMB is the largest peak resident set size of the process
	// over the runs.
	PeakRSSMB float64 `json:"peak_rss_mb"`
	// Phases are the relay workers' seconds per phase, summed over the
	// runs.
	Phases map[string]float64 `json:"phases,omitempty"`
	// CPUMicrosPerRecord is the median over the runs of the client CPU
	// a record cost (runResult.CPUMicrosPerRecord).
	CPUMicrosPerRecord float64 `json:"median_cpu_us_per_rec"`
	// BrokerCPUMicrosPerRecord is the median over the runs of the local
	// brokers' CPU a record (runResult.BrokerCPUMicrosPerRecord).
	BrokerCPUMicrosPerRecord float64 `json:"median_broker_cpu_us_per_rec,omitempty"`
	// Base is, for a variant (-relay-variants), the contender it varies.
	Base string `json:"variant_of,omitempty"`
}

// runResult is one run of one contender.
type runResult struct {
	Run       int                `json:"run"`
	Workers   int                `json:"workers"`
	Seconds   float64            `json:"seconds"`
	RecPerSec float64            `json:"rec_per_s"`
	PeakRSSMB float64            `json:"peak_rss_mb"`
	Phases    map[string]float64 `json:"phases,omitempty"`
	// AcquireMode is the acquire mode an in-process relay ran with
	// (what the sharerelay_acquire_whole_batches gauge said).
	AcquireMode string `json:"acquire_mode,omitempty"`
	// CPUSeconds is the client CPU the run cost, user+system: for a
	// contender in this process, this process's from the start of the
	// contender (creating its clients) to its end (closing them); for
	// the relay as its own process, that process's from its start to
	// just before SIGTERM. It includes this process's own bookkeeping
	// of the run (following progress, the lag check), a small share.
	CPUSeconds float64 `json:"cpu_seconds"`
	// CPUMicrosPerRecord is CPUSeconds over the records, in µs.
	CPUMicrosPerRecord float64 `json:"cpu_us_per_rec"`
	// BrokerCPUSeconds is the CPU the local broker's JVMs used over the
	// same span, every node's summed (0 on an external cluster): on one
	// machine it competes with the clients' for the same cores.
	// BrokerCPUMicrosPerRecord is it over the records, in µs.
	BrokerCPUSeconds         float64 `json:"broker_cpu_seconds,omitempty"`
	BrokerCPUMicrosPerRecord float64 `json:"broker_cpu_us_per_rec,omitempty"`
	Warning                  string  `json:"warning,omitempty"`
	// Audit is the live auditor's cost, for a relay process run with it
	// beside (-audit-runs).
	Audit *auditRun `json:"audit,omitempty"`
}

// classicResult compares relay-eos with classic-eos at one worker count.
type classicResult struct {
	Workers  int             `json:"workers"`
	Size     int             `json:"size"`
	RelayEOS contenderResult `json:"relay_eos"`
	Classic  contenderResult `json:"classic_eos"`
	Ratio    float64         `json:"relay_eos_over_classic_eos"`
	Paired   float64         `json:"paired_ratio"`
}

// scalingResult is the scaling table: a slow transform, relay-eos at
// several worker counts against classic-eos at one consumer per partition.
type scalingResult struct {
	Records  int               `json:"records"`
	DelayMS  float64           `json:"transform_ms_per_record"`
	Classic  contenderResult   `json:"classic_eos"`
	Relay    []contenderResult `json:"relay_eos"`
	Ratios   []float64         `json:"relay_over_classic"`
	Describe []string          `json:"describe"`
}

// goal is one target of the throughput issue. Value is the median of the
// paired per-run ratios (pairedRatio), the steadier estimator on a noisy
// machine; OfMedians is the ratio of the two medians, printed beside it.
type goal struct {
	// Broker is the broker setting it was measured on
	// (brokerResult.Setting).
	Broker    string  `json:"broker"`
	What      string  `json:"what"`
	Value     float64 `json:"value"`
	OfMedians float64 `json:"ratio_of_medians,omitempty"`
	Target    float64 `json:"target"`
	// AtMost: the goal is Value <= Target (latency, memory), not >=.
	AtMost bool `json:"at_most,omitempty"`
	// ReportOnly: a ratio reported without a target (Target 0; Met
	// true, as there is nothing to miss).
	ReportOnly bool `json:"report_only,omitempty"`
	Met        bool `json:"met"`
}

// latencyResult is the latency of one relay contender.
type latencyResult struct {
	Contender string  `json:"contender"`
	Size      int     `json:"size"`
	Rate      int     `json:"rate"`
	Duration  string  `json:"duration"`
	Records   int     `json:"records"`
	Missing   int     `json:"missing"`
	P50       float64 `json:"p50_ms"`
	P90       float64 `json:"p90_ms"`
	P99       float64 `json:"p99_ms"`
	Max       float64 `json:"max_ms"`
}

// throughput loads a source topic of size-byte values once and runs every
// contender over it -runs times, interleaved.
func (b *bench) throughput(ctx context.Context, size int) (sizeResult, error) {
	sr := sizeResult{Size: size, Records: b.opts.records}
	prefix := fmt.Sprintf("%dB", size)
	src := b.name(prefix, "src")
	created := []string{src}
	defer func() { b.deleteTopics(created...) }()
	if err := b.createTopic(ctx, src, sourcePartitions, nil); err != nil {
		return sr, err
	}
	if err := b.load(ctx, src, size, b.opts.records); err != nil {
		return sr, err
	}
	drop, err := b.loadCrossSource(ctx, src, size, b.opts.records)
	defer drop()
	if err != nil {
		return sr, err
	}

	runs := make(map[string][]runResult)
	for run := 1; run <= b.opts.runs; run++ {
		progress("%d B values, run %d of %d", size, run, b.opts.runs)
		for _, c := range b.contenders() {
			t := trial{c: c, size: size, run: run, source: src, n: b.opts.records,
				name: b.name(prefix, fmt.Sprintf("r%d", run), c.id())}
			rr, err := b.runTrial(ctx, t, &created)
			if err != nil {
				return sr, err
			}
			runs[c.name] = append(runs[c.name], rr)
		}
	}

	if b.opts.relayBin != "" {
		if err := b.runProcesses(ctx, &sr, src, runs, &created); err != nil {
			return sr, err
		}
		if b.opts.auditRuns > 0 && slices.ContainsFunc(b.contenders(), func(c contender) bool { return c.name == relayEOS.name }) {
			if err := b.runAudits(ctx, &sr, src, &created); err != nil {
				return sr, err
			}
		}
	}
	summarizeSize(&sr, b.contenders(), runs)
	return sr, nil
}

// loadCrossSource loads the copy of source topic src that relay-eos-cross
// reads on the second broker (-cross; nothing without): the same n
// records of size bytes as on the first broker, as the loader seeds its
// values with size and n and keys each with its index. drop deletes it.
func (b *bench) loadCrossSource(ctx context.Context, src string, size, n int) (drop func(), err error) {
	if b.src == nil {
		return func() {}, nil
	}
	if err := b.src.createTopic(ctx, src, sourcePartitions, nil); err != nil {
		return func() {}, fmt.Errorf("-cross: the source cluster: %w", err)
	}
	drop = func() { b.src.deleteTopics(src) }
	if err := b.src.load(ctx, src, size, n); err != nil {
		return drop, fmt.Errorf("-cross: the source cluster: %w", err)
	}
	return drop, nil
}

// runProcesses runs relay-alo and relay-eos as their own process
// (-relay-bin) -process-runs times over the size's source topic src, into
// runs and sr.
func (b *bench) runProcesses(ctx context.Context, sr *sizeResult, src string, runs map[string][]runResult, created *[]string) error {
	size, prefix := sr.Size, fmt.Sprintf("%dB", sr.Size)
	var relays []contender
	for _, c := range b.contenders() {
		if c.isRelay() && c.base == "" { // not the variants
			relays = append(relays, c)
		}
	}
	for run := 1; run <= b.opts.processRuns; run++ {
		for _, c := range relays {
			pc := c.asProcess()
			progress("%d B values, %s: the relay as its own process, run %d of %d", size, c.name, run, b.opts.processRuns)
			t := trial{c: pc, size: size, run: run, source: src, n: b.opts.records,
				name: b.name(prefix, fmt.Sprintf("r%d", run), pc.id())}
			rr, err := b.runTrial(ctx, t, created)
			if err != nil {
				return err
			}
			runs[pc.name] = append(runs[pc.name], rr)
		}
	}
	for _, c := range relays {
		if len(runs[c.asProcess().name]) > 0 {
			sr.Process = append(sr.Process, summarize(c.asProcess().name, runs[c.asProcess().name]))
		}
	}
	sr.ProcessEOSOverALO, sr.ProcessEOSOverALOMedian = pairedAndOfMedians(runs[relayEOS.asProcess().name], runs[relayALO.asProcess().name])
	return nil
}

// summarizeSize fills sr's contenders, ratios and variant ratios from the
// runs of cs, the contenders of the throughput table. A ratio of a
// contender that did not run (-contenders) is left out, not 0.
func summarizeSize(sr *sizeResult, cs []contender, runs map[string][]runResult) {
	medians := make(map[string]float64)
	for _, c := range cs {
		cr := summarize(c.name, runs[c.name])
		cr.Base = c.base
		medians[c.name] = cr.Median
		sr.Contenders = append(sr.Contenders, cr)
	}
	for i := range sr.Contenders {
		sr.Contenders[i].RatioVsRaw = ratio(sr.Contenders[i].Median, medians[rawShare.name])
	}
	sr.Ratios = make(map[string]float64, len(ratioPairs))
	sr.Paired = make(map[string]float64, len(ratioPairs))
	for _, rp := range ratioPairs {
		if len(runs[rp.a]) == 0 || len(runs[rp.b]) == 0 {
			continue
		}
		sr.Ratios[rp.key()] = ratio(medians[rp.a], medians[rp.b])
		sr.Paired[rp.key()] = pairedRatio(runs[rp.a], runs[rp.b])
	}
	sr.Variants = variantRatios(sr.Contenders)
	sr.CrossCluster = crossOf(sr.Size, sr.Contenders)
}

// pairedRatio is the median over the runs of a's records/s over b's in the
// same run. The contenders of a run go one after the other within a
// minute, so a pair shares the machine's state; the same contender's CPU
// per record drifts between runs a few minutes apart (other tenants, the
// broker's JIT), which the ratio of two medians taken from different runs
// carries and the median of paired ratios mostly does not. 0 when either
// side has no runs.
func pairedRatio(a, b []runResult) float64 {
	n := min(len(a), len(b))
	if n == 0 {
		return 0
	}
	rs := make([]float64, n)
	for i := range n {
		rs[i] = ratio(a[i].RecPerSec, b[i].RecPerSec)
	}
	slices.Sort(rs)
	return median(rs)
}

// pairedAndOfMedians is a's records/s over b's, paired (pairedRatio) and
// as the ratio of the two medians; 0, 0 when either has no runs.
func pairedAndOfMedians(a, b []runResult) (paired, ofMedians float64) {
	if len(a) == 0 || len(b) == 0 {
		return 0, 0
	}
	return pairedRatio(a, b), ratio(summarize("", a).Median, summarize("", b).Median)
}

// ratioPair is a ratio of two contenders' medians.
type ratioPair struct{ a, b string }

func (r ratioPair) key() string { return r.a + "/" + r.b }

// ratioPairs are the ratios reported per size, in print order.
var ratioPairs = []ratioPair{
	{relayALO.name, copier.name}, {relayEOS.name, copier.name}, {relayEOS.name, relayALO.name},
	{relayEOS.name, classicEOS.name}, {copier.name, rawShare.name}, {relayEOS.name, rawShare.name},
	{classicEOS.name, classicALO.name},
	{relayALO.name, copierStrict.name}, {relayEOS.name, copierStrict.name}, {copierStrict.name, copier.name},
	{relayEOSCross.name, relayEOS.name},
}

// compareClassic runs relay-eos and classic-eos at a worker count over a
// source topic of size-byte values, -runs times, interleaved.
func (b *bench) compareClassic(ctx context.Context, size, workers int) (classicResult, error) {
	cr := classicResult{Workers: workers, Size: size}
	prefix := fmt.Sprintf("cmp%dw%dB", workers, size)
	src := b.name(prefix, "src")
	created := []string{src}
	defer func() { b.deleteTopics(created...) }()
	if err := b.createTopic(ctx, src, sourcePartitions, nil); err != nil {
		return cr, err
	}
	if err := b.load(ctx, src, size, b.opts.records); err != nil {
		return cr, err
	}
	runs := make(map[string][]runResult)
	for run := 1; run <= b.opts.runs; run++ {
		progress("relay-eos vs classic-eos at %d workers, %d B values, run %d of %d", workers, size, run, b.opts.runs)
		for _, c := range []contender{relayEOS, classicEOS} {
			t := trial{c: c, size: size, run: run, source: src, n: b.opts.records, workers: workers,
				name: b.name(prefix, fmt.Sprintf("r%d", run), c.name)}
			rr, err := b.runTrial(ctx, t, &created)
			if err != nil {
				return cr, err
			}
			runs[c.name] = append(runs[c.name], rr)
		}
	}
	cr.RelayEOS, cr.Classic = summarize(relayEOS.name, runs[relayEOS.name]), summarize(classicEOS.name, runs[classicEOS.name])
	cr.Ratio = ratio(cr.RelayEOS.Median, cr.Classic.Median)
	cr.Paired = pairedRatio(runs[relayEOS.name], runs[classicEOS.name])
	return cr, nil
}

// scaling runs the scaling table: every record takes -scaling-delay in
// the transform; classic-eos at one consumer per partition, relay-eos at
// each of -scaling-workers.
func (b *bench) scaling(ctx context.Context) (*scalingResult, error) {
	size, n, delay := b.opts.sizes[0], b.opts.scalingRecords, b.opts.scalingDelay
	res := &scalingResult{Records: n, DelayMS: float64(delay) / float64(time.Millisecond)}
	src := b.name("scale", "src")
	created := []string{src}
	defer func() { b.deleteTopics(created...) }()
	if err := b.createTopic(ctx, src, sourcePartitions, nil); err != nil {
		return nil, err
	}
	if err := b.load(ctx, src, size, n); err != nil {
		return nil, err
	}
	// Small polls: with a slow transform a batch of 500 would take 2.5 s
	// and leave most workers without records.
	const most = 20
	type setup struct {
		c       contender
		workers int
		batch   map[string]string
		label   string
	}
	setups := []setup{{c: classicEOS, workers: int(sourcePartitions), label: fmt.Sprintf("classic-eos, %d consumers", sourcePartitions)}}
	for _, w := range b.opts.scalingWorkers {
		setups = append(setups, setup{c: relayEOS, workers: w, label: fmt.Sprintf("relay-eos, %d workers", w)})
	}
	if b.opts.scalingConcurrency > 1 {
		w := b.opts.scalingWorkers[0]
		setups = append(setups, setup{c: relayEOS, workers: w,
			batch: map[string]string{"transform_concurrency": strconv.Itoa(b.opts.scalingConcurrency)},
			label: fmt.Sprintf("relay-eos, %d workers, transform_concurrency %d", w, b.opts.scalingConcurrency)})
	}
	runs := make([][]runResult, len(setups))
	for run := 1; run <= b.opts.runs; run++ {
		progress("scaling (%s per record), run %d of %d", delay, run, b.opts.runs)
		for i, st := range setups {
			t := trial{c: st.c, size: size, run: run, source: src, n: n, workers: st.workers, maxRecords: most,
				delay: delay, batch: st.batch, name: b.name("scale", fmt.Sprintf("s%d", i), fmt.Sprintf("r%d", run), st.c.name)}
			rr, err := b.runTrial(ctx, t, &created)
			if err != nil {
				return nil, err
			}
			runs[i] = append(runs[i], rr)
		}
	}
	res.Classic = summarize(classicEOS.name, runs[0])
	res.Describe = append(res.Describe, setups[0].label)
	for i := 1; i < len(setups); i++ {
		cr := summarize(relayEOS.name, runs[i])
		res.Relay = append(res.Relay, cr)
		res.Ratios = append(res.Ratios, ratio(cr.Median, res.Classic.Median))
		res.Describe = append(res.Describe, setups[i].label)
	}
	return res, nil
}

// warmUp runs every contender, untimed, -warmup-rounds times over a
// warm-up topic of -warmup-records: a fresh broker creates its share-group
// state and transaction state topics on first use, and its JVM compiles
// the hot paths of what the contenders make it do. A fresh broker spends
// much of its CPU in the first rounds compiling, and some for minutes
// after, without settling (large methods such as KafkaApis.handle are
// recompiled as contenders take new paths; docs/benchmarks.md). So a
// round or two more is cheap insurance, not a cure:
// -trace prints each run's compiling time, and interleaved runs spread
// what is left over the contenders.
func (b *bench) warmUp(ctx context.Context) error {
	size, n := b.opts.sizes[0], min(b.opts.records, b.opts.warmUpRecords)
	src := b.name("warmup", "src")
	created := []string{src}
	defer func() { b.deleteTopics(created...) }()
	if err := b.createTopic(ctx, src, sourcePartitions, nil); err != nil {
		return err
	}
	if err := b.load(ctx, src, size, n); err != nil {
		return err
	}
	drop, err := b.loadCrossSource(ctx, src, size, n)
	defer drop()
	if err != nil {
		return err
	}
	pids := b.brokerPids()
	for round := 1; round <= b.opts.warmUpRounds; round++ {
		progress("warm-up round %d of %d: every contender once over %d records (not counted)", round, b.opts.warmUpRounds, n)
		cpu0, jit0 := procsCPU(pids), jitCPU(pids)
		for _, c := range contenders {
			if c.cross && b.src == nil {
				continue
			}
			t := trial{c: c, size: size, run: 0, source: src, n: n, name: b.name(fmt.Sprintf("warmup%d", round), c.name)}
			if _, err := b.runTrial(ctx, t, &created); err != nil {
				return fmt.Errorf("warm-up: %w", err)
			}
		}
		if len(pids) > 0 {
			cpu, jit := procsCPU(pids)-cpu0, jitCPU(pids)-jit0
			progress("warm-up round %d: the broker (every node) used %s of CPU, %s of it (%.0f%%) compiling", round,
				cpu.Round(10*time.Millisecond), jit.Round(10*time.Millisecond), 100*ratio(jit.Seconds(), cpu.Seconds()))
		}
	}
	// The rounds make a few hundred transactions, a long-running broker
	// has made millions: its coordinator, verification and marker paths
	// are compiled, and not yet here (HotSpot compiles a method fully
	// after some thousands of calls, and these run a few per
	// transaction). Without this, relay-eos gains on relay-alo run after
	// run, as those paths get compiled. So relay-eos writes the warm-up
	// topic once more in transactions of 20 records: 5,000 of them.
	progress("warm-up: transactions of 20 records over %d records (not counted)", n)
	// With -cross, once more across the clusters: the second broker
	// serves only relay-eos-cross, and its share fetches and
	// acknowledgements need as many calls to compile as the first's.
	txns := []contender{relayEOS}
	if b.src != nil {
		txns = append(txns, relayEOSCross)
	}
	for _, c := range txns {
		t := trial{c: c, size: size, run: 0, source: src, n: n, name: b.name("warmuptxn", c.name),
			maxRecords: 20, batch: map[string]string{"consumers": "1", "linger": "0s"}, own: true}
		if _, err := b.runTrial(ctx, t, &created); err != nil {
			return fmt.Errorf("warm-up: %w", err)
		}
	}
	return nil
}

// summarize sums up the runs of contender name: the medians of its rate
// and of its and the brokers' CPU a record, its peak RSS and its phases. runs must not be
// empty.
func summarize(name string, runs []runResult) contenderResult {
	rates, cpu, bcpu := make([]float64, len(runs)), make([]float64, len(runs)), make([]float64, len(runs))
	cr := contenderResult{Name: name, Runs: runs}
	for i, r := range runs {
		rates[i], cpu[i], bcpu[i] = r.RecPerSec, r.CPUMicrosPerRecord, r.BrokerCPUMicrosPerRecord
		cr.Workers = r.Workers
		cr.PeakRSSMB = max(cr.PeakRSSMB, r.PeakRSSMB)
		for k, v := range r.Phases {
			if cr.Phases == nil {
				cr.Phases = make(map[string]float64)
			}
			cr.Phases[k] += v
		}
	}
	slices.Sort(rates)
	slices.Sort(cpu)
	slices.Sort(bcpu)
	cr.Median, cr.Min, cr.Max = median(rates), rates[0], rates[len(rates)-1]
	cr.CPUMicrosPerRecord, cr.BrokerCPUMicrosPerRecord = median(cpu), median(bcpu)
	return cr
}

// median returns the median of xs, which must be sorted.
func median(xs []float64) float64 {
	n := len(xs)
	if n%2 == 1 {
		return xs[n/2]
	}
	return (xs[n/2-1] + xs[n/2]) / 2
}

func ratio(a, b float64) float64 {
	if b == 0 {
		return 0
	}
	return a / b
}

// printSize prints the throughput table of one size, measured on the
// broker setting named by setting.
func printSize(w io.Writer, setting string, sr sizeResult) {
	fmt.Fprintf(w, "\nthroughput: %d records of %d B values; broker: %s\n", sr.Records, sr.Size, setting)
	nw := nameWidth(sr.Contenders)
	fmt.Fprintf(w, "%-7s %-*s %7s %4s %13s %9s %9s %13s %11s %14s %12s\n", "size", nw, "contender", "workers", "runs", "median rec/s", "min", "max", "ratio-vs-raw", "µs/rec CPU", "broker µs/rec", "peak RSS MB")
	for _, c := range sr.Contenders {
		vsRaw := "-" // raw-share did not run
		if c.RatioVsRaw > 0 {
			vsRaw = fmt.Sprintf("%.2f", c.RatioVsRaw)
		}
		fmt.Fprintf(w, "%-7s %-*s %7d %4d %13.0f %9.0f %9.0f %13s %11.2f %14.2f %12.0f\n",
			fmt.Sprintf("%d B", sr.Size), nw, c.Name, c.Workers, len(c.Runs), c.Median, c.Min, c.Max, vsRaw, c.CPUMicrosPerRecord, c.BrokerCPUMicrosPerRecord, c.PeakRSSMB)
	}
	var ofMedians, paired []string
	for _, rp := range ratioPairs {
		if r, ok := sr.Ratios[rp.key()]; ok {
			ofMedians = append(ofMedians, fmt.Sprintf("%s %.2f", rp.key(), r))
			paired = append(paired, fmt.Sprintf("%s %.2f", rp.key(), sr.Paired[rp.key()]))
		}
	}
	if len(paired) > 0 {
		fmt.Fprintf(w, "ratios of medians: %s\n", strings.Join(ofMedians, ", "))
		fmt.Fprintf(w, "medians of paired per-run ratios: %s\n", strings.Join(paired, ", "))
	}
	for _, v := range sr.Variants {
		fmt.Fprintf(w, "%s/%s: %.2f paired (%.2f of the medians)\n", v.Variant, v.Base, v.Paired, v.OfMedians)
	}
	if findContender(sr.Contenders, relayEOSCross.name) != nil {
		fmt.Fprintln(w, crossNote)
	}
	for _, c := range sr.Contenders {
		if len(c.Phases) > 0 {
			fmt.Fprintf(w, "%s phases (share of the workers' time, all runs): %s\n", c.Name, formatPhases(c.Phases))
		}
	}
	printWarnings(w, sr.Contenders...)
	if len(sr.Process) > 0 {
		printProcess(w, sr)
	}
	printAudit(w, sr.Size, sr.Audit)
}

// crossNote says under a table with relay-eos-cross what it measures and
// what its broker CPU counts.
const crossNote = "relay-eos-cross: relay-eos with its source topic and share group on a second local broker, its own cluster of the same settings, and its outputs, dead letters and claim ledger on the first; broker µs/rec counts both brokers' JVMs in every row"

// printCross prints exactly-once across two clusters against one, size
// by size, measured on the broker setting named by setting; nothing
// unless relay-eos-cross ran (-cross).
func printCross(w io.Writer, setting string, srs []sizeResult) {
	var xs []*crossResult
	for _, sr := range srs {
		if sr.CrossCluster != nil {
			xs = append(xs, sr.CrossCluster)
		}
	}
	if len(xs) == 0 {
		return
	}
	fmt.Fprintf(w, "\nexactly-once across two clusters (%s) against one (%s); broker: %s\n", relayEOSCross.name, relayEOS.name, setting)
	fmt.Fprintf(w, "%-7s %11s %12s %11s %7s %16s %17s %19s %20s\n", "size", "same rec/s", "cross rec/s", "cross/same", "paired",
		"same µs/rec CPU", "cross µs/rec CPU", "same broker µs/rec", "cross broker µs/rec")
	for _, x := range xs {
		fmt.Fprintf(w, "%-7s %11.0f %12.0f %11.2f %7.2f %16.2f %17.2f %19.2f %20.2f\n", fmt.Sprintf("%d B", x.Size),
			x.SameRecPerSec, x.CrossRecPerSec, x.OfMedians, x.Paired, x.SameCPU, x.CrossCPU, x.SameBrokerCPU, x.CrossBrokerCPU)
	}
	fmt.Fprintln(w, "cross/same: the ratio of the medians; paired: the median of the per-run ratios, each run's pair side by side")
	fmt.Fprintln(w, crossNote)
}

// printProcess prints the table of the relay as its own process.
func printProcess(w io.Writer, sr sizeResult) {
	fmt.Fprintf(w, "the relay as its own process (relay run, the shipped binary; the peak RSS and the CPU are that process's):\n")
	nw := nameWidth(sr.Process)
	fmt.Fprintf(w, "%-7s %-*s %7s %4s %13s %9s %9s %11s %12s\n", "size", nw, "contender", "workers", "runs", "median rec/s", "min", "max", "µs/rec CPU", "peak RSS MB")
	for _, c := range sr.Process {
		fmt.Fprintf(w, "%-7s %-*s %7d %4d %13.0f %9.0f %9.0f %11.2f %12.0f\n",
			fmt.Sprintf("%d B", sr.Size), nw, c.Name, c.Workers, len(c.Runs), c.Median, c.Min, c.Max, c.CPUMicrosPerRecord, c.PeakRSSMB)
	}
	if sr.ProcessEOSOverALO > 0 {
		fmt.Fprintf(w, "relay-eos-bin/relay-alo-bin: %.2f paired (%.2f of the medians)\n", sr.ProcessEOSOverALO, sr.ProcessEOSOverALOMedian)
	}
	printWarnings(w, sr.Process...)
}

// nameWidth is the width of the contender column: the longest name (a
// variant's holds its settings), at least 13.
func nameWidth(cs []contenderResult) int {
	n := 13
	for _, c := range cs {
		n = max(n, utf8.RuneCountInString(c.Name))
	}
	return n
}

func printWarnings(w io.Writer, cs ...contenderResult) {
	for _, c := range cs {
		for _, r := range c.Runs {
			if r.Warning != "" {
				fmt.Fprintf(w, "WARNING: %s\n", r.Warning)
			}
		}
	}
}

// printClassic prints the relay-eos / classic-eos comparison, measured
// on the broker setting named by setting.
func printClassic(w io.Writer, setting string, crs []classicResult) {
	if len(crs) == 0 {
		return
	}
	fmt.Fprintf(w, "\nrelay-eos vs classic-eos (GroupTransactSession, read_committed), %d B values; broker: %s\n", crs[0].Size, setting)
	fmt.Fprintf(w, "%7s %16s %18s %7s %7s %21s %23s\n", "workers", "relay-eos rec/s", "classic-eos rec/s", "ratio", "paired", "relay-eos µs/rec CPU", "classic-eos µs/rec CPU")
	for _, c := range crs {
		fmt.Fprintf(w, "%7d %16.0f %18.0f %7.2f %7.2f %21.2f %23.2f\n", c.Workers, c.RelayEOS.Median, c.Classic.Median, c.Ratio, c.Paired,
			c.RelayEOS.CPUMicrosPerRecord, c.Classic.CPUMicrosPerRecord)
	}
	for _, c := range crs {
		printWarnings(w, c.RelayEOS, c.Classic)
	}
}

// printScaling prints the scaling table, measured on the broker setting
// named by setting.
func printScaling(w io.Writer, setting string, s *scalingResult) {
	if s == nil {
		return
	}
	fmt.Fprintf(w, "\nscaling: %d records, transform %.0f ms per record, 3 source partitions; broker: %s\n", s.Records, s.DelayMS, setting)
	fmt.Fprintf(w, "%-52s %13s %9s %9s %18s\n", "contender", "median rec/s", "min", "max", "ratio-vs-classic")
	fmt.Fprintf(w, "%-52s %13.0f %9.0f %9.0f %18.2f\n", s.Describe[0], s.Classic.Median, s.Classic.Min, s.Classic.Max, 1.0)
	for i, c := range s.Relay {
		fmt.Fprintf(w, "%-52s %13.0f %9.0f %9.0f %18.2f\n", s.Describe[i+1], c.Median, c.Min, c.Max, s.Ratios[i])
	}
	printWarnings(w, append([]contenderResult{s.Classic}, s.Relay...)...)
}

// goals checks the targets on the medians: those of each broker setting,
// and after the first's, the scaling table's and the latency runs', which
// ran on it.
func goals(res results) []goal {
	if len(res.Brokers) == 0 {
		return firstSettingGoals(res, "")
	}
	var gs []goal
	for i, br := range res.Brokers {
		gs = append(gs, brokerGoals(br, res.Workers)...)
		if i == 0 {
			gs = append(gs, firstSettingGoals(res, br.Setting)...)
		}
	}
	return gs
}

// firstSettingGoals checks the targets of the scaling table and the
// latency runs, which ran on the broker setting named by setting.
func firstSettingGoals(res results, setting string) []goal {
	var gs []goal
	if s := res.Scaling; s != nil {
		for i, c := range s.Relay {
			if c.Workers == 6 && s.Describe[i+1] == fmt.Sprintf("relay-eos, %d workers", 6) {
				gs = append(gs, atLeast(goal{Broker: setting, What: "scaling: relay-eos at 6 workers / classic-eos", Value: s.Ratios[i]}, 1.8))
			}
		}
	}
	for _, l := range res.Latency {
		base := findLatency(res.LatencyBaseline, l.Contender)
		if base == nil || base.P99 == 0 {
			continue
		}
		gs = append(gs, atMost(goal{Broker: setting, What: fmt.Sprintf("latency p99 %s / baseline", l.Contender),
			Value: pairedP99(res.LatencyRounds, l.Contender), OfMedians: l.P99 / base.P99}, maxLatencyVsBaseline))
	}
	return gs
}

// brokerGoals checks the targets of one broker setting, workers being
// the throughput table's: per size relay-eos over classic-eos and over
// relay-alo, relay-eos over its best variant, the relay against the
// hand-written copier, and the relay process's peak RSS; relay-eos over
// classic-eos at each -classic-workers count, and relay-eos-cross over
// relay-eos (-cross), are reported without a target.
func brokerGoals(br brokerResult, workers int) []goal {
	var gs []goal
	add := func(g goal) {
		g.Broker = br.Setting
		gs = append(gs, g)
	}
	for _, sr := range br.Throughput {
		for _, g := range []struct {
			key, what string
			target    float64
		}{
			{"relay-eos/classic-eos", fmt.Sprintf("relay-eos/classic-eos at %d workers", workers), 1.0},
			{"relay-eos/relay-alo", "relay-eos/relay-alo", 0.9},
			{"relay-alo/copier", "relay-alo/copier", 0.9},
			{"relay-eos/copier", "relay-eos/copier", 0.8},
		} {
			if v, ok := sr.Paired[g.key]; ok { // both contenders ran
				add(atLeast(goal{What: fmt.Sprintf("%d B %s", sr.Size, g.what), Value: v, OfMedians: sr.Ratios[g.key]}, g.target))
			}
		}
		if g, ok := bestVariantGoal(sr.Contenders, relayEOS.name); ok {
			g.What = fmt.Sprintf("%d B %s", sr.Size, g.What)
			add(g)
		}
	}
	for _, c := range br.Classic {
		add(goal{What: fmt.Sprintf("%d B relay-eos/classic-eos at %d workers", c.Size, c.Workers), Value: c.Paired, OfMedians: c.Ratio,
			ReportOnly: true, Met: true})
	}
	for _, sr := range br.Throughput {
		if x := sr.CrossCluster; x != nil {
			add(goal{What: fmt.Sprintf("%d B %s/%s", sr.Size, relayEOSCross.name, relayEOS.name), Value: x.Paired, OfMedians: x.OfMedians,
				ReportOnly: true, Met: true})
		}
	}
	for _, sr := range br.Throughput {
		for _, c := range sr.Process {
			add(atMost(goal{What: fmt.Sprintf("%d B %s peak RSS MB", sr.Size, c.Name), Value: c.PeakRSSMB}, maxRelayRSSMB))
		}
	}
	return gs
}

// atLeast is g with the target Value >= target.
func atLeast(g goal, target float64) goal {
	g.Target, g.Met = target, g.Value >= target
	return g
}

// atMost is g with the target Value <= target.
func atMost(g goal, target float64) goal {
	g.Target, g.AtMost, g.Met = target, true, g.Value <= target
	return g
}

// Goals of the throughput issue that are bounds from above.
const (
	// maxLatencyVsBaseline: p99 latency at a moderate rate no worse than
	// twice the baseline's (the relay of the day the issue was filed).
	maxLatencyVsBaseline = 2.0
	// maxRelayRSSMB: the relay process's peak RSS at full speed.
	maxRelayRSSMB = 150
)

// printGoals prints the goal check, grouped by broker setting.
func printGoals(w io.Writer, gs []goal) {
	if len(gs) == 0 {
		return
	}
	ww := 48
	for _, g := range gs {
		ww = max(ww, utf8.RuneCountInString(g.What))
	}
	for i, g := range gs {
		if i == 0 || g.Broker != gs[i-1].Broker {
			fmt.Fprintf(w, "\ngoals, broker: %s (medians of paired per-run ratios; the ratio of the medians in parentheses):\n", g.Broker)
		}
		of := ""
		if g.OfMedians > 0 {
			of = fmt.Sprintf("(%.2f)", g.OfMedians)
		}
		if g.ReportOnly {
			fmt.Fprintf(w, "  %-*s %6.2f %6s  reported, no target\n", ww, g.What, g.Value, of)
			continue
		}
		mark := "met"
		if !g.Met {
			mark = "MISSED"
		}
		op := ">="
		if g.AtMost {
			op = "<="
		}
		fmt.Fprintf(w, "  %-*s %6.2f %6s  target %s %.2f  %s\n", ww, g.What, g.Value, of, op, g.Target, mark)
	}
}

// printLatency prints the latency table: the medians over the rounds,
// and the baseline's beside them when there is one, measured on the
// broker setting named by setting.
func printLatency(w io.Writer, setting string, res results) {
	ls := res.Latency
	if len(ls) == 0 {
		return
	}
	fmt.Fprintf(w, "\nlatency: %d rec/s of %d B values for %s, append acknowledged -> output visible (read_committed); medians of %d rounds; broker: %s\n",
		ls[0].Rate, ls[0].Size, ls[0].Duration, len(res.LatencyRounds), setting)
	fmt.Fprintf(w, "%-20s %8s %8s %8s %8s %8s %8s\n", "contender", "records", "missing", "p50 ms", "p90 ms", "p99 ms", "max ms")
	for _, l := range ls {
		fmt.Fprintf(w, "%-20s %8d %8d %8.1f %8.1f %8.1f %8.1f\n", l.Contender, l.Records, l.Missing, l.P50, l.P90, l.P99, l.Max)
		if base := findLatency(res.LatencyBaseline, l.Contender); base != nil {
			fmt.Fprintf(w, "%-20s %8d %8d %8.1f %8.1f %8.1f %8.1f\n", l.Contender+" baseline", base.Records, base.Missing, base.P50, base.P90, base.P99, base.Max)
		}
	}
	if len(res.LatencyBaseline) == 0 {
		return
	}
	fmt.Fprintf(w, "p99 / the baseline's, per round:")
	for _, r := range res.LatencyRounds {
		for _, l := range r.Now {
			if base := findLatency(r.Baseline, l.Contender); base != nil && base.P99 > 0 {
				fmt.Fprintf(w, " %s %.2f", l.Contender, l.P99/base.P99)
			}
		}
		fmt.Fprint(w, ";")
	}
	fmt.Fprintln(w)
}

// printSummary prints the exactly-once / at-least-once line of a broker
// setting and returns the ratio: the geometric mean over the sizes (0,
// and nothing printed, when the relay did not run in both modes).
func printSummary(w io.Writer, setting string, srs []sizeResult) float64 {
	logSum := 0.0
	var per []string
	for _, sr := range srs {
		r, ok := sr.Ratios["relay-eos/relay-alo"]
		if !ok || r <= 0 {
			continue
		}
		logSum += math.Log(r)
		per = append(per, fmt.Sprintf("%d B: %.2f", sr.Size, r))
	}
	if len(per) == 0 {
		return 0
	}
	g := math.Exp(logSum / float64(len(per)))
	fmt.Fprintln(w)
	if len(per) == 1 {
		fmt.Fprintf(w, "exactly-once / at-least-once = %.2f; broker: %s\n", g, setting)
	} else {
		fmt.Fprintf(w, "exactly-once / at-least-once = %.2f (geometric mean of %s); broker: %s\n", g, strings.Join(per, ", "), setting)
	}
	return g
}

func writeJSON(path string, res results) error {
	data, err := json.MarshalIndent(res, "", "  ")
	if err != nil {
		return fmt.Errorf("encoding the results: %w", err)
	}
	if err := os.WriteFile(path, append(data, '\n'), 0o644); err != nil {
		return fmt.Errorf("writing the results: %w", err)
	}
	return nil
}

// contenders returns the contenders of the throughput table (-contenders),
// each variant (-relay-variants) right after the contender it varies, and
// with -cross relay-eos-cross after relay-eos and its variants, so that
// their runs sit side by side.
func (b *bench) contenders() []contender {
	var out []contender
	for _, c := range contenders {
		switch {
		case c.cross:
			if !b.opts.cross {
				continue // -cross adds it, whatever -contenders lists
			}
		case len(b.opts.only) > 0 && !slices.Contains(b.opts.only, c.name):
			continue
		}
		out = append(out, c)
		for _, v := range b.opts.variants {
			if v.base == c.name {
				out = append(out, v)
			}
		}
	}
	return out
}
