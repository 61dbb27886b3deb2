package live

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"go.uber.org/goleak"

	"github.com/sharerelay/sharerelay/audit"
	"github.com/sharerelay/sharerelay/internal/kfaketest"
	"github.com/sharerelay/sharerelay/lineage"
	"github.com/sharerelay/sharerelay/sharegroup"
)

// pipe is a pipeline played by hand on kfake clusters: sources on one
// cluster (orders, read by share group g), outputs (jobs) and dead
// letters (jobs.dlq) on another, or the same.
type pipe struct {
	t          testing.TB
	ctx        context.Context
	src, sink  *kgo.Client
	group      *kgo.Client
	srcOpts    []kgo.Opt
	sinkOpts   []kgo.Opt
	sourceRecs []*kgo.Record
}

// newPipe starts the clusters: one, or two when cross.
func newPipe(t testing.TB, cross bool, partitions int32) *pipe {
	t.Helper()
	srcC := kfaketest.Cluster(t, kfake.SeedTopics(partitions, "orders"), kfake.SeedTopics(partitions, "jobs"), kfake.SeedTopics(1, "jobs.dlq"))
	sinkC := srcC
	if cross {
		sinkC = kfaketest.Cluster(t, kfake.SeedTopics(partitions, "jobs"), kfake.SeedTopics(1, "jobs.dlq"))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	p := &pipe{t: t, ctx: ctx,
		srcOpts:  []kgo.Opt{kgo.SeedBrokers(srcC.ListenAddrs()...)},
		sinkOpts: []kgo.Opt{kgo.SeedBrokers(sinkC.ListenAddrs()...)}}
	var err error
	if p.src, err = kgo.NewClient(p.srcOpts...); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.src.Close)
	if p.sink, err = kgo.NewClient(append(slices.Clone(p.sinkOpts), kgo.RecordPartitioner(kgo.ManualPartitioner()))...); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.sink.Close)
	if err := sharegroup.SetConfigs(ctx, p.src, "g", map[string]string{sharegroup.AutoOffsetReset: "earliest"}); err != nil {
		t.Fatal(err)
	}
	if p.group, err = kgo.NewClient(append(p.srcOpts, kgo.ShareGroup("g"), kgo.ConsumeTopics("orders"))...); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.group.Close)
	return p
}

// produce appends n source records.
func (p *pipe) produce(n int) {
	p.t.Helper()
	var recs []*kgo.Record
	for i := range n {
		recs = append(recs, &kgo.Record{Topic: "orders", Key: fmt.Append(nil, len(p.sourceRecs)+i), Value: []byte("{}")})
	}
	if err := p.src.ProduceSync(p.ctx, recs...).FirstErr(); err != nil {
		p.t.Fatal(err)
	}
	p.sourceRecs = append(p.sourceRecs, recs...)
}

// take acquires n records through the share group, without
// acknowledging them.
func (p *pipe) take(n int) []*kgo.Record {
	p.t.Helper()
	var got []*kgo.Record
	for len(got) < n {
		fs := p.group.PollRecords(p.ctx, n-len(got))
		if p.ctx.Err() != nil {
			p.t.Fatalf("the share group took %d of %d records: %v", len(got), n, p.ctx.Err())
		}
		got = append(got, fs.Records()...)
	}
	return got
}

// ack accepts recs and waits for the acknowledgements.
func (p *pipe) ack(recs ...*kgo.Record) {
	p.t.Helper()
	p.group.MarkAcks(kgo.AckAccept, recs...)
	if err := p.group.FlushAcks(p.ctx); err != nil {
		p.t.Fatal(err)
	}
}

// out returns an output (or a dead letter) of source record r, with
// fan-out position index of count when count > 1.
func out(r *kgo.Record, dlq bool, index, count int) *kgo.Record {
	src := lineage.Source{Topic: r.Topic, Partition: r.Partition, Offset: r.Offset}
	if dlq {
		return &kgo.Record{Topic: "jobs.dlq", Headers: lineage.SetSource(nil, src)}
	}
	return &kgo.Record{Topic: "jobs", Partition: r.Partition, Headers: lineage.Label(nil, src, index, count)}
}

// write writes recs non-transactionally (at-least-once), each to the
// partition it names.
func (p *pipe) write(recs ...*kgo.Record) {
	p.t.Helper()
	if err := p.sink.ProduceSync(p.ctx, recs...).FirstErr(); err != nil {
		p.t.Fatal(err)
	}
}

