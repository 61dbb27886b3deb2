package chaos

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	toxiproxy "github.com/Shopify/toxiproxy/v2"
	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sharerelay/sharerelay/integration/harness"
	"github.com/sharerelay/sharerelay/integration/kafkatest"
)

// maxRelays is the number of relay slots: proxied listeners, proxies and
// at most this many relay processes at once (2 cores).
const maxRelays = 3

// maxDirectRelays is the most relay processes of a scenario whose relays
// use the direct listener (opts.Direct): the fleet's largest size. They
// have no proxy slot, and a slow transform keeps them within two cores.
const maxDirectRelays = 8

// relayBin is the relay binary every scenario runs as processes.
var relayBin string

func TestMain(m *testing.M) {
	flag.Parse()
	bin, cleanup, err := harness.BuildRelay(context.Background())
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	relayBin = bin
	code := m.Run()
	closeEnv(code != 0)
	writeReport()
	cleanup()
	os.Exit(code)
}

// env is where the scenarios run: the harness's own single broker or
// three-node cluster, each node behind one Toxiproxy proxy per relay slot,
// or an external cluster without proxies.
type env struct {
	// direct are the seeds of the harness's own clients (seeding,
	// lag, the concurrent reader, the verifier): never proxied.
	direct []string
	// slots are the seeds of relay slot i: its proxies (one per node),
	// or direct.
	slots []string
	// local is set when the harness started the nodes itself; then
	// proxies and broker or cluster are set.
	local bool
	// broker is the single node; nil on the cluster.
	broker *kafkatest.Broker
	// cluster is the three-node cluster; nil on the single node.
	cluster *kafkatest.Cluster
	// proxies[i][j] is relay slot i's proxy to node j+1.
	proxies [][]*toxiproxy.Proxy
	// parked is set while the env is stopped because a scenario needed
	// the other one (one at a time on two cores).
	parked bool
	// role names the env in logs: "sink" (the single node or the
	// cluster every scenario runs on) or "source" (the second single
	// node of the cross-cluster scenarios).
	role string
}

// nodes returns the local nodes, node id j+1 at index j.
func (e *env) nodes() []*kafkatest.Broker {
	if e.cluster != nil {
		return e.cluster.Nodes()
	}
	if e.broker != nil {
		return []*kafkatest.Broker{e.broker}
	}
	return nil
}

// up reports whether every local node is running.
func (e *env) up() bool {
	for _, b := range e.nodes() {
		if !b.Running() {
			return false
		}
	}
	return true
}

// needs says what a scenario needs beyond a broker.
type needs int

const (
	// needProxy: network faults between relays and broker.
	needProxy needs = 1 << iota
	// needBroker: killing and restarting the broker.
	needBroker
	// needCluster: the local three-node cluster (replication factor 3,
	// min.insync.replicas 2) instead of the single node, with its
	// nodes to kill, stop and pause.
	needCluster
	// needCross: a second single node, a KRaft cluster of its own with
	// its own proxies per relay slot, as the source cluster (the source
	// topic and the share group), next to the single node as the sink
	// (outputs, dead letters, ledger). Not with needCluster.
	needCross
)

// The local envs, started on first use. At most one runs at a time: a
// scenario on the other stops the one running (two cores).
var (
	envMu   sync.Mutex
	envs    = map[bool]*env{} // by cluster
	envErrs = map[bool]error{}
	// sourceEnv is the cross-cluster scenarios' source cluster. It runs
	// beside the single node (which is their sink) and is parked while
	// any other scenario runs.
	sourceEnv    *env
	sourceEnvErr error
)

