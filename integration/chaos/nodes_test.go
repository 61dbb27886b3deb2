package chaos

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/sharerelay/sharerelay/integration/kafkatest"
)

// The node nemesis of the three-node cluster: it kills, stops and pauses
// one node at a time, often the one that plays a role for the relays, and
// waits until every partition is back in sync before the next fault, so
// that no partition ever loses two replicas — except in the min-ISR
// window, which takes a second node away on purpose.

// Node fault kinds, as counted in the report.
const (
	nodeKill  = "kill9"   // SIGKILL, restarted after 0–5 s
	nodeTerm  = "sigterm" // clean shutdown (leaders move first), restarted after 0–5 s
	nodePause = "sigstop" // frozen 2–10 s: past the 4 s session (fenced) and, often, the 6 s replica lag
	// nodeMinISR: a node killed, and while it is down a second one
	// frozen for 2–6 s: a majority of the quorum is gone and
	// acks=all writes to partitions with both as replicas wait below
	// min.insync.replicas until the second one resumes. Nothing that
	// was committed may be lost; unclean leader election is off.
	nodeMinISR = "min-isr"
)

// Node roles a victim is chosen by.
const (
	roleAny          = "any"
	roleOutputLeader = "output-leader"
	roleLedgerLeader = "ledger-leader"
	roleTxnCo        = "txn-coordinator"
	roleShareCo      = "share-coordinator"
	roleGroupCo      = "group-coordinator"
	roleController   = "controller"
)

var nodeRoles = []string{roleOutputLeader, roleLedgerLeader, roleTxnCo, roleShareCo, roleGroupCo, roleController}

// clusterNodes is CHAOS_NODES: 3 runs TestChaosNemesis on the local
// three-node cluster, 1 (or unset) on the single node.
func clusterNodes(t *testing.T) int {
	switch v := os.Getenv("CHAOS_NODES"); v {
	case "", "1":
		return 1
	case strconv.Itoa(kafkatest.ClusterSize):
		return kafkatest.ClusterSize
	default:
		t.Fatalf("CHAOS_NODES=%q: want 1 or %d", v, kafkatest.ClusterSize)
		return 0
	}
}

// victim picks a node for a fault: any node half the time, else the node
// that plays a random role for the pipeline (what, for the log). A lookup
// that fails falls back to any node.
func (s *scenario) victim(ctx context.Context) (id int32, role, what string) {
	c := s.env.cluster
	role = roleAny
	if s.intn(2) == 0 {
		role = nodeRoles[s.intn(len(nodeRoles))]
	}
	var err error
	switch role {
	case roleOutputLeader:
		p := int32(s.intn(3))
		what = fmt.Sprintf("leader of %s[%d]", s.p.Output, p)
		id, err = c.Leader(ctx, s.p.Output, p)
	case roleLedgerLeader:
		what = fmt.Sprintf("leader of %s[0]", s.p.Ledger)
		id, err = c.Leader(ctx, s.p.Ledger, 0)
	case roleTxnCo:
		// A worker's first lane: sharerelay-<pipeline>-<instance>-<worker>.
		txnID := fmt.Sprintf("sharerelay-%s-r%d-%d", s.p.Name, s.intn(len(s.relays)), s.intn(s.o.Workers))
		what = "transaction coordinator of " + txnID
		id, err = c.Coordinator(ctx, kafkatest.TxnCoordinator, txnID)
	case roleShareCo:
		p := int32(s.intn(int(s.o.Partitions)))
		what = fmt.Sprintf("share coordinator of %s[%d]", s.p.Source, p)
		var tid [16]byte
		if tid, err = c.TopicID(ctx, s.p.Source); err == nil {
			id, err = c.Coordinator(ctx, kafkatest.ShareCoordinator, kafkatest.ShareCoordinatorKey(s.p.Group, tid, p))
		}
	case roleGroupCo:
		what = "group coordinator of " + s.p.Group
		id, err = c.Coordinator(ctx, kafkatest.GroupCoordinator, s.p.Group)
	case roleController:
		what = "active controller"
		id, err = c.ActiveController(ctx)
	}
	if role == roleAny || err != nil || c.Node(id) == nil {
		if role != roleAny {
			s.t.Logf("node nemesis: finding the %s: %v (node %d); any node instead", what, err, id)
		}
		return int32(1 + s.intn(len(c.Nodes()))), roleAny, "any node"
	}
	return id, role, what
}

// nodeNemesis runs node faults one after another, 3–10 s apart, until
// end. Each fault ends with the cluster back in sync.
func (s *scenario) nodeNemesis(end time.Time) {
	for time.Now().Before(end) && !s.stopping.Load() {
		s.sleep(s.between(3*time.Second, 10*time.Second))
		if time.Until(end) < 20*time.Second || s.stopping.Load() {
			return
		}
		if err := s.nodeFault(); err != nil {
			s.t.Errorf("node nemesis: %v", err)
			return
		}
	}
}

