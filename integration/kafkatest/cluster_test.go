package kafkatest_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sharerelay/sharerelay/integration/kafkatest"
)

// The cluster is replicated the way production clusters are, every
// coordinator and the controller can be found, and losing the active
// controller's node elects another while the cluster keeps taking writes
// at acks=all.
func TestLocalClusterIsReplicatedAndSurvivesTheLossOfTheActiveController(t *testing.T) {
	c := kafkatest.LocalCluster(t)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()

	cl, err := kgo.NewClient(kgo.SeedBrokers(c.Seeds()...), kgo.RequiredAcks(kgo.AllISRAcks()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	brokers, err := adm.ListBrokers(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got := len(brokers); got != kafkatest.ClusterSize {
		t.Fatalf("%d brokers registered, want %d", got, kafkatest.ClusterSize)
	}
	topic := "cluster-probe-" + time.Now().Format("150405.000000")
	if _, err := adm.CreateTopic(ctx, 3, -1, nil, topic); err != nil {
		t.Fatal(err)
	}
	td, err := adm.ListTopics(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range td[topic].Partitions {
		if len(p.Replicas) != 3 {
			t.Fatalf("%s[%d] has replicas %v, want 3 by default", topic, p.Partition, p.Replicas)
		}
	}
	rc, err := adm.DescribeTopicConfigs(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	if v, err := rc.On(topic, nil); err != nil {
		t.Fatal(err)
	} else if !slices.ContainsFunc(v.Configs, func(c kadm.Config) bool {
		return c.Key == "min.insync.replicas" && c.Value != nil && *c.Value == "2"
	}) {
		t.Fatal("min.insync.replicas is not 2")
	}

	leader, err := c.Leader(ctx, topic, 0)
	if err != nil {
		t.Fatal(err)
	}
	txnCo, err := c.Coordinator(ctx, kafkatest.TxnCoordinator, "some-txn-id")
	if err != nil {
		t.Fatal(err)
	}
	id, err := c.TopicID(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	shareCo, err := c.Coordinator(ctx, kafkatest.ShareCoordinator, kafkatest.ShareCoordinatorKey("some-group", id, 0))
	if err != nil {
		t.Fatal(err)
	}
	ctrl, err := c.ActiveController(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for what, n := range map[string]int32{"leader": leader, "transaction coordinator": txnCo, "share coordinator": shareCo, "controller": ctrl} {
		if c.Node(n) == nil {
			t.Fatalf("%s is node %d, not one of the cluster's", what, n)
		}
	}
	t.Logf("leader of %s[0] node %d, transaction coordinator node %d, share coordinator node %d, controller node %d", topic, leader, txnCo, shareCo, ctrl)

	if err := c.Node(ctrl).Kill(); err != nil {
		t.Fatal(err)
	}
	next, err := c.ActiveController(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if next == ctrl {
		t.Fatalf("node %d is still the active controller after it was killed", next)
	}
	for i := range 20 {
		if err := cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Partition: int32(i % 3), Value: []byte("x")}).FirstErr(); err != nil {
			t.Fatalf("produce with acks=all and one node of three down: %v", err)
		}
	}
	short, err := c.UnderReplicated(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(short) == 0 {
		t.Fatal("no partition under-replicated with a node down")
	}
	if err := c.Heal(ctx); err != nil {
		t.Fatal(err)
	}
	t.Logf("controller moved from node %d to node %d; %d partitions were short while it was down", ctrl, next, len(short))
}

// A cluster whose every node was stopped (as a test binary stops it to run
// another) heals: the nodes start together, as none is ready before a
// majority of the quorum runs, and the cluster takes writes again.
func TestLocalClusterHealsWithEveryNodeStopped(t *testing.T) {
	c := kafkatest.LocalCluster(t)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	if err := c.Stop(); err != nil {
		t.Fatal(err)
	}
	for i, b := range c.Nodes() {
		if b.Running() {
			t.Fatalf("node %d still running after Stop", i+1)
		}
	}
	if err := c.Heal(ctx); err != nil {
		t.Fatal(err)
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.Seeds()...), kgo.RequiredAcks(kgo.AllISRAcks()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	topic := "cluster-heal-" + time.Now().Format("150405.000000")
	if _, err := kadm.NewClient(cl).CreateTopic(ctx, 1, -1, nil, topic); err != nil {
		t.Fatal(err)
	}
	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Value: []byte("x")}).FirstErr(); err != nil {
		t.Fatalf("produce with acks=all after healing a stopped cluster: %v", err)
	}
}