// verifyConfig is what the auditor and relay verify audit.
func (p *pipe) verifyConfig() audit.VerifyConfig {
	return audit.VerifyConfig{ClientOpts: p.sinkOpts, SourceClientOpts: p.srcOpts, Sources: []string{"orders"}, SourceCommitted: true,
		Outputs: []string{"jobs"}, DeadLetter: "jobs.dlq", Group: "g"}
}

// auditor returns an auditor of the pipe with a short interval.
func (p *pipe) auditor(mod ...func(*Config)) *Auditor {
	p.t.Helper()
	cfg := Config{Verify: p.verifyConfig(), Pipeline: "p", Delivery: "exactly-once", Interval: 50 * time.Millisecond}
	for _, m := range mod {
		m(&cfg)
	}
	a, err := New(cfg)
	if err != nil {
		p.t.Fatal(err)
	}
	return a
}

// Records handled once each, one skipped, one written twice, one
// dead-lettered, a fan-out short of an output: RunOnce counts what relay
// verify counts.
func TestRunOnceJudgesAQuietPipelineAsRelayVerifyDoes(t *testing.T) {
	for _, cross := range []bool{false, true} {
		t.Run(fmt.Sprintf("cross-cluster=%v", cross), func(t *testing.T) {
			p := newPipe(t, cross, 2)
			p.produce(20)
			recs := p.take(20)
			var outs []*kgo.Record
			for i, r := range recs {
				switch i {
				case 0: // skipped: lost
				case 1: // twice: duplicated
					outs = append(outs, out(r, false, 0, 1), out(r, false, 0, 1))
				case 2:
					outs = append(outs, out(r, true, 0, 1))
				case 3: // a fan-out of 3 with 2 outputs: incomplete
					outs = append(outs, out(r, false, 0, 3), out(r, false, 2, 3))
				default:
					outs = append(outs, out(r, false, 0, 1))
				}
			}
			p.write(outs...)
			p.ack(recs...)

			rep, err := p.auditor().RunOnce(p.ctx)
			if err != nil {
				t.Fatal(err)
			}
			v, err := audit.Verify(p.ctx, p.verifyConfig())
			if err != nil {
				t.Fatal(err)
			}
			got, want := rep.Total, v.Total
			got.Lag, want.Lag = 0, 0
			if fmt.Sprint(got) != fmt.Sprint(want) {
				t.Fatalf("auditor total\n%+v\nrelay verify\n%+v", got, want)
			}
			if got.Sources != 20 || got.Lost != 1 || got.Duplicated != 1 || got.DeadLettered != 1 || got.Incomplete != 1 || rep.Exact {
				t.Fatalf("total %+v exact %v: want 20 records, 1 lost, 1 duplicated, 1 dead-lettered, 1 incomplete, not exact", got, rep.Exact)
			}
		})
	}
}

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// running is an auditor running in the background.
type running struct {
	a    *Auditor
	reg  *prometheus.Registry
	stop func() error
}

// run starts an auditor of the pipe; stop cancels it and returns what Run
// returned.
func (p *pipe) run(mod ...func(*Config)) *running {
	p.t.Helper()
	reg := prometheus.NewRegistry()
	a := p.auditor(append([]func(*Config){func(c *Config) { c.Registerer = reg }}, mod...)...)
	ctx, cancel := context.WithCancel(p.ctx)
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx) }()
	r := &running{a: a, reg: reg}
	var once sync.Once
	var err error
	r.stop = func() error {
		once.Do(func() {
			cancel()
			select {
			case err = <-done:
			case <-time.After(20 * time.Second):
				err = errors.New("the auditor did not stop within 20s of its context ending")
			}
		})
		return err
	}
	p.t.Cleanup(func() { r.stop() })
	return r
}

// metric sums the series of metric name (any labels matching want).
func (r *running) metric(name string, want map[string]string) float64 {
	mfs, err := r.reg.Gather()
	if err != nil {
		panic(err)
	}
	var sum float64
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
	series:
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if v, ok := want[l.GetName()]; ok && v != l.GetValue() {
					continue series
				}
			}
			switch {
			case m.Counter != nil:
				sum += m.Counter.GetValue()
			case m.Gauge != nil:
				sum += m.Gauge.GetValue()
			}
		}
	}
	return sum
}

