package relay

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sharerelay/sharerelay/eos"
	"github.com/sharerelay/sharerelay/internal/failpoint"
	"github.com/sharerelay/sharerelay/metrics"
	"github.com/sharerelay/sharerelay/transform"
	"github.com/sharerelay/sharerelay/txn"
)

// The record's path, one job a file, in the order a batch meets them:
//
//	worker.run            poll a batch from the share consumers (source.go)
//	  process             one batch, from transform to acknowledgement:
//	    notCommitted      skip what an earlier transaction committed (the Guard)
//	    transformBatch    run the transform chain (transform.go)
//	    writeAll          write the plans in transactions:
//	      budget.fit      what one transaction takes (sizing.go)
//	      attempt         one transaction: lane, claims, produce, check (attempt.go)
//	      commit          end it, here or in the background (attempt.go, lanes.go)
//	      pause           hold while the cluster takes no writes (pause.go)
//	    finish            acknowledge every record (source.go)
//
// Dead letters are built in deadletter.go, the lost-marker checks around
// each transaction are in lostmarkers.go, and a worker's clients are made
// and torn down in setup.go.

// run polls and processes batches until its source is stopped and every
// poll the source handed over has been processed (the drain at shutdown;
// see batch.drain_timeout), or ctx is cancelled (the drain's deadline):
// the batch in flight then is finished (committed, aborted or released),
// and every batch is fully acknowledged before run returns. It returns an
// error only when the worker cannot go on (fenced by a newer instance).
func (w *worker) run(ctx context.Context) error {
	w.m.WorkersRunning.Inc()
	defer w.m.WorkersRunning.Dec()
	backoff := 100 * time.Millisecond
	failures := 0 // batches in a row released after a transaction that did not commit
	for ctx.Err() == nil {
		if w.src.exhausted() {
			if !w.resizing || w.stopping() {
				break
			}
			if err := w.resize(ctx); err != nil {
				return err
			}
			continue
		}
		if err := w.quiesceForResize(ctx); err != nil {
			return errors.Join(err, w.awaitCommits())
		}
		// Never take records while unable to write them: a worker whose
		// transactions fail at once would acquire and release records
		// in a tight loop, burning their deliveries until the broker
		// archives them.
		if err := w.ensureProducer(ctx); err != nil {
			if errors.Is(err, txn.ErrFenced) {
				return err
			}
			break // shutting down
		}
		if failures > 0 {
			// Not when told to stop: the drain writes what the worker
			// holds without waiting.
			w.hold(ctx, min(time.Duration(failures)*100*time.Millisecond, 2*time.Second))
		}
		polled := time.Now()
		b, err := w.src.next(ctx, w.pollTimeout, w.perBatch, w.linger)
		if b.len() > 0 {
			w.phase(metrics.PhasePoll, polled)
		} else {
			w.phase(metrics.PhaseIdle, polled)
		}
		if err != nil && b.len() == 0 {
			w.health.trouble(w.id, w.pollDoing(), err)
			w.hold(ctx, backoff)
			backoff = min(2*backoff, 5*time.Second)
			continue
		}
		w.health.fine(w.id)
		backoff = 100 * time.Millisecond
		if b.len() == 0 {
			continue
		}
		if w.stopping() {
			w.drained += b.len()
		}
		res, err := w.process(ctx, b)
		if err != nil {
			return errors.Join(err, w.awaitCommits())
		}
		if w.stopping() && (res == batchFailed || res == batchStopped) {
			// A drain writes while writing works: after a transaction
			// that did not commit, or with the cluster unavailable, the
			// rest is released at once (each try could take the
			// transaction timeout).
			break
		}
		switch res {
		case batchDone:
			failures = 0
		case batchFailed:
			failures++
		}
		if w.failedInBackground > 0 {
			failures += w.failedInBackground
			w.failedInBackground = 0
		}
	}
	return w.awaitCommits()
}

// batchResult is how process ended a batch, for the backoff before the
// next poll.
type batchResult int8

const (
	batchDone    batchResult = iota // every record resolved by commits (or none to write)
	batchFailed                     // a transaction did not commit: the rest was released
	batchStopped                    // shutdown, a pause cut short, or a fenced producer
	// batchCommitting: the batch's last transaction commits in the
	// background on its lane (commitInBackground), which then
	// acknowledges the batch; its result is taken when the lane is next
	// used (awaitCommit).
	batchCommitting
)

// process takes one batch from transform to acknowledgement: the record's
// whole path. Every record of b has an acknowledgement chosen when it
// returns, whatever happened.
func (w *worker) process(ctx context.Context, b *batch) (res batchResult, err error) {
	start := w.now()
	stopRenew := w.renewWhileInFlight(ctx, b)
	copies := extraCopies(b.recs)
	// finish acknowledges the batch once each record's fate is chosen:
	// when process returns, or — when the batch's last transaction
	// commits in the background (batchCommitting) — once that commit
	// has ended.
	finish := func() { w.finish(b, copies, start, stopRenew) }
	defer func() {
		if res != batchCommitting {
			finish()
		}
	}()
	srcs := w.sources(b)

	// 1. Records an earlier transaction already committed are done; a
	// second copy of a record in the batch is not written at all.
	transformed := time.Now()
	todo := w.notCommitted(b, srcs, copies)
	// 2. Transform. A filtered record (no outputs) is claimed with the
	// others, so the ledger's committed set has no hole for it.
	plans, pending := w.transformBatch(ctx, b, todo)
	w.phase(metrics.PhaseTransform, transformed)
	// 3. Write the plans in transactions (writeAll), and 4. acknowledge
	// the batch (finish).
	return w.writeAll(ctx, b, plans, srcs, pending, finish)
}

