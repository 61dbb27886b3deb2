package preflight_test

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"

	"github.com/sharerelay/sharerelay/config"
	"github.com/sharerelay/sharerelay/internal/brokerfloor"
	"github.com/sharerelay/sharerelay/preflight"
)

// judged is brokerfloor's verdict on the cluster at addrs, asked directly:
// the words relay run stops with.
func judged(t *testing.T, addrs []string, exactlyOnce bool) brokerfloor.Verdict {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addrs...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	resp, err := kmsg.NewPtrApiVersionsRequest().RequestWith(context.Background(), cl)
	if err != nil {
		t.Fatal(err)
	}
	return brokerfloor.Judge(resp, exactlyOnce)
}

// relay check fails a cluster too old for the pipeline on the line that
// names it, in the words the relay refuses to start with
// (brokerfloor.Judge), and passes those lines on a cluster with what the
// relay needs.
func TestCheckFailsBrokersTooOldForThePipelineInTheRelaysWords(t *testing.T) {
	for _, c := range []struct {
		name      string
		opts      []kfake.Opt
		lowerTV   bool
		delivery  string
		failCheck string // the check that fails, "" for none
	}{
		{name: "Kafka 4.1 fails the kafka version line", opts: []kfake.Opt{kfake.MaxVersions(kversion.V4_1_0())},
			delivery: config.AtLeastOnce, failCheck: "kafka version"},
		{name: "transaction.version 1 fails exactly-once on its line", lowerTV: true,
			delivery: config.ExactlyOnce, failCheck: "transaction.version"},
		{name: "transaction.version 1 passes at-least-once", lowerTV: true, delivery: config.AtLeastOnce},
		{name: "a cluster with what the relay needs passes both lines", delivery: config.ExactlyOnce},
	} {
		t.Run(c.name, func(t *testing.T) {
			cl, err := kfake.NewCluster(append([]kfake.Opt{kfake.NumBrokers(1), kfake.SeedTopics(3, "orders", "jobs", "dlq")}, c.opts...)...)
			if err != nil {
				t.Fatal(err)
			}
			defer cl.Close()
			addrs := cl.ListenAddrs()
			if c.lowerTV {
				adm, err := kgo.NewClient(kgo.SeedBrokers(addrs...))
				if err != nil {
					t.Fatal(err)
				}
				res, err := kadm.NewClient(adm).UpdateFeatures(context.Background(), false,
					kadm.FeatureUpdate{Feature: "transaction.version", MaxVersionLevel: 1, UpgradeType: 3})
				adm.Close()
				if err == nil {
					err = res.Error()
				}
				if err != nil {
					t.Fatal(err)
				}
			}
			p := &config.Pipeline{Name: "p", Brokers: addrs, Delivery: c.delivery}
			p.Source.Topics, p.Source.Group = []string{"orders"}, "g"
			p.Output.Topic, p.Output.TransactionTimeout = "jobs", 10*time.Second
			p.DeadLetter.Topic, p.Ledger.Topic = "dlq", "p.ledger"
			rep := check(t, p, []kgo.Opt{kgo.SeedBrokers(addrs...)})

			v := judged(t, addrs, c.delivery == config.ExactlyOnce)
			want := map[string]error{"kafka version": v.TooOld, "transaction.version": v.NoTransactionV2}
			for _, r := range rep.Results {
				err, judgedLine := want[r.Check]
				if !judgedLine {
					continue
				}
				delete(want, r.Check)
				switch {
				case r.Check == c.failCheck && (r.Status != preflight.Fail || err == nil || r.Detail != err.Error()):
					t.Errorf("%v; want FAIL: %s: %v", r, r.Check, err)
				case r.Check != c.failCheck && r.Status != preflight.OK:
					t.Errorf("%v; want ok", r)
				}
			}
			if len(want) > 0 {
				t.Errorf("relay check has no line for %v", want)
			}
		})
	}
}
