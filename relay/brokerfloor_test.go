package relay

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"

	"github.com/sharerelay/sharerelay/config"
	"github.com/sharerelay/sharerelay/internal/brokerfloor"
	"github.com/sharerelay/sharerelay/internal/kfaketest"
)

// touches counts the requests of c that change the cluster or join the
// share group: what a relay refusing the cluster must not have sent.
func touches(c *kfake.Cluster) *atomic.Int64 {
	var n atomic.Int64
	for _, k := range []kmsg.Key{kmsg.CreateTopics, kmsg.IncrementalAlterConfigs, kmsg.ShareGroupHeartbeat, kmsg.InitProducerID, kmsg.Produce} {
		c.ControlKey(k.Int16(), func(kmsg.Request) (kmsg.Response, error, bool) {
			c.KeepControl()
			n.Add(1)
			return nil, nil, false
		})
	}
	return &n
}

// lowerTransactionVersion finalizes c's transaction.version at 1, as on a
// cluster upgraded from Kafka 3.x whose features were left alone.
func lowerTransactionVersion(t *testing.T, c *kfake.Cluster) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	res, err := kadm.NewClient(cl).UpdateFeatures(context.Background(), false,
		kadm.FeatureUpdate{Feature: "transaction.version", MaxVersionLevel: 1, UpgradeType: 3})
	if err == nil {
		err = res.Error()
	}
	if err != nil {
		t.Fatal(err)
	}
}

// A cluster too old for the pipeline stops the relay at start-up with
// brokerfloor's words (relay check's), before it creates a topic, sets a
// share group config, joins the group or starts a producer. (kfake
// implements fewer requests than Kafka, so the release guessed from its
// answer is not 4.1: brokerfloor's own test checks the guess.) The last case
// is the control: the same counting sees an at-least-once relay touch the
// cluster with transaction.version 1, which only exactly-once refuses.
func TestARelayRefusesBrokersTooOldForThePipelineBeforeTouchingTheCluster(t *testing.T) {
	for _, c := range []struct {
		name     string
		opts     []kfake.Opt
		lowerTV  bool
		delivery string
		want     error
		says     []string
	}{
		{name: "Kafka 4.1 is refused for exactly-once", opts: []kfake.Opt{kfake.MaxVersions(kversion.V4_1_0())}, delivery: config.ExactlyOnce,
			want: brokerfloor.ErrTooOld, says: []string{"relay: the brokers are too old: they look like Kafka ", " (guessed from ApiVersions)",
				"ShareFetch v2 (the record_limit acquire mode, KIP-1206; they answer up to v1)",
				"ShareAcknowledge v2 (renewing record locks, KIP-1222; they answer up to v1)", "the relay needs Kafka 4.2 or newer"}},
		{name: "Kafka 4.1 is refused for at-least-once", opts: []kfake.Opt{kfake.MaxVersions(kversion.V4_1_0())}, delivery: config.AtLeastOnce,
			want: brokerfloor.ErrTooOld, says: []string{"Kafka 4.2 or newer"}},
		{name: "transaction.version 1 is refused for exactly-once", lowerTV: true, delivery: config.ExactlyOnce,
			want: brokerfloor.ErrNoTransactionV2, says: []string{"relay: exactly-once needs the cluster's transaction.version at 2: it is finalized at 1"}},
		{name: "transaction.version 1 runs at-least-once", lowerTV: true, delivery: config.AtLeastOnce},
	} {
		t.Run(c.name, func(t *testing.T) {
			cl := kfaketest.Cluster(t, append([]kfake.Opt{kfake.SeedTopics(2, "orders", "jobs"), kfake.SeedTopics(1, "jobs.dlq")}, c.opts...)...)
			if c.lowerTV {
				lowerTransactionVersion(t, cl)
			}
			touched := touches(cl)
			p := pipeline(t, cl, "")
			p.Delivery = c.delivery
			r, err := New(Options{Pipeline: p, Instance: "t", Logger: quietLogger()})
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			if c.want == nil {
				done := make(chan error, 1)
				go func() { done <- r.Run(ctx) }()
				for touched.Load() == 0 && ctx.Err() == nil {
					time.Sleep(10 * time.Millisecond)
				}
				cancel()
				if err := <-done; err != nil && !errors.Is(err, context.Canceled) {
					t.Fatalf("Run = %v; want it to run until stopped", err)
				}
				if touched.Load() == 0 {
					t.Fatal("the relay never touched the cluster: the counting sees nothing")
				}
				return
			}
			err = r.Run(ctx)
			if !errors.Is(err, c.want) {
				t.Fatalf("Run = %v; want %v", err, c.want)
			}
			for _, s := range c.says {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("Run = %q\ndoes not say %q", err, s)
				}
			}
			if n := touched.Load(); n != 0 {
				t.Errorf("the refusing relay sent %d requests that create topics, set configs, join the group or produce", n)
			}
		})
	}
}
