package main

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sharerelay/sharerelay/audit"
	"github.com/sharerelay/sharerelay/audit/live"
	"github.com/sharerelay/sharerelay/config"
	"github.com/sharerelay/sharerelay/lineage"
)

// Timeouts of one contender run.
const (
	// stallTimeout aborts a run that acknowledged nothing for this long.
	stallTimeout = 90 * time.Second
	// lagTimeout bounds the wait for the share group's lag to reach 0
	// once every record was acknowledged.
	lagTimeout = 60 * time.Second
)

// contender is one way of consuming the source topic.
type contender struct {
	name     string
	delivery string // relay contenders: config.AtLeastOnce or config.ExactlyOnce
	produces bool   // writes an output topic (checked afterwards)
	classic  bool   // a classic consumer group, not a share group
	// strict: the share consumers acquire at most a poll's records,
	// splitting record batches (franz-go's ShareMaxRecordsStrict, the
	// relay's acquire_mode record_limit), instead of franz-go's default
	// of whole batches with fetches running ahead of the polls.
	strict bool
	noTxn  bool // classic: no transaction; offsets committed after the produce
	// cross: the relay's source topic and share group are on a second
	// local broker, its own KRaft cluster (-cross), and its outputs, dead
	// letters and claim ledger on the first, as source.cluster splits them.
	cross bool
	// process: the relay runs as its own process, the shipped binary
	// (-relay-bin), instead of inside the bench.
	process bool
	// audit: the live auditor (relay audit) runs beside the relay
	// process (audit.go).
	audit bool
	// A variant (-relay-variants) is a relay contender with batch
	// settings of its own, over the relay's defaults and -relay-batch;
	// base names the contender it varies and is compared with, slug
	// names its groups, topics and files (its name holds braces, which
	// Kafka's names do not allow).
	batch      map[string]string
	base, slug string
}

var (
	rawShare = contender{name: "raw-share"}
	copier   = contender{name: "copier", produces: true}
	// copierStrict is the copier acquiring as the relay does by default
	// (record_limit): the relay's own overhead at equal broker work.
	copierStrict = contender{name: "copier-strict", produces: true, strict: true}
	relayALO     = contender{name: "relay-alo", delivery: config.AtLeastOnce, produces: true}
	relayEOS     = contender{name: "relay-eos", delivery: config.ExactlyOnce, produces: true}
	// relayEOSCross is relay-eos across two clusters (-cross): the same
	// pipeline with source.cluster naming the second broker.
	relayEOSCross = contender{name: "relay-eos-cross", delivery: config.ExactlyOnce, produces: true, cross: true}
	classicEOS    = contender{name: "classic-eos", produces: true, classic: true}
	// classicALO is classic-eos without the transaction: what Kafka's
	// exactly-once costs a hand-written loop, for reference.
	classicALO = contender{name: "classic-alo", produces: true, classic: true, noTxn: true}

	contenders = []contender{rawShare, copier, copierStrict, relayALO, relayEOS, relayEOSCross, classicEOS, classicALO}
)

func (c contender) isRelay() bool { return c.delivery != "" }

// id names the contender's groups, topics, pipeline and files.
func (c contender) id() string {
	if c.slug != "" {
		return c.slug
	}
	return c.name
}

// asProcess is relay contender c run as its own process (-relay-bin).
func (c contender) asProcess() contender {
	c.name += "-bin"
	c.process = true
	return c
}

// trial is one run of one contender over one source topic.
type trial struct {
	c      contender
	size   int
	run    int
	source string
	n      int    // records in source
	name   string // pipeline, group and topic prefix
	output string // "" when the contender writes nothing
	dlq    string // relay contenders
	// workers is the number of consumers (the relay's workers),
	// maxRecords the records per poll: the hand-written contenders'
	// poll size, and the relay's batch.max_records when set (0: the
	// relay's default).
	workers, maxRecords int
	// delay is the transform's time per record (0: none).
	delay time.Duration
	// batch are extra lines of the relay's batch: section.
	batch map[string]string
	// own: the trial's settings are its own; -relay-batch, -relay-group
	// and -relay-compression do not apply (the warm-up's transactions).
	own bool
	// metricsListen is the relay's metrics endpoint (metrics.listen;
	// "": none), for a relay run as its own process.
	metricsListen string
}

