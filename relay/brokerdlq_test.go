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
)

func TestCheckBrokerDLQ(t *testing.T) {
	accept := config.DeadLetter{Topic: "jobs.dlq", Ack: config.DeadLetterAccept}
	reject := config.DeadLetter{Topic: "jobs.dlq", Ack: config.DeadLetterReject}
	brokerDLQ := map[string]string{GroupDLQTopic: "dlq.g", "share.delivery.count.limit": "5"}
	for _, tc := range []struct {
		name     string
		dl       config.DeadLetter
		configs  map[string]string
		wantErr  bool
		wantWarn bool
		wantNote string
	}{
		{name: "reject on a group without a broker-side DLQ (Kafka before 4.4 reports no such config) is fine",
			dl: reject, configs: map[string]string{"share.delivery.count.limit": "5"}},
		{name: "reject on a group whose DLQ topic is blank is fine", dl: reject, configs: map[string]string{GroupDLQTopic: ""}},
		{name: "reject on a group with a broker-side DLQ is refused", dl: reject, configs: brokerDLQ, wantErr: true},
		{name: "accept on a group with a broker-side DLQ names it as the backstop", dl: accept, configs: brokerDLQ, wantNote: "dlq.g"},
		{name: "accept on a group whose broker-side DLQ is the relay's own dead-letter topic is a warning",
			dl: accept, configs: map[string]string{GroupDLQTopic: "jobs.dlq"}, wantWarn: true, wantNote: "relay's own dead-letter topic"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			note, warn, err := CheckBrokerDLQ(tc.dl, "g", tc.configs)
			if gotErr := errors.Is(err, ErrBrokerDLQWithReject); gotErr != tc.wantErr {
				t.Fatalf("err = %v, want ErrBrokerDLQWithReject: %v", err, tc.wantErr)
			}
			if warn != tc.wantWarn || !strings.Contains(note, tc.wantNote) || (tc.wantNote == "") != (note == "") {
				t.Fatalf("note %q warn %v; want a note containing %q, warn %v", note, warn, tc.wantNote, tc.wantWarn)
			}
			if tc.wantErr && !strings.Contains(err.Error(), "dlq.g") {
				t.Fatalf("error %q does not name the group's DLQ topic", err)
			}
		})
	}
}

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
		cfg.Name, cfg.Value, cfg.Source = GroupDLQTopic, kmsg.StringPtr(topic), kmsg.ConfigSourceGroupConfig
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
	if !errors.Is(err, ErrBrokerDLQWithReject) || !strings.Contains(err.Error(), "dlq.g") {
		t.Fatalf("Run = %v; want ErrBrokerDLQWithReject naming dlq.g", err)
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
