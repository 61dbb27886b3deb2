package chaos

import (
	"context"
	"encoding/binary"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sharerelay/sharerelay/integration/harness"
)

// diagnoseOpenTxns explains partitions whose last stable offset is stuck
// below the high watermark: which producers hold the open transactions
// (DescribeProducers), what the transaction coordinator says of the
// pipeline's transactional ids (DescribeTransactions), and what the claim
// ledger says of those producers — the marker that followed their last
// claims, if any. A hanging transaction whose ledger claim reads COMMIT
// while its outputs never get a marker is the dangerous case: the relay
// has accepted the records, readers cannot see the outputs, and an
// operator aborting the transaction would lose them.
func diagnoseOpenTxns(ctx context.Context, adm *kadm.Client, seeds []string, pipeline, ledger string, topics ...string) string {
	var b strings.Builder
	ts := kadm.TopicsSet{}
	for _, t := range topics {
		ts.Add(t)
	}
	hanging := map[int64]int16{}
	dp, err := adm.DescribeProducers(ctx, ts)
	if err != nil {
		fmt.Fprintf(&b, "DescribeProducers: %v\n", err)
	}
	var lines []string
	for _, p := range dp.SortedProducers() {
		if p.CurrentTxnStartOffset >= 0 {
			hanging[p.ProducerID] = p.ProducerEpoch
			lines = append(lines, fmt.Sprintf("  %s[%d]: producer %d epoch %d has a transaction open since offset %d (last write %s)",
				p.Topic, p.Partition, p.ProducerID, p.ProducerEpoch, p.CurrentTxnStartOffset, time.UnixMilli(p.LastTimestamp).UTC().Format(time.RFC3339Nano)))
		}
	}
	sort.Strings(lines)
	fmt.Fprintf(&b, "open transactions by partition:\n%s\n", strings.Join(lines, "\n"))

	lt, err := adm.ListTransactions(ctx, nil, nil)
	if err != nil {
		fmt.Fprintf(&b, "ListTransactions: %v\n", err)
	}
	var ids []string
	for _, t := range lt.Sorted() {
		if strings.HasPrefix(t.TxnID, "sharerelay-"+pipeline+"-") {
			ids = append(ids, t.TxnID)
		}
	}
	if len(ids) > 0 {
		dt, err := adm.DescribeTransactions(ctx, ids...)
		if err != nil {
			fmt.Fprintf(&b, "DescribeTransactions: %v\n", err)
		}
		for _, d := range dt.Sorted() {
			mark := ""
			if _, ok := hanging[d.ProducerID]; ok {
				mark = "  <- holds an open transaction"
			}
			fmt.Fprintf(&b, "  coordinator: %s producer %d epoch %d state %s topics %v%s\n", d.TxnID, d.ProducerID, d.ProducerEpoch, d.State, d.Topics.Topics(), mark)
		}
	}
	fmt.Fprint(&b, ledgerView(ctx, seeds, ledger, hanging))
	return b.String()
}

// txnVerdict is what the claim ledger says of one hanging transaction
// (producer id and epoch): its claims there and its own marker, if any.
type txnVerdict struct {
	claims int
	marker string // COMMIT, ABORT, or "" when the ledger has no marker of epoch + 1
	at     int64
	later  bool // the producer wrote a later epoch to the ledger without that marker first
}