// tracker times a run: from the first record received to the moment the
// n-th record was acknowledged.
type tracker struct {
	want        int64
	mu          sync.Mutex
	received    int64
	acked       int64
	first, last time.Time
	done        chan struct{}
}

func newTracker(n int) *tracker { return &tracker{want: int64(n), done: make(chan struct{})} }

// receive counts n records received.
func (t *tracker) receive(n int) {
	if n <= 0 {
		return
	}
	t.mu.Lock()
	if t.received == 0 {
		t.first = time.Now()
	}
	t.received += int64(n)
	t.mu.Unlock()
}

// ack counts n records acknowledged.
func (t *tracker) ack(n int) {
	if n <= 0 {
		return
	}
	t.mu.Lock()
	t.acked += int64(n)
	if t.acked >= t.want && t.last.IsZero() {
		t.last = time.Now()
		close(t.done)
	}
	t.mu.Unlock()
}

func (t *tracker) counts() (received, acked int64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.received, t.acked
}

// sinceFirst is the time since the first record was received, 0 before.
func (t *tracker) sinceFirst() time.Duration {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.received == 0 {
		return 0
	}
	return time.Since(t.first)
}

// doneAt is when the last record was acknowledged; valid once done is
// closed.
func (t *tracker) doneAt() time.Time {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.last
}

// elapsed is the timed span; valid once done is closed.
func (t *tracker) elapsed() time.Duration {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.last.Sub(t.first)
}

// runTrial runs one contender over the source topic and returns its
// result. Topics it created are appended to *created.
func (b *bench) runTrial(ctx context.Context, t trial, created *[]string) (runResult, error) {
	t, err := b.setUpTrial(ctx, t, created)
	if err != nil {
		return runResult{}, err
	}

	stopProfile, err := b.startProfile(t)
	if err != nil {
		return runResult{}, err
	}
	tr := newTracker(t.n)
	stopHeap := b.heapProfileAtHalf(t, tr)
	defer stopHeap()
	tc := newTraceCollector(b.opts.trace, t.n)
	pids := b.brokerPids()
	tc.startCPU(pids)
	resetPeakRSS()
	began := time.Now()
	cpu0, brokerCPU0 := selfCPU(), procsCPU(pids)
	rr, err := b.runContender(ctx, t, tr, tc)
	if !t.c.process { // it ran in this process
		rr.CPUSeconds, rr.PeakRSSMB = (selfCPU() - cpu0).Seconds(), peakRSSMB()
	}
	if len(pids) > 0 {
		rr.BrokerCPUSeconds = (procsCPU(pids) - brokerCPU0).Seconds()
	}
	tc.stopCPU()
	stopProfile()
	if err != nil {
		return runResult{}, fmt.Errorf("%s, run %d: %w", t.c.name, t.run, err)
	}
	el := tr.elapsed()
	rr.Run, rr.Workers, rr.Seconds, rr.RecPerSec = t.run, t.workers, el.Seconds(), float64(t.n)/el.Seconds()
	rr.CPUMicrosPerRecord = cpuMicrosPerRecord(rr.CPUSeconds, t.n)
	rr.BrokerCPUMicrosPerRecord = cpuMicrosPerRecord(rr.BrokerCPUSeconds, t.n)
	reportRun(t, rr, el, time.Since(began))
	tc.print(t.c.name)

	if t.output != "" {
		rr.Warning = b.verify(ctx, t)
		if err := ctx.Err(); err != nil {
			return runResult{}, err
		}
		if rr.Warning != "" {
			progress("WARNING: %s", rr.Warning)
		}
	}
	return rr, nil
}

