package kafkatest

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Where things live in a cluster, so that a test can kill exactly the node
// that leads a partition, hosts a coordinator or is the active controller.
// Each asks the running nodes (any of them answers for the cluster) and
// retries while the answer is an election in progress.

// CoordinatorKind is FindCoordinator's key type.
type CoordinatorKind int8

// The coordinators a test looks for.
const (
	// GroupCoordinator coordinates a consumer or share group (key: the
	// group id).
	GroupCoordinator CoordinatorKind = 0
	// TxnCoordinator coordinates a transactional id (key: the id).
	TxnCoordinator CoordinatorKind = 1
	// ShareCoordinator keeps the state of one share partition (key:
	// [ShareCoordinatorKey]).
	ShareCoordinator CoordinatorKind = 2
)

// String names the coordinator, for messages.
func (k CoordinatorKind) String() string {
	switch k {
	case GroupCoordinator:
		return "group coordinator"
	case TxnCoordinator:
		return "transaction coordinator"
	case ShareCoordinator:
		return "share coordinator"
	}
	return fmt.Sprintf("coordinator kind %d", int8(k))
}

// ShareCoordinatorKey is the key of a share partition's share coordinator:
// "group:topicId:partition", the topic id as Kafka prints a Uuid.
func ShareCoordinatorKey(group string, topicID [16]byte, partition int32) string {
	return fmt.Sprintf("%s:%s:%d", group, base64.RawURLEncoding.EncodeToString(topicID[:]), partition)
}

// lookupRetry bounds how long a lookup retries an answer that says an
// election or a move is under way.
const lookupRetry = 30 * time.Second

// client returns a client of the running nodes.
func (c *Cluster) client() (*kgo.Client, error) {
	var seeds []string
	for _, b := range c.nodes {
		if b.Running() {
			seeds = append(seeds, b.Addr())
		}
	}
	if len(seeds) == 0 {
		return nil, errors.New("no node is running")
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.DialTimeout(2*time.Second), kgo.RequestTimeoutOverhead(5*time.Second))
	if err != nil {
		return nil, fmt.Errorf("cluster client: %w", err)
	}
	return cl, nil
}

// retry runs f until it succeeds, ctx ends or lookupRetry passes.
func (c *Cluster) retry(ctx context.Context, what string, f func(context.Context, *kgo.Client) (int32, error)) (int32, error) {
	ctx, cancel := context.WithTimeout(ctx, lookupRetry)
	defer cancel()
	var last error
	for {
		cl, err := c.client()
		if err != nil {
			return -1, fmt.Errorf("%s: %w", what, err)
		}
		id, err := f(ctx, cl)
		cl.Close()
		if err == nil && id >= 0 {
			return id, nil
		}
		if err == nil {
			err = errors.New("no leader yet")
		}
		last = err
		select {
		case <-ctx.Done():
			return -1, fmt.Errorf("%s: %w (last: %v)", what, ctx.Err(), last)
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// Leader returns the node id of the leader of topic's partition.
func (c *Cluster) Leader(ctx context.Context, topic string, partition int32) (int32, error) {
	return c.retry(ctx, fmt.Sprintf("leader of %s[%d]", topic, partition), func(ctx context.Context, cl *kgo.Client) (int32, error) {
		md, err := kadm.NewClient(cl).Metadata(ctx, topic)
		if err != nil {
			return -1, err
		}
		p, ok := md.Topics[topic].Partitions[partition]
		if !ok {
			return -1, fmt.Errorf("no partition %d", partition)
		}
		if p.Err != nil {
			return -1, p.Err
		}
		return p.Leader, nil
	})
}

// TopicID returns a topic's id.
func (c *Cluster) TopicID(ctx context.Context, topic string) ([16]byte, error) {
	cl, err := c.client()
	if err != nil {
		return [16]byte{}, err
	}
	defer cl.Close()
	md, err := kadm.NewClient(cl).Metadata(ctx, topic)
	if err != nil {
		return [16]byte{}, fmt.Errorf("topic id of %s: %w", topic, err)
	}
	t, ok := md.Topics[topic]
	if !ok || t.Err != nil {
		return [16]byte{}, fmt.Errorf("topic id of %s: %v", topic, t.Err)
	}
	return t.ID, nil
}

// Coordinator returns the node id of the coordinator of kind for key.
func (c *Cluster) Coordinator(ctx context.Context, kind CoordinatorKind, key string) (int32, error) {
	return c.retry(ctx, fmt.Sprintf("%s of %q", kind, key), func(ctx context.Context, cl *kgo.Client) (int32, error) {
		req := kmsg.NewPtrFindCoordinatorRequest()
		req.CoordinatorType = int8(kind)
		req.CoordinatorKeys = []string{key}
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			return -1, err
		}
		if len(resp.Coordinators) == 0 {
			return -1, errors.New("empty answer")
		}
		co := resp.Coordinators[0] // the one key asked
		if err := kerr.ErrorForCode(co.ErrorCode); err != nil {
			return -1, err
		}
		return co.NodeID, nil
	})
}

// ActiveController returns the node id of the KRaft quorum's leader.
func (c *Cluster) ActiveController(ctx context.Context) (int32, error) {
	return c.retry(ctx, "active controller", func(ctx context.Context, cl *kgo.Client) (int32, error) {
		req := kmsg.NewPtrDescribeQuorumRequest()
		t := kmsg.NewDescribeQuorumRequestTopic()
		t.Topic = "__cluster_metadata"
		p := kmsg.NewDescribeQuorumRequestTopicPartition()
		t.Partitions = append(t.Partitions, p)
		req.Topics = append(req.Topics, t)
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			return -1, err
		}
		if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
			return -1, err
		}
		if len(resp.Topics) == 0 || len(resp.Topics[0].Partitions) == 0 {
			return -1, errors.New("empty answer")
		}
		qp := resp.Topics[0].Partitions[0] // the one partition asked
		if err := kerr.ErrorForCode(qp.ErrorCode); err != nil {
			return -1, err
		}
		return qp.LeaderID, nil
	})
}

// UnderReplicated returns the partitions (internal topics included) whose
// in-sync replicas are fewer than their replicas, as "topic[p] isr [..] of
// [..]", sorted.
func (c *Cluster) UnderReplicated(ctx context.Context) ([]string, error) {
	cl, err := c.client()
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	req := kmsg.NewPtrMetadataRequest() // nil Topics: every topic, internal ones too
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return nil, fmt.Errorf("under-replicated partitions: %w", err)
	}
	var out []string
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			if len(p.ISR) < len(p.Replicas) || p.Leader < 0 {
				out = append(out, fmt.Sprintf("%s[%d] leader %d isr %v of %v", *t.Topic, p.Partition, p.Leader, p.ISR, p.Replicas))
			}
		}
	}
	slices.Sort(out)
	return out, nil
}

// WaitInSync waits until every partition of every topic has all its
// replicas in sync and a leader: after a node restarts, before the next
// fault, so that a test never takes down a second replica of a partition
// by accident.
func (c *Cluster) WaitInSync(ctx context.Context, within time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, within)
	defer cancel()
	var last []string
	var lastErr error
	for {
		last, lastErr = c.UnderReplicated(ctx)
		if lastErr == nil && len(last) == 0 {
			return nil
		}
		select {
		case <-ctx.Done():
			if lastErr != nil {
				return fmt.Errorf("cluster not in sync within %s: %w", within, lastErr)
			}
			return fmt.Errorf("cluster not in sync within %s: %d partitions short (%s)", within, len(last), strings.Join(last[:min(len(last), 5)], "; "))
		case <-time.After(250 * time.Millisecond):
		}
	}
}
