package relay

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sharerelay/sharerelay/eos"
	"github.com/sharerelay/sharerelay/internal/failpoint"
	"github.com/sharerelay/sharerelay/internal/kafkaerr"
	"github.com/sharerelay/sharerelay/lineage"
	"github.com/sharerelay/sharerelay/metrics"
	"github.com/sharerelay/sharerelay/transform"
	"github.com/sharerelay/sharerelay/txn"
)

// maxErrorHeader bounds the error message copied into a dead letter.
const maxErrorHeader = 4096

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
	// most is the most records of one batch (batchMost).
	most int
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

	src  *shareSource
	prod *txn.Producer
	// newProducer creates a producer with the worker's transactional id;
	// the new one re-initialises the producer id, which aborts whatever
	// the old one left open.
	newProducer func(context.Context) (*txn.Producer, error)
	// stale is set when prod must be replaced before the next
	// transaction: it can no longer begin or abort transactions, or its
	// metadata is stale (a topic deleted and recreated).
	stale bool
	// spare is the worker's other transactional producer and its Guard
	// (exactly-once; nil otherwise): transactions alternate between the
	// two (see switchLane). prod, guard, stale and newProducer are the
	// current lane's.
	spare *lane
	// committing is the current lane's background commit (see lane).
	committing chan laneResult
	// failedInBackground counts background commits that did not commit,
	// for the run loop's backoff.
	failedInBackground int
	// fencedAt is when the producer was last fenced (see fenced), and
	// disrupt when its clients last failed to reach a broker
	// (fencing.go); nil in tests that do not track it.
	fencedAt time.Time
	disrupt  *disruptions
	guard    eos.Guard
	chain    *transform.Chain
	m        *metrics.Metrics
	health   *health
	log      *slog.Logger
	now      func() time.Time

	// spanDeniedLogged: checkSpans said once which topics it may not
	// describe.
	spanDeniedLogged bool
	// restore are committed records an abort discarded with the span a
	// lost marker left open, to write again (endCheck, restoreLost);
	// newReader creates a client to read them back (readSpan).
	restore   []*kgo.Record
	newReader func(...kgo.Opt) (*kgo.Client, error)

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
	for ctx.Err() == nil && !w.src.exhausted() {
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
		b, err := w.src.next(ctx, w.pollTimeout, w.most, w.linger)
		if b.len() > 0 {
			w.phase(metrics.PhasePoll, polled)
		} else {
			w.phase(metrics.PhaseIdle, polled)
		}
		if err != nil && b.len() == 0 {
			w.health.trouble(w.id, "polling the share group", err)
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
			return errors.Join(err, w.drain())
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
	return w.drain()
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
	// used (harvest).
	batchCommitting
)

// process takes one batch from transform to acknowledgement: the record's
// whole path. Every record of b has an acknowledgement chosen when it
// returns, whatever happened.
func (w *worker) process(ctx context.Context, b *batch) (res batchResult, err error) {
	start := w.now()
	stopRenew := w.renewWhileInFlight(ctx, b)
	twins := twins(b.recs)
	// finish acknowledges the batch once each record's fate is chosen:
	// when process returns, or — when the batch's last transaction
	// commits in the background (batchCommitting) — once that commit
	// has ended.
	finish := func() {
		stopRenew()
		for dup, kept := range twins {
			b.set(dup, b.acks[kept])
		}
		acked := time.Now()
		w.acknowledge(b)
		w.phase(metrics.PhaseAck, acked)
		d := time.Since(start)
		w.m.BatchSeconds.Observe(d.Seconds())
		if lock := w.limits.lock(); lock > 0 {
			w.m.LockBudget.WithLabelValues(w.label).Observe(d.Seconds() / lock.Seconds())
		}
	}
	defer func() {
		if res != batchCommitting {
			finish()
		}
	}()

	srcs := make([]eos.Source, b.len())
	redelivered := 0
	for i, r := range b.recs {
		srcs[i] = eos.Source{Topic: r.Topic, TopicID: w.topicIDs[r.Topic], Partition: r.Partition, Offset: r.Offset}
		if r.DeliveryCount() > 1 {
			redelivered++
		}
	}
	w.m.RecordsPolled.WithLabelValues(w.label).Add(float64(b.len()))
	if redelivered > 0 {
		w.m.Redeliveries.WithLabelValues(w.label).Add(float64(redelivered))
	}

	// 1. Records an earlier transaction already committed are done; a
	// second copy of a record in the batch is not written at all.
	transformed := time.Now()
	done := w.guard.Committed(srcs)
	todo := make([]int, 0, b.len())
	already := 0
	for i := range b.recs {
		if _, dup := twins[i]; dup {
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
	// 2. Transform. A filtered record (no outputs) is claimed with the
	// others, so the ledger's committed set has no hole for it.
	plans, release := w.transformAll(ctx, b, todo)
	var pending []int
	for _, i := range todo {
		if release[i] {
			b.set(i, kgo.AckRelease)
			continue
		}
		pending = append(pending, i)
	}
	w.phase(metrics.PhaseTransform, transformed)

	// 3. Write the plans in transactions.
	return w.writeAll(ctx, b, plans, srcs, pending, finish)
}

// writeAll writes the plans of pending in transactions until every one is
// committed (accept), committed by an earlier transaction (accept), or
// released. A transaction takes what every topic it writes can take in
// one batch (fit); an output too large for its topic on its own is
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
		now, later := w.fit(b, plans, pending, w.prod.MaxBatchBytes())
		out := w.write(ctx, plans, srcs, now)
		if out.kind == ready {
			if w.spare != nil && len(later) == 0 && len(suspects) == 0 {
				w.commitInBackground(ctx, b, plans, now, finish)
				pending = nil // the background commit chooses their fate
				return batchCommitting, nil
			}
			out = w.commit(ctx, w.prod, w.guard, len(now))
			w.stale = w.stale || out.stale
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
			// Outputs the cluster refuses for good. One source record
			// refused is the culprit: dead-letter it (a dead letter too
			// large is cut down) and write the same records again.
			// Several refused together may be one culprit and its batch
			// mates: write the others on, and the refused ones apart.
			if len(out.rejected) == 1 {
				for i, werr := range out.rejected {
					plans[i] = w.rejectedPlan(b.recs[i], plans[i], werr)
				}
				pending = append(now, later...)
				break
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
			suspects = append(suspects, refused[:h], refused[h:])
			pending = append(rest, later...)
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

// commitInBackground ends the current lane's open transaction, which
// wrote the plans of now, in a goroutine, and then acknowledges the batch
// (finish): accepted when it committed, released otherwise. The lane
// carries the goroutine's result until the worker next switches to it
// (harvest); the lane's producer and Guard are the goroutine's alone
// until then.
//
// The batch's records and outputs are written by then (produce waited for
// every one), and what is left only counts and acknowledges them: their
// payloads are dropped first, so that the records of two batches — the one
// committing and the next one the other lane writes — do not hold their
// fetch responses at once for the length of a commit.
func (w *worker) commitInBackground(ctx context.Context, b *batch, plans []plan, now []int, finish func()) {
	prod, guard := w.prod, w.guard
	b.dropPayloads()
	dropPayloads(plans)
	done := make(chan laneResult, 1)
	w.committing = done
	go func() {
		out := w.commit(ctx, prod, guard, len(now))
		res := laneResult{out: out, batch: batchDone}
		if out.kind == committed {
			w.committed(b, plans, now)
		} else {
			for _, i := range now {
				b.set(i, kgo.AckRelease)
			}
			res.batch = batchFailed
		}
		finish()
		done <- res
	}()
}

// dropPayloads lets go of the keys, values and headers of the plans'
// outputs, keeping how many there are and which are dead letters (see
// commitInBackground).
func dropPayloads(plans []plan) {
	for _, p := range plans {
		for _, o := range p.outs {
			o.Key, o.Value, o.Headers = nil, nil, nil
		}
	}
}

// laneResult is how a lane's background commit ended.
type laneResult struct {
	out   outcome
	batch batchResult
}

// harvest waits for the background commit of the current lane, if one
// is running, and takes its result: a producer to replace (stale), a
// failed batch for the backoff, or fencing, which it returns as an
// outcome (the worker handles it as it would the commit's own).
func (w *worker) harvest() *outcome {
	if w.committing == nil {
		return nil
	}
	r := <-w.committing
	w.committing = nil
	w.stale = w.stale || r.out.stale
	if r.batch == batchFailed {
		w.failedInBackground++
	}
	if r.out.kind == fenced {
		return &outcome{kind: fenced, err: r.out.err} // counted when it ended
	}
	return nil
}

// drain waits for every lane's background commit (and so for the
// acknowledgement of every batch): at shutdown, before the consumers
// close. A fenced lane is returned as an error.
func (w *worker) drain() error {
	var errs []error
	for range 2 {
		if out := w.harvest(); out != nil {
			errs = append(errs, w.fenced(out.err))
		}
		w.switchLane()
	}
	return errors.Join(errs...)
}

// fenced handles a fenced producer: another instance with our name, or our
// own client's recovery refused after a broker failure (see fencing.go). A
// fresh producer recovers the second; a twin fences us again at once,
// which stops the worker (the error returned).
func (w *worker) fenced(err error) error {
	now := time.Now()
	w.stale = true
	if w.disrupt != nil && w.disrupt.recent(now, fenceExcuse) {
		w.log.Warn("producer fenced soon after a broker failure (the coordinator forgot its epoch); re-creating it", "err", err)
		return nil // the batch is released
	}
	if !w.fencedAt.IsZero() && now.Sub(w.fencedAt) < fenceWindow {
		return fmt.Errorf("worker %d: fenced twice within %s: another instance runs with the same name: %w", w.id, fenceWindow, err)
	}
	w.fencedAt = now
	w.log.Warn("producer fenced; re-creating it (stops if fenced again soon: another instance with this name)", "err", err)
	return nil
}

// twins finds the records a batch holds more than once (the same topic,
// partition and offset) and maps each extra copy to the one that is
// written: the latest delivery. One batch can hold two deliveries of a
// record — after a broker restart reset the share sessions, or when a poll
// waited past its lock and another of the worker's consumers got the
// records again — and writing both would put the record's outputs in one
// transaction twice, which no claim can catch. The extra copy gets the
// written one's acknowledgement: only one of them still holds the lock.
func twins(recs []*kgo.Record) map[int]int {
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

// outcomeKind is how one transaction attempt ended.
type outcomeKind int8

const (
	committed    outcomeKind = iota // accept every pending record
	conflict                        // accept out.done, retry out.rest
	rejected                        // dead-letter out.rejected, retry all
	unavailable                     // pause, then retry all
	notCommitted                    // release all (the ledger decides who redoes them)
	fenced                          // stop the worker
	ready                           // written and checked: commit it
)

// outcome is the result of one transaction attempt.
type outcome struct {
	kind     outcomeKind
	err      error
	done     []int         // conflict: committed by an earlier transaction
	rest     []int         // conflict: to write again
	rejected map[int]error // rejected: plan index → the write error
	// txn is how the attempt counts in transactions_total
	// (metrics.TxnCommitted, TxnAborted, TxnUnknown), "" when it began
	// no transaction (or is ready and not ended yet).
	txn string
	// stale: the producer must be replaced before its next transaction.
	stale bool
}

// txnRecords are the records one transaction writes for its plans.
type txnRecords struct {
	recs   []*kgo.Record
	owner  []int    // owner[j]: the plan index of recs[j]
	topics []string // the topics of recs
	hasDLQ bool     // a dead letter among them
}

// collect gathers the records of the plans of pending.
func collect(plans []plan, pending []int) txnRecords {
	var t txnRecords
	for _, i := range pending {
		for _, r := range plans[i].outs {
			// A retry produces these records again; franz-go keeps the
			// first attempt's (cancelled) context on a record, which
			// would fail the retry at once.
			r.Context = nil
			t.recs = append(t.recs, r)
			t.owner = append(t.owner, i)
			if !slices.Contains(t.topics, r.Topic) {
				t.topics = append(t.topics, r.Topic)
			}
		}
		t.hasDLQ = t.hasDLQ || plans[i].deadLetter
	}
	return t
}

// write writes the plans of pending in one transaction, with their claims,
// up to its commit: ready, or the outcome of the step where it ended
// before. Once begun, the transaction is finished even if ctx is
// cancelled (shutdown lets the batch in flight commit or abort), bounded
// by the transaction timeout after which the coordinator aborts it
// anyway; commit ends a ready one.
func (w *worker) write(ctx context.Context, plans []plan, srcs []eos.Source, pending []int) (out outcome) {
	defer func() { w.countTxn(out) }()
	tctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), w.txnTimeout+5*time.Second)
	defer cancel()
	if out := w.prepare(ctx, tctx); out != nil {
		return *out
	}
	t := collect(plans, pending)
	claimSrcs := make([]eos.Source, len(pending))
	for j, i := range pending {
		claimSrcs[j] = srcs[i]
	}
	// The claims go in the same produce request as the outputs.
	claims, err := w.guard.Claims(tctx, w.prod, claimSrcs, t.topics)
	if err != nil {
		return w.failed("claim", err, nil)
	}
	if len(t.recs)+len(claims) == 0 {
		// Only filtered records, and nothing to claim (at-least-once):
		// nothing to write, nothing that could be duplicated.
		return outcome{kind: committed}
	}
	if out := w.produce(tctx, t, claims); out != nil {
		return *out
	}
	_ = failpoint.Hit(failpoint.AfterProduce)
	if len(claims) > 0 {
		if out := w.check(tctx, pending); out != nil {
			return *out
		}
	}
	if t.hasDLQ {
		if err := failpoint.Hit(failpoint.BeforeDeadLetterCommit); err != nil {
			return w.failed("failpoint", err, w.abort(tctx))
		}
	}
	if err := failpoint.Hit(failpoint.BeforeCommit); err != nil {
		return w.failed("failpoint", err, w.abort(tctx))
	}
	if !w.endCheck(tctx, true) {
		// Written again once the abort closed the span.
		return outcome{kind: unavailable, err: errors.Join(errLostMarker, w.abort(tctx)), txn: metrics.TxnAborted}
	}
	return outcome{kind: ready}
}

// countTxn counts a transaction attempt that ended in transactions_total.
func (w *worker) countTxn(out outcome) {
	if out.txn != "" {
		w.m.Transactions.WithLabelValues(w.label, out.txn).Inc()
	}
}

// prepare switches to the spare lane and makes its producer ready to
// begin: replaced if stale, and checked for a transaction of its producer
// id left open by a lost marker (checkSpans).
func (w *worker) prepare(ctx, tctx context.Context) *outcome {
	w.switchLane()
	if out := w.harvest(); out != nil {
		return out // the lane's background commit was fenced
	}
	if err := w.ensureProducer(ctx); err != nil {
		if errors.Is(err, txn.ErrFenced) {
			return &outcome{kind: fenced, err: err}
		}
		return &outcome{kind: notCommitted, err: err}
	}
	if err := w.checkSpans(tctx); err != nil {
		if errors.Is(err, txn.ErrFenced) {
			return &outcome{kind: fenced, err: err}
		}
		w.m.WriteFailures.WithLabelValues(w.label, kafkaerr.Cluster.String()).Inc()
		return &outcome{kind: unavailable, err: fmt.Errorf("checking for a transaction left open: %w", err)}
	}
	if err := w.restoreLost(tctx); err != nil {
		if errors.Is(err, txn.ErrFenced) {
			return &outcome{kind: fenced, err: err}
		}
		return &outcome{kind: unavailable, err: err}
	}
	return nil
}

// produce begins the transaction and writes t's records and the claims.
// On a produce error the transaction is aborted and the producer replaced
// (whatever the client still holds of this attempt must not join the next
// transaction; a new epoch starts with nothing buffered); records the
// cluster refuses for good make the outcome rejected.
func (w *worker) produce(ctx context.Context, t txnRecords, claims []*kgo.Record) *outcome {
	if err := w.prod.Begin(); err != nil {
		w.stale = true
		out := w.failed("begin", err, nil)
		return &out
	}
	produced := time.Now()
	err := w.prod.Produce(ctx, append(t.recs, claims...)...)
	w.phase(metrics.PhaseProduce, produced)
	if err == nil {
		return nil
	}
	aerr := w.abort(ctx)
	w.stale = true
	if rej := w.refused(t, err); len(rej) > 0 {
		w.m.WriteFailures.WithLabelValues(w.label, kafkaerr.Record.String()).Inc()
		return &outcome{kind: rejected, rejected: rej, err: err, txn: metrics.TxnAborted}
	}
	out := w.failed("produce", err, aerr)
	return &out
}

// refused returns the plans whose records the cluster refused for good
// (record-level errors), by plan index. A record refused as too large
// although it fits its topic was refused with its batch: the topic then
// takes less per transaction (tight) and the record is not blamed.
func (w *worker) refused(t txnRecords, err error) map[int]error {
	var we *txn.WriteError
	if !errors.As(err, &we) {
		return nil
	}
	rej := map[int]error{}
	sizes := w.sizes()
	for j, e := range we.Failed {
		if j >= len(t.recs) || kafkaerr.Classify(e) != kafkaerr.Record {
			continue
		}
		r := t.recs[j]
		if l, ok := sizes[r.Topic]; ok && errors.Is(e, kerr.MessageTooLarge) && recordSize(r) <= l-batchOverhead {
			if w.tight == nil {
				w.tight = map[string]int{}
			}
			w.tight[r.Topic]++
			continue
		}
		rej[t.owner[j]] = e
	}
	return rej
}

// check applies the claim ledger's conflict rule inside the open
// transaction (eos.Guard.Check): source records an earlier transaction
// committed make the outcome conflict (done, and the rest to write again).
func (w *worker) check(ctx context.Context, pending []int) *outcome {
	checked := time.Now()
	conflicts, err := w.guard.Check(ctx)
	if ferr := failpoint.Hit(failpoint.ClaimWaitTimeout); ferr != nil && err == nil {
		err = fmt.Errorf("%w (%w)", eos.ErrClaimWaitTimeout, ferr)
	}
	w.phase(metrics.PhaseClaimCheck, checked)
	if err != nil {
		aerr := w.abort(ctx)
		if errors.Is(err, eos.ErrClaimWaitTimeout) {
			// An earlier claim of these records is still unsettled (its
			// marker late or lost, the resolver not done). Retrying
			// cannot cure that, and releasing would cost each record a
			// delivery per ClaimWait until the broker archives it (seen:
			// a claim unsettled for minutes after broker kills, 83
			// records released on their tenth delivery). Hold them,
			// their locks renewed, and write them again once the
			// blocker is settled.
			w.log.Warn("transaction not committed: an earlier claim of its records is unsettled; holding them", "records", len(pending), "err", errors.Join(err, aerr))
			return &outcome{kind: unavailable, err: err, txn: metrics.TxnAborted}
		}
		if errors.Is(err, eos.ErrClaimNotPending) {
			w.log.Warn("transaction not committed; releasing its records", "stage", "claim check", "records", len(pending), "err", errors.Join(err, aerr))
			return &outcome{kind: notCommitted, err: err, txn: metrics.TxnAborted}
		}
		out := w.failed("claim check", err, aerr)
		return &out
	}
	if !slices.Contains(conflicts, true) {
		return nil
	}
	out := &outcome{kind: conflict, txn: metrics.TxnAborted}
	for j, i := range pending {
		if conflicts[j] {
			out.done = append(out.done, i)
		} else {
			out.rest = append(out.rest, i)
		}
	}
	if err := w.abort(ctx); err != nil {
		w.log.Warn("aborting after a claim conflict", "err", err)
	}
	return out
}

// commit ends prod's transaction, whose claims guard holds. When the
// EndTxn answer is lost the ledger tells whether it committed
// (eos.Guard.Resolve): the relay never guesses. It touches no lane state
// of the worker, so it can run in the background (commitInBackground);
// out.stale says the producer must be replaced.
func (w *worker) commit(ctx context.Context, prod *txn.Producer, guard eos.Guard, records int) (out outcome) {
	defer func() { w.countTxn(out) }()
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), w.txnTimeout+5*time.Second)
	defer cancel()
	committing := time.Now()
	result, err := prod.Commit(ctx)
	w.phase(metrics.PhaseCommit, committing)
	switch result {
	case txn.Committed:
		return outcome{kind: committed, txn: metrics.TxnCommitted}
	case txn.Unknown:
		ok, rerr := guard.Resolve(ctx)
		if rerr == nil {
			prod.Settle(ok) // what a later lost-marker check needs to know of it
		}
		resolution := "not-committed"
		switch {
		case rerr != nil:
			resolution = "unresolved"
		case ok:
			resolution = "committed"
		}
		w.m.AmbiguousCommits.WithLabelValues(w.label, resolution).Inc()
		w.log.Warn("commit outcome unknown; resolved", "committed", ok && rerr == nil, "resolution", resolution, "err", errors.Join(err, rerr))
		switch {
		case errors.Is(err, txn.ErrFenced):
			return outcome{kind: fenced, err: err, txn: metrics.TxnUnknown}
		case ok && rerr == nil:
			return outcome{kind: committed, txn: metrics.TxnUnknown}
		}
		return outcome{kind: notCommitted, err: errors.Join(err, rerr), txn: metrics.TxnUnknown}
	}
	// Not committed: the coordinator refused or aborted it.
	if errors.Is(err, txn.ErrFenced) {
		return outcome{kind: fenced, err: err, txn: metrics.TxnAborted}
	}
	if errors.Is(err, txn.ErrExtraRecords) {
		w.m.InvariantBreaks.Inc()
		w.log.Error("the brokers acknowledged more records in the transaction than the worker produced; aborted it rather than commit duplicates", "records", records, "err", err)
	}
	w.log.Warn("transaction not committed; releasing its records", "stage", "commit", "records", records, "err", err)
	// A refused commit can leave the client's transactional state
	// unusable (after the coordinator aborted a transaction that
	// outlived its timeout, franz-go keeps answering INVALID_TXN_STATE):
	// a fresh producer starts clean.
	return outcome{kind: notCommitted, err: err, txn: metrics.TxnAborted, stale: true}
}

// failed turns a transaction that failed before its commit into an
// outcome: fenced stops the worker; a destination- or cluster-level error
// pauses it with the records held; aerr is the abort's error (the producer
// is then replaced).
func (w *worker) failed(stage string, err, aerr error) outcome {
	class := kafkaerr.Classify(err)
	if errors.Is(err, txn.ErrFenced) || errors.Is(aerr, txn.ErrFenced) {
		return outcome{kind: fenced, err: errors.Join(err, aerr), txn: metrics.TxnAborted}
	}
	if class == kafkaerr.Destination || !kafkaerr.Unreachable(err) {
		// A deleted and recreated topic leaves the producer with a
		// stale topic ID, and an answer the broker gave may leave it in
		// a state it does not leave by itself; a fresh client starts
		// clean. (A broker that cannot be reached needs no new client.)
		w.stale = true
	}
	if class == kafkaerr.Record {
		class = kafkaerr.Cluster // a claim the broker refuses: not the record's fault
	}
	w.m.WriteFailures.WithLabelValues(w.label, class.String()).Inc()
	w.log.Debug("transaction failed", "stage", stage, "class", class, "err", errors.Join(err, aerr))
	return outcome{kind: unavailable, err: fmt.Errorf("%s: %w", stage, err), txn: metrics.TxnAborted}
}

// abort aborts the open transaction; when that fails the producer is
// replaced before the next one. Committed records the abort discards with
// a span a lost marker left open are written again (endCheck).
func (w *worker) abort(ctx context.Context) error {
	w.endCheck(ctx, false)
	if err := w.prod.Abort(ctx); err != nil {
		w.stale = true
		return err
	}
	return nil
}

// lane is one transactional producer of a worker, with its delivery Guard.
type lane struct {
	prod        *txn.Producer
	guard       eos.Guard
	stale       bool
	newProducer func(context.Context) (*txn.Producer, error)
	// committing is the lane's background commit, nil when none runs.
	committing chan laneResult
}

// switchLane makes the spare lane current. A worker alternates its
// transactions between two transactional ids: the coordinator is still
// writing the markers of a transaction just committed when the next one
// begins, and a produce into that next transaction under the same id
// meets CONCURRENT_TRANSACTIONS, which the broker retries after 20 ms
// (add.partitions.to.txn.retry.backoff.ms) — measured as a mean produce
// of 10 ms instead of 2.5 ms, and a doubled end-to-end latency, once a
// second consumer made the next batch ready at once.
func (w *worker) switchLane() {
	if w.spare == nil {
		return
	}
	cur := lane{prod: w.prod, guard: w.guard, stale: w.stale, newProducer: w.newProducer, committing: w.committing}
	w.prod, w.guard, w.stale, w.newProducer, w.committing = w.spare.prod, w.spare.guard, w.spare.stale, w.spare.newProducer, w.spare.committing
	*w.spare = cur
}

// ensureProducer replaces the producer when it is stale, retrying (with
// the worker reported not ready) until a new one is ready, ctx ends, or
// the worker is told to stop (a drain does not wait for the cluster). It
// returns an error wrapping txn.ErrFenced when a newer instance owns the
// transactional id, and an error when it gives up.
func (w *worker) ensureProducer(ctx context.Context) error {
	if !w.stale {
		return nil
	}
	w.prod.Close()
	for attempt := 0; ; attempt++ {
		p, err := w.newProducer(ctx)
		if err == nil {
			p.Inherit(w.prod)
			w.prod, w.stale = p, false
			w.m.ProducerResets.WithLabelValues(w.label).Inc()
			w.log.Info("transactional producer replaced")
			return nil
		}
		if errors.Is(err, txn.ErrFenced) {
			return fmt.Errorf("worker %d: %w", w.id, err)
		}
		w.health.trouble(w.id, "creating the transactional producer", err)
		if !w.hold(ctx, min(time.Duration(attempt+1)*500*time.Millisecond, 10*time.Second)) {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return fmt.Errorf("worker %d: stopping without a transactional producer: %w", w.id, err)
		}
	}
}

// pause holds the worker after a write failed for a reason retrying will
// cure (the cluster unreachable or slow, a topic missing or not writable,
// an earlier claim of its records not settled yet):
// it reports the worker not ready with the reason and waits, with a
// capped backoff, until the topics the pipeline writes are there again.
// It returns false when ctx ends or the worker is told to stop first: a
// drain at shutdown writes what can be written, and holding records for
// a cluster that does not take them would only delay the stop.
func (w *worker) pause(ctx context.Context, cause error) bool {
	class := kafkaerr.Classify(cause)
	reason := "cluster unavailable"
	switch {
	case errors.Is(cause, errHangingSpan):
		reason = "hanging transaction"
	case errors.Is(cause, eos.ErrClaimWaitTimeout):
		reason = "claim blocked"
	case class == kafkaerr.Destination:
		reason = "destination unavailable"
	}
	w.health.paused(w.id, reason, cause)
	for attempt := 1; ; attempt++ {
		if !w.hold(ctx, min(time.Duration(attempt)*500*time.Millisecond, 15*time.Second)) {
			return false
		}
		if err := w.ensureProducer(ctx); err != nil || ctx.Err() != nil || w.stopping() {
			return false
		}
		if err := w.probe(ctx); err != nil {
			w.health.paused(w.id, reason, err)
			continue
		}
		return true // try the transaction again
	}
}

// probe checks that the topics the pipeline writes exist and answer.
func (w *worker) probe(ctx context.Context) error {
	pctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	td, err := kadm.NewClient(w.prod.Client()).ListTopics(pctx, w.writes...)
	if err != nil {
		return err
	}
	for _, t := range w.writes {
		d, ok := td[t]
		switch {
		case !ok:
			return fmt.Errorf("topic %s does not exist", t)
		case d.Err != nil:
			return fmt.Errorf("topic %s: %w", t, d.Err)
		}
	}
	return nil
}

// phase records the time since start as spent in phase.
func (w *worker) phase(phase string, start time.Time) {
	w.m.PhaseSeconds.WithLabelValues(phase).Observe(time.Since(start).Seconds())
}

// countCommitted counts what a committed transaction wrote.
func (w *worker) countCommitted(plans []plan, pending []int) {
	var dead, filtered, produced int
	for _, i := range pending {
		switch p := &plans[i]; {
		case p.deadLetter:
			dead++
		case len(p.outs) == 0:
			filtered++
		default:
			produced += len(p.outs)
		}
	}
	for _, c := range []struct {
		vec *prometheus.CounterVec
		n   int
	}{{w.m.DeadLetters, dead}, {w.m.RecordsFiltered, filtered}, {w.m.RecordsProduced, produced}} {
		if c.n > 0 {
			c.vec.WithLabelValues(w.label).Add(float64(c.n))
		}
	}
}

// acknowledge hands the batch's acknowledgements to the client and counts
// them; a record released on its last delivery will be archived by the
// broker, which the relay must never cause (counted; should stay 0).
func (w *worker) acknowledge(b *batch) {
	limit := w.limits.deliveryLimit()
	for i, r := range b.recs {
		if b.acks[i] == kgo.AckRelease && limit > 0 && int(r.DeliveryCount()) >= limit {
			w.m.ReleasedOnLastDelivery.WithLabelValues(w.label).Inc()
			w.log.Warn("released a record on its last delivery: the broker will archive it",
				"topic", r.Topic, "partition", r.Partition, "offset", r.Offset, "delivery", r.DeliveryCount())
		}
	}
	for st, n := range w.src.ack(b) {
		w.m.Acks.WithLabelValues(w.label, ackLabel(st)).Add(float64(n))
	}
}

// renewWhileInFlight renews the acquisition locks of b every renewEvery
// until the returned function is called (which waits for the renewer to
// stop, so no renewal races the batch's final acknowledgements). Renewal is
// an optimisation: a lock that expires anyway only costs a redelivery,
// which the delivery protocol makes harmless.
func (w *worker) renewWhileInFlight(ctx context.Context, b *batch) func() {
	if w.renewEvery <= 0 {
		return func() {}
	}
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(w.renewEvery)
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case <-t.C:
			}
			fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), w.renewEvery)
			if err := w.src.renew(fctx, b); err != nil {
				w.log.Debug("renewing locks", "err", err)
			}
			cancel()
			w.m.Acks.WithLabelValues(w.label, metrics.AckRenew).Add(float64(b.len()))
		}
	}()
	return func() { close(stop); <-done }
}

