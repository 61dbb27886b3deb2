package harness

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// A single Kafka node killed (or stopped) while commit markers are in
// flight comes back with its partitions briefly leaderless, and the
// transaction coordinator skips the markers of those partitions "as if
// deleted": the transaction stays open there for good and read_committed
// readers stall on it. A replicated cluster would have moved the
// partitions to another leader within milliseconds and delivered the
// markers. The functions below complete such hanging transactions with
// the coordinator's own decision, as that cluster would have.

// HangingTxn is an open transaction on a partition that the coordinator
// has already finished: its markers were dropped (see doc.go).
type HangingTxn struct {
	Topic            string
	Partition        int32
	ProducerID       int64
	Epoch            int16
	CoordinatorEpoch int32
	Since            int64
	// Verdict is COMMIT or ABORT, or "" when it cannot be told; Why says
	// where it comes from.
	Verdict, Why string
}

// Key identifies the transaction on its partition.
func (h HangingTxn) Key() string {
	return fmt.Sprintf("%s/%d/%d/%d", h.Topic, h.Partition, h.ProducerID, h.Epoch)
}

// FindHanging returns the open transactions on topics that the coordinator
// has finished: its producer id is at least two epochs further (with
// transaction version 2 every transaction ends with an epoch bump), or one
// epoch further in state CompleteCommit / CompleteAbort — markers are
// written before that state — or, with final (no relay runs any more), in
// any state but Ongoing or Prepare*. The verdict is the decision the
// coordinator made for that transaction: its current state when it is
// still about that transaction (epoch + 1, Complete*), else the
// Prepare*/Complete* entry at epoch + 1 in its own log, __transaction_state.
// A replicated cluster would have delivered the markers with that
// decision; completing them with anything else (e.g. a later transaction's
// marker) would make the test judge a fault Kafka does not have.
func FindHanging(ctx context.Context, adm *kadm.Client, seeds []string, pipeline string, final bool, topics ...string) ([]HangingTxn, error) {
	ts := kadm.TopicsSet{}
	for _, t := range topics {
		ts.Add(t)
	}
	dp, err := adm.DescribeProducers(ctx, ts)
	if err != nil {
		return nil, err
	}
	lt, err := adm.ListTransactions(ctx, nil, nil)
	if err != nil {
		return nil, err
	}
	var ids []string
	for _, t := range lt.Sorted() {
		if strings.HasPrefix(t.TxnID, "sharerelay-"+pipeline+"-") {
			ids = append(ids, t.TxnID)
		}
	}
	current := map[int64]int16{}
	state := map[int64]string{}
	if len(ids) > 0 {
		dt, err := adm.DescribeTransactions(ctx, ids...)
		if err != nil {
			return nil, err
		}
		for _, d := range dt {
			current[d.ProducerID] = d.ProducerEpoch
			state[d.ProducerID] = d.State
		}
	}
	var out []HangingTxn
	want := map[int64]int16{}
	for _, p := range dp.SortedProducers() {
		if p.CurrentTxnStartOffset < 0 {
			continue
		}
		h := HangingTxn{Topic: p.Topic, Partition: p.Partition, ProducerID: p.ProducerID, Epoch: p.ProducerEpoch,
			CoordinatorEpoch: p.CoordinatorEpoch, Since: p.CurrentTxnStartOffset}
		cur, known := current[p.ProducerID]
		st := state[p.ProducerID]
		switch {
		case known && cur == p.ProducerEpoch+1 && st == "CompleteCommit":
			h.Verdict, h.Why = "COMMIT", "coordinator: CompleteCommit at the next epoch"
		case known && cur == p.ProducerEpoch+1 && st == "CompleteAbort":
			h.Verdict, h.Why = "ABORT", "coordinator: CompleteAbort at the next epoch"
		case known && cur >= p.ProducerEpoch+2:
		case final && st != "Ongoing" && !strings.HasPrefix(st, "Prepare"):
		default:
			continue // running, or its markers in flight
		}
		if h.Verdict == "" {
			want[p.ProducerID] = p.ProducerEpoch + 1
		}
		out = append(out, h)
	}
	if len(want) > 0 {
		ds, err := coordinatorDecisions(ctx, seeds, want)
		if err != nil {
			return nil, err
		}
		for i := range out {
			h := &out[i]
			if h.Verdict != "" {
				continue
			}
			if d, ok := ds[h.ProducerID]; ok {
				h.Verdict, h.Why = d.verdict, fmt.Sprintf("coordinator log: %s at epoch %d (__transaction_state offset %d)", d.state, h.Epoch+1, d.at)
			} else {
				h.Why = fmt.Sprintf("no decision at epoch %d in the coordinator log; coordinator now at epoch %d", h.Epoch+1, current[h.ProducerID])
			}
		}
	}
	return out, nil
}

