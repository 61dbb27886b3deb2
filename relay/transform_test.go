package relay

import (
	"context"
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sharerelay/sharerelay/lineage"
	"github.com/sharerelay/sharerelay/metrics"
	"github.com/sharerelay/sharerelay/transform"
)

// planWorker is a worker that can transform and plan batches, without
// clients.
func planWorker(chain *transform.Chain, concurrency int) *worker {
	w := &worker{
		label: "0", pipeline: "test", outputTopic: "jobs", dlqTopic: "jobs.dlq", concurrency: concurrency,
		limits: &limits{}, chain: chain, m: metrics.New(prometheus.NewRegistry(), "test"),
		log: quietLogger(), now: time.Now,
		sizes: func() map[string]int { return map[string]int{"jobs": 1 << 20, "jobs.dlq": 1 << 20} },
	}
	w.limits.attemptsV.Store(3)
	w.copiesAsIs, w.stampNow = chain.CopiesAsIs()
	return w
}

// transformAllOf transforms every record todo of b, as transformBatch's
// first pass does.
func (w *worker) transformAllOf(ctx context.Context, b *batch, todo []int) ([]plan, []fate) {
	t := &transformed{plans: make([]plan, b.len()), fates: make([]fate, b.len()), slab: newSlab(b.recs, !w.copiesAsIs)}
	w.transformAll(ctx, b, t, todo)
	return t.plans, t.fates
}

// plannedBatch is a batch of n records: from two topics of different name
// lengths, every third with headers of its own (one an upstream relay's
// lineage header), the rest without.
func plannedBatch(n int) (*batch, []int) {
	p := &poll{}
	for i := range n {
		r := &kgo.Record{Topic: "orders", Partition: int32(i % 3), Offset: int64(1_000_000 + i),
			Key: fmt.Appendf(nil, "k%d", i), Value: fmt.Appendf(nil, "v%d", i)}
		if i%5 == 0 {
			r.Topic = "a-much-longer-source-topic-name"
		}
		if i%3 == 0 {
			r.Headers = []kgo.RecordHeader{{Key: "trace", Value: fmt.Appendf(nil, "t%d", i)}, {Key: lineage.HeaderSourceOffset, Value: []byte("7")}}
		}
		p.recs = append(p.recs, r)
	}
	b := &batch{}
	b.add(p)
	todo := make([]int, n)
	for i := range todo {
		todo[i] = i
	}
	return b, todo
}

func TestEveryOutputOfABatchCarriesItsOwnHeadersAndLineage(t *testing.T) {
	// The second step fans every fourth record out to two outputs and
	// reads the headers the transform sees.
	fanOut := transform.Func(func(_ context.Context, r *transform.Record) ([]*transform.Record, error) {
		if v, ok := r.Header("trace"); ok != (r.Source.Offset%3 == 1) || (ok && string(v) != fmt.Sprintf("t%d", r.Source.Offset-1_000_000)) {
			return nil, fmt.Errorf("offset %d: the transform saw trace header %q (%v)", r.Source.Offset, v, ok)
		}
		if r.Source.Offset%4 == 0 {
			return []*transform.Record{r, r.Clone()}, nil
		}
		return []*transform.Record{r}, nil
	})
	for _, tc := range []struct {
		name        string
		chain       *transform.Chain
		concurrency int
	}{
		{"no transforms, one at a time", transform.NewChain(), 1},
		{"no transforms, four at a time", transform.NewChain(), 4},
		{"a fan-out, four at a time", transform.NewChain().Add("fan-out", fanOut), 4},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := planWorker(tc.chain, tc.concurrency)
			b, todo := plannedBatch(300)
			// Offsets are 1,000,000 + i: the transform's check above
			// wants record i's trace header exactly when i%3 == 0,
			// i.e. offset%3 == 1.
			plans, fates := w.transformAllOf(context.Background(), b, todo)
			for i, r := range b.recs {
				if fates[i] != toWrite || plans[i].deadLetter {
					t.Fatalf("record %d: fate %v, dead letter %v", i, fates[i], plans[i].deadLetter)
				}
				in := &transform.Record{Key: r.Key, Value: r.Value}
				for _, h := range r.Headers {
					in.Headers = append(in.Headers, transform.Header{Key: h.Key, Value: h.Value})
				}
				outs := len(plans[i].outs)
				if want := 1 + btoi(tc.chain.Len() > 0 && r.Offset%4 == 0); outs != want {
					t.Fatalf("record %d: %d outputs, want %d", i, outs, want)
				}
				src := lineage.Source{Topic: r.Topic, Partition: r.Partition, Offset: r.Offset}
				for j, o := range plans[i].outs {
					if want := lineage.Output(in, "jobs", src, j, outs); !reflect.DeepEqual(*o, want) {
						t.Fatalf("record %d output %d:\n got %+v\nwant %+v", i, j, *o, want)
					}
				}
			}
		})
	}
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

func TestABatchWithoutTransformsIsPlannedInAFewAllocations(t *testing.T) {
	w := planWorker(transform.NewChain(), 1)
	b, todo := plannedBatch(2000)
	allocs := testing.AllocsPerRun(10, func() { w.transformAllOf(context.Background(), b, todo) })
	// A batch's memory, not a record's: before the slab took the
	// lineage headers, a batch of 2,000 cost three allocations a record.
	if allocs > 20 {
		t.Fatalf("transforming a batch of %d records took %v allocations", b.len(), allocs)
	}
}
