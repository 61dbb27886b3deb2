package relay

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sharerelay/sharerelay/audit"
	"github.com/sharerelay/sharerelay/config"
	"github.com/sharerelay/sharerelay/eos"
	"github.com/sharerelay/sharerelay/internal/failpoint"
	"github.com/sharerelay/sharerelay/internal/kfaketest"
	"github.com/sharerelay/sharerelay/metrics"
)

func TestTheSettlerMovesOnlyToASizeThatHeldForItsWholeSettle(t *testing.T) {
	at := func(s float64) time.Time { return time.Unix(0, 0).Add(time.Duration(s * float64(time.Second))) }
	small, big := size{2, 100}, size{2, 400}
	for _, tc := range []struct {
		name string
		seen []size // one observation a second, from 0 s
		want []bool
	}{
		{"the same size never moves", []size{big, big, big}, []bool{false, false, false}},
		{"a new size moves once it held for the settle", []size{small, small, small, small}, []bool{false, false, true, false}},
		{"a flapping member never moves", []size{small, big, small, big, small, big}, []bool{false, false, false, false, false, false}},
		{"a size seen again after the current one starts its wait anew", []size{small, small, big, small, small, small}, []bool{false, false, false, false, false, true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := &settler{settle: 2 * time.Second}
			cur := big
			for i, s := range tc.seen {
				got := h.observe(at(float64(i)), cur, s)
				if got != tc.want[i] {
					t.Fatalf("observation %d (%v while the workers have %v) = %v, want %v", i, s, cur, got, tc.want[i])
				}
				if got {
					cur = s
				}
			}
		})
	}
}

// fleetRelay is one relay instance of TestWorkersFollowTheFleet.
type fleetRelay struct {
	r    *Relay
	stop context.CancelFunc
	done chan error
}

// A fleet of exactly-once relays on kfake goes from one instance to four
// and back to one under a backlog: each worker moves its share consumers
// to its share of the group's record locks at each change, and no record
// is lost, written twice, released or delivered a second time for it (the
// outputs carry the delivery count their source had when it was written).
func TestWorkersFollowTheFleetFromOneInstanceToFourAndBack(t *testing.T) {
	o := runFleet(t)
	if o.jobs.Records != o.n || len(o.jobs.BySource) != o.n || len(o.jobs.Duplicates()) > 0 || o.dlq != 0 {
		t.Fatalf("jobs %d from %d sources (%d duplicated), dead letters %d; want %d once each",
			o.jobs.Records, len(o.jobs.BySource), len(o.jobs.Duplicates()), o.dlq, o.n)
	}
	if len(o.dcs) != 1 || o.dcs["1"] != o.n {
		t.Errorf("outputs by their source's delivery count: %v; want all %d at 1 (no record spent a delivery)", o.dcs, o.n)
	}
	if o.released != 0 || o.breaks != 0 {
		t.Errorf("the relays released %v records and broke an invariant %v times, want neither", o.released, o.breaks)
	}
	if o.resizesA != 2 {
		t.Errorf("the first instance resized %v times, want 2 (to four instances and back); logs:\n%s", o.resizesA, o.logs)
	}
	if o.logLines < 2 {
		t.Errorf("%d \"share consumers resized\" log lines, want one a change at least (the first instance's two); logs:\n%s", o.logLines, o.logs)
	}
}

// A resize that replaced the consumers at once, without writing and
// acknowledging what they hold first (failpoint.ResizeAbrupt), costs
// records a delivery: the check above can fail.
func TestAnAbruptResizeWouldSpendDeliveries(t *testing.T) {
	if err := failpoint.Enable(failpoint.ResizeAbrupt + "=error"); err != nil {
		t.Fatal(err)
	}
	defer failpoint.Disable()
	o := runFleet(t)
	spent := o.n - o.dcs["1"]
	if o.released == 0 && spent == 0 {
		t.Fatalf("an abrupt resize released no record and spent no delivery (outputs by delivery count %v): the fleet test cannot tell it from a drained one", o.dcs)
	}
	if o.jobs.Records != o.n || len(o.jobs.Duplicates()) > 0 {
		t.Fatalf("jobs %d (%d duplicated), want %d once each: exactly-once holds whatever a resize costs", o.jobs.Records, len(o.jobs.Duplicates()), o.n)
	}
	t.Logf("an abrupt resize: %v records released, %d outputs of a later delivery %v", o.released, spent, o.dcs)
}

// fleetOutcome is what runFleet saw.
type fleetOutcome struct {
	n        int
	jobs     audit.Tally
	dlq      int
	dcs      map[string]int // outputs by their source's delivery count
	released float64        // records the relays released
	breaks   float64        // invariant breaks
	resizesA float64        // the first instance's resizes
	logLines int            // "share consumers resized" lines
	logs     string
}

