package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sharerelay/sharerelay/eos"
)

// writeClaims writes n claims of one source partition (each covering 10
// consecutive offsets) in transactions of perTxn claims, all committed,
// the way workers do. If leaveOpen, one more transaction with one claim
// (offsets just after) is left open and its producer returned so the
// caller can end it.
func writeClaims(t testing.TB, seeds []string, ledger, txnID string, first int64, n, perTxn int, leaveOpen bool) (*kgo.Client, int64) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.TransactionalID(txnID), kgo.ProducerLinger(5*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	pid, epoch, err := cl.ProducerID(ctx)
	if err != nil {
		t.Fatal(err)
	}
	claim := func(o int64) *kgo.Record {
		c := eos.Claim{Topic: "src", Partition: 0, Ranges: []eos.Range{{First: o, Last: o + 9}}, TxnID: txnID, ProducerID: pid, Epoch: epoch}
		v, _ := json.Marshal(&c)
		return &kgo.Record{Topic: ledger, Key: []byte("src/0"), Value: v}
	}
	o := first
	for done := 0; done < n; {
		if err := cl.BeginTransaction(); err != nil {
			t.Fatal(err)
		}
		for i := 0; i < perTxn && done < n; i++ {
			cl.Produce(ctx, claim(o), func(_ *kgo.Record, err error) {
				if err != nil {
					t.Errorf("producing a claim: %v", err)
				}
			})
			o += 10
			done++
		}
		if err := cl.Flush(ctx); err != nil {
			t.Fatal(err)
		}
		if err := cl.EndTransaction(ctx, kgo.TryCommit); err != nil {
			t.Fatal(err)
		}
	}
	if !leaveOpen {
		cl.Close()
		return nil, o
	}
	if err := cl.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	if err := cl.ProduceSync(ctx, claim(o)).FirstErr(); err != nil {
		t.Fatal(err)
	}
	return cl, o
}

func openLedger(t testing.TB, seeds []string, topic, snapTopic string) *eos.Ledger {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	l, err := eos.OpenLedger(ctx, eos.LedgerConfig{
		ClientOpts: []kgo.Opt{kgo.SeedBrokers(seeds...)}, Topic: topic, SnapshotTopic: snapTopic,
		SnapshotEvery: -1, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// A restarted instance loads the latest snapshot and replays only the
// ledger after it, and ends up with the same index as a full replay —
// including a claim that was still pending when the snapshot was taken and
// committed after it.
func TestRealBrokerLedgerRestartsFromItsSnapshot(t *testing.T) {
	seeds := seedsFor(t)
	ledger := fmt.Sprintf("ledger-restart-%d.ledger", time.Now().UnixNano())
	l1 := openLedger(t, seeds, ledger, ledger+".snapshots")
	_, next := writeClaims(t, seeds, ledger, "w1", 0, 2000, 500, false)
	open, after := writeClaims(t, seeds, ledger, "w2", next, 0, 1, true)
	if err := l1.WaitCaughtUp(context.Background()); err != nil {
		t.Fatal(err)
	}
	if st := l1.Stats(); st.Pending != 1 {
		t.Fatalf("ledger index after the claims: %+v, want 1 pending claim", st)
	}
	if _, err := l1.WriteSnapshot(context.Background(), -1); err != nil {
		t.Fatal(err)
	}
	l1.Close()
	// The pending claim commits after the snapshot.
	if err := open.EndTransaction(context.Background(), kgo.TryCommit); err != nil {
		t.Fatal(err)
	}
	open.Close()
	writeClaims(t, seeds, ledger, "w1", after+10, 100, 50, false)

	fromSnap := openLedger(t, seeds, ledger, ledger+".snapshots")
	defer fromSnap.Close()
	full := openLedger(t, seeds, ledger, ledger+".no-snapshots")
	defer full.Close()

	if fromSnap.StartupStats.SnapshotNext == nil || fromSnap.StartupStats.SnapshotNext[0] == 0 {
		t.Fatalf("the restarted ledger did not use the snapshot: %+v", fromSnap.StartupStats)
	}
	if r := fromSnap.StartupStats.RecordsReplayed; r > 200 {
		t.Fatalf("replayed %d ledger records after the snapshot, want only the ~105 written after it", r)
	}
	if fromSnap.Stats() != full.Stats() {
		t.Fatalf("index from snapshot %+v differs from full replay %+v", fromSnap.Stats(), full.Stats())
	}
	key := eos.Source{Topic: "src", Partition: 0}
	for _, o := range []int64{0, 5, next - 1, next, next + 9, after + 10, after + 10 + 100*10 - 1} {
		key.Offset = o
		a := fromSnap.Guard("x").Committed([]eos.Source{key})[0]
		b := full.Guard("x").Committed([]eos.Source{key})[0]
		if !a || a != b {
			t.Fatalf("offset %d: committed from snapshot %v, from full replay %v; want both true", o, a, b)
		}
	}
	t.Logf("restart from snapshot: %s, %d records replayed; full replay: %s, %d records",
		fromSnap.StartupStats.Elapsed, fromSnap.StartupStats.RecordsReplayed, full.StartupStats.Elapsed, full.StartupStats.RecordsReplayed)
}

// BenchmarkLedgerRestart measures an instance's restart with a million
// claims behind the snapshot, against replaying them all. Run by make bench.
func BenchmarkLedgerRestart(b *testing.B) {
	seeds := seedsForBench(b)
	const claims = 1_000_000
	ledger := fmt.Sprintf("ledger-bench-%d.ledger", time.Now().UnixNano())
	l := openLedger(b, seeds, ledger, ledger+".snapshots")
	start := time.Now()
	writeClaims(b, seeds, ledger, "bench", 0, claims, 10000, false)
	b.Logf("wrote %d claims in %s", claims, time.Since(start).Round(time.Millisecond))
	if err := l.WaitCaughtUp(context.Background()); err != nil {
		b.Fatal(err)
	}
	if st := l.Stats(); st.Ranges != 1 || st.Pending != 0 {
		b.Fatalf("index after %d committed claims: %+v, want one range and nothing pending", claims, st)
	}
	if _, err := l.WriteSnapshot(context.Background(), -1); err != nil {
		b.Fatal(err)
	}
	l.Close()
	b.Run("from-snapshot", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			x := openLedger(b, seeds, ledger, ledger+".snapshots")
			b.ReportMetric(float64(x.StartupStats.RecordsReplayed), "replayed")
			x.Close()
		}
	})
	b.Run("full-replay", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			x := openLedger(b, seeds, ledger, fmt.Sprintf("%s.none-%d", ledger, i))
			b.ReportMetric(float64(x.StartupStats.RecordsReplayed), "replayed")
			x.Close()
		}
	})
}
