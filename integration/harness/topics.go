package harness

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Topic is a topic to create, with the cluster's default replication
// factor: 1 on the single test brokers (and on nodes a test stops one at a
// time on purpose, which keep Kafka's default), 3 with min.insync.replicas
// 2 on kafkatest's local cluster, as in production.
type Topic struct {
	Name string
	// Partitions is the number of partitions (default 1).
	Partitions int32
	// Replicas is the replication factor; 0 means the cluster's
	// default.replication.factor. Ignored with Broker.
	Replicas int16
	// Broker, when not 0, places every partition on the broker with this
	// node id (a replica assignment), e.g. so that a test can stop the
	// node that leads it; 0 lets the controller choose.
	Broker int32
	// Configs are topic configs, e.g. cleanup.policy.
	Configs map[string]string
}

// CreateTopics creates topics on the cluster of seeds, in order, and stops
// at the first that fails (one that already exists fails too: every test
// topic must be new). It does not wait for the partitions' leaders; the
// clients that use the topics do.
func CreateTopics(ctx context.Context, seeds []string, topics ...Topic) error {
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...))
	if err != nil {
		return fmt.Errorf("creating topics: %w", err)
	}
	defer cl.Close()
	for _, t := range topics {
		if err := createTopic(ctx, cl, t); err != nil {
			return err
		}
	}
	return waitTopics(ctx, cl, topics)
}

// waitTopics waits up to 30 s until every topic has a leader for each of
// its partitions in the metadata: CreateTopics returns once the controller
// committed the topics, before every broker has them, and a relay started
// at once could take them for missing.
func waitTopics(ctx context.Context, cl *kgo.Client, topics []Topic) error {
	names := make([]string, len(topics))
	for i, t := range topics {
		names[i] = t.Name
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		cl.PurgeTopicsFromClient(names...) // kadm answers from cached metadata
		td, err := kadm.NewClient(cl).ListTopics(ctx, names...)
		var missing []string
		for _, n := range names {
			d, ok := td[n]
			ready := ok && d.Err == nil && len(d.Partitions) > 0
			for _, p := range d.Partitions {
				ready = ready && p.Err == nil && p.Leader >= 0
			}
			if !ready {
				missing = append(missing, n)
			}
		}
		if err == nil && len(missing) == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("created topics %v have no leader after 30s (err %v)", missing, err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func createTopic(ctx context.Context, cl *kgo.Client, t Topic) error {
	parts := t.Partitions
	if parts == 0 {
		parts = 1
	}
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = t.Name, parts, cmp.Or(t.Replicas, -1)
	if t.Broker != 0 {
		// With an assignment, the count and the factor come from it.
		rt.NumPartitions, rt.ReplicationFactor = -1, -1
		for p := range parts {
			ra := kmsg.NewCreateTopicsRequestTopicReplicaAssignment()
			ra.Partition, ra.Replicas = p, []int32{t.Broker}
			rt.ReplicaAssignment = append(rt.ReplicaAssignment, ra)
		}
	}
	for _, k := range slices.Sorted(maps.Keys(t.Configs)) {
		c := kmsg.NewCreateTopicsRequestTopicConfig()
		c.Name, c.Value = k, kmsg.StringPtr(t.Configs[k])
		rt.Configs = append(rt.Configs, c)
	}
	req := kmsg.NewPtrCreateTopicsRequest()
	req.Topics = append(req.Topics, rt)
	req.TimeoutMillis = 30000
	resp, err := req.RequestWith(ctx, cl)
	if err == nil && len(resp.Topics) != 1 {
		err = fmt.Errorf("%d topics in the response, want 1", len(resp.Topics))
	}
	if err == nil {
		err = kerr.ErrorForCode(resp.Topics[0].ErrorCode)
		if err != nil && resp.Topics[0].ErrorMessage != nil {
			err = fmt.Errorf("%w: %s", err, *resp.Topics[0].ErrorMessage)
		}
	}
	if err != nil {
		if t.Broker != 0 {
			return fmt.Errorf("creating topic %s on broker %d: %w", t.Name, t.Broker, err)
		}
		return fmt.Errorf("creating topic %s: %w", t.Name, err)
	}
	return nil
}

// DeleteTopics deletes topics from the cluster of seeds and returns the
// first error, naming its topic; a topic that does not exist is an error
// too.
func DeleteTopics(ctx context.Context, seeds []string, names ...string) error {
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...))
	if err != nil {
		return fmt.Errorf("deleting topics: %w", err)
	}
	defer cl.Close()
	resps, err := kadm.NewClient(cl).DeleteTopics(ctx, names...)
	if err != nil {
		return fmt.Errorf("deleting topics %v: %w", names, err)
	}
	for _, n := range names {
		if r, ok := resps[n]; !ok {
			return fmt.Errorf("deleting topic %s: not in the response", n)
		} else if r.Err != nil {
			return fmt.Errorf("deleting topic %s: %w", n, r.Err)
		}
	}
	return nil
}
