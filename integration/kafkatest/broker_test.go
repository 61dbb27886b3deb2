package kafkatest_test

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sharerelay/sharerelay/integration/kafkatest"
)

func TestMain(m *testing.M) { kafkatest.Main(m) }

func TestLocalBrokerSupportsShareGroupsAndTransactions(t *testing.T) {
	seeds := kafkatest.Bootstrap(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()

	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	resp, err := kmsg.NewPtrApiVersionsRequest().RequestWith(ctx, cl)
	if err != nil {
		t.Fatalf("ApiVersions: %v", err)
	}
	features := map[string]int16{}
	for _, f := range resp.FinalizedFeatures {
		features[f.Name] = f.MaxVersionLevel
		t.Logf("finalized feature %s = %d (min %d)", f.Name, f.MaxVersionLevel, f.MinVersionLevel)
	}
	if v := features["share.version"]; v < 1 {
		t.Errorf("share.version = %d, want >= 1", v)
	}
	if v := features["transaction.version"]; v < 2 {
		t.Errorf("transaction.version = %d, want >= 2", v)
	}

	topic := kafkatest.NewTopic(t, seeds, 1)
	produceCommitted(ctx, t, seeds, topic, "txn-"+topic, "hello")
	if got := consumeOne(ctx, t, seeds, topic); got != "hello" {
		t.Fatalf("read_committed value = %q, want %q", got, "hello")
	}
}

func TestBrokerRestartKeepsData(t *testing.T) {
	b := kafkatest.LocalBroker(t)
	seeds := []string{b.Addr()}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()

	topic := kafkatest.NewTopic(t, seeds, 1)
	produceCommitted(ctx, t, seeds, topic, "txn-"+topic, "survives")
	// EndTxn returns once PREPARE_COMMIT is logged; the markers follow
	// asynchronously. A single combined node killed before writing them
	// restarts with a hanging transaction: while its old registration is
	// fenced the partition has no leader, and the coordinator drops the
	// markers as if the topic were deleted (KAFKA-5202 logic). So wait
	// for the last stable offset to reach the end before kill -9.
	waitStable(ctx, t, seeds, topic)

	if err := b.Kill(); err != nil {
		t.Fatal(err)
	}
	began := time.Now()
	if err := b.Restart(ctx); err != nil {
		t.Fatal(err)
	}
	t.Logf("restart after kill -9 took %s", time.Since(began).Round(time.Millisecond))

	if got := consumeOne(ctx, t, seeds, topic); got != "survives" {
		t.Fatalf("value after restart = %q, want %q", got, "survives")
	}
}

// produceCommitted writes one record in a committed transaction.
func produceCommitted(ctx context.Context, t *testing.T, seeds []string, topic, txnID, value string) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.TransactionalID(txnID), kgo.DefaultProduceTopic(topic))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if err := cl.BeginTransaction(); err != nil {
		t.Fatalf("begin transaction: %v", err)
	}
	if err := cl.ProduceSync(ctx, kgo.StringRecord(value)).FirstErr(); err != nil {
		t.Fatalf("produce: %v", err)
	}
	if err := cl.EndTransaction(ctx, kgo.TryCommit); err != nil {
		t.Fatalf("commit: %v", err)
	}
}

// waitStable waits until partition 0's last stable offset (read_committed
// end) equals its high watermark, i.e. no transaction is open on it.
func waitStable(ctx context.Context, t *testing.T, seeds []string, topic string) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	for {
		end, err1 := adm.ListEndOffsets(ctx, topic)
		stable, err2 := adm.ListCommittedOffsets(ctx, topic)
		if err1 == nil && err2 == nil {
			e, _ := end.Lookup(topic, 0)
			s, _ := stable.Lookup(topic, 0)
			if e.Err == nil && s.Err == nil && e.Offset > 0 && s.Offset == e.Offset {
				return
			}
		}
		select {
		case <-ctx.Done():
			t.Fatalf("%s never became stable: %v", topic, ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// consumeOne reads the first record of topic with read_committed isolation.
func consumeOne(ctx context.Context, t *testing.T, seeds []string, topic string) string {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.ConsumeTopics(topic),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	for {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("no record in %s: %v", topic, err)
		}
		fs.EachError(func(topic string, p int32, err error) { t.Logf("fetch %s[%d]: %v", topic, p, err) })
		if recs := fs.Records(); len(recs) > 0 {
			return string(recs[0].Value)
		}
	}
}
