package chaos

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sharerelay/sharerelay/audit"
)

// fleetSize shapes scenario 20, the elastic fleet: relay instances
// scaled out and in along a schedule under a backlog that never runs dry,
// with kill -9s where a scale event is most fragile.
type fleetSize struct {
	// schedule is the fleet sizes in turn, one plateau each; scale-in
	// stops the highest ordinals (a StatefulSet's pods), scale-out
	// starts the lowest missing ones.
	schedule []int
	// plateau is how long each size runs.
	plateau time.Duration
	// backlog is the fewest records the group has not finished while
	// the schedule runs: more than the relays can hold locked, so that
	// a scale-in always stops relays at full load.
	backlog int
	// killOld also kills an instance that was running before each
	// scale-out (besides a newcomer); roam kills a random running
	// instance every 5–10 s of every plateau.
	killOld, roam bool
}

// The CI twin: the schedule once, plateaus just long enough for some
// workers to resize (a new instance count must hold 10 s first); under
// two minutes on two cores.
var fleetCI = fleetSize{schedule: []int{1, 2, 4, 8, 3, 1}, plateau: 12 * time.Second, backlog: 20_000}

// The long one: the schedule, then a burst to 8 and back to 1 at full
// load, 30 s plateaus, and kills within the plateaus too.
var fleetLong = fleetSize{schedule: []int{1, 2, 4, 8, 3, 1, 8, 1}, plateau: 30 * time.Second, backlog: 40_000, killOld: true, roam: true}

// 20. TestChaosFleetCI is the elastic fleet at a size for every CI run:
// the schedule 1 → 2 → 4 → 8 → 3 → 1 once, 12 s plateaus.
func TestChaosFleetCI(t *testing.T) { fleetScenario(t, fleetCI) }

// TestChaosFleet is scenario 20 with 30 s plateaus, a second scale-out to
// 8 and scale-in to 1 at full load, and kills within the plateaus. Only
// with CHAOS_LONG=1 (make chaos): CI runs TestChaosFleetCI.
func TestChaosFleet(t *testing.T) {
	longOnly(t, "TestChaosFleetCI")
	fleetScenario(t, fleetLong)
}

// fleetScenario runs scenario 20 on z: relays of one worker on the direct
// listener (as many as the schedule's largest size), their consumers and
// polls left to the relay's sizing, 1 ms of work a record; a backlog kept
// above z.backlog while the schedule runs. Each scale-out is followed,
// 0.3–2 s later, by a kill -9 of one of the new instances (restarted by
// its supervisor, as a pod is), while it joins the group and takes its
// first records; each scale-in sends SIGTERM to the instances removed, all
// at once, and kills one of them that runs -9 0.1–0.4 s later, during its
// drain.
// The verdict is the verifier's as everywhere, with no dead letter and
// no record released on its last delivery (the broker would archive it).
func fleetScenario(t *testing.T, z fleetSize) {
	size := slices.Max(z.schedule)
	s := newScenario(t, 0, opts{Direct: true, Relays: size, Workers: 1, MaxRecords: -1, Transforms: work})
	s.seedRange(1, z.backlog)
	produced := z.backlog
	s.startReader()
	s.scrapeWG.Add(1)
	go s.scrapeLoop()

	// The backlog: topped up every half second until the schedule ends.
	var (
		top     sync.WaitGroup
		topped  atomic.Int64
		stopTop = make(chan struct{})
	)
	topped.Store(int64(produced))
	top.Go(func() { s.topUp(z.backlog, &topped, stopTop) })

	var (
		scaleIns sync.WaitGroup
		running  int
		drains   atomic.Int64 // scale-in kills that landed during a drain
	)
	for k, n := range z.schedule {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		lag := s.lag(ctx)
		cancel()
		switch {
		case n > running:
			s.t.Logf("fleet: plateau %d: scale out %d → %d (lag %d)", k+1, running, n, lag)
			for i := running; i < n; i++ {
				s.relays[i].join()
			}
			s.sleep(s.between(300*time.Millisecond, 2*time.Second))
			s.killRelay(running+s.intn(n-running), s.between(0, 2*time.Second))
			if z.killOld && running > 0 {
				s.killRelay(s.intn(running), s.between(0, 2*time.Second))
			}
		case n < running:
			s.t.Logf("fleet: plateau %d: scale in %d → %d at lag %d", k+1, running, n, lag)
			// The victim is one that runs (not one a kill left
			// restarting), killed early: a drain at full load
			// lasts from a few hundred milliseconds to a few
			// seconds.
			victim := -1
			s.rngMu.Lock()
			order := s.rng.Perm(running - n)
			s.rngMu.Unlock()
			for _, i := range order {
				if s.relays[n+i].current() != nil {
					victim = n + i
					break
				}
			}
			killAfter := s.between(100*time.Millisecond, 400*time.Millisecond)
			for i := n; i < running; i++ {
				kill := time.Duration(0)
				if i == victim {
					kill = killAfter
				}
				scaleIns.Go(func() {
					if s.scaleIn(i, kill) {
						drains.Add(1)
					}
				})
			}
		}
		running = n
		end := time.Now().Add(z.plateau)
		for z.roam && time.Until(end) > 5*time.Second {
			s.sleep(s.between(5*time.Second, 10*time.Second))
			s.killRelay(s.intn(running), s.between(0, 2*time.Second))
		}
		s.sleep(time.Until(end))
	}
	close(stopTop)
	top.Wait()
	scaleIns.Wait()
	n := int(topped.Load())
	s.o.Records = n
	s.count(func(r *result) { r.Records = n })
	s.t.Logf("fleet: schedule %v done; %d records written; %d kill -9s landed during a scale-in's drain", z.schedule, n, drains.Load())
	s.finish(func(*audit.Report) []string {
		var problems []string
		if m := s.metricTotals()["sharerelay_released_on_last_delivery_total"]; m > 0 {
			problems = append(problems, fmt.Sprintf("the relays released %.0f records on their last delivery: the broker archived them", m))
		}
		if drains.Load() == 0 {
			problems = append(problems, "no kill -9 landed during a scale-in's drain: every scaled-in relay had exited before its kill")
		}
		s.t.Logf("fleet: share consumers resized %d times across the relays", s.countLogLines("share consumers resized"))
		return problems
	})
}

