// Package kfaketest starts the in-process kfake cluster that the unit
// tests of sharerelay run against, so that its set-up is written once.
package kfaketest

import (
	"fmt"
	"testing"

	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/sharerelay/sharerelay/config"
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

// Pipeline parses the unit tests' pipeline on c's brokers: at-least-once,
// two workers, orders to jobs with dead letters in jobs.dlq, polls of 20
// records; extra is YAML appended to it (a later key wins). It fails t
// when the result is not a valid pipeline.
func Pipeline(t testing.TB, c *kfake.Cluster, extra string) *config.Pipeline {
	t.Helper()
	y := fmt.Sprintf(`
name: test
brokers: [%q]
delivery: at-least-once
workers: 2
source: {topics: [orders], group: g}
output: {topic: jobs}
dead_letter: {topic: jobs.dlq}
batch: {max_records: 20, poll_timeout: 200ms}
%s`, c.ListenAddrs()[0], extra)
	p, err := config.Parse("test.yaml", []byte(y), func(string) (string, bool) { return "", false })
	if err != nil {
		t.Fatal(err)
	}
	return p
}
