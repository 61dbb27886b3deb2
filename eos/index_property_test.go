package eos

// A model of the whole claim-ledger protocol, run over random
// interleavings: a share broker with acquisition locks that expire at any
// time, delivery counts, a delivery limit and restarts; workers that stall,
// crash and restart with the same producer id, and whose commits may end
// with an unknown outcome; a ledger of one or two partitions; reader
// replicas (one Index per instance) that lag arbitrarily, snapshot, and
// restart from a snapshot; and a transaction coordinator that aborts
// timed-out or orphaned transactions.
//
// The model is a plain function driven by a chooser: under rapid every
// choice is a draw (so failures shrink), and a seeded math/rand drives the
// deterministic hunts that show the model does catch a protocol shortcut.
//
// The rapid test keeps rapid's defaults (100 checks); for a longer soak:
//
//	go test ./eos/ -run TestProtocolProperty -rapid.checks=2000

import (
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"pgregory.net/rapid"
)

// chooser is the model's only source of nondeterminism.
type chooser interface{ intn(n int) int }

type randChooser struct{ r *rand.Rand }

func (c randChooser) intn(n int) int { return c.r.IntN(n) }

type rapidChooser struct{ t *rapid.T }

func (c rapidChooser) intn(n int) int { return rapid.IntRange(0, n-1).Draw(c.t, "choice") }

// shortcut is a test-only deviation from the protocol that looks harmless.
// The model must find a violation with each of them.
type shortcut int

const (
	noShortcut shortcut = iota
	// (a) Check ignores earlier claims of the worker's own producer id
	// ("they are mine, so they cannot conflict").
	shortcutOwnProducer
	// (d) snapshots keep only the committed sets, not the pending claims.
	shortcutSnapshotWithoutPending
	// (c) a record delivered for the first time (delivery count 1) is
	// taken as never processed: no Committed check, conflicts ignored.
	shortcutFirstDelivery
	// (e) the rule before issue 11: a claim's fate is the next marker of
	// its producer id in the ledger partition, whatever its epoch (the
	// model erases the epochs from what the index reads, and runs no
	// resolver).
	shortcutLegacyNextMarker
)

func (s shortcut) String() string {
	return [...]string{"none", "own-producer", "snapshot-without-pending", "first-delivery", "legacy-next-marker"}[s]
}

type simParams struct {
	ledgerParts   int // 1..2
	srcParts      int // 2..3
	offsets       int // per source partition, 2..4
	workers       int // 2..4
	instances     int // reader replicas, 1..3
	steps         int
	deliveryLimit int
	maxBatch      int
	// loseMarkers: the broker drops markers in ledger partitions (a
	// single node killed while markers are in flight), and sometimes
	// every trace of a transaction's outcome.
	loseMarkers bool
	shortcut    shortcut
}

func drawParams(c chooser, sc shortcut) simParams {
	in := func(lo, hi int) int { return lo + c.intn(hi-lo+1) }
	return simParams{
		ledgerParts:   in(1, 2),
		srcParts:      in(2, 3),
		offsets:       in(2, 4),
		workers:       in(2, 4),
		instances:     in(1, 3),
		steps:         in(20, 250),
		deliveryLimit: in(2, 5),
		maxBatch:      in(1, 3),
		loseMarkers:   in(0, 1) == 1,
		shortcut:      sc,
	}
}

const simGen = 7

// violation is the first invariant the model saw broken.
type violation struct {
	kind  string // "duplicate", "unchecked-commit", ...
	msg   string
	trace []string
	// For a duplicate: the producer ids of the committed transactions.
	producers []int64
}

func (v *violation) Error() string {
	return fmt.Sprintf("%s: %s\nlast events:\n  %s", v.kind, v.msg, strings.Join(v.trace, "\n  "))
}

type recState int8

const (
	recAvailable recState = iota
	recAcquired
	recAcked
	recArchived
)

func (s recState) String() string {
	return [...]string{"AVAILABLE", "ACQUIRED", "ACKED", "ARCHIVED"}[s]
}

// brokerRec is the share partition's state of one record.
type brokerRec struct {
	state      recState
	owner      int // worker holding the acquisition lock
	acq        int // acquisition id: an ack with an older one fails
	deliveries int
}

// heldRec is a record as a worker sees it.
type heldRec struct {
	rec        int
	acq        int
	deliveries int
}

// ledgerEntry is a claim (claim != nil), a resolution (resolve != nil) or
// a transaction marker at epoch.
type ledgerEntry struct {
	claim   *Claim
	resolve []Pos
	pid     int64
	epoch   int16
	commit  bool
	txn     int
}

type simTxn struct {
	id              int
	worker          int
	pid             int64
	epoch           int16
	noEvidence      bool // the broker lost every trace of its outcome
	recs            []int
	lps             []int32 // ledger partitions it wrote claims to
	open, committed bool
	commitRequested bool // the commit was sent; the coordinator decides
	checked         bool // every claim passed Check right before the commit
	ended           bool
}

type simClaim struct {
	sp      int32
	offsets []int64
	recs    []int
	pos     Pos
}

type phase int8

