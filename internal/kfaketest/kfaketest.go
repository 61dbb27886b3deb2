// Package kfaketest starts the in-process kfake cluster that the unit
// tests of sharerelay run against, so that its set-up is written once.
package kfaketest

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kfake"
)

// Cluster starts a kfake cluster for t and closes it when t and its
// subtests end; it fails t if the cluster does not start. The cluster has
// one broker, and share-group members heartbeat every 200 ms so that they
// join and see their assignments quickly; opts come after these and may
// change them (kfake.NumBrokers, kfake.BrokerConfigs) or add to them,
// typically the topics to create with kfake.SeedTopics.
func Cluster(t testing.TB, opts ...kfake.Opt) *kfake.Cluster {
	t.Helper()
	c, err := kfake.NewCluster(append([]kfake.Opt{
		kfake.NumBrokers(1),
		kfake.BrokerConfigs(map[string]string{"group.share.heartbeat.interval.ms": "200"}),
	}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}
