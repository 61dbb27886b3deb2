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

// budget is what one transaction may write to each topic it writes, and
// the largest record each topic takes. The client splits a partition's
// records into batches of at most its batch limit (clientMax), the
// largest max.message.bytes of the topics written; a topic that takes
// less (or that refused a batch: tight) gets at most one batch of its own
// limit per transaction.
type budget struct {
	sizes, tight map[string]int
	clientMax    int32
	// rooms are the topics looked at so far: a transaction writes few,
	// and a slice searched in turn costs less per record than a map.
	rooms []room
}

// room is what a budget knows of one topic: the largest record it takes
// (limit), the bytes one transaction may write to it (budget), what the
// plans taken so far write (used), and what the plan being looked at
// adds.
type room struct {
	topic                       string
	limit, budget, used, adding int
}

// newBudget returns the budget of one transaction, for topics whose
// max.message.bytes are sizes.
func newBudget(sizes, tight map[string]int, clientMax int32) *budget {
	return &budget{sizes: sizes, tight: tight, clientMax: clientMax}
}

// room returns topic's room, valid until the next call.
func (bg *budget) room(topic string) *room {
	for k := range bg.rooms {
		if bg.rooms[k].topic == topic {
			return &bg.rooms[k]
		}
	}
	r := room{topic: topic, limit: 1 << 30} // unknown: the broker decides
	if v, ok := bg.sizes[topic]; ok {
		r.limit = v - batchOverhead
	}
	if bg.tight[topic] == 0 && bg.clientMax > 0 && bg.sizes[topic] >= int(bg.clientMax) {
		r.budget = 1 << 40 // the client's batches fit the topic
	} else {
		r.budget = r.limit >> min(bg.tight[topic], 20)
	}
	bg.rooms = append(bg.rooms, r)
	return &bg.rooms[len(bg.rooms)-1]
}

// tooLarge returns an error for the first output of p too large for its
// topic on its own (it could never be written), or nil.
func (bg *budget) tooLarge(p plan) error {
	for _, o := range p.outs {
		if n, l := recordSize(o), bg.room(o.Topic).limit; n > l {
			return fmt.Errorf("a record of up to %d bytes does not fit in topic %s (max.message.bytes %d): %w",
				n, o.Topic, l+batchOverhead, kerr.MessageTooLarge)
		}
	}
	return nil
}

// fit splits pending into what one transaction writes now and what waits:
// plans are taken in order while every topic they write has room, and the
// first plan is taken whatever its size. Every output of pending must fit
// its topic on its own (tooLarge).
func (bg *budget) fit(plans []plan, pending []int) (now, later []int) {
	for _, i := range pending {
		fits := true
		for _, o := range plans[i].outs {
			r := bg.room(o.Topic)
			r.adding += recordSize(o)
			fits = fits && r.used+r.adding <= r.budget
		}
		for _, o := range plans[i].outs {
			r := bg.room(o.Topic)
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
