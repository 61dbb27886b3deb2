package main

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sharerelay/sharerelay/config"
	"github.com/sharerelay/sharerelay/lineage"
	"github.com/sharerelay/sharerelay/relay"
)

// Bounds of the latency phase.
const (
	relayStartTimeout = 2 * time.Minute
	joinTimeout       = 30 * time.Second
	warmUpTimeout     = time.Minute
	drainTimeout      = 30 * time.Second
	// steadyWarmUp is produced at the measured rate, and not measured,
	// before the measurement starts.
	steadyWarmUp = 2 * time.Second
)

// srcKey is a source record of the latency topic.
type srcKey struct {
	partition int32
	offset    int64
}

// stampLog records the first time each source record was seen.
type stampLog struct {
	mu    sync.Mutex
	at    map[srcKey]time.Time
	errs  int
	first error
}

func newStampLog() *stampLog { return &stampLog{at: make(map[srcKey]time.Time)} }

func (l *stampLog) stamp(k srcKey, t time.Time) {
	l.mu.Lock()
	if _, ok := l.at[k]; !ok {
		l.at[k] = t
	}
	l.mu.Unlock()
}

func (l *stampLog) len() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.at)
}

func (l *stampLog) failures() (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.errs, l.first
}

// promise is the producer promise that stamps a source record with the time
// its append was acknowledged.
func (l *stampLog) promise(r *kgo.Record, err error) {
	now := time.Now()
	if err != nil {
		l.mu.Lock()
		l.errs++
		if l.first == nil {
			l.first = err
		}
		l.mu.Unlock()
		return
	}
	l.stamp(srcKey{r.Partition, r.Offset}, now)
}

// latency runs the relay with delivery c.delivery while a steady producer
// writes -rate records/s into a fresh source topic for -latency-duration,
// and measures, per record, from its acknowledged append to its output
// becoming visible to a read_committed consumer.
func (b *bench) latency(ctx context.Context, c contender, size int) (latencyResult, error) {
	res := latencyResult{Contender: c.name, Size: size, Rate: b.opts.rate, Duration: b.opts.latencyDuration.String()}
	name := b.name(fmt.Sprintf("lat%dB", size), c.name)
	t := trial{c: c, size: size, name: name, source: name + ".src", output: name + ".out", dlq: name + ".dlq",
		workers: b.opts.workers}
	defer b.deleteTopics(latencyTopics(t)...)
	if err := b.createLatencyTopics(ctx, t); err != nil {
		return res, err
	}
	if err := b.newGroup(ctx, t.name); err != nil {
		return res, err
	}
	p, err := b.pipeline(t)
	if err != nil {
		return res, err
	}
	progress("latency %s: %d rec/s of %d B for %s", c.name, b.opts.rate, size, b.opts.latencyDuration)

	lctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	defer func() { cancel(); wg.Wait() }()

	// The read_committed consumer of the output.
	visible := newStampLog()
	if err := b.watchLatencyOutput(lctx, t, visible, &wg); err != nil {
		return res, err
	}

	// The relay.
	tc := newTraceCollector(b.opts.trace, 0)
	r, failed, err := b.startLatencyRelay(ctx, lctx, p, tc, &wg)
	if err != nil {
		return res, err
	}

	prod, err := kgo.NewClient(b.clientOpts(kgo.DefaultProduceTopic(t.source), kgo.ProducerLinger(0))...)
	if err != nil {
		return res, fmt.Errorf("creating the latency producer: %w", err)
	}
	defer prod.Close()
	rng := rand.New(rand.NewPCG(uint64(size), 1))

	if err := b.warmUpLatency(lctx, t, prod, rng, visible, failed); err != nil {
		return res, err
	}
	appended, err := b.measureAppends(lctx, c, prod, rng, size)
	if err != nil {
		return res, err
	}
	drainVisible(lctx, appended, visible)
	if err := ctx.Err(); err != nil {
		return res, err
	}
	cancel()
	wg.Wait()
	tc.relayBatches(r.Metrics(), t.workers)
	tc.print(c.name + " (latency)")

	res.summarize(appended, visible)
	return res, nil
}

// latencyTopics are the topics a latency trial creates, the relay's claim
// ledger and its snapshots included.
func latencyTopics(t trial) []string {
	created := []string{t.source, t.output, t.dlq}
	if t.c.delivery == config.ExactlyOnce {
		ledger := t.name + config.DefaultLedgerSuffix
		created = append(created, ledger, ledger+".snapshots")
	}
	return created
}

