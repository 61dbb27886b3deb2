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

// String returns the position as partition/offset, as logs show it.
func (p Pos) String() string { return fmt.Sprintf("%d/%d", p.Partition, p.Offset) }

// Claim is the record a transaction writes to the ledger, once per source
// partition it touches: "this transaction will commit the outputs of these
// source offsets".
//
// ProducerID and Epoch are what the writer believed when it built the
// claim; the ledger reader replaces them with the producer id and epoch of
// the record batch the broker stored, which are the ones the transaction's
// markers refer to.
type Claim struct {
	Gen        int64    `json:"gen"`
	Topic      string   `json:"topic"`
	TopicID    [16]byte `json:"topic_id"`
	Partition  int32    `json:"partition"`
	Ranges     []Range  `json:"ranges"`
	TxnID      string   `json:"txn_id"`
	ProducerID int64    `json:"producer_id"`
	Epoch      int16    `json:"epoch"`
	// Outputs are the topics the transaction writes besides the ledger
	// (outputs and dead letters): where the resolver looks for the
	// transaction's outcome when the ledger lost its marker.
	Outputs []string `json:"outputs,omitempty"`
	// At is the writer's clock (Unix milliseconds) when it built the
	// claim.
	At int64 `json:"at,omitempty"`
	// Since, when set, is the earliest timestamp (Unix milliseconds) of
	// the records the transaction writes besides the ledger: they carry
	// times the pipeline chose (the source record's, an expression's),
	// not the writer's clock, so the resolver looks for them from there,
	// and cannot take a later record's time for the end of the
	// transaction's window. Unset: every record carries the writer's
	// clock at about At.
	Since int64 `json:"since,omitempty"`
}

// Key returns the claim's source partition.
func (c *Claim) Key() PartKey { return PartKey{c.TopicID, c.Topic, c.Partition} }

// pending is a claim the index still tracks: its transaction's marker has
// not been read (pending), or its producer showed a later epoch in the
// ledger partition first (orphaned: the marker was lost).
type pending struct {
	Pos        Pos      `json:"pos"`
	Key        PartKey  `json:"key"`
	Ranges     []Range  `json:"ranges"`
	ProducerID int64    `json:"producer_id"`
	Epoch      int16    `json:"epoch"`
	Orphan     bool     `json:"orphan,omitempty"`
	TxnID      string   `json:"txn_id,omitempty"`
	Outputs    []string `json:"outputs,omitempty"`
	At         int64    `json:"at,omitempty"`
	Since      int64    `json:"since,omitempty"`
	done       bool     // resolved; removed from partState.pending lazily
}

// EpochUnknown is the epoch of a claim restored from a snapshot written
// before claims were tracked with their epochs: such a claim is an orphan
// until the resolver has read its record again.
const EpochUnknown int16 = -1

type partState struct {
	key       PartKey
	committed IntervalSet
	pending   []*pending // in ledger order; entries with done set are dropped lazily
	nDone     int
}

// live returns the claims still tracked, compacting the slice when enough
// are resolved (a marker can resolve thousands of claims; lazy removal
// keeps that linear).
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

// Fate is the outcome of a claim's transaction as the index knows it.
type Fate int8

const (
	// FateUnknown: the claim's marker has not been read yet.
	FateUnknown Fate = iota
	// FateCommitted: the claim's transaction committed.
	FateCommitted
	// FateAborted: the claim's transaction aborted.
	FateAborted
	// FateOrphaned: the ledger lost the claim's marker (its producer
	// moved to a later epoch first). The outcome stays unknown until a
	// resolution record, written from other evidence, settles it.
	FateOrphaned
)

// String returns the fate in lower case, as logs show it.
func (f Fate) String() string {
	return [...]string{"unknown", "committed", "aborted", "orphaned"}[f]
}

// MarkerEpochs says at which producer epoch a transaction's commit and
// abort markers are written, relative to the epoch of its records.
type MarkerEpochs int8

const (
	// MarkersAtNextEpoch is Apache Kafka under transaction.version 2
	// (KIP-890): every end of a transaction bumps the producer epoch, and
	// the coordinator writes the markers with the bumped epoch
	// (TransactionMetadata.prepareAbortOrCommit), whether the client
	// ended the transaction, the coordinator timed it out, or a new
	// InitProducerId fenced it. A claim written at epoch E is resolved by
	// its producer's marker at E+1 and by nothing else.
	MarkersAtNextEpoch MarkerEpochs = iota
	// MarkersAtSameOrNextEpoch also accepts a marker at E: franz-go's
	// in-process fake cluster (kfake) writes a committed or aborted
	// transaction's markers at its records' epoch and bumps afterwards.
	// For tests and the embedded demo only; on a real cluster a marker at
	// E after a claim at E is not the claim's (for example an operator
	// aborting a hanging transaction with kafka-transactions.sh).
	MarkersAtSameOrNextEpoch
)

