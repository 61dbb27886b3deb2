package integration

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sharerelay/sharerelay/audit"
	"github.com/sharerelay/sharerelay/integration/harness"
	"github.com/sharerelay/sharerelay/integration/kafkatest"
)

// The relay on a replicated cluster: three combined KRaft nodes
// (kafkatest.Cluster), every topic at replication factor 3 and
// min.insync.replicas 2, as production runs Kafka. Each test streams
// orders through two relay processes, takes down exactly the node that
// holds one thing the relay depends on (a partition's leadership, a
// coordinator, the controller), and ends with the whole source relayed
// exactly once and relay verify exit 0. Each also shows that its fault
// reached the relay: the leader or coordinator moved, and the relays met
// it (broker disruptions, redeliveries, failed acknowledgements or
// transactions, a pause).
//
// CI runs the tests named TestRealClusterCI*; the others run with
// SHARERELAY_CLUSTER_TESTS=all (make cluster-tests), since every test
// costs a node restart and a resync on a 2-core machine.

// envClusterTests, "all", runs every three-node test.
const envClusterTests = "SHARERELAY_CLUSTER_TESTS"

// clusterTestsAll skips t unless every three-node test was asked for.
func clusterTestsAll(t *testing.T) {
	t.Helper()
	if os.Getenv(envClusterTests) != "all" {
		t.Skipf("a longer three-node test: %s=all (make cluster-tests) runs it", envClusterTests)
	}
}

// clusterRecords is how many orders a three-node test relays.
const clusterRecords = 20_000

// clusterRun is a pipeline with two relay processes working through
// orders that stream in: on the shared three-node cluster, or across two
// clusters (crosscluster_test.go).
type clusterRun struct {
	t *testing.T
	// c is the three-node cluster, healed before the end; nil on single
	// brokers.
	c *kafkatest.Cluster
	// shareBroker, when set, is the single broker of the share group:
	// restarted once should its share partitions stall after a restart
	// (settledAfterRestart).
	shareBroker *kafkatest.Broker
	p           *harness.Pipeline
	addrs       map[string]string // relay instance → metrics address
	relays      map[string]*harness.Proc
	n           int
	wantDLQ     int // dead letters the transforms make of n orders
	seeded      chan error
	verified    audit.Report // relay verify's, once finished
}

// startClusterRun creates the pipeline at the cluster's replication
// factor, seeds an eighth of n orders, starts relays a and b, and streams
// the rest in over about 20 s; it returns once the relays have written
// some.
func startClusterRun(t *testing.T, n int) *clusterRun {
	t.Helper()
	c := kafkatest.LocalCluster(t)
	p := newPipe(t, c.Seeds(), harness.PipelineOptions{
		Replicas: -1, RenewLocks: true, MetricsListen: "${SHARERELAY_TEST_METRICS:-}",
	})
	r := startStreamRun(t, p, n, 20*time.Second)
	r.c = c
	return r
}

// startStreamRun seeds an eighth of n orders into p's source, starts
// relays a and b with a metrics endpoint each (p's file must listen on
// ${SHARERELAY_TEST_METRICS:-}), and streams the rest in over about over;
// it returns once the relays have written some.
func startStreamRun(t *testing.T, p *harness.Pipeline, n int, over time.Duration) *clusterRun {
	t.Helper()
	r := &clusterRun{t: t, p: p, n: n, addrs: map[string]string{}, relays: map[string]*harness.Proc{}, seeded: make(chan error, 1)}
	seedOrders(t, r.p, 1, n/8)
	for _, inst := range []string{"a", "b"} {
		r.addrs[inst] = metricsAddr(t)
		r.relays[inst] = startRelay(t, r.p, inst, "SHARERELAY_TEST_METRICS="+r.addrs[inst])
	}
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		defer cancel()
		const chunks = 40
		from := n/8 + 1
		for i := 1; i <= chunks; i++ {
			to := n/8 + (n-n/8)*i/chunks
			if err := (harness.Orders{Topic: r.p.Source}).Seed(ctx, r.p.SourceSeeds, from, to); err != nil {
				r.seeded <- fmt.Errorf("seeding orders %d..%d: %w", from, to, err)
				return
			}
			from = to + 1
			time.Sleep(over / chunks)
		}
		r.seeded <- nil
	}()
	r.waitProduced(int64(n/16), time.Minute)
	return r
}

