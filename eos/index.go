package eos

import (
	"errors"
	"fmt"
	"sort"
)

// PartKey identifies a source partition. TopicID tells a topic from a
// deleted and recreated one of the same name, whose offsets restart at 0.
type PartKey struct {
	TopicID   [16]byte
	Topic     string
	Partition int32
}

func (k PartKey) id() partID { return partID{k.TopicID, k.Topic, k.Partition} }

// partID is the map key: the topic ID when known, else the name.
type partID struct {
	topicID   [16]byte
	topic     string
	partition int32
}

func keyOf(k PartKey) partID {
	if k.TopicID != ([16]byte{}) {
		return partID{topicID: k.TopicID, partition: k.Partition}
	}
	return partID{topic: k.Topic, partition: k.Partition}
}

// Pos is a position in the ledger: partition and offset.
type Pos struct {
	Partition int32 `json:"p"`
	Offset    int64 `json:"o"`
}

// Claim is the record a transaction writes to the ledger, once per source
// partition it touches: "this transaction will commit the outputs of these
// source offsets".
type Claim struct {
	Gen        int64    `json:"gen"`
	Topic      string   `json:"topic"`
	TopicID    [16]byte `json:"topic_id"`
	Partition  int32    `json:"partition"`
	Ranges     []Range  `json:"ranges"`
	TxnID      string   `json:"txn_id"`
	ProducerID int64    `json:"producer_id"`
	Epoch      int16    `json:"epoch"`
}

// Key returns the claim's source partition.
func (c *Claim) Key() PartKey { return PartKey{c.TopicID, c.Topic, c.Partition} }

// pending is a claim whose transaction's marker has not been read yet.
type pending struct {
	Pos        Pos     `json:"pos"`
	Key        PartKey `json:"key"`
	Ranges     []Range `json:"ranges"`
	ProducerID int64   `json:"producer_id"`
	done       bool    // resolved; removed from partState.pending lazily
}

type partState struct {
	key       PartKey
	committed IntervalSet
	pending   []*pending // in ledger order; entries with done set are dropped lazily
	nDone     int
}

// live returns the pending claims still unresolved, compacting the slice
// when enough are resolved (a marker can resolve thousands of claims; lazy
// removal keeps that linear).
func (ps *partState) live() []*pending {
	if ps.nDone > 0 {
		out := ps.pending[:0]
		for _, p := range ps.pending {
			if !p.done {
				out = append(out, p)
			}
		}
		clear(ps.pending[len(out):])
		ps.pending = out
		ps.nDone = 0
	}
	return ps.pending
}

type producerKey struct {
	lp  int32
	pid int64
}

// Fate is the outcome of a claim's transaction.
type Fate int8

const (
	// FateUnknown: the claim's marker has not been read yet.
	FateUnknown Fate = iota
	// FateCommitted: the claim's transaction committed.
	FateCommitted
	// FateAborted: the claim's transaction aborted.
	FateAborted
)

// ErrClaimNotPending means a worker checked a claim that is no longer
// pending: its transaction already ended (for example the coordinator
// aborted it on timeout). The worker must not commit.
var ErrClaimNotPending = errors.New("eos: claim is no longer pending (its transaction ended)")

// Index is the state a ledger reader builds: per source partition, the
// committed source offsets and the pending claims, in ledger order. It is
// a plain state machine (no I/O, no locking) so it can be tested over random
// interleavings; Ledger wraps it with the reader and the locking.
//
// Records must be applied in ledger order per ledger partition. A claim's
// fate is the next commit/abort marker of its producer id in the same
// ledger partition; that is sound because the ledger requires
// transaction.version 2 (KIP-890), under which the broker rejects a claim
// write that arrives after its transaction ended, so a late claim can never
// be credited to the producer's next transaction.
type Index struct {
	gen   int64
	parts map[partID]*partState
	byPID map[producerKey][]*pending
	next  map[int32]int64 // per ledger partition: next offset to apply
	fates map[Pos]Fate    // fates of watched claims
	watch map[Pos]bool
}

// NewIndex returns an empty index for ledger generation gen; claims of
// other generations are ignored.
func NewIndex(gen int64) *Index {
	return &Index{
		gen:   gen,
		parts: make(map[partID]*partState),
		byPID: make(map[producerKey][]*pending),
		next:  make(map[int32]int64),
		fates: make(map[Pos]Fate),
		watch: make(map[Pos]bool),
	}
}

func (x *Index) part(k PartKey) *partState {
	id := keyOf(k)
	p := x.parts[id]
	if p == nil {
		p = &partState{key: k}
		x.parts[id] = p
	}
	return p
}

// Next returns the next ledger offset to apply in ledger partition lp.
func (x *Index) Next(lp int32) int64 { return x.next[lp] }

// Advance records that every ledger offset below next in lp was applied
// (offsets of records that are neither claims nor markers, or of other
// generations).
func (x *Index) Advance(lp int32, next int64) {
	if next > x.next[lp] {
		x.next[lp] = next
	}
}

// ApplyClaim applies a claim read at pos.
func (x *Index) ApplyClaim(pos Pos, c *Claim) {
	x.Advance(pos.Partition, pos.Offset+1)
	if c.Gen != x.gen {
		return
	}
	p := &pending{Pos: pos, Key: c.Key(), Ranges: c.Ranges, ProducerID: c.ProducerID}
	ps := x.part(p.Key)
	ps.pending = append(ps.pending, p)
	pk := producerKey{pos.Partition, c.ProducerID}
	x.byPID[pk] = append(x.byPID[pk], p)
}

