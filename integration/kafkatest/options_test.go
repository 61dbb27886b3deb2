package kafkatest_test

import (
	"context"
	"errors"
	"os"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sharerelay/sharerelay/integration/kafkatest"
)

// TestStartLocalAdvertisedAddrAndProperties starts a second broker that
// advertises an address nobody listens on (as a proxy in front of it
// would) and checks that it still becomes ready, advertises that address
// and applies property overrides.
func TestStartLocalAdvertisedAddrAndProperties(t *testing.T) {
	if len(os.Getenv(kafkatest.EnvBootstrap)) > 0 {
		t.Skipf("%s is set: not starting local brokers", kafkatest.EnvBootstrap)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	const advertised = "127.0.0.1:1"
	b, err := kafkatest.StartLocal(ctx, kafkatest.Options{
		AdvertisedAddr: advertised,
		Properties:     map[string]string{"group.share.record.lock.duration.ms": "20000"},
	})
	if errors.Is(err, kafkatest.ErrToolMissing) && os.Getenv(kafkatest.EnvRequireBroker) != "1" {
		t.Skip(err)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := b.Stop(); err != nil {
			t.Error(err)
		}
		os.RemoveAll(b.Dir())
	})

	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	seed := cl.SeedBrokers()[0]
	resp, err := seed.Request(ctx, kmsg.NewPtrMetadataRequest())
	if err != nil {
		t.Fatalf("metadata: %v", err)
	}
	brokers := resp.(*kmsg.MetadataResponse).Brokers
	if len(brokers) != 1 || brokers[0].Port != 1 {
		t.Errorf("advertised brokers = %+v, want one at %s", brokers, advertised)
	}

	dreq := kmsg.NewPtrDescribeConfigsRequest()
	res := kmsg.NewDescribeConfigsRequestResource()
	res.ResourceType, res.ResourceName = kmsg.ConfigResourceTypeBroker, "1"
	res.ConfigNames = []string{"group.share.record.lock.duration.ms"}
	dreq.Resources = append(dreq.Resources, res)
	dresp, err := seed.Request(ctx, dreq)
	if err != nil {
		t.Fatalf("describe configs: %v", err)
	}
	for _, r := range dresp.(*kmsg.DescribeConfigsResponse).Resources {
		for _, c := range r.Configs {
			if c.Value == nil || *c.Value != "20000" {
				t.Errorf("%s = %v, want 20000", c.Name, c.Value)
			}
		}
	}
}
