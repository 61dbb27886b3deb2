package chaos

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"syscall"
	"time"
)

// Fault kinds, as counted in the report.
const (
	toxReset     = "reset"     // reset_peer: every connection is reset (RST) on its next byte
	toxLatency   = "latency"   // responses delayed past the client's request timeout
	toxBlackhole = "blackhole" // timeout toxic: bytes dropped, connections hang
	toxDown      = "down"      // the proxy stops: connections closed, new ones refused
	toxEndTxnCut = "endtxn-cut"
)

// toxIsolate cuts relays off from one node of the cluster (a blackhole
// on their proxies to it), often the node that coordinates their
// transactions or leads a partition they write: the rest of the cluster
// is healthy and says so in metadata.
const toxIsolate = "isolate-node"

// toxIsolateCluster cuts every relay off from one of the two clusters of
// a cross-cluster scenario (a blackhole on all their proxies to it) while
// the other stays in reach: toward the source, acknowledgements of
// transactions committed on the sink are lost; toward the sink, records
// acquired from the source wait for commits that cannot happen.
const toxIsolateCluster = "isolate-cluster"

// activeToxic is a toxic on the proxy of relay slot slot to node node+1 of
// env e.
type activeToxic struct {
	e          *env
	slot, node int
	name       string
}

func (a activeToxic) key() string {
	return fmt.Sprintf("%s/%d/%d/%s", a.e.role, a.slot, a.node, a.name)
}

// proxyTargets returns the indexes of relay slot slot's proxies to node
// (a node id) of e, or to every node when node is 0.
func proxyTargets(e *env, slot int, node int32) []int {
	if node > 0 {
		return []int{int(node) - 1}
	}
	out := make([]int, len(e.proxies[slot]))
	for j := range out {
		out[j] = j
	}
	return out
}

// addToxic adds a toxic to the proxies of relay slot i to the sink (to
// every node).
func (s *scenario) addToxic(slot int, name, typ, stream string, attrs map[string]any) error {
	return s.addToxicTo(s.env, slot, 0, name, typ, stream, attrs)
}

// addToxicTo adds a toxic to relay slot i's proxy to node (a node id) of
// e, or to all its proxies to e when node is 0.
func (s *scenario) addToxicTo(e *env, slot int, node int32, name, typ, stream string, attrs map[string]any) error {
	body, _ := json.Marshal(map[string]any{"name": name, "type": typ, "stream": stream, "toxicity": 1.0, "attributes": attrs})
	for _, j := range proxyTargets(e, slot, node) {
		if _, err := e.proxies[slot][j].Toxics.AddToxicJson(bytes.NewReader(body)); err != nil {
			return fmt.Errorf("adding toxic %s to proxy %d of %s node %d: %w", name, slot, e.role, j+1, err)
		}
		a := activeToxic{e, slot, j, name}
		s.faultMu.Lock()
		s.toxics[a.key()] = a
		s.faultMu.Unlock()
	}
	return nil
}

// removeToxic removes a toxic from every proxy of relay slot i to the sink
// that has it.
func (s *scenario) removeToxic(slot int, name string) { s.removeToxicOn(s.env, slot, name) }

// removeToxicOn removes a toxic from every proxy of relay slot i to e
// that has it.
func (s *scenario) removeToxicOn(e *env, slot int, name string) {
	for j := range e.proxies[slot] {
		key := activeToxic{e, slot, j, name}.key()
		s.faultMu.Lock()
		_, ok := s.toxics[key]
		delete(s.toxics, key)
		s.faultMu.Unlock()
		if ok {
			_ = e.proxies[slot][j].Toxics.RemoveToxic(context.Background(), name)
		}
	}
}

// netFault applies a network fault of kind to the proxies of slots to the
// sink for d, then heals it. It blocks for d.
func (s *scenario) netFault(kind string, slots []int, d time.Duration) {
	s.netFaultTo(s.env, kind, kind, slots, 0, d)
}

