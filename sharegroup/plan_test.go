package sharegroup

import (
	"context"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"go.uber.org/goleak"

	"github.com/sharerelay/sharerelay/config"
	"github.com/sharerelay/sharerelay/internal/kfaketest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func pipeline(t *testing.T, c *kfake.Cluster, extra string) *config.Pipeline {
	t.Helper()
	return kfaketest.Pipeline(t, c, extra)
}

func TestTheRecordLockLimitIsRaisedToWhatTheRelayHoldsWithinTheBrokersMaximum(t *testing.T) {
	for _, c := range []struct {
		want, def, most int
		limit           int
		raise           bool
	}{
		{want: 8000, def: 2000, most: 4000, limit: 4000, raise: true},  // a worker of 4 consumers × 2000: capped
		{want: 3000, def: 2000, most: 4000, limit: 3000, raise: true},  // what it holds
		{want: 1000, def: 2000, most: 4000, limit: 2000, raise: false}, // never lowered
		{want: 8000, def: 2000, most: 2000, limit: 2000, raise: false}, // a broker that allows no more
	} {
		limit, raise := recordLockLimit(c.want, c.def, c.most)
		if limit != c.limit || raise != c.raise {
			t.Errorf("recordLockLimit(%d, %d, %d) = %d, %v; want %d, %v", c.want, c.def, c.most, limit, raise, c.limit, c.raise)
		}
	}
}

func TestGroupConfigsLeaveTheRecordLockLimitToABrokerThatDoesNotSayItsMaximum(t *testing.T) {
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(2, "orders", "jobs", "jobs.dlq"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	p := pipeline(t, c, "")
	plan := ConfigsToSet(context.Background(), cl, p)
	if _, set := plan.Configs[RecordLocks]; set || !strings.Contains(plan.Notes[0], "record lock limit left to the broker") {
		t.Fatalf("ConfigsToSet = %+v; want no %s (kfake has no %s)", plan, RecordLocks, brokerMaxRecordLocks)
	}
	if _, set := plan.Configs[DeliveryCountLimit]; set || plan.AttemptsLimit != 0 || !strings.Contains(plan.Notes[1], "delivery limit left to the broker") {
		t.Fatalf("ConfigsToSet = %+v; want no %s (kfake has no %s)", plan, DeliveryCountLimit, brokerMaxDeliveryCountLimit)
	}
	p.Source.GroupConfigs = map[string]string{RecordLocks: "3000", DeliveryCountLimit: "4"}
	plan = ConfigsToSet(context.Background(), cl, p)
	if plan.Configs[RecordLocks] != "3000" || !strings.Contains(plan.Notes[0], "source.group_configs") {
		t.Fatalf("ConfigsToSet = %+v; want the file's 3000", plan)
	}
	if plan.Configs[DeliveryCountLimit] != "4" || plan.AttemptsLimit != 0 || !strings.Contains(plan.Notes[1], "source.group_configs") {
		t.Fatalf("ConfigsToSet = %+v; want the file's delivery limit 4", plan)
	}
}

func TestTheDeliveryLimitIsRaisedSoThatACrashCannotUseUpARecordsDeliveries(t *testing.T) {
	for _, c := range []struct {
		name                          string
		attempts, sessions, def, most int
		limit                         int
		raise                         bool
	}{
		{"1 worker × 4 consumers, 3 attempts", 3, 4, 5, 10, 7, true},
		{"2 workers × 4 consumers: capped at the broker's maximum", 3, 8, 5, 10, 10, true},
		{"one share consumer still keeps two spares", 3, 1, 5, 10, 5, false},
		{"a broker default that is already enough is never lowered", 3, 4, 8, 10, 8, false},
		{"a broker that allows no more", 3, 4, 5, 5, 5, false},
		{"the file's max_attempts", 6, 2, 5, 10, 8, true},
	} {
		limit, raise := deliveryLimitToSet(c.attempts, c.sessions, c.def, c.most)
		if limit != c.limit || raise != c.raise {
			t.Errorf("%s: deliveryLimitToSet(%d, %d, %d, %d) = %d, %v; want %d, %v", c.name, c.attempts, c.sessions, c.def, c.most, limit, raise, c.limit, c.raise)
		}
		// What a crash costs a record on its last attempt fits below
		// the limit unless the broker's maximum forbids it.
		if raise && limit < c.most && limit-c.attempts < max(2, c.sessions) {
			t.Errorf("%s: limit %d leaves %d spares for %d share consumers", c.name, limit, limit-c.attempts, c.sessions)
		}
	}
}