// judgements waits until the auditor has judged n more fences, and
// returns its report then.
func (p *pipe) judgements(r *running, n int) *Report {
	p.t.Helper()
	var last time.Time
	if rep := r.a.Report(); rep != nil {
		last = rep.JudgedAt
	}
	for seen := 0; ; time.Sleep(10 * time.Millisecond) {
		if p.ctx.Err() != nil {
			ok, why := r.a.Ready()
			p.t.Fatalf("%d of %d judgements (ready %v: %s): %v", seen, n, ok, why, p.ctx.Err())
		}
		rep := r.a.Report()
		if rep == nil || !rep.JudgedAt.After(last) {
			continue
		}
		last = rep.JudgedAt
		if seen++; seen == n {
			return rep
		}
	}
}

// judged waits until the auditor has judged n records in all.
func (p *pipe) judged(r *running, n int) *Report {
	p.t.Helper()
	for {
		rep := p.judgements(r, 1)
		if rep.Total.Sources >= n {
			return rep
		}
	}
}

// Records acquired and not acknowledged are not judged, however many
// fences pass; nor, while a transaction is open on an output, is any
// record — even one acknowledged, whose outputs that transaction holds.
// Once acknowledged and committed, every record is judged exact: nothing
// in flight was ever reported lost.
func TestRecordsInFlightAreNeverJudged(t *testing.T) {
	p := newPipe(t, false, 1)
	p.produce(10)
	r := p.run()
	recs := p.take(10)
	// 0..4 handled; 5..9 acquired and held.
	var outs []*kgo.Record
	for _, rec := range recs[:5] {
		outs = append(outs, out(rec, false, 0, 1))
	}
	p.write(outs...)
	p.ack(recs[:5]...)
	p.judged(r, 5)
	rep := p.judgements(r, 4)
	if rep.Total.Sources != 5 || rep.Total.Lost != 0 || !rep.Exact || rep.Total.Lag != 5 {
		t.Fatalf("with 5 records held over 4 fences: %+v exact %v; want 5 judged, exact, 5 unjudged", rep.Total, rep.Exact)
	}

	// 5 and 6: their outputs in a transaction left open, then 5 and 6
	// acknowledged (a relay would not; a broker that lost the commit's
	// effect could look the same): the transaction holds the outputs'
	// last stable offset, so no fence settles.
	txn := p.txnClient()
	if err := txn.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	if err := txn.ProduceSync(p.ctx, out(recs[5], false, 0, 1), out(recs[6], false, 0, 1)).FirstErr(); err != nil {
		t.Fatal(err)
	}
	p.ack(recs[5:7]...)
	before := r.a.Report().JudgedAt
	time.Sleep(20 * r.a.cfg.Interval)
	if rep := r.a.Report(); rep.JudgedAt != before || rep.Total.Sources != 5 {
		t.Fatalf("a fence settled while a transaction on the outputs was open: %+v", rep.Total)
	}
	if ok, why := r.a.Ready(); !ok {
		t.Fatalf("not ready while waiting on a transaction: %s", why)
	}
	if err := txn.EndTransaction(p.ctx, kgo.TryCommit); err != nil {
		t.Fatal(err)
	}
	rep = p.judged(r, 7)
	if rep.Total.Sources != 7 || !rep.Exact {
		t.Fatalf("after the commit: %+v exact %v, want 7 judged, exact", rep.Total, rep.Exact)
	}

	outs = outs[:0]
	for _, rec := range recs[7:] {
		outs = append(outs, out(rec, false, 0, 1))
	}
	p.write(outs...)
	p.ack(recs[7:]...)
	rep = p.judged(r, 10)
	if rep.Total.Sources != 10 || rep.Total.Output != 10 || !rep.Exact || rep.Total.Lag != 0 {
		t.Fatalf("at the end: %+v exact %v, want 10 judged with output, exact, none unjudged", rep.Total, rep.Exact)
	}
	if lost := r.metric("sharerelay_audit_lost_total", nil); lost != 0 {
		t.Fatalf("sharerelay_audit_lost_total = %v, want 0", lost)
	}
	if judged := r.metric("sharerelay_audit_records_judged_total", map[string]string{"topic": "orders", "partition": "0", "pipeline": "p"}); judged != 10 {
		t.Fatalf("sharerelay_audit_records_judged_total{orders,0} = %v, want 10", judged)
	}
	if err := r.stop(); err != nil {
		t.Fatal(err)
	}
}

