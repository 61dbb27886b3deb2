package relay

import "github.com/twmb/franz-go/pkg/kgo"

// batch is the records of one or more polls and the acknowledgement chosen
// for each. Its records can only be acknowledged through it, once each.
type batch struct {
	recs  []*kgo.Record
	acks  []kgo.AckStatus // 0 = not yet decided
	polls []*poll         // in order; recs is their records concatenated
	sent  bool
}

func (b *batch) len() int { return len(b.recs) }

// set chooses the acknowledgement for record i. The first choice wins.
func (b *batch) set(i int, s kgo.AckStatus) {
	if b.acks[i] == 0 {
		b.acks[i] = s
	}
}

// setAll chooses s for every record without a choice yet.
func (b *batch) setAll(s kgo.AckStatus) {
	for i := range b.acks {
		b.set(i, s)
	}
}

// unresolved returns the number of records without a choice.
func (b *batch) unresolved() int {
	n := 0
	for _, a := range b.acks {
		if a == 0 {
			n++
		}
	}
	return n
}

// dropPayloads lets go of the keys, values and headers of b's records:
// once a batch's outputs are written and only its acknowledgement is
// left, nothing reads them, and the fetch responses they point into can
// be collected while the commit is in flight (a record keeps its topic,
// partition, offset and delivery count for the acknowledgement).
func (b *batch) dropPayloads() {
	for _, r := range b.recs {
		r.Key, r.Value, r.Headers = nil, nil, nil
	}
}

func (b *batch) add(p *poll) {
	b.polls = append(b.polls, p)
	b.recs = append(b.recs, p.recs...)
	b.acks = append(b.acks, make([]kgo.AckStatus, len(p.recs))...)
}

// extraCopies finds the records a batch holds more than once (the same topic,
// partition and offset) and maps each extra copy to the one that is
// written: the latest delivery. One batch can hold two deliveries of a
// record — after a broker restart reset the share sessions, or when a poll
// waited past its lock and another of the worker's consumers got the
// records again — and writing both would put the record's outputs in one
// transaction twice, which no claim can catch. The extra copy gets the
// written one's acknowledgement: only one of them still holds the lock.
func extraCopies(recs []*kgo.Record) map[int]int {
	if increasing(recs) {
		return nil // the usual batch: no copies, nothing allocated
	}
	type key struct {
		topic     string
		partition int32
		offset    int64
	}
	first := make(map[key]int, len(recs))
	var out map[int]int
	for i, r := range recs {
		k := key{r.Topic, r.Partition, r.Offset}
		j, seen := first[k]
		if !seen {
			first[k] = i
			continue
		}
		if out == nil {
			out = map[int]int{}
		}
		if r.DeliveryCount() > recs[j].DeliveryCount() {
			// The later delivery is written; the earlier copy and any
			// copy mapped to it follow it.
			first[k] = i
			for d, kept := range out {
				if kept == j {
					out[d] = i
				}
			}
			out[j] = i
			continue
		}
		out[i] = j
	}
	return out
}

// increasing reports whether each partition's offsets rise strictly
// through recs, which rules out a copy without a map on the hot path. A
// batch touching more than a few partitions is left to the map.
func increasing(recs []*kgo.Record) bool {
	type last struct {
		topic     string
		partition int32
		offset    int64
	}
	var seen [8]last
	n := 0
next:
	for _, r := range recs {
		for i := range seen[:n] {
			if l := &seen[i]; l.partition == r.Partition && l.topic == r.Topic {
				if r.Offset <= l.offset {
					return false
				}
				l.offset = r.Offset
				continue next
			}
		}
		if n == len(seen) {
			return false
		}
		seen[n] = last{r.Topic, r.Partition, r.Offset}
		n++
	}
	return true
}