// createLatencyTopics creates the source, output and dead-letter topics of
// a latency trial.
func (b *bench) createLatencyTopics(ctx context.Context, t trial) error {
	for _, tp := range []struct {
		name  string
		parts int32
	}{{t.source, sourcePartitions}, {t.output, sourcePartitions}, {t.dlq, 1}} {
		if err := b.createTopic(ctx, tp.name, tp.parts, nil); err != nil {
			return err
		}
	}
	return nil
}

// watchLatencyOutput starts, in wg, the read_committed consumer of t's
// output that stamps each output's visibility in visible until ctx ends.
func (b *bench) watchLatencyOutput(ctx context.Context, t trial, visible *stampLog, wg *sync.WaitGroup) error {
	cons, err := kgo.NewClient(b.clientOpts(
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{t.output: allPartitions(sourcePartitions)}),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.FetchMaxWait(20*time.Millisecond),
	)...)
	if err != nil {
		return fmt.Errorf("creating the output consumer: %w", err)
	}
	wg.Go(func() { watchOutput(ctx, cons, t.source, visible) })
	return nil
}

// startLatencyRelay runs the relay of pipeline p, in wg, until lctx ends,
// and waits (bounded by ctx and relayStartTimeout) until it has started.
// A relay that returns before lctx ends reports it on failed.
func (b *bench) startLatencyRelay(ctx, lctx context.Context, p *config.Pipeline, tc *traceCollector, wg *sync.WaitGroup) (*relay.Relay, <-chan error, error) {
	ready := make(chan struct{})
	r, closeRelay, err := b.newRelay(lctx, p, tc, func() { close(ready) })
	if err != nil {
		return nil, nil, err
	}
	failed := make(chan error, 1)
	wg.Go(func() {
		err := r.Run(lctx)
		closeRelay()
		if lctx.Err() == nil {
			failed <- fmt.Errorf("the relay returned: %v", err)
		} else if err != nil {
			progress("warning: stopping the relay: %v", err)
		}
	})
	if err := waitFor(ctx, ready, failed, relayStartTimeout, "the relay to start"); err != nil {
		return nil, nil, err
	}
	return r, failed, nil
}

// warmUpLatency warms trial t up before the measurement: every worker
// joined the share group, an output is visible (every client connected),
// then a steady stream at the measured rate.
func (b *bench) warmUpLatency(ctx context.Context, t trial, prod *kgo.Client, rng *rand.Rand, visible *stampLog, failed <-chan error) error {
	if err := b.waitMembers(ctx, t.name, t.workers, joinTimeout); err != nil {
		progress("warning: latency %s: %v", t.c.name, err)
	}
	if err := warmUp(ctx, prod, rng, t.size, visible, failed); err != nil {
		return err
	}
	if _, err := pace(ctx, prod, rng, t.size, b.opts.rate, steadyWarmUp, newStampLog()); err != nil {
		return err
	}
	return nil
}

// measureAppends produces at -rate for -latency-duration, stamping each
// record with its acknowledged append, and flushes; it warns of records
// that failed to produce.
func (b *bench) measureAppends(ctx context.Context, c contender, prod *kgo.Client, rng *rand.Rand, size int) (*stampLog, error) {
	appended := newStampLog()
	sent, err := pace(ctx, prod, rng, size, b.opts.rate, b.opts.latencyDuration, appended)
	if err != nil {
		return nil, err
	}
	if err := prod.Flush(ctx); err != nil {
		return nil, fmt.Errorf("flushing the latency producer: %w", err)
	}
	if n, first := appended.failures(); n > 0 {
		progress("WARNING: latency %s: %d of %d records failed to produce: %v", c.name, n, sent, first)
	}
	return appended, nil
}

// drainVisible waits, up to drainTimeout or until ctx ends, for every
// appended record to have a visible output.
func drainVisible(ctx context.Context, appended, visible *stampLog) {
	drainStart := time.Now()
	for !allVisible(appended, visible) && time.Since(drainStart) < drainTimeout && ctx.Err() == nil {
		time.Sleep(20 * time.Millisecond)
	}
}

// summarize fills in res's latency percentiles from the appended and
// visible stamps, and reports them.
func (res *latencyResult) summarize(appended, visible *stampLog) {
	lat, missing := latencies(appended, visible)
	res.Records, res.Missing = len(lat), missing
	if len(lat) > 0 {
		res.P50, res.P90, res.P99, res.Max = percentile(lat, 50), percentile(lat, 90), percentile(lat, 99), lat[len(lat)-1]
	}
	if missing > 0 {
		progress("WARNING: latency %s: %d of %d records had no visible output after %s", res.Contender, missing, len(lat)+missing, drainTimeout)
	}
	progress("latency %s: %d records, p50 %.1f ms, p90 %.1f ms, p99 %.1f ms, max %.1f ms",
		res.Contender, res.Records, res.P50, res.P90, res.P99, res.Max)
}