// ErrClaimNotPending means a worker checked a claim that is no longer
// pending: its transaction already ended (for example the coordinator
// aborted it on timeout), or the ledger lost its marker. The worker must
// not commit.
var ErrClaimNotPending = errors.New("eos: claim is no longer pending (its transaction ended)")

// Index is the state a ledger reader builds: per source partition, the
// committed source offsets and the claims not yet resolved, in ledger
// order. It is a plain state machine (no I/O, no locking) so it can be
// tested over random interleavings; Ledger wraps it with the reader, the
// resolver and the locking.
//
// Records must be applied in ledger order per ledger partition. A claim of
// producer P written at epoch E is resolved only by P's marker at E+1 in
// the same ledger partition (MarkerEpochs), never by "the next marker of
// P": a broker that loses a marker (a single node killed while markers are
// in flight drops the markers of partitions that have no leader yet) would
// otherwise credit the claim with a later transaction's outcome. When P
// shows a later epoch in the ledger partition first — a claim at a higher
// epoch, or a marker beyond E+1 — the claim is orphaned: it keeps blocking
// the offsets it covers, is never committed on that evidence, and waits
// for a resolution record (ApplyResolution) written by whoever established
// the outcome from the transaction's outputs.
type Index struct {
	gen     int64
	markers MarkerEpochs
	parts   map[partID]*partState
	live    map[producerKey][]*pending // unresolved, not orphaned, in ledger order
	byPos   map[Pos]*pending           // every tracked claim
	next    map[int32]int64            // per ledger partition: next offset to apply
	fates   map[Pos]Fate               // fates of watched claims
	watch   map[Pos]bool
	orphans int // tracked orphans

	// Since the index was created (not restored from snapshots): claims
	// orphaned, and claims settled by resolution records.
	nOrphaned, nSettledCommit, nSettledAbort int64
}