// sum returns the sum over the relays of metric name's samples whose
// labels contain label.
func (r *clusterRun) sum(name, label string) float64 {
	total := 0.0
	for _, a := range r.addrs {
		total += metricWhere(r.t, a, name, label)
	}
	return total
}

// waitProduced waits until the relays have written at least k records,
// and fails at once when every relay has exited.
func (r *clusterRun) waitProduced(k int64, d time.Duration) {
	r.t.Helper()
	deadline := time.Now().Add(d)
	for r.sum("sharerelay_records_produced_total", "") < float64(k) {
		var exits []string
		for inst, pr := range r.relays {
			if pr.Exited() {
				exits = append(exits, fmt.Sprintf("%s exit %d", inst, pr.ExitCode()))
			}
		}
		if len(exits) == len(r.relays) {
			r.t.Fatalf("every relay exited (%s) before writing %d records", strings.Join(exits, ", "), k)
		}
		if time.Now().After(deadline) {
			r.t.Fatalf("the relays wrote %.0f records within %s, want %d", r.sum("sharerelay_records_produced_total", ""), d, k)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// counters is what the relays met, for the test's log line and checks.
type counters struct {
	disruptions, redeliveries, ackErrors, aborted, unknown, writeFailures, renewed float64
	// sourceDisruptions: the share consumers' failures on the wire
	// (sharerelay_source_disruptions_total).
	sourceDisruptions float64
	// hanging and lostMarkers: a transaction marker the cluster lost
	// (sharerelay_hanging_transactions_total, _lost_markers_total).
	hanging, lostMarkers float64
}

func (r *clusterRun) counters() counters {
	return counters{
		disruptions:       r.sum("sharerelay_broker_disruptions_total", ""),
		sourceDisruptions: r.sum("sharerelay_source_disruptions_total", ""),
		redeliveries:      r.sum("sharerelay_redeliveries_total", ""),
		ackErrors:         r.sum("sharerelay_ack_errors_total", ""),
		aborted:           r.sum("sharerelay_transactions_total", `outcome="aborted"`),
		unknown:           r.sum("sharerelay_transactions_total", `outcome="unknown"`),
		writeFailures:     r.sum("sharerelay_write_failures_total", ""),
		renewed:           r.sum("sharerelay_acks_total", `type="renew"`),
		hanging:           r.sum("sharerelay_hanging_transactions_total", ""),
		lostMarkers:       r.sum("sharerelay_lost_markers_total", ""),
	}
}

func (c counters) String() string {
	return fmt.Sprintf("broker disruptions %.0f (source %.0f), redeliveries %.0f, ack errors %.0f, transactions aborted %.0f and unknown %.0f, write failures %.0f, locks renewed %.0f, hanging transactions %.0f, lost markers %.0f",
		c.disruptions, c.sourceDisruptions, c.redeliveries, c.ackErrors, c.aborted, c.unknown, c.writeFailures, c.renewed, c.hanging, c.lostMarkers)
}

// met reports whether the relays met a fault: any disruption, redelivery,
// failed acknowledgement or transaction.
func (c counters) met() bool {
	return c.disruptions+c.sourceDisruptions+c.redeliveries+c.ackErrors+c.aborted+c.unknown+c.writeFailures > 0
}

// finish waits for the stream and the relays to settle, checks exactly
// once and relay verify, and returns what the relays met.
func (r *clusterRun) finish() counters {
	r.t.Helper()
	if err := <-r.seeded; err != nil {
		r.t.Fatal(err)
	}
	// Healing first: a node still syncing would count as a fault the
	// relays did not meet in the test's own time.
	if r.c != nil {
		if err := r.c.Heal(context.Background()); err != nil {
			r.t.Fatal(err)
		}
	}
	exactlyOnce(r.t, settledAfterRestart(r.t, r.p, r.shareBroker, r.n, 4*time.Minute), r.n, r.wantDLQ)
	code, rep := relayVerify(r.t, r.p)
	if code != 0 {
		r.t.Fatalf("relay verify exit %d: %+v", code, rep)
	}
	r.verified = rep
	return r.counters()
}

// ctx is a context for one fault's lookups and node operations.
func (r *clusterRun) ctx() context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	r.t.Cleanup(cancel)
	return ctx
}

// killAndRestart kills node id with SIGKILL, waits for what moved to have
// moved (moved returns the node that holds it now), lets the relays work
// without the node for a few seconds, and starts it again. It returns
// where the thing moved to.
func (r *clusterRun) killAndRestart(id int32, what string, moved func() (int32, error)) int32 {
	r.t.Helper()
	ctx := r.ctx()
	if err := r.c.Node(id).Kill(); err != nil {
		r.t.Fatal(err)
	}
	killed := time.Now()
	to, err := moved()
	took := time.Since(killed)
	if err != nil {
		r.t.Fatalf("after killing node %d: %v", id, err)
	}
	if to == id {
		r.t.Fatalf("%s is still on node %d after it was killed", what, id)
	}
	time.Sleep(8 * time.Second)
	if err := r.c.Node(id).Start(ctx); err != nil {
		r.t.Fatalf("restarting node %d: %v", id, err)
	}
	r.t.Logf("killed -9 node %d, %s; it moved to node %d within %s; node %d restarted", id, what, to, took.Round(100*time.Millisecond), id)
	return to
}

// leaderTest kills the leader of topic's partition 0 mid-stream.
func leaderTest(t *testing.T, topicOf func(*harness.Pipeline) string, role string) {
	r := startClusterRun(t, clusterRecords)
	topic := topicOf(r.p)
	ctx := r.ctx()
	id, err := r.c.Leader(ctx, topic, 0)
	if err != nil {
		t.Fatal(err)
	}
	before := r.counters()
	r.killAndRestart(id, fmt.Sprintf("the leader of the %s partition %s[0]", role, topic), func() (int32, error) {
		return waitMoved(ctx, id, func() (int32, error) { return r.c.Leader(ctx, topic, 0) })
	})
	after := r.finish()
	t.Logf("relays met: %v (before the kill: %v)", after, before)
	if !subtract(after, before).met() {
		t.Fatalf("the relays met nothing of the kill: %v", after)
	}
}

// waitMoved asks where until it names a node other than from.
func waitMoved(ctx context.Context, from int32, where func() (int32, error)) (int32, error) {
	for {
		id, err := where()
		if err == nil && id != from {
			return id, nil
		}
		select {
		case <-ctx.Done():
			return id, fmt.Errorf("still on node %d: %w (last error %v)", id, ctx.Err(), err)
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// subtract is a − b, counter by counter.
func subtract(a, b counters) counters {
	return counters{
		disruptions: a.disruptions - b.disruptions, redeliveries: a.redeliveries - b.redeliveries, ackErrors: a.ackErrors - b.ackErrors,
		aborted: a.aborted - b.aborted, unknown: a.unknown - b.unknown, writeFailures: a.writeFailures - b.writeFailures, renewed: a.renewed - b.renewed,
		sourceDisruptions: a.sourceDisruptions - b.sourceDisruptions, hanging: a.hanging - b.hanging, lostMarkers: a.lostMarkers - b.lostMarkers,
	}
}

func TestRealClusterLedgerLeaderKilled(t *testing.T) {
	clusterTestsAll(t)
	leaderTest(t, func(p *harness.Pipeline) string { return p.Ledger }, "ledger")
}

func TestRealClusterOutputLeaderKilled(t *testing.T) {
	clusterTestsAll(t)
	leaderTest(t, func(p *harness.Pipeline) string { return p.Output }, "output")
}

// The source partition's leader holds its share-partition state
// (acquired records, delivery counts, locks); a new leader loads it from
// the share coordinator and sees every delivery the old one counted.
func TestRealClusterSourceLeaderKilled(t *testing.T) {
	clusterTestsAll(t)
	leaderTest(t, func(p *harness.Pipeline) string { return p.Source }, "source")
}

// The node that coordinates worker 0 of relay a's transactional id is
// killed while the relays commit small transactions back to back (a
// transaction of at most 50 records, many EndTxn a second between them),
// so an EndTxn is often in flight when it dies: franz-go sends it again
// to the new coordinator, or the transaction is aborted and its records
// written again.
func TestRealClusterCITransactionCoordinatorKilledDuringCommits(t *testing.T) {
	r := startClusterRun(t, clusterRecords)
	ctx := r.ctx()
	txnID := fmt.Sprintf("sharerelay-%s-a-0", r.p.Name)
	id, err := r.c.Coordinator(ctx, kafkatest.TxnCoordinator, txnID)
	if err != nil {
		t.Fatal(err)
	}
	before := r.counters()
	r.killAndRestart(id, "the transaction coordinator of "+txnID, func() (int32, error) {
		return waitMoved(ctx, id, func() (int32, error) { return r.c.Coordinator(ctx, kafkatest.TxnCoordinator, txnID) })
	})
	after := r.finish()
	met := subtract(after, before)
	t.Logf("relays met: %v", met)
	// The producers met the dead coordinator: a request on the wire to
	// it failed, or a dial. Whether a commit was in flight at that
	// instant is the timing's (franz-go sends a failed EndTxn again to
	// the new coordinator, so it often ends committed); the log line
	// says what the commits met.
	if met.disruptions == 0 {
		t.Fatalf("the producers met nothing of the kill of their coordinator: %v", met)
	}
}

// The share coordinator keeps the share group's persisted state of source
// partition 0 (start offset, delivery counts); the node that holds it is
// killed and its state moves with __share_group_state's leadership.
func TestRealClusterShareCoordinatorKilled(t *testing.T) {
	clusterTestsAll(t)
	r := startClusterRun(t, clusterRecords)
	ctx := r.ctx()
	tid, err := r.c.TopicID(ctx, r.p.Source)
	if err != nil {
		t.Fatal(err)
	}
	key := kafkatest.ShareCoordinatorKey(r.p.Group, tid, 0)
	id, err := r.c.Coordinator(ctx, kafkatest.ShareCoordinator, key)
	if err != nil {
		t.Fatal(err)
	}
	before := r.counters()
	r.killAndRestart(id, "the share coordinator of "+key, func() (int32, error) {
		return waitMoved(ctx, id, func() (int32, error) { return r.c.Coordinator(ctx, kafkatest.ShareCoordinator, key) })
	})
	after := r.finish()
	t.Logf("relays met: %v", subtract(after, before))
	if !subtract(after, before).met() {
		t.Fatalf("the relays met nothing of the kill: %v", after)
	}
}

// The active controller's node is killed: the two others elect a new
// one while its partitions' leaderships move.
func TestRealClusterActiveControllerKilled(t *testing.T) {
	clusterTestsAll(t)
	r := startClusterRun(t, clusterRecords)
	ctx := r.ctx()
	id, err := r.c.ActiveController(ctx)
	if err != nil {
		t.Fatal(err)
	}
	before := r.counters()
	r.killAndRestart(id, "the active controller", func() (int32, error) {
		return waitMoved(ctx, id, func() (int32, error) { return r.c.ActiveController(ctx) })
	})
	after := r.finish()
	t.Logf("relays met: %v", subtract(after, before))
	if !subtract(after, before).met() {
		t.Fatalf("the relays met nothing of the kill: %v", after)
	}
}

// An operator's rolling restart under load: each node in turn is stopped
// with SIGTERM (a controlled shutdown: it hands its leaderships over
// first), started again, and waited for until every partition is back in
// sync before the next.
func TestRealClusterRollingRestart(t *testing.T) {
	clusterTestsAll(t)
	r := startClusterRun(t, clusterRecords)
	ctx := r.ctx()
	before := r.counters()
	moves := 0
	for _, b := range r.c.Nodes() {
		leaders := r.outputLeaders(ctx)
		if err := b.Restart(ctx); err != nil {
			t.Fatal(err)
		}
		if err := r.c.WaitInSync(ctx, 2*time.Minute); err != nil {
			t.Fatal(err)
		}
		now := r.outputLeaders(ctx)
		for p := range leaders {
			if leaders[p] != now[p] {
				moves++
			}
		}
	}
	after := r.finish()
	met := subtract(after, before)
	t.Logf("rolling restart of %d nodes: %d output leaderships moved; relays met: %v", len(r.c.Nodes()), moves, met)
	if moves == 0 {
		t.Fatal("no output partition changed leader over the rolling restart")
	}
	if !met.met() {
		t.Fatalf("the relays met nothing of the restarts: %v", met)
	}
}

// outputLeaders returns the leader of each output partition.
func (r *clusterRun) outputLeaders(ctx context.Context) []int32 {
	r.t.Helper()
	out := make([]int32, harness.OutputPartitions)
	for p := range out {
		id, err := r.c.Leader(ctx, r.p.Output, int32(p))
		if err != nil {
			r.t.Fatal(err)
		}
		out[p] = id
	}
	return out
}

// A follower of the output topic is paused (SIGSTOP): the in-sync
// replicas shrink to min.insync.replicas and writes go on. Then the
// output topic asks for more in-sync replicas than it has (its
// min.insync.replicas raised to 3 with a replica out): acks=all writes get
// NOT_ENOUGH_REPLICAS, as with two nodes of three down. (Taking two of
// three combined nodes down would take the controller quorum with them,
// and with it the ISR changes that lead to NOT_ENOUGH_REPLICAS; the
// leader then cannot shrink its ISR and writes time out instead.) The
// relay must pause with a reason, renew the locks of the records it
// holds for longer than their lock duration, lose nothing, and resume by
// itself when the follower is back.
func TestRealClusterCIBelowMinInSyncReplicasPausesAndResumes(t *testing.T) {
	r := startClusterRun(t, clusterRecords)
	ctx := r.ctx()
	leader, err := r.c.Leader(ctx, r.p.Output, 0)
	if err != nil {
		t.Fatal(err)
	}
	follower := leader%3 + 1
	if err := r.c.Node(follower).Pause(); err != nil {
		t.Fatal(err)
	}
	// The ISR shrinks after replica.lag.time.max.ms (6 s here).
	waitISR(t, r.c.Node(leader), r.p.Output, 0, 2)
	atMin := r.sum("sharerelay_records_produced_total", "")
	r.waitProduced(int64(atMin)+200, time.Minute)
	t.Logf("node %d paused: %s[0] has 2 in-sync replicas (min.insync.replicas 2), and the relays wrote on", follower, r.p.Output)

	before := r.counters()
	alterTopicOn(t, r.c.Node(leader), r.p.Output, "min.insync.replicas", "3")
	paused := r.waitNotReady(time.Minute)
	t.Logf("output min.insync.replicas 3 with 2 in sync: relay not ready: %s", paused)
	held := r.sum("sharerelay_records_produced_total", "")
	time.Sleep(20 * time.Second) // longer than the 15 s lock duration
	during := subtract(r.counters(), before)
	if during.renewed == 0 {
		t.Fatalf("no lock renewed while the relays were paused for 20 s: %v", during)
	}
	if got := r.sum("sharerelay_released_on_last_delivery_total", ""); got != 0 {
		t.Fatalf("%.0f records released on their last delivery while paused", got)
	}
	t.Logf("paused 20 s: %v; output records written meanwhile %.0f (other partitions of the output)", during, r.sum("sharerelay_records_produced_total", "")-held)

	if err := r.c.Node(follower).Resume(); err != nil {
		t.Fatal(err)
	}
	waitISR(t, r.c.Node(leader), r.p.Output, 0, 3)
	r.waitReady(2 * time.Minute)
	alterTopic(t, r.p.Seeds, r.p.Output, "min.insync.replicas", "2")
	after := r.finish()
	t.Logf("relays met: %v", subtract(after, before))
	if subtract(after, before).writeFailures == 0 {
		t.Fatal("no write failed while the output had fewer in-sync replicas than it asks for")
	}
}

// alterTopicOn sets topic's config key through node alone, retrying for
// up to a minute: a client that knows the whole cluster may send the
// request to a paused node, which holds it, and a paused active
// controller leaves the quorum electing another for a few seconds.
func alterTopicOn(t *testing.T, node *kafkatest.Broker, topic, key, value string) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(node.Addr()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	req := kmsg.NewPtrIncrementalAlterConfigsRequest()
	res := kmsg.NewIncrementalAlterConfigsRequestResource()
	res.ResourceType, res.ResourceName = kmsg.ConfigResourceTypeTopic, topic
	c := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
	c.Name, c.Op, c.Value = key, kmsg.IncrementalAlterConfigOpSet, kmsg.StringPtr(value)
	res.Configs = append(res.Configs, c)
	req.Resources = append(req.Resources, res)
	deadline := time.Now().Add(time.Minute)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		resp, err := cl.SeedBrokers()[0].Request(ctx, req) // that node, and no other
		cancel()
		if err == nil {
			for _, r := range resp.(*kmsg.IncrementalAlterConfigsResponse).Resources {
				err = kerr.ErrorForCode(r.ErrorCode)
			}
		}
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("setting %s=%s on %s through %s: %v", key, value, topic, node.Addr(), err)
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// waitISR waits until topic's partition has want in-sync replicas, asking
// node alone (a paused node would hold a request sent to it).
func waitISR(t *testing.T, node *kafkatest.Broker, topic string, partition int32, want int) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(node.Addr()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	req := kmsg.NewPtrMetadataRequest()
	rt := kmsg.NewMetadataRequestTopic()
	rt.Topic = kmsg.StringPtr(topic)
	req.Topics = append(req.Topics, rt)
	deadline := time.Now().Add(time.Minute)
	isr := -1
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		resp, err := cl.SeedBrokers()[0].Request(ctx, req)
		cancel()
		if err == nil {
			for _, mt := range resp.(*kmsg.MetadataResponse).Topics {
				for _, p := range mt.Partitions {
					if p.Partition == partition {
						isr = len(p.ISR)
					}
				}
			}
			if isr == want {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s[%d] did not reach %d in-sync replicas within a minute (last %d, %v)", topic, partition, want, isr, err)
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// waitNotReady waits until a relay's /readyz answers 503 and returns its
// answer.
func (r *clusterRun) waitNotReady(d time.Duration) string {
	r.t.Helper()
	deadline := time.Now().Add(d)
	for {
		for inst, a := range r.addrs {
			if code, body := get(a, "/readyz"); code == 503 {
				return inst + ": " + strings.TrimSpace(body)
			}
		}
		if time.Now().After(deadline) {
			r.t.Fatalf("no relay reported not ready within %s", d)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// waitReady waits until every relay's /readyz answers 200.
func (r *clusterRun) waitReady(d time.Duration) {
	r.t.Helper()
	for _, a := range r.addrs {
		waitHTTP(r.t, a, "/readyz", 200, "", d)
	}
}

// The ledger's partition is moved while the relays run: first off its
// leader's node (to the two others, so leadership moves), then back onto
// all three with another node preferred.
func TestRealClusterLedgerReassigned(t *testing.T) {
	clusterTestsAll(t)
	r := startClusterRun(t, clusterRecords)
	ctx := r.ctx()
	leader, err := r.c.Leader(ctx, r.p.Ledger, 0)
	if err != nil {
		t.Fatal(err)
	}
	others := []int32{leader%3 + 1, (leader+1)%3 + 1}
	r.reassign(ctx, r.p.Ledger, others)
	moved, err := r.c.Leader(ctx, r.p.Ledger, 0)
	if err != nil {
		t.Fatal(err)
	}
	if moved == leader {
		t.Fatalf("the ledger's leader is still node %d after its partition moved to nodes %v", leader, others)
	}
	mid := r.sum("sharerelay_records_produced_total", "")
	r.waitProduced(int64(mid)+200, time.Minute)
	r.reassign(ctx, r.p.Ledger, []int32{others[1], leader, others[0]})
	after := r.finish()
	t.Logf("ledger %s[0] moved from leader %d to replicas %v (leader %d), then to %v; relays met: %v", r.p.Ledger, leader, others, moved, []int32{others[1], leader, others[0]}, after)
}

// reassign moves topic's partition 0 onto replicas and waits until the
// move is complete.
func (r *clusterRun) reassign(ctx context.Context, topic string, replicas []int32) {
	r.t.Helper()
	adm, _ := kafkatest.Admin(r.t, r.c.Seeds())
	var req kadm.AlterPartitionAssignmentsReq
	req.Assign(topic, 0, replicas)
	resp, err := adm.AlterPartitionAssignments(ctx, req)
	if err == nil {
		err = resp.Error()
	}
	if err != nil {
		r.t.Fatalf("reassigning %s[0] to %v: %v", topic, replicas, err)
	}
	deadline := time.Now().Add(time.Minute)
	for {
		listed, err := adm.ListPartitionReassignments(ctx, kadm.TopicsSet{topic: {0: {}}})
		if err == nil && len(listed) == 0 {
			break
		}
		if time.Now().After(deadline) {
			r.t.Fatalf("reassignment of %s[0] to %v not done within a minute (%v)", topic, replicas, err)
		}
		time.Sleep(250 * time.Millisecond)
	}
	waitISR(r.t, r.c.Node(replicas[0]), topic, 0, len(replicas))
}