// sources returns the claim ledger's name of each record of b, and counts
// the batch's records and redeliveries.
func (w *worker) sources(b *batch) []eos.Source {
	srcs := make([]eos.Source, b.len())
	redelivered := 0
	var topic string
	var id [16]byte
	for i, r := range b.recs {
		if i == 0 || r.Topic != topic {
			topic, id = r.Topic, w.topicIDs[r.Topic] // looked up once a run of one topic
		}
		srcs[i] = eos.Source{Topic: r.Topic, TopicID: id, Partition: r.Partition, Offset: r.Offset}
		if r.DeliveryCount() > 1 {
			redelivered++
		}
	}
	w.m.RecordsPolled.WithLabelValues(w.label).Add(float64(b.len()))
	if redelivered > 0 {
		w.m.Redeliveries.WithLabelValues(w.label).Add(float64(redelivered))
	}
	return srcs
}

// notCommitted returns the records of b to write: neither an extra copy
// of another record of the batch nor committed by an earlier transaction
// (those are accepted here).
func (w *worker) notCommitted(b *batch, srcs []eos.Source, copies map[int]int) []int {
	done := w.cur.guard.Committed(srcs)
	todo := make([]int, 0, b.len())
	already := 0
	for i := range b.recs {
		if _, dup := copies[i]; dup {
			continue
		}
		if done[i] {
			b.set(i, kgo.AckAccept)
			already++
			continue
		}
		todo = append(todo, i)
	}
	if already > 0 {
		w.m.AlreadyCommitted.WithLabelValues(w.label).Add(float64(already))
	}
	return todo
}

// writeAll writes the plans of pending in transactions until every one is
// committed (accept), committed by an earlier transaction (accept), or
// released. A transaction takes what every topic it writes can take in
// one batch (budget.fit); an output too large for its topic on its own is
// dead-lettered without being tried. Whatever is still pending when the
// worker gives up is released: it comes back, and the ledger decides who
// writes it.
//
// suspects are groups of records the cluster refused together (it refuses
// a whole record batch for one bad record, e.g. INVALID_RECORD for a
// keyless record in a compacted topic, and does not say which): they are
// written apart, halving each group that is refused again, until the
// refused records are alone and can be dead-lettered.
//
// The last transaction of a batch commits in the background when the
// worker has a second lane (exactly-once): the worker goes on with the
// next batch on the other lane while the coordinator ends this one, and
// this batch is acknowledged when its commit has ended (finish).
func (w *worker) writeAll(ctx context.Context, b *batch, plans []plan, srcs []eos.Source, pending []int, finish func()) (batchResult, error) {
	var suspects [][]int
	defer func() {
		for _, i := range pending {
			b.set(i, kgo.AckRelease)
		}
		for _, g := range suspects {
			for _, i := range g {
				b.set(i, kgo.AckRelease)
			}
		}
	}()
	for len(pending) > 0 || len(suspects) > 0 {
		if len(pending) == 0 {
			pending, suspects = suspects[0], suspects[1:]
		}
		bg := newBudget(w.sizes(), w.tight, w.cur.prod.MaxBatchBytes())
		pending = w.deadLetterTooLarge(b, plans, pending, bg)
		now, later := bg.fit(plans, pending)
		out := w.attempt(ctx, plans, srcs, now)
		if out.kind == ready {
			if w.spare != nil && len(later) == 0 && len(suspects) == 0 {
				w.commitInBackground(ctx, b, plans, now, finish)
				pending = nil // the background commit chooses their fate
				return batchCommitting, nil
			}
			out = w.commit(ctx, w.cur.prod, w.cur.guard, len(now))
			w.cur.stale = w.cur.stale || out.stale
		}
		switch out.kind {
		case committed:
			w.committed(b, plans, now)
			pending = later
		case conflict:
			// An earlier transaction committed some of these records:
			// they are done. The rest go in a new transaction.
			for _, i := range out.done {
				b.set(i, kgo.AckAccept)
				w.m.ClaimConflicts.WithLabelValues(w.label).Inc()
			}
			pending = append(out.rest, later...)
		case rejected:
			var apart [][]int
			pending, apart = w.rejectedApart(b, plans, out, now, later)
			suspects = append(suspects, apart...)
		case unavailable:
			// Nothing is wrong with the records: hold them (their locks
			// are renewed) until the cluster or the topic takes writes
			// again. On shutdown they are released.
			if !w.pause(ctx, out.err) {
				return batchStopped, nil
			}
		case notCommitted:
			return batchFailed, nil
		case fenced:
			return batchStopped, w.fenced(out.err)
		}
	}
	return batchDone, nil
}

