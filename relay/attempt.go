package relay

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sharerelay/sharerelay/eos"
	"github.com/sharerelay/sharerelay/internal/failpoint"
	"github.com/sharerelay/sharerelay/internal/kafkaerr"
	"github.com/sharerelay/sharerelay/metrics"
	"github.com/sharerelay/sharerelay/txn"
)

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

// collect gathers the records of the plans of pending, with room after
// them for spare more (the transaction's claims).
func collect(plans []plan, pending []int, spare int) txnRecords {
	n := 0
	for _, i := range pending {
		n += len(plans[i].outs)
	}
	t := txnRecords{recs: make([]*kgo.Record, 0, n+spare), owner: make([]int, 0, n)}
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

// attempt writes the plans of pending in one transaction, with their claims,
// up to its commit: ready, or the outcome of the step where it ended
// before. Once begun, the transaction is finished even if ctx is
// cancelled (shutdown lets the batch in flight commit or abort), bounded
// by the transaction timeout after which the coordinator aborts it
// anyway; commit ends a ready one.
func (w *worker) attempt(ctx context.Context, plans []plan, srcs []eos.Source, pending []int) (out outcome) {
	defer func() { w.countTxn(out) }()
	tctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), w.txnTimeout+5*time.Second)
	defer cancel()
	if out := w.readyLane(ctx, tctx); out != nil {
		return *out
	}
	// A claim a source partition: at most as many as the runs of one
	// partition in the transaction's sources.
	claimSrcs, runs := make([]eos.Source, len(pending)), 0
	for j, i := range pending {
		claimSrcs[j] = srcs[i]
		if j == 0 || srcs[i].Partition != claimSrcs[j-1].Partition || srcs[i].Topic != claimSrcs[j-1].Topic {
			runs++
		}
	}
	t := collect(plans, pending, runs)
	// The claims go in the same produce request as the outputs.
	claims, err := w.cur.guard.Claims(tctx, w.cur.prod, claimSrcs, t.topics, eos.Since(t.recs))
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
	if !w.commitCheck(tctx, w.cur.prod) {
		// Written again once the abort closed the span.
		return outcome{kind: unavailable, err: errors.Join(errLostMarker, w.abort(tctx)), txn: metrics.TxnAborted}
	}
	return outcome{kind: ready}
}

// readyLane switches to the spare lane and makes its producer ready to
// begin: replaced if stale, and checked for a transaction of its producer
// id left open by a lost marker (checkSpans).
func (w *worker) readyLane(ctx, tctx context.Context) *outcome {
	w.switchLane()
	if out := w.awaitCommit(); out != nil {
		return out // the lane's background commit was fenced
	}
	if err := w.ensureProducer(ctx); err != nil {
		if errors.Is(err, txn.ErrFenced) {
			return &outcome{kind: fenced, err: err}
		}
		return &outcome{kind: notCommitted, err: err}
	}
	if err := w.checkSpans(tctx, w.cur.prod); err != nil {
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
	if err := w.cur.prod.Begin(); err != nil {
		w.cur.stale = true
		out := w.failed("begin", err, nil)
		return &out
	}
	produced := time.Now()
	err := w.cur.prod.Produce(ctx, append(t.recs, claims...)...)
	w.phase(metrics.PhaseProduce, produced)
	if err == nil {
		return nil
	}
	aerr := w.abort(ctx)
	w.cur.stale = true
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
	conflicts, err := w.cur.guard.Check(ctx)
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
			// delivery per ClaimWait until the broker archives it (a
			// claim can stay unsettled for minutes after a broker
			// crash; docs/decisions/claim-wait.md). Hold them, their
			// locks renewed, and write them again once the blocker is
			// settled.
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
		w.cur.stale = true
	}
	if class == kafkaerr.Record {
		class = kafkaerr.Cluster // a claim the broker refuses: not the record's fault
	}
	w.m.WriteFailures.WithLabelValues(w.label, class.String()).Inc()
	w.log.Debug("transaction failed", "stage", stage, "class", class, "err", errors.Join(err, aerr))
	return outcome{kind: unavailable, err: fmt.Errorf("%s: %w", stage, err), txn: metrics.TxnAborted}
}

// abort aborts the current lane's open transaction; when that fails the
// producer is replaced before the next one. Committed records the abort
// discards with a span a lost marker left open are written again first,
// through the worker's other producer (abortCheck, restoreFirst).
func (w *worker) abort(ctx context.Context) error {
	kept := len(w.restore)
	if recs, spans := w.abortCheck(ctx, w.cur.prod); len(recs) > 0 {
		w.restoreFirst(ctx, recs, spans)
	}
	err := w.cur.prod.Abort(ctx)
	if len(w.restore) > kept {
		// Not written again first: a crash here loses them.
		_ = failpoint.Hit(failpoint.LostMarkerRepair)
	}
	if err != nil {
		w.cur.stale = true
		return err
	}
	return nil
}
