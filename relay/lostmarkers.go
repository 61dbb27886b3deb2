package relay

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sharerelay/sharerelay/internal/failpoint"
	"github.com/sharerelay/sharerelay/internal/wait"
	"github.com/sharerelay/sharerelay/txn"
)

// Lost markers. Kafka keeps a transaction's records without a marker in
// the producer id's open span of the partition, and the next marker of the
// same producer id there ends them with its own result — whatever the
// coordinator decided for their transaction. A broker that loses a marker
// (the partition had no leader when the coordinator sent it: a broker
// restarted under a committing transaction) therefore breaks Kafka's
// atomicity: the next transaction of the producer id in that partition
// decides the earlier one's records there too. The worker guards this at
// both ends of a transaction:
//
//   - before it begins (checkSpans), after anything that may have lost
//     a marker: an open span of the producer id means a lost marker whose
//     outcome the worker may not know (a new process); it holds its
//     records and reports a hanging transaction, which an operator
//     completes.
//   - before it ends (commitCheck, abortCheck), when its producers
//     opened a connection or met a failure since the last check: the
//     disruption can come to light only while this transaction writes
//     (a restarted broker is reached through a new connection, and a
//     closed idle connection fails no request), after checkSpans found
//     nothing. A partition
//     where the span began before this transaction's first record was
//     continued from an earlier transaction of the producer id, whose
//     outcome the producer remembers (txn.Producer.Last). A commit goes
//     ahead only when each such earlier transaction committed (the
//     commit then writes its lost marker); otherwise the transaction is
//     aborted, and the committed records its abort discards are written
//     again.
//
// Those records are written again before the abort, not after it
// (restoreFirst): read back from the partition, written in a transaction
// of the worker's other producer and committed; only then is the span
// aborted. After the abort, a crash before the rewrite would lose them:
// the broker lost their marker, and the process would hold the only
// copy. Before it, a crash between the rewrite's commit and the abort
// leaves the continuing transaction open, and a transaction whose commit
// was never asked can only end aborted: the restarted instance's new
// producer fences it (InitProducerId aborts the id's open transaction),
// or the coordinator aborts it at its timeout. That abort marker decides
// the whole span, the earlier records included, so the originals stay
// aborted beside their committed copies: none lost, none twice. Should
// that marker be lost in turn, the span hangs, checkSpans holds it, and
// it is completed with the coordinator's decision for the span's last
// transaction (the epoch DescribeProducers shows): an abort. What this
// cannot cover is a crash while the continuing transaction is open and
// the copies are not committed yet (from its first write into the span
// to the rewrite's commit): its abort by fencing discards the earlier
// records before any copy exists. When the other producer cannot commit
// the copies first, they are written after the abort (restoreLost), and
// the log says that a crash before then loses them.

// errHangingSpan: a transaction of the worker's producer id is still open
// in a partition it writes although the producer has no transaction open:
// the broker lost that partition's marker (a single-node broker killed
// while it wrote markers). It is not retried away.
var errHangingSpan = errors.New("hanging transaction")

// errLostMarker: the open transaction continued the span an earlier
// transaction of its producer id left open, and must end as that one
// ended; it was aborted, and its records are written again.
var errLostMarker = errors.New("a lost transaction marker")

// openSpan is a transaction of a producer id open in one partition: its
// records from offset start, at epoch.
type openSpan struct {
	tp    txn.Partition
	start int64
	epoch int16
}

func (s openSpan) String() string {
	return fmt.Sprintf("%s[%d]@%d(epoch %d)", s.tp.Topic, s.tp.Partition, s.start, s.epoch)
}

