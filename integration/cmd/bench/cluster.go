package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sharerelay/sharerelay/audit"
	"github.com/sharerelay/sharerelay/integration/kafkatest"
	"github.com/sharerelay/sharerelay/sharegroup"
)

// sourcePartitions is the partition count of every source and output topic.
const sourcePartitions = 3

// benchJVMArgs are the heap and performance flags of Kafka's own
// kafka-server-start.sh and kafka-run-class.sh. kafkatest's defaults stop
// the JIT at C1 and use the serial collector to start fast, which would
// make the broker, not the clients, what this measures. Every node of a
// local cluster (-nodes 3) gets the same: the heap Kafka's scripts give
// one broker, and its collector.
var benchJVMArgs = []string{
	"-Xms1g", "-Xmx1g",
	"-server", "-XX:+UseG1GC", "-XX:MaxGCPauseMillis=20", "-XX:InitiatingHeapOccupancyPercent=35",
	"-XX:+ExplicitGCInvokesConcurrent", "-XX:MaxInlineLevel=15",
	"-XX:+ExitOnOutOfMemoryError", "-Djava.awt.headless=true",
}

// broker is the cluster measured on.
type broker struct {
	seeds []string
	kind  string // "external" or "local"
	// nodes are the local broker's JVMs: the one broker, or every node
	// of a local cluster (-nodes); none for an external cluster.
	nodes []*kafkatest.Broker
	// cluster is the local cluster of -nodes 3, nil otherwise.
	cluster *kafkatest.Cluster
	// recordLocks is the local broker's
	// group.share.max.partition.max.record.locks; 0 for Kafka's default
	// or an external cluster.
	recordLocks int
}

// The broker config that bounds the record locks a share group may set
// per partition (share.partition.max.record.locks), and Kafka's range and
// default for it.
const (
	maxRecordLocksConfig       = "group.share.max.partition.max.record.locks"
	minMaxRecordLocks          = 2000
	maxMaxRecordLocks          = 10000
	kafkaDefaultMaxRecordLocks = 4000
)

// describeLimits says which share-group limits the broker runs with, as
// the tables and goals name the setting, with the record locks a group may
// hold per partition as the broker reports them (when it can be asked).
func (b *bench) describeLimits(ctx context.Context) string {
	most := 0
	dctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if bc, err := sharegroup.BrokerConfig(dctx, b.adm, maxRecordLocksConfig); err == nil {
		most, _ = strconv.Atoi(bc[maxRecordLocksConfig])
	}
	return nodesLabel(len(b.br.nodes), limitsLabel(b.br.isLocal(), b.br.recordLocks, most))
}

// nodesLabel puts the shape of a local cluster of more than one node
// before limits, the label of its share-group limits: the tables, goals
// and JSON of a three-node bench say so wherever its numbers go.
func nodesLabel(nodes int, limits string) string {
	if nodes <= 1 {
		return limits
	}
	rf, minISR := replication(nodes)
	return fmt.Sprintf("%d nodes, RF %d, min.insync.replicas %d; %s", nodes, rf, minISR, limits)
}

// replication returns the replication factor and min.insync.replicas of
// the topics on a local cluster of n nodes: kafkatest's replicated
// defaults, what a production cluster has, for every topic the bench and
// the relay create and for the brokers' internal ones. One node has one
// replica.
func replication(n int) (rf, minISR int) {
	if n <= 1 {
		return 1, 1
	}
	minISR, err := strconv.Atoi(kafkatest.ReplicatedProperties(n)["min.insync.replicas"])
	if err != nil {
		panic(fmt.Sprintf("kafkatest.ReplicatedProperties(%d): min.insync.replicas: %v", n, err))
	}
	return n, minISR
}

// limitsLabel names a broker setting: local or an external cluster, the
// record locks set (0: Kafka's default), and those the broker reported
// (0: unknown).
func limitsLabel(local bool, set, reported int) string {
	locks := ""
	if reported > 0 {
		locks = fmt.Sprintf(" (%s record locks a partition)", thousands(reported))
	}
	switch {
	case !local:
		return "the cluster's own share-group limits" + locks
	case set == 0:
		return "Kafka's default share-group limits" + locks
	case set > kafkaDefaultMaxRecordLocks:
		return fmt.Sprintf("share-group record locks raised to %s a partition", thousands(set))
	case set < kafkaDefaultMaxRecordLocks:
		return fmt.Sprintf("share-group record locks lowered to %s a partition", thousands(set))
	}
	return fmt.Sprintf("share-group record locks set to %s a partition, Kafka's default", thousands(set))
}

