package relay

import (
	"errors"
	"strconv"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sharerelay/sharerelay/lineage"
)

// maxErrorHeader bounds the error message copied into a dead letter.
const maxErrorHeader = 4096

// maxShrink is how far a dead letter is cut down before the relay gives
// up on it (see deadLetter).
const maxShrink = 3

// deadLetterTooLarge replaces the plan of each record of pending that has
// an output too large for its topic on its own by a dead letter, without
// a produce attempt (cut down when the dead letter is too large itself),
// and releases a record not even a cut-down dead letter fits. It returns
// pending without the released records.
func (w *worker) deadLetterTooLarge(b *batch, plans []plan, pending []int, bg *budget) []int {
	released := 0
	for _, i := range pending {
		for {
			err := bg.tooLarge(plans[i])
			if err == nil {
				break
			}
			plans[i] = w.rejectedPlan(b.recs[i], plans[i], err)
		}
		if plans[i].unwritable() {
			b.set(i, kgo.AckRelease)
			released++
		}
	}
	if released == 0 {
		return pending
	}
	kept := make([]int, 0, len(pending)-released)
	for _, i := range pending {
		if !plans[i].unwritable() {
			kept = append(kept, i)
		}
	}
	return kept
}

// unwritable reports whether p is what is left when not even a cut-down
// dead letter of its record fits its topic (rejectedPlan).
func (p plan) unwritable() bool { return p.outs == nil && p.shrunk > maxShrink }

// rejectedApart handles outputs the cluster refused for good in the
// transaction of now. One source record refused is the culprit: it is
// dead-lettered (a dead letter too large is cut down) and the same
// records are written again. Several refused together may be one culprit
// and its batch mates: the others are written on, and the refused ones
// apart, in two halves. It returns what to write next and the halves.
func (w *worker) rejectedApart(b *batch, plans []plan, out outcome, now, later []int) (pending []int, apart [][]int) {
	if len(out.rejected) == 1 {
		for i, werr := range out.rejected {
			plans[i] = w.rejectedPlan(b.recs[i], plans[i], werr)
		}
		return append(now, later...), nil
	}
	var rest, refused []int
	for _, i := range now {
		if _, ok := out.rejected[i]; ok {
			refused = append(refused, i)
		} else {
			rest = append(rest, i)
		}
	}
	w.log.Info("the cluster refused several records together; writing them apart to find which it refuses",
		"records", len(refused), "err", out.err)
	h := len(refused) / 2
	return append(rest, later...), [][]int{refused[:h], refused[h:]}
}

// rejectedPlan replaces the plan of source record r, whose outputs the
// cluster refused for good with werr, by a dead letter; a dead letter that
// was refused itself is cut down (the source value left out, then the
// source headers, then the key), with headers saying what was left out.
func (w *worker) rejectedPlan(r *kgo.Record, p plan, werr error) plan {
	w.m.RecordsRejected.WithLabelValues(w.label).Inc()
	reason := dlqReason{stage: lineage.DLQStageProduce, class: errClass(werr), kind: lineage.DLQKindWrite, msg: werr.Error()}
	shrink := 0
	if p.deadLetter {
		// The dead letter itself is too large: keep its reason.
		reason = dlqReasonOf(p.outs[0])
		shrink = p.shrunk + 1
		w.m.DeadLettersTruncated.WithLabelValues(w.label).Inc()
	}
	if shrink > maxShrink {
		// Even a dead letter without the source's key, value and
		// headers is refused: say so loudly and release the record
		// (it comes back; the broker archives it at its limit).
		w.log.Error("cannot write even a cut-down dead letter; releasing the record",
			"topic", r.Topic, "partition", r.Partition, "offset", r.Offset, "err", werr)
		return plan{shrunk: shrink}
	}
	w.log.Warn("output refused by the cluster for good; dead-lettering its source record",
		"topic", r.Topic, "partition", r.Partition, "offset", r.Offset, "cut_down", shrink, "err", werr)
	return plan{outs: []*kgo.Record{w.deadLetter(r, reason, shrink)}, deadLetter: true, shrunk: shrink}
}

// dlqReason is why a record was dead-lettered.
type dlqReason struct {
	stage, step, class, kind, msg string
}

