package relay

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"go.uber.org/goleak"

	"github.com/sharerelay/sharerelay/audit"
	"github.com/sharerelay/sharerelay/config"
	"github.com/sharerelay/sharerelay/eos"
	"github.com/sharerelay/sharerelay/internal/failpoint"
	"github.com/sharerelay/sharerelay/internal/kfaketest"
	"github.com/sharerelay/sharerelay/lineage"
	"github.com/sharerelay/sharerelay/metrics"
	"github.com/sharerelay/sharerelay/sharegroup"
	"github.com/sharerelay/sharerelay/transform"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// fakeCluster starts kfake with the topics the tests' pipeline uses.
func fakeCluster(t *testing.T) *kfake.Cluster {
	t.Helper()
	return kfaketest.Cluster(t, kfake.SeedTopics(2, "orders", "jobs"), kfake.SeedTopics(1, "jobs.dlq"))
}

func pipeline(t *testing.T, c *kfake.Cluster, extra string) *config.Pipeline {
	t.Helper()
	return kfaketest.Pipeline(t, c, extra)
}

func seedOrders(t *testing.T, c *kfake.Cluster, n int) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	var recs []*kgo.Record
	for i := 1; i <= n; i++ {
		recs = append(recs, &kgo.Record{Topic: "orders", Key: strconv.AppendInt(nil, int64(i), 10), Value: fmt.Appendf(nil, `{"order_id":%d}`, i)})
	}
	if err := cl.ProduceSync(context.Background(), recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
}

// runUntil runs the relay until outputs+dead letters reach want (or 20s),
// stops it, and returns the tallies.
func runUntil(t *testing.T, r *Relay, c *kfake.Cluster, want int) (jobs, dlq audit.Tally) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- r.Run(ctx) }()
	seeds := []kgo.Opt{kgo.SeedBrokers(c.ListenAddrs()...)}
	deadline := time.Now().Add(20 * time.Second)
	for {
		var err1, err2 error
		jobs, err1 = audit.ReadCommitted(ctx, seeds, "jobs")
		dlq, err2 = audit.ReadCommitted(ctx, seeds, "jobs.dlq")
		if err := errors.Join(err1, err2); err != nil {
			t.Fatal(err)
		}
		if jobs.Records+dlq.Records >= want || time.Now().After(deadline) {
			break
		}
		select {
		case err := <-done:
			t.Fatalf("relay stopped early: %v", err)
		case <-time.After(100 * time.Millisecond):
		}
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Run returned %v after cancel, want nil", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("Run did not return within 20s of cancel")
	}
	return jobs, dlq
}

func quietLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// A consumer of the source polls again only once its previous poll is
// acknowledged, and records left undecided are released, not accepted:
// they come back with their delivery count raised.
func TestAnUnresolvedBatchIsReleasedAndItsConsumerWaitsForIt(t *testing.T) {
	c := fakeCluster(t)
	seedOrders(t, c, 10)
	cfgCl, _ := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...))
	if err := sharegroup.SetConfigs(context.Background(), cfgCl, "g", map[string]string{sharegroup.AutoOffsetReset: "earliest"}); err != nil {
		t.Fatal(err)
	}
	cfgCl.Close()

	cl, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...), kgo.ShareGroup("g"), kgo.ConsumeTopics("orders"))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	var unresolved int
	src := newShareSource([]*kgo.Client{cl}, "g", 100, false, func(n int) { unresolved += n })
	defer src.close()

	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	// Take records and decide nothing about them.
	var b *batch
	for (b == nil || b.len() == 0) && ctx.Err() == nil {
		b, _ = src.next(ctx, time.Second, 100, 0)
	}
	first := b.len()
	// While they are held, the consumer does not poll again.
	if held, _ := src.next(ctx, 500*time.Millisecond, 100, 0); held.len() != 0 {
		t.Fatalf("the consumer polled again (%d records) before its poll was acknowledged", held.len())
	}
	src.ack(b)
	if unresolved != first {
		t.Fatalf("the safety net counted %d undecided records, want %d", unresolved, first)
	}
	// They come back: released, not accepted.
	var redelivered int
	for redelivered < first && ctx.Err() == nil {
		b, _ := src.next(ctx, time.Second, 100, 0)
		for i, r := range b.recs {
			if r.DeliveryCount() >= 2 {
				redelivered++
			}
			b.set(i, kgo.AckAccept)
		}
		src.ack(b)
	}
	if redelivered < first {
		t.Fatalf("%d of the %d unresolved records came back; the rest were accepted without being processed", redelivered, first)
	}
}

// TestFranzGoAutoAcceptsAnUnresolvedBatch shows the hazard the shareSource
// exists for, so that the test above can fail: with the raw client, records
// left undecided are accepted by the next poll and never come back.
func TestFranzGoAutoAcceptsAnUnresolvedBatch(t *testing.T) {
	c := fakeCluster(t)
	seedOrders(t, c, 10)
	cfgCl, _ := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...))
	if err := sharegroup.SetConfigs(context.Background(), cfgCl, "g", map[string]string{sharegroup.AutoOffsetReset: "earliest"}); err != nil {
		t.Fatal(err)
	}
	cfgCl.Close()
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...), kgo.ShareGroup("g"), kgo.ConsumeTopics("orders"))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	got := 0
	for got == 0 && ctx.Err() == nil {
		got = len(cl.PollRecords(ctx, 100).Records())
	}
	pctx, pcancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer pcancel()
	back := 0
	for pctx.Err() == nil {
		back += len(cl.PollRecords(pctx, 100).Records())
	}
	if back != 0 {
		t.Fatalf("franz-go redelivered %d records; the auto-accept hazard is gone and shareSource's safety net can be revisited", back)
	}
}

