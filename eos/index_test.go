package eos

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"testing"
)

// testLedger is a ledger topic in memory: per ledger partition, an
// append-only log of claims and transaction markers. Indexes read it with
// catchUp, in ledger order, from their own position (Index.Next).
//
// It keeps each producer's epoch the way Kafka's coordinator does under
// transaction.version 2: a transaction's records carry the current epoch
// E, its markers E+1, and the next transaction starts at E+1.
type testLedger struct {
	gen    int64
	logs   map[int32][]testEntry
	epochs map[int64]int16
	open   map[int64]bool // the producer has a transaction open
}

type testEntry struct {
	claim      *Claim      // a claim, or
	resolution *Resolution // a resolution, or else a transaction marker
	pid        int64
	epoch      int16
	commit     bool
}

func newTestLedger(gen int64) *testLedger {
	return &testLedger{gen: gen, logs: map[int32][]testEntry{}, epochs: map[int64]int16{}, open: map[int64]bool{}}
}

// claim appends a claim of producer pid for offsets of k to ledger
// partition lp and returns its position.
func (l *testLedger) claim(lp int32, k PartKey, pid int64, offsets ...int64) Pos {
	return l.claimGen(lp, l.gen, k, pid, offsets...)
}

func (l *testLedger) claimGen(lp int32, gen int64, k PartKey, pid int64, offsets ...int64) Pos {
	l.open[pid] = true
	e := l.epochs[pid]
	c := &Claim{
		Gen: gen, Topic: k.Topic, TopicID: k.TopicID, Partition: k.Partition,
		Ranges: Ranges(offsets), TxnID: fmt.Sprintf("txn-%d", pid), ProducerID: pid, Epoch: e,
	}
	l.logs[lp] = append(l.logs[lp], testEntry{claim: c, pid: pid, epoch: e})
	return Pos{lp, int64(len(l.logs[lp]) - 1)}
}

// commit and abort write the marker of pid's transaction to lp, at the
// bumped epoch: the first marker ends the transaction and the producer
// moves to that epoch; the same transaction's markers in other ledger
// partitions carry the same epoch.
func (l *testLedger) commit(lp int32, pid int64) Pos { return l.marker(lp, pid, true) }
func (l *testLedger) abort(lp int32, pid int64) Pos  { return l.marker(lp, pid, false) }

func (l *testLedger) marker(lp int32, pid int64, commit bool) Pos {
	l.end(pid)
	l.logs[lp] = append(l.logs[lp], testEntry{pid: pid, epoch: l.epochs[pid], commit: commit})
	return Pos{lp, int64(len(l.logs[lp]) - 1)}
}

func (l *testLedger) end(pid int64) {
	if l.open[pid] {
		l.open[pid] = false
		l.epochs[pid]++
	}
}

// catchUp applies to x everything of the ledger it has not applied yet.
func (l *testLedger) catchUp(x *Index) {
	for lp, log := range l.logs {
		for o := x.Next(lp); o < int64(len(log)); o++ {
			applyEntry(x, Pos{lp, o}, log[o])
		}
	}
}

func applyEntry(x *Index, pos Pos, e testEntry) {
	switch {
	case e.claim != nil:
		x.ApplyClaim(pos, e.claim)
	case e.resolution != nil:
		x.ApplyResolution(pos, e.resolution.Claims, e.resolution.Commit)
	default:
		x.ApplyMarker(pos, e.pid, e.epoch, e.commit)
	}
}

// newIndex returns an empty index with Kafka's marker convention.
func newIndex(gen int64) *Index { return NewIndex(gen, MarkersAtNextEpoch) }

var (
	orders0 = PartKey{TopicID: [16]byte{0xA}, Topic: "orders", Partition: 0}
	orders1 = PartKey{TopicID: [16]byte{0xA}, Topic: "orders", Partition: 1}
)

const (
	pidW1 = int64(1001)
	pidW2 = int64(1002)
	pidW3 = int64(1003)
)

// mustCheck runs Check and fails the test on an error.
func mustCheck(t *testing.T, x *Index, pos Pos, k PartKey, offsets ...int64) (conflict []bool, wait bool) {
	t.Helper()
	conflict, blockers, err := x.Check(pos, k, offsets)
	if err != nil {
		t.Fatalf("Check(%v, %v, %v): %v", pos, k.Topic, offsets, err)
	}
	return conflict, len(blockers) > 0
}

func wantCheck(t *testing.T, x *Index, pos Pos, k PartKey, offsets []int64, wantConflict []bool, wantWait bool) {
	t.Helper()
	conflict, wait := mustCheck(t, x, pos, k, offsets...)
	if !reflect.DeepEqual(conflict, wantConflict) || wait != wantWait {
		t.Fatalf("Check(%v, %v) = conflict %v wait %v, want conflict %v wait %v", pos, offsets, conflict, wait, wantConflict, wantWait)
	}
}