// transformAll transforms the records todo of b, up to w.concurrency at a
// time (batch.transform_concurrency); the plans keep the batch's order
// whatever order the transforms finish in.
func (w *worker) transformAll(ctx context.Context, b *batch, todo []int) (plans []plan, release []bool) {
	plans, release = make([]plan, b.len()), make([]bool, b.len())
	s := newSlab(b.len())
	if w.concurrency <= 1 || len(todo) <= 1 {
		for _, i := range todo {
			plans[i], release[i] = w.transform(ctx, b.recs[i], s.at(i))
		}
		return plans, release
	}
	next := make(chan int)
	var wg sync.WaitGroup
	for range min(w.concurrency, len(todo)) {
		wg.Go(func() {
			for i := range next {
				plans[i], release[i] = w.transform(ctx, b.recs[i], s.at(i))
			}
		})
	}
	for _, i := range todo {
		next <- i
	}
	close(next)
	wg.Wait()
	return plans, release
}

// slab is the memory of one batch's transforms, carved per record (by its
// index in the batch): the transform's input, and the one output most
// records have with the plan's slice of it. A batch costs three
// allocations for these instead of three per record (make bench, 200 B:
// the relay's own CPU per record went mostly to the allocator and the
// garbage collector).
type slab struct {
	ins  []transform.Record
	recs []kgo.Record
	outs []*kgo.Record
}