// netFaultTo applies a network fault of kind to the slots' proxies to node
// of e (every node when 0) for d, counted as what, then heals it. It
// blocks for d. In a cross-cluster scenario the relays' path to the other
// cluster stays healthy.
func (s *scenario) netFaultTo(e *env, what, kind string, slots []int, node int32, d time.Duration) {
	source := s.cross() && e == s.src
	s.count(func(r *result) { r.networkFaults(source)[what]++ })
	s.faultMu.Lock()
	if source {
		s.toward[0]++
	} else {
		s.toward[1]++
	}
	s.faultMu.Unlock()
	toward := ""
	if s.cross() {
		toward = " toward the " + e.role + " cluster"
	}
	if node > 0 {
		toward += fmt.Sprintf(" toward node %d", node)
	}
	s.t.Logf("network fault %s on relays %v%s for %s", what, slots, toward, d.Round(time.Millisecond))
	var names []string
	for _, i := range slots {
		switch kind {
		case toxReset:
			s.tryToxic(e, i, node, "reset-up", "reset_peer", "upstream", map[string]any{"timeout": 0})
			s.tryToxic(e, i, node, "reset-down", "reset_peer", "downstream", map[string]any{"timeout": 0})
			names = []string{"reset-up", "reset-down"}
		case toxLatency:
			// Above franz-go's request timeout overhead (10 s): every
			// request through the proxy times out meanwhile.
			s.tryToxic(e, i, node, "latency", "latency", "downstream", map[string]any{"latency": 12_000, "jitter": 500})
			names = []string{"latency"}
		case toxBlackhole:
			s.tryToxic(e, i, node, "blackhole-up", "timeout", "upstream", map[string]any{"timeout": 0})
			s.tryToxic(e, i, node, "blackhole-down", "timeout", "downstream", map[string]any{"timeout": 0})
			names = []string{"blackhole-up", "blackhole-down"}
		case toxDown:
			for _, j := range proxyTargets(e, i, node) {
				e.proxies[i][j].Stop()
			}
		default:
			panic("unknown network fault " + kind)
		}
	}
	s.sleep(d)
	for _, i := range slots {
		if kind == toxDown {
			for _, j := range proxyTargets(e, i, node) {
				if err := e.proxies[i][j].Start(); err != nil {
					s.t.Errorf("restarting proxy %d to %s node %d: %v", i, e.role, j+1, err)
				}
			}
			continue
		}
		for _, n := range names {
			s.removeToxicOn(e, i, n)
		}
	}
}

// tryToxic is addToxicTo reporting errors without stopping the test (it
// may run on a nemesis goroutine).
func (s *scenario) tryToxic(e *env, slot int, node int32, name, typ, stream string, attrs map[string]any) {
	if err := s.addToxicTo(e, slot, node, name, typ, stream, attrs); err != nil {
		s.t.Error(err)
	}
}

func (s *scenario) mustToxic(slot int, name, typ, stream string, attrs map[string]any) {
	s.t.Helper()
	if err := s.addToxic(slot, name, typ, stream, attrs); err != nil {
		s.t.Fatal(err)
	}
}

// killRelay SIGKILLs relay i; the supervisor restarts it after restart.
func (s *scenario) killRelay(i int, restart time.Duration) {
	r := s.relays[i]
	if r.kill(restart) {
		s.count(func(res *result) { res.Kills++ })
		s.t.Logf("SIGKILL relay %s (restart in %s)", r.name, restart.Round(time.Millisecond))
	}
}

// termRelay stops relay i with SIGTERM and checks it exits 0 within 45 s.
func (s *scenario) termRelay(i int, restart time.Duration) {
	r := s.relays[i]
	code, took, logged, fp := r.term(restart, 45*time.Second)
	if code == -1 && took == 0 {
		return
	}
	s.count(func(res *result) { res.Terms++ })
	s.t.Logf("SIGTERM relay %s: exit %d after %s (restart in %s)", r.name, code, took.Round(time.Millisecond), restart.Round(time.Millisecond))
	if code == 128+int(syscall.SIGTERM) && !logged {
		// The signal came before the process reached main and its
		// handler (it had not logged a line): the default action ended
		// it with nothing acquired, which is not an unclean stop.
		s.t.Logf("relay %s was ended by SIGTERM before it started", r.name)
		return
	}
	if code == 128+int(syscall.SIGKILL) && fp != "" {
		// The drain committed what it held and met the kill@ failpoint
		// the incarnation was started with: a crash the scenario asked
		// for, not a stop that failed.
		s.count(func(res *result) { res.FailpointKills++ })
		s.t.Logf("relay %s killed by its failpoint %s while it drained after SIGTERM", r.name, fp)
		return
	}
	if code != 0 {
		s.count(func(res *result) { res.UncleanStops++ })
		s.t.Errorf("relay %s did not stop cleanly on SIGTERM: exit %d after %s", r.name, code, took.Round(time.Millisecond))
	}
}

