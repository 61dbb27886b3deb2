package live

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sharerelay/sharerelay/audit"
	"github.com/sharerelay/sharerelay/config"
	"github.com/sharerelay/sharerelay/eos"
	"github.com/sharerelay/sharerelay/internal/kfaketest"
	"github.com/sharerelay/sharerelay/relay"
)

// The relay runs an exactly-once pipeline (every tenth order
// dead-lettered) while orders keep arriving, and the auditor beside it
// judges as it goes: at no judgement is anything lost, duplicated or
// unexpected, and at the end its totals are relay verify's.
func TestAnExactPipelineIsJudgedExactWhileItRuns(t *testing.T) {
	c := kfaketest.Cluster(t, kfake.SeedTopics(2, "orders", "jobs"), kfake.SeedTopics(1, "jobs.dlq"))
	pl, err := config.Parse("p.yaml", fmt.Appendf(nil, `
name: p
brokers: [%q]
delivery: exactly-once
workers: 2
source: {topics: [orders], group: g}
output: {topic: jobs, transaction_timeout: 5s}
dead_letter: {topic: jobs.dlq}
batch: {max_records: 20, poll_timeout: 200ms}
transforms:
  - {type: fail, name: bad, kind: permanent, reason: bad order, when: {field: order_id, modulo: 10, remainder: 0}}
`, c.ListenAddrs()[0]), func(string) (string, bool) { return "", false })
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	opts := []kgo.Opt{kgo.SeedBrokers(c.ListenAddrs()...)}
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	r, err := relay.New(relay.Options{Pipeline: pl, Instance: "t", Registerer: prometheus.NewRegistry(),
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), LedgerMarkers: eos.MarkersAtSameOrNextEpoch})
	if err != nil {
		t.Fatal(err)
	}
	rctx, stopRelay := context.WithCancel(ctx)
	relayDone := make(chan error, 1)
	go func() { relayDone <- r.Run(rctx) }()
	defer func() { stopRelay(); <-relayDone }()

	vc := audit.VerifyConfig{ClientOpts: opts, Sources: []string{"orders"}, SourceCommitted: true, Outputs: []string{"jobs"}, DeadLetter: "jobs.dlq", Group: "g"}
	p := &pipe{t: t, ctx: ctx, sinkOpts: opts, srcOpts: opts}
	a := p.run(func(cfg *Config) { cfg.Verify = vc })

	const n, batches = 300, 6
	judgements, inFlight := 0, 0
	var rep *Report
	check := func(r *Report) {
		t.Helper()
		judgements++
		if r.Total.Lag > 0 {
			inFlight++
		}
		if tot := r.Total; tot.Lost+tot.Duplicated+tot.Unexpected+tot.Both+tot.Incomplete > 0 {
			t.Fatalf("judgement %d while the relay ran: %+v", judgements, tot)
		}
		rep = r
	}
	for b := range batches {
		var recs []*kgo.Record
		for i := range n / batches {
			id := b*n/batches + i + 1
			recs = append(recs, &kgo.Record{Topic: "orders", Key: fmt.Append(nil, id), Value: fmt.Appendf(nil, `{"order_id":%d}`, id)})
		}
		if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
			t.Fatal(err)
		}
		check(p.judgements(a, 1))
	}
	for rep.Total.Sources < n || rep.Total.Lag > 0 {
		check(p.judgements(a, 1))
	}
	stopRelay()
	if err := <-relayDone; err != nil {
		t.Fatalf("relay: %v", err)
	}
	relayDone <- nil
	v, err := audit.Verify(ctx, vc)
	if err != nil {
		t.Fatal(err)
	}
	got, want := rep.Total, v.Total
	if fmt.Sprint(got) != fmt.Sprint(want) || !rep.Exact || !v.Exact || got.DeadLettered != n/10 {
		t.Fatalf("auditor (exact %v)\n%+v\nrelay verify (exact %v)\n%+v\nwant both exact with %d dead-lettered", rep.Exact, got, v.Exact, want, n/10)
	}
	if lost := a.metric("sharerelay_audit_lost_total", nil); lost != 0 {
		t.Fatalf("sharerelay_audit_lost_total = %v", lost)
	}
	t.Logf("%d judgements, %d of them with records not judged yet; %d records judged exact", judgements, inFlight, rep.Total.Sources)
}