// NewIndex returns an empty index for ledger generation gen; claims of
// other generations are ignored.
func NewIndex(gen int64, markers MarkerEpochs) *Index {
	return &Index{
		gen:     gen,
		markers: markers,
		parts:   make(map[partID]*partState),
		live:    make(map[producerKey][]*pending),
		byPos:   make(map[Pos]*pending),
		next:    make(map[int32]int64),
		fates:   make(map[Pos]Fate),
		watch:   make(map[Pos]bool),
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

// ApplyClaim applies a claim read at pos. c.ProducerID and c.Epoch must be
// those of the record batch. Earlier claims of the same producer at a lower
// epoch that are still pending are orphaned: their transactions ended
// without a marker in this partition.
func (x *Index) ApplyClaim(pos Pos, c *Claim) {
	x.Advance(pos.Partition, pos.Offset+1)
	if c.Gen != x.gen {
		return
	}
	p := &pending{Pos: pos, Key: c.Key(), Ranges: c.Ranges, ProducerID: c.ProducerID, Epoch: c.Epoch,
		TxnID: c.TxnID, Outputs: c.Outputs, At: c.At, Since: c.Since}
	pk := producerKey{pos.Partition, c.ProducerID}
	keep := x.live[pk][:0]
	for _, q := range x.live[pk] {
		switch {
		case q.Epoch < c.Epoch:
			x.orphan(q)
		case q.Epoch > c.Epoch:
			// The broker refuses a lower epoch after a higher one, so
			// this cannot be read from a real ledger; trust neither.
			keep = append(keep, q)
			p.Orphan = true
		default:
			keep = append(keep, q)
		}
	}
	x.live[pk] = keep
	ps := x.part(p.Key)
	ps.pending = append(ps.pending, p)
	x.byPos[pos] = p
	if p.Orphan {
		x.orphans++
	} else {
		x.live[pk] = append(x.live[pk], p)
	}
}

// ApplyMarker applies a transaction marker of producer pid at epoch, read
// at pos. It resolves pid's pending claims in that ledger partition whose
// marker it is (MarkerEpochs) and orphans those it proves ended earlier
// (their marker epoch is below this one). A marker at or below a claim's
// epoch that is not its own (an operator's abort of a hanging transaction)
// leaves the claim pending.
func (x *Index) ApplyMarker(pos Pos, pid int64, epoch int16, commit bool) {
	x.Advance(pos.Partition, pos.Offset+1)
	pk := producerKey{pos.Partition, pid}
	keep := x.live[pk][:0]
	for _, p := range x.live[pk] {
		own := int32(epoch) == int32(p.Epoch)+1 || x.markers == MarkersAtSameOrNextEpoch && epoch == p.Epoch
		switch {
		case own:
			x.resolve(p, commit)
		case int32(epoch) > int32(p.Epoch)+1:
			x.orphan(p)
		default:
			keep = append(keep, p)
		}
	}
	if len(keep) == 0 {
		delete(x.live, pk)
	} else {
		x.live[pk] = keep
	}
}

// ApplyResolution applies a resolution record read at pos: the claims at
// positions are settled as committed or aborted. Positions no longer
// tracked (already resolved by their marker, or by an earlier resolution)
// are skipped.
func (x *Index) ApplyResolution(pos Pos, positions []Pos, commit bool) {
	x.Advance(pos.Partition, pos.Offset+1)
	for _, cp := range positions {
		p := x.byPos[cp]
		if p == nil {
			continue
		}
		if !p.Orphan {
			pk := producerKey{cp.Partition, p.ProducerID}
			keep := x.live[pk][:0]
			for _, q := range x.live[pk] {
				if q != p {
					keep = append(keep, q)
				}
			}
			if len(keep) == 0 {
				delete(x.live, pk)
			} else {
				x.live[pk] = keep
			}
		}
		x.resolve(p, commit)
		if commit {
			x.nSettledCommit++
		} else {
			x.nSettledAbort++
		}
	}
}

func (x *Index) orphan(p *pending) {
	p.Orphan = true
	x.orphans++
	x.nOrphaned++
	if x.watch[p.Pos] {
		x.fates[p.Pos] = FateOrphaned
	}
}

func (x *Index) resolve(p *pending, commit bool) {
	ps := x.part(p.Key)
	if commit {
		for _, r := range p.Ranges {
			ps.committed.Add(r.First, r.Last)
		}
	}
	if p.Orphan {
		x.orphans--
	}
	p.done = true
	delete(x.byPos, p.Pos)
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

// Committed reports whether source offset o of k is committed.
func (x *Index) Committed(k PartKey, o int64) bool {
	return x.committedIn(x.parts[keyOf(k)], o)
}

// committedIn reports whether offset o is committed in ps (nil: a
// partition the index has no claim of).
func (x *Index) committedIn(ps *partState, o int64) bool {
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
//   - covered by an earlier claim still tracked — pending or orphaned, of
//     any transaction, including an earlier transaction of the same
//     producer — → that claim is returned in blockers: the caller must
//     wait for it to be resolved and check again.
//
// Later claims are ignored: their writers wait for this one. The result is
// only meaningful when Applied(pos); before that every claim may block.
func (x *Index) Check(pos Pos, k PartKey, offsets []int64) (conflict []bool, blockers []Pos, err error) {
	if !x.Applied(pos) {
		return nil, []Pos{pos}, nil
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
	if mine < 0 || live[mine].Orphan {
		return nil, nil, fmt.Errorf("%w: %s[%d] at ledger %v", ErrClaimNotPending, k.Topic, k.Partition, pos)
	}
	conflict = make([]bool, len(offsets))
	seen := map[Pos]bool{}
	for i, o := range offsets {
		if ps.committed.Contains(o) {
			conflict[i] = true
			continue
		}
		for _, p := range live[:mine] {
			if overlaps(p.Ranges, o) && !seen[p.Pos] {
				seen[p.Pos] = true
				blockers = append(blockers, p.Pos)
			}
		}
	}
	return conflict, blockers, nil
}

// ClaimInfo describes a claim the index tracks.
type ClaimInfo struct {
	Pos        Pos
	Key        PartKey
	Ranges     []Range
	ProducerID int64
	Epoch      int16
	Orphan     bool
	TxnID      string
	Outputs    []string
	At         int64
	Since      int64
}

func (p *pending) info() ClaimInfo {
	return ClaimInfo{Pos: p.Pos, Key: p.Key, Ranges: p.Ranges, ProducerID: p.ProducerID, Epoch: p.Epoch,
		Orphan: p.Orphan, TxnID: p.TxnID, Outputs: p.Outputs, At: p.At, Since: p.Since}
}

// Claim returns the claim at pos if the index still tracks it.
func (x *Index) Claim(pos Pos) (ClaimInfo, bool) {
	p := x.byPos[pos]
	if p == nil {
		return ClaimInfo{}, false
	}
	return p.info(), true
}

// Orphans returns the orphaned claims, in ledger order per partition.
func (x *Index) Orphans() []ClaimInfo {
	var out []ClaimInfo
	for _, p := range x.byPos {
		if p.Orphan {
			out = append(out, p.info())
		}
	}
	sort.Slice(out, func(i, j int) bool { return posLess(out[i].Pos, out[j].Pos) })
	return out
}

// Siblings returns the positions of every tracked claim of the same
// transaction as the claim at pos (same ledger partition, producer id and
// epoch), pos included: what one resolution settles.
func (x *Index) Siblings(pos Pos) []Pos {
	p := x.byPos[pos]
	if p == nil {
		return nil
	}
	var out []Pos
	for _, q := range x.byPos {
		if q.Pos.Partition == pos.Partition && q.ProducerID == p.ProducerID && q.Epoch == p.Epoch {
			out = append(out, q.Pos)
		}
	}
	sort.Slice(out, func(i, j int) bool { return posLess(out[i], out[j]) })
	return out
}

func posLess(a, b Pos) bool {
	return a.Partition < b.Partition || a.Partition == b.Partition && a.Offset < b.Offset
}

// Watch asks the index to remember the fate of the claim at pos when it is
// resolved or orphaned; Fate reports it. Forget drops it.
func (x *Index) Watch(pos Pos) {
	x.watch[pos] = true
	if p := x.byPos[pos]; p != nil && p.Orphan {
		x.fates[pos] = FateOrphaned
	}
}

// Fate returns the fate of a watched claim.
func (x *Index) Fate(pos Pos) Fate { return x.fates[pos] }

// Forget stops watching pos.
func (x *Index) Forget(pos Pos) {
	delete(x.watch, pos)
	delete(x.fates, pos)
}

// Counters returns, since the index was created, how many claims were
// orphaned and how many resolution records settled as committed or
// aborted.
func (x *Index) Counters() (orphaned, settledCommit, settledAbort int64) {
	return x.nOrphaned, x.nSettledCommit, x.nSettledAbort
}

// Stats describes the index's size.
type Stats struct {
	Partitions, Ranges, Pending, Orphans int
}

// Stats returns the index's size: what memory is bounded by. Pending
// counts claims waiting for their marker; Orphans those whose marker the
// ledger lost, waiting for a resolution.
func (x *Index) Stats() Stats {
	var s Stats
	for _, ps := range x.parts {
		s.Partitions++
		s.Ranges += ps.committed.Len()
		s.Pending += len(ps.pending) - ps.nDone
	}
	s.Orphans = x.orphans
	s.Pending -= x.orphans
	return s
}

// SnapshotFormat is the version of the snapshot layout: 2 since claims are
// tracked with their epochs. Pending claims of older snapshots are
// restored as orphans of unknown epoch.
const SnapshotFormat = 2

// Snapshot is the index's state at a ledger position: the committed sets
// and the claims still tracked there, with their producer ids and epochs
// (without them a marker read after the snapshot could not resolve them).
type Snapshot struct {
	Format    int             `json:"format"`
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
	s := &Snapshot{Format: SnapshotFormat, Gen: x.gen, Next: make(map[int32]int64, len(x.next))}
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
	sort.Slice(s.Pending, func(i, j int) bool { return posLess(s.Pending[i].Pos, s.Pending[j].Pos) })
	return s
}

// Restore returns an index in the state s captured. Claims of a snapshot
// older than SnapshotFormat 2 have no epoch: they are restored as orphans
// with EpochUnknown, for the resolver to settle.
func Restore(s *Snapshot, markers MarkerEpochs) *Index {
	x := NewIndex(s.Gen, markers)
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
		if s.Format < 2 {
			p.Orphan, p.Epoch = true, EpochUnknown
		}
		ps := x.part(p.Key)
		ps.pending = append(ps.pending, &p)
		x.byPos[p.Pos] = &p
		if p.Orphan {
			x.orphans++
		} else {
			pk := producerKey{p.Pos.Partition, p.ProducerID}
			x.live[pk] = append(x.live[pk], &p)
		}
	}
	return x
}