// setUpTrial fills in t's defaults and creates what the contender needs:
// its share group, its output and dead-letter topics (appended to
// *created, with the relay's claim ledger and snapshots). It returns t
// with its topics named.
func (b *bench) setUpTrial(ctx context.Context, t trial, created *[]string) (trial, error) {
	if t.workers == 0 {
		t.workers = b.opts.workers
	}
	if t.maxRecords == 0 && !t.c.isRelay() {
		t.maxRecords = b.opts.handMaxRecords
	}
	if !t.c.classic {
		if err := b.sourceOf(t.c).newGroup(ctx, t.name); err != nil {
			return t, err
		}
	}
	if t.c.produces {
		t.output = t.name + ".out"
		if err := b.createTopic(ctx, t.output, sourcePartitions, nil); err != nil {
			return t, err
		}
		*created = append(*created, t.output)
	}
	if t.c.isRelay() {
		t.dlq = t.name + ".dlq"
		if err := b.createTopic(ctx, t.dlq, 1, nil); err != nil {
			return t, err
		}
		*created = append(*created, t.dlq)
		if t.c.delivery == config.ExactlyOnce {
			ledger := t.name + config.DefaultLedgerSuffix
			*created = append(*created, ledger, ledger+".snapshots")
		}
		if t.c.audit { // the auditor's checkpoint
			*created = append(*created, live.CheckpointTopic(t.name))
		}
	}
	return t, nil
}

// runContender runs t's contender until the tracker has seen every record
// acknowledged. It returns what only the run itself knows: the in-process
// relay's phases and acquire mode, the relay process's peak RSS and CPU.
func (b *bench) runContender(ctx context.Context, t trial, tr *tracker, tc *traceCollector) (runResult, error) {
	var (
		rr  runResult
		err error
	)
	switch {
	case t.c.process:
		var cpu time.Duration
		rr.PeakRSSMB, cpu, rr.Audit, err = b.runRelayProcess(ctx, t, tr)
		rr.CPUSeconds = cpu.Seconds()
	case t.c.isRelay():
		rr.Phases, rr.AcquireMode, err = b.runRelay(ctx, t, tr, tc)
	case t.c.classic:
		err = b.runClassic(ctx, t, tr, tc)
	default:
		err = b.runShareClients(ctx, t, tr, tc)
	}
	return rr, err
}

// cpuMicrosPerRecord is CPU seconds over n records, in microseconds.
func cpuMicrosPerRecord(seconds float64, n int) float64 {
	if n <= 0 {
		return 0
	}
	return seconds * 1e6 / float64(n)
}

// reportRun prints a run's result: el is its timed span, whole the run
// including start and stop.
func reportRun(t trial, rr runResult, el, whole time.Duration) {
	label := fmt.Sprintf("run %d", t.run)
	if t.run == 0 {
		label = "warm-up"
	}
	progress("  %-13s %s, %d workers: %d records in %s = %.0f rec/s, %.2f µs/rec CPU, broker %.2f µs/rec (whole run incl. start and stop %s; peak RSS %.0f MB)",
		t.c.name, label, t.workers, t.n, el.Round(time.Millisecond), rr.RecPerSec, rr.CPUMicrosPerRecord, rr.BrokerCPUMicrosPerRecord, whole.Round(100*time.Millisecond), rr.PeakRSSMB)
	if len(rr.Phases) > 0 {
		progress("  %-13s acquire mode %s; phases: %s", t.c.name, rr.AcquireMode, formatPhases(rr.Phases))
	}
}

// heapProfileAtHalf writes a heap profile of this process (the live heap
// of the last collection) into -cpuprofile-dir once half the trial's
// records are acknowledged: what the relay holds at full speed. stop ends
// the wait.
func (b *bench) heapProfileAtHalf(t trial, tr *tracker) (stop func()) {
	if b.opts.cpuProfileDir == "" || t.c.process {
		return func() {}
	}
	path := filepath.Join(b.opts.cpuProfileDir, fmt.Sprintf("%dB-run%d-%s.heap.pprof", t.size, t.run, t.c.id()))
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		tick := time.NewTicker(10 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-done:
				return
			case <-tick.C:
			}
			if _, acked := tr.counts(); acked >= tr.want/2 {
				break
			}
		}
		f, err := os.Create(path)
		if err == nil {
			err = errors.Join(pprof.Lookup("heap").WriteTo(f, 0), f.Close())
		}
		if err != nil {
			progress("warning: writing %s: %v", path, err)
		}
	})
	return func() { close(done); wg.Wait() }
}

