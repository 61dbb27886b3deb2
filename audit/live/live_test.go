package live

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

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
	if p.sink, err = kgo.NewClient(p.sinkOpts...); err != nil {
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

// write writes recs non-transactionally (at-least-once).
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