// txnClient returns a transactional producer on the sink cluster.
func (p *pipe) txnClient() *kgo.Client {
	p.t.Helper()
	cl, err := kgo.NewClient(append(slices.Clone(p.sinkOpts), kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.TransactionalID(fmt.Sprintf("txn-%d", time.Now().UnixNano())))...)
	if err != nil {
		p.t.Fatal(err)
	}
	p.t.Cleanup(cl.Close)
	return cl
}

// A record acknowledged without output is lost once it settles; one
// written twice is duplicated, and so is one written again after it was
// judged (late); one whose outputs' transaction was aborted after it was
// acknowledged (a broker's stale commit answer) is lost; a fan-out short
// of an output is incomplete. Each shows in its counter.
func TestAnomaliesAreCountedOnceTheirRecordSettles(t *testing.T) {
	p := newPipe(t, true, 1)
	p.produce(8)
	r := p.run()
	recs := p.take(8)
	p.write(
		out(recs[1], false, 0, 1), out(recs[1], false, 0, 1), // twice
		out(recs[2], false, 0, 1),
		out(recs[3], false, 0, 2), // a fan-out of 2, one written
		out(recs[4], false, 0, 1),
		out(recs[6], true, 0, 1),
		out(recs[7], false, 0, 1),
	)
	txn := p.txnClient()
	if err := txn.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	if err := txn.ProduceSync(p.ctx, out(recs[5], false, 0, 1)).FirstErr(); err != nil {
		t.Fatal(err)
	}
	p.ack(recs...) // 0 without output
	if err := txn.EndTransaction(p.ctx, kgo.TryAbort); err != nil {
		t.Fatal(err)
	}
	rep := p.judged(r, 8)
	tot := rep.Total
	if tot.Lost != 2 || tot.Duplicated != 1 || tot.Incomplete != 1 || tot.DeadLettered != 1 || rep.Exact {
		t.Fatalf("%+v exact %v; want 2 lost (0, 5), 1 duplicated (1), 1 incomplete (3), 1 dead-lettered (6)", tot, rep.Exact)
	}
	if got := rep.Partitions[0].LostSample; fmt.Sprint(got) != fmt.Sprint([]int64{recs[0].Offset, recs[5].Offset}) {
		t.Fatalf("lost sample %v, want the offsets of records 0 and 5", got)
	}
	// Record 2 written again after it was judged: late, a duplicate.
	p.write(out(recs[2], false, 0, 1))
	for p.ctx.Err() == nil && r.metric("sharerelay_audit_late_total", nil) == 0 {
		time.Sleep(10 * time.Millisecond)
	}
	for name, want := range map[string]float64{
		"sharerelay_audit_records_judged_total": 8,
		"sharerelay_audit_lost_total":           2,
		"sharerelay_audit_duplicated_total":     2,
		"sharerelay_audit_late_total":           1,
		"sharerelay_audit_incomplete_total":     1,
		"sharerelay_audit_dead_lettered_total":  1,
		"sharerelay_audit_filtered_total":       0,
		"sharerelay_audit_unexpected_total":     0,
		"sharerelay_audit_lag_records":          0,
	} {
		if got := r.metric(name, nil); got != want {
			t.Errorf("%s = %v, want %v", name, got, want)
		}
	}
}

// An at-least-once pipeline's duplicates are counted like any other, and
// the info metric's delivery label tells the alert they are expected; a
// loss still counts.
func TestAtLeastOnceDuplicatesAreCountedAndLabelled(t *testing.T) {
	p := newPipe(t, false, 1)
	p.produce(4)
	r := p.run(func(c *Config) { c.Delivery = "at-least-once" })
	recs := p.take(4)
	p.write(out(recs[0], false, 0, 1), out(recs[0], false, 0, 1), out(recs[1], false, 0, 1), out(recs[2], false, 0, 1))
	p.ack(recs[:3]...)
	rep := p.judged(r, 3)
	if rep.Total.Duplicated != 1 || rep.Exact || !rep.AsPromised {
		t.Fatalf("%+v exact %v as promised %v; want 1 duplicated, not exact, as promised for at-least-once", rep.Total, rep.Exact, rep.AsPromised)
	}
	if got := r.metric("sharerelay_audit_info", map[string]string{"delivery": "at-least-once"}); got != 1 {
		t.Fatalf(`sharerelay_audit_info{delivery="at-least-once"} = %v, want 1`, got)
	}
	if got := r.metric("sharerelay_audit_duplicated_total", nil); got != 1 {
		t.Fatalf("sharerelay_audit_duplicated_total = %v, want 1", got)
	}
	p.ack(recs[3])
	rep = p.judged(r, 4)
	if rep.Total.Lost != 1 || rep.AsPromised {
		t.Fatalf("%+v as promised %v; want 1 lost, not as promised", rep.Total, rep.AsPromised)
	}
}

