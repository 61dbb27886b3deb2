package relay

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sharerelay/sharerelay/config"
	"github.com/sharerelay/sharerelay/internal/failpoint"
	"github.com/sharerelay/sharerelay/internal/wait"
	"github.com/sharerelay/sharerelay/txn"
)

// Retired transactional ids. A worker checks the partitions it writes for
// a span its own producer id left open when a broker lost a marker
// (checkSpans, commitCheck, abortCheck), so it checks only the transactional ids it
// uses. An id this instance used before and no longer does — worker 3
// after workers went from 4 to 3, or a worker's second producer ("….1")
// after batch.background_commit was turned off — is checked by nobody,
// and a span it left open stalls every read_committed reader of that
// partition (Kafka's last stable offset stops there) without a word from
// the relay. watchRetiredIDs looks for them: at start, and again while a
// retired id has a transaction in progress or a span open. It holds no
// records (no worker writes with those ids any more): it reports each
// span (log, sharerelay_retired_hanging_transactions) until an operator
// completes it (kafka-transactions.sh find-hanging / abort), as for a
// worker's own hanging transaction.

// retiredLookEvery is how often watchRetiredIDs looks again while it has
// something to watch; retiredConfirmAfter is how long a span must stay
// open, with its coordinator done with the transaction, to be reported
// (markers may still be in flight); retiredWarnEvery rate-limits the
// WARN of a look that keeps failing.
const (
	retiredLookEvery    = 30 * time.Second
	retiredConfirmAfter = 5 * time.Second
	retiredWarnEvery    = 5 * time.Minute
)

// retiredSpan is a span open in partition tp of a retired transactional
// id's producer id.
type retiredSpan struct {
	txnID string
	state string // the coordinator's state of the id
	openSpan
}

func (s retiredSpan) String() string {
	return fmt.Sprintf("%s (%s) %v", s.txnID, s.state, s.openSpan)
}

// key identifies the span across looks (its id's coordinator state may
// change meanwhile).
func (s retiredSpan) key() string { return s.txnID + " " + s.openSpan.String() }

// inProgress reports whether a coordinator in state is still ending the
// id's transaction (it writes the markers, or aborts it at its timeout).
func inProgress(state string) bool {
	return state == "Ongoing" || strings.HasPrefix(state, "Prepare")
}

// inUseTransactionalIDs returns the transactional ids this instance's
// workers use with the pipeline's current settings.
func (r *Relay) inUseTransactionalIDs() map[string]bool {
	ids := make(map[string]bool)
	for i := range r.p.Workers {
		for l := range r.lanes() {
			ids[r.laneTransactionalID(i, l)] = true
		}
	}
	return ids
}

// retiredPattern matches every transactional id a worker of this instance
// may have used: TransactionalID(i), and with a lane suffix.
func (r *Relay) retiredPattern() *regexp.Regexp {
	return regexp.MustCompile("^" + regexp.QuoteMeta(r.transactionalIDPrefix()) + `[0-9]+(\.[0-9]+)?$`)
}