func newSlab(n int) *slab {
	return &slab{ins: make([]transform.Record, n), recs: make([]kgo.Record, n), outs: make([]*kgo.Record, n)}
}

// slot is the part of a slab for one record.
type slot struct {
	in  *transform.Record
	rec *kgo.Record
	out []*kgo.Record // len 1
}

// at returns record i's slot.
func (s *slab) at(i int) slot {
	return slot{in: &s.ins[i], rec: &s.recs[i], out: s.outs[i : i+1 : i+1]}
}

// transform runs the chain on one record, in memory of its slot. It is safe
// for concurrent use on distinct slots.
func (w *worker) transform(ctx context.Context, r *kgo.Record, sl slot) (p plan, release bool) {
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
		in.Headers = make([]transform.Header, len(r.Headers))
		for i, h := range r.Headers {
			in.Headers[i] = transform.Header{Key: h.Key, Value: h.Value}
		}
	}
	outs, err := w.chain.Apply(ctx, in)
	if err != nil {
		if ctx.Err() != nil {
			return plan{}, true // shutting down: never dead-letter because of it
		}
		d := transform.Decide(err, r.DeliveryCount(), w.limits.attempts())
		if d.Release {
			w.log.Debug("transform failed; releasing for another delivery",
				"topic", r.Topic, "partition", r.Partition, "offset", r.Offset,
				"delivery", r.DeliveryCount(), "err", err)
			return plan{}, true
		}
		e, kind := d.Err, lineage.DLQKindPermanent
		if d.Exhausted {
			kind = lineage.DLQKindAttemptsExhausted
		}
		return plan{outs: []*kgo.Record{w.deadLetter(r, dlqReason{
			stage: lineage.DLQStageTransformation, step: e.Step, class: e.Class, kind: kind, msg: e.Error(),
		}, 0)}, deadLetter: true}, false
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
		out := sl.rec
		if len(outs) > 1 {
			out = new(kgo.Record)
		}
		*out = lineage.Output(o, w.outputTopic, src, i, len(outs))
		p.outs[i] = out
	}
	return p, false
}

// maxShrink is how far a dead letter is cut down before the relay gives
// up on it (see deadLetter).
const maxShrink = 3

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
		kgo.RecordHeader{Key: lineage.HeaderDLQWorker, Value: []byte(w.prod.TransactionalID())},
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

func ackLabel(s kgo.AckStatus) string {
	switch s {
	case kgo.AckAccept:
		return metrics.AckAccept
	case kgo.AckRelease:
		return metrics.AckRelease
	case kgo.AckReject:
		return metrics.AckReject
	default:
		return metrics.AckRenew
	}
}

// sleepCtx sleeps for d or until ctx ends; it reports whether it slept the
// whole time.
// hold waits d, or less when ctx ends or the worker is told to stop; it
// reports whether it waited all of d. The backoffs of a worker use it: a
// worker told to stop writes what it holds without waiting, or releases
// it.
func (w *worker) hold(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
	case <-w.src.stopped():
	}
	return false
}

// stopping reports whether the worker has been told to stop: it takes no
// new records, and writes (drains) those it holds.
func (w *worker) stopping() bool {
	select {
	case <-w.src.stopped():
		return true
	default:
		return false
	}
}

func sleepCtx(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}