// A restart resumes from the checkpoint in its topic: the counts go on
// from where they were, in the report and the metrics, and no record is
// judged twice.
func TestARestartResumesFromTheCheckpointTopic(t *testing.T) {
	p := newPipe(t, true, 2)
	p.produce(20)
	store := func(c *Config) { c.Checkpoint = TopicStore(p.sinkOpts, CheckpointTopic("p"), "p") }
	r := p.run(store)
	recs := p.take(20)
	var outs []*kgo.Record
	for _, rec := range recs {
		outs = append(outs, out(rec, false, 0, 1))
	}
	p.write(outs...)
	p.ack(recs[:10]...)
	first := p.judged(r, 10)
	if err := r.stop(); err != nil {
		t.Fatal(err)
	}
	p.ack(recs[10:]...)

	r = p.run(store)
	rep := p.judged(r, 20)
	if rep.Total.Sources != 20 || rep.Total.Output != 20 || !rep.Exact || rep.Late != 0 || first.Total.Sources != 10 {
		t.Fatalf("after the restart: %+v late %d exact %v (before it: %d judged); want 20 judged once each, exact", rep.Total, rep.Late, rep.Exact, first.Total.Sources)
	}
	if got := r.metric("sharerelay_audit_records_judged_total", nil); got != 20 {
		t.Fatalf("sharerelay_audit_records_judged_total = %v after the restart, want 20 (10 before it, 10 after)", got)
	}
}

// The checkpoint keeps the marks of outputs already read whose record
// the group had not acknowledged yet: without them (the marks dropped
// from the checkpoint) a restart judges those records lost; with them,
// exact.
func TestTheCheckpointKeepsTheOutputsOfRecordsNotYetAcknowledged(t *testing.T) {
	p := newPipe(t, false, 1)
	p.produce(10)
	file := filepath.Join(t.TempDir(), "audit.json")
	r := p.run(func(c *Config) { c.Checkpoint = FileStore(file) })
	recs := p.take(10)
	var outs []*kgo.Record
	for _, rec := range recs {
		outs = append(outs, out(rec, false, 0, 1))
	}
	p.write(outs...)
	p.ack(recs[:5]...)
	p.judged(r, 5)
	// Every output read: 5..9's are held as marks.
	for p.ctx.Err() == nil {
		if r.a.Report().OutputRecords == 10 {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err := r.stop(); err != nil {
		t.Fatal(err)
	}
	p.ack(recs[5:]...)

	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var cp checkpoint
	if err := json.Unmarshal(b, &cp); err != nil {
		t.Fatal(err)
	}
	if len(cp.Sources) != 1 || len(cp.Sources[0].Pending) != 5 || cp.Sources[0].Judged != recs[5].Offset {
		t.Fatalf("checkpoint sources %+v; want orders[0] judged to %d with 5 offsets pending", cp.Sources, recs[5].Offset)
	}
	cp.Sources[0].Pending = nil
	dropped := filepath.Join(t.TempDir(), "dropped.json")
	if b, err := json.Marshal(cp); err != nil || os.WriteFile(dropped, b, 0o644) != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		file string
		lost int
	}{{dropped, 5}, {file, 0}} {
		rep, err := p.auditor(func(c *Config) { c.Checkpoint = FileStore(tc.file) }).RunOnce(p.ctx)
		if err != nil {
			t.Fatal(err)
		}
		if rep.Total.Sources != 10 || rep.Total.Lost != tc.lost {
			t.Fatalf("resumed from %s: %+v; want 10 judged, %d lost", filepath.Base(tc.file), rep.Total, tc.lost)
		}
	}
}

// Run stops when its context ends: it returns nil promptly, writes the
// checkpoint, and leaves no goroutine behind.
func TestRunStopsCleanlyWhenItsContextEnds(t *testing.T) {
	p := newPipe(t, true, 2)
	p.produce(4)
	recs := p.take(4)
	for _, rec := range recs {
		p.write(out(rec, false, 0, 1))
	}
	p.ack(recs...)
	p.src.Close()
	p.sink.Close()
	p.group.Close()
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())

	file := filepath.Join(t.TempDir(), "audit.json")
	r := p.run(func(c *Config) { c.Checkpoint = FileStore(file) })
	p.judged(r, 4)
	start := time.Now()
	if err := r.stop(); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("Run took %s to return after its context ended", d)
	}
	if ok, why := r.a.Ready(); ok || why != "stopped" {
		t.Errorf("ready %v (%s) after the stop, want not ready: stopped", ok, why)
	}
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	cp, err := decodeCheckpoint(b)
	if err != nil || len(cp.Sources) != 2 || cp.Sources[0].Counts.Sources+cp.Sources[1].Counts.Sources != 4 {
		t.Fatalf("checkpoint after the stop: %+v, %v; want both partitions, 4 judged", cp, err)
	}
}