// ApplyMarker applies a transaction marker of producer pid read at pos:
// every pending claim of pid in that ledger partition is resolved.
func (x *Index) ApplyMarker(pos Pos, pid int64, commit bool) {
	x.Advance(pos.Partition, pos.Offset+1)
	pk := producerKey{pos.Partition, pid}
	for _, p := range x.byPID[pk] {
		ps := x.part(p.Key)
		if commit {
			for _, r := range p.Ranges {
				ps.committed.Add(r.First, r.Last)
			}
		}
		p.done = true
		ps.nDone++
		if ps.nDone*2 > len(ps.pending) {
			ps.live() // amortised: keeps memory bounded by live claims
		}
		if x.watch[p.Pos] {
			if commit {
				x.fates[p.Pos] = FateCommitted
			} else {
				x.fates[p.Pos] = FateAborted
			}
		}
	}
	delete(x.byPID, pk)
}

// Committed reports whether source offset o of k is committed.
func (x *Index) Committed(k PartKey, o int64) bool {
	ps := x.parts[keyOf(k)]
	return ps != nil && ps.committed.Contains(o)
}

// Applied reports whether the claim at pos has been applied (the reader has
// read past it).
func (x *Index) Applied(pos Pos) bool { return x.next[pos.Partition] > pos.Offset }

// Check applies the conflict rule to the claim at pos, which covers
// offsets of k. The claim must have been applied (Applied) and still be
// pending. For each offset:
//
//   - committed → conflict[i] = true: an earlier transaction committed it
//     (no later claim can have committed it, since its writer waits for
//     ours, which is pending);
//   - covered by an earlier pending claim of any transaction — including
//     an earlier transaction of the same producer — → wait is true: the
//     caller must wait for that claim's marker and check again.
//
// Later claims are ignored: their writers wait for this one.
func (x *Index) Check(pos Pos, k PartKey, offsets []int64) (conflict []bool, wait bool, err error) {
	if !x.Applied(pos) {
		return nil, true, nil
	}
	ps := x.parts[keyOf(k)]
	mine := -1
	var live []*pending
	if ps != nil {
		live = ps.live()
		for i, p := range live {
			if p.Pos == pos {
				mine = i
				break
			}
		}
	}
	if mine < 0 {
		return nil, false, fmt.Errorf("%w: %s[%d] at ledger %d/%d", ErrClaimNotPending, k.Topic, k.Partition, pos.Partition, pos.Offset)
	}
	conflict = make([]bool, len(offsets))
	for i, o := range offsets {
		if ps.committed.Contains(o) {
			conflict[i] = true
			continue
		}
		for _, p := range live[:mine] {
			if overlaps(p.Ranges, o) {
				wait = true
				break
			}
		}
	}
	return conflict, wait, nil
}

// Watch asks the index to remember the fate of the claim at pos when its
// marker arrives; Fate reports it. Forget drops it.
func (x *Index) Watch(pos Pos) { x.watch[pos] = true }

// Fate returns the fate of a watched claim.
func (x *Index) Fate(pos Pos) Fate { return x.fates[pos] }

// Forget stops watching pos.
func (x *Index) Forget(pos Pos) {
	delete(x.watch, pos)
	delete(x.fates, pos)
}

// Stats describes the index's size.
type Stats struct {
	Partitions, Ranges, Pending int
}

// Stats returns the index's size: what memory is bounded by.
func (x *Index) Stats() Stats {
	var s Stats
	for _, ps := range x.parts {
		s.Partitions++
		s.Ranges += ps.committed.Len()
		s.Pending += len(ps.pending) - ps.nDone
	}
	return s
}

// Snapshot is the index's state at a ledger position: the committed sets
// and the claims still pending there, with their producer ids (without
// them a marker read after the snapshot could not resolve them).
type Snapshot struct {
	Gen       int64           `json:"gen"`
	Next      map[int32]int64 `json:"next"`
	Committed []SnapshotPart  `json:"committed"`
	Pending   []pending       `json:"pending"`
}

// SnapshotPart is one source partition's committed set.
type SnapshotPart struct {
	Key    PartKey `json:"key"`
	Ranges []Range `json:"ranges"`
}

// Snapshot captures the index.
func (x *Index) Snapshot() *Snapshot {
	s := &Snapshot{Gen: x.gen, Next: make(map[int32]int64, len(x.next))}
	for lp, n := range x.next {
		s.Next[lp] = n
	}
	for _, ps := range x.parts {
		if ps.committed.Len() > 0 {
			s.Committed = append(s.Committed, SnapshotPart{Key: ps.key, Ranges: append([]Range(nil), ps.committed.Ranges()...)})
		}
		for _, p := range ps.live() {
			s.Pending = append(s.Pending, *p)
		}
	}
	sort.Slice(s.Pending, func(i, j int) bool {
		a, b := s.Pending[i].Pos, s.Pending[j].Pos
		return a.Partition < b.Partition || a.Partition == b.Partition && a.Offset < b.Offset
	})
	return s
}

// Restore returns an index in the state s captured.
func Restore(s *Snapshot) *Index {
	x := NewIndex(s.Gen)
	for lp, n := range s.Next {
		x.next[lp] = n
	}
	for _, sp := range s.Committed {
		ps := x.part(sp.Key)
		for _, r := range sp.Ranges {
			ps.committed.Add(r.First, r.Last)
		}
	}
	for i := range s.Pending {
		p := s.Pending[i]
		ps := x.part(p.Key)
		ps.pending = append(ps.pending, &p)
		pk := producerKey{p.Pos.Partition, p.ProducerID}
		x.byPID[pk] = append(x.byPID[pk], &p)
	}
	return x
}