// pauseRelay SIGSTOPs relay i for d, then SIGCONTs it. It blocks for d.
func (s *scenario) pauseRelay(i int, d time.Duration) {
	r := s.relays[i]
	inc := r.current()
	if inc == nil {
		return
	}
	s.faultMu.Lock()
	s.paused[r] = true
	s.faultMu.Unlock()
	_ = inc.Signal(syscall.SIGSTOP) // nothing to do once it has exited
	s.count(func(res *result) { res.Pauses++ })
	s.t.Logf("SIGSTOP relay %s for %s", r.name, d.Round(time.Millisecond))
	s.sleep(d)
	_ = inc.Signal(syscall.SIGCONT)
	s.faultMu.Lock()
	delete(s.paused, r)
	s.faultMu.Unlock()
}

// bounceBroker kills the single broker (SIGKILL when hard, else SIGTERM
// and a clean shutdown), waits down, and starts it again on the same data
// directory and ports. The cluster's nodes have nodeFault instead.
func (s *scenario) bounceBroker(hard bool, down time.Duration) error {
	return s.bounce(s.env, hard, down)
}

// bounce is bounceBroker on the single broker of e: the sink's, or in a
// cross-cluster scenario the source's.
func (s *scenario) bounce(e *env, hard bool, down time.Duration) error {
	b := e.broker
	if b == nil {
		return fmt.Errorf("bounceBroker needs the single broker; a cluster's nodes fail one at a time (nodeFault)")
	}
	source := s.cross() && e == s.src
	start := time.Now()
	var err error
	if hard {
		err = b.Kill()
		s.count(func(r *result) { *r.brokerCount(source, true)++ })
	} else {
		err = b.Stop()
		s.count(func(r *result) { *r.brokerCount(source, false)++ })
	}
	if err != nil {
		return fmt.Errorf("stopping the %s broker: %w", e.role, err)
	}
	stopped := time.Since(start)
	time.Sleep(down)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	if err := b.Start(ctx); err != nil {
		return fmt.Errorf("restarting the %s broker: %w", e.role, err)
	}
	how := "clean stop (SIGTERM)"
	if hard {
		how = "kill -9"
	}
	which := "broker"
	if s.cross() {
		which = e.role + " broker"
	}
	s.t.Logf("%s %s in %s, down %s, back after %s in total", which, how, stopped.Round(time.Millisecond), down.Round(time.Millisecond), time.Since(start).Round(time.Millisecond))
	return nil
}

// healAll removes every toxic, restarts stopped proxies, resumes paused
// relays, and starts the schema registry and the broker if they are down;
// on the cluster, it starts and resumes every node and waits until every
// partition is in sync.
func (s *scenario) healAll() {
	s.t.Helper()
	s.healAllQuiet()
	if s.registry != nil && !s.registry.Running() {
		s.startRegistry()
	}
	if c := s.env.cluster; c != nil {
		s.nodeMu.Lock()
		defer s.nodeMu.Unlock()
		ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
		defer cancel()
		if err := c.Heal(ctx); err != nil {
			s.t.Fatalf("healing the cluster: %v", err)
		}
		return
	}
	for _, e := range s.envs() {
		if e.local && !e.broker.Running() {
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
			err := e.broker.Start(ctx)
			cancel()
			if err != nil {
				s.t.Fatalf("restarting the %s broker: %v", e.role, err)
			}
		}
	}
}

func (s *scenario) healAllQuiet() {
	s.faultMu.Lock()
	toxics := s.toxics
	s.toxics = map[string]activeToxic{}
	paused := s.paused
	s.paused = map[*relay]bool{}
	s.faultMu.Unlock()
	for _, tx := range toxics {
		_ = tx.e.proxies[tx.slot][tx.node].Toxics.RemoveToxic(context.Background(), tx.name)
	}
	for _, e := range s.envs() {
		for _, ps := range e.proxies {
			for _, px := range ps {
				px.Lock()
				enabled := px.Enabled
				px.Unlock()
				if !enabled {
					_ = px.Start()
				}
			}
		}
	}
	for r := range paused {
		if inc := r.current(); inc != nil {
			_ = inc.Signal(syscall.SIGCONT) // it may have exited since
		}
	}
}