func allPartitions(n int32) map[int32]kgo.Offset {
	m := make(map[int32]kgo.Offset, n)
	for p := range n {
		m[p] = kgo.NewOffset().AtStart()
	}
	return m
}

// watchOutput stamps every output of a record of source with the time it
// became visible, until ctx ends; then it closes cons.
func watchOutput(ctx context.Context, cons *kgo.Client, source string, visible *stampLog) {
	defer cons.Close()
	warned := 0
	for {
		fs := cons.PollFetches(ctx)
		if ctx.Err() != nil {
			return
		}
		now := time.Now()
		fs.EachError(func(topic string, p int32, err error) {
			if warned < 5 && !errors.Is(err, context.Canceled) {
				warned++
				progress("warning: reading %s[%d]: %v", topic, p, err)
			}
		})
		fs.EachRecord(func(r *kgo.Record) {
			if src, ok := lineage.SourceOf(r); ok && src.Topic == source {
				visible.stamp(srcKey{src.Partition, src.Offset}, now)
			}
		})
	}
}

// waitFor waits until ch is closed.
func waitFor(ctx context.Context, ch <-chan struct{}, failed <-chan error, timeout time.Duration, what string) error {
	select {
	case <-ch:
		return nil
	case err := <-failed:
		return err
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(timeout):
		return fmt.Errorf("timed out after %s waiting for %s", timeout, what)
	}
}

// waitMembers waits until the share group has n members, each with an
// assignment.
func (b *bench) waitMembers(ctx context.Context, group string, n int, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		gs, err := b.adm.DescribeShareGroups(ctx, group)
		if err == nil {
			if g, ok := gs[group]; ok && g.Err == nil && len(g.Members) >= n && allAssigned(g) {
				return nil
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("share group %s: not all of its %d members joined with an assignment within %s", group, n, timeout)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func allAssigned(g kadm.DescribedShareGroup) bool {
	for _, m := range g.Members {
		if len(m.Assignment) == 0 {
			return false
		}
	}
	return true
}

// warmUp produces a record every 50ms until one output is visible.
func warmUp(ctx context.Context, prod *kgo.Client, rng *rand.Rand, size int, visible *stampLog, failed <-chan error) error {
	deadline := time.After(warmUpTimeout)
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for id := -1; visible.len() == 0; id-- {
		prod.Produce(ctx, &kgo.Record{Key: strconv.AppendInt(nil, int64(id), 10), Value: value(rng, id, size)}, nil)
		select {
		case <-tick.C:
		case err := <-failed:
			return err
		case <-ctx.Done():
			return ctx.Err()
		case <-deadline:
			return fmt.Errorf("no output visible after %s of warm-up", warmUpTimeout)
		}
	}
	return nil
}

// pace produces rate records/s for d, stamping each in appended when its
// append is acknowledged. It returns the number of records produced.
func pace(ctx context.Context, prod *kgo.Client, rng *rand.Rand, size, rate int, d time.Duration, appended *stampLog) (int, error) {
	tick := time.NewTicker(2 * time.Millisecond)
	defer tick.Stop()
	start := time.Now()
	sent := 0
	for {
		select {
		case <-ctx.Done():
			return sent, ctx.Err()
		case <-tick.C:
		}
		el := min(time.Since(start), d)
		for want := int(float64(rate) * el.Seconds()); sent < want; sent++ {
			prod.Produce(ctx, &kgo.Record{Key: strconv.AppendInt(nil, int64(sent), 10), Value: value(rng, sent, size)}, appended.promise)
		}
		if el == d {
			return sent, nil
		}
	}
}

func allVisible(appended, visible *stampLog) bool {
	appended.mu.Lock()
	defer appended.mu.Unlock()
	visible.mu.Lock()
	defer visible.mu.Unlock()
	for k := range appended.at {
		if _, ok := visible.at[k]; !ok {
			return false
		}
	}
	return true
}

// latencies returns, sorted, the milliseconds from each appended record to
// its first visible output, and the number of records without one.
func latencies(appended, visible *stampLog) (ms []float64, missing int) {
	appended.mu.Lock()
	defer appended.mu.Unlock()
	visible.mu.Lock()
	defer visible.mu.Unlock()
	for k, at := range appended.at {
		v, ok := visible.at[k]
		if !ok {
			missing++
			continue
		}
		ms = append(ms, float64(v.Sub(at).Microseconds())/1000)
	}
	slices.Sort(ms)
	return ms, missing
}

// percentile returns the nearest-rank p-th percentile of sorted xs.
func percentile(xs []float64, p float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	i := int(float64(len(xs))*p/100+0.999999) - 1
	return xs[min(max(i, 0), len(xs)-1)]
}