// chaosEnv returns the environment, starting the nodes and the proxies on
// first use: the sink, where the relays write, and the source, where they
// read — with needCross the second single node, else the sink itself. It
// skips (or, with SHARERELAY_REQUIRE_BROKER=1 and no external cluster,
// fails) when there is no broker to use.
func chaosEnv(t *testing.T, n needs) (sink, source *env) {
	t.Helper()
	require := os.Getenv(kafkatest.EnvRequireBroker) == "1"
	if testing.Short() {
		if require {
			t.Fatal("chaos test under -short with SHARERELAY_REQUIRE_BROKER=1")
		}
		t.Skip("chaos test skipped under -short")
	}
	if seeds := kafkatest.ExternalSeeds(); len(seeds) > 0 {
		// The operator chose an external cluster: the harness cannot
		// put a proxy between the relays and it (the brokers advertise
		// themselves) nor restart it. Not a failure even when the broker
		// is required: the local broker was not to be used.
		if n&needProxy != 0 {
			t.Skipf("needs network faults: the harness's own broker advertises a listener through Toxiproxy; %s points at an external cluster whose advertised addresses bypass any proxy", kafkatest.EnvBootstrap)
		}
		if n&(needBroker|needCluster) != 0 {
			t.Skipf("needs to kill and restart the brokers; %s points at an external cluster", kafkatest.EnvBootstrap)
		}
		if n&needCross != 0 {
			t.Skipf("needs a second cluster as the source; %s names one", kafkatest.EnvBootstrap)
		}
		e := &env{direct: seeds, slots: []string{strings.Join(seeds, ","), strings.Join(seeds, ","), strings.Join(seeds, ",")}, role: "sink"}
		return e, e
	}
	cluster := n&needCluster != 0
	cross := n&needCross != 0
	if cluster && cross {
		t.Fatal("chaos: the cross-cluster scenarios run on two single nodes, not on the three-node cluster")
	}
	envMu.Lock()
	defer envMu.Unlock()
	if other := envs[!cluster]; other != nil && !other.parked {
		other.park()
	}
	if !cross && sourceEnv != nil && !sourceEnv.parked {
		sourceEnv.park()
	}
	e, err := envs[cluster], envErrs[cluster]
	switch {
	case err != nil:
	case e == nil:
		e, err = startEnv(cluster, "sink")
		envs[cluster], envErrs[cluster] = e, err
	case e.parked:
		err = e.unpark()
	}
	src := e
	if err == nil && cross {
		switch src, err = sourceEnv, sourceEnvErr; {
		case err != nil:
		case src == nil:
			src, err = startEnv(false, "source")
			if err == nil {
				err = distinctClusters(e, src)
			}
			sourceEnv, sourceEnvErr = src, err
		case src.parked:
			err = src.unpark()
		}
	}
	if err != nil {
		if errors.Is(err, kafkatest.ErrToolMissing) && !require {
			t.Skipf("no Kafka broker (set %s, or install java and mvn): %v", kafkatest.EnvBootstrap, err)
		}
		t.Fatalf("chaos: starting the brokers and proxies: %v", err)
	}
	for _, x := range []*env{e, src} {
		if !x.up() {
			t.Fatalf("chaos: a node of the %s cluster is not running (a previous scenario left it down)", x.role)
		}
	}
	return e, src
}

// startEnv starts one proxy per relay slot and node, and a single broker
// or a three-node cluster whose nodes have a direct PLAINTEXT listener
// plus one listener per slot that advertises that slot's proxy to that
// node. Clients that bootstrap through a slot's proxies get the slot's
// proxies back in every metadata response, so all their connections go
// through them, to whichever node leads; the harness's clients use the
// direct listeners and never see a fault.
func startEnv(cluster bool, role string) (*env, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	defer cancel()
	nodes := 1
	if cluster {
		nodes = kafkatest.ClusterSize
	}
	srv := toxiproxy.NewServer(toxiproxy.NewMetricsContainer(nil), zerolog.Nop())
	var lastErr error
	for attempt := 0; attempt < 3; attempt++ {
		e := &env{local: true, role: role, proxies: make([][]*toxiproxy.Proxy, maxRelays), slots: make([]string, maxRelays)}
		ls := make([][]kafkatest.Listener, nodes)
		var err error
		for i := range maxRelays {
			var addrs []string
			for j := range nodes {
				var pp, lp int
				if pp, err = kafkatest.FreePort(); err == nil {
					lp, err = kafkatest.FreePort()
				}
				if err != nil {
					return nil, err
				}
				addr := fmt.Sprintf("127.0.0.1:%d", pp)
				ls[j] = append(ls[j], kafkatest.Listener{Name: fmt.Sprintf("RELAY%d", i), Port: lp, Advertised: addr})
				px := toxiproxy.NewProxy(srv, fmt.Sprintf("relay%d-node%d", i, j+1), addr, fmt.Sprintf("127.0.0.1:%d", lp))
				if err = px.Start(); err != nil {
					err = fmt.Errorf("starting proxy %s: %w", addr, err)
					break
				}
				e.proxies[i] = append(e.proxies[i], px)
				addrs = append(addrs, addr)
			}
			if err != nil {
				break
			}
			e.slots[i] = strings.Join(addrs, ",")
		}
		if err == nil {
			err = e.startNodes(ctx, ls, clusterID(role))
		}
		if err == nil {
			err = e.checkSlots(ctx)
		}
		if err == nil {
			fmt.Fprintf(os.Stderr, "chaos: %s: %d node(s) %v (logs %v), relay proxies %v\n", role, nodes, e.direct, e.logs(), e.slots)
			return e, nil
		}
		e.stop()
		lastErr = err
		if errors.Is(err, kafkatest.ErrToolMissing) {
			return nil, err
		}
	}
	return nil, lastErr
}

// clusterID is the KRaft cluster id of the env of role: kafkatest's own for
// the sink, one of its own for the source, since the relay tells two
// clusters apart by their ids.
func clusterID(role string) string {
	if role == "sink" {
		return "" // kafkatest.ClusterID
	}
	return kafkatest.NamedClusterID("chaos-" + role)
}