// thousands writes n, not negative, with commas between groups of three
// digits.
func thousands(n int) string {
	s := strconv.Itoa(n)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

// benchProperties are Kafka's defaults for the request threads, where the
// test broker keeps fewer: with two I/O threads, four share consumers'
// fetches queue the transactional produces behind them, which a
// production broker (eight) does not do.
var benchProperties = map[string]string{
	"num.network.threads": "3",
	"num.io.threads":      "8",
	"background.threads":  "10",
}

// clusterProperties put back Kafka's own timers where kafkatest's
// cluster shortens them for tests that kill and pause nodes. The bench
// does neither, and on a busy machine a follower 6 s behind, or a node's
// heartbeats 4 s late, would shrink an ISR or fence a node mid-run: the
// run would measure the recovery, not the contender.
var clusterProperties = map[string]string{
	"replica.lag.time.max.ms":      "", // Kafka's 30000
	"broker.session.timeout.ms":    "", // Kafka's 9000
	"broker.heartbeat.interval.ms": "", // Kafka's 2000
}

// getBroker returns the cluster in KAFKA_BOOTSTRAP_SERVERS, or starts a
// local one of nodes nodes (1, or 3 for a three-node KRaft cluster) whose
// share groups may hold recordLocks record locks per partition
// (group.share.max.partition.max.record.locks; 0: Kafka's default, what a
// user's broker has unless its operator raised it). clusterID is the
// KRaft cluster id of a local one-node broker ("": kafkatest's fixed
// one); a second broker that stands for another cluster needs its own,
// as the relay tells two clusters apart by their ids.
func getBroker(ctx context.Context, recordLocks, nodes int, clusterID string) (*broker, error) {
	if seeds := kafkatest.ExternalSeeds(); len(seeds) > 0 {
		return &broker{seeds: seeds, kind: "external"}, nil
	}
	sctx, cancel := context.WithTimeout(ctx, 5*time.Minute) // includes fetching the jars once
	defer cancel()
	began := time.Now()
	props := maps.Clone(benchProperties)
	if recordLocks > 0 {
		props[maxRecordLocksConfig] = strconv.Itoa(recordLocks)
	}
	br := &broker{kind: "local", recordLocks: recordLocks}
	if nodes <= 1 {
		progress("starting a local Kafka broker (set %s to use another cluster)", kafkatest.EnvBootstrap)
		b, err := kafkatest.StartLocal(sctx, kafkatest.Options{JVMArgs: benchJVMArgs, Properties: props, ClusterID: clusterID})
		if err != nil {
			return nil, fmt.Errorf("starting a local broker: %w", err)
		}
		br.nodes = []*kafkatest.Broker{b}
	} else {
		progress("starting a local Kafka cluster of %d nodes (set %s to use another cluster)", nodes, kafkatest.EnvBootstrap)
		maps.Copy(props, clusterProperties)
		c, err := kafkatest.StartCluster(sctx, kafkatest.ClusterOptions{Nodes: nodes, JVMArgs: benchJVMArgs, Properties: props})
		if err != nil {
			return nil, fmt.Errorf("starting a local cluster of %d nodes: %w", nodes, err)
		}
		br.cluster, br.nodes = c, c.Nodes()
	}
	logs := make([]string, len(br.nodes))
	for i, n := range br.nodes {
		br.seeds, logs[i] = append(br.seeds, n.Addr()), n.LogPath()
	}
	progress("local broker %s ready in %s (log %s)", strings.Join(br.seeds, ","), time.Since(began).Round(time.Millisecond), strings.Join(logs, ", "))
	return br, nil
}

// isLocal says whether the bench started the broker (and may set its
// limits, read its CPU and throw it away).
func (br *broker) isLocal() bool { return len(br.nodes) > 0 }

// pids returns the process ids of the local broker's JVMs: one, or one a
// node of a local cluster; none for an external cluster.
func (br *broker) pids() []int {
	var out []int
	for _, n := range br.nodes {
		if pid := n.Pid(); pid > 0 {
			out = append(out, pid)
		}
	}
	return out
}

// stop stops a local broker or cluster and removes its directories; an
// external cluster is left alone.
func (br *broker) stop() error {
	switch {
	case br.cluster != nil:
		progress("stopping the local cluster")
		if err := br.cluster.Stop(); err != nil {
			return fmt.Errorf("stopping the local cluster: %w", err)
		}
		if err := br.cluster.Remove(); err != nil {
			return fmt.Errorf("removing the cluster directory: %w", err)
		}
	case len(br.nodes) == 1:
		progress("stopping the local broker")
		if err := br.nodes[0].Stop(); err != nil {
			return fmt.Errorf("stopping the local broker: %w", err)
		}
		if err := os.RemoveAll(br.nodes[0].Dir()); err != nil {
			return fmt.Errorf("removing the broker directory: %w", err)
		}
	}
	return nil
}

// bench holds what every measurement shares.
type bench struct {
	opts     options
	br       *broker
	cl       *kgo.Client // admin requests
	adm      *kadm.Client
	runID    string
	relayLog *slog.Logger
	// groups are the share groups created, deleted at the end on an
	// external cluster.
	groups []string
	// src is the source cluster of relay-eos-cross (-cross): a second
	// local broker with the first one's settings, where that contender's
	// source topic is loaded and its share group lives; nil without
	// -cross.
	src *bench
}

// sourceOf returns the bench of the cluster where contender c's source
// topic and share group live: the second broker for a cross-cluster
// contender, the one cluster for every other.
func (b *bench) sourceOf(c contender) *bench {
	if c.cross {
		return b.src
	}
	return b
}

// brokerPids returns the process ids of every local broker JVM of the
// run: the first broker's (or cluster's) and, with -cross, the second
// broker's. Every contender's broker CPU counts them all, so that the
// rows of a -cross table compare: the second broker idles while the
// others run.
func (b *bench) brokerPids() []int {
	pids := b.br.pids()
	if b.src != nil {
		pids = append(pids, b.src.br.pids()...)
	}
	return pids
}

func newBench(opts options, br *broker) (*bench, error) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(br.seeds...), kgo.MetadataMinAge(250*time.Millisecond))
	if err != nil {
		return nil, fmt.Errorf("creating the admin client: %w", err)
	}
	if opts.cpuProfileDir != "" {
		if err := os.MkdirAll(opts.cpuProfileDir, 0o755); err != nil {
			cl.Close()
			return nil, fmt.Errorf("-cpuprofile-dir: %w", err)
		}
	}
	return &bench{
		opts: opts, br: br, cl: cl, adm: kadm.NewClient(cl),
		runID:    strconv.FormatInt(time.Now().Unix()%(1<<30), 36),
		relayLog: slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})),
	}, nil
}

