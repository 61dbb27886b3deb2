package relay

import (
	"context"
	"sync"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sharerelay/sharerelay/lineage"
	"github.com/sharerelay/sharerelay/transform"
)

// transformBatch transforms the records todo of b (transformAll) and
// releases those whose transform asked for another delivery. It returns
// every record's plan and the records to write.
func (w *worker) transformBatch(ctx context.Context, b *batch, todo []int) (plans []plan, pending []int) {
	plans, release := w.transformAll(ctx, b, todo)
	for _, i := range todo {
		if release[i] {
			b.set(i, kgo.AckRelease)
			continue
		}
		pending = append(pending, i)
	}
	return plans, pending
}

// transformAll transforms the records todo of b, up to w.concurrency at a
// time (batch.transform_concurrency); the plans keep the batch's order
// whatever order the transforms finish in.
func (w *worker) transformAll(ctx context.Context, b *batch, todo []int) (plans []plan, release []bool) {
	plans, release = make([]plan, b.len()), make([]bool, b.len())
	s := newSlab(b.len())
	if w.concurrency <= 1 || len(todo) <= 1 {
		for _, i := range todo {
			plans[i], release[i] = w.transform(ctx, b.recs[i], s.at(i))
		}
		return plans, release
	}
	next := make(chan int)
	var wg sync.WaitGroup
	for range min(w.concurrency, len(todo)) {
		wg.Go(func() {
			for i := range next {
				plans[i], release[i] = w.transform(ctx, b.recs[i], s.at(i))
			}
		})
	}
	for _, i := range todo {
		next <- i
	}
	close(next)
	wg.Wait()
	return plans, release
}

// slab is the memory of one batch's transforms, carved per record (by its
// index in the batch): the transform's input, and the one output most
// records have with the plan's slice of it. A batch costs three
// allocations for these instead of three per record: with small records,
// allocations per record would spend most of the relay's own CPU in the
// allocator and the garbage collector.
type slab struct {
	ins  []transform.Record
	recs []kgo.Record
	outs []*kgo.Record
}

func newSlab(n int) *slab {
	return &slab{ins: make([]transform.Record, n), recs: make([]kgo.Record, n), outs: make([]*kgo.Record, n)}
}

// slot is the part of a slab for one record.
type slot struct {
	in  *transform.Record
	rec *kgo.Record
	out []*kgo.Record // len 1
}

// at returns record i's slot.
func (s *slab) at(i int) slot {
	return slot{in: &s.ins[i], rec: &s.recs[i], out: s.outs[i : i+1 : i+1]}
}

// transform runs the chain on one record, in memory of its slot. It is safe
// for concurrent use on distinct slots.
func (w *worker) transform(ctx context.Context, r *kgo.Record, sl slot) (p plan, release bool) {
	in := sl.in
	*in = transform.Record{
		Topic: w.outputTopic,
		Key:   r.Key,
		Value: r.Value,
		Source: transform.Source{
			Topic: r.Topic, Partition: r.Partition, Offset: r.Offset,
			DeliveryCount: r.DeliveryCount(), Timestamp: r.Timestamp,
		},
	}
	if len(r.Headers) > 0 {
		in.Headers = make([]transform.Header, len(r.Headers))
		for i, h := range r.Headers {
			in.Headers[i] = transform.Header{Key: h.Key, Value: h.Value}
		}
	}
	outs, err := w.chain.Apply(ctx, in)
	if err != nil {
		if ctx.Err() != nil {
			return plan{}, true // shutting down: never dead-letter because of it
		}
		d := transform.Decide(err, r.DeliveryCount(), w.limits.attempts())
		if d.Release {
			w.log.Debug("transform failed; releasing for another delivery",
				"topic", r.Topic, "partition", r.Partition, "offset", r.Offset,
				"delivery", r.DeliveryCount(), "err", err)
			return plan{}, true
		}
		e, kind := d.Err, lineage.DLQKindPermanent
		if d.Exhausted {
			kind = lineage.DLQKindAttemptsExhausted
		}
		return plan{outs: []*kgo.Record{w.deadLetter(r, dlqReason{
			stage: lineage.DLQStageTransformation, step: e.Step, class: e.Class, kind: kind, msg: e.Error(),
		}, 0)}, deadLetter: true}, false
	}
	src := lineage.Source{Topic: r.Topic, Partition: r.Partition, Offset: r.Offset}
	if len(outs) == 1 {
		p.outs = sl.out
	} else {
		p.outs = make([]*kgo.Record, len(outs))
	}
	for i, o := range outs {
		// The source's coordinates, and a fan-out's positions (so that
		// it is not taken for a duplicate).
		out := sl.rec
		if len(outs) > 1 {
			out = new(kgo.Record)
		}
		*out = lineage.Output(o, w.outputTopic, src, i, len(outs))
		p.outs[i] = out
	}
	return p, false
}