// watchRetiredIDs looks for spans left open by this instance's retired
// transactional ids (see Retired transactional ids above) until none is
// left to watch or ctx ends. A look the cluster refuses for good (an old
// broker, a principal that may not list transactions) is logged once and
// ends the watch; any other failure is looked at again. It never stops
// the relay.
func (r *Relay) watchRetiredIDs(ctx context.Context) error {
	if r.p.Delivery != config.ExactlyOnce || failpoint.Hit(failpoint.SkipRetiredCheck) != nil {
		return nil
	}
	cl, err := kgo.NewClient(r.clientOpts()...)
	if err != nil {
		return fmt.Errorf("relay: %w", err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	inUse, pattern := r.inUseTransactionalIDs(), r.retiredPattern()
	topics := r.p.OutputTopics()
	topics = append(topics, r.p.Ledger.Topic)

	suspect := map[string]time.Time{} // span key → first seen, coordinator done
	reported := map[string]bool{}     // span key → reported hanging by the last look
	var warned time.Time              // the last WARN of a failed look
	for {
		spans, busy, err := retiredSpans(ctx, adm, pattern, inUse, topics)
		switch {
		case ctx.Err() != nil:
			return nil
		case errors.Is(err, kerr.TransactionalIDAuthorizationFailed) || errors.Is(err, kerr.ClusterAuthorizationFailed) ||
			errors.Is(err, kerr.UnsupportedVersion):
			r.log.Warn("cannot check the transactional ids this instance no longer uses for a transaction left open by a broker failure", "err", err)
			return nil
		case err != nil:
			if time.Since(warned) >= retiredWarnEvery {
				r.log.Warn("checking the transactional ids this instance no longer uses for a transaction left open; looking again", "err", err, "every", retiredLookEvery)
				warned = time.Now()
			}
			busy = true
		}
		hanging, waiting := confirmHanging(spans, suspect, time.Now())
		busy = busy || waiting
		r.reportRetired(hanging, reported)
		if len(hanging) == 0 && !busy {
			return nil
		}
		again := retiredLookEvery
		if len(suspect) > len(hanging) {
			again = retiredConfirmAfter
		}
		if !wait.Sleep(ctx, again) {
			return nil
		}
	}
}

// confirmHanging returns the spans of a look that hang: open, their id's
// coordinator done with the transaction, and seen so for
// retiredConfirmAfter (markers may still be in flight). suspect remembers
// when each span was first seen so across looks (now is this look's
// time); waiting reports a span not confirmed yet either way.
func confirmHanging(spans []retiredSpan, suspect map[string]time.Time, now time.Time) (hanging []retiredSpan, waiting bool) {
	seen := map[string]bool{}
	for _, s := range spans {
		k := s.key()
		seen[k] = true
		if inProgress(s.state) {
			waiting = true
			continue
		}
		first, ok := suspect[k]
		if !ok {
			suspect[k], waiting = now, true
			continue
		}
		if now.Sub(first) < retiredConfirmAfter {
			waiting = true
			continue
		}
		hanging = append(hanging, s)
	}
	maps.DeleteFunc(suspect, func(k string, _ time.Time) bool { return !seen[k] })
	return hanging, waiting
}

// reportRetired publishes the hanging spans of a look, logs those the
// last look did not report, and says when none is left; reported holds
// the spans reported, from one look to the next.
func (r *Relay) reportRetired(hanging []retiredSpan, reported map[string]bool) {
	var fresh []retiredSpan
	for _, s := range hanging {
		if !reported[s.key()] {
			fresh = append(fresh, s)
		}
	}
	r.m.RetiredHanging.Set(float64(len(hanging)))
	if len(fresh) > 0 {
		r.log.Error("a transactional id this instance no longer uses left a transaction open in a partition the pipeline writes: the broker lost its marker, and read_committed readers of the partition wait at it until an operator completes it (kafka-transactions.sh find-hanging, then abort)",
			"spans", fresh)
	}
	if len(hanging) == 0 && len(reported) > 0 {
		r.log.Info("the transactions left open by transactional ids this instance no longer uses are completed")
	}
	clear(reported)
	for _, s := range hanging {
		reported[s.key()] = true
	}
}

// retiredSpans lists the transactional ids matching pattern that are not
// in inUse, and returns the spans their producer ids have open in the
// partitions of topics, with each id's coordinator state. busy reports a
// retired id whose transaction is still in progress at its coordinator.
func retiredSpans(ctx context.Context, adm *kadm.Client, pattern *regexp.Regexp, inUse map[string]bool, topics []string) (spans []retiredSpan, busy bool, err error) {
	lctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	listed, err := adm.ListTransactionsByTxPattern(lctx, nil, nil, pattern.String())
	if err != nil {
		return nil, false, fmt.Errorf("listing transactional ids: %w", err)
	}
	retired := map[int64]kadm.ListedTransaction{}
	for _, t := range listed.Sorted() {
		// The pattern filters on the broker since Kafka 4.1; match
		// again for an older one, which ignores it.
		if !pattern.MatchString(t.TxnID) || inUse[t.TxnID] {
			continue
		}
		retired[t.ProducerID] = t
		busy = busy || inProgress(t.State)
	}
	if len(retired) == 0 {
		return nil, busy, nil
	}
	// One topic a request: kadm fails a whole request on one
	// partition's authorization error. A topic the principal may not
	// describe (DescribeProducers needs READ) or that does not exist
	// (yet) has nothing to say.
	for _, topic := range topics {
		ts := kadm.TopicsSet{}
		ts.Add(topic)
		dp, err := adm.DescribeProducers(lctx, ts)
		if errors.Is(err, kerr.TopicAuthorizationFailed) || errors.Is(err, kerr.UnknownTopicOrPartition) {
			continue
		}
		if err != nil {
			return nil, busy, fmt.Errorf("describing the producers of %s: %w", topic, err)
		}
		for _, p := range dp.SortedPartitions() {
			if errors.Is(p.Err, kerr.UnknownTopicOrPartition) {
				continue
			}
			if p.Err != nil {
				return nil, busy, fmt.Errorf("describing the producers of %s[%d]: %w", p.Topic, p.Partition, p.Err)
			}
			for _, pid := range slices.Sorted(maps.Keys(p.ActiveProducers)) {
				st := p.ActiveProducers[pid]
				t, ok := retired[pid]
				if !ok || st.CurrentTxnStartOffset < 0 {
					continue
				}
				spans = append(spans, retiredSpan{txnID: t.TxnID, state: t.State, openSpan: openSpan{
					tp:    txn.Partition{Topic: p.Topic, Partition: p.Partition},
					start: st.CurrentTxnStartOffset, epoch: st.ProducerEpoch,
				}})
			}
		}
	}
	return spans, busy, nil
}