// startProfile starts a CPU profile of the run when -cpuprofile-dir is set:
// of this process (pprof), and of a local broker (a Java Flight Recorder
// recording, see startBrokerRecording; one a node of a local cluster,
// .broker-<node>.jfr).
func (b *bench) startProfile(t trial) (stop func(), err error) {
	if b.opts.cpuProfileDir == "" {
		return func() {}, nil
	}
	base := filepath.Join(b.opts.cpuProfileDir, fmt.Sprintf("%dB-run%d-%s", t.size, t.run, t.c.id()))
	path := base + ".pprof"
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("creating the CPU profile: %w", err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("starting the CPU profile: %w", err)
	}
	var stops []func()
	for i, node := range b.br.nodes {
		jfr := base + ".broker.jfr"
		if len(b.br.nodes) > 1 {
			jfr = fmt.Sprintf("%s.broker-%d.jfr", base, i+1)
		}
		stops = append(stops, startBrokerRecording(node.Pid(), jfr))
	}
	if b.src != nil {
		for _, node := range b.src.br.nodes {
			stops = append(stops, startBrokerRecording(node.Pid(), base+".source-broker.jfr"))
		}
	}
	return func() {
		pprof.StopCPUProfile()
		if err := f.Close(); err != nil {
			progress("warning: writing %s: %v", path, err)
		}
		for _, stop := range stops {
			stop()
		}
	}, nil
}

// await waits until tr has every record acknowledged, then until the share
// group's lag is 0. failed reports a contender that stopped on its own.
func (b *bench) await(ctx context.Context, t trial, tr *tracker, failed <-chan error) error {
	if err := b.awaitAcked(ctx, t, tr, failed); err != nil {
		return err
	}
	if err := b.sourceOf(t.c).waitLagZero(ctx, t.name, t.source, lagTimeout); err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		progress("WARNING: %s run %d: %v", t.c.name, t.run, err)
	}
	return nil
}

// verify reads the output back (read_committed) and returns a warning
// unless it holds exactly one record per source record.
func (b *bench) verify(ctx context.Context, t trial) string {
	vctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	tally, err := audit.ReadCommitted(vctx, b.clientOpts(), t.output)
	if err != nil {
		return fmt.Sprintf("%dB run %d %s: reading the output back: %v", t.size, t.run, t.c.name, err)
	}
	foreign := 0
	for s := range tally.BySource {
		if s.Topic != t.source {
			foreign++
		}
	}
	if tally.Records == t.n && len(tally.BySource) == t.n && tally.Unlabelled == 0 && foreign == 0 {
		return ""
	}
	return fmt.Sprintf("%dB run %d %s: output %s has %d records from %d distinct sources (want %d and %d); %d duplicated, %d unlabelled, %d from another topic",
		t.size, t.run, t.c.name, t.output, tally.Records, len(tally.BySource), t.n, t.n, len(tally.Duplicates()), tally.Unlabelled, foreign)
}

// batchHandler processes the records of one poll of a share consumer and
// acknowledges them.
type batchHandler func(ctx context.Context, recs []*kgo.Record) error

// runShareClients runs the raw-share or a copier contender: -workers share
// consumers in the trial's group, until every record is acknowledged.
func (b *bench) runShareClients(ctx context.Context, t trial, tr *tracker, tc *traceCollector) error {
	wctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	defer func() { cancel(); wg.Wait() }()
	failed := make(chan error, t.workers)
	for i := range t.workers {
		opts := []kgo.Opt{
			kgo.ClientID(fmt.Sprintf("%s-%d", t.name, i)),
			kgo.ShareGroup(t.name),
			kgo.ConsumeTopics(t.source),
			kgo.ShareMaxRecords(int32(t.maxRecords)),
			tc.hooks(),
		}
		if t.c.strict {
			opts = append(opts, kgo.ShareMaxRecordsStrict())
		}
		cons, err := kgo.NewClient(b.clientOpts(opts...)...)
		if err != nil {
			return fmt.Errorf("creating share consumer %d: %w", i, err)
		}
		handle, closeHandler, err := b.newHandler(t, tr, tc)
		if err != nil {
			cons.Close()
			return err
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer closeHandler()
			if err := shareLoop(wctx, cons, t.maxRecords, tr, handle); err != nil {
				failed <- fmt.Errorf("worker %d: %w", i, err)
			}
		}()
	}
	return b.await(ctx, t, tr, failed)
}