// roundTrip sends a snapshot through JSON, as the snapshot topic does.
func roundTrip(t *testing.T, s *Snapshot) *Snapshot {
	t.Helper()
	b, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	var out Snapshot
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	return &out
}

func TestIndexConflictRule(t *testing.T) {
	t.Run("a claim with no earlier claims passes", func(t *testing.T) {
		l, x := newTestLedger(1), newIndex(1)
		c := l.claim(0, orders0, pidW1, 4, 5, 6)
		l.catchUp(x)
		wantCheck(t, x, c, orders0, []int64{4, 5, 6}, []bool{false, false, false}, false)
	})

	t.Run("an offset an earlier transaction committed conflicts and only that offset", func(t *testing.T) {
		l, x := newTestLedger(1), newIndex(1)
		l.claim(0, orders0, pidW1, 5)
		l.commit(0, pidW1)
		c := l.claim(0, orders0, pidW2, 4, 5, 6)
		l.catchUp(x)
		if !x.Committed(orders0, 5) || x.Committed(orders0, 4) || x.Committed(orders0, 6) {
			t.Fatal("Committed should hold exactly offset 5")
		}
		wantCheck(t, x, c, orders0, []int64{4, 5, 6}, []bool{false, true, false}, false)
	})

	t.Run("an offset an earlier transaction aborted does not conflict", func(t *testing.T) {
		l, x := newTestLedger(1), newIndex(1)
		l.claim(0, orders0, pidW1, 5)
		l.abort(0, pidW1)
		c := l.claim(0, orders0, pidW2, 5)
		l.catchUp(x)
		if x.Committed(orders0, 5) {
			t.Fatal("an aborted claim must not commit its offsets")
		}
		wantCheck(t, x, c, orders0, []int64{5}, []bool{false}, false)
	})

	t.Run("an earlier pending claim of the same offset makes the check wait until its marker", func(t *testing.T) {
		for _, commit := range []bool{true, false} {
			t.Run(fmt.Sprintf("commit=%v", commit), func(t *testing.T) {
				l, x := newTestLedger(1), newIndex(1)
				l.claim(0, orders0, pidW1, 5, 6)
				c := l.claim(0, orders0, pidW2, 4, 5)
				l.catchUp(x)
				wantCheck(t, x, c, orders0, []int64{4, 5}, []bool{false, false}, true)
				l.marker(0, pidW1, commit)
				l.catchUp(x)
				wantCheck(t, x, c, orders0, []int64{4, 5}, []bool{false, commit}, false)
			})
		}
	})

	t.Run("an earlier pending claim of other offsets does not make the check wait", func(t *testing.T) {
		l, x := newTestLedger(1), newIndex(1)
		l.claim(0, orders0, pidW1, 1, 2, 3)
		c := l.claim(0, orders0, pidW2, 4, 5)
		l.catchUp(x)
		wantCheck(t, x, c, orders0, []int64{4, 5}, []bool{false, false}, false)
	})

	t.Run("a later pending claim of the same offset is ignored", func(t *testing.T) {
		l, x := newTestLedger(1), newIndex(1)
		c := l.claim(0, orders0, pidW1, 5)
		later := l.claim(0, orders0, pidW2, 5)
		l.catchUp(x)
		wantCheck(t, x, c, orders0, []int64{5}, []bool{false}, false)
		wantCheck(t, x, later, orders0, []int64{5}, []bool{false}, true)
	})

	t.Run("claims of another source partition do not interact", func(t *testing.T) {
		l, x := newTestLedger(1), newIndex(1)
		l.claim(0, orders1, pidW1, 5)
		l.claim(0, orders1, pidW3, 6)
		l.commit(0, pidW3)
		c := l.claim(0, orders0, pidW2, 5, 6)
		l.catchUp(x)
		wantCheck(t, x, c, orders0, []int64{5, 6}, []bool{false, false}, false)
		if x.Committed(orders0, 6) || !x.Committed(orders1, 6) {
			t.Fatal("a commit must only mark its own source partition")
		}
	})

	t.Run("a committed offset conflicts even while an earlier claim of it is pending", func(t *testing.T) {
		l, x := newTestLedger(1), newIndex(1)
		l.claim(0, orders0, pidW1, 5)
		l.commit(0, pidW1)
		l.claim(0, orders0, pidW2, 5) // stalled: pending, will conflict too
		c := l.claim(0, orders0, pidW3, 5)
		l.catchUp(x)
		conflict, _ := mustCheck(t, x, c, orders0, 5)
		if !conflict[0] {
			t.Fatal("offset 5 is committed: the claim must conflict")
		}
	})

	t.Run("check before the claim is applied says wait", func(t *testing.T) {
		l, x := newTestLedger(1), newIndex(1)
		l.claim(0, orders0, pidW1, 5)
		l.commit(0, pidW1)
		c := l.claim(0, orders0, pidW2, 5)
		// The reader has read nothing: neither the commit nor our claim.
		if x.Applied(c) {
			t.Fatal("Applied before the reader read the claim")
		}
		conflict, wait, err := x.Check(c, orders0, []int64{5})
		if err != nil || len(wait) == 0 || conflict != nil {
			t.Fatalf("Check before Applied = %v, %v, %v; want nil, blocked, nil", conflict, wait, err)
		}
		// Still lagging: it read the commit but not our claim.
		applyEntry(x, Pos{0, 0}, l.logs[0][0])
		applyEntry(x, Pos{0, 1}, l.logs[0][1])
		if _, wait, err := x.Check(c, orders0, []int64{5}); len(wait) == 0 || err != nil {
			t.Fatalf("Check one record before the claim: wait %v err %v, want wait", wait, err)
		}
		l.catchUp(x)
		if !x.Applied(c) {
			t.Fatal("not Applied after catching up")
		}
		wantCheck(t, x, c, orders0, []int64{5}, []bool{true}, false)
	})

	t.Run("check of a claim whose transaction already ended returns ErrClaimNotPending", func(t *testing.T) {
		for _, commit := range []bool{true, false} {
			t.Run(fmt.Sprintf("commit=%v", commit), func(t *testing.T) {
				l, x := newTestLedger(1), newIndex(1)
				c := l.claim(0, orders0, pidW1, 5)
				// e.g. the coordinator aborted the stalled transaction on timeout.
				l.marker(0, pidW1, commit)
				l.catchUp(x)
				conflict, wait, err := x.Check(c, orders0, []int64{5})
				if !errors.Is(err, ErrClaimNotPending) || len(wait) > 0 || conflict != nil {
					t.Fatalf("Check = %v, %v, %v; want ErrClaimNotPending", conflict, wait, err)
				}
			})
		}
	})

	t.Run("claims of another generation are ignored", func(t *testing.T) {
		l, x := newTestLedger(2), newIndex(2)
		old := l.claimGen(0, 1, orders0, pidW1, 5)
		l.commit(0, pidW1)
		l.claimGen(0, 1, orders0, pidW3, 6) // pending forever in generation 1
		c := l.claim(0, orders0, pidW2, 5, 6)
		l.catchUp(x)
		if x.Committed(orders0, 5) {
			t.Fatal("a commit of a generation-1 claim counted in generation 2")
		}
		if !x.Applied(old) {
			t.Fatal("a claim of another generation must still advance the reader")
		}
		if _, _, err := x.Check(old, orders0, []int64{5}); !errors.Is(err, ErrClaimNotPending) {
			t.Fatalf("Check of another generation's claim: err %v, want ErrClaimNotPending", err)
		}
		wantCheck(t, x, c, orders0, []int64{5, 6}, []bool{false, false}, false)
		if s := x.Stats(); s.Pending != 1 {
			t.Fatalf("Stats().Pending = %d, want 1 (only the generation-2 claim)", s.Pending)
		}
	})

	t.Run("a recreated topic does not match the old topic's claims", func(t *testing.T) {
		recreated := PartKey{TopicID: [16]byte{0xB}, Topic: orders0.Topic, Partition: orders0.Partition}
		l, x := newTestLedger(1), newIndex(1)
		l.claim(0, orders0, pidW1, 5)
		l.commit(0, pidW1)
		l.claim(0, orders0, pidW3, 6) // pending on the deleted topic
		c := l.claim(0, recreated, pidW2, 5, 6)
		l.catchUp(x)
		if !x.Committed(orders0, 5) {
			t.Fatal("the old topic's offset 5 is committed")
		}
		if x.Committed(recreated, 5) {
			t.Fatal("the recreated topic's offset 5 must not be committed by the old topic's claim")
		}
		wantCheck(t, x, c, recreated, []int64{5, 6}, []bool{false, false}, false)
	})

	t.Run("a marker resolves only its producer's claims in its own ledger partition", func(t *testing.T) {
		l, x := newTestLedger(1), newIndex(1)
		a := l.claim(0, orders0, pidW1, 5)
		b := l.claim(1, orders1, pidW1, 5)
		other := l.claim(0, orders0, pidW2, 7)
		l.commit(0, pidW1) // lp 1's marker is not read yet
		l.catchUp(x)
		if !x.Committed(orders0, 5) || x.Committed(orders1, 5) {
			t.Fatal("lp 0's marker must commit lp 0's claim only")
		}
		if _, _, err := x.Check(a, orders0, []int64{5}); !errors.Is(err, ErrClaimNotPending) {
			t.Fatalf("claim in lp 0: %v, want ErrClaimNotPending", err)
		}
		wantCheck(t, x, b, orders1, []int64{5}, []bool{false}, false)
		wantCheck(t, x, other, orders0, []int64{7}, []bool{false}, false)
		l.abort(1, pidW1)
		l.catchUp(x)
		if x.Committed(orders1, 5) {
			t.Fatal("lp 1's abort must not commit")
		}
	})

	t.Run("a watched claim reports its fate", func(t *testing.T) {
		for _, commit := range []bool{true, false} {
			t.Run(fmt.Sprintf("commit=%v", commit), func(t *testing.T) {
				l, x := newTestLedger(1), newIndex(1)
				c := l.claim(0, orders0, pidW1, 5)
				l.catchUp(x)
				x.Watch(c)
				if f := x.Fate(c); f != FateUnknown {
					t.Fatalf("Fate before the marker = %v, want unknown", f)
				}
				l.marker(0, pidW1, commit)
				l.catchUp(x)
				want := FateAborted
				if commit {
					want = FateCommitted
				}
				if f := x.Fate(c); f != want {
					t.Fatalf("Fate = %v, want %v", f, want)
				}
				x.Forget(c)
				if f := x.Fate(c); f != FateUnknown {
					t.Fatalf("Fate after Forget = %v, want unknown", f)
				}
			})
		}
	})

	t.Run("a claim of several ranges commits all of them and conflicts on each", func(t *testing.T) {
		l, x := newTestLedger(1), newIndex(1)
		l.claim(0, orders0, pidW1, 1, 2, 3, 7, 9, 10)
		l.commit(0, pidW1)
		c := l.claim(0, orders0, pidW2, 0, 3, 4, 8, 9, 11)
		l.catchUp(x)
		wantCheck(t, x, c, orders0, []int64{0, 3, 4, 8, 9, 11}, []bool{false, true, false, false, true, false}, false)
		if s := x.Stats(); s.Ranges != 3 || s.Partitions != 1 || s.Pending != 1 {
			t.Fatalf("Stats = %+v, want 3 ranges, 1 partition, 1 pending", s)
		}
	})

	t.Run("Advance over other records makes later claims applied", func(t *testing.T) {
		x := newIndex(1)
		x.Advance(0, 10)
		x.Advance(0, 3) // never moves back
		if !x.Applied(Pos{0, 9}) || x.Applied(Pos{0, 10}) || x.Next(0) != 10 || x.Applied(Pos{1, 0}) {
			t.Fatalf("Advance: Next(0)=%d", x.Next(0))
		}
	})
}

