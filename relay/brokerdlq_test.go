package relay

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sharerelay/sharerelay/config"
	"github.com/sharerelay/sharerelay/eos"
	"github.com/sharerelay/sharerelay/metrics"
	"github.com/sharerelay/sharerelay/sharegroup"
)

// reportGroupDLQ makes c answer every DescribeConfigs of a GROUP resource
// with a broker-side dead-letter topic, as a Kafka 4.4 broker does for a
// group with errors.deadletterqueue.topic.name set (kfake knows no such
// config).
func reportGroupDLQ(c *kfake.Cluster, topic string) {
	c.ControlKey(int16(kmsg.DescribeConfigs), func(req kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		dreq := req.(*kmsg.DescribeConfigsRequest)
		if len(dreq.Resources) != 1 || dreq.Resources[0].ResourceType != kmsg.ConfigResourceTypeGroupConfig {
			return nil, nil, false
		}
		resp := dreq.ResponseKind().(*kmsg.DescribeConfigsResponse)
		rr := kmsg.NewDescribeConfigsResponseResource()
		rr.ResourceType, rr.ResourceName = kmsg.ConfigResourceTypeGroupConfig, dreq.Resources[0].ResourceName
		cfg := kmsg.NewDescribeConfigsResponseResourceConfig()
		cfg.Name, cfg.Value, cfg.Source = sharegroup.DLQTopic, kmsg.StringPtr(topic), kmsg.ConfigSourceGroupConfig
		rr.Configs = append(rr.Configs, cfg)
		resp.Resources = append(resp.Resources, rr)
		return resp, nil, true
	})
}

// deadLetterPipeline is the tests' pipeline with dead_letter.ack set to
// ack; every 10th order fails for good.
func deadLetterPipeline(t *testing.T, c *kfake.Cluster, ack string) *config.Pipeline {
	t.Helper()
	y := fmt.Sprintf(`
name: test
brokers: [%q]
delivery: exactly-once
workers: 2
source: {topics: [orders], group: g}
output: {topic: jobs}
dead_letter: {topic: jobs.dlq, ack: %s}
batch: {max_records: 20, poll_timeout: 200ms}
transforms: [{type: fail, kind: permanent, reason: bad address, when: {field: order_id, modulo: 10, remainder: 0}}]
`, c.ListenAddrs()[0], ack)
	p, err := config.Parse("test.yaml", []byte(y), func(string) (string, bool) { return "", false })
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestARelayThatRejectsDeadLettersRefusesAGroupWithABrokerSideDLQ(t *testing.T) {
	c := fakeCluster(t)
	reportGroupDLQ(c, "dlq.g")
	p := deadLetterPipeline(t, c, config.DeadLetterReject)
	f := false
	p.Source.ManageGroupConfig = &f // the faked DescribeConfigs answer holds only the DLQ topic
	r, err := New(Options{Pipeline: p, Instance: "t", Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	err = r.Run(ctx)
	if !errors.Is(err, sharegroup.ErrBrokerDLQWithReject) || !strings.Contains(err.Error(), "dlq.g") {
		t.Fatalf("Run = %v; want sharegroup.ErrBrokerDLQWithReject naming dlq.g", err)
	}
}

func TestDeadLetteredRecordsAreRejectedWhenConfigured(t *testing.T) {
	for _, tc := range []struct {
		ack                    string
		wantReject, wantAccept float64
		wantDeadLetters, all   int
	}{
		{ack: config.DeadLetterAccept, wantReject: 0, wantAccept: 100, wantDeadLetters: 10, all: 100},
		{ack: config.DeadLetterReject, wantReject: 10, wantAccept: 90, wantDeadLetters: 10, all: 100},
	} {
		t.Run("dead_letter.ack "+tc.ack, func(t *testing.T) {
			c := fakeCluster(t)
			seedOrders(t, c, tc.all)
			r, err := New(Options{Pipeline: deadLetterPipeline(t, c, tc.ack), Instance: "t", Logger: quietLogger(),
				LedgerMarkers: eos.MarkersAtSameOrNextEpoch})
			if err != nil {
				t.Fatal(err)
			}
			jobs, dlq := runUntil(t, r, c, tc.all)
			if len(dlq.BySource) != tc.wantDeadLetters || len(jobs.BySource) != tc.all-tc.wantDeadLetters {
				t.Fatalf("jobs %d, dead letters %d; want %d and %d", len(jobs.BySource), len(dlq.BySource), tc.all-tc.wantDeadLetters, tc.wantDeadLetters)
			}
			acks := func(typ string) float64 {
				return testutil.ToFloat64(r.Metrics().Acks.WithLabelValues("0", typ)) + testutil.ToFloat64(r.Metrics().Acks.WithLabelValues("1", typ))
			}
			if got := acks(metrics.AckReject); got != tc.wantReject {
				t.Errorf("acks_total{type=reject} = %v, want %v", got, tc.wantReject)
			}
			if got := acks(metrics.AckAccept); got < tc.wantAccept {
				t.Errorf("acks_total{type=accept} = %v, want at least %v", got, tc.wantAccept)
			}
		})
	}
}
