package integration

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sharerelay/sharerelay/audit"
	"github.com/sharerelay/sharerelay/config"
	"github.com/sharerelay/sharerelay/eos"
	"github.com/sharerelay/sharerelay/integration/harness"
	"github.com/sharerelay/sharerelay/integration/kafkatest"
	"github.com/sharerelay/sharerelay/internal/failpoint"
	"github.com/sharerelay/sharerelay/lineage"
)

// twoNodes is a cluster of a combined broker-and-controller node (id 1)
// and a broker-only node (id 2): node 2 can be stopped, leaving its
// partitions without a leader, while node 1 keeps the transaction
// coordinator, the group coordinators and everything else running.
type twoNodes struct {
	n1, n2 *kafkatest.Broker
	seeds  []string
}

func startTwoNodes(t *testing.T) *twoNodes {
	t.Helper()
	if testing.Short() || len(os.Getenv(kafkatest.EnvBootstrap)) > 0 {
		if os.Getenv(kafkatest.EnvRequireBroker) == "1" && testing.Short() {
			t.Fatal("real-broker test under -short with SHARERELAY_REQUIRE_BROKER=1")
		}
		t.Skip("needs two local brokers it can stop (not -short, no external cluster)")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	n1, err := kafkatest.StartLocal(ctx, kafkatest.Options{})
	if err != nil {
		t.Fatalf("starting node 1: %v", err)
	}
	t.Cleanup(func() { n1.Stop(); os.RemoveAll(n1.Dir()) })
	c := &twoNodes{n1: n1, seeds: []string{n1.Addr()}}
	// The internal topics (transaction state, group offsets, share group
	// state) must live on node 1: create them before node 2 exists.
	warm := "warmup"
	createTopics(t, c.seeds, harness.Topic{Name: warm, Partitions: 1, Broker: 1})
	tx, err := kgo.NewClient(kgo.SeedBrokers(c.seeds...), kgo.TransactionalID("warmup"))
	if err != nil {
		t.Fatal(err)
	}
	if err := tx.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	if err := tx.ProduceSync(ctx, &kgo.Record{Topic: warm, Value: []byte("x")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	if err := tx.EndTransaction(ctx, kgo.TryCommit); err != nil {
		t.Fatal(err)
	}
	tx.Close()
	sc, err := kgo.NewClient(kgo.SeedBrokers(c.seeds...), kgo.ShareGroup("warmup"), kgo.ConsumeTopics(warm))
	if err != nil {
		t.Fatal(err)
	}
	internal := []string{"__transaction_state", "__consumer_offsets", "__share_group_state"}
	for deadline := time.Now().Add(60 * time.Second); ; {
		pctx, pcancel := context.WithTimeout(ctx, time.Second)
		sc.PollRecords(pctx, 10)
		pcancel()
		td, err := kadm.NewClient(sc).ListTopics(ctx, internal...)
		if err == nil && len(td.Names()) == len(internal) && td.Error() == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("internal topics %v not all created on node 1 (%v, %v)", internal, td.Names(), err)
		}
	}
	sc.Close()

	n2, err := kafkatest.StartLocal(ctx, kafkatest.Options{NodeID: 2, JoinController: n1.ControllerAddr()})
	if err != nil {
		t.Fatalf("starting node 2: %v", err)
	}
	t.Cleanup(func() { n2.Stop(); os.RemoveAll(n2.Dir()) })
	c.n2 = n2
	c.seeds = append(c.seeds, n2.Addr())
	return c
}

// waitLeader waits until topic's partition 0 is led by leader (-1: none).
func (c *twoNodes) waitLeader(t *testing.T, topic string, leader int32) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.n1.Addr()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	deadline := time.Now().Add(60 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		td, err := adm.ListTopics(ctx, topic)
		cancel()
		if err == nil {
			if p, ok := td[topic].Partitions[0]; ok && p.Leader == leader {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s[0] not led by %d within 60s (%v)", topic, leader, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// createLedger creates pipeline p's claim ledger and its snapshot topic,
// one partition each, the ledger on node broker and its snapshots on node
// 1 (a test decides which node's failure the ledger sees).
func createLedger(t *testing.T, seeds []string, p *harness.Pipeline, broker int32) {
	t.Helper()
	createTopics(t, seeds,
		harness.Topic{Name: p.Ledger, Partitions: 1, Broker: broker, Configs: map[string]string{"cleanup.policy": "delete"}},
		harness.Topic{Name: p.Ledger + ".snapshots", Partitions: 1, Broker: 1, Configs: map[string]string{"cleanup.policy": "compact"}})
}

// abortWithOutputMarkersLost writes, as each of txnIDs, a transaction of
// source offsets 0..99 and their outputs (ghost.write), and aborts them
// while p's output node (2) is stopped: the coordinator skips the
// leaderless output partitions, so each producer id keeps its span open
// there. It returns the ghosts' producer ids and the open spans (to
// complete as aborts), and fails when the broker delivered the markers
// after all.
func (c *twoNodes) abortWithOutputMarkersLost(t *testing.T, p *harness.Pipeline, txnIDs ...string) ([]int64, []harness.HangingTxn) {
	t.Helper()
	var ghosts []*ghost
	var pids []int64
	for _, id := range txnIDs {
		g := newGhostAs(t, p, p.Ledger, id)
		pid, _ := g.write(0, 99)
		ghosts, pids = append(ghosts, g), append(pids, pid)
	}
	if err := c.n2.Stop(); err != nil {
		t.Fatal(err)
	}
	c.waitLeader(t, p.Output, -1)
	for _, g := range ghosts {
		g.end(false) // the coordinator skips the leaderless output partitions
		g.cl.Close()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	if err := c.n2.Start(ctx); err != nil {
		t.Fatal(err)
	}
	c.waitLeader(t, p.Output, 2)
	hanging := openTxnsOf(t, c.seeds, p.Output, pids)
	if len(hanging) == 0 {
		t.Fatalf("no transaction of %v is open on the output: the broker delivered the markers this time", txnIDs)
	}
	t.Logf("left open on %s: %d partition spans", p.Output, len(hanging))
	return pids, hanging
}

// ghost is a transactional producer that writes what a relay worker
// writes — claims in the ledger and labelled outputs — with no relay
// around it.
type ghost struct {
	t       *testing.T
	cl      *kgo.Client
	p       *harness.Pipeline
	ledger  string
	txnID   string
	topicID [16]byte
	// stamp, when set, is the time the ghost's outputs carry instead of
	// the producer's clock (as a relay's carry their sources' times),
	// named in its claims' Since unless noSince.
	stamp   time.Time
	noSince bool
}

func newGhost(t *testing.T, p *harness.Pipeline, ledger string) *ghost {
	return newGhostAs(t, p, ledger, "sharerelay-"+p.Name+"-ghost-0")
}

// newGhostAs is a ghost with transactional id txnID (a relay worker's, to
// leave a transaction of the worker's own producer id behind).
func newGhostAs(t *testing.T, p *harness.Pipeline, ledger, txnID string) *ghost {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(p.Seeds...), kgo.TransactionalID(txnID),
		kgo.TransactionTimeout(60*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	adm, ctx := kafkatest.Admin(t, p.SourceSeeds) // the claim names the source topic's id
	td, err := adm.ListTopics(ctx, p.Source)
	if err != nil {
		t.Fatal(err)
	}
	return &ghost{t: t, cl: cl, p: p, ledger: ledger, txnID: txnID, topicID: td[p.Source].ID}
}

// write opens a transaction and writes a claim of source offsets
// first..last with their outputs; it returns the producer id and epoch.
func (g *ghost) write(first, last int64) (int64, int16) {
	g.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	pid, epoch, err := g.cl.ProducerID(ctx)
	if err != nil {
		g.t.Fatal(err)
	}
	if err := g.cl.BeginTransaction(); err != nil {
		g.t.Fatal(err)
	}
	var since int64
	if !g.stamp.IsZero() && !g.noSince {
		since = g.stamp.UnixMilli()
	}
	claim, err := eos.NewClaimRecord(g.ledger, &eos.Claim{
		Topic: g.p.Source, TopicID: g.topicID, Partition: 0, Ranges: []eos.Range{{First: first, Last: last}},
		TxnID: g.txnID, ProducerID: pid, Epoch: epoch,
		Outputs: []string{g.p.Output}, At: time.Now().UnixMilli(), Since: since,
	})
	if err != nil {
		g.t.Fatal(err)
	}
	recs := []*kgo.Record{claim}
	for o := first; o <= last; o++ {
		src := lineage.Source{Topic: g.p.Source, Partition: 0, Offset: o}
		recs = append(recs, &kgo.Record{Topic: g.p.Output, Key: strconv.AppendInt(nil, o+1, 10),
			Value: fmt.Appendf(nil, `{"order_id":%d}`, o+1), Headers: lineage.SetSource(nil, src), Timestamp: g.stamp})
	}
	if err := g.cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		g.t.Fatal(err)
	}
	return pid, epoch
}

func (g *ghost) end(commit bool) {
	g.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := g.cl.EndTransaction(ctx, kgo.TransactionEndTry(commit)); err != nil {
		g.t.Fatalf("ending the ghost's transaction (commit %v): %v", commit, err)
	}
}

// ledgerEntry is one record of the claim ledger as the test sees it.
type ledgerEntry struct {
	offset  int64
	pid     int64
	epoch   int16
	control bool
	commit  bool
	res     *eos.Resolution
}

// readLedger returns every record of ledger[0] up to its end.
func readLedger(t *testing.T, seeds []string, ledger string) []ledgerEntry {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{ledger: {0: kgo.NewOffset().AtStart()}}),
		kgo.FetchIsolationLevel(kgo.ReadUncommitted()), kgo.KeepControlRecords())
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ends, err := kadm.NewClient(cl).ListEndOffsets(ctx, ledger)
	if err != nil {
		t.Fatal(err)
	}
	end, _ := ends.Lookup(ledger, 0)
	var out []ledgerEntry
	for next := int64(0); next < end.Offset; {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("reading the ledger: %v", ctx.Err())
		}
		fs.EachRecord(func(r *kgo.Record) {
			next = r.Offset + 1
			e := ledgerEntry{offset: r.Offset, pid: r.ProducerID, epoch: r.ProducerEpoch, control: r.Attrs.IsControl()}
			if e.control && len(r.Key) >= 4 {
				e.commit = binary.BigEndian.Uint16(r.Key[2:4]) == 1
			}
			for _, h := range r.Headers {
				if h.Key == eos.HeaderKind && string(h.Value) == eos.KindResolution {
					e.res = new(eos.Resolution)
					if err := json.Unmarshal(r.Value, e.res); err != nil {
						t.Fatalf("resolution at %d: %v", r.Offset, err)
					}
				}
			}
			out = append(out, e)
		})
	}
	return out
}

// TestRealBrokerClaimWhoseLedgerMarkerWasLost reproduces, on a real broker,
// the soak's lost marker (issue 11): a transaction writes its claim to a
// ledger partition whose leader is gone when the coordinator sends the
// markers — Kafka then skips that partition as if it had been deleted —
// and the same producer's next transaction ends normally. The relay must
// neither take the next transaction's marker as the claim's (which loses
// the records when the claim aborted, and duplicates them when it
// committed), nor leave the records blocked: its resolver reads the
// transaction's outcome from its outputs.
func TestRealBrokerClaimWhoseLedgerMarkerWasLost(t *testing.T) {
	c := startTwoNodes(t)
	for _, tc := range []struct {
		name         string
		first, later bool          // outcomes of the ghost's two transactions
		stamped      time.Duration // the outputs carry times this far back (their sources')
		noSince      bool          // the claims do not say so (SHARERELAY_BREAK_SINCE=1: shows the loss of sight)
	}{
		{"an aborted claim is not credited with the next COMMIT", false, true, 0, false},
		{"a committed claim is not credited with the next ABORT", true, false, 0, false},
		{"a committed claim whose outputs carry their sources' older times is found by those times", true, false, 2 * time.Hour, os.Getenv("SHARERELAY_BREAK_SINCE") == "1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := newPipe(t, c.seeds, harness.PipelineOptions{Partitions: 1, Workers: 1, OnBroker: 1})
			ledger := p.Ledger
			createLedger(t, c.seeds, p, 2)
			seedOrders(t, p, 1, 200) // source offsets 0..199

			g := newGhost(t, p, ledger)
			if tc.stamped > 0 {
				g.stamp, g.noSince = time.Now().Add(-tc.stamped), tc.noSince
			}
			pid, epoch := g.write(0, 99)
			if err := c.n2.Stop(); err != nil {
				t.Fatal(err)
			}
			c.waitLeader(t, ledger, -1)
			g.end(tc.first) // the coordinator skips the leaderless ledger partition
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			if err := c.n2.Start(ctx); err != nil {
				t.Fatal(err)
			}
			c.waitLeader(t, ledger, 2)
			g.write(150, 199)
			g.end(tc.later)

			// The ledger must show exactly the soak's shape, or the
			// test proves nothing: the claim at epoch E, no marker of
			// E+1, the next claim at E+1 and its marker at E+2.
			var shape []string
			for _, e := range readLedger(t, c.seeds, ledger) {
				if e.pid == pid {
					shape = append(shape, fmt.Sprintf("%s@%d", map[bool]string{true: "marker", false: "claim"}[e.control], e.epoch-epoch))
				}
			}
			if want := "[claim@0 claim@1 marker@2]"; fmt.Sprint(shape) != want {
				t.Fatalf("the ledger shows %v for the ghost, want %s: the broker did not lose the marker this time", shape, want)
			}

			startRelay(t, p, "r1")
			o := settled(t, p, 200, 2*time.Minute)
			exactlyOnce(t, o, 200, 0)

			var settledBy *eos.Resolution
			for _, e := range readLedger(t, c.seeds, ledger) {
				if e.res != nil && e.res.ProducerID == pid && e.res.Epoch == epoch {
					settledBy = e.res
				}
			}
			if settledBy == nil {
				t.Fatal("no resolution of the orphaned claim in the ledger")
			}
			if settledBy.Commit != tc.first {
				t.Fatalf("the claim was settled commit=%v, its transaction's outcome was commit=%v", settledBy.Commit, tc.first)
			}
			t.Logf("settled: %+v", *settledBy)

			// relay verify's independent reading of the ledger agrees.
			ctx2, cancel2 := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel2()
			lr, err := audit.ReadLedger(ctx2, []kgo.Opt{kgo.SeedBrokers(c.seeds...)}, ledger, 0)
			if err != nil {
				t.Fatal(err)
			}
			settledN := map[bool]int{true: lr.SettledCommitted, false: lr.SettledAborted}
			if lr.Orphaned != 1 || settledN[tc.first] != 1 || settledN[!tc.first] != 0 || len(lr.Unsettled) != 0 {
				t.Fatalf("audit of the ledger: %+v; want 1 orphan settled commit=%v, none unsettled", *lr, tc.first)
			}
		})
	}
}

// TestRealBrokerOpenSpanOfTheRelaysOwnProducerIdIsNotContinued is the
// broker-kill chaos duplicate (issue 11) on a real broker: a transaction of
// a worker's own producer id aborts while its output partition has no
// leader, so that partition keeps the transaction open (the coordinator
// skips its marker). The worker restarts with the same transactional id.
// Kafka keeps unmarked records in the producer id's open span, so the
// worker's next transaction in that partition would end them with its own
// COMMIT: the aborted records become visible, duplicates. The first subtest
// skips the relay's checks (failpoints) and must see those duplicates —
// the fault is real; the second shows the worker holds its records,
// reports the hanging transaction, and goes on once it is completed,
// exactly once.
func TestRealBrokerOpenSpanOfTheRelaysOwnProducerIdIsNotContinued(t *testing.T) {
	c := startTwoNodes(t)
	for _, tc := range []struct {
		name  string
		check bool
	}{
		{"without the check the aborted records become visible", false},
		{"with the check the worker holds its records until the span is closed", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// Polls of 50 records (record_limit), so that the 200
			// records take several batches and both of the worker's
			// producers write: each continues its own open span.
			p := newPipe(t, c.seeds, harness.PipelineOptions{Partitions: 1, Workers: 1, OnBroker: 1, OutputOnBroker: 2,
				AcquireMode: config.AcquireRecordLimit})
			createLedger(t, c.seeds, p, 1)
			seedOrders(t, p, 1, 200) // source offsets 0..199

			// Worker 0 of instance r1, both of its producers.
			worker := "sharerelay-" + p.Name + "-r1-0"
			pids, hanging := c.abortWithOutputMarkersLost(t, p, worker, worker+".1")

			var env []string
			if !tc.check {
				// Both checks: the one at the end of a transaction
				// would abort the continuing transaction too.
				env = append(env, failpoint.EnvVar+"="+failpoint.SkipSpanCheck+"=error;"+failpoint.SkipEndSpanCheck+"=error")
			}
			r := startRelay(t, p, "r1", env...)
			if !tc.check {
				o := settled(t, p, 200, 2*time.Minute)
				if d := o.Jobs.Duplicates(); len(d) == 0 {
					t.Fatalf("no duplicate without the check (%v): the worker's transaction did not continue the open span", o)
				}
				t.Logf("without the check: %v", o)
				return
			}
			deadline := time.Now().Add(90 * time.Second)
			for !strings.Contains(r.LogTail(1<<20), "hanging transaction") {
				if time.Now().After(deadline) {
					t.Fatal("the relay did not report the hanging transaction within 90s")
				}
				time.Sleep(500 * time.Millisecond)
			}
			// Held, not continued: the spans are still open.
			time.Sleep(3 * time.Second)
			if still := openTxnsOf(t, c.seeds, p.Output, pids); len(still) != len(hanging) {
				t.Fatalf("open spans changed while the worker was holding: %v, then %v", hanging, still)
			}
			// The operator's repair: the coordinator's decision (abort),
			// at the epoch its markers carry.
			cctx, ccancel := context.WithTimeout(context.Background(), time.Minute)
			defer ccancel()
			acl, err := kgo.NewClient(kgo.SeedBrokers(c.seeds...))
			if err != nil {
				t.Fatal(err)
			}
			defer acl.Close()
			if err := harness.CompleteHanging(cctx, kadm.NewClient(acl), hanging); err != nil {
				t.Fatal(err)
			}
			o := settled(t, p, 200, 2*time.Minute)
			exactlyOnce(t, o, 200, 0)
		})
	}
}

// openTxnsOf lists the transactions of producer ids pids open on topic,
// as aborts to complete.
func openTxnsOf(t *testing.T, seeds []string, topic string, pids []int64) []harness.HangingTxn {
	t.Helper()
	adm, ctx := kafkatest.Admin(t, seeds)
	ts := kadm.TopicsSet{}
	ts.Add(topic)
	dp, err := adm.DescribeProducers(ctx, ts)
	if err != nil {
		t.Fatal(err)
	}
	var hs []harness.HangingTxn
	for _, part := range dp.SortedPartitions() {
		for _, pid := range pids {
			if st, ok := part.ActiveProducers[pid]; ok && st.CurrentTxnStartOffset >= 0 {
				hs = append(hs, harness.HangingTxn{Topic: topic, Partition: part.Partition, ProducerID: pid, Epoch: st.ProducerEpoch,
					CoordinatorEpoch: st.CoordinatorEpoch, Since: st.CurrentTxnStartOffset, Verdict: "ABORT", Why: "the test aborted it"})
			}
		}
	}
	return hs
}

// TestRealBrokerRetiredTransactionalIDsLeftOpenAreReported: transactional
// ids an instance used before and no longer does — worker 0's second
// producer once batch.background_commit is off, worker 1's once workers
// went from 2 to 1 — each left a transaction open on the output after a
// lost marker (its node stopped while the coordinator aborted it). No
// worker checks those ids any more, and read_committed readers of the
// partition wait at the open span: the relay's own records are written
// behind it but not visible. The first subtest skips the relay's look at
// retired ids (failpoint) and must see that silent stall; the second
// shows the relay reports each open span (log and
// sharerelay_retired_hanging_transactions) until an operator completes
// them, and then every record arrives exactly once.
func TestRealBrokerRetiredTransactionalIDsLeftOpenAreReported(t *testing.T) {
	c := startTwoNodes(t)
	for _, tc := range []struct {
		name  string
		check bool
	}{
		{"without the check the stall is silent", false},
		{"with the check the relay reports each open span until it is completed", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			addr := metricsAddr(t)
			p := newPipe(t, c.seeds, harness.PipelineOptions{Partitions: 1, Workers: 1, OnBroker: 1, OutputOnBroker: 2,
				ForegroundCommit: true, MetricsListen: addr})
			createLedger(t, c.seeds, p, 1)
			const n = 200
			seedOrders(t, p, 1, n)

			prefix := "sharerelay-" + p.Name + "-r1-"
			retired := []string{prefix + "0.1", prefix + "1"}
			_, hanging := c.abortWithOutputMarkersLost(t, p, retired...)

			var env []string
			if !tc.check {
				env = append(env, fp(failpoint.SkipRetiredCheck+"=error"))
			}
			r := startRelay(t, p, "r1", env...)
			// The relay writes and acknowledges every record, behind the
			// open spans.
			waitLag(t, p, 0, 2*time.Minute)
			const reported = "a transactional id this instance no longer uses left a transaction open"
			if !tc.check {
				time.Sleep(15 * time.Second) // three times what the check takes to report
				if strings.Contains(r.LogTail(1<<20), reported) {
					t.Fatal("reported with the check skipped")
				}
				if v := metric(t, addr, "sharerelay_retired_hanging_transactions"); v != 0 {
					t.Fatalf("sharerelay_retired_hanging_transactions = %v with the check skipped", v)
				}
				stable := lastStable(t, c.seeds, p.Output)
				for _, h := range hanging {
					if stable[h.Partition] > h.Since {
						t.Fatalf("read_committed readers of %s[%d] reach offset %d, past the span open at %d", p.Output, h.Partition, stable[h.Partition], h.Since)
					}
				}
			} else {
				deadline := time.Now().Add(time.Minute)
				for !strings.Contains(r.LogTail(1<<20), reported) ||
					metric(t, addr, "sharerelay_retired_hanging_transactions") != float64(len(hanging)) {
					if time.Now().After(deadline) {
						t.Fatalf("the relay did not report the %d open spans within a minute (gauge %v)", len(hanging),
							metric(t, addr, "sharerelay_retired_hanging_transactions"))
					}
					time.Sleep(500 * time.Millisecond)
				}
				for _, id := range retired {
					if !strings.Contains(r.LogTail(1<<20), id+" (") {
						t.Fatalf("the report does not name %s", id)
					}
				}
			}
			// The operator's repair: the coordinator's decision (abort).
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			acl, err := kgo.NewClient(kgo.SeedBrokers(c.seeds...))
			if err != nil {
				t.Fatal(err)
			}
			defer acl.Close()
			if err := harness.CompleteHanging(ctx, kadm.NewClient(acl), hanging); err != nil {
				t.Fatal(err)
			}
			exactlyOnce(t, settled(t, p, n, 2*time.Minute), n, 0)
			if tc.check {
				deadline := time.Now().Add(time.Minute)
				for metric(t, addr, "sharerelay_retired_hanging_transactions") != 0 ||
					!strings.Contains(r.LogTail(1<<20), "no longer uses are completed") {
					if time.Now().After(deadline) {
						t.Fatal("the relay still reports the completed spans after a minute")
					}
					time.Sleep(500 * time.Millisecond)
				}
			}
		})
	}
}

// lastStable returns the last stable offset of each partition of topic:
// how far read_committed readers may read.
func lastStable(t *testing.T, seeds []string, topic string) map[int32]int64 {
	t.Helper()
	adm, ctx := kafkatest.Admin(t, seeds)
	los, err := adm.ListCommittedOffsets(ctx, topic)
	if err == nil {
		err = los.Error() // a partition's error would read as offset -1
	}
	if err != nil {
		t.Fatalf("last stable offsets of %s: %v", topic, err)
	}
	out := map[int32]int64{}
	los.Each(func(o kadm.ListedOffset) { out[o.Partition] = o.Offset })
	return out
}