// TestIndexRegressions are the shortcuts that look harmless and each cause
// a duplicate. Every test checks the exact behaviour the shortcut breaks.
func TestIndexRegressions(t *testing.T) {
	// (a) Shortcut: "a producer has at most one open transaction, so a
	// claim with my own producer id is this transaction's, not a rival's:
	// skip it in Check". Kafka keeps the producer id across a restart (same
	// transactional id, only the epoch changes), so the claim of W's
	// previous, committed transaction has W's producer id. With the
	// shortcut, W — which committed offset 5 in txn1 and crashed before
	// acknowledging it — gets offset 5 back, claims it in txn2, sees no
	// conflict, commits and writes offset 5's outputs a second time.
	t.Run("an earlier claim by the same producer id still counts", func(t *testing.T) {
		t.Run("committed", func(t *testing.T) {
			l, x := newTestLedger(1), newIndex(1)
			l.claim(0, orders0, pidW1, 5) // txn1
			l.commit(0, pidW1)
			// W1 crashes before the acknowledgement; its reader lagged,
			// so the pre-transform Committed check missed the commit.
			if x.Committed(orders0, 5) {
				t.Fatal("setup: the lagging reader should not know yet")
			}
			c := l.claim(0, orders0, pidW1, 5) // txn2, same producer id
			l.catchUp(x)
			wantCheck(t, x, c, orders0, []int64{5}, []bool{true}, false)
		})
		t.Run("pending", func(t *testing.T) {
			// Two pending claims of one producer id for the same offset
			// (a worker that claims again inside the same transaction,
			// e.g. retrying after a conflict without aborting): the second
			// must wait for the first's marker, not skip it as "mine" —
			// if the first belongs to a transaction that commits, skipping
			// it lets the same offset be output again.
			l, x := newTestLedger(1), newIndex(1)
			l.claim(0, orders0, pidW1, 5)
			c := l.claim(0, orders0, pidW1, 5, 6)
			l.catchUp(x)
			wantCheck(t, x, c, orders0, []int64{5, 6}, []bool{false, false}, true)
			// The marker ends the producer's transaction: both claims are
			// resolved, so the waiting writer learns its claim is no longer
			// pending and must not commit anything more.
			l.commit(0, pidW1)
			l.catchUp(x)
			if !x.Committed(orders0, 5) {
				t.Fatal("offset 5 must be committed after the marker")
			}
			if _, _, err := x.Check(c, orders0, []int64{5, 6}); !errors.Is(err, ErrClaimNotPending) {
				t.Fatalf("after the marker: %v, want ErrClaimNotPending", err)
			}
		})
		t.Run("another producer's claim after ours is not credited to us", func(t *testing.T) {
			l, x := newTestLedger(1), newIndex(1)
			mine := l.claim(0, orders0, pidW1, 5)
			theirs := l.claim(0, orders0, pidW2, 5)
			l.commit(0, pidW1)
			l.catchUp(x)
			if _, _, err := x.Check(mine, orders0, []int64{5}); !errors.Is(err, ErrClaimNotPending) {
				t.Fatalf("our claim: %v, want ErrClaimNotPending", err)
			}
			wantCheck(t, x, theirs, orders0, []int64{5}, []bool{true}, false)
		})
	})

	// (b) Shortcut: "offsets below the share-partition start offset are
	// acknowledged and will never be delivered again, so prune them from
	// the index". A worker that stalled holding offset 5 — its lock
	// expired, W1 got offset 5, committed and acknowledged it, and the
	// start offset moved past it — still runs its transaction and claims
	// offset 5. Its acknowledgement will fail, but its outputs commit: with
	// pruning its Check passes and offset 5 is written twice.
	t.Run("claims below the share-partition start offset are not forgotten", func(t *testing.T) {
		l, x := newTestLedger(1), newIndex(1)
		l.claim(0, orders0, pidW1, 5)
		l.commit(0, pidW1) // W1 then acknowledges: the start offset passes 5
		// Lots of later work by several producers.
		for o := int64(6); o < 2006; o++ {
			pid := []int64{pidW1, pidW3}[o%2]
			l.claim(0, orders0, pid, o)
			l.commit(0, pid)
		}
		l.catchUp(x)
		if !x.Committed(orders0, 5) {
			t.Fatal("offset 5 was forgotten after later commits")
		}
		// Restarts do not forget it either.
		x = Restore(roundTrip(t, x.Snapshot()), MarkersAtNextEpoch)
		if !x.Committed(orders0, 5) {
			t.Fatal("offset 5 was forgotten by a snapshot")
		}
		if s := x.Stats(); s.Ranges != 1 {
			t.Fatalf("the committed set has %d ranges, want 1: memory is bounded without pruning", s.Ranges)
		}
		stalled := l.claim(0, orders0, pidW2, 5)
		l.catchUp(x)
		wantCheck(t, x, stalled, orders0, []int64{5}, []bool{true}, false)
	})

	// (c) Shortcut: "a record delivered for the first time (delivery count
	// 1) cannot have been processed, so skip the Committed check and the
	// conflict". A broker restart can lose the in-flight state of the share
	// partition, so a record W1 committed but had not acknowledged comes
	// back with delivery count 1. With the shortcut W2 processes it as
	// new and commits its outputs a second time. The index has no delivery
	// counts: Committed and Check see only the ledger.
	t.Run("the check does not depend on delivery counts", func(t *testing.T) {
		l, x := newTestLedger(1), newIndex(1)
		l.claim(0, orders0, pidW1, 5) // W1: delivery count 1
		l.commit(0, pidW1)
		// W1 crashes before acknowledging; the broker restarts and offset 5
		// is AVAILABLE again with delivery count reset: W2 gets it "new".
		l.catchUp(x)
		if !x.Committed(orders0, 5) {
			t.Fatal("W2's pre-transform check must see offset 5 committed, whatever its delivery count")
		}
		// Even if W2's reader lagged at the pre-transform check, the claim
		// catches it.
		c := l.claim(0, orders0, pidW2, 5)
		l.catchUp(x)
		wantCheck(t, x, c, orders0, []int64{5}, []bool{true}, false)
	})

	// (d) Shortcut: "a snapshot only needs the committed sets; pending
	// claims are transient". A claim pending at the snapshot's position
	// whose commit marker comes after it is only resolvable if the snapshot
	// kept it with its producer id: a restored index that lacks it reads
	// the marker, resolves nothing, never marks the offset committed, and
	// lets another worker's claim of the same offset pass and commit.
	t.Run("a restart snapshot keeps the claims still pending at its ledger offset", func(t *testing.T) {
		l, x := newTestLedger(1), newIndex(1)
		l.claim(0, orders0, pidW3, 1)
		l.commit(0, pidW3)
		w1 := l.claim(0, orders0, pidW1, 5)
		l.catchUp(x)
		snap := x.Snapshot()
		if len(snap.Pending) != 1 || snap.Pending[0].Pos != w1 || snap.Pending[0].ProducerID != pidW1 {
			t.Fatalf("snapshot pending = %+v, want W1's claim at %v with its producer id", snap.Pending, w1)
		}
		broken := *roundTrip(t, snap)
		broken.Pending = nil // what a snapshot without pending claims would hold

		l.commit(0, pidW1) // W1's transaction commits after the snapshot
		// W1's lock expired before its acknowledgement; W2 gets offset 5.
		w2 := l.claim(0, orders0, pidW2, 5)

		good := Restore(roundTrip(t, snap), MarkersAtNextEpoch)
		l.catchUp(good)
		if !good.Committed(orders0, 5) {
			t.Fatal("the restored index must resolve the pending claim as committed")
		}
		wantCheck(t, good, w2, orders0, []int64{5}, []bool{true}, false)
		if s := good.Stats(); s.Pending != 1 {
			t.Fatalf("restored index has %d pending claims, want 1 (W2's)", s.Pending)
		}

		// The broken snapshot: W2's check passes, W2 commits, and offset 5
		// has the outputs of two committed transactions.
		bad := Restore(&broken, MarkersAtNextEpoch)
		l.catchUp(bad)
		if bad.Committed(orders0, 5) {
			t.Fatal("expected the broken snapshot to lose the commit")
		}
		wantCheck(t, bad, w2, orders0, []int64{5}, []bool{false}, false)
		l.commit(0, pidW2)
		l.catchUp(bad)
		l.catchUp(good)
		committedBy := committers(l, 0, orders0, 5)
		if len(committedBy) != 2 {
			t.Fatalf("offset 5 committed by %v, expected the duplicate (W1 and W2)", committedBy)
		}
	})

	t.Run("a restart snapshot keeps a pending claim a later claim waits for", func(t *testing.T) {
		l, x := newTestLedger(1), newIndex(1)
		l.claim(0, orders0, pidW1, 5)
		l.catchUp(x)
		snap := roundTrip(t, x.Snapshot())
		w2 := l.claim(0, orders0, pidW2, 5)

		good := Restore(snap, MarkersAtNextEpoch)
		l.catchUp(good)
		wantCheck(t, good, w2, orders0, []int64{5}, []bool{false}, true)
		l.commit(0, pidW1)
		l.catchUp(good)
		wantCheck(t, good, w2, orders0, []int64{5}, []bool{true}, false)

		broken := *snap
		broken.Pending = nil
		bad := Restore(&broken, MarkersAtNextEpoch)
		l.catchUp(bad)
		// W1's claim is invisible: W2 neither waits nor conflicts.
		wantCheck(t, bad, w2, orders0, []int64{5}, []bool{false}, false)
	})
}