// checkSpans makes sure, when prod is unchecked (txn.Producer.Unchecked),
// that no transaction of its producer id is open in a partition the
// worker writes, before a new transaction begins there: a new transaction
// would continue it (see Lost markers above). Instead the worker holds
// its records and reports a hanging transaction (errHangingSpan), which
// an operator completes (kafka-transactions.sh find-hanging / abort, or
// WriteTxnMarkers with the coordinator's decision); it goes on by itself
// once the span is closed. Open spans of the producer's transaction that
// just ended are markers still in flight: they are looked at again for a
// few seconds before they count. Partitions the principal may not
// describe (DescribeProducers needs READ on the topic) are skipped, and
// said once in the log.
func (w *worker) checkSpans(ctx context.Context, prod *txn.Producer) error {
	if !prod.Unchecked(w.disrupt.changedAt()) || len(w.spans) == 0 {
		return nil
	}
	if failpoint.Hit(failpoint.SkipSpanCheck) != nil {
		return nil
	}
	pid, _, err := prod.ProducerID(ctx)
	if err != nil {
		return err
	}
	adm := kadm.NewClient(prod.Client())
	for attempt := 0; ; attempt++ {
		open, err := w.openSpans(ctx, adm, pid)
		if err != nil {
			return err
		}
		if len(open) == 0 {
			prod.MarkChecked()
			return nil
		}
		if attempt == 3 {
			w.m.HangingSpans.WithLabelValues(w.label).Inc()
			w.log.Error("a transaction of this worker's producer id is open in a partition although the producer has none open: the broker lost its marker; holding the records until it is completed", "transactional_id", prod.TransactionalID(), "producer_id", pid, "partitions", open)
			return fmt.Errorf("%w: producer id %d in %v", errHangingSpan, pid, open)
		}
		if !wait.Sleep(ctx, time.Second) {
			return ctx.Err()
		}
	}
}

// commitCheck looks, before prod's open transaction commits, for
// partitions where it continued a span an earlier transaction of its
// producer id left open (see Lost markers above), when the worker's
// producers opened a connection or met a failure since the producer's
// last check. It returns whether the transaction may commit: only when
// every earlier transaction it continued committed. A check that cannot
// be made (the cluster does not answer within a few seconds) lets it
// commit, and leaves the producer unchecked for checkSpans.
func (w *worker) commitCheck(ctx context.Context, prod *txn.Producer) bool {
	pid, merged, ok := w.continued(ctx, prod, true)
	if !ok || len(merged) == 0 {
		return true
	}
	prod.MarkUnchecked() // the next transaction checks that the spans closed
	return w.mayCommitOver(pid, merged)
}

// abortCheck looks, before prod's open transaction aborts, for the spans
// it continued as commitCheck does, and returns the records of each
// committed earlier transaction that the abort discards with them, read
// back from their partitions, and the number of spans they come from: the
// caller writes them again. A check that cannot be made lets the
// transaction abort with none returned.
func (w *worker) abortCheck(ctx context.Context, prod *txn.Producer) ([]*kgo.Record, int) {
	pid, merged, ok := w.continued(ctx, prod, false)
	if !ok || len(merged) == 0 {
		return nil, 0
	}
	prod.MarkUnchecked()
	return w.toRestore(ctx, pid, merged)
}

// continued returns the partitions where prod's open transaction
// continued a span an earlier transaction of its producer id left open
// (continuedSpans), when prod is unchecked; ok is false when no check is
// due or it cannot be made. Before an abort (commit false) the records
// still in flight are dropped first: their offsets are not final.
func (w *worker) continued(ctx context.Context, prod *txn.Producer, commit bool) (pid int64, merged []lostMarker, ok bool) {
	if !prod.Unchecked(w.disrupt.changedAt()) || len(w.spans) == 0 {
		return 0, nil, false
	}
	if failpoint.Hit(failpoint.SkipEndSpanCheck) != nil {
		return 0, nil, false
	}
	if !commit {
		if err := prod.Drop(ctx); err != nil {
			w.log.Warn("cannot check the transaction for a lost marker before its abort", "err", err)
			return 0, nil, false
		}
	}
	return w.continuedSpans(ctx, prod, commit)
}