// decision is a transaction outcome the coordinator logged.
type decision struct {
	verdict, state string
	at             int64
}

// coordinatorDecisions reads the transaction coordinator's log,
// __transaction_state, and returns for each producer id the outcome it
// logged for the transaction whose markers carry epoch want[pid]
// (Prepare* or Complete* entries: under transaction.version 2 the
// coordinator bumps the epoch when it prepares the end).
func coordinatorDecisions(ctx context.Context, seeds []string, want map[int64]int16) (map[int64]decision, error) {
	const topic = "__transaction_state"
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxWait(200*time.Millisecond))
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	ends, err := kadm.NewClient(cl).ListEndOffsets(ctx, topic)
	if err != nil {
		return nil, err
	}
	remaining := map[int32]int64{}
	ends.Each(func(o kadm.ListedOffset) {
		if o.Offset > 0 {
			remaining[o.Partition] = o.Offset
		}
	})
	out := map[int64]decision{}
	for len(remaining) > 0 {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		fs.EachRecord(func(r *kgo.Record) {
			if end, ok := remaining[r.Partition]; ok && r.Offset >= end-1 {
				delete(remaining, r.Partition)
			}
			if r.Value == nil {
				return
			}
			var v kmsg.TxnMetadataValue
			if v.ReadFrom(r.Value) != nil {
				return
			}
			e, ok := want[v.ProducerID]
			if !ok || v.ProducerEpoch != e {
				return
			}
			switch v.State {
			case kmsg.TransactionStatePrepareCommit, kmsg.TransactionStateCompleteCommit:
				out[v.ProducerID] = decision{"COMMIT", v.State.String(), r.Offset}
			case kmsg.TransactionStatePrepareAbort, kmsg.TransactionStateCompleteAbort:
				out[v.ProducerID] = decision{"ABORT", v.State.String(), r.Offset}
			}
		})
	}
	return out, nil
}

// CompleteHanging writes the markers Kafka dropped, with each one's
// verdict. A hanging transaction without a verdict is an error.
func CompleteHanging(ctx context.Context, adm *kadm.Client, hs []HangingTxn) error {
	for _, h := range hs {
		if h.Verdict == "" {
			return fmt.Errorf("hanging transaction %v cannot be judged", h)
		}
		ts := kadm.TopicsSet{}
		ts.Add(h.Topic, h.Partition)
		// At the epoch the coordinator writes markers with under
		// transaction.version 2: the records' epoch + 1.
		resp, err := adm.WriteTxnMarkers(ctx, kadm.TxnMarkers{ProducerID: h.ProducerID, ProducerEpoch: h.Epoch + 1, Commit: h.Verdict == "COMMIT", CoordinatorEpoch: h.CoordinatorEpoch, Topics: ts})
		if err != nil {
			return fmt.Errorf("writing the marker of %v: %w", h, err)
		}
		for _, p := range resp.SortedPartitions() {
			if p.Err != nil {
				return fmt.Errorf("writing the marker of %v: %w", h, p.Err)
			}
		}
	}
	return nil
}

// String describes the hanging transaction in one line for test logs,
// with its verdict (UNKNOWN before one is reached) and why.
func (h HangingTxn) String() string {
	v := h.Verdict
	if v == "" {
		v = "UNKNOWN"
	}
	return fmt.Sprintf("%s[%d] producer %d epoch %d open since offset %d: %s (%s)", h.Topic, h.Partition, h.ProducerID, h.Epoch, h.Since, v, h.Why)
}