// startNodes starts the single broker (one list of listeners) or the
// cluster (one list per node), a single broker with cluster id id (empty:
// kafkatest's).
func (e *env) startNodes(ctx context.Context, ls [][]kafkatest.Listener, id string) error {
	if len(ls) > 1 {
		c, err := kafkatest.StartCluster(ctx, kafkatest.ClusterOptions{Nodes: len(ls), Properties: brokerProperties(), Listeners: ls})
		if err != nil {
			return err
		}
		e.cluster, e.direct = c, c.Seeds()
		return nil
	}
	opts, _, err := kafkatest.WithListeners(kafkatest.Options{Properties: brokerProperties(), ClusterID: id}, ls[0]...)
	if err != nil {
		return err
	}
	b, err := kafkatest.StartLocal(ctx, opts)
	if err != nil {
		return err
	}
	e.broker, e.direct = b, []string{b.Addr()}
	return nil
}

// checkSlots checks what the network faults rely on: a client bootstrapped
// through a relay slot's proxies is told of every node at that slot's
// proxy to it, and of nothing else.
func (e *env) checkSlots(ctx context.Context) error {
	for i, seeds := range e.slots {
		cl, err := kgo.NewClient(kgo.SeedBrokers(strings.Split(seeds, ",")...))
		if err != nil {
			return err
		}
		bs, err := kadm.NewClient(cl).ListBrokers(ctx)
		cl.Close()
		if err != nil {
			return fmt.Errorf("listing brokers through the proxies of relay slot %d: %w", i, err)
		}
		for _, b := range bs {
			if int(b.NodeID) < 1 || int(b.NodeID) > len(e.proxies[i]) || e.proxies[i][b.NodeID-1].Listen != fmt.Sprintf("%s:%d", b.Host, b.Port) {
				return fmt.Errorf("relay slot %d is told of node %d at %s:%d, not at its proxy to it (proxies %s)", i, b.NodeID, b.Host, b.Port, seeds)
			}
		}
		if len(bs) != len(e.proxies[i]) {
			return fmt.Errorf("relay slot %d is told of %d nodes, want %d", i, len(bs), len(e.proxies[i]))
		}
	}
	return nil
}

// logs returns the nodes' log files.
func (e *env) logs() []string {
	var out []string
	for _, b := range e.nodes() {
		out = append(out, b.LogPath())
	}
	return out
}

// park stops the nodes (SIGTERM) for a scenario on the other env,
// keeping their data; unpark starts them again.
func (e *env) park() {
	for _, b := range e.nodes() {
		if err := b.Stop(); err != nil {
			fmt.Fprintf(os.Stderr, "chaos: parking %s: %v\n", b.Addr(), err)
		}
	}
	e.parked = true
}

func (e *env) unpark() error {
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	if e.cluster != nil {
		if err := e.cluster.Heal(ctx); err != nil {
			return err
		}
	} else if err := e.broker.Start(ctx); err != nil {
		return err
	}
	e.parked = false
	return nil
}

// distinctClusters checks that the two envs report different cluster ids,
// as two clusters do: the relay takes a source.cluster with the sink's id
// for the sink named twice.
func distinctClusters(sink, source *env) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var ids []string
	for _, e := range []*env{sink, source} {
		cl, err := kgo.NewClient(kgo.SeedBrokers(e.direct...))
		if err != nil {
			return err
		}
		m, err := kadm.NewClient(cl).BrokerMetadata(ctx)
		cl.Close()
		if err != nil {
			return fmt.Errorf("the cluster id of the %s cluster: %w", e.role, err)
		}
		ids = append(ids, m.Cluster)
	}
	if ids[0] == ids[1] {
		return fmt.Errorf("the sink and the source cluster both report cluster id %s: the relays would take them for one", ids[0])
	}
	fmt.Fprintf(os.Stderr, "chaos: sink cluster id %s, source cluster id %s\n", ids[0], ids[1])
	return nil
}

// brokerProperties are the chaos nodes' overrides of kafkatest's test
// defaults.
func brokerProperties() map[string]string {
	return map[string]string{
		// The relays' groups raise share.delivery.count.limit to 10
		// (the broker's maximum by default) so that the faults do not
		// use up every delivery of a record; keep the maximum explicit.
		"group.share.max.delivery.count.limit": "10",
	}
}

// stop stops the proxies and the nodes.
func (e *env) stop() {
	for _, ps := range e.proxies {
		for _, p := range ps {
			p.Stop()
		}
	}
	if e.cluster != nil {
		if err := e.cluster.Stop(); err != nil {
			fmt.Fprintf(os.Stderr, "chaos: stopping the cluster: %v\n", err)
		}
	} else if e.broker != nil {
		if err := e.broker.Stop(); err != nil {
			fmt.Fprintf(os.Stderr, "chaos: stopping the broker: %v\n", err)
		}
	}
}

// closeEnv stops the nodes and the proxies. When tests failed the
// nodes' directories are kept for their logs.
func closeEnv(failed bool) {
	envMu.Lock()
	defer envMu.Unlock()
	for _, e := range []*env{envs[false], envs[true], sourceEnv} {
		if e == nil {
			continue
		}
		e.stop()
		switch {
		case failed:
			fmt.Fprintf(os.Stderr, "chaos: tests failed; broker logs kept at %v\n", e.logs())
		case e.cluster != nil:
			e.cluster.Remove()
		default:
			os.RemoveAll(e.broker.Dir())
		}
	}
}