func TestTheRelayCopiesEveryRecordOnceWithLineageHeaders(t *testing.T) {
	c := fakeCluster(t)
	seedOrders(t, c, 200)
	reg := prometheus.NewRegistry()
	r, err := New(Options{Pipeline: pipeline(t, c, `transforms: [{type: set, field: status, value: packing}]`), Instance: "t", Registerer: reg, Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	jobs, dlq := runUntil(t, r, c, 200)
	if jobs.Records != 200 || len(jobs.BySource) != 200 || jobs.Unlabelled != 0 || dlq.Records != 0 {
		t.Fatalf("jobs %d (unique %d, unlabelled %d), dead letters %d; want 200 unique labelled jobs and no dead letter",
			jobs.Records, len(jobs.BySource), jobs.Unlabelled, dlq.Records)
	}
	if v := testutil.ToFloat64(r.Metrics().InvariantBreaks); v != 0 {
		t.Fatalf("invariant violations = %v", v)
	}
}

func TestAPanickingTransformDeadLettersOnlyThatRecord(t *testing.T) {
	c := fakeCluster(t)
	seedOrders(t, c, 50)
	chain := transform.NewChain().Add("0:boom", transform.Func(func(_ context.Context, r *transform.Record) ([]*transform.Record, error) {
		if string(r.Key) == "13" {
			panic("unlucky order")
		}
		return []*transform.Record{r}, nil
	}))
	r, err := New(Options{Pipeline: pipeline(t, c, ""), Instance: "t", Chain: chain, Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	jobs, dlq := runUntil(t, r, c, 50)
	if jobs.Records != 49 || dlq.Records != 1 {
		t.Fatalf("jobs %d, dead letters %d; want 49 and 1", jobs.Records, dlq.Records)
	}
	// The dead letter says why, and keeps the original record.
	cl, _ := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...), kgo.ConsumeTopics("jobs.dlq"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	recs := cl.PollFetches(ctx).Records()
	if len(recs) != 1 {
		t.Fatalf("read %d dead letters", len(recs))
	}
	h := map[string]string{}
	for _, x := range recs[0].Headers {
		h[x.Key] = string(x.Value)
	}
	if string(recs[0].Key) != "13" || h[lineage.HeaderDLQErrorClass] != "panic" || h[lineage.HeaderDLQStep] != "0:boom" ||
		h[lineage.HeaderDLQKind] != lineage.DLQKindPermanent || h[lineage.HeaderDLQPipeline] != "test" || h[lineage.HeaderSourceTopic] != "orders" {
		t.Fatalf("dead letter key %q headers %v", recs[0].Key, h)
	}
}

// A transaction that fails for a reason retrying cures is aborted and
// written again with the records still held: no delivery is spent.
// (Exactly-once: at-least-once writes without transactions, so what it
// wrote before a failure stays written, a duplicate it allows.)
func TestAFailedTransactionIsWrittenAgainWithoutSpendingADelivery(t *testing.T) {
	c := fakeCluster(t)
	seedOrders(t, c, 100)
	if err := failpoint.Enable(failpoint.BeforeCommit + "=error@1"); err != nil {
		t.Fatal(err)
	}
	defer failpoint.Disable()
	p := pipeline(t, c, "")
	p.Delivery = config.ExactlyOnce
	r, err := New(Options{Pipeline: p, Instance: "t", Logger: quietLogger(), LedgerMarkers: eos.MarkersAtSameOrNextEpoch})
	if err != nil {
		t.Fatal(err)
	}
	jobs, _ := runUntil(t, r, c, 100)
	if jobs.Records != 100 || len(jobs.BySource) != 100 {
		t.Fatalf("jobs %d (unique %d), want 100 unique", jobs.Records, len(jobs.BySource))
	}
	m := r.Metrics()
	if v := testutil.ToFloat64(m.Transactions.WithLabelValues("0", "aborted")) + testutil.ToFloat64(m.Transactions.WithLabelValues("1", "aborted")); v != 1 {
		t.Fatalf("aborted transactions = %v, want 1", v)
	}
	if v := testutil.ToFloat64(m.Redeliveries.WithLabelValues("0")) + testutil.ToFloat64(m.Redeliveries.WithLabelValues("1")); v != 0 {
		t.Fatalf("redeliveries = %v: the failed transaction's records were released instead of held", v)
	}
	if v := testutil.ToFloat64(m.WriteFailures.WithLabelValues("0", "cluster")) + testutil.ToFloat64(m.WriteFailures.WithLabelValues("1", "cluster")); v != 1 {
		t.Fatalf("write_failures_total{class=cluster} = %v, want 1", v)
	}
}

func TestRetryableFailuresAreDeadLetteredOnTheLastAttempt(t *testing.T) {
	c := fakeCluster(t)
	seedOrders(t, c, 30)
	// kfake's delivery limit is 5, so the default max attempts is 3
	// (two spare deliveries: config.DefaultMaxAttempts).
	r, err := New(Options{Pipeline: pipeline(t, c, `transforms: [{type: fail, kind: retry, reason: flaky, when: {field: order_id, modulo: 10, remainder: 0}}]`), Instance: "t", Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	jobs, dlq := runUntil(t, r, c, 30)
	if jobs.Records != 27 || dlq.Records != 3 {
		t.Fatalf("jobs %d, dead letters %d; want 27 and 3", jobs.Records, dlq.Records)
	}
	if v := testutil.ToFloat64(r.Metrics().Redeliveries.WithLabelValues("0")) + testutil.ToFloat64(r.Metrics().Redeliveries.WithLabelValues("1")); v != 6 {
		t.Fatalf("redeliveries = %v, want 6 (3 records × deliveries 2..3)", v)
	}
}

// setTopicConfig sets a topic config on the fake cluster.
func setTopicConfig(t *testing.T, c *kfake.Cluster, topic, key, value string) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	resp, err := kadm.NewClient(cl).AlterTopicConfigs(context.Background(), []kadm.AlterConfig{{Name: key, Value: &value}}, topic)
	if err == nil {
		_, err = resp.On(topic, nil)
	}
	if err != nil {
		t.Fatal(err)
	}
}

// seedBig writes order n with a value of size bytes that does not
// compress (random).
func seedBig(t *testing.T, c *kfake.Cluster, n, size int) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...), kgo.ProducerBatchMaxBytes(16<<20))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	v := make([]byte, size)
	rand.Read(v)
	v = fmt.Appendf(v[:0], `{"order_id":%d,"blob":"%x"}`, n, v[:size/2-30])
	r := &kgo.Record{Topic: "orders", Key: strconv.AppendInt(nil, int64(n), 10), Value: v,
		Headers: []kgo.RecordHeader{{Key: "trace", Value: []byte("t-" + strconv.Itoa(n))}}}
	if err := cl.ProduceSync(context.Background(), r).FirstErr(); err != nil {
		t.Fatal(err)
	}
}

func deadLetters(t *testing.T, c *kfake.Cluster) []*kgo.Record {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...), kgo.ConsumeTopics("jobs.dlq"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return cl.PollFetches(ctx).Records()
}

func headerMap(r *kgo.Record) map[string]string {
	h := map[string]string{}
	for _, x := range r.Headers {
		h[x.Key] = string(x.Value)
	}
	return h
}

// A record too large for the output topic is dead-lettered at once (kind
// write, the reason in the headers) instead of failing every transaction
// until the broker archives it; the rest of its batch is written.
func TestARecordTooLargeForTheOutputTopicIsDeadLetteredNotRetried(t *testing.T) {
	c := fakeCluster(t)
	setTopicConfig(t, c, "jobs", "max.message.bytes", "3000")
	seedOrders(t, c, 20)
	seedBig(t, c, 21, 6000)
	seedOrders(t, c, 19) // orders 1..19 again: 40 records in all
	r, err := New(Options{Pipeline: pipeline(t, c, ""), Instance: "t", Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	jobs, dlq := runUntil(t, r, c, 40)
	if jobs.Records != 39 || dlq.Records != 1 {
		t.Fatalf("jobs %d, dead letters %d; want 39 and 1", jobs.Records, dlq.Records)
	}
	dl := deadLetters(t, c)[0]
	h := headerMap(dl)
	if string(dl.Key) != "21" || h[lineage.HeaderDLQKind] != lineage.DLQKindWrite || h[lineage.HeaderDLQStage] != lineage.DLQStageProduce ||
		h[lineage.HeaderDLQErrorClass] != "MESSAGE_TOO_LARGE" || len(dl.Value) < 5900 {
		t.Fatalf("dead letter key %q (%d value bytes) headers %v", dl.Key, len(dl.Value), h)
	}
	m := r.Metrics()
	if v := testutil.ToFloat64(m.RecordsRejected.WithLabelValues("0")) + testutil.ToFloat64(m.RecordsRejected.WithLabelValues("1")); v != 1 {
		t.Fatalf("records_rejected_total = %v, want 1", v)
	}
	if v := testutil.ToFloat64(m.Redeliveries.WithLabelValues("0")) + testutil.ToFloat64(m.Redeliveries.WithLabelValues("1")); v != 0 {
		t.Fatalf("redeliveries = %v: the too-large record spent deliveries", v)
	}
}

// A dead letter too large for the dead-letter topic is written without the
// source value, saying so, rather than lost; it keeps the source's key and
// headers, its coordinates and the reason.
func TestADeadLetterTooLargeForItsTopicIsWrittenCutDown(t *testing.T) {
	c := fakeCluster(t)
	setTopicConfig(t, c, "jobs", "max.message.bytes", "3000")
	setTopicConfig(t, c, "jobs.dlq", "max.message.bytes", "3000")
	seedOrders(t, c, 10)
	seedBig(t, c, 11, 6000)
	r, err := New(Options{Pipeline: pipeline(t, c, ""), Instance: "t", Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	jobs, dlq := runUntil(t, r, c, 11)
	if jobs.Records != 10 || dlq.Records != 1 {
		t.Fatalf("jobs %d, dead letters %d; want 10 and 1", jobs.Records, dlq.Records)
	}
	dl := deadLetters(t, c)[0]
	h := headerMap(dl)
	if len(dl.Value) != 0 || string(dl.Key) != "11" || h[lineage.HeaderDLQValueOmitted] == "" || h[lineage.HeaderDLQKind] != lineage.DLQKindWrite ||
		h[lineage.HeaderSourceOffset] == "" || h[lineage.HeaderDLQErrorClass] != "MESSAGE_TOO_LARGE" ||
		h["trace"] != "t-11" || h[lineage.HeaderDLQHeadersOmitted] != "" {
		t.Fatalf("dead letter key %q (%d value bytes) headers %v", dl.Key, len(dl.Value), h)
	}
	if v := testutil.ToFloat64(r.Metrics().DeadLettersTruncated.WithLabelValues("0")) + testutil.ToFloat64(r.Metrics().DeadLettersTruncated.WithLabelValues("1")); v != 1 {
		t.Fatalf("dead_letters_truncated_total = %v, want 1", v)
	}
}

// Filtered records are claimed with the rest of their batch, so the
// ledger's committed set stays a handful of ranges instead of one hole per
// filtered record (before: 1,000 filtered records left 653 ranges).
func TestFilteredRecordsLeaveNoHoleInTheLedger(t *testing.T) {
	n := 4000
	if v, err := strconv.Atoi(os.Getenv("FILTER_RECORDS")); err == nil && v > 0 {
		n = v // FILTER_RECORDS=1000000 for the measurement
	}
	c := fakeCluster(t)
	seedOrders(t, c, n)
	p := pipeline(t, c, `transforms: [{type: filter, when: {field: order_id, modulo: 2, remainder: 0}}]`)
	p.Delivery = config.ExactlyOnce
	p.Batch.MaxRecords = 500
	r, err := New(Options{Pipeline: p, Instance: "t", Logger: quietLogger(), LedgerMarkers: eos.MarkersAtSameOrNextEpoch})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- r.Run(ctx) }()
	deadline := time.Now().Add(5 * time.Minute)
	var stats eos.Stats
	for {
		time.Sleep(200 * time.Millisecond)
		m := r.Metrics()
		got := testutil.ToFloat64(m.RecordsFiltered.WithLabelValues("0")) + testutil.ToFloat64(m.RecordsFiltered.WithLabelValues("1")) +
			testutil.ToFloat64(m.RecordsProduced.WithLabelValues("0")) + testutil.ToFloat64(m.RecordsProduced.WithLabelValues("1"))
		if int(got) >= n {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("only %v of %d records relayed in 5 minutes", got, n)
		}
	}
	if r.ledger != nil {
		if err := r.ledger.WaitCaughtUp(ctx); err != nil {
			t.Fatal(err)
		}
		stats = r.ledger.Stats()
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	snap, err := json.Marshal(r.ledger.Snapshot())
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d records, half filtered: %d source partitions, %d committed ranges, %d pending; snapshot %d bytes", n, stats.Partitions, stats.Ranges, stats.Pending, len(snap))
	if stats.Ranges > 2*stats.Partitions {
		t.Fatalf("%d committed ranges for %d source partitions: filtered records left holes", stats.Ranges, stats.Partitions)
	}
	// A hole per filtered record would be ~30 bytes each in the snapshot:
	// at 4,000 records 60 KB, at a million 15 MB, near the 16 MiB cap.
	if len(snap) > 4096 {
		t.Fatalf("snapshot of %d bytes for %d records: it grows with history", len(snap), n)
	}
}

func TestTransformConcurrencyRunsABatchsStepsAtOnceAndKeepsItsOrder(t *testing.T) {
	c := fakeCluster(t)
	seedOrders(t, c, 200)
	var inFlight, most atomic.Int32
	chain := transform.NewChain().Add("0:slow", transform.Func(func(_ context.Context, r *transform.Record) ([]*transform.Record, error) {
		n := inFlight.Add(1)
		defer inFlight.Add(-1)
		for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
		}
		time.Sleep(2 * time.Millisecond)
		return []*transform.Record{r}, nil
	}))
	p := pipeline(t, c, "")
	p.Batch.TransformConcurrency = 8
	p.Workers, p.Batch.Consumers = 1, 1
	r, err := New(Options{Pipeline: p, Instance: "t", Chain: chain, Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	jobs, _ := runUntil(t, r, c, 200)
	if jobs.Records != 200 || len(jobs.BySource) != 200 {
		t.Fatalf("jobs: %d records from %d sources, want 200 from 200", jobs.Records, len(jobs.BySource))
	}
	if m := most.Load(); m < 2 || m > 8 {
		t.Fatalf("at most %d records were transformed at once, want between 2 and 8", m)
	}
	// Within each partition of the output, the outputs of a batch keep
	// the order of their sources (one worker: the source offsets of a
	// partition only grow).
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...), kgo.ConsumeTopics("jobs"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	last := map[[2]int64]int64{} // (output partition, source partition) -> last source offset
	seen := 0
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for seen < 200 && ctx.Err() == nil {
		cl.PollFetches(ctx).EachRecord(func(rec *kgo.Record) {
			seen++
			src, ok := lineage.SourceOf(rec)
			if !ok {
				t.Fatalf("output without lineage: %v", rec)
			}
			k := [2]int64{int64(rec.Partition), int64(src.Partition)}
			if prev, ok := last[k]; ok && src.Offset < prev {
				t.Errorf("output partition %d: source %s[%d]@%d after @%d", rec.Partition, src.Topic, src.Partition, src.Offset, prev)
			}
			last[k] = src.Offset
		})
	}
}

func TestStartUpWaitsBrieflyForATopicCreatedJustBefore(t *testing.T) {
	old := topicGrace
	topicGrace = 2 * time.Second
	t.Cleanup(func() { topicGrace = old })

	t.Run("appears within the grace", func(t *testing.T) {
		c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(2, "orders", "jobs"),
			kfake.BrokerConfigs(map[string]string{"group.share.heartbeat.interval.ms": "200"}))
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		seedOrders(t, c, 30)
		r, err := New(Options{Pipeline: pipeline(t, c, ""), Instance: "a", Registerer: prometheus.NewRegistry(), Logger: quietLogger()})
		if err != nil {
			t.Fatal(err)
		}
		// The dead-letter topic shows up half a second after the relay
		// started looking for it.
		time.AfterFunc(500*time.Millisecond, func() {
			cl, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...))
			if err != nil {
				return
			}
			defer cl.Close()
			if _, err := kadm.NewClient(cl).CreateTopic(context.Background(), 1, 1, nil, "jobs.dlq"); err != nil {
				t.Errorf("creating jobs.dlq: %v", err)
			}
		})
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- r.Run(ctx) }()
		stopped := false
		defer func() {
			cancel()
			if !stopped {
				if err := <-done; err != nil {
					t.Errorf("Run returned %v after cancel, want nil", err)
				}
			}
		}()
		deadline := time.Now().Add(20 * time.Second)
		for {
			jobs, err := audit.ReadCommitted(ctx, []kgo.Opt{kgo.SeedBrokers(c.ListenAddrs()...)}, "jobs")
			if err != nil {
				t.Fatal(err)
			}
			if jobs.Records == 30 {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("relayed %d records in 20s, want 30", jobs.Records)
			}
			select {
			case err := <-done:
				stopped = true
				t.Fatalf("relay stopped: %v", err)
			case <-time.After(100 * time.Millisecond):
			}
		}
	})
	t.Run("still missing after the grace", func(t *testing.T) {
		c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(2, "orders", "jobs"))
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		r, err := New(Options{Pipeline: pipeline(t, c, ""), Instance: "a", Registerer: prometheus.NewRegistry(), Logger: quietLogger()})
		if err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		err = r.Run(context.Background())
		if err == nil || !strings.Contains(err.Error(), "jobs.dlq") || !strings.Contains(err.Error(), "do not exist") {
			t.Fatalf("Run = %v, want an error naming the missing topic jobs.dlq", err)
		}
		if took := time.Since(start); took < topicGrace {
			t.Fatalf("gave up after %s, before the grace of %s", took, topicGrace)
		}
	})
}

func TestExtraCopiesMapsEveryExtraCopyOfARecordToTheWrittenOne(t *testing.T) {
	rec := func(p int32, o int64) *kgo.Record { return &kgo.Record{Topic: "orders", Partition: p, Offset: o} }
	recs := []*kgo.Record{rec(0, 1), rec(1, 1), rec(0, 1), rec(0, 2), rec(0, 1), {Topic: "other", Partition: 0, Offset: 1}}
	got := extraCopies(recs)
	if want := map[int]int{2: 0, 4: 0}; !maps.Equal(got, want) {
		t.Fatalf("extraCopies = %v, want %v", got, want)
	}
	for _, batch := range [][]*kgo.Record{recs[:2], {rec(0, 5), rec(0, 3), rec(1, 1)}} {
		if got := extraCopies(batch); got != nil {
			t.Fatalf("extraCopies of a batch without copies = %v, want nil", got)
		}
	}
}

// BenchmarkExtraCopiesOfABatchWithoutCopies is the cost extraCopies adds to every
// batch of the hot path: 1,500 records of 3 partitions in offset order.
func BenchmarkExtraCopiesOfABatchWithoutCopies(b *testing.B) {
	recs := make([]*kgo.Record, 1500)
	for i := range recs {
		recs[i] = &kgo.Record{Topic: "orders", Partition: int32(i % 3), Offset: int64(i / 3)}
	}
	b.ReportAllocs()
	for b.Loop() {
		if extraCopies(recs) != nil {
			b.Fatal("copies found")
		}
	}
}

func TestARaisedDeliveryLimitAddsSparesNotAttempts(t *testing.T) {
	r := &Relay{p: &config.Pipeline{}, log: slog.New(slog.DiscardHandler), m: metrics.New(prometheus.NewRegistry(), "t")}
	r.setLimits(sharegroup.Limits{DeliveryCountLimit: 10, LockDurationMs: 30000})
	if got := r.limits.attempts(); got != 8 {
		t.Fatalf("a group limit of 10 set by its operator: %d attempts, want 8", got)
	}
	r = &Relay{p: &config.Pipeline{}, log: slog.New(slog.DiscardHandler), m: metrics.New(prometheus.NewRegistry(), "t")}
	r.limits.attemptsFrom = 5 // the relay raised the broker's default of 5
	r.setLimits(sharegroup.Limits{DeliveryCountLimit: 10, LockDurationMs: 30000})
	if got := r.limits.attempts(); got != 3 {
		t.Fatalf("a limit the relay raised from 5 to 10: %d attempts, want 3 (as at 5)", got)
	}
	r.setLimits(sharegroup.Limits{DeliveryCountLimit: 4, LockDurationMs: 30000})
	if got := r.limits.attempts(); got != 2 {
		t.Fatalf("the limit lowered to 4 under the relay: %d attempts, want 2", got)
	}
}

// The last transaction of a batch commits in the background while the
// worker writes the next batch on its other lane, and the batch is
// acknowledged only once that commit has ended: here the first EndTxn is
// held until the other lane's EndTxn arrives (which a worker that waited
// for its commit never sends), then refused. Its records must come back
// and be written once; acknowledging them before the commit ended would
// lose them.
func TestABatchCommittingInTheBackgroundIsAcknowledgedOnlyWhenItsCommitEnds(t *testing.T) {
	const n = 600
	c := fakeCluster(t)
	seedOrders(t, c, n)
	var (
		mu         sync.Mutex
		first      string // the transactional id of the held EndTxn
		overlap    = make(chan struct{})
		overlapped bool
	)
	c.ControlKey(kmsg.EndTxn.Int16(), func(req kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		end := req.(*kmsg.EndTxnRequest)
		mu.Lock()
		switch {
		case first == "" && end.Commit:
			first = end.TransactionalID
			mu.Unlock()
			c.SleepControl(func() {
				select {
				case <-overlap:
				case <-time.After(10 * time.Second):
				}
			})
			c.DropControl()
			resp := end.ResponseKind().(*kmsg.EndTxnResponse)
			resp.ErrorCode = kerr.TransactionAbortable.Code
			return resp, nil, true
		case first != "" && end.TransactionalID != first && !overlapped:
			overlapped = true
			close(overlap)
		}
		mu.Unlock()
		return nil, nil, false
	})
	p := pipeline(t, c, "")
	p.Delivery = config.ExactlyOnce
	p.Workers = 1
	r, err := New(Options{Pipeline: p, Instance: "t", Logger: quietLogger(), LedgerMarkers: eos.MarkersAtSameOrNextEpoch})
	if err != nil {
		t.Fatal(err)
	}
	jobs, _ := runUntil(t, r, c, n)
	mu.Lock()
	defer mu.Unlock()
	if !overlapped {
		t.Fatalf("no other transaction ended while %s's commit was held: the worker waited for it", first)
	}
	if jobs.Records != n || len(jobs.BySource) != n || len(jobs.Duplicates()) > 0 {
		t.Fatalf("output holds %d records from %d sources (%d duplicated), want %d once each", jobs.Records, len(jobs.BySource), len(jobs.Duplicates()), n)
	}
	if got := testutil.ToFloat64(r.Metrics().Transactions.WithLabelValues("0", metrics.TxnAborted)); got < 1 {
		t.Fatalf("transactions_total{outcome=aborted} = %v, want the refused commit counted", got)
	}
}

// batch.background_commit: false: exactly-once commits each batch before
// the next with one producer a worker, so every transaction is the
// worker's one transactional id's, and the output is still exact.
func TestWithoutTheBackgroundCommitAWorkerUsesOneProducer(t *testing.T) {
	const n = 300
	for _, background := range []bool{true, false} {
		cl := fakeCluster(t)
		seedOrders(t, cl, n)
		var (
			mu  sync.Mutex
			ids = map[string]int{}
		)
		cl.ControlKey(kmsg.EndTxn.Int16(), func(req kmsg.Request) (kmsg.Response, error, bool) {
			cl.KeepControl()
			mu.Lock()
			ids[req.(*kmsg.EndTxnRequest).TransactionalID]++
			mu.Unlock()
			return nil, nil, false
		})
		p := pipeline(t, cl, "")
		p.Delivery = config.ExactlyOnce
		p.Batch.BackgroundCommit = &background
		p.Workers = 1
		r, err := New(Options{Pipeline: p, Instance: "t", Logger: quietLogger(), LedgerMarkers: eos.MarkersAtSameOrNextEpoch})
		if err != nil {
			t.Fatal(err)
		}
		jobs, _ := runUntil(t, r, cl, n)
		want := 1
		if background {
			want = 2
		}
		mu.Lock()
		if len(ids) != want {
			t.Errorf("background_commit %v: transactions ended under %d transactional ids (%v), want %d", background, len(ids), ids, want)
		}
		mu.Unlock()
		if jobs.Records != n || len(jobs.BySource) != n || len(jobs.Duplicates()) > 0 {
			t.Errorf("background_commit %v: output holds %d records from %d sources (%d duplicated), want %d once each", background, jobs.Records, len(jobs.BySource), len(jobs.Duplicates()), n)
		}
	}
}

// batch.linger: a batch under half of what the worker may hold waits for
// its other consumers' polls, up to the linger; a batch at half or more,
// or a linger of 0, takes only what is ready.
func TestASmallBatchWaitsForItsOtherConsumersPollsUpToTheLinger(t *testing.T) {
	newSource := func() (*shareSource, func(n int)) {
		s := &shareSource{arrived: make(chan struct{}, 1), fetchers: make([]*fetcher, 3)}
		hand := func(n int) {
			s.mu.Lock()
			s.waiting = append(s.waiting, &poll{recs: make([]*kgo.Record, n)})
			s.mu.Unlock()
			select {
			case s.arrived <- struct{}{}:
			default:
			}
		}
		return s, hand
	}
	ctx := context.Background()
	for _, c := range []struct {
		name      string
		first     int
		later     []int // polls handed 30 ms apart after the first
		linger    time.Duration
		wantRecs  int
		wantPolls int
		atLeast   time.Duration
		atMost    time.Duration
	}{
		// (One poll taken where a second came 30 ms later shows no wait.)
		{"merges the others' polls until it holds half", 10, []int{30, 20}, 2 * time.Second, 60, 3, 50 * time.Millisecond, 1500 * time.Millisecond},
		{"a linger of 0 takes what is ready", 10, []int{30}, 0, 10, 1, 0, time.Second},
		{"a batch at half goes at once", 50, []int{30}, 2 * time.Second, 50, 1, 0, time.Second},
		{"a trickle waits the linger, no more", 1, nil, 150 * time.Millisecond, 1, 1, 150 * time.Millisecond, time.Second},
	} {
		t.Run(c.name, func(t *testing.T) {
			s, hand := newSource()
			hand(c.first)
			var wg sync.WaitGroup
			defer wg.Wait()
			wg.Go(func() {
				for _, n := range c.later {
					time.Sleep(30 * time.Millisecond)
					hand(n)
				}
			})
			start := time.Now()
			b, err := s.next(ctx, time.Second, 100, c.linger)
			took := time.Since(start)
			if err != nil || b.len() != c.wantRecs || len(b.polls) != c.wantPolls {
				t.Fatalf("next = %d records in %d polls, %v; want %d in %d", b.len(), len(b.polls), err, c.wantRecs, c.wantPolls)
			}
			if took < c.atLeast || took > c.atMost {
				t.Fatalf("next took %s, want between %s and %s", took, c.atLeast, c.atMost)
			}
		})
	}
}

// TestABatchLeavesHalfTheConsumersPollsForTheNextBatch: a batch takes the
// polls of half the worker's consumers (rounded up), so the next batch has
// polls to start on while this one is written (at-least-once) or commits
// (exactly-once), and the consumers of the first batch fetch meanwhile.
func TestABatchLeavesHalfTheConsumersPollsForTheNextBatch(t *testing.T) {
	ctx := context.Background()
	for _, c := range []struct {
		consumers int
		wantPolls []int // polls of each batch, all of them ready at once
	}{
		{4, []int{2, 2}},
		{3, []int{2, 1}},
		{2, []int{1, 1}},
		{1, []int{1}},
		{5, []int{3, 2}},
	} {
		t.Run(fmt.Sprintf("%d consumers", c.consumers), func(t *testing.T) {
			const maxRecords = 100
			s := &shareSource{arrived: make(chan struct{}, 1), fetchers: make([]*fetcher, c.consumers)}
			for range c.consumers {
				s.waiting = append(s.waiting, &poll{recs: make([]*kgo.Record, maxRecords)})
			}
			s.arrived <- struct{}{}
			most := recordsPerBatch(c.consumers, maxRecords)
			var got []int
			for range c.wantPolls {
				b, err := s.next(ctx, 100*time.Millisecond, most, 20*time.Millisecond)
				if err != nil {
					t.Fatal(err)
				}
				got = append(got, len(b.polls))
			}
			if !slices.Equal(got, c.wantPolls) || len(s.waiting) != 0 {
				t.Fatalf("batches of %v polls (%d left waiting); want %v", got, len(s.waiting), c.wantPolls)
			}
		})
	}
}

// payloadHooks remembers every source record a relay's share consumers
// buffered and every output its producers wrote, to look at once the
// relay has stopped.
type payloadHooks struct {
	mu      sync.Mutex
	sources []*kgo.Record
	outputs []*kgo.Record
}

func (h *payloadHooks) OnFetchRecordBuffered(r *kgo.Record) {
	if r.Topic == "orders" {
		h.mu.Lock()
		h.sources = append(h.sources, r)
		h.mu.Unlock()
	}
}

func (h *payloadHooks) OnProduceRecordUnbuffered(r *kgo.Record, err error) {
	if r.Topic == "jobs" && err == nil {
		h.mu.Lock()
		h.outputs = append(h.outputs, r)
		h.mu.Unlock()
	}
}

// A batch whose commit runs in the background has written its outputs and
// only waits for the commit to acknowledge: its records and outputs let go
// of their keys, values and headers first, so that they do not hold their
// fetch responses in memory while the other lane writes the next batch
// (make bench, 1 KiB: the relay's peak RSS). The outputs are whole all the
// same.
func TestABatchCommittingInTheBackgroundLetsGoOfItsPayloads(t *testing.T) {
	const n = 600
	c := fakeCluster(t)
	seedOrders(t, c, n)
	h := &payloadHooks{}
	p := pipeline(t, c, "")
	p.Delivery = config.ExactlyOnce
	p.Workers = 1
	r, err := New(Options{Pipeline: p, Instance: "t", Logger: quietLogger(), LedgerMarkers: eos.MarkersAtSameOrNextEpoch,
		ClientOpts: []kgo.Opt{kgo.WithHooks(h)}})
	if err != nil {
		t.Fatal(err)
	}
	jobs, _ := runUntil(t, r, c, n)
	if jobs.Records != n || len(jobs.BySource) != n || len(jobs.Duplicates()) > 0 {
		t.Fatalf("output holds %d records from %d sources (%d duplicated), want %d once each", jobs.Records, len(jobs.BySource), len(jobs.Duplicates()), n)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.outputs) < n {
		t.Fatalf("the producers wrote %d outputs, want at least %d", len(h.outputs), n)
	}
	for _, o := range h.outputs {
		if o.Value != nil || o.Key != nil || o.Headers != nil {
			t.Fatalf("output %s[%d]@%d still holds its payload (%d value bytes, %d headers) after its commit", o.Topic, o.Partition, o.Offset, len(o.Value), len(o.Headers))
		}
	}
	// Every source record was let go of in (at least) one of its
	// deliveries; one handed over but never taken at shutdown keeps its
	// payload, which is released with its poll.
	dropped := map[[2]int64]bool{}
	for _, s := range h.sources {
		if s.Value == nil && s.Key == nil && s.Headers == nil {
			dropped[[2]int64{int64(s.Partition), s.Offset}] = true
		}
	}
	if len(dropped) != n {
		t.Fatalf("%d of %d source records let go of their payloads (%d deliveries buffered)", len(dropped), n, len(h.sources))
	}
}

// releasedAcks is what the relay's workers released, from its metrics.
func releasedAcks(r *Relay, workers int) float64 {
	n := 0.0
	for i := range workers {
		n += testutil.ToFloat64(r.Metrics().Acks.WithLabelValues(strconv.Itoa(i), metrics.AckRelease))
	}
	return n
}

// At a stop a worker writes the records it holds — its batch in flight and
// the polls its consumers handed over — instead of releasing them: every
// acquisition spends a delivery, and a record released at a stop has spent
// one for nothing (restarts would walk records to the delivery limit).
// With drain_timeout 0 the same stop releases them, so the test can fail;
// with a drain too short for what is held, the rest is released at its
// deadline and the stop still comes within it. A second run finishes the
// work, once each.
func TestAStopWritesWhatTheWorkerHoldsWithinTheDrainTimeout(t *testing.T) {
	for _, c := range []struct {
		name, drain  string
		wantReleased bool
		bound        time.Duration // how long Run may take after the cancel
	}{
		{"drain 5s writes everything held", "5s", false, 5 * time.Second},
		{"drain 0 releases what is held", "0s", true, 2 * time.Second},
		{"a drain too short releases the rest at its deadline", "150ms", true, 2 * time.Second},
	} {
		t.Run(c.name, func(t *testing.T) {
			const n = 600
			cl := fakeCluster(t)
			seedOrders(t, cl, n)
			// One worker, 4 consumers of 20: a batch of 40 records
			// takes 200 ms to transform, and the other consumers' polls
			// wait meanwhile.
			p := pipeline(t, cl, "transforms: [{type: delay, duration: 5ms}]")
			p.Workers, p.Batch.Consumers = 1, 4
			dt, err := time.ParseDuration(c.drain)
			if err != nil {
				t.Fatal(err)
			}
			p.Batch.DrainTimeout = dt
			r, err := New(Options{Pipeline: p, Instance: "t", Logger: quietLogger()})
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			done := make(chan error, 1)
			go func() { done <- r.Run(ctx) }()
			seeds := []kgo.Opt{kgo.SeedBrokers(cl.ListenAddrs()...)}
			deadline := time.Now().Add(20 * time.Second)
			for {
				jobs, err := audit.ReadCommitted(ctx, seeds, "jobs")
				if err != nil {
					t.Fatal(err)
				}
				if jobs.Records >= 60 {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("only %d outputs after 20s", jobs.Records)
				}
				time.Sleep(20 * time.Millisecond)
			}
			polled := testutil.ToFloat64(r.Metrics().RecordsPolled.WithLabelValues("0"))
			cancel()
			stopped := time.Now()
			var during string // what /readyz says while the relay stops
			for wait := true; wait; {
				select {
				case err := <-done:
					if err != nil {
						t.Fatalf("Run: %v", err)
					}
					wait = false
				case <-time.After(5 * time.Millisecond):
					if ok, why := r.Ready(); ok {
						t.Errorf("ready %s after the cancel", time.Since(stopped))
					} else if during == "" {
						during = why
					}
					if time.Since(stopped) > c.bound+10*time.Second {
						t.Fatal("Run did not return after cancel")
					}
				}
			}
			took := time.Since(stopped)
			if c.drain == "5s" && !strings.HasPrefix(during, "stopping") {
				t.Errorf("readyz said %q while the relay drained, want stopping", during)
			}
			released := releasedAcks(r, 1)
			after := testutil.ToFloat64(r.Metrics().RecordsPolled.WithLabelValues("0"))
			t.Logf("drain %s: stopped in %s; %v records polled at the cancel, %v by the end, %v released", c.drain, took.Round(time.Millisecond), polled, after, released)
			if took > c.bound {
				t.Errorf("Run took %s after the cancel, want at most %s", took, c.bound)
			}
			if c.wantReleased && released == 0 {
				t.Errorf("nothing released with drain %s: the stop did not cut the worker short", c.drain)
			}
			if !c.wantReleased && released != 0 {
				t.Errorf("%v records released at the stop with drain %s, want 0: the worker held them and did not write them", released, c.drain)
			}

			// The rest, once each.
			r2, err := New(Options{Pipeline: p, Instance: "t", Logger: quietLogger()})
			if err != nil {
				t.Fatal(err)
			}
			jobs, _ := runUntil(t, r2, cl, n)
			if jobs.Records != n || len(jobs.BySource) != n {
				t.Fatalf("jobs %d (unique %d), want %d unique", jobs.Records, len(jobs.BySource), n)
			}
		})
	}
}

// The acknowledgements of a batch go out in runs of one type: each record
// gets its own, whatever its neighbours got.
func TestEachRecordOfABatchGetsItsOwnAcknowledgement(t *testing.T) {
	c := fakeCluster(t)
	seedOrders(t, c, 10)
	cfgCl, _ := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...))
	if err := sharegroup.SetConfigs(context.Background(), cfgCl, "g", map[string]string{sharegroup.AutoOffsetReset: "earliest"}); err != nil {
		t.Fatal(err)
	}
	cfgCl.Close()
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...), kgo.ShareGroup("g"), kgo.ConsumeTopics("orders"))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	src := newShareSource([]*kgo.Client{cl}, "g", 100, false, nil)
	defer src.close()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()

	type key struct {
		p int32
		o int64
	}
	pattern := []kgo.AckStatus{kgo.AckAccept, kgo.AckAccept, kgo.AckRelease, kgo.AckReject, kgo.AckAccept, kgo.AckRelease, kgo.AckRelease}
	released, seen := map[key]bool{}, 0
	for seen < 10 && ctx.Err() == nil {
		b, _ := src.next(ctx, time.Second, 100, 0)
		var sent ackCounts
		for i, r := range b.recs {
			st := pattern[seen%len(pattern)]
			seen++
			if st == kgo.AckRelease {
				released[key{r.Partition, r.Offset}] = true
			}
			b.set(i, st)
			sent[st]++
		}
		if got := src.ack(b); got != sent {
			t.Fatalf("ack counted %v, the batch chose %v", got, sent)
		}
	}
	// Only the released records come back, once each; accept them.
	back := map[key]bool{}
	for len(back) < len(released) && ctx.Err() == nil {
		b, _ := src.next(ctx, 500*time.Millisecond, 100, 0)
		for i, r := range b.recs {
			k := key{r.Partition, r.Offset}
			if !released[k] || back[k] || r.DeliveryCount() != 2 {
				t.Fatalf("%s[%d]@%d came back (delivery %d); only the released records should", r.Topic, r.Partition, r.Offset, r.DeliveryCount())
			}
			back[k] = true
			b.set(i, kgo.AckAccept)
		}
		src.ack(b)
	}
	if len(back) != len(released) {
		t.Fatalf("%d of %d released records came back", len(back), len(released))
	}
	pctx, pcancel := context.WithTimeout(ctx, time.Second)
	defer pcancel()
	if b, _ := src.next(pctx, time.Second, 100, 0); b.len() != 0 {
		t.Fatalf("%d accepted or rejected records came back", b.len())
	}
}