// continuedSpans returns the partitions where prod's open transaction
// continued a span an earlier transaction of its producer id left open,
// with how that one ended. When there are none and no other span is open,
// the producer is marked checked. ok is false when the check cannot be
// made (the cluster does not answer within a few seconds).
func (w *worker) continuedSpans(ctx context.Context, prod *txn.Producer, commit bool) (pid int64, merged []lostMarker, ok bool) {
	pid, _, err := prod.ProducerID(ctx)
	if err != nil {
		return 0, nil, false
	}
	adm := kadm.NewClient(prod.Client())
	var open []openSpan
	for attempt := 0; ; attempt++ {
		if open, err = w.openSpans(ctx, adm, pid); err == nil {
			break
		}
		if attempt == 4 || !wait.Sleep(ctx, time.Second) {
			w.log.Warn("cannot check the transaction for a lost marker before it ends", "commit", commit, "err", err)
			return 0, nil, false
		}
	}
	firsts := prod.OpenFirsts()
	others := false
	for _, s := range open {
		first, wrote := firsts[s.tp]
		switch {
		case !wrote:
			others = true // left open, not continued: checkSpans holds it
		case s.start < first:
			lm := lostMarker{span: s, first: first, outcome: txn.Unknown}
			if last, ok := prod.Last(s.tp); ok && last.First == s.start {
				lm.outcome = last.Outcome
			}
			merged = append(merged, lm)
		}
	}
	if len(merged) == 0 && !others {
		prod.MarkChecked()
	}
	return pid, merged, true
}

// mayCommitOver reports whether a transaction that continued the spans of
// merged may commit: only when every earlier transaction it continued
// committed (the commit then writes their lost markers).
func (w *worker) mayCommitOver(pid int64, merged []lostMarker) bool {
	if slices.ContainsFunc(merged, func(lm lostMarker) bool { return lm.outcome != txn.Committed }) {
		w.m.LostMarkers.WithLabelValues(w.label, "aborted").Inc()
		w.log.Error("the transaction continues a span an earlier transaction of its producer id left open (a lost marker) that did not commit: aborting it, so that the earlier records stay aborted", "producer_id", pid, "spans", merged)
		return false
	}
	w.m.LostMarkers.WithLabelValues(w.label, "committed").Inc()
	w.log.Warn("the transaction continues a span an earlier committed transaction of its producer id left open (a lost marker): its commit writes the missing marker", "producer_id", pid, "spans", merged)
	return true
}

// toRestore returns the records of each committed earlier transaction
// that the abort of the open one discards with the spans of merged, read
// back, and the number of spans they come from; records it cannot read
// back, claims and transactions of unknown outcome are aborted with it
// (said in the log).
func (w *worker) toRestore(ctx context.Context, pid int64, merged []lostMarker) (recs []*kgo.Record, spans int) {
	for _, lm := range merged {
		switch {
		case lm.outcome == txn.Committed && slices.Contains(w.writes, lm.span.tp.Topic):
			got, err := w.readSpan(ctx, pid, lm.span.tp, lm.span.start, lm.first)
			if err != nil {
				w.m.LostMarkers.WithLabelValues(w.label, "unknown").Inc()
				w.log.Error("aborting a transaction that continues a span an earlier committed transaction of its producer id left open (a lost marker), and its records there cannot be read to write them again: they are aborted with it", "producer_id", pid, "span", lm, "err", err)
				continue
			}
			recs = append(recs, got...)
			spans++
			w.log.Error("aborting a transaction that continues a span an earlier committed transaction of its producer id left open (a lost marker): its records there are written again", "producer_id", pid, "span", lm, "records", len(got))
		case lm.outcome == txn.Committed:
			// A claim of the ledger: its records were accepted, and
			// are not delivered again.
			w.m.LostMarkers.WithLabelValues(w.label, "claims").Inc()
			w.log.Error("aborting a transaction that continues a span an earlier committed transaction of its producer id left open in the claim ledger (a lost marker): its claims are discarded", "producer_id", pid, "span", lm)
		case lm.outcome == txn.Unknown:
			w.m.LostMarkers.WithLabelValues(w.label, "unknown").Inc()
			w.log.Error("aborting a transaction that continues a span left open by an earlier transaction of its producer id whose outcome this process does not know (a lost marker): its records there are aborted with it", "producer_id", pid, "span", lm)
		}
	}
	return recs, spans
}