const (
	phIdle     phase = iota
	phPrecheck       // protocol step 1
	phBegin          // open a transaction, produce outputs
	phClaiming       // write one claim per source partition
	phChecking       // wait for Applied, then Check (step 2)
	phCommit         // step 3
	phResolve        // unknown commit outcome: wait for the claim's Fate
	phAck            // step 4
)

type simWorker struct {
	id      int
	pid     int64 // stable across restarts: same transactional id
	inst    int   // the instance whose reader it uses
	alive   bool
	phase   phase
	todo    []heldRec
	txn     *simTxn
	toClaim []simClaim
	claimed []simClaim
	waits   int
	reinit  bool // restarted: its next transaction re-initialises the producer id
}

type sim struct {
	p       simParams
	c       chooser
	logs    [][]ledgerEntry
	readers []*Index
	snaps   [][]byte
	broker  []brokerRec
	workers []*simWorker
	epochs  map[int64]int16 // the coordinator's epoch per producer id
	txns    []*simTxn
	outputs [][]int // per record: ids of committed transactions that output it
	acqSeq  int
	drain   bool
	trace   []string
	stats   map[string]int // how often the interesting situations happened
	v       *violation
}

func (s *sim) pick(n int) int {
	if n <= 1 {
		return 0
	}
	return s.c.intn(n)
}

func (s *sim) chance(k int) bool { return s.pick(k) == 0 }

func (s *sim) count(what string) { s.stats[what]++ }

func (s *sim) tracef(format string, args ...any) {
	s.trace = append(s.trace, fmt.Sprintf(format, args...))
	if len(s.trace) > 60 {
		s.trace = s.trace[len(s.trace)-60:]
	}
}

func (s *sim) fail(kind, format string, args ...any) {
	if s.v == nil {
		s.v = &violation{kind: kind, msg: fmt.Sprintf(format, args...), trace: append([]string(nil), s.trace...)}
	}
}

func (s *sim) key(sp int32) PartKey {
	return PartKey{TopicID: [16]byte{0x5, byte(sp + 1)}, Topic: "src", Partition: sp}
}

func (s *sim) lpOf(sp int32) int32 { return sp % int32(s.p.ledgerParts) }

func (s *sim) recOf(r int) (sp int32, off int64) {
	return int32(r / s.p.offsets), int64(r%s.p.offsets) + 100 // offsets need not start at 0
}

func (s *sim) recName(r int) string {
	sp, off := s.recOf(r)
	return fmt.Sprintf("%d/%d", sp, off)
}

// simulate runs the protocol and returns the first invariant violation.
func simulate(p simParams, c chooser) *violation { return simulateS(p, c).v }

func simulateS(p simParams, c chooser) *sim {
	s := &sim{p: p, c: c, stats: map[string]int{}, epochs: map[int64]int16{}}
	s.logs = make([][]ledgerEntry, p.ledgerParts)
	for range p.instances {
		s.readers = append(s.readers, NewIndex(simGen, MarkersAtNextEpoch))
	}
	n := p.srcParts * p.offsets
	s.broker = make([]brokerRec, n)
	for i := range s.broker {
		s.broker[i].owner = -1
	}
	s.outputs = make([][]int, n)
	for i := range p.workers {
		s.workers = append(s.workers, &simWorker{id: i, pid: 5000 + int64(i), inst: i % p.instances, alive: true})
	}
	for range p.steps {
		s.step()
		s.checkSound()
		if s.v != nil {
			return s
		}
	}
	s.drainAll()
	if s.v == nil {
		s.checkFinal()
	}
	return s
}

// step runs one random event.
func (s *sim) step() {
	type event struct {
		weight int
		run    func()
	}
	events := []event{
		{30, s.aliveWorkerStep},
		{20, s.readerApply},
		{3, s.lockExpiry},
		{1, s.brokerRestart},
		{1, s.crash},
		{3, s.restart},
		{2, s.coordinatorTimeout},
		{3, s.snapshot},
		{1, s.instanceRestart},
		{3, s.resolver},
	}
	total := 0
	for _, e := range events {
		total += e.weight
	}
	k := s.pick(total)
	for _, e := range events {
		if k < e.weight {
			e.run()
			return
		}
		k -= e.weight
	}
}

// aliveWorkerStep runs a step of a running worker. Workers not picked
// for a while are the stalled ones.
func (s *sim) aliveWorkerStep() {
	var alive []*simWorker
	for _, w := range s.workers {
		if w.alive {
			alive = append(alive, w)
		}
	}
	if len(alive) > 0 {
		s.workerStep(alive[s.pick(len(alive))])
	}
}

func (s *sim) apply(x *Index, lp int32) bool {
	o := x.Next(lp)
	if o >= int64(len(s.logs[lp])) {
		return false
	}
	e := s.logs[lp][o]
	legacy := s.p.shortcut == shortcutLegacyNextMarker
	switch {
	case e.claim != nil:
		c := *e.claim
		if legacy {
			c.Epoch = 0
		}
		x.ApplyClaim(Pos{lp, o}, &c)
	case e.resolve != nil:
		x.ApplyResolution(Pos{lp, o}, e.resolve, e.commit)
	case legacy:
		x.ApplyMarker(Pos{lp, o}, e.pid, 1, e.commit)
	default:
		x.ApplyMarker(Pos{lp, o}, e.pid, e.epoch, e.commit)
	}
	return true
}