// newHandler returns the batch handler of one worker of the contender.
func (b *bench) newHandler(t trial, tr *tracker, tc *traceCollector) (batchHandler, func(), error) {
	if !t.c.produces {
		// raw-share: accept every record explicitly, produce nothing.
		return func(_ context.Context, recs []*kgo.Record) error {
			for _, r := range recs {
				r.Ack(kgo.AckAccept)
			}
			tr.ack(len(recs))
			return nil
		}, func() {}, nil
	}
	// copier: the producer a careful user would configure without
	// transactions: idempotent, acks=all, and like the relay's no linger.
	prod, err := kgo.NewClient(b.clientOpts(
		kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.ProducerLinger(0),
		tc.hooks(),
	)...)
	if err != nil {
		return nil, nil, fmt.Errorf("creating the copier's producer: %w", err)
	}
	return func(ctx context.Context, recs []*kgo.Record) error {
		outs := make([]*kgo.Record, len(recs))
		for i, r := range recs {
			src := lineage.Source{Topic: r.Topic, Partition: r.Partition, Offset: r.Offset}
			outs[i] = &kgo.Record{Topic: t.output, Key: r.Key, Value: r.Value, Headers: lineage.SetSource(r.Headers, src)}
		}
		if err := prod.ProduceSync(ctx, outs...).FirstErr(); err != nil {
			if ctx.Err() != nil {
				return nil // stopping; the consumer releases what it holds
			}
			progress("warning: copier: producing a batch of %d failed; releasing it: %v", len(recs), err)
			for _, r := range recs {
				r.Ack(kgo.AckRelease)
			}
			return nil
		}
		for _, r := range recs {
			r.Ack(kgo.AckAccept)
		}
		tr.ack(len(recs))
		return nil
	}, prod.Close, nil
}

// shareLoop polls cons and hands every batch to handle until ctx ends,
// then flushes the acknowledgements, leaves the group and closes cons.
func shareLoop(ctx context.Context, cons *kgo.Client, most int, tr *tracker, handle batchHandler) error {
	defer func() {
		fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		defer cancel()
		if err := cons.FlushAcks(fctx); err != nil {
			progress("warning: flushing acknowledgements: %v", err)
		}
		if err := cons.LeaveGroupContext(fctx); err != nil {
			progress("warning: leaving the share group: %v", err)
		}
		cons.Close()
	}()
	warned := 0
	for {
		fs := cons.PollRecords(ctx, most)
		if ctx.Err() != nil {
			return nil
		}
		fs.EachError(func(topic string, p int32, err error) {
			if warned < 5 && !errors.Is(err, context.Canceled) {
				warned++
				progress("warning: share fetch %s[%d]: %v", topic, p, err)
			}
		})
		recs := fs.Records()
		if len(recs) == 0 {
			continue
		}
		tr.receive(len(recs))
		if err := handle(ctx, recs); err != nil {
			return err
		}
	}
}

// pipelineYAML is the relay contenders' pipeline file.
const pipelineYAML = `name: %s
brokers: [%s]
delivery: %s
workers: %d
source:
  topics: [%q]
  group: %q
  auto_offset_reset: earliest
%s%soutput:
  topic: %q
dead_letter:
  topic: %q
batch:
%s  poll_timeout: 1s
transforms: %s
%s`

