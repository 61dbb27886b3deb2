package relay

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sharerelay/sharerelay/audit"
	"github.com/sharerelay/sharerelay/config"
	"github.com/sharerelay/sharerelay/internal/kfaketest"
)

// crossPipeline is an exactly-once pipeline whose share group is on src
// and whose outputs, dead letters and ledger are on sink; the output
// carries the source's name, which is another topic on the other cluster.
func crossPipeline(t *testing.T, src, sink *kfake.Cluster) *config.Pipeline {
	t.Helper()
	y := fmt.Sprintf(`
name: test
brokers: [%q]
workers: 2
source: {topics: [orders], group: g, cluster: {brokers: [%q]}}
output: {topic: orders, transaction_timeout: 5s}
dead_letter: {topic: orders.dlq}
batch: {max_records: 20, poll_timeout: 200ms}
`, sink.ListenAddrs()[0], src.ListenAddrs()[0])
	p, err := config.Parse("test.yaml", []byte(y), func(string) (string, bool) { return "", false })
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func topicsOn(t *testing.T, c *kfake.Cluster) map[string]int64 {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	ctx := context.Background()
	td, err := adm.ListTopics(ctx)
	if err != nil {
		t.Fatal(err)
	}
	ends, err := adm.ListEndOffsets(ctx, td.Names()...)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]int64{}
	ends.Each(func(o kadm.ListedOffset) { out[o.Topic] += o.Offset })
	return out
}

// The share group reads one cluster and everything the relay writes goes
// to the other: the outputs once each, the claim ledger beside them, and
// not a record to the source cluster.
func TestAcrossClustersTheRelayWritesOnlyToTheSinkAndEachRecordOnce(t *testing.T) {
	src := kfaketest.Cluster(t, kfake.ClusterID("regional"), kfake.SeedTopics(2, "orders"))
	sink := kfaketest.Cluster(t, kfake.ClusterID("central"), kfake.SeedTopics(2, "orders"), kfake.SeedTopics(1, "orders.dlq"))
	cl, err := kgo.NewClient(kgo.SeedBrokers(src.ListenAddrs()...))
	if err != nil {
		t.Fatal(err)
	}
	var recs []*kgo.Record
	for i := 1; i <= 200; i++ {
		recs = append(recs, &kgo.Record{Topic: "orders", Key: strconv.AppendInt(nil, int64(i), 10), Value: fmt.Appendf(nil, `{"order_id":%d}`, i)})
	}
	err = cl.ProduceSync(context.Background(), recs...).FirstErr()
	cl.Close()
	if err != nil {
		t.Fatal(err)
	}
	before := topicsOn(t, src)

	r, err := New(Options{Pipeline: crossPipeline(t, src, sink), Instance: "t", Registerer: prometheus.NewRegistry(), Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- r.Run(ctx) }()
	var out audit.Tally
	for deadline := time.Now().Add(20 * time.Second); ; {
		if out, err = audit.ReadCommitted(ctx, []kgo.Opt{kgo.SeedBrokers(sink.ListenAddrs()...)}, "orders"); err != nil {
			t.Fatal(err)
		}
		if out.Records >= 200 || time.Now().After(deadline) {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if out.Records != 200 || len(out.BySource) != 200 || out.Unlabelled != 0 {
		t.Fatalf("sink orders: %d records, %d unique sources, %d unlabelled; want 200 once each", out.Records, len(out.BySource), out.Unlabelled)
	}

	if now := topicsOn(t, src); len(now) != 1 || now["orders"] != 200 {
		t.Errorf("source cluster after the run: %v, want orders alone with its 200 records: nothing is written there", now)
	}

	// The source cluster goes away: the workers only see empty polls,
	// and the watcher says which cluster is out.
	src.Close()
	var why string
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		var ok bool
		if ok, why = r.Ready(); !ok && strings.Contains(why, "source cluster unavailable") {
			break
		}
	}
	if !strings.Contains(why, "source cluster unavailable") {
		t.Errorf("with the source cluster down, Ready() = %q, want it to name the source cluster", why)
	}
	sd := r.Metrics().SourceDisruptions
	if n := testutil.ToFloat64(sd.WithLabelValues("0")) + testutil.ToFloat64(sd.WithLabelValues("1")); n == 0 {
		t.Error("the share consumers met the source cluster's loss, but source_disruptions_total is 0")
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Run returned %v after cancel, want nil", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("Run did not return within 30s of cancel")
	}

	after := topicsOn(t, sink)
	if after["test.ledger"] == 0 {
		t.Errorf("the sink has no claims in test.ledger: %v", after)
	}
	if before["orders"] != 200 || len(before) != 1 {
		t.Fatalf("source cluster before the run: %v, want orders alone with 200 records", before)
	}
}

// source.cluster naming the sink cluster under other addresses passes
// config.Load (the names are not compared), but with a topic both read
// and written the relay would consume its own output: it refuses to start,
// telling the clusters apart by their id.
func TestASourceClusterThatIsTheSinkUnderAnotherNameIsRefused(t *testing.T) {
	c := kfaketest.Cluster(t, kfake.NumBrokers(2), kfake.SeedTopics(2, "orders"), kfake.SeedTopics(1, "orders.dlq"))
	p := crossPipeline(t, c, c)
	p.Source.Cluster.Brokers = c.ListenAddrs()[1:] // the other broker: other addresses, one cluster
	r, err := New(Options{Pipeline: p, Instance: "t", Registerer: prometheus.NewRegistry(), Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	err = r.Run(ctx)
	if !errors.Is(err, errSameCluster) || !strings.Contains(err.Error(), "[orders]") {
		t.Fatalf("Run = %v, want it refused as one cluster named twice, naming orders", err)
	}
}