func (s *sim) readerApply() {
	r := s.pick(len(s.readers))
	lp := int32(s.pick(s.p.ledgerParts))
	n := 1 + s.pick(4)
	for range n {
		s.apply(s.readers[r], lp)
	}
	s.tracef("reader %d applied lp %d up to %d", r, lp, s.readers[r].Next(lp))
}

func (s *sim) catchUpAll() {
	for _, x := range s.readers {
		for lp := range int32(s.p.ledgerParts) {
			for s.apply(x, lp) {
			}
		}
	}
}

// release ends an acquisition lock (expiry, or a worker gone): the record
// is archived once it reached the delivery limit.
func (s *sim) release(r int) {
	b := &s.broker[r]
	b.owner = -1
	if b.deliveries >= s.p.deliveryLimit {
		s.count("archived")
		b.state = recArchived
	} else {
		b.state = recAvailable
	}
}

func (s *sim) lockExpiry() {
	var acquired []int
	for r, b := range s.broker {
		if b.state == recAcquired {
			acquired = append(acquired, r)
		}
	}
	if len(acquired) == 0 {
		return
	}
	r := acquired[s.pick(len(acquired))]
	s.release(r)
	s.tracef("lock of %s expired: %v", s.recName(r), s.broker[r].state)
}

// brokerRestart loses the in-flight state: acquired records are available
// again and delivery counts may restart (next delivery is "1").
func (s *sim) brokerRestart() {
	reset := s.chance(2)
	s.count("broker restart")
	for r := range s.broker {
		b := &s.broker[r]
		if b.state == recAcquired {
			b.state, b.owner = recAvailable, -1
		}
		if reset && b.state == recAvailable {
			b.deliveries = 0
		}
	}
	s.tracef("broker restart (delivery counts reset: %v)", reset)
}

func (s *sim) crash() {
	if s.drain {
		return
	}
	w := s.workers[s.pick(len(s.workers))]
	if !w.alive {
		return
	}
	s.crashWorker(w)
}

func (s *sim) crashWorker(w *simWorker) {
	s.count("worker crash")
	if w.phase == phAck {
		s.count("worker crash between commit and ack")
	}
	s.tracef("worker %d crashed in phase %d", w.id, w.phase)
	*w = simWorker{id: w.id, pid: w.pid, inst: w.inst}
}

func (s *sim) restart() {
	w := s.workers[s.pick(len(s.workers))]
	if !w.alive {
		w.alive, w.reinit = true, true
		s.tracef("worker %d restarted", w.id)
	}
}

// endTxn writes the transaction's markers (one per ledger partition it
// wrote a claim to) and, on commit, makes its outputs visible.
func (s *sim) endTxn(t *simTxn, commit bool) {
	if !t.open {
		panic("endTxn of an ended transaction")
	}
	t.open, t.committed, t.ended = false, commit, true
	// Kafka under transaction.version 2: markers at the bumped epoch, and
	// the producer continues from it.
	s.epochs[t.pid] = max(s.epochs[t.pid], t.epoch+1)
	if s.p.loseMarkers && s.chance(8) {
		t.noEvidence = true
	}
	for _, lp := range t.lps {
		if s.p.loseMarkers && s.chance(3) {
			s.count("marker lost in the ledger")
			s.tracef("txn %d: its marker in ledger partition %d was lost", t.id, lp)
			continue
		}
		s.logs[lp] = append(s.logs[lp], ledgerEntry{pid: t.pid, epoch: t.epoch + 1, commit: commit, txn: t.id})
	}
	s.tracef("txn %d (worker %d, pid %d) %s, records %v", t.id, t.worker, t.pid, map[bool]string{true: "COMMITTED", false: "aborted"}[commit], s.names(t.recs))
	if !commit {
		return
	}
	if s.drain {
		s.count("commit (drain)")
	} else {
		s.count("commit")
	}
	if !t.checked {
		s.fail("unchecked-commit", "txn %d committed without a passing Check", t.id)
	}
	for _, r := range t.recs {
		s.outputs[r] = append(s.outputs[r], t.id)
		if len(s.outputs[r]) > 1 && s.v == nil {
			s.fail("duplicate", "record %s is in the outputs of committed txns %v", s.recName(r), s.outputs[r])
			for _, id := range s.outputs[r] {
				s.v.producers = append(s.v.producers, s.txns[id].pid)
			}
		}
	}
}

func (s *sim) names(recs []int) []string {
	out := make([]string, len(recs))
	for i, r := range recs {
		out[i] = s.recName(r)
	}
	return out
}

// coordinatorEnd ends an open transaction as the coordinator would: a
// requested commit completes or not (either way it is decided), anything
// else is aborted.
func (s *sim) coordinatorEnd(t *simTxn) {
	s.endTxn(t, t.commitRequested && s.chance(2))
}