// committers lists the producers whose committed transactions claimed
// offset o of k in ledger partition lp, reading the log directly.
func committers(l *testLedger, lp int32, k PartKey, o int64) []int64 {
	open := map[int64][]*Claim{}
	var out []int64
	for _, e := range l.logs[lp] {
		if e.claim != nil {
			open[e.pid] = append(open[e.pid], e.claim)
			continue
		}
		for _, c := range open[e.pid] {
			if e.commit && keyOf(c.Key()) == keyOf(k) && overlaps(c.Ranges, o) {
				out = append(out, e.pid)
			}
		}
		delete(open, e.pid)
	}
	return out
}

func TestSnapshotRestore(t *testing.T) {
	t.Run("a restored index keeps the ledger order of pending claims", func(t *testing.T) {
		l, x := newTestLedger(1), newIndex(1)
		c1 := l.claim(0, orders0, pidW1, 5)
		c2 := l.claim(0, orders0, pidW2, 5)
		c3 := l.claim(0, orders0, pidW3, 5)
		l.catchUp(x)
		for _, idx := range []*Index{x, Restore(roundTrip(t, x.Snapshot()), MarkersAtNextEpoch)} {
			wantCheck(t, idx, c1, orders0, []int64{5}, []bool{false}, false)
			wantCheck(t, idx, c2, orders0, []int64{5}, []bool{false}, true)
			wantCheck(t, idx, c3, orders0, []int64{5}, []bool{false}, true)
		}
	})

	t.Run("a restored index answers like the original", func(t *testing.T) {
		l, x := newTestLedger(1), newIndex(1)
		l.claim(0, orders0, pidW1, 1, 2, 5)
		l.claim(1, orders1, pidW1, 3)
		l.commit(0, pidW1)
		l.claim(0, orders0, pidW2, 7)                                     // pending
		l.claim(1, orders1, pidW2, 8)                                     // pending
		l.claim(0, PartKey{Topic: "noid", Partition: 2}, pidW3, 4)        // pending, no topic id
		l.claimGen(0, 9, PartKey{Topic: "other", Partition: 0}, pidW3, 4) // other generation
		l.catchUp(x)
		snap := x.Snapshot()
		for i := 1; i < len(snap.Pending); i++ {
			a, b := snap.Pending[i-1].Pos, snap.Pending[i].Pos
			if a.Partition > b.Partition || a.Partition == b.Partition && a.Offset >= b.Offset {
				t.Fatalf("snapshot pending not in ledger order: %+v", snap.Pending)
			}
		}
		y := Restore(roundTrip(t, snap), MarkersAtNextEpoch)
		if !reflect.DeepEqual(x.Stats(), y.Stats()) {
			t.Fatalf("Stats: original %+v, restored %+v", x.Stats(), y.Stats())
		}
		for lp := int32(0); lp < 2; lp++ {
			if x.Next(lp) != y.Next(lp) {
				t.Fatalf("Next(%d): original %d, restored %d", lp, x.Next(lp), y.Next(lp))
			}
		}
		// The same future on both.
		l.commit(1, pidW1)
		l.commit(0, pidW2)
		l.commit(0, pidW3)
		c1 := l.claim(1, orders1, pidW3, 3, 8, 9)
		c0 := l.claim(0, PartKey{Topic: "noid", Partition: 2}, pidW1, 4)
		l.catchUp(x)
		l.catchUp(y)
		for _, idx := range []*Index{x, y} {
			for _, k := range []PartKey{orders0, orders1, {Topic: "noid", Partition: 2}} {
				for o := int64(0); o < 10; o++ {
					if idx.Committed(k, o) != x.Committed(k, o) {
						t.Fatalf("Committed(%v, %d) differs", k, o)
					}
				}
			}
			wantCheck(t, idx, c1, orders1, []int64{3, 8, 9}, []bool{true, false, false}, true) // W2's claim of 8 is pending in lp 1
			wantCheck(t, idx, c0, PartKey{Topic: "noid", Partition: 2}, []int64{4}, []bool{true}, false)
		}
		// lp 1's marker for W2 is still to come: its claim is pending in both.
		if x.Stats().Pending != 3 || y.Stats().Pending != 3 {
			t.Fatalf("pending: original %d, restored %d, want 3", x.Stats().Pending, y.Stats().Pending)
		}
	})
}

