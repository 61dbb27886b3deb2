package kafkatest

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/sharerelay/sharerelay/integration/internal/jvmproc"
)

// ClusterSize is the number of nodes of a cluster [StartCluster] starts
// when ClusterOptions.Nodes is 0: the smallest quorum that survives the
// loss of a node, and the replication factor 3 production clusters use.
const ClusterSize = 3

// ClusterOptions configures a local cluster started by [StartCluster].
// The zero value is ready to use.
type ClusterOptions struct {
	// Nodes is the number of combined broker-and-controller nodes; 0
	// means [ClusterSize].
	Nodes int
	// Dir holds one directory per node (node-1, node-2, …). Empty means a
	// new temporary directory, which the caller owns.
	Dir string
	// Properties add to or override the replicated defaults of every node
	// (see [ReplicatedProperties]); an empty value removes one.
	Properties map[string]string
	// Listeners[i] are extra client listeners of node i+1, as
	// [WithListeners] adds them to one broker: for a proxy per node in
	// front of some clients, each node's listener advertising its own
	// proxy. Set each Port when something must forward to it; a port
	// left at 0 is picked at start and not reported back.
	Listeners [][]Listener
	// LibDir, JVMArgs and StartTimeout are those of [Options], for every
	// node.
	LibDir       string
	JVMArgs      []string
	StartTimeout time.Duration
}

// ReplicatedProperties are the properties every node of a local cluster
// gets on top of the single-node test defaults: what a production
// cluster has (replication factor 3 and min.insync.replicas 2 for the
// internal topics and for topics created without a replication factor,
// unclean leader election off), a few partitions for the coordinators'
// topics so that coordinators sit on different nodes, and a replica lag
// bound short enough that a test sees the ISR shrink in seconds.
func ReplicatedProperties(nodes int) map[string]string {
	rf := strconv.Itoa(nodes)
	minISR := strconv.Itoa(max(1, nodes-1))
	return map[string]string{
		"default.replication.factor":                       rf,
		"min.insync.replicas":                              minISR,
		"unclean.leader.election.enable":                   "false",
		"offsets.topic.replication.factor":                 rf,
		"offsets.topic.num.partitions":                     rf,
		"transaction.state.log.replication.factor":         rf,
		"transaction.state.log.min.isr":                    minISR,
		"transaction.state.log.num.partitions":             rf,
		"share.coordinator.state.topic.replication.factor": rf,
		"share.coordinator.state.topic.min.isr":            minISR,
		"share.coordinator.state.topic.num.partitions":     rf,
		// Default 30000: a paused follower leaves the ISR after this.
		"replica.lag.time.max.ms": "6000",
	}
}

// Cluster is a local Apache Kafka cluster of combined KRaft nodes, each a
// JVM child process on 127.0.0.1: every node is a broker and one voter of
// a static controller quorum, so that killing a node can kill the active
// controller, and the two others elect a new one. Each node is a [Broker]
// that can be killed, stopped, paused and restarted on its own.
//
// Combined nodes rather than three brokers beside a controller: three JVMs
// instead of four on a small machine, and no single controller whose loss
// would stop the cluster, so that a controller failover is one of the
// faults a test can cause.
type Cluster struct {
	dir     string
	ownsDir bool
	nodes   []*Broker
}

// StartCluster starts a local cluster and waits until every node is
// ready. The nodes start together: none is ready before a majority of the
// quorum runs. The caller must Stop the cluster.
func StartCluster(ctx context.Context, o ClusterOptions) (*Cluster, error) {
	n := o.Nodes
	if n == 0 {
		n = ClusterSize
	}
	c := &Cluster{dir: o.Dir}
	var err error
	if c.dir == "" {
		if c.dir, err = os.MkdirTemp("", "sharerelay-kafka-cluster-"); err != nil {
			return nil, fmt.Errorf("create cluster directory: %w", err)
		}
		c.ownsDir = true
	}
	props := ReplicatedProperties(n)
	maps.Copy(props, o.Properties)
	for attempt := 1; ; attempt++ {
		if err = c.start(ctx, n, props, o); err == nil {
			return c, nil
		}
		c.Stop()
		if attempt == 3 || !errors.Is(err, jvmproc.ErrPortInUse) {
			break
		}
	}
	if c.ownsDir {
		os.RemoveAll(c.dir)
	}
	return nil, err
}

// start picks ports for n nodes, makes them and starts them together.
func (c *Cluster) start(ctx context.Context, n int, props map[string]string, o ClusterOptions) error {
	ports := make([][2]int, n)
	voters := make([]string, n)
	for i := range ports {
		for j := range ports[i] {
			p, err := FreePort()
			if err != nil {
				return err
			}
			ports[i][j] = p
		}
		voters[i] = fmt.Sprintf("%d@127.0.0.1:%d", i+1, ports[i][1])
	}
	c.nodes = c.nodes[:0]
	for i := range n {
		opts := Options{
			Dir:  filepath.Join(c.dir, "node-"+strconv.Itoa(i+1)),
			Port: ports[i][0], ControllerPort: ports[i][1],
			NodeID: i + 1, Voters: strings.Join(voters, ","),
			Properties: props, LibDir: o.LibDir, JVMArgs: o.JVMArgs, StartTimeout: o.StartTimeout,
		}
		if i < len(o.Listeners) && len(o.Listeners[i]) > 0 {
			var err error
			if opts, _, err = WithListeners(opts, o.Listeners[i]...); err != nil {
				return fmt.Errorf("node %d: %w", i+1, err)
			}
		}
		b, err := newBroker(ctx, opts)
		if err != nil {
			return err
		}
		// A failed attempt's data was formatted for other voters.
		if err := os.RemoveAll(b.dataDir()); err != nil {
			return fmt.Errorf("clear node %d: %w", i+1, err)
		}
		c.nodes = append(c.nodes, b)
	}
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i, b := range c.nodes {
		wg.Go(func() {
			if err := b.Start(ctx); err != nil {
				errs[i] = fmt.Errorf("node %d: %w", i+1, err)
			}
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

// Seeds returns every node's bootstrap address.
func (c *Cluster) Seeds() []string {
	out := make([]string, len(c.nodes))
	for i, b := range c.nodes {
		out[i] = b.Addr()
	}
	return out
}

// Nodes returns the nodes, node id i+1 at index i.
func (c *Cluster) Nodes() []*Broker { return c.nodes }

// Node returns the node with the given KRaft node id (1-based), or nil.
func (c *Cluster) Node(id int32) *Broker {
	if id < 1 || int(id) > len(c.nodes) {
		return nil
	}
	return c.nodes[id-1]
}

// Dir returns the directory of the nodes' directories.
func (c *Cluster) Dir() string { return c.dir }

// Stop stops every running node (SIGTERM, then SIGKILL after a grace
// period), the nodes together.
func (c *Cluster) Stop() error {
	errs := make([]error, len(c.nodes))
	var wg sync.WaitGroup
	for i, b := range c.nodes {
		wg.Go(func() { errs[i] = b.Stop() })
	}
	wg.Wait()
	return errors.Join(errs...)
}

// Remove deletes the cluster's directory when StartCluster created it.
func (c *Cluster) Remove() error {
	if !c.ownsDir {
		return nil
	}
	return os.RemoveAll(c.dir)
}
