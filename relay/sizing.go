package relay

import (
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// batchOverhead is the size of a record batch's header (v2 format).
const batchOverhead = 61

// recordSize is an upper bound of r's size inside a record batch (v2
// format: varints at their longest).
func recordSize(r *kgo.Record) int {
	n := 5 + 1 + 10 + 5 + 5 + len(r.Key) + 5 + len(r.Value) + 5
	for _, h := range r.Headers {
		n += 5 + len(h.Key) + 5 + len(h.Value)
	}
	return n
}

// fit splits pending into what one transaction writes now and what waits.
// The client splits a partition's records into batches of at most its
// batch limit, the largest max.message.bytes of the topics written; a
// topic that takes less (or that refused a batch: tight) gets at most one
// batch of its own limit per transaction. A plan with an output too large
// for its topic on its own is replaced by a dead letter first (cut down
// when the dead letter is too large itself), without a produce attempt.
func (w *worker) fit(b *batch, plans []plan, pending []int, clientMax int32) (now, later []int) {
	sizes := w.sizes()
	// The topics a transaction writes are few: a slice searched in turn
	// costs less per record than a map.
	var rooms []room
	roomOf := func(topic string) *room {
		for k := range rooms {
			if rooms[k].topic == topic {
				return &rooms[k]
			}
		}
		r := room{topic: topic, limit: 1 << 30} // unknown: the broker decides
		if v, ok := sizes[topic]; ok {
			r.limit = v - batchOverhead
		}
		if w.tight[topic] == 0 && clientMax > 0 && sizes[topic] >= int(clientMax) {
			r.budget = 1 << 40 // the client's batches fit the topic
		} else {
			r.budget = r.limit >> min(w.tight[topic], 20)
		}
		rooms = append(rooms, r)
		return &rooms[len(rooms)-1] // valid until the next call: used at once
	}
	for _, i := range pending {
		for {
			var tooBig error
			for _, o := range plans[i].outs {
				if n, l := recordSize(o), roomOf(o.Topic).limit; n > l {
					tooBig = fmt.Errorf("a record of up to %d bytes does not fit in topic %s (max.message.bytes %d): %w",
						n, o.Topic, l+batchOverhead, kerr.MessageTooLarge)
					break
				}
			}
			if tooBig == nil {
				break
			}
			plans[i] = w.rejectedPlan(b.recs[i], plans[i], tooBig)
		}
		if plans[i].outs == nil && plans[i].shrunk > maxShrink {
			b.set(i, kgo.AckRelease) // not even a cut-down dead letter fits
			continue
		}
		fits := true
		for _, o := range plans[i].outs {
			r := roomOf(o.Topic)
			r.adding += recordSize(o)
			fits = fits && r.used+r.adding <= r.budget
		}
		for _, o := range plans[i].outs {
			r := roomOf(o.Topic)
			if fits || len(now) == 0 {
				r.used += r.adding
			}
			r.adding = 0
		}
		if !fits && len(now) > 0 {
			later = append(later, i)
			continue
		}
		now = append(now, i)
	}
	return now, later
}

// room is what fit knows of one topic a transaction writes: the largest
// record it takes (limit), the bytes one transaction may write to it
// (budget), what the plans taken so far write (used), and what the plan
// being looked at adds.
type room struct {
	topic                       string
	limit, budget, used, adding int
}