// lostMarker is a partition where the open transaction continued the
// span of an earlier transaction of its producer id: the span, the open
// transaction's first record there, and how the earlier one ended.
type lostMarker struct {
	span    openSpan
	first   int64
	outcome txn.Outcome
}

func (lm lostMarker) String() string {
	return fmt.Sprintf("%v continued at %d from a transaction %v", lm.span, lm.first, lm.outcome)
}

// readSpan reads back, uncommitted, the records producer id pid wrote in
// partition tp at offsets from..to-1 (the earlier transaction's part of a
// continued span), as new records to produce again: topic, key, value,
// headers and timestamp. The worker keeps no copy of what it wrote (the
// records would hold their fetch buffers); the partition has them until
// the abort.
func (w *worker) readSpan(ctx context.Context, pid int64, tp txn.Partition, from, to int64) ([]*kgo.Record, error) {
	if w.newReader == nil {
		return nil, errors.New("no reader")
	}
	cl, err := w.newReader(kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{tp.Topic: {tp.Partition: kgo.NewOffset().At(from)}}),
		kgo.FetchIsolationLevel(kgo.ReadUncommitted()))
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	var out []*kgo.Record
	var ferr error // the last fetch error, for the message
	for next := from; next < to; {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("reading %s[%d] %d..%d: at %d: %w", tp.Topic, tp.Partition, from, to-1, next, errors.Join(err, ferr))
		}
		fs.EachError(func(_ string, _ int32, err error) { ferr = err })
		fs.EachRecord(func(r *kgo.Record) {
			next = max(next, r.Offset+1)
			if r.Offset < to && r.ProducerID == pid {
				out = append(out, &kgo.Record{Topic: r.Topic, Key: slices.Clone(r.Key), Value: slices.Clone(r.Value),
					Headers: slices.Clone(r.Headers), Timestamp: r.Timestamp})
			}
		})
	}
	return out, nil
}

// restoreFirst writes recs — committed records the current lane's open
// transaction is about to discard with the spans a lost marker left open,
// from that many spans — again before that transaction aborts, in a
// transaction of the worker's other producer that commits first (see Lost
// markers above). When that cannot be done, they are kept for restoreLost,
// which writes them after the abort: a crash before it loses them.
func (w *worker) restoreFirst(ctx context.Context, recs []*kgo.Record, spans int) {
	if err := w.restoreAside(ctx, recs); err != nil {
		w.restore = append(w.restore, recs...)
		w.m.LostMarkers.WithLabelValues(w.label, "restored_after_abort").Add(float64(spans))
		w.log.Error("cannot write again, before the abort that discards them with a span a lost marker left open, committed records through the worker's other producer: they are written after the abort, and a crash before that loses them", "records", len(recs), "err", err)
		return
	}
	w.m.LostMarkers.WithLabelValues(w.label, "restored").Add(float64(spans))
	w.log.Warn("wrote again the committed records the abort discards with a span a lost marker left open, through the worker's other producer, before the abort", "records", len(recs))
	// A crash here leaves the continuing transaction open: fencing or
	// its timeout aborts it, as the worker is about to.
	_ = failpoint.Hit(failpoint.LostMarkerRepair)
}

// restoreAside writes recs in a transaction of the worker's other lane
// (otherLane) and commits it, once the lane's producer id is checked for
// a span of its own left open (checkSpans). It returns an error when they
// may not be committed.
func (w *worker) restoreAside(ctx context.Context, recs []*kgo.Record) error {
	if err := failpoint.Hit(failpoint.RestoreAside); err != nil {
		return err
	}
	ln, done, err := w.otherLane(ctx)
	if err != nil {
		return err
	}
	defer done()
	if err := w.checkSpans(ctx, ln.prod); err != nil {
		return fmt.Errorf("checking %s for a transaction left open: %w", ln.prod.TransactionalID(), err)
	}
	return w.writeAgain(ctx, ln, recs)
}