// dlqReasonOf reads the reason back from a dead letter's headers.
func dlqReasonOf(dl *kgo.Record) dlqReason {
	var r dlqReason
	for _, h := range dl.Headers {
		switch h.Key {
		case lineage.HeaderDLQStage:
			r.stage = string(h.Value)
		case lineage.HeaderDLQStep:
			r.step = string(h.Value)
		case lineage.HeaderDLQErrorClass:
			r.class = string(h.Value)
		case lineage.HeaderDLQKind:
			r.kind = string(h.Value)
		case lineage.HeaderDLQErrorMessage:
			r.msg = string(h.Value)
		}
	}
	return r
}

// errClass names a write error by its Kafka error code, e.g.
// MESSAGE_TOO_LARGE.
func errClass(err error) string {
	var ke *kerr.Error
	if errors.As(err, &ke) {
		return ke.Message
	}
	return "write"
}

// deadLetter builds the dead-letter record for r: the original key, value
// and headers, plus the source coordinates and the reason. For a dead
// letter too large for its topic, shrink > 0 leaves out the source value,
// shrink > 1 the source headers too, and shrink > 2 the key, each
// recorded by its size; the coordinates and the reason always stay.
func (w *worker) deadLetter(r *kgo.Record, why dlqReason, shrink int) *kgo.Record {
	msg := why.msg
	if len(msg) > maxErrorHeader {
		msg = msg[:maxErrorHeader]
	}
	src := lineage.Source{Topic: r.Topic, Partition: r.Partition, Offset: r.Offset}
	key, value, hs := r.Key, r.Value, append([]kgo.RecordHeader(nil), r.Headers...)
	var omitted []kgo.RecordHeader
	if shrink > 0 {
		omitted = append(omitted, kgo.RecordHeader{Key: lineage.HeaderDLQValueOmitted, Value: strconv.AppendInt(nil, int64(len(r.Value)), 10)})
		value = nil
	}
	if shrink > 1 {
		omitted = append(omitted, kgo.RecordHeader{Key: lineage.HeaderDLQHeadersOmitted, Value: strconv.AppendInt(nil, int64(len(r.Headers)), 10)})
		hs = nil
	}
	if shrink > 2 {
		omitted = append(omitted, kgo.RecordHeader{Key: lineage.HeaderDLQKeyOmitted, Value: strconv.AppendInt(nil, int64(len(r.Key)), 10)})
		key = nil
	}
	hs = append(lineage.SetSource(hs, src),
		kgo.RecordHeader{Key: lineage.HeaderDLQTopic, Value: []byte(r.Topic)},
		kgo.RecordHeader{Key: lineage.HeaderDLQPartition, Value: strconv.AppendInt(nil, int64(r.Partition), 10)},
		kgo.RecordHeader{Key: lineage.HeaderDLQOffset, Value: strconv.AppendInt(nil, r.Offset, 10)},
		kgo.RecordHeader{Key: lineage.HeaderDLQPipeline, Value: []byte(w.pipeline)},
		kgo.RecordHeader{Key: lineage.HeaderDLQWorker, Value: []byte(w.cur.prod.TransactionalID())},
		kgo.RecordHeader{Key: lineage.HeaderDLQStage, Value: []byte(why.stage)},
		kgo.RecordHeader{Key: lineage.HeaderDLQStep, Value: []byte(why.step)},
		kgo.RecordHeader{Key: lineage.HeaderDLQErrorClass, Value: []byte(why.class)},
		kgo.RecordHeader{Key: lineage.HeaderDLQErrorMessage, Value: []byte(msg)},
		kgo.RecordHeader{Key: lineage.HeaderDLQDeliveryCount, Value: strconv.AppendInt(nil, int64(r.DeliveryCount()), 10)},
		kgo.RecordHeader{Key: lineage.HeaderDLQTime, Value: []byte(w.now().UTC().Format(time.RFC3339Nano))},
		kgo.RecordHeader{Key: lineage.HeaderDLQKind, Value: []byte(why.kind)},
	)
	return &kgo.Record{Topic: w.dlqTopic, Key: key, Value: value, Headers: append(hs, omitted...)}
}