// coordinatorTimeout aborts a transaction that ran too long: a stalled
// worker's, or a crashed worker's leftover.
func (s *sim) coordinatorTimeout() {
	var open []*simTxn
	for _, t := range s.txns {
		if t.open {
			open = append(open, t)
		}
	}
	if len(open) == 0 {
		return
	}
	s.coordinatorEnd(open[s.pick(len(open))])
}

// fence is InitProducerId of a (re)started producer: its earlier
// transaction, if still open, is ended before it can write again.
func (s *sim) fence(pid int64) {
	for _, t := range s.txns {
		if t.open && t.pid == pid {
			s.coordinatorEnd(t)
		}
	}
}

func (s *sim) snapshot() {
	r := s.pick(len(s.readers))
	snap := s.readers[r].Snapshot()
	if s.p.shortcut == shortcutSnapshotWithoutPending {
		snap.Pending = nil
	}
	b, err := json.Marshal(snap)
	if err != nil {
		s.fail("snapshot", "marshal: %v", err)
		return
	}
	s.snaps = append(s.snaps, b)
	s.tracef("snapshot %d of reader %d at %v (%d pending)", len(s.snaps)-1, r, snap.Next, len(snap.Pending))
}

// instanceRestart restarts an instance: its workers crash and its reader
// restarts from a snapshot (or from scratch), then reads the ledger from
// the snapshot's position on.
func (s *sim) instanceRestart() {
	if s.drain {
		return
	}
	r := s.pick(len(s.readers))
	for _, w := range s.workers {
		if w.inst == r && w.alive {
			s.crashWorker(w)
			w.reinit = true
		}
	}
	k := s.pick(len(s.snaps) + 1)
	if k == len(s.snaps) {
		s.readers[r] = NewIndex(simGen, MarkersAtNextEpoch)
		s.tracef("instance %d restarted from scratch", r)
		return
	}
	var snap Snapshot
	if err := json.Unmarshal(s.snaps[k], &snap); err != nil {
		s.fail("snapshot", "unmarshal: %v", err)
		return
	}
	s.readers[r] = Restore(&snap, MarkersAtNextEpoch)
	s.count("restore")
	if len(snap.Pending) > 0 {
		s.count("restore with pending claims")
	}
	s.tracef("instance %d restarted from snapshot %d", r, k)
}

