package relay

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sharerelay/sharerelay/metrics"
	"github.com/sharerelay/sharerelay/transform"
)

// BenchmarkWorkerPlansABatch is the relay's own CPU per record on the hot
// path, outside the Kafka client: a batch of 2,000 records of 200 B from
// 3 partitions through an empty transform chain (the bench's pipeline),
// then the size checks, the split into transactions, collect and the counting of a committed transaction.
func BenchmarkWorkerPlansABatch(b *testing.B) {
	w := &worker{
		label: "0", pipeline: "bench", outputTopic: "jobs", dlqTopic: "jobs.dlq",
		limits: &limits{}, chain: transform.NewChain(), m: metrics.New(prometheus.NewRegistry(), "bench"),
		log: quietLogger(), now: time.Now,
		sizes: func() map[string]int { return map[string]int{"jobs": 1 << 20, "jobs.dlq": 1 << 20} },
	}
	w.limits.attemptsV.Store(3)
	w.copiesAsIs, w.stampNow = w.chain.CopiesAsIs() // as setup makes a worker
	bt := &batch{}
	p := &poll{}
	value := make([]byte, 200)
	for i := range 2000 {
		p.recs = append(p.recs, &kgo.Record{Topic: "orders", Partition: int32(i % 3), Offset: int64(1_000_000 + i/3),
			Key: fmt.Appendf(nil, "%d", i), Value: value})
	}
	bt.add(p)
	todo := make([]int, bt.len())
	for i := range todo {
		todo[i] = i
	}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		plans, _ := w.transformAllOf(ctx, bt, todo)
		bg := newBudget(w.sizes(), w.tight, 1<<20)
		now, later := bg.fit(plans, w.deadLetterTooLarge(bt, plans, todo, bg))
		if len(later) > 0 {
			b.Fatalf("%d records left for a later transaction", len(later))
		}
		_ = collect(plans, now, 3)
		w.countCommitted(plans, now)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*bt.len()), "ns/record")
}