// close deletes the share groups (external clusters only: a local broker
// is thrown away) and closes the admin client.
func (b *bench) close() {
	if !b.br.isLocal() && len(b.groups) > 0 {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		if _, err := b.adm.DeleteGroups(ctx, b.groups...); err != nil {
			progress("warning: deleting share groups: %v", err)
		}
		cancel()
	}
	b.cl.Close()
}

// clientOpts returns the options of a new client of the cluster.
func (b *bench) clientOpts(extra ...kgo.Opt) []kgo.Opt {
	return append([]kgo.Opt{kgo.SeedBrokers(b.br.seeds...)}, extra...)
}

// name returns a topic, group or pipeline name unique to this bench run.
func (b *bench) name(parts ...string) string {
	return "bench-" + b.runID + "-" + strings.Join(parts, "-")
}

// createTopic creates a topic and waits until its metadata lists a leader
// for every partition. On a local cluster the topic has a replica on
// every node and min.insync.replicas one fewer (replication), set on the
// topic rather than left to the brokers' defaults; elsewhere it takes the
// cluster's default replication factor.
func (b *bench) createTopic(ctx context.Context, name string, partitions int32, configs map[string]*string) error {
	rf := int16(-1)
	if n := len(b.br.nodes); n > 1 {
		r, minISR := replication(n)
		rf = int16(r)
		configs = maps.Clone(configs)
		if configs == nil {
			configs = make(map[string]*string)
		}
		configs["min.insync.replicas"] = kadm.StringPtr(strconv.Itoa(minISR))
	}
	resp, err := b.adm.CreateTopic(ctx, partitions, rf, configs, name)
	if err == nil {
		err = resp.Err
	}
	if err != nil {
		return fmt.Errorf("creating topic %s: %w", name, err)
	}
	for {
		td, err := b.adm.ListTopics(ctx, name)
		if err == nil {
			if d, ok := td[name]; ok && d.Err == nil && len(d.Partitions) == int(partitions) && leadersKnown(d) {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for topic %s: %w", name, ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

func leadersKnown(d kadm.TopicDetail) bool {
	for _, p := range d.Partitions {
		if p.Leader < 0 || p.Err != nil {
			return false
		}
	}
	return true
}

// deleteTopics deletes topics, ignoring those that do not exist (a ledger
// the relay never created).
func (b *bench) deleteTopics(names ...string) {
	if len(names) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	resps, err := b.adm.DeleteTopics(ctx, names...)
	if err != nil {
		progress("warning: deleting topics: %v", err)
		return
	}
	for _, r := range resps {
		if r.Err != nil && !errors.Is(r.Err, kerr.UnknownTopicOrPartition) {
			progress("warning: deleting topic %s: %v", r.Topic, r.Err)
		}
	}
}

// newGroup sets up a fresh share group reading from the earliest offset,
// read_committed like the relay's.
func (b *bench) newGroup(ctx context.Context, group string) error {
	b.groups = append(b.groups, group)
	return sharegroup.SetConfigs(ctx, b.cl, group, map[string]string{
		sharegroup.AutoOffsetReset: "earliest",
		sharegroup.IsolationLevel:  "read_committed",
	})
}

// waitLagZero waits until the share group has no record of topic left to
// acknowledge.
func (b *bench) waitLagZero(ctx context.Context, group, topic string, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var last int64 = -1
	var lastErr error
	for {
		lag, err := audit.ShareGroupLag(ctx, b.adm, group, topic)
		if err == nil {
			if last = audit.TotalLag(lag); last == 0 {
				return nil
			}
		} else {
			lastErr = err
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("share group %s still has a lag of %d after %s (last error: %v)", group, last, timeout, lastErr)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// load writes n records of about size bytes into topic, fast: idempotent
// producer, acks=all (said here, not left to franz-go's default, so that a
// source topic on a cluster is written to its in-sync replicas like every
// output), 10ms linger, batches of up to -source-batch-bytes.
func (b *bench) load(ctx context.Context, topic string, size, n int) error {
	opts := []kgo.Opt{
		kgo.DefaultProduceTopic(topic),
		kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.ProducerLinger(10 * time.Millisecond),
		kgo.MaxBufferedRecords(100_000),
	}
	if b.opts.sourceBatchBytes > 0 {
		opts = append(opts, kgo.ProducerBatchMaxBytes(int32(b.opts.sourceBatchBytes)))
	}
	cl, err := kgo.NewClient(b.clientOpts(opts...)...)
	if err != nil {
		return fmt.Errorf("creating the loader: %w", err)
	}
	defer cl.Close()
	var (
		once  sync.Once
		first error
	)
	promise := func(r *kgo.Record, err error) {
		if err != nil {
			once.Do(func() { first = fmt.Errorf("producing to %s: %w", topic, err) })
		}
	}
	rng := rand.New(rand.NewPCG(uint64(size), uint64(n)))
	began := time.Now()
	for i := range n {
		if i%10_000 == 0 && ctx.Err() != nil {
			break
		}
		cl.Produce(ctx, &kgo.Record{Key: strconv.AppendInt(nil, int64(i), 10), Value: value(rng, i, size)}, promise)
	}
	if err := cl.Flush(ctx); err != nil {
		return fmt.Errorf("flushing the loader: %w", err)
	}
	if first != nil {
		return first
	}
	el := time.Since(began)
	progress("loaded %d records of %d B into %s in %s (%.0f rec/s)", n, size, topic, el.Round(time.Millisecond), float64(n)/el.Seconds())
	return nil
}

const padAlphabet = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_"

// value returns a JSON value of size bytes (or the smallest that holds the
// id) with a random pad, so batch compression cannot shrink it to nothing.
func value(rng *rand.Rand, id, size int) []byte {
	v := make([]byte, 0, max(size, 32))
	v = fmt.Appendf(v, `{"id":%d,"pad":"`, id)
	for pad := size - len(v) - 2; pad > 0; {
		x := rng.Uint64()
		for k := 0; k < 10 && pad > 0; k, pad = k+1, pad-1 {
			v = append(v, padAlphabet[x&63])
			x >>= 6
		}
	}
	return append(v, `"}`...)
}
