package kafkatest_test

import (
	"context"
	"encoding/base64"
	"errors"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/sharerelay/sharerelay/integration/kafkatest"
)

func TestNamedClusterIDsAreKRaftIDsOfTheirOwn(t *testing.T) {
	a, b := kafkatest.NamedClusterID("second"), kafkatest.NamedClusterID("secured")
	for _, id := range []string{a, b} {
		raw, err := base64.RawURLEncoding.DecodeString(id)
		if err != nil || len(raw) != 16 {
			t.Errorf("cluster id %q: %d bytes (%v), want a base64url UUID of 16", id, len(raw), err)
		}
	}
	if a == b || a == kafkatest.ClusterID || b == kafkatest.ClusterID {
		t.Errorf("cluster ids %q, %q and the default %q: want three different ids", a, b, kafkatest.ClusterID)
	}
	if again := kafkatest.NamedClusterID("second"); again != a {
		t.Errorf("NamedClusterID(second) = %q then %q, want the same id", a, again)
	}
}

// The binary's broker and its second broker are two clusters: each has
// its own cluster id, and a topic made on one does not exist on the
// other. A test that kills the second broker leaves it running again for
// the next, with its topics.
func TestLocalBrokerAndSecondBrokerAreIndependentClusters(t *testing.T) {
	first := kafkatest.Bootstrap(t)
	sb := kafkatest.SecondBroker(t)
	second := []string{sb.Addr()}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()

	ids := map[string]string{}
	for name, seeds := range map[string][]string{"first": first, "second": second} {
		adm, actx := kafkatest.Admin(t, seeds)
		md, err := adm.BrokerMetadata(actx)
		if err != nil {
			t.Fatalf("%s broker's metadata: %v", name, err)
		}
		ids[name] = md.Cluster
	}
	t.Logf("cluster ids: %v", ids)
	if ids["first"] == "" || ids["first"] == ids["second"] {
		t.Fatalf("cluster ids %v: want two different ids", ids)
	}

	onFirst, onSecond := kafkatest.NewTopic(t, first, 1), kafkatest.NewTopic(t, second, 1)
	exists := func(seeds []string, topic string) bool {
		t.Helper()
		adm, actx := kafkatest.Admin(t, seeds)
		td, err := adm.ListTopics(actx, topic)
		if err != nil {
			t.Fatalf("listing %s: %v", topic, err)
		}
		d, ok := td[topic]
		if ok && d.Err != nil && !errors.Is(d.Err, kerr.UnknownTopicOrPartition) {
			t.Fatalf("listing %s: %v", topic, d.Err)
		}
		return ok && d.Err == nil
	}
	for _, c := range []struct {
		seeds   []string
		topic   string
		where   string
		present bool
	}{
		{first, onFirst, "the first broker", true},
		{second, onSecond, "the second broker", true},
		{second, onFirst, "the second broker", false},
		{first, onSecond, "the first broker", false},
	} {
		if got := exists(c.seeds, c.topic); got != c.present {
			t.Errorf("topic %s on %s: exists %v, want %v", c.topic, c.where, got, c.present)
		}
	}

	t.Run("a test kills the second broker", func(t *testing.T) {
		if err := kafkatest.SecondBroker(t).Kill(); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("the next finds it running with its topics", func(t *testing.T) {
		b := kafkatest.SecondBroker(t)
		if !b.Running() || b.Addr() != sb.Addr() {
			t.Fatalf("second broker at %s running %v; want it running again at %s", b.Addr(), b.Running(), sb.Addr())
		}
		produceCommitted(ctx, t, second, onSecond, "txn-"+onSecond, "after the kill")
		if got := consumeOne(ctx, t, second, onSecond); got != "after the kill" {
			t.Fatalf("read back %q from %s on the restarted second broker", got, onSecond)
		}
	})
}