// workerStep runs the next step of the protocol for w.
func (s *sim) workerStep(w *simWorker) {
	if !w.alive {
		return
	}
	x := s.readers[w.inst]
	switch w.phase {
	case phIdle:
		var avail []int
		for r, b := range s.broker {
			if b.state == recAvailable {
				avail = append(avail, r)
			}
		}
		if len(avail) == 0 {
			return
		}
		n := 1 + s.pick(min(s.p.maxBatch, len(avail)))
		for range n {
			i := s.pick(len(avail))
			r := avail[i]
			avail = slices.Delete(avail, i, i+1)
			b := &s.broker[r]
			s.acqSeq++
			b.state, b.owner, b.acq = recAcquired, w.id, s.acqSeq
			b.deliveries++
			w.todo = append(w.todo, heldRec{rec: r, acq: b.acq, deliveries: b.deliveries})
			if len(s.outputs[r]) > 0 {
				s.count("committed record delivered again")
				if b.deliveries == 1 {
					s.count("committed record delivered again with delivery count 1")
				}
			}
		}
		slices.SortFunc(w.todo, func(a, b heldRec) int { return a.rec - b.rec })
		s.tracef("worker %d acquired %v", w.id, s.heldNames(w.todo))
		w.phase = phPrecheck

	case phPrecheck: // step 1: committed records are accepted, no output
		var rest []heldRec
		for _, h := range w.todo {
			sp, off := s.recOf(h.rec)
			committed := x.Committed(s.key(sp), off)
			if s.p.shortcut == shortcutFirstDelivery && h.deliveries == 1 {
				committed = false
			}
			if !committed && len(s.outputs[h.rec]) > 0 {
				s.count("pre-transform check missed a commit (lagging reader)")
			}
			if committed {
				s.count("pre-transform check found a commit")
				s.tracef("worker %d: %s already committed", w.id, s.recName(h.rec))
				s.accept(w, h)
			} else {
				rest = append(rest, h)
			}
		}
		w.todo = rest
		if len(rest) == 0 {
			w.phase = phIdle
		} else {
			w.phase = phBegin
		}

	case phBegin:
		s.fence(w.pid)
		if w.reinit || s.chance(10) {
			// InitProducerId after a restart (or a producer reset):
			// one more epoch bump.
			s.epochs[w.pid]++
			w.reinit = false
		}
		t := &simTxn{id: len(s.txns), worker: w.id, pid: w.pid, epoch: s.epochs[w.pid], open: true}
		s.txns = append(s.txns, t)
		w.txn, w.toClaim, w.claimed, w.waits = t, nil, nil, 0
		for _, h := range w.todo {
			t.recs = append(t.recs, h.rec)
			sp, off := s.recOf(h.rec)
			if n := len(w.toClaim); n == 0 || w.toClaim[n-1].sp != sp {
				w.toClaim = append(w.toClaim, simClaim{sp: sp})
			}
			g := &w.toClaim[len(w.toClaim)-1]
			g.offsets = append(g.offsets, off)
			g.recs = append(g.recs, h.rec)
		}
		s.tracef("worker %d began txn %d with outputs of %v", w.id, t.id, s.names(t.recs))
		w.phase = phClaiming

	case phClaiming:
		t := w.txn
		if !t.open { // the coordinator aborted it: the write is rejected (KIP-890)
			s.count("claim write rejected")
			s.tracef("worker %d: claim write rejected, txn %d already ended", w.id, t.id)
			s.redo(w)
			return
		}
		g := w.toClaim[0]
		w.toClaim = w.toClaim[1:]
		lp := s.lpOf(g.sp)
		k := s.key(g.sp)
		c := &Claim{Gen: simGen, Topic: k.Topic, TopicID: k.TopicID, Partition: k.Partition,
			Ranges: Ranges(g.offsets), TxnID: fmt.Sprintf("w%d", w.id), ProducerID: w.pid, Epoch: t.epoch}
		s.logs[lp] = append(s.logs[lp], ledgerEntry{claim: c, pid: w.pid, epoch: t.epoch, txn: t.id})
		g.pos = Pos{lp, int64(len(s.logs[lp]) - 1)}
		w.claimed = append(w.claimed, g)
		if !slices.Contains(t.lps, lp) {
			t.lps = append(t.lps, lp)
		}
		x.Watch(g.pos)
		s.tracef("worker %d claimed %v of sp %d at %v (txn %d)", w.id, g.offsets, g.sp, g.pos, t.id)
		if len(w.toClaim) == 0 {
			w.phase = phChecking
		}

	case phChecking: // step 2: the conflict rule
		conflicts, wait, err := s.check(w, x)
		if err != nil {
			if !errors.Is(err, ErrClaimNotPending) {
				s.fail("check", "unexpected Check error: %v", err)
				return
			}
			if w.txn.open {
				s.fail("not-pending", "Check says txn %d ended, but it is open: %v", w.txn.id, err)
				return
			}
			s.count("check: claim no longer pending")
			s.tracef("worker %d: txn %d ended under it (%v)", w.id, w.txn.id, err)
			s.redo(w)
			return
		}
		if len(conflicts) > 0 {
			s.count("check: conflict")
			for _, r := range conflicts {
				for _, id := range s.outputs[r] {
					if s.txns[id].pid == w.pid {
						s.count("check: conflict with an earlier txn of the same producer id")
					}
				}
			}
			s.tracef("worker %d: conflict on %v, aborting txn %d", w.id, s.names(conflicts), w.txn.id)
			if w.txn.open {
				s.endTxn(w.txn, false)
			}
			var rest []heldRec
			for _, h := range w.todo {
				if slices.Contains(conflicts, h.rec) {
					s.accept(w, h)
				} else {
					rest = append(rest, h)
				}
			}
			w.todo = rest
			s.redo(w)
			return
		}
		if wait {
			s.count("check: wait")
			w.waits++
			if w.waits >= 12 || s.chance(8) { // ClaimWait ran out: abort and release, always safe
				s.count("check: wait timed out")
				s.tracef("worker %d: wait timed out, aborting txn %d", w.id, w.txn.id)
				if w.txn.open {
					s.endTxn(w.txn, false)
				}
				s.giveUp(w)
			}
			return
		}
		w.txn.checked = true
		w.phase = phCommit

	case phCommit: // step 3
		t := w.txn
		if !t.open {
			s.count("commit failed: txn aborted")
			s.tracef("worker %d: commit of txn %d failed, it was aborted", w.id, t.id)
			s.redo(w)
			return
		}
		switch k := s.pick(8); {
		case k < 5:
			s.endTxn(t, true)
			w.phase = phAck
		case k == 5:
			s.endTxn(t, true)
			s.count("commit outcome unknown (committed)")
			s.tracef("worker %d: commit outcome of txn %d unknown (it committed)", w.id, t.id)
			w.phase = phResolve
		default:
			if s.drain {
				s.endTxn(t, true)
				w.phase = phAck
				return
			}
			t.commitRequested = true
			s.count("commit outcome unknown (coordinator decides)")
			s.tracef("worker %d: commit outcome of txn %d unknown (coordinator to decide)", w.id, t.id)
			w.phase = phResolve
		}

	case phResolve: // never guess: wait for the claim's fate
		t := w.txn
		if s.chance(10) { // the worker's patience ran out: release, never accept
			s.count("resolve gave up")
			s.tracef("worker %d: outcome of txn %d not known in time; releasing", w.id, t.id)
			s.giveUp(w)
			return
		}
		switch x.Fate(w.claimed[0].pos) {
		case FateCommitted:
			if !t.committed {
				s.fail("fate", "Fate says txn %d committed, it did not (open %v)", t.id, t.open)
				return
			}
			s.count("resolved by fate: committed")
			s.tracef("worker %d: txn %d resolved committed", w.id, t.id)
			w.phase = phAck
		case FateAborted:
			if t.open || t.committed {
				s.fail("fate", "Fate says txn %d aborted (open %v, committed %v)", t.id, t.open, t.committed)
				return
			}
			s.count("resolved by fate: aborted")
			s.tracef("worker %d: txn %d resolved aborted", w.id, t.id)
			s.redo(w)
		}

	case phAck: // step 4
		for _, h := range w.todo {
			s.accept(w, h)
		}
		for _, g := range w.claimed {
			x.Forget(g.pos)
		}
		w.todo, w.txn, w.toClaim, w.claimed = nil, nil, nil, nil
		w.phase = phIdle
	}
}

