package preflight

import (
	"context"
	"strings"
	"testing"

	"github.com/sharerelay/sharerelay/config"
	"github.com/sharerelay/sharerelay/sharegroup"
)

// The limit the relay will raise the group's to is the one the checks
// judge, and its default attempts are those of the broker's limit.
func TestChecksJudgeTheDeliveryLimitTheRelayRaises(t *testing.T) {
	p := &config.Pipeline{Workers: 2}
	p.Batch.Consumers = 4
	rep := &Report{}
	c := &checker{p: p, rep: rep, src: &side{rep: rep}, plan: sharegroup.Plan{
		Configs:       map[string]string{sharegroup.DeliveryCountLimit: "10"},
		AttemptsLimit: 5,
	}}
	limit, from := c.deliveryLimit(context.Background())
	c.deadLetterSpares(limit, from)
	c.shareConsumers(limit, from)
	want := []string{
		"warn: dead-letter spares: 3 attempts, delivery limit 10 (from the relay, which raises it at start): 7 spare deliveries; a crash of an instance of 8 share consumers can cost a record 8",
		"ok: share consumers: workers × consumers = 2 × 4, below the delivery limit 10 (from the relay, which raises it at start)",
	}
	if len(c.rep.Results) != len(want) {
		t.Fatalf("results %v, want %d", c.rep.Results, len(want))
	}
	for i, w := range want {
		if got := c.rep.Results[i].String(); !strings.HasPrefix(got, w) {
			t.Errorf("result %d = %q, want it to start %q", i, got, w)
		}
	}
}