// A broker lost the commit marker of a transaction whose records were
// acknowledged: its outputs stay open, and the relay, before closing the
// span with an abort, writes them again in a transaction of its other
// producer (docs/exactly-once.md). Judged at the fence the readers were
// stuck behind, the record is lost and its copy a late duplicate; judged
// one fence later, as the auditor does, it is exact.
func TestARestoredOutputOfALostMarkerIsNotJudgedLost(t *testing.T) {
	for _, tc := range []struct {
		name     string
		ownFence bool
		lost     int
	}{{"judged at its own fence", true, 1}, {"judged one fence later", false, 0}} {
		t.Run(tc.name, func(t *testing.T) {
			p := newPipe(t, false, 2)
			p.produce(2)
			recs := p.take(2)
			first := out(recs[0], false, 0, 1)
			first.Partition = 0
			p.write(first)
			// The committed transaction whose marker the broker lost: left
			// open in jobs[0], its records acknowledged.
			txn := p.txnClient()
			if err := txn.BeginTransaction(); err != nil {
				t.Fatal(err)
			}
			orig := out(recs[1], false, 0, 1)
			orig.Partition = 0
			if err := txn.ProduceSync(p.ctx, orig).FirstErr(); err != nil {
				t.Fatal(err)
			}
			p.ack(recs...)
			// The auditor's first fence, then, cannot settle: its reader
			// is held in jobs[0]; jobs[1]'s is at its end (0), paused.
			r := p.run(func(c *Config) { c.ownFence = tc.ownFence })
			time.Sleep(10 * r.a.cfg.Interval)
			if rep := r.a.Report(); rep != nil {
				t.Fatalf("judged %+v behind an open transaction", rep.Total)
			}
			// The repair: the copy, in jobs[1], then the abort.
			cp := out(recs[1], false, 0, 1)
			cp.Partition = 1
			p.write(cp)
			if err := txn.EndTransaction(p.ctx, kgo.TryAbort); err != nil {
				t.Fatal(err)
			}
			p.judged(r, 2)
			for p.ctx.Err() == nil && r.a.Report().OutputRecords < 2 {
				time.Sleep(10 * time.Millisecond)
			}
			rep := r.a.Report()
			if rep.Total.Lost != tc.lost || rep.Late != tc.lost || rep.Total.Sources != 2 {
				t.Fatalf("%+v, late %d; want 2 judged, %d lost and %d late", rep.Total, rep.Late, tc.lost, tc.lost)
			}
		})
	}
}

// Started at the topics' ends, the audit judges only what comes after:
// an earlier record without output is none of its business, nor are the
// earlier outputs.
func TestAnAuditFromTheEndJudgesOnlyWhatComesAfter(t *testing.T) {
	p := newPipe(t, true, 1)
	p.produce(5)
	before := p.take(5)
	for _, rec := range before[1:] {
		p.write(out(rec, false, 0, 1))
	}
	p.ack(before...) // before[0] lost, before the audit
	r := p.run(func(c *Config) { c.FromEnd = true })
	p.judgements(r, 2)
	p.produce(5)
	after := p.take(5)
	for _, rec := range after {
		p.write(out(rec, false, 0, 1))
	}
	p.write(out(before[2], false, 0, 1)) // a late duplicate of a record before the audit: not judged, not counted
	p.ack(after...)
	rep := p.judged(r, 5)
	if rep.Total.Sources != 5 || rep.Total.Lost != 0 || rep.Total.Duplicated != 0 || !rep.Exact {
		t.Fatalf("%+v exact %v; want the 5 records after the start judged, exact", rep.Total, rep.Exact)
	}
}