// redo drops the ended transaction; the records still held are processed
// again in a new one.
func (s *sim) redo(w *simWorker) {
	for _, g := range w.claimed {
		s.readers[w.inst].Forget(g.pos)
	}
	w.txn, w.toClaim, w.claimed = nil, nil, nil
	if len(w.todo) == 0 {
		w.phase = phIdle
	} else {
		w.phase = phBegin
	}
}

// giveUp ends w's batch the way a worker does when it cannot tell or
// cannot reach the outcome in time: every record it still holds is
// released (never accepted), the transaction forgotten.
func (s *sim) giveUp(w *simWorker) {
	for _, h := range w.todo {
		if b := &s.broker[h.rec]; b.state == recAcquired && b.owner == w.id && b.acq == h.acq {
			s.release(h.rec)
		}
	}
	for _, g := range w.claimed {
		s.readers[w.inst].Forget(g.pos)
	}
	w.todo, w.txn, w.toClaim, w.claimed = nil, nil, nil, nil
	w.phase = phIdle
}

// tracked returns the positions of the claims x still tracks, in order.
func tracked(x *Index) []Pos {
	out := make([]Pos, 0, len(x.byPos))
	for pos := range x.byPos {
		out = append(out, pos)
	}
	slices.SortFunc(out, func(a, b Pos) int {
		if posLess(a, b) {
			return -1
		}
		if a == b {
			return 0
		}
		return 1
	})
	return out
}

// resolver is the relay's resolver: it settles a claim a reader still
// tracks whose transaction has ended (orphaned, or pending with its marker
// lost) by appending a resolution record, from the transaction's outcome —
// which the relay reads off the outputs. A transaction whose outcome left
// no trace stays unsettled.
func (s *sim) resolver() {
	if s.p.shortcut == shortcutLegacyNextMarker {
		return
	}
	x := s.readers[s.pick(len(s.readers))]
	cands := tracked(x)
	if len(cands) == 0 {
		return
	}
	s.settle(x, cands[s.pick(len(cands))])
}

func (s *sim) settle(x *Index, pos Pos) bool {
	t := s.txns[s.logs[pos.Partition][pos.Offset].txn]
	if !t.ended || t.noEvidence {
		return false
	}
	info, _ := x.Claim(pos)
	sib := x.Siblings(pos)
	s.logs[pos.Partition] = append(s.logs[pos.Partition], ledgerEntry{resolve: sib, commit: t.committed, txn: t.id})
	s.count("resolution written")
	if info.Orphan {
		s.count("orphan settled")
	}
	s.tracef("resolver: txn %d settled (committed %v) for claims %v", t.id, t.committed, sib)
	return true
}

// resolveAll settles every claim that can be settled, for the drain.
func (s *sim) resolveAll() {
	if s.p.shortcut == shortcutLegacyNextMarker {
		return
	}
	for _, x := range s.readers {
		for _, pos := range tracked(x) {
			if _, ok := x.Claim(pos); ok && s.settle(x, pos) {
				s.catchUpAll()
			}
		}
	}
}

// unsettled reports whether reader x still tracks a claim covering r.
func (s *sim) unsettled(x *Index, r int) bool {
	sp, off := s.recOf(r)
	for _, pos := range tracked(x) {
		info, _ := x.Claim(pos)
		if info.Key == s.key(sp) && overlaps(info.Ranges, off) {
			return true
		}
	}
	return false
}

func (s *sim) heldNames(hs []heldRec) []string {
	out := make([]string, len(hs))
	for i, h := range hs {
		out[i] = fmt.Sprintf("%s(d%d)", s.recName(h.rec), h.deliveries)
	}
	return out
}

// accept acknowledges a record; it fails (silently, like a stale ack) if
// the worker's lock on it is gone.
func (s *sim) accept(w *simWorker, h heldRec) {
	b := &s.broker[h.rec]
	if b.state != recAcquired || b.owner != w.id || b.acq != h.acq {
		s.count("ack failed: lock lost")
		s.tracef("worker %d: ack of %s failed (%v)", w.id, s.recName(h.rec), b.state)
		return
	}
	if len(s.outputs[h.rec]) != 1 {
		s.fail("ack-uncommitted", "worker %d accepted %s, committed %d times", w.id, s.recName(h.rec), len(s.outputs[h.rec]))
	}
	b.state, b.owner = recAcked, -1
	s.tracef("worker %d accepted %s", w.id, s.recName(h.rec))
}

