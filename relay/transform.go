package relay

import (
	"context"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sharerelay/sharerelay/lineage"
	"github.com/sharerelay/sharerelay/transform"
)

// fate is what the transform stage decided for a record.
type fate int8

const (
	toWrite   fate = iota // its plan: outputs, a dead letter, or nothing (filtered)
	toRelease             // released for another delivery
	toHold                // held: its transform cannot run now for a cause outside it
)

// transformBatch transforms the records todo of b (transformAll) and
// releases those whose transform asked for another delivery. It returns
// every record's plan and the records to write.
//
// A record whose transform needs what is out of reach (a schema
// registry that cannot answer) is held: neither released, which would
// spend a delivery on an outage, nor dead-lettered, as nothing is wrong
// with it. The worker waits, the batch's locks renewed, and transforms
// the held records again until they can be; at a stop, or when ctx
// ends, they are released.
func (w *worker) transformBatch(ctx context.Context, b *batch, todo []int) (plans []plan, pending []int) {
	t := &transformed{plans: make([]plan, b.len()), fates: make([]fate, b.len()), slab: newSlab(b.recs, !w.copiesAsIs)}
	held := w.transformAll(ctx, b, t, todo)
	for attempt := 1; len(held) > 0; attempt++ {
		if !w.holdForTransform(ctx, attempt, t, held) {
			break
		}
		held = w.transformAll(ctx, b, t, held)
		if len(held) == 0 {
			w.health.fine(w.id)
		}
	}
	for _, i := range todo {
		switch t.fates[i] {
		case toRelease, toHold:
			b.set(i, kgo.AckRelease)
		default:
			pending = append(pending, i)
		}
	}
	return t.plans, pending
}

// transformed is what the transform stage made of a batch: each record's
// plan and fate, by index in the batch, and the failure that holds a held
// record.
type transformed struct {
	plans []plan
	fates []fate
	slab  *slab
	mu    sync.Mutex
	held  map[int]*transform.Error
}

// holdForTransform waits before the held records are transformed again:
// it reports the worker not ready with the reason their transforms gave,
// and waits with a capped backoff. It returns false when the worker is
// told to stop or ctx ends first.
func (w *worker) holdForTransform(ctx context.Context, attempt int, t *transformed, held []int) bool {
	reason, cause := "transform held", error(nil)
	if e := t.held[held[0]]; e != nil {
		cause = e
		if e.Reason != "" {
			reason = e.Reason
		}
	}
	if attempt == 1 {
		w.log.Warn("holding records: their transform cannot run now; waiting, their locks renewed", "reason", reason, "records", len(held), "err", cause)
		w.m.RecordsHeld.WithLabelValues(w.label).Add(float64(len(held)))
	}
	w.health.paused(w.id, reason, cause)
	return w.hold(ctx, min(time.Duration(attempt)*500*time.Millisecond, 15*time.Second)) && ctx.Err() == nil && !w.stopping()
}

// transformAll transforms the records these of b into t, up to
// w.concurrency at a time (batch.transform_concurrency); the plans keep
// the batch's order whatever order the transforms finish in. It returns
// the records held.
func (w *worker) transformAll(ctx context.Context, b *batch, t *transformed, these []int) (held []int) {
	if w.concurrency <= 1 || len(these) <= 1 {
		// The common case, on every record's path: no closure, no lock.
		for _, i := range these {
			var err *transform.Error
			if t.plans[i], t.fates[i], err = w.transform(ctx, b.recs[i], t.slab.at(i)); err != nil {
				t.hold(i, err)
				held = append(held, i)
			}
		}
		return held
	}
	next := make(chan int)
	var wg sync.WaitGroup
	for range min(w.concurrency, len(these)) {
		wg.Go(func() {
			for i := range next {
				var err *transform.Error
				if t.plans[i], t.fates[i], err = w.transform(ctx, b.recs[i], t.slab.at(i)); err != nil {
					t.hold(i, err)
				}
			}
		})
	}
	for _, i := range these {
		next <- i
	}
	close(next)
	wg.Wait()
	for _, i := range these {
		if t.fates[i] == toHold {
			held = append(held, i)
		}
	}
	return held
}

// hold records why record i is held.
func (t *transformed) hold(i int, err *transform.Error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.held == nil {
		t.held = map[int]*transform.Error{}
	}
	t.held[i] = err
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
// for concurrent use on distinct slots. A record held (toHold) comes with
// the failure that holds it.
func (w *worker) transform(ctx context.Context, r *kgo.Record, sl slot) (p plan, f fate, held *transform.Error) {
	if w.copiesAsIs {
		// A chain without steps or formats passes every record through
		// unchanged (Chain.Apply): its output is built from r, with no
		// transform record in between.
		lineage.CopyInto(sl.rec, r, w.outputTopic, sl.room, w.stampNow)
		sl.out[0] = sl.rec
		return plan{outs: sl.out}, toWrite, nil
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
	return p, toWrite, nil
}

// transformFailed is the plan of record r whose transform failed with err:
// held (a cause outside the record), released for another delivery (a
// retryable failure with attempts left, or shutting down), or
// dead-lettered.
func (w *worker) transformFailed(ctx context.Context, r *kgo.Record, err error) (plan, fate, *transform.Error) {
	if ctx.Err() != nil {
		return plan{}, toRelease, nil // shutting down: never dead-letter because of it
	}
	d := transform.Decide(err, r.DeliveryCount(), w.limits.attempts())
	switch {
	case d.Hold:
		return plan{}, toHold, d.Err
	case d.Release:
		w.log.Debug("transform failed; releasing for another delivery",
			"topic", r.Topic, "partition", r.Partition, "offset", r.Offset,
			"delivery", r.DeliveryCount(), "err", err)
		return plan{}, toRelease, nil
	}
	e, kind := d.Err, lineage.DLQKindPermanent
	if d.Exhausted {
		kind = lineage.DLQKindAttemptsExhausted
	}
	stage := lineage.DLQStageTransformation
	switch e.Converter {
	case "value":
		stage = lineage.DLQStageValueConverter
	case "key":
		stage = lineage.DLQStageKeyConverter
	}
	return plan{outs: []*kgo.Record{w.deadLetter(r, dlqReason{
		stage: stage, step: e.Step, class: e.Class, kind: kind, msg: e.Error(),
	}, 0)}, deadLetter: true}, toWrite, nil
}