// nodeFault takes one node down (or two, in the min-ISR window), brings it
// back and waits until every partition is in sync again.
func (s *scenario) nodeFault() error {
	s.nodeMu.Lock()
	defer s.nodeMu.Unlock()
	c := s.env.cluster
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	defer cancel()
	id, role, what := s.victim(ctx)
	b := c.Node(id)
	var kind string
	switch k := s.intn(20); {
	case k < 7:
		kind = nodeKill
	case k < 12:
		kind = nodeTerm
	case k < 18:
		kind = nodePause
	default:
		kind = nodeMinISR
	}
	s.count(func(r *result) { r.NodeFaults[kind]++; r.NodeRoles[role]++ })
	began := time.Now()
	var detail string
	switch kind {
	case nodeKill, nodeTerm:
		stop := b.Kill
		if kind == nodeTerm {
			stop = b.Stop
		}
		if err := stop(); err != nil {
			return fmt.Errorf("%s node %d: %w", kind, id, err)
		}
		down := s.between(0, 5*time.Second)
		time.Sleep(down)
		if err := b.Start(ctx); err != nil {
			return fmt.Errorf("restarting node %d after %s: %w", id, kind, err)
		}
		detail = fmt.Sprintf("down %s, back after %s", down.Round(time.Millisecond), time.Since(began).Round(time.Millisecond))
	case nodePause:
		d := s.between(2*time.Second, 10*time.Second)
		if err := b.Pause(); err != nil {
			return err
		}
		time.Sleep(d)
		if err := b.Resume(); err != nil {
			return err
		}
		detail = fmt.Sprintf("frozen %s", d.Round(time.Millisecond))
	case nodeMinISR:
		if err := b.Kill(); err != nil {
			return fmt.Errorf("%s node %d: %w", kind, id, err)
		}
		time.Sleep(s.between(time.Second, 3*time.Second))
		second := int32(1 + s.intn(len(c.Nodes())-1))
		if second >= id {
			second++ // any node but the one down
		}
		d := s.between(2*time.Second, 6*time.Second)
		if err := c.Node(second).Pause(); err != nil {
			return err
		}
		time.Sleep(d)
		if err := c.Node(second).Resume(); err != nil {
			return err
		}
		if err := b.Start(ctx); err != nil {
			return fmt.Errorf("restarting node %d after %s: %w", id, kind, err)
		}
		detail = fmt.Sprintf("and node %d frozen %s meanwhile, back after %s", second, d.Round(time.Millisecond), time.Since(began).Round(time.Millisecond))
	}
	// In sync twice, 2 s apart: a node just resumed can answer from
	// metadata older than its own fencing.
	for range 2 {
		if err := c.WaitInSync(ctx, 3*time.Minute); err != nil {
			return fmt.Errorf("after %s of node %d: %w", kind, id, err)
		}
		time.Sleep(2 * time.Second)
	}
	s.t.Logf("node fault %s on node %d (%s): %s; in sync after %s", kind, id, what, detail, time.Since(began).Round(time.Millisecond))
	return nil
}

// restartStalledLeader is restartStalledBroker on the cluster: it restarts
// the leader of a source partition with lag, which moves the share
// partition to another node that loads it from its persisted state.
func (s *scenario) restartStalledLeader(offsets kadm.DescribedShareGroupsOffsets) error {
	s.nodeMu.Lock()
	defer s.nodeMu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	p := int32(0)
	for _, g := range offsets {
		for _, ps := range g.Offsets {
			for q, off := range ps {
				if off.Lag > 0 {
					p = q
				}
			}
		}
	}
	id, err := s.env.cluster.Leader(ctx, s.p.Source, p)
	if err != nil {
		return err
	}
	s.t.Logf("restarting node %d, leader of %s[%d]", id, s.p.Source, p)
	if err := s.env.cluster.Node(id).Restart(ctx); err != nil {
		return err
	}
	return s.env.cluster.WaitInSync(ctx, 3*time.Minute)
}

// watchLeaders counts the changes of leader of the pipeline's partitions
// (source, output, dead letters, ledger) until the scenario stops, from a
// metadata request a second: a partition without a leader for a while and
// then back on the same node is no change.
func (s *scenario) watchLeaders() {
	s.scrapeWG.Add(1)
	go func() {
		defer s.scrapeWG.Done()
		last := map[string]int32{}
		for {
			select {
			case <-s.stopCh:
				return
			case <-time.After(time.Second):
			}
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			md, err := s.adm.Metadata(ctx, s.p.Source, s.p.Output, s.p.DeadLetter, s.p.Ledger)
			cancel()
			if err != nil {
				continue
			}
			changes := 0
			for _, t := range md.Topics {
				for _, p := range t.Partitions {
					if p.Err != nil || p.Leader < 0 {
						continue
					}
					key := fmt.Sprintf("%s[%d]", t.Topic, p.Partition)
					if was, ok := last[key]; ok && was != p.Leader {
						changes++
					}
					last[key] = p.Leader
				}
			}
			if changes > 0 {
				s.count(func(r *result) { r.LeaderChanges += changes })
			}
		}
	}()
}
