package relay

import (
	"context"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sharerelay/sharerelay/audit"
	"github.com/sharerelay/sharerelay/config"
	"github.com/sharerelay/sharerelay/eos"
	"github.com/sharerelay/sharerelay/internal/kafkaopts"
)

// TestEveryClientOfTheRelayAuthenticatesWithThePipelinesSASL runs an
// exactly-once relay on a cluster that admits only SCRAM-SHA-512 clients:
// the start-up checks, the claim ledger, the workers' share consumers and
// transactional producers and the watchers all connect, or no record
// would come out.
func TestEveryClientOfTheRelayAuthenticatesWithThePipelinesSASL(t *testing.T) {
	c, err := kfake.NewCluster(
		kfake.NumBrokers(1),
		kfake.EnableSASL(),
		kfake.Superuser("SCRAM-SHA-512", "relay", "hunter2-s3cret"),
		kfake.SeedTopics(2, "orders", "jobs"),
		kfake.SeedTopics(1, "jobs.dlq", "test.ledger"),
		kfake.BrokerConfigs(map[string]string{"group.share.heartbeat.interval.ms": "200"}),
	)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	y := fmt.Sprintf(`
name: test
brokers: [%q]
delivery: exactly-once
workers: 2
source: {topics: [orders], group: g}
output: {topic: jobs}
dead_letter: {topic: jobs.dlq}
batch: {max_records: 20, poll_timeout: 200ms}
sasl: {mechanism: SCRAM-SHA-512, username: relay, password: "${PASSWORD}"}
client: {id: packers, producer: {compression: zstd}}
`, c.ListenAddrs()[0])
	p, err := config.Parse("test.yaml", []byte(y), func(name string) (string, bool) {
		return "hunter2-s3cret", name == "PASSWORD"
	})
	if err != nil {
		t.Fatal(err)
	}
	ko, err := kafkaopts.New(p)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	// Without the pipeline's options, the cluster lets nobody in.
	plain, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...), kgo.RequestRetries(0), kgo.RetryTimeout(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	lctx, lcancel := context.WithTimeout(ctx, 3*time.Second)
	_, err = kadm.NewClient(plain).ListTopics(lctx)
	lcancel()
	plain.Close()
	if err == nil {
		t.Fatal("a client without SASL listed the topics")
	}

	cl, err := kgo.NewClient(ko.Opts()...)
	if err != nil {
		t.Fatal(err)
	}
	var recs []*kgo.Record
	for i := 1; i <= 40; i++ {
		recs = append(recs, &kgo.Record{Topic: "orders", Key: strconv.AppendInt(nil, int64(i), 10), Value: fmt.Appendf(nil, `{"order_id":%d}`, i)})
	}
	err = cl.ProduceSync(ctx, recs...).FirstErr()
	cl.Close()
	if err != nil {
		t.Fatal(err)
	}

	r, err := New(Options{Pipeline: p, Instance: "i", Logger: quietLogger(), LedgerMarkers: eos.MarkersAtSameOrNextEpoch})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	rctx, stop := context.WithCancel(ctx)
	go func() { done <- r.Run(rctx) }()
	var jobs audit.Tally
	for {
		if jobs, err = audit.ReadCommitted(ctx, ko.Opts(), "jobs"); err != nil {
			t.Fatal(err)
		}
		if jobs.Records >= 40 || ctx.Err() != nil {
			break
		}
		select {
		case err := <-done:
			t.Fatalf("relay stopped: %v", err)
		case <-time.After(100 * time.Millisecond):
		}
	}
	stop()
	if err := <-done; err != nil {
		t.Fatalf("Run: %v", err)
	}
	if jobs.Records != 40 {
		t.Errorf("%d jobs, want 40", jobs.Records)
	}
}

func TestMaxBatchBytesCapsEveryWrittenTopicsBatchLimit(t *testing.T) {
	p := &config.Pipeline{Output: config.Output{Topic: "jobs"}, DeadLetter: config.DeadLetter{Topic: "jobs.dlq"}}
	r := &Relay{p: p}
	r.storeSizes(map[string]int{"jobs": 1 << 20, "jobs.dlq": 1000})
	if got := *r.sizes.Load(); got["jobs"] != 1<<20 || got["jobs.dlq"] != 1000 {
		t.Errorf("without a cap: %v", got)
	}
	p.Client.Producer.MaxBatchBytes = 4096
	r.storeSizes(map[string]int{"jobs": 1 << 20, "jobs.dlq": 1000})
	if got := *r.sizes.Load(); got["jobs"] != 4096 || got["jobs.dlq"] != 1000 {
		t.Errorf("with a cap of 4096: %v", got)
	}
	if got := r.maxBatch(); got != 4096 {
		t.Errorf("maxBatch %d, want 4096", got)
	}
	r.storeSizes(map[string]int{}) // max.message.bytes not described
	if got := *r.sizes.Load(); got["jobs"] != 4096 || got["jobs.dlq"] != 4096 {
		t.Errorf("topics without a known limit: %v", got)
	}
}
