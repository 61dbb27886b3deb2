package txn

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sharerelay/sharerelay/internal/kfaketest"
)

func TestExtraOptionsTuneTheProducerButCannotWeakenItsGuarantees(t *testing.T) {
	c := kfaketest.Cluster(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cfg := Config{
		Seeds: c.ListenAddrs(), TransactionalID: "t-0", TransactionTimeout: 10 * time.Second, ClientID: "t-0",
		Extra: []kgo.Opt{
			kgo.ClientID("from-config"),
			kgo.ProducerLinger(5 * time.Millisecond),
			kgo.RequiredAcks(kgo.LeaderAck()),
			kgo.TransactionalID("someone-else"),
		},
	}
	p, err := New(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	cl := p.Client()
	if got := cl.OptValue(kgo.ClientID); got != "from-config" {
		t.Errorf("client id %v, want the one from Extra", got)
	}
	if got := cl.OptValue(kgo.ProducerLinger); got != 5*time.Millisecond {
		t.Errorf("linger %v, want Extra's 5ms", got)
	}
	if got := cl.OptValue(kgo.RequiredAcks); got != kgo.AllISRAcks() {
		t.Errorf("acks %v, want all", got)
	}
	if got := cl.OptValue(kgo.TransactionalID); got != "t-0" {
		t.Errorf("transactional id %v, want t-0", got)
	}

	cfg.Extra = []kgo.Opt{kgo.DisableIdempotentWrite()}
	cfg.TransactionalID = "t-1"
	if p, err := New(ctx, cfg); err == nil {
		p.Close()
		t.Error("a producer without idempotence was created")
	}
}

// TestUncheckedAfterAnythingThatCouldHaveLostAMarker: the worker checks the
// partitions it writes for a transaction of its producer id left open
// (relay's checkSpans) whenever Unchecked says so.
func TestUncheckedAfterAnythingThatCouldHaveLostAMarker(t *testing.T) {
	c := kfaketest.Cluster(t, kfake.SeedTopics(1, "out"))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	p, err := New(ctx, Config{Seeds: c.ListenAddrs(), TransactionalID: "u-0", TransactionTimeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if !p.Unchecked(time.Time{}) {
		t.Fatal("a new producer is checked")
	}
	p.MarkChecked()
	if p.Unchecked(time.Time{}) {
		t.Fatal("unchecked right after MarkChecked")
	}
	if !p.Unchecked(time.Now().Add(time.Second)) {
		t.Fatal("checked although a broker failure came after the check")
	}
	commit := func() Outcome {
		t.Helper()
		if err := p.Begin(); err != nil {
			t.Fatal(err)
		}
		if err := p.Produce(ctx, &kgo.Record{Topic: "out", Value: []byte("v")}); err != nil {
			t.Fatal(err)
		}
		o, _ := p.Commit(ctx)
		return o
	}
	if o := commit(); o != Committed || p.Unchecked(time.Time{}) {
		t.Fatalf("a committed transaction: outcome %v, unchecked %v; want committed, still checked", o, p.Unchecked(time.Time{}))
	}
	// A commit that cannot be sent (the context is over) does not end
	// committed.
	if err := p.Begin(); err != nil {
		t.Fatal(err)
	}
	if err := p.Produce(ctx, &kgo.Record{Topic: "out", Value: []byte("v")}); err != nil {
		t.Fatal(err)
	}
	dead, stop := context.WithCancel(ctx)
	stop()
	if o, _ := p.Commit(dead); o == Committed || !p.Unchecked(time.Time{}) {
		t.Fatalf("outcome %v, unchecked %v; want not committed and unchecked", o, p.Unchecked(time.Time{}))
	}

	idem, err := New(ctx, Config{Seeds: c.ListenAddrs(), TransactionalID: "u-1", Idempotent: true})
	if err != nil {
		t.Fatal(err)
	}
	defer idem.Close()
	if idem.Unchecked(time.Now()) {
		t.Fatal("a producer without transactions has nothing to check")
	}
}

// TestCommitAbortsATransactionHoldingRecordsNotProduced: records the client
// wrote in the transaction behind Produce's back (here written directly on
// the client; in a broker-kill chaos run, one batch holding the outputs
// twice) make Commit abort instead of committing them.
func TestCommitAbortsATransactionHoldingRecordsNotProduced(t *testing.T) {
	c := kfaketest.Cluster(t, kfake.SeedTopics(1, "out"))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	p, err := New(ctx, Config{Seeds: c.ListenAddrs(), TransactionalID: "x-0", TransactionTimeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	for _, extra := range []bool{false, true} {
		if err := p.Begin(); err != nil {
			t.Fatal(err)
		}
		if err := p.Produce(ctx, &kgo.Record{Topic: "out", Value: []byte("once")}); err != nil {
			t.Fatal(err)
		}
		if extra {
			if err := p.Client().ProduceSync(ctx, &kgo.Record{Topic: "out", Value: []byte("again")}).FirstErr(); err != nil {
				t.Fatal(err)
			}
		}
		o, err := p.Commit(ctx)
		switch {
		case !extra && o != Committed:
			t.Fatalf("a transaction of exactly what was produced: %v, %v", o, err)
		case extra && (o != NotCommitted || !errors.Is(err, ErrExtraRecords)):
			t.Fatalf("a transaction holding a record not produced: %v, %v; want not committed with ErrExtraRecords", o, err)
		}
	}
	// Only the first transaction is visible.
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...), kgo.ConsumeTopics("out"), kgo.FetchIsolationLevel(kgo.ReadCommitted()), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	var got []string
	for len(got) < 1 {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("read %v before the deadline", got)
		}
		fs.EachRecord(func(r *kgo.Record) { got = append(got, string(r.Value)) })
	}
	pctx, pcancel := context.WithTimeout(ctx, 500*time.Millisecond)
	defer pcancel()
	cl.PollFetches(pctx).EachRecord(func(r *kgo.Record) { got = append(got, string(r.Value)) })
	if fmt.Sprint(got) != "[once]" {
		t.Fatalf("read_committed sees %v, want [once]", got)
	}
}

// TestTheProducerRemembersWhatEachPartitionLastGotAndHowItEnded: the worker
// decides how a transaction that continued a lost marker's span must end
// from Last; a replaced producer keeps it (Inherit), and a commit whose
// answer was lost is settled later (Settle).
func TestTheProducerRemembersWhatEachPartitionLastGotAndHowItEnded(t *testing.T) {
	c := kfaketest.Cluster(t, kfake.SeedTopics(2, "a", "b"))
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cfg := Config{Seeds: c.ListenAddrs(), TransactionalID: "m-0", TransactionTimeout: 10 * time.Second,
		Extra: []kgo.Opt{kgo.RecordPartitioner(kgo.ManualPartitioner())}}
	p, err := New(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	rec := func(topic string, part int32, v string) *kgo.Record {
		return &kgo.Record{Topic: topic, Partition: part, Value: []byte(v)}
	}
	txn := func(commit bool, recs ...*kgo.Record) {
		t.Helper()
		if err := p.Begin(); err != nil {
			t.Fatal(err)
		}
		if err := p.Produce(ctx, recs...); err != nil {
			t.Fatal(err)
		}
		firsts := p.OpenFirsts()
		for _, r := range recs {
			if f := firsts[Partition{r.Topic, r.Partition}]; f > r.Offset {
				t.Fatalf("OpenFirsts %v: %s[%d] first %d after a record at %d", firsts, r.Topic, r.Partition, f, r.Offset)
			}
		}
		if commit {
			if o, err := p.Commit(ctx); o != Committed {
				t.Fatal(o, err)
			}
		} else if err := p.Abort(ctx); err != nil {
			t.Fatal(err)
		}
	}

	txn(true, rec("a", 0, "1"), rec("a", 0, "2"), rec("b", 1, "3"))
	txn(false, rec("a", 0, "4"), rec("a", 1, "5"))

	a0, ok := p.Last(Partition{"a", 0})
	if !ok || a0.Outcome != NotCommitted || a0.First != 3 {
		t.Fatalf("a[0]: %+v %v, want the aborted transaction from offset 3 (after the first one's 2 records and marker)", a0, ok)
	}
	b1, ok := p.Last(Partition{"b", 1})
	if !ok || b1.Outcome != Committed || b1.First != 0 {
		t.Fatalf("b[1]: %+v %v, want the committed transaction from offset 0", b1, ok)
	}
	if _, ok := p.Last(Partition{"b", 0}); ok {
		t.Fatal("b[0] was never written, yet Last knows it")
	}

	// A replacement knows what the old producer wrote.
	q, err := New(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer q.Close()
	q.Inherit(p)
	if got, _ := q.Last(Partition{"b", 1}); got.Outcome != Committed {
		t.Fatalf("the replacement does not know b[1]: %+v", got)
	}

	// A commit whose answer was lost, settled as not committed: only its
	// own partitions change.
	p = q
	if err := p.Begin(); err != nil {
		t.Fatal(err)
	}
	if err := p.Produce(ctx, rec("a", 1, "6")); err != nil {
		t.Fatal(err)
	}
	p.ended(Unknown)
	if got, _ := p.Last(Partition{"a", 1}); got.Outcome != Unknown || got.First != 2 {
		t.Fatalf("a[1] after an unknown outcome: %+v, want unknown from offset 2 (after the aborted record and its marker)", got)
	}
	p.Settle(false)
	if got, _ := p.Last(Partition{"a", 1}); got.Outcome != NotCommitted {
		t.Fatalf("a[1] settled not committed: %+v", got)
	}
	if got, _ := p.Last(Partition{"b", 1}); got.Outcome != Committed {
		t.Fatalf("Settle changed b[1], which the settled transaction did not write: %+v", got)
	}
	if err := p.Abort(ctx); err != nil {
		t.Fatal(err)
	}
}

// TestAnIdempotentProducerKeepsNoRecords: at-least-once writes without
// transactions, so there is no span to remember; a producer that kept its
// records would hold every record it ever wrote (seen in make bench: 2.4
// GB of RSS at 1 KiB).
func TestAnIdempotentProducerKeepsNoRecords(t *testing.T) {
	c := kfaketest.Cluster(t, kfake.SeedTopics(1, "a"))
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	p, err := New(ctx, Config{Seeds: c.ListenAddrs(), TransactionalID: "i-0", Idempotent: true})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	for range 3 {
		if err := p.Begin(); err != nil {
			t.Fatal(err)
		}
		if err := p.Produce(ctx, &kgo.Record{Topic: "a", Value: []byte("x")}, &kgo.Record{Topic: "a", Value: []byte("y")}); err != nil {
			t.Fatal(err)
		}
		if o, err := p.Commit(ctx); o != Committed {
			t.Fatal(o, err)
		}
	}
	if len(p.sent) != 0 || len(p.wrote) != 0 {
		t.Fatalf("an idempotent producer keeps %d records and %d spans", len(p.sent), len(p.wrote))
	}
}

func TestProduceStampsTheRecordsOfOneCallWithOneTimeAndKeepsTheirOwn(t *testing.T) {
	c := kfaketest.Cluster(t, kfake.SeedTopics(2, "out"))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	p, err := New(ctx, Config{Seeds: c.ListenAddrs(), TransactionalID: "x-0", TransactionTimeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	own := time.UnixMilli(1_700_000_000_000)
	recs := []*kgo.Record{{Topic: "out", Key: []byte("a")}, {Topic: "out", Key: []byte("b"), Timestamp: own}, {Topic: "out", Key: []byte("c")}}
	before := time.Now().Truncate(time.Millisecond)
	if err := p.Begin(); err != nil {
		t.Fatal(err)
	}
	if err := p.Produce(ctx, recs...); err != nil {
		t.Fatal(err)
	}
	if o, err := p.Commit(ctx); o != Committed {
		t.Fatalf("commit: %v, %v", o, err)
	}
	if !recs[1].Timestamp.Equal(own) {
		t.Fatalf("a record's own timestamp became %v", recs[1].Timestamp)
	}
	if ts := recs[0].Timestamp; ts.Before(before) || ts.After(time.Now()) || !recs[2].Timestamp.Equal(ts) {
		t.Fatalf("the records without a timestamp got %v and %v, want one time of the call", ts, recs[2].Timestamp)
	}
}
