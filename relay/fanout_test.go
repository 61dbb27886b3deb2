package relay

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sharerelay/sharerelay/lineage"
)

// A step that makes several records of one gives each its index among the
// source record's outputs and their count; a CEL expression that fails
// dead-letters its record with the step's name and class cel.
func TestFanOutOutputsCarryTheirIndexAndAFailingExpressionDeadLettersItsRecord(t *testing.T) {
	c := fakeCluster(t)
	seedOrders(t, c, 20)
	p := pipeline(t, c, `
transforms:
  - type: set
    name: needs-sku
    field: sku
    expr: value.sku
    when: {expr: value.order_id == 13}
  - type: copy
    topics: [jobs]
`)
	r, err := New(Options{Pipeline: p, Instance: "t", Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	jobs, dlq := runUntil(t, r, c, 19*2+1)
	if jobs.Records != 38 || len(jobs.BySource) != 19 || dlq.Records != 1 {
		t.Fatalf("jobs %d from %d sources, dead letters %d; want 38 from 19, and 1", jobs.Records, len(jobs.BySource), dlq.Records)
	}

	cl, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...), kgo.ConsumeTopics("jobs"),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	seen := map[lineage.Source][]bool{}
	for n := 0; n < 38 && ctx.Err() == nil; {
		for _, rec := range cl.PollFetches(ctx).Records() {
			n++
			src, ok := lineage.SourceOf(rec)
			i, count, iok := lineage.IndexOf(rec)
			if !ok || !iok || count != 2 {
				t.Fatalf("output %s/%d: source %v %v, index %d of %d %v", rec.Topic, rec.Offset, src, ok, i, count, iok)
			}
			if seen[src] == nil {
				seen[src] = make([]bool, count)
			}
			if seen[src][i] {
				t.Fatalf("source %v: index %d twice", src, i)
			}
			seen[src][i] = true
		}
	}
	if len(seen) != 19 {
		t.Fatalf("read the outputs of %d sources, want 19", len(seen))
	}

	dl := deadLetters(t, c)
	if len(dl) != 1 {
		t.Fatalf("%d dead letters", len(dl))
	}
	h := headerMap(dl[0])
	if string(dl[0].Key) != "13" || h[lineage.HeaderDLQStep] != "needs-sku" || h[lineage.HeaderDLQErrorClass] != "cel" ||
		h[lineage.HeaderDLQKind] != lineage.DLQKindPermanent || h[lineage.HeaderSourceIndex] != "" {
		t.Fatalf("dead letter key %q headers %v", dl[0].Key, h)
	}
}
