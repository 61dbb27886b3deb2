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
//   - before it ends (endCheck), when its producers opened a connection
//     or met a failure since the last check: the disruption can come to
//     light only while this transaction writes (a restarted broker is
//     reached through a new connection, and a closed idle connection
//     fails no request), after checkSpans found nothing. A partition
//     where the span began before this transaction's first record was
//     continued from an earlier transaction of the producer id, whose
//     outcome the producer remembers (txn.Producer.Last). A commit goes
//     ahead only when each such earlier transaction committed (the
//     commit then writes its lost marker); otherwise the transaction is
//     aborted, and the committed records its abort discards are written
//     again in a new transaction (restoreLost).

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

// checkSpans makes sure, when the producer is unchecked (txn.Producer.Unchecked),
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
func (w *worker) checkSpans(ctx context.Context) error {
	if !w.cur.prod.Unchecked(w.disrupt.changedAt()) || len(w.spans) == 0 {
		return nil
	}
	if failpoint.Hit(failpoint.SkipSpanCheck) != nil {
		return nil
	}
	pid, _, err := w.cur.prod.ProducerID(ctx)
	if err != nil {
		return err
	}
	adm := kadm.NewClient(w.cur.prod.Client())
	for attempt := 0; ; attempt++ {
		open, err := w.openSpans(ctx, adm, pid)
		if err != nil {
			return err
		}
		if len(open) == 0 {
			w.cur.prod.MarkChecked()
			return nil
		}
		if attempt == 3 {
			w.m.HangingSpans.WithLabelValues(w.label).Inc()
			w.log.Error("a transaction of this worker's producer id is open in a partition although the producer has none open: the broker lost its marker; holding the records until it is completed", "producer_id", pid, "partitions", open)
			return fmt.Errorf("%w: producer id %d in %v", errHangingSpan, pid, open)
		}
		if !wait.Sleep(ctx, time.Second) {
			return ctx.Err()
		}
	}
}

// endCheck looks, before the open transaction ends, for partitions where
// it continued a span an earlier transaction of its producer id left open
// (see Lost markers above), when the worker's producers opened a
// connection or met a failure since the producer's last check. It returns
// whether the transaction may end as intended: a commit only when every
// earlier transaction it continued committed. Before an abort (commit
// false) it queues, for restoreLost, the records of each committed earlier
// transaction the abort discards. A check that cannot be made (the
// cluster does not answer within a few seconds) lets the transaction end
// as intended, and leaves the producer unchecked for checkSpans.
func (w *worker) endCheck(ctx context.Context, commit bool) bool {
	if !w.cur.prod.Unchecked(w.disrupt.changedAt()) || len(w.spans) == 0 {
		return commit
	}
	if failpoint.Hit(failpoint.SkipEndSpanCheck) != nil {
		return commit
	}
	if !commit {
		// The offsets of records still in flight are not final.
		if err := w.cur.prod.Drop(ctx); err != nil {
			w.log.Warn("cannot check the transaction for a lost marker before its abort", "err", err)
			return commit
		}
	}
	pid, merged, ok := w.continuedSpans(ctx, commit)
	if !ok || len(merged) == 0 {
		return commit
	}
	w.cur.prod.MarkUnchecked() // the next transaction checks that the spans closed
	if commit {
		return w.mayCommitOver(pid, merged)
	}
	w.queueRestore(ctx, pid, merged)
	return false
}

// continuedSpans returns the partitions where the open transaction of
// producer id pid continued a span an earlier transaction of the producer
// id left open, with how that one ended. When there are none and no other
// span is open, the producer is marked checked. ok is false when the check
// cannot be made (the cluster does not answer within a few seconds).
func (w *worker) continuedSpans(ctx context.Context, commit bool) (pid int64, merged []lostMarker, ok bool) {
	pid, _, err := w.cur.prod.ProducerID(ctx)
	if err != nil {
		return 0, nil, false
	}
	adm := kadm.NewClient(w.cur.prod.Client())
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
	firsts := w.cur.prod.OpenFirsts()
	others := false
	for _, s := range open {
		first, wrote := firsts[s.tp]
		switch {
		case !wrote:
			others = true // left open, not continued: checkSpans holds it
		case s.start < first:
			lm := lostMarker{span: s, first: first, outcome: txn.Unknown}
			if last, ok := w.cur.prod.Last(s.tp); ok && last.First == s.start {
				lm.outcome = last.Outcome
			}
			merged = append(merged, lm)
		}
	}
	if len(merged) == 0 && !others {
		w.cur.prod.MarkChecked()
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

// queueRestore queues, for restoreLost, the records of each committed
// earlier transaction that the abort of the open one discards with the
// spans of merged; records it cannot read back, claims and transactions
// of unknown outcome are aborted with it (said in the log).
func (w *worker) queueRestore(ctx context.Context, pid int64, merged []lostMarker) {
	for _, lm := range merged {
		switch {
		case lm.outcome == txn.Committed && slices.Contains(w.writes, lm.span.tp.Topic):
			recs, err := w.readSpan(ctx, pid, lm.span.tp, lm.span.start, lm.first)
			if err != nil {
				w.m.LostMarkers.WithLabelValues(w.label, "unknown").Inc()
				w.log.Error("aborting a transaction that continues a span an earlier committed transaction of its producer id left open (a lost marker), and its records there cannot be read to write them again: they are aborted with it", "producer_id", pid, "span", lm, "err", err)
				continue
			}
			w.restore = append(w.restore, recs...)
			w.m.LostMarkers.WithLabelValues(w.label, "restored").Inc()
			w.log.Error("aborting a transaction that continues a span an earlier committed transaction of its producer id left open (a lost marker): its records there are written again", "producer_id", pid, "span", lm, "records", len(recs))
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

// restoreLost writes again, in a transaction of their own, the committed
// records an abort discarded with a span they shared (endCheck). They
// are kept until that transaction commits. A crash before it commits
// loses them: the broker lost a marker, and the process its only copy.
func (w *worker) restoreLost(ctx context.Context) error {
	if len(w.restore) == 0 {
		return nil
	}
	if err := w.cur.prod.Begin(); err != nil {
		w.cur.stale = true
		return fmt.Errorf("restoring records a lost marker discarded: %w", err)
	}
	for _, r := range w.restore {
		r.Context = nil // an earlier attempt's context would fail this one at once
	}
	if err := w.cur.prod.Produce(ctx, w.restore...); err != nil {
		return errors.Join(fmt.Errorf("restoring records a lost marker discarded: %w", err), w.abort(ctx))
	}
	if !w.endCheck(ctx, true) {
		return errors.Join(fmt.Errorf("restoring records a lost marker discarded: %w", errLostMarker), w.abort(ctx))
	}
	result, err := w.cur.prod.Commit(ctx)
	if result != txn.Committed {
		// Unknown: written again if it did not commit; a duplicate if
		// it did. The ledger holds no claim for these records.
		w.cur.stale = true
		return fmt.Errorf("restoring records a lost marker discarded: commit %v: %w", result, err)
	}
	w.log.Warn("wrote again the committed records a lost marker's abort discarded", "records", len(w.restore))
	for i := range w.restore {
		w.restore[i] = nil
	}
	w.restore = w.restore[:0]
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
