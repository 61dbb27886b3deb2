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
	s := newSlab(b.recs, w.chain.Len() > 0)
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
// index in the batch): the transform's input and its headers (for a chain
// with steps), the one output most records have with the plan's slice of
// it, and that output's headers (lineage.Room). A batch costs a few allocations for these
// instead of a few per record: with small records, allocations per record
// would spend most of the relay's own CPU in the allocator and the garbage
// collector.
type slab struct {
	ins  []transform.Record
	recs []kgo.Record
	outs []*kgo.Record
	// Record i's transform headers are inHdrs[hdrAt[i]:hdrAt[i+1]];
	// its output's headers take 3 more (lineage.OutputRoom), from
	// outHdrs[3*i+hdrAt[i]:]. hdrAt is nil when no record has headers
	// (then hdrAt[i] is 0).
	inHdrs  []transform.Header
	outHdrs []kgo.RecordHeader
	hdrAt   []int32
	// bytes holds the lineage headers' values, stride bytes a record.
	bytes  []byte
	stride int
}

// newSlab returns the slab of a batch of recs; inputs says whether it
// needs transform records (a chain with steps).
func newSlab(recs []*kgo.Record, inputs bool) *slab {
	n := len(recs)
	s := &slab{recs: make([]kgo.Record, n), outs: make([]*kgo.Record, n)}
	if inputs {
		s.ins = make([]transform.Record, n)
	}
	headers := 0
	for _, r := range recs {
		s.stride = max(s.stride, lineage.SourceBytes(r.Topic))
		headers += len(r.Headers)
	}
	if headers > 0 {
		s.hdrAt = make([]int32, n+1)
		for i, r := range recs {
			s.hdrAt[i+1] = s.hdrAt[i] + int32(len(r.Headers))
		}
		if inputs {
			s.inHdrs = make([]transform.Header, headers)
		}
	}
	s.outHdrs = make([]kgo.RecordHeader, lineage.OutputRoom(0)*n+headers)
	s.bytes = make([]byte, s.stride*n)
	return s
}

// slot is the part of a slab for one record.
type slot struct {
	in     *transform.Record  // nil without inputs
	inHdrs []transform.Header // len: the record's headers; nil without inputs
	rec    *kgo.Record
	out    []*kgo.Record // len 1
	room   lineage.Room
}

// at returns record i's slot.
func (s *slab) at(i int) slot {
	var h0, h1 int
	if s.hdrAt != nil {
		h0, h1 = int(s.hdrAt[i]), int(s.hdrAt[i+1])
	}
	o0, o1 := lineage.OutputRoom(0)*i+h0, lineage.OutputRoom(0)*(i+1)+h1
	b0, b1 := s.stride*i, s.stride*(i+1)
	sl := slot{rec: &s.recs[i], out: s.outs[i : i+1 : i+1], room: lineage.Room{Headers: s.outHdrs[o0:o0:o1], Bytes: s.bytes[b0:b0:b1]}}
	if s.ins != nil {
		sl.in = &s.ins[i]
		if s.inHdrs != nil {
			sl.inHdrs = s.inHdrs[h0:h1:h1]
		}
	}
	return sl
}

// transform runs the chain on one record, in memory of its slot. It is safe
// for concurrent use on distinct slots.
func (w *worker) transform(ctx context.Context, r *kgo.Record, sl slot) (p plan, release bool) {
	if w.chain.Len() == 0 {
		// An empty chain passes every record through unchanged
		// (Chain.Apply): its output is built from r, with no transform
		// record in between.
		lineage.CopyInto(sl.rec, r, w.outputTopic, sl.room)
		sl.out[0] = sl.rec
		return plan{outs: sl.out}, false
	}
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
		in.Headers = sl.inHdrs
		for i, h := range r.Headers {
			in.Headers[i] = transform.Header{Key: h.Key, Value: h.Value}
		}
	}
	outs, err := w.chain.Apply(ctx, in)
	if err != nil {
		return w.transformFailed(ctx, r, err)
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
		out, room := sl.rec, sl.room
		if len(outs) > 1 {
			out, room = new(kgo.Record), lineage.Room{}
		}
		*out = lineage.OutputIn(o, w.outputTopic, src, i, len(outs), room)
		p.outs[i] = out
	}
	return p, false
}

// transformFailed is the plan of record r whose transform failed with err:
// released for another delivery (a retryable failure with attempts left,
// or shutting down), or dead-lettered.
func (w *worker) transformFailed(ctx context.Context, r *kgo.Record, err error) (plan, bool) {
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