// TestIndexNeverCreditsAClaimWithAnotherTransactionsMarker replays the
// ledger of the 1M-record soak that lost orders[1] 299228–299327 (issue
// 11): producer 6's claim at epoch 2206 lost its marker (a broker killed
// while markers were in flight), and the next marker of producer 6 — the
// COMMIT of its epoch-2208 transaction — was taken as its fate.
func TestIndexNeverCreditsAClaimWithAnotherTransactionsMarker(t *testing.T) {
	type rec struct {
		off    int64
		pid    int64
		epoch  int16
		claim  []int64 // first, last; nil for a marker
		commit bool
	}
	soak := []rec{
		{37704, 6, 2205, []int64{299128, 299227}, false},
		{37707, 6, 2206, nil, true}, // the epoch-2205 transaction's COMMIT
		{37714, 6, 2206, []int64{299228, 299327}, false},
		// (epoch 2207: no marker here — the transaction ended without one)
		{37716, 4, 2157, []int64{1, 1}, false}, // producer 4's claim whose marker was lost too
		{37717, 4, 2159, []int64{299228, 299327}, false},
		{37727, 3, 2085, []int64{299228, 299327}, false},
		{37754, 6, 2208, []int64{301028, 301127}, false},
		{37756, 6, 2209, nil, true}, // the epoch-2208 transaction's COMMIT
	}
	build := func(legacy bool) (*Index, map[int64]Pos) {
		x := newIndex(1)
		at := map[int64]Pos{}
		for _, r := range soak {
			pos := Pos{0, r.off}
			at[r.off] = pos
			epoch := r.epoch
			if r.claim == nil {
				if legacy {
					epoch = 1 // "the next marker of its producer id", whatever the epoch
				}
				x.ApplyMarker(pos, r.pid, epoch, r.commit)
				continue
			}
			if legacy {
				epoch = 0
			}
			x.Watch(pos)
			x.ApplyClaim(pos, &Claim{Gen: 1, Topic: orders1.Topic, TopicID: orders1.TopicID, Partition: orders1.Partition,
				Ranges: []Range{{r.claim[0], r.claim[1]}}, ProducerID: r.pid, Epoch: epoch})
		}
		return x, at
	}
	lost := []int64{299228, 299300, 299327}

	t.Run("the next-marker rule credits the claim with the later COMMIT (the bug)", func(t *testing.T) {
		x, at := build(true)
		if !x.Committed(orders1, 299228) || x.Fate(at[37714]) != FateCommitted {
			t.Fatal("the emulated old rule no longer reproduces the soak's loss; this test lost its teeth")
		}
	})

	x, at := build(false)
	t.Run("the claim whose marker was lost is orphaned, not committed", func(t *testing.T) {
		for _, o := range lost {
			if x.Committed(orders1, o) {
				t.Fatalf("orders[1]@%d committed on another transaction's marker", o)
			}
		}
		if f := x.Fate(at[37714]); f != FateOrphaned {
			t.Fatalf("fate of the epoch-2206 claim = %v, want orphaned", f)
		}
		if !x.Committed(orders1, 299128) || !x.Committed(orders1, 301028) {
			t.Fatal("the claims with their own markers (epochs 2205 and 2208) must be committed")
		}
		if s := x.Stats(); s.Orphans != 2 {
			t.Fatalf("Stats = %+v, want 2 orphans (producer 6 epoch 2206, producer 4 epoch 2157)", s)
		}
	})

	t.Run("the competing claims wait for it instead of taking the conflict path", func(t *testing.T) {
		for _, c := range []int64{37717, 37727} {
			conflict, blockers, err := x.Check(at[c], orders1, lost)
			if err != nil {
				t.Fatal(err)
			}
			if anyOf(conflict) || !slices.Contains(blockers, at[37714]) {
				t.Fatalf("Check of the claim at %d = conflict %v blockers %v; want no conflict, blocked by %v", c, conflict, blockers, at[37714])
			}
		}
	})

	t.Run("a resolution settles it and the next claim proceeds", func(t *testing.T) {
		x.ApplyResolution(Pos{0, 37800}, []Pos{at[37714]}, false)
		if f := x.Fate(at[37714]); f != FateAborted {
			t.Fatalf("fate after the resolution = %v, want aborted", f)
		}
		wantCheck(t, x, at[37717], orders1, lost, []bool{false, false, false}, false)
		wantCheck(t, x, at[37727], orders1, lost, []bool{false, false, false}, true) // behind producer 4's, still pending
	})
}

