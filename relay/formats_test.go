package relay

import (
	"context"
	"fmt"
	"math/big"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hamba/avro/v2"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sr"

	"github.com/sharerelay/sharerelay/config"
	"github.com/sharerelay/sharerelay/internal/srtest"
)

// avroOrders writes n Avro orders, Confluent-framed with schema id, each
// with a timestamp of its own, and returns the timestamps by order id.
func avroOrders(t *testing.T, c *kfake.Cluster, id, n int) map[int64]time.Time {
	t.Helper()
	schema := avro.MustParse(string(mustRead(t, "testdata/order.avsc")))
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	var h sr.ConfluentHeader
	stamps := map[int64]time.Time{}
	var recs []*kgo.Record
	for i := 1; i <= n; i++ {
		ts := time.UnixMilli(1_600_000_000_000 + int64(i)*1000)
		b, err := avro.Marshal(schema, map[string]any{"id": int64(i), "customer": "c", "amount": big.NewRat(3, 2), "placed": ts, "coupon": nil})
		if err != nil {
			t.Fatal(err)
		}
		v, _ := h.AppendEncode(nil, id, nil)
		recs = append(recs, &kgo.Record{Topic: "orders", Value: append(v, b...), Timestamp: ts})
		stamps[int64(i)] = ts
	}
	if err := cl.ProduceSync(context.Background(), recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	return stamps
}

func mustRead(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// formatsPipeline is kfaketest's pipeline with the relay's testdata as
// the pipeline file's directory and the registry at url.
func formatsPipeline(t *testing.T, c *kfake.Cluster, url, extra string) *config.Pipeline {
	t.Helper()
	y := fmt.Sprintf(`
name: test
brokers: [%q]
delivery: at-least-once
workers: 2
dead_letter: {topic: jobs.dlq}
batch: {max_records: 20, poll_timeout: 200ms}
schema_registry: {urls: [%s], timeout: 500ms}
%s`, c.ListenAddrs()[0], url, extra)
	// Parsed as testdata/p.yaml: schema files are relative to testdata.
	p, err := config.Parse("testdata/p.yaml", []byte(y), func(string) (string, bool) { return "", false })
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestAvroOrdersAreRelayedWithTheirFieldsChangedTheirKeysSetAndTheirTimestampsKept(t *testing.T) {
	c := fakeCluster(t)
	reg := srtest.New()
	defer reg.Close()
	id, _ := reg.Register("orders-value", srtest.Schema{Schema: string(mustRead(t, "testdata/order.avsc"))})
	stamps := avroOrders(t, c, id, 100)
	p := formatsPipeline(t, c, reg.URL(), `
source: {topics: [orders], group: g, value_format: avro}
output: {topic: jobs}
transforms:
  - {type: set, field: customer, expr: '"customer-" + string(value.id)'}
  - {type: key, field: id}
`)
	r, err := New(Options{Pipeline: p, Instance: "t", Registerer: prometheus.NewRegistry(), Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	jobs, dlq := runUntil(t, r, c, 100)
	if jobs.Records != 100 || len(jobs.BySource) != 100 || dlq.Records != 0 {
		t.Fatalf("jobs %d (unique %d), dead letters %d; want 100 and none", jobs.Records, len(jobs.BySource), dlq.Records)
	}
	schema := avro.MustParse(string(mustRead(t, "testdata/order.avsc")))
	for _, rec := range readAll(t, c, "jobs") {
		var h sr.ConfluentHeader
		gotID, payload, err := h.DecodeID(rec.Value)
		if err != nil || gotID != id {
			t.Fatalf("output id %d (%v), want %d", gotID, err, id)
		}
		var o struct {
			ID       int64  `avro:"id"`
			Customer string `avro:"customer"`
		}
		if err := avro.Unmarshal(schema, payload, &o); err != nil {
			t.Fatal(err)
		}
		if want := "customer-" + itoa(o.ID); o.Customer != want || string(rec.Key) != itoa(o.ID) {
			t.Fatalf("order %d: customer %q key %q", o.ID, o.Customer, rec.Key)
		}
		if !rec.Timestamp.Equal(stamps[o.ID]) {
			t.Fatalf("order %d: timestamp %v, want the source's %v", o.ID, rec.Timestamp, stamps[o.ID])
		}
	}
}

func itoa(i int64) string { return strconv.FormatInt(i, 10) }

// readAll reads every committed record of topic.
func readAll(t *testing.T, c *kfake.Cluster, topic string) []*kgo.Record {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...), kgo.ConsumeTopics(topic),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ends, err := kadm.NewClient(cl).ListEndOffsets(context.Background(), topic)
	if err != nil {
		t.Fatal(err)
	}
	want := int64(0)
	ends.Each(func(o kadm.ListedOffset) { want += o.Offset })
	var out []*kgo.Record
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for int64(len(out)) < want && ctx.Err() == nil {
		cl.PollFetches(ctx).EachRecord(func(r *kgo.Record) { out = append(out, r) })
	}
	return out
}

// heldRecords sums records_held_total over a relay's workers.
func heldRecords(r *Relay, workers int) float64 {
	n := 0.0
	for i := range workers {
		n += testutil.ToFloat64(r.Metrics().RecordsHeld.WithLabelValues(strconv.Itoa(i)))
	}
	return n
}

func TestARegistryOutageHoldsRecordsWithoutDeadLetteringOrReleasingThem(t *testing.T) {
	c := fakeCluster(t)
	reg := srtest.New()
	defer reg.Close()
	id, _ := reg.Register("orders-value", srtest.Schema{Schema: string(mustRead(t, "testdata/order.avsc"))})
	avroOrders(t, c, id, 60)
	reg.Down(true)
	p := formatsPipeline(t, c, reg.URL(), `
source: {topics: [orders], group: g, value_format: avro}
output: {topic: jobs}
transforms:
  - {type: filter, when: {expr: 'value.id < 0'}}
`)
	m := prometheus.NewRegistry()
	r, err := New(Options{Pipeline: p, Instance: "t", Registerer: m, Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		// Down long enough for every worker to hold a batch and say so.
		deadline := time.Now().Add(10 * time.Second)
		for time.Now().Before(deadline) {
			if ok, why := r.Ready(); !ok && why != "" && strings.Contains(why, "schema registry unavailable") && heldRecords(r, 2) > 0 {
				break
			}
			time.Sleep(50 * time.Millisecond)
		}
		time.Sleep(time.Second)
		reg.Down(false)
	}()
	jobs, dlq := runUntil(t, r, c, 60)
	if dlq.Records != 0 {
		t.Fatalf("%d dead letters: a registry outage is not the records' fault", dlq.Records)
	}
	if jobs.Records != 60 {
		t.Fatalf("%d jobs, want 60", jobs.Records)
	}
	if held := heldRecords(r, 2); held == 0 {
		t.Fatal("no record was held while the registry was down")
	}
	if rel := releasedAcks(r, 2); rel != 0 {
		t.Fatalf("%v records released during the outage: each would spend a delivery", rel)
	}
}
