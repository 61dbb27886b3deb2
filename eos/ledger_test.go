package eos

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// kgoTx adapts a transactional kgo.Client to Tx for these tests.
type kgoTx struct {
	cl *kgo.Client
	id string
}

// claim produces g's claims for srcs in t's open transaction and checks
// them, as the worker does (there with the outputs in the same request).
func claim(ctx context.Context, g Guard, t kgoTx, srcs []Source) ([]bool, error) {
	recs, err := g.Claims(ctx, t, srcs, []string{"out"}, 0)
	if err != nil {
		return nil, err
	}
	if err := t.cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		return nil, err
	}
	return g.Check(ctx)
}
func (t kgoTx) ProducerID(ctx context.Context) (int64, int16, error) { return t.cl.ProducerID(ctx) }
func (t kgoTx) TransactionalID() string                              { return t.id }

func newTx(t *testing.T, c *kfake.Cluster, id string) kgoTx {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...), kgo.TransactionalID(id))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return kgoTx{cl, id}
}

func openTestLedger(t *testing.T, c *kfake.Cluster) *Ledger {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	l, err := OpenLedger(ctx, LedgerConfig{
		ClientOpts: []kgo.Opt{kgo.SeedBrokers(c.ListenAddrs()...)},
		Topic:      "p.ledger", ClaimWait: 3 * time.Second, SnapshotEvery: -1,
		Markers: MarkersAtSameOrNextEpoch, // kfake
		Logger:  slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(l.Close)
	return l
}

func srcs(offsets ...int64) []Source {
	out := make([]Source, len(offsets))
	for i, o := range offsets {
		out[i] = Source{Topic: "orders", Partition: 0, Offset: o}
	}
	return out
}

func TestALaterClaimOfACommittedOffsetConflictsOnlyOnThatOffset(t *testing.T) {
	c, _ := kfake.NewCluster(kfake.NumBrokers(1))
	defer c.Close()
	l := openTestLedger(t, c)
	ctx := context.Background()

	a := newTx(t, c, "a")
	a.cl.BeginTransaction()
	ga := l.Guard("a")
	if conf, err := claim(ctx, ga, a, srcs(1, 2, 3)); err != nil || anyOf(conf) {
		t.Fatalf("first claim: conflicts %v, %v", conf, err)
	}
	if err := a.cl.EndTransaction(ctx, kgo.TryCommit); err != nil {
		t.Fatal(err)
	}

	b := newTx(t, c, "b")
	b.cl.BeginTransaction()
	conf, err := claim(ctx, l.Guard("b"), b, srcs(3, 4))
	if err != nil {
		t.Fatal(err)
	}
	if !conf[0] || conf[1] {
		t.Fatalf("conflicts %v, want [true false]: 3 was committed by a, 4 was not", conf)
	}
	b.cl.EndTransaction(ctx, kgo.TryAbort)
	if got := l.Guard("x").Committed(srcs(1, 3, 4)); !got[0] || !got[1] || got[2] {
		t.Fatalf("Committed = %v, want [true true false]", got)
	}
}

func TestAClaimWaitsForAnEarlierPendingClaimAndProceedsWhenItAborts(t *testing.T) {
	c, _ := kfake.NewCluster(kfake.NumBrokers(1))
	defer c.Close()
	l := openTestLedger(t, c)
	ctx := context.Background()

	a := newTx(t, c, "a")
	a.cl.BeginTransaction()
	if _, err := claim(ctx, l.Guard("a"), a, srcs(7)); err != nil {
		t.Fatal(err)
	}
	b := newTx(t, c, "b")
	b.cl.BeginTransaction()
	var (
		conf []bool
		err  error
		wg   sync.WaitGroup
	)
	wg.Add(1)
	start := time.Now()
	go func() {
		defer wg.Done()
		conf, err = claim(ctx, l.Guard("b"), b, srcs(7))
	}()
	time.Sleep(300 * time.Millisecond)
	if err := a.cl.EndTransaction(ctx, kgo.TryAbort); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	if err != nil || anyOf(conf) {
		t.Fatalf("after a aborted: conflicts %v, %v; want none", conf, err)
	}
	if time.Since(start) < 300*time.Millisecond {
		t.Fatal("b did not wait for a's pending claim")
	}
}

func TestAClaimGivesUpWhenAnEarlierClaimStaysPendingTooLong(t *testing.T) {
	c, _ := kfake.NewCluster(kfake.NumBrokers(1))
	defer c.Close()
	l := openTestLedger(t, c)
	ctx := context.Background()
	a := newTx(t, c, "a")
	a.cl.BeginTransaction()
	if _, err := claim(ctx, l.Guard("a"), a, srcs(9)); err != nil {
		t.Fatal(err)
	}
	b := newTx(t, c, "b")
	b.cl.BeginTransaction()
	if _, err := claim(ctx, l.Guard("b"), b, srcs(9)); !errors.Is(err, ErrClaimWaitTimeout) {
		t.Fatalf("err = %v, want ErrClaimWaitTimeout", err)
	}
}

func TestResolveTellsWhetherTheLastClaimCommitted(t *testing.T) {
	c, _ := kfake.NewCluster(kfake.NumBrokers(1))
	defer c.Close()
	l := openTestLedger(t, c)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	a := newTx(t, c, "a")
	g := l.Guard("a")
	for i, commit := range []bool{true, false} {
		a.cl.BeginTransaction()
		if conf, err := claim(ctx, g, a, srcs(int64(20+i))); err != nil || anyOf(conf) {
			t.Fatalf("claim: %v, %v", conf, err)
		}
		if err := a.cl.EndTransaction(ctx, kgo.TransactionEndTry(commit)); err != nil {
			t.Fatal(err)
		}
		got, err := g.Resolve(ctx)
		if err != nil || got != commit {
			t.Fatalf("Resolve = %v, %v; want %v", got, err, commit)
		}
	}
}

func anyOf(bs []bool) bool {
	for _, b := range bs {
		if b {
			return true
		}
	}
	return false
}

func TestAReadOnlyLedgerSeesCommitsAndCreatesNothing(t *testing.T) {
	c, _ := kfake.NewCluster(kfake.NumBrokers(1))
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cfg := LedgerConfig{
		ClientOpts: []kgo.Opt{kgo.SeedBrokers(c.ListenAddrs()...)},
		Topic:      "p.ledger", ClaimWait: 3 * time.Second, SnapshotEvery: -1,
		Markers: MarkersAtSameOrNextEpoch, ReadOnly: true,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
	}
	if _, err := OpenLedger(ctx, cfg); !errors.Is(err, ErrNoLedger) {
		t.Fatalf("OpenLedger of a missing ledger, read-only: %v; want ErrNoLedger", err)
	}
	cl, _ := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...))
	defer cl.Close()
	if td, err := kadm.NewClient(cl).ListTopics(ctx); err != nil || td.Has("p.ledger") || td.Has("p.ledger.snapshots") {
		t.Fatalf("topics after a read-only open: %v, %v; want no ledger topics", td.Names(), err)
	}

	l := openTestLedger(t, c) // creates the ledger
	a := newTx(t, c, "a")
	a.cl.BeginTransaction()
	if _, err := claim(ctx, l.Guard("a"), a, srcs(5)); err != nil {
		t.Fatal(err)
	}
	if err := a.cl.EndTransaction(ctx, kgo.TryCommit); err != nil {
		t.Fatal(err)
	}
	ro, err := OpenLedger(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer ro.Close()
	if got := ro.Guard("look").Committed(srcs(5, 6)); !got[0] || got[1] {
		t.Fatalf("read-only Committed = %v, want [true false]", got)
	}
}

// The relay creates its ledger topics so that a claim acks=all accepted
// survives the loss of a broker: 3 replicas (every broker of a smaller
// cluster), min.insync.replicas 2 with 3 replicas, unclean leader election
// off; with 2 replicas the cluster's own min.insync.replicas stands.
func TestTheLedgerTopicsAreCreatedToSurviveABrokerLoss(t *testing.T) {
	for _, tc := range []struct {
		name          string
		brokers       int
		clusterMinISR string // the cluster's default; "" leaves Kafka's 1
		rf            int
		minISR        string
		onTopic       bool // min.insync.replicas is set on the topic
	}{
		{"one broker: one replica, the cluster's min.insync.replicas", 1, "", 1, "1", false},
		{"two brokers: two replicas, and the cluster's min.insync.replicas of 2 is not lowered", 2, "2", 2, "2", false},
		{"three brokers: three replicas, two of them in sync for a write", 3, "", 3, "2", true},
		{"five brokers: still three replicas", 5, "", 3, "2", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			opts := []kfake.Opt{kfake.NumBrokers(tc.brokers)}
			if tc.clusterMinISR != "" {
				opts = append(opts, kfake.BrokerConfigs(map[string]string{MinInsyncReplicas: tc.clusterMinISR}))
			}
			c, err := kfake.NewCluster(opts...)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			openTestLedger(t, c)
			cl, _ := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...))
			defer cl.Close()
			adm := kadm.NewClient(cl)
			ctx := context.Background()
			for _, topic := range []string{"p.ledger", "p.ledger.snapshots"} {
				td, err := adm.ListTopics(ctx, topic)
				if err != nil {
					t.Fatal(err)
				}
				for _, p := range td[topic].Partitions {
					if len(p.Replicas) != tc.rf {
						t.Errorf("%s[%d] has %d replicas, want %d", topic, p.Partition, len(p.Replicas), tc.rf)
					}
				}
				rcs, err := adm.DescribeTopicConfigs(ctx, topic)
				if err != nil {
					t.Fatal(err)
				}
				rc, err := rcs.On(topic, nil)
				if err != nil {
					t.Fatal(err)
				}
				got := map[string]kadm.Config{}
				for _, cfg := range rc.Configs {
					got[cfg.Key] = cfg
				}
				isr := got[MinInsyncReplicas]
				if isr.MaybeValue() != tc.minISR || (isr.Source == kmsg.ConfigSourceDynamicTopicConfig) != tc.onTopic {
					t.Errorf("%s: min.insync.replicas %s from %s; want %s, set on the topic %v", topic, isr.MaybeValue(), isr.Source, tc.minISR, tc.onTopic)
				}
				if u := got[UncleanLeaderElection]; u.MaybeValue() != "false" || u.Source != kmsg.ConfigSourceDynamicTopicConfig {
					t.Errorf("%s: unclean.leader.election.enable %q from %s; want false, set on the topic", topic, u.MaybeValue(), u.Source)
				}
			}
		})
	}
}