func TestIndexMarkerEpochs(t *testing.T) {
	claimAt := func(x *Index, off int64, pid int64, epoch int16, o int64) Pos {
		pos := Pos{0, off}
		x.ApplyClaim(pos, &Claim{Gen: 1, Topic: orders0.Topic, TopicID: orders0.TopicID, Partition: orders0.Partition,
			Ranges: []Range{{o, o}}, ProducerID: pid, Epoch: epoch})
		x.Watch(pos)
		return pos
	}
	t.Run("a marker at the claim's own epoch is not its marker under transaction.version 2", func(t *testing.T) {
		// e.g. kafka-transactions.sh abort of the hanging claim: it
		// writes the marker at the records' epoch.
		x := newIndex(1)
		c := claimAt(x, 0, 7, 40, 5)
		x.ApplyMarker(Pos{0, 1}, 7, 40, false)
		if f := x.Fate(c); f != FateUnknown {
			t.Fatalf("fate = %v, want still pending", f)
		}
		x.ApplyMarker(Pos{0, 2}, 7, 41, true)
		if f := x.Fate(c); f != FateCommitted || !x.Committed(orders0, 5) {
			t.Fatalf("fate = %v after the epoch-41 COMMIT, want committed", f)
		}
	})
	t.Run("kfake's markers at the records' epoch are accepted when declared", func(t *testing.T) {
		x := NewIndex(1, MarkersAtSameOrNextEpoch)
		c := claimAt(x, 0, 7, 40, 5)
		x.ApplyMarker(Pos{0, 1}, 7, 40, true)
		if f := x.Fate(c); f != FateCommitted {
			t.Fatalf("fate = %v, want committed", f)
		}
	})
	t.Run("a marker two epochs later orphans the claim", func(t *testing.T) {
		x := newIndex(1)
		c := claimAt(x, 0, 7, 40, 5)
		x.ApplyMarker(Pos{0, 1}, 7, 42, true)
		if f := x.Fate(c); f != FateOrphaned || x.Committed(orders0, 5) {
			t.Fatalf("fate = %v, want orphaned and not committed", f)
		}
	})
	t.Run("an orphan survives a snapshot and still blocks", func(t *testing.T) {
		x := newIndex(1)
		c := claimAt(x, 0, 7, 40, 5)
		claimAt(x, 1, 7, 41, 6) // the next transaction: c's marker was lost
		other := claimAt(x, 2, 8, 3, 5)
		y := Restore(roundTrip(t, x.Snapshot()), MarkersAtNextEpoch)
		if s := y.Stats(); s.Orphans != 1 || s.Pending != 2 {
			t.Fatalf("restored Stats = %+v, want 1 orphan and 2 pending", s)
		}
		wantCheck(t, y, other, orders0, []int64{5}, []bool{false}, true)
		y.ApplyResolution(Pos{0, 3}, []Pos{c}, true)
		wantCheck(t, y, other, orders0, []int64{5}, []bool{true}, false)
	})
	t.Run("pending claims of a snapshot without epochs are restored as orphans", func(t *testing.T) {
		x := newIndex(1)
		c := claimAt(x, 0, 7, 40, 5)
		old := roundTrip(t, x.Snapshot())
		old.Format = 0
		y := Restore(old, MarkersAtNextEpoch)
		info, ok := y.Claim(c)
		if !ok || !info.Orphan || info.Epoch != EpochUnknown {
			t.Fatalf("restored claim = %+v (tracked %v), want an orphan of unknown epoch", info, ok)
		}
		// Its marker (whatever epoch) can no longer settle it.
		y.ApplyMarker(Pos{0, 1}, 7, 41, true)
		if y.Committed(orders0, 5) {
			t.Fatal("an epoch-less claim was credited with a marker")
		}
	})
}