// check applies the conflict rule to w's claims and returns the records
// that conflict and whether to wait.
func (s *sim) check(w *simWorker, x *Index) (conflicts []int, wait bool, err error) {
	if s.p.shortcut == shortcutOwnProducer {
		x = s.withoutOwnClaims(w, x)
	}
	first := map[int]bool{}
	for _, h := range w.todo {
		first[h.rec] = h.deliveries == 1
	}
	for _, g := range w.claimed {
		c, blockers, err := x.Check(g.pos, s.key(g.sp), g.offsets)
		if err != nil {
			return nil, false, err
		}
		wait = wait || len(blockers) > 0
		for i, conflict := range c {
			if conflict && !(s.p.shortcut == shortcutFirstDelivery && first[g.recs[i]]) {
				conflicts = append(conflicts, g.recs[i])
			}
		}
	}
	return conflicts, wait, nil
}

// withoutOwnClaims is shortcut (a): the index x would be if it skipped the
// earlier claims of w's producer id (those of w's earlier transactions).
func (s *sim) withoutOwnClaims(w *simWorker, x *Index) *Index {
	y := NewIndex(simGen, MarkersAtNextEpoch)
	for lp := range int32(s.p.ledgerParts) {
		for o := range x.Next(lp) {
			e := s.logs[lp][o]
			if e.claim != nil && e.pid == w.pid && e.txn != w.txn.id {
				y.Advance(lp, o+1)
				continue
			}
			s.apply(y, lp)
		}
	}
	return y
}

// checkSound: a reader never reports a record committed that no
// committed transaction output.
func (s *sim) checkSound() {
	for i, x := range s.readers {
		for r := range s.broker {
			sp, off := s.recOf(r)
			if x.Committed(s.key(sp), off) && len(s.outputs[r]) == 0 {
				s.fail("unsound-committed", "reader %d says %s is committed; no committed txn output it", i, s.recName(r))
			}
		}
	}
}

// runToIdle runs w alone, with every reader caught up, until it is idle.
func (s *sim) runToIdle(w *simWorker) {
	for i := 0; w.phase != phIdle; i++ {
		if i > 200 {
			s.fail("stuck", "worker %d stuck in phase %d during the drain", w.id, w.phase)
			return
		}
		s.workerStep(w)
		s.catchUpAll()
		s.checkSound()
		if s.v != nil {
			return
		}
	}
}

// drainAll lets everything finish: no more crashes; the coordinator ends
// the leftover transactions; workers finish one at a time; locks nobody
// holds expire; the records left are processed until none is available.
func (s *sim) drainAll() {
	s.drain = true
	s.tracef("--- drain ---")
	for _, w := range s.workers {
		w.alive = true
	}
	for round := 0; ; round++ {
		if round > 50 {
			s.fail("stuck", "drain did not finish")
			return
		}
		for _, t := range s.txns {
			if t.open {
				s.coordinatorEnd(t)
			}
		}
		s.catchUpAll()
		s.resolveAll()
		for _, w := range s.workers {
			s.runToIdle(w)
			if s.v != nil {
				return
			}
		}
		for r, b := range s.broker {
			if b.state == recAcquired {
				s.release(r)
			}
		}
		for i := 0; ; i++ {
			avail := false
			for _, b := range s.broker {
				avail = avail || b.state == recAvailable
			}
			if !avail {
				s.catchUpAll()
				s.resolveAll()
				return
			}
			if i > 10*len(s.broker) {
				break
			}
			w := s.workers[s.pick(len(s.workers))]
			s.workerStep(w)
			s.runToIdle(w)
			if s.v != nil {
				return
			}
		}
	}
}

// checkFinal: after the drain, every record the broker did not archive is
// committed exactly once and accepted; a record no transaction committed is
// not accepted, no reader calls it committed, and a new claim of it would
// pass the check: it can still be processed. Every reader agrees with the
// outputs and has no pending claims left.
func (s *sim) checkFinal() {
	for _, t := range s.txns {
		if t.open {
			s.fail("final-open", "txn %d still open after the drain", t.id)
		}
	}
	for i, x := range s.readers {
		for _, pos := range tracked(x) {
			if t := s.txns[s.logs[pos.Partition][pos.Offset].txn]; !t.noEvidence {
				s.fail("final-pending", "reader %d still tracks the claim at %v of txn %d after every transaction ended", i, pos, t.id)
			}
		}
	}
	for r, b := range s.broker {
		sp, off := s.recOf(r)
		n := len(s.outputs[r])
		if b.state != recArchived && (b.state != recAcked || n != 1) {
			s.fail("final-lost", "record %s: broker %v, committed %d times; want accepted and committed once", s.recName(r), b.state, n)
		}
		for i, x := range s.readers {
			if x.Committed(s.key(sp), off) != (n == 1) && !s.unsettled(x, r) {
				s.fail("final-index", "reader %d: Committed(%s) = %v, committed %d times", i, s.recName(r), !(n == 1), n)
			}
		}
		if n != 0 {
			continue
		}
		if b.state == recAcked {
			s.fail("final-ack", "record %s was accepted but never committed", s.recName(r))
		}
		for i, x := range s.readers {
			if s.unsettled(x, r) {
				continue // blocked by a claim whose outcome left no trace
			}
			// A probe claim on a copy of the reader: it must pass.
			y := Restore(x.Snapshot(), MarkersAtNextEpoch)
			lp := s.lpOf(sp)
			pos := Pos{lp, y.Next(lp)}
			y.ApplyClaim(pos, &Claim{Gen: simGen, Topic: s.key(sp).Topic, TopicID: s.key(sp).TopicID, Partition: sp,
				Ranges: []Range{{off, off}}, ProducerID: 99999})
			c, wait, err := y.Check(pos, s.key(sp), []int64{off})
			if err != nil || len(wait) > 0 || c[0] {
				s.fail("final-probe", "reader %d: a new claim of never-committed %s gets conflict %v wait %v err %v", i, s.recName(r), c, wait, err)
			}
		}
	}
}

