package kfaketest

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
)

func TestClusterHasTheSeedTopicsAndTheShortShareHeartbeat(t *testing.T) {
	c := Cluster(t, kfake.SeedTopics(2, "orders"), kfake.SeedTopics(1, "dlq"))
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	td, err := adm.ListTopics(ctx, "orders", "dlq")
	if err != nil {
		t.Fatal(err)
	}
	if n, m := len(td["orders"].Partitions), len(td["dlq"].Partitions); n != 2 || m != 1 {
		t.Errorf("partitions: orders %d, dlq %d; want 2 and 1", n, m)
	}
	if brokers := len(c.ListenAddrs()); brokers != 1 {
		t.Errorf("%d brokers, want 1", brokers)
	}
	bc, err := adm.DescribeBrokerConfigs(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var got string
	for _, r := range bc {
		for _, c := range r.Configs {
			if c.Key == "group.share.heartbeat.interval.ms" && c.Value != nil {
				got = *c.Value
			}
		}
	}
	if got != "200" {
		t.Errorf("group.share.heartbeat.interval.ms = %q, want 200", got)
	}
}

func TestClusterOptionsOverrideTheDefaults(t *testing.T) {
	if n := len(Cluster(t, kfake.NumBrokers(3)).ListenAddrs()); n != 3 {
		t.Errorf("%d brokers with kfake.NumBrokers(3), want 3", n)
	}
}