// restoreLost writes again, in a transaction of the current lane, the
// committed records an abort discarded with a span they shared, which
// could not be written again before it (restoreFirst). They are kept until
// that transaction commits. A crash before it commits loses them: the
// broker lost a marker, and the process its only copy.
func (w *worker) restoreLost(ctx context.Context) error {
	if len(w.restore) == 0 {
		return nil
	}
	if err := w.writeAgain(ctx, w.cur, w.restore); err != nil {
		return fmt.Errorf("restoring records a lost marker discarded: %w", err)
	}
	w.log.Warn("wrote again the committed records a lost marker's abort discarded", "records", len(w.restore))
	for i := range w.restore {
		w.restore[i] = nil
	}
	w.restore = w.restore[:0]
	return nil
}

// writeAgain writes recs, committed records a lost marker's abort
// discards, in a transaction of ln's producer and commits it, if its own
// end check allows (commitCheck). These records have no claim in the
// ledger: a commit whose answer is lost (Unknown) cannot be resolved, and
// is taken as not committed — they are written again, a duplicate if it
// did commit.
func (w *worker) writeAgain(ctx context.Context, ln *lane, recs []*kgo.Record) error {
	abort := func(ctx context.Context) error { return w.abortAside(ctx, ln) }
	if ln == w.cur {
		abort = w.abort
	}
	if err := ln.prod.Begin(); err != nil {
		ln.stale = true
		return err
	}
	for _, r := range recs {
		r.Context = nil // an earlier attempt's context would fail this one at once
	}
	if err := ln.prod.Produce(ctx, recs...); err != nil {
		return errors.Join(err, abort(ctx))
	}
	if !w.commitCheck(ctx, ln.prod) {
		return errors.Join(errLostMarker, abort(ctx))
	}
	result, err := ln.prod.Commit(ctx)
	if result != txn.Committed {
		ln.stale = true
		return fmt.Errorf("commit %v: %w", result, err)
	}
	return nil
}

// abortAside aborts the open transaction of ln, a lane writing records
// again before the current lane's abort (restoreAside). Committed records
// its own abort discards with a span of its producer id a lost marker
// left open are kept for restoreLost: writing them first would need a
// third producer.
func (w *worker) abortAside(ctx context.Context, ln *lane) error {
	if recs, spans := w.abortCheck(ctx, ln.prod); len(recs) > 0 {
		w.restore = append(w.restore, recs...)
		w.m.LostMarkers.WithLabelValues(w.label, "restored_after_abort").Add(float64(spans))
	}
	if err := ln.prod.Abort(ctx); err != nil {
		ln.stale = true
		return err
	}
	return nil
}

// openSpans returns the transactions of producer id pid open in the
// partitions of the topics the worker writes (w.spans). Topics the client
// may not describe are skipped, and said once in the log. Topics are
// described one by one: kadm fails a whole request on one partition's
// authorization error.
func (w *worker) openSpans(ctx context.Context, adm *kadm.Client, pid int64) ([]openSpan, error) {
	var open []openSpan
	var denied []string
	for _, t := range w.spans {
		ts := kadm.TopicsSet{}
		ts.Add(t)
		dp, err := adm.DescribeProducers(ctx, ts)
		if errors.Is(err, kerr.TopicAuthorizationFailed) {
			denied = append(denied, t)
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("describing the producers of %s: %w", t, err)
		}
		for _, p := range dp.SortedPartitions() {
			if p.Err != nil {
				return nil, fmt.Errorf("describing the producers of %s[%d]: %w", p.Topic, p.Partition, p.Err)
			}
			if st, ok := p.ActiveProducers[pid]; ok && st.CurrentTxnStartOffset >= 0 {
				open = append(open, openSpan{tp: txn.Partition{Topic: p.Topic, Partition: p.Partition}, start: st.CurrentTxnStartOffset, epoch: st.ProducerEpoch})
			}
		}
	}
	if len(denied) > 0 && !w.spanDeniedLogged {
		w.spanDeniedLogged = true
		w.log.Warn("cannot check these topics for a transaction left open by a broker failure (DescribeProducers needs READ on them)", "topics", denied)
	}
	return open, nil
}