// runFleet runs exactly-once relays on kfake from one instance to four and
// back to one under a backlog, each worker's poll size left to the relay,
// and returns what came out.
func runFleet(t *testing.T) fleetOutcome {
	t.Helper()
	const n = 4000
	c := kfaketest.Cluster(t, kfake.SeedTopics(2, "orders", "jobs"), kfake.SeedTopics(1, "jobs.dlq"),
		kfake.BrokerConfigs(map[string]string{"group.share.partition.max.record.locks": "400"}))
	seedOrders(t, c, n)
	// The poll size is left to the relay (no batch.max_records), which
	// sizes it to the record locks.
	p, err := config.Parse("fleet.yaml", fmt.Appendf(nil, `
name: fleet
brokers: [%q]
workers: 1
source: {topics: [orders], group: g}
output: {topic: jobs}
dead_letter: {topic: jobs.dlq}
batch: {poll_timeout: 200ms, transform_concurrency: 1}
transforms:
  - {type: delay, duration: 4ms}
  - {type: header, header: dc, action: set, expr: 'string(delivery_count)'}`, c.ListenAddrs()[0]), func(string) (string, bool) { return "", false })
	if err != nil {
		t.Fatal(err)
	}
	if p.Delivery != config.ExactlyOnce {
		t.Fatalf("delivery %s, want exactly-once by default", p.Delivery)
	}
	var (
		mu   sync.Mutex
		logs strings.Builder
	)
	start := func(name string) *fleetRelay {
		r, err := New(Options{Pipeline: p, Instance: name, Logger: testLogger(&mu, &logs), LedgerMarkers: eos.MarkersAtSameOrNextEpoch,
			// Three instances joining together are one change when the
			// settle covers their start-ups.
			FleetEvery: 100 * time.Millisecond, FleetSettle: 2 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		f := &fleetRelay{r: r, stop: cancel, done: make(chan error, 1)}
		go func() { f.done <- r.Run(ctx) }()
		return f
	}
	end := func(f *fleetRelay) {
		t.Helper()
		f.stop()
		select {
		case err := <-f.done:
			if err != nil {
				t.Fatalf("Run returned %v after cancel, want nil", err)
			}
		case <-time.After(30 * time.Second):
			t.Fatal("Run did not return within 30s of cancel")
		}
	}
	pollSize := func(f *fleetRelay) float64 { return testutil.ToFloat64(f.r.Metrics().PollRecords.WithLabelValues("0")) }
	waitFor := func(what string, cond func() bool) {
		t.Helper()
		deadline := time.Now().Add(30 * time.Second)
		for !cond() {
			if time.Now().After(deadline) {
				mu.Lock()
				defer mu.Unlock()
				t.Fatalf("gave up waiting for %s; logs:\n%s", what, logs.String())
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	seeds := []kgo.Opt{kgo.SeedBrokers(c.ListenAddrs()...)}
	written := func() int {
		jobs, err := audit.ReadCommitted(context.Background(), seeds, "jobs")
		if err != nil {
			t.Fatal(err)
		}
		return jobs.Records
	}

	// One instance: the group's 800 locks (2 partitions × 400) are its
	// own, as 2 consumers × 400.
	a := start("a")
	defer func() {
		if a != nil {
			end(a)
		}
	}()
	waitFor("a's poll size of 400 and its first outputs", func() bool { return pollSize(a) == 400 && written() > 0 })

	// Four: 200 locks an instance, as 2 × 100; a moves to it at a batch
	// boundary, the newcomers at their start or soon after.
	more := []*fleetRelay{start("b"), start("c"), start("d")}
	waitFor("every instance at a poll size of 100", func() bool {
		for _, f := range append([]*fleetRelay{a}, more...) {
			if pollSize(f) != 100 {
				return false
			}
		}
		return true
	})
	mid := written()
	if mid >= n {
		t.Fatalf("the backlog ran dry (%d of %d written) before the fleet shrank: the test would not resize under load", mid, n)
	}

	// Back to one, by stopping the three as Kubernetes would: a takes
	// the whole budget again.
	for _, f := range more {
		end(f)
	}
	waitFor("a's poll size back at 400", func() bool { return pollSize(a) == 400 })
	o := fleetOutcome{n: n, resizesA: testutil.ToFloat64(a.r.Metrics().Resizes.WithLabelValues("0"))}
	waitFor("every record written", func() bool { return written() >= n })
	end(a)
	relays := append([]*fleetRelay{a}, more...)
	a = nil

	o.jobs, o.dcs = readDeliveryCounts(t, seeds)
	dlq, err := audit.ReadCommitted(context.Background(), seeds, "jobs.dlq")
	if err != nil {
		t.Fatal(err)
	}
	o.dlq = dlq.Records
	for _, f := range relays {
		m := f.r.Metrics()
		o.released += testutil.ToFloat64(m.Acks.WithLabelValues("0", metrics.AckRelease))
		o.breaks += testutil.ToFloat64(m.InvariantBreaks)
	}
	mu.Lock()
	defer mu.Unlock()
	o.logs = logs.String()
	o.logLines = strings.Count(o.logs, "share consumers resized")
	return o
}

// readDeliveryCounts reads jobs read_committed and counts the outputs by
// their dc header.
func readDeliveryCounts(t *testing.T, seeds []kgo.Opt) (audit.Tally, map[string]int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	jobs, err := audit.ReadCommitted(ctx, seeds, "jobs")
	if err != nil {
		t.Fatal(err)
	}
	cl, err := kgo.NewClient(append(seeds, kgo.ConsumeTopics("jobs"), kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))...)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	dcs := map[string]int{}
	for seen := 0; seen < jobs.Records; {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("reading jobs: %v after %d of %d", err, seen, jobs.Records)
		}
		fs.EachRecord(func(r *kgo.Record) {
			seen++
			v := "none"
			for _, h := range r.Headers {
				if h.Key == "dc" {
					v = string(h.Value)
				}
			}
			dcs[v]++
		})
	}
	return jobs, dcs
}

// testLogger logs as text into b, under mu.
func testLogger(mu *sync.Mutex, b *strings.Builder) *slog.Logger {
	return slog.New(slog.NewTextHandler(lockedWriter{mu, b}, &slog.HandlerOptions{Level: slog.LevelInfo}))
}

// lockedWriter writes into b under mu.
type lockedWriter struct {
	mu *sync.Mutex
	b  *strings.Builder
}

func (w lockedWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.Write(p)
}