// pipeline builds the trial's pipeline the way `relay run` does: from YAML
// (pipelineYAMLOf) through config.Parse.
func (b *bench) pipeline(t trial) (*config.Pipeline, error) {
	p, err := config.Parse(t.name+".yaml", []byte(b.pipelineYAMLOf(t)), nil)
	if err != nil {
		return nil, fmt.Errorf("pipeline %s: %w", t.name, err)
	}
	return p, nil
}

// clientYAML is the client: section of the relay contenders in the
// throughput and latency runs: -relay-client, and -relay-compression.
func (b *bench) clientYAML() string {
	sections := make(map[string]map[string]string)
	for k, v := range b.opts.relayClient {
		sec, key, _ := strings.Cut(k, ".")
		if sections[sec] == nil {
			sections[sec] = make(map[string]string)
		}
		sections[sec][key] = v
	}
	if b.opts.relayCompression != "" {
		if sections["producer"] == nil {
			sections["producer"] = make(map[string]string)
		}
		sections["producer"]["compression"] = b.opts.relayCompression
	}
	if len(sections) == 0 {
		return ""
	}
	var y strings.Builder
	y.WriteString("client:\n")
	for _, sec := range slices.Sorted(maps.Keys(sections)) {
		fmt.Fprintf(&y, "  %s:\n", sec)
		for _, k := range slices.Sorted(maps.Keys(sections[sec])) {
			fmt.Fprintf(&y, "    %s: %s\n", k, sections[sec][k])
		}
	}
	return y.String()
}

// pipelineYAMLOf writes the trial's pipeline file. The transform chain is
// empty, or a delay of t.delay per record.
func (b *bench) pipelineYAMLOf(t trial) string {
	workers := t.workers
	if workers == 0 {
		workers = b.opts.workers
	}
	settings := maps.Clone(t.batch)
	if settings == nil {
		settings = make(map[string]string)
	}
	if t.maxRecords > 0 {
		// Polls of exactly this many (the scaling table's slow
		// transform, the warm-up's small transactions): a whole
		// source batch would be hundreds of records.
		settings["max_records"] = strconv.Itoa(t.maxRecords)
		if _, ok := settings["acquire_mode"]; !ok {
			settings["acquire_mode"] = config.AcquireRecordLimit
		}
	}
	tried := t.delay == 0 && !t.own // the throughput and latency runs
	if tried {
		maps.Copy(settings, b.opts.relayBatch)
		maps.Copy(settings, t.c.batch) // a variant's own
	}
	var batch strings.Builder
	for _, k := range slices.Sorted(maps.Keys(settings)) {
		fmt.Fprintf(&batch, "  %s: %s\n", k, settings[k])
	}
	var group strings.Builder
	if tried && len(b.opts.relayGroup) > 0 {
		group.WriteString("  group_configs:\n")
		for _, k := range slices.Sorted(maps.Keys(b.opts.relayGroup)) {
			fmt.Fprintf(&group, "    %s: %q\n", k, b.opts.relayGroup[k])
		}
	}
	client := ""
	if tried {
		client = b.clientYAML()
	}
	transforms := "[]"
	if t.delay > 0 {
		transforms = fmt.Sprintf("[{type: delay, duration: %s}]", t.delay)
	}
	if t.metricsListen != "" {
		client += fmt.Sprintf("metrics:\n  listen: %q\n", t.metricsListen)
	}
	cluster := ""
	if t.c.cross {
		// Only where the source lives differs: every other line is
		// relay-eos's.
		cluster = fmt.Sprintf("  cluster: {brokers: [%s]}\n", quoteSeeds(b.src.br.seeds))
	}
	return fmt.Sprintf(pipelineYAML, t.name, quoteSeeds(b.br.seeds), t.c.delivery, workers,
		t.source, t.name, cluster, group.String(), t.output, t.dlq, batch.String(), transforms, client)
}

// quoteSeeds writes seed brokers as the items of a YAML flow sequence.
func quoteSeeds(seeds []string) string {
	quoted := make([]string, len(seeds))
	for i, s := range seeds {
		quoted[i] = fmt.Sprintf("%q", s)
	}
	return strings.Join(quoted, ", ")
}