// ledgerVerdicts reads the claim ledger read_uncommitted with its markers
// and returns, for each producer id and epoch of interest, how its claims
// ended: under transaction.version 2 a transaction at epoch E ends with
// markers at E+1, so only that marker is its own.
func ledgerVerdicts(ctx context.Context, seeds []string, ledger string, want map[int64]int16) (map[int64]txnVerdict, error) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{ledger: {0: kgo.NewOffset().AtStart()}}),
		kgo.FetchIsolationLevel(kgo.ReadUncommitted()), kgo.KeepControlRecords())
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	ends, err := kadm.NewClient(cl).ListEndOffsets(ctx, ledger)
	if err != nil {
		return nil, err
	}
	end, _ := ends.Lookup(ledger, 0)
	out := map[int64]txnVerdict{}
	for pos := int64(0); pos < end.Offset; {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		fs.EachRecord(func(r *kgo.Record) {
			pos = r.Offset + 1
			epoch, ok := want[r.ProducerID]
			if !ok {
				return
			}
			v := out[r.ProducerID]
			switch {
			case v.marker != "":
			case r.Attrs.IsControl() && r.ProducerEpoch == epoch+1 && len(r.Key) >= 4:
				v.marker = map[uint16]string{0: "ABORT", 1: "COMMIT"}[binary.BigEndian.Uint16(r.Key[2:4])]
				v.at = r.Offset
			case r.ProducerEpoch > epoch+1 || !r.Attrs.IsControl() && r.ProducerEpoch > epoch:
				v.later = v.later || v.claims > 0
			case !r.Attrs.IsControl() && r.ProducerEpoch == epoch:
				v.claims++
			}
			out[r.ProducerID] = v
		})
	}
	return out, nil
}

// ledgerView formats ledgerVerdicts.
func ledgerView(ctx context.Context, seeds []string, ledger string, want map[int64]int16) string {
	vs, err := ledgerVerdicts(ctx, seeds, ledger, want)
	if err != nil {
		return fmt.Sprintf("claim ledger: %v\n", err)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "claim ledger %s on the hanging transactions:\n", ledger)
	for pid, epoch := range want {
		v := vs[pid]
		switch {
		case v.claims == 0 && v.marker == "":
			fmt.Fprintf(&b, "  producer %d epoch %d: no claim in the ledger\n", pid, epoch)
		case v.marker == "" && v.later:
			fmt.Fprintf(&b, "  producer %d epoch %d: %d claims, NO marker of epoch %d before a later epoch (orphaned: the resolver settles it)\n", pid, epoch, v.claims, epoch+1)
		case v.marker == "":
			fmt.Fprintf(&b, "  producer %d epoch %d: %d claims, NO marker (pending for every relay)\n", pid, epoch, v.claims)
		default:
			fmt.Fprintf(&b, "  producer %d epoch %d: %d claims, marker %s at ledger offset %d\n", pid, epoch, v.claims, v.marker, v.at)
		}
	}
	return b.String()
}

// startJanitor, for scenarios that crash the broker, completes hanging
// transactions while the relays run, as a replicated cluster would have
// (its markers go to the new leaders within milliseconds): every 5 s it
// looks for them and completes those seen in two checks in a row.
//
// Not on the cluster: a replicated cluster writes the markers to the
// partitions' new leaders, and a transaction left hanging there is a
// finding that quiesce completes and the report counts.
func (s *scenario) startJanitor() {
	if s.env.cluster != nil {
		return
	}
	s.scrapeWG.Add(1)
	go func() {
		defer s.scrapeWG.Done()
		seen := map[string]bool{}
		for {
			select {
			case <-s.stopCh:
				return
			case <-time.After(5 * time.Second):
			}
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			hs, err := harness.FindHanging(ctx, s.adm, s.env.direct, s.p.Name, false, s.txnTopics()...)
			next := map[string]bool{}
			var due []harness.HangingTxn
			for _, h := range hs {
				if seen[h.Key()] && h.Verdict != "" {
					due = append(due, h)
				} else {
					next[h.Key()] = true
				}
			}
			seen = next
			if err == nil && len(due) > 0 {
				for _, h := range due {
					s.t.Logf("hanging transaction (markers dropped by the broker): %v; completing it", h)
				}
				err = harness.CompleteHanging(ctx, s.adm, due)
				s.count(func(r *result) { r.HangingTxns += len(due) })
			}
			cancel()
			if err != nil && (!s.env.local || s.env.up()) && !strings.Contains(err.Error(), "connection refused") {
				s.t.Logf("janitor: %v", err)
			}
		}
	}()
}