// TestProtocolProperty: under every interleaving rapid tries, the
// protocol never commits a record twice, never accepts an uncommitted
// record, and after the drain commits every non-archived record once.
func TestProtocolProperty(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		c := rapidChooser{rt}
		if v := simulate(drawParams(c, noShortcut), c); v != nil {
			rt.Fatal(v)
		}
	})
}

// hunt runs the model over seeds 1..n and returns the first violation of
// the given kind ("" for any) and its seed.
func hunt(sc shortcut, n int, kind string) (*violation, uint64, simParams) {
	for seed := uint64(1); seed <= uint64(n); seed++ {
		c := randChooser{rand.New(rand.NewPCG(seed, 0x5eed))}
		p := drawParams(c, sc)
		if v := simulate(p, c); v != nil && (kind == "" || v.kind == kind) {
			return v, seed, p
		}
	}
	return nil, 0, simParams{}
}

// TestProtocolModelCatchesShortcuts shows the property has teeth: with
// each shortcut the model finds a duplicate within the seeds, and with the
// protocol as specified it finds nothing on the same seeds.
func TestProtocolModelCatchesShortcuts(t *testing.T) {
	const seeds = 2000
	t.Run("the protocol as specified has no violation", func(t *testing.T) {
		t.Parallel()
		if v, seed, p := hunt(noShortcut, seeds, ""); v != nil {
			t.Fatalf("seed %d, %+v: %v", seed, p, v)
		}
	})
	// The rule before issue 11 on the same model: once the broker loses a
	// marker in the ledger, crediting a claim with its producer's next
	// marker both loses records (a claim credited with a later commit:
	// the index says committed, nothing was output, the record is
	// accepted) and duplicates them (a committed claim credited with a
	// later abort).
	for _, kind := range []string{"unsound-committed", "duplicate"} {
		t.Run("the next-marker rule with lost markers causes "+kind, func(t *testing.T) {
			t.Parallel()
			v, seed, p := hunt(shortcutLegacyNextMarker, seeds, kind)
			if v == nil {
				t.Fatalf("no %s within %d seeds: the model does not catch the lost-marker case", kind, seeds)
			}
			if !p.loseMarkers {
				t.Fatalf("seed %d found %s without lost markers: %v", seed, kind, v)
			}
			t.Logf("seed %d, %+v:\n%v", seed, p, v)
		})
	}
	for _, sc := range []shortcut{shortcutOwnProducer, shortcutSnapshotWithoutPending, shortcutFirstDelivery} {
		t.Run("shortcut "+sc.String()+" causes a duplicate", func(t *testing.T) {
			t.Parallel()
			v, seed, p := hunt(sc, seeds, "duplicate")
			if v == nil {
				t.Fatalf("no duplicate within %d seeds: the model does not catch shortcut %v", seeds, sc)
			}
			t.Logf("seed %d, %+v:\n%v", seed, p, v)
			if sc == shortcutOwnProducer && (len(v.producers) != 2 || v.producers[0] != v.producers[1]) {
				t.Fatalf("the duplicate should come from two transactions of one producer id, got %v", v.producers)
			}
		})
	}
}

// TestProtocolModelCoverage guards the model against becoming vacuous:
// over a few hundred seeds every situation the protocol exists for must
// actually happen.
func TestProtocolModelCoverage(t *testing.T) {
	t.Parallel()
	total := map[string]int{}
	for seed := uint64(1); seed <= 500; seed++ {
		c := randChooser{rand.New(rand.NewPCG(seed, 0xc0ffee))}
		s := simulateS(drawParams(c, noShortcut), c)
		if s.v != nil {
			t.Fatalf("seed %d: %v", seed, s.v)
		}
		for k, n := range s.stats {
			total[k] += n
		}
	}
	for _, want := range []string{
		"commit",
		"check: conflict",
		"check: conflict with an earlier txn of the same producer id",
		"check: wait",
		"check: wait timed out",
		"check: claim no longer pending",
		"claim write rejected",
		"commit failed: txn aborted",
		"commit outcome unknown (committed)",
		"commit outcome unknown (coordinator decides)",
		"resolved by fate: committed",
		"resolved by fate: aborted",
		"pre-transform check found a commit",
		"pre-transform check missed a commit (lagging reader)",
		"committed record delivered again with delivery count 1",
		"restore with pending claims",
		"archived",
		"ack failed: lock lost",
		"worker crash between commit and ack",
		"broker restart",
		"marker lost in the ledger",
		"resolution written",
		"orphan settled",
		"resolve gave up",
	} {
		if total[want] == 0 {
			t.Errorf("never happened in 500 runs: %s", want)
		}
	}
	t.Logf("%v", total)
}