// join starts the relay as a new instance of the fleet, or again after a
// scale-in stopped it, under its own name.
func (r *relay) join() {
	r.mu.Lock()
	done := r.supDone
	r.mu.Unlock()
	if done != nil {
		<-done // the supervisor of the scale-in before
	}
	r.mu.Lock()
	r.gone = false
	r.mu.Unlock()
	r.start()
}

// scaleIn stops relay i for good as a scale-in does: SIGTERM, and with
// kill set a SIGKILL that long after, while it drains. It returns whether
// the kill landed before the relay exited. A SIGTERM alone must end in
// exit 0 within 45 s.
func (s *scenario) scaleIn(i int, kill time.Duration) (killed bool) {
	r := s.relays[i]
	r.mu.Lock()
	r.gone = true
	inc, done := r.cur, r.supDone
	r.mu.Unlock()
	defer func() {
		if done != nil {
			<-done // the supervisor returns: it restarts no more
		}
	}()
	if inc == nil || inc.Exited() {
		return false
	}
	inc.setCause("scale-in SIGTERM")
	start := time.Now()
	_ = inc.Signal(syscall.SIGTERM) // nothing to do once it has exited
	s.count(func(res *result) { res.Terms++ })
	var killAt <-chan time.Time
	if kill > 0 {
		killAt = time.After(kill)
	}
	select {
	case <-inc.Done():
	case <-killAt:
		inc.setCause("scale-in SIGTERM, SIGKILL during the drain")
		inc.Kill()
		s.count(func(res *result) { res.Kills++ })
		s.t.Logf("scale-in: relay %s SIGKILLed %s into its drain", r.name, time.Since(start).Round(time.Millisecond))
		return true
	case <-time.After(45 * time.Second):
		inc.setCause("scale-in SIGTERM timeout, SIGKILL")
		inc.Kill()
	}
	code := inc.ExitCode()
	s.t.Logf("scale-in: relay %s exit %d after %s", r.name, code, time.Since(start).Round(time.Millisecond))
	if code != 0 {
		s.count(func(res *result) { res.UncleanStops++ })
		s.t.Errorf("relay %s did not stop cleanly on the scale-in's SIGTERM: exit %d after %s", r.name, code, time.Since(start).Round(time.Millisecond))
	}
	return false
}

// topUp writes orders after the last of produced whenever the group's lag
// is below backlog, every half second until stop is closed.
func (s *scenario) topUp(backlog int, produced *atomic.Int64, stop <-chan struct{}) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(s.src.direct...), kgo.ProducerLinger(5*time.Millisecond),
		kgo.MaxBufferedRecords(50_000), kgo.ProducerBatchMaxBytes(int32(s.batchBytes())))
	if err != nil {
		s.t.Error(err)
		return
	}
	defer cl.Close()
	orders := s.orders()
	for {
		select {
		case <-stop:
			return
		case <-time.After(500 * time.Millisecond):
		}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		if lag := s.lag(ctx); lag >= 0 && lag < int64(backlog) {
			from := int(produced.Load()) + 1
			to := from + backlog - int(lag) - 1
			for i := from; i <= to; i++ {
				cl.Produce(ctx, orders.Record(i), func(_ *kgo.Record, err error) {
					if err != nil {
						s.t.Errorf("topping up the backlog: order %d: %v", i, err)
					}
				})
			}
			if err := cl.Flush(ctx); err != nil {
				s.t.Errorf("topping up the backlog: %v", err)
			}
			produced.Store(int64(to))
		}
		cancel()
	}
}

// countLogLines counts the lines of every relay process's log that hold
// text.
func (s *scenario) countLogLines(text string) int {
	n := 0
	for _, r := range s.relays {
		r.mu.Lock()
		incs := slices.Clone(r.incs)
		r.mu.Unlock()
		for _, inc := range incs {
			b, _ := os.ReadFile(inc.LogPath())
			n += bytes.Count(b, []byte(text))
		}
	}
	return n
}