// committed chooses the acknowledgement of the records a committed
// transaction wrote: accept, or reject for a dead letter under
// dead_letter.ack: reject.
func (w *worker) committed(b *batch, plans []plan, now []int) {
	w.health.fine(w.id)
	w.countCommitted(plans, now)
	_ = failpoint.Hit(failpoint.AfterCommitBeforeAck)
	for _, i := range now {
		ack := kgo.AckAccept
		if plans[i].deadLetter && w.rejectDeadLetters {
			ack = kgo.AckReject // dead_letter.ack: reject
		}
		b.set(i, ack)
	}
}

// worker runs the loop of its share consumers (batch.consumers) and its
// transactional producers (two under exactly-once, alternating; see
// switchLane).
type worker struct {
	id          int
	label       string // worker label value for metrics
	pipeline    string
	outputTopic string
	dlqTopic    string
	limits      *limits // shared with the Relay, which refreshes them
	txnTimeout  time.Duration
	pollTimeout time.Duration
	// linger is how long a small batch waits for the polls of the
	// worker's other consumers (batch.linger; see shareSource.next).
	linger time.Duration
	// perBatch is the most records of one batch (recordsPerBatch).
	perBatch int
	// concurrency is how many records are transformed at once
	// (batch.transform_concurrency).
	concurrency int
	// renewEvery is how often the locks of a batch in flight are renewed;
	// 0 disables renewal.
	renewEvery time.Duration
	// writes are the topics the pipeline writes, probed while paused.
	writes []string
	// spans are the topics a transaction may write (writes, and the claim
	// ledger under exactly-once), checked for a transaction of the
	// producer id left open (see checkSpans).
	spans []string
	// sizes returns each written topic's max.message.bytes; tight halves
	// a topic's budget per transaction after the broker refused a batch
	// whose records each fit (the topic's limit changed under us).
	sizes func() map[string]int
	tight map[string]int

	topicIDs map[string][16]byte // source topic IDs, resolved at start

	// src is where the worker's records come from. Only the worker's
	// loop replaces it (resize.go); srcMu guards it against stop, which
	// runs beside the loop. quit is closed by stop: the worker takes no
	// new records and drains what it holds.
	src      *shareSource
	srcMu    sync.Mutex
	quit     chan struct{}
	quitOnce sync.Once
	// size is src's share consumers and records a poll. want returns
	// the size the fleet asks of each worker now (nil: the size never
	// changes), resizing is set while src is quiesced for a resize, and
	// newSource creates the share consumers of a size and their source.
	size      size
	want      func() size
	resizing  bool
	newSource func(size) (*shareSource, error)
	// cur is the lane (a transactional producer and its Guard) the next
	// transaction uses; spare is the worker's other lane (exactly-once
	// with batch.background_commit; nil otherwise). Transactions
	// alternate between the two (switchLane), which are swapped whole.
	cur, spare *lane
	// failedInBackground counts background commits that did not commit,
	// for the run loop's backoff.
	failedInBackground int
	// fencedAt is when the producer was last fenced (see fenced), and
	// disrupt when its clients last failed to reach a broker
	// (fencing.go); nil in tests that do not track it.
	fencedAt time.Time
	disrupt  *disruptions
	chain    *transform.Chain
	// copiesAsIs: the chain writes every record as it came (no steps, no
	// formats; Chain.CopiesAsIs), with the time of writing (stampNow) or
	// the source's timestamp.
	copiesAsIs, stampNow bool
	m                    *metrics.Metrics
	health               *health
	log                  *slog.Logger
	now                  func() time.Time

	// spanDeniedLogged: checkSpans said once which topics it may not
	// describe.
	spanDeniedLogged bool
	// restore are committed records an abort discarded with the span a
	// lost marker left open that could not be written again before it
	// (restoreFirst), to write again after it (restoreLost); newReader
	// creates a client to read them back (readSpan).
	restore   []*kgo.Record
	newReader func(...kgo.Opt) (*kgo.Client, error)
	// crossCluster: the source is on a cluster of its own
	// (source.cluster), so reasons name the cluster that failed.
	crossCluster bool
	// newAside creates, for a worker with one lane under exactly-once,
	// a producer of the transactional id its second lane would have, to
	// write those records again before the abort (otherLane); nil
	// otherwise.
	newAside func(context.Context) (*txn.Producer, error)

	// rejectDeadLetters: a committed dead letter's record is REJECTed
	// rather than ACCEPTed (dead_letter.ack: reject).
	rejectDeadLetters bool

	// drained counts the records of the batches taken after the worker
	// was told to stop (logged when it stops).
	drained int
}

// plan is what one source record of a batch turned into.
type plan struct {
	outs       []*kgo.Record // outputs, or the single dead letter; none when filtered
	deadLetter bool
	// shrunk counts how far a dead letter too large for its topic has
	// been cut down (0: whole; 1: source value left out; 2: source
	// headers too; 3: key too; see maxShrink).
	shrunk int
}
