package integration

import (
	"context"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sharerelay/sharerelay/integration/harness"
	"github.com/sharerelay/sharerelay/sharegroup"
)

// bookNestTransforms are the BookNest rules of configs/booknest-packing.yaml.
const bookNestTransforms = `
  - {type: fail, kind: permanent, reason: bad address, when: {field: order_id, modulo: 500, remainder: 0}}
  - {type: fail, kind: retry, reason: printer jam, when: {field: order_id, modulo: 7, remainder: 0, max_delivery_count: 1}}
  - {type: set, field: status, value: packing}`

func TestRealBrokerBookNestWithTwoProcesses(t *testing.T) {
	seeds := seedsFor(t)
	for _, delivery := range []string{"at-least-once", "exactly-once"} {
		t.Run(delivery, func(t *testing.T) {
			p := newPipe(t, seeds, harness.PipelineOptions{Delivery: delivery, Workers: 2, Transforms: bookNestTransforms})
			seedOrders(t, p, 1, 2000)
			a := startRelay(t, p, "a")
			b := startRelay(t, p, "b")
			o := settled(t, p, 2000, 3*time.Minute)
			exactlyOnce(t, o, 2000, 4)
			if o.Jobs.Records != 1996 {
				t.Fatalf("packing jobs = %d, want 1996", o.Jobs.Records)
			}
			for _, pr := range []*harness.Proc{a, b} {
				_ = pr.Signal(syscall.SIGTERM) // an exited relay shows in its exit code
				if code, err := pr.Wait(30 * time.Second); err != nil || code != 0 {
					t.Fatalf("%s after SIGTERM: exit %d, %v; want 0", pr.Name(), code, err)
				}
			}
		})
	}
}

// A relay that may hold more records than the broker's default record
// lock limit per share partition raises its group's limit, within the
// broker's maximum (2,000 and 4,000 on a default broker); one that holds
// fewer leaves it alone. Both relay exactly once.
func TestRealBrokerTheRelayRaisesItsGroupsRecordLockLimit(t *testing.T) {
	seeds := seedsFor(t)
	for _, c := range []struct {
		name       string
		maxRecords int
		want       string
	}{
		{"1 worker of 4 consumers × 1000 records", 1000, "4000"},
		{"1 worker of 4 consumers × 50 records", 50, "2000"},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := newPipe(t, seeds, harness.PipelineOptions{Workers: 1, Consumers: 4, MaxRecords: c.maxRecords})
			seedOrders(t, p, 1, 500)
			startRelay(t, p, "a")
			exactlyOnce(t, settled(t, p, 500, 2*time.Minute), 500, 0)
			if got := groupConfig(t, p, sharegroup.RecordLocks); got != c.want {
				t.Fatalf("%s = %q, want %s", sharegroup.RecordLocks, got, c.want)
			}
		})
	}
}

// SIGTERM mid-stream: the relay polls no more, writes the records it holds
// (batch.drain_timeout, default 5 s) instead of releasing them, leaves the
// group and exits 0; a new process with the same instance name finishes
// the work exactly once. Whether the stop released anything shows in the
// delivery counts the new process sees (sharerelay_redeliveries_total):
// none on a second delivery when the relay drained, those the relay held
// with drain_timeout 0, which releases them (every acquisition spends a
// delivery; one released at a stop was spent for nothing, and frequent
// restarts walk records to the delivery limit).
func TestRealBrokerSIGTERMMidStreamWritesWhatTheRelayHolds(t *testing.T) {
	seeds := seedsFor(t)
	const n, maxRecords = 3000, 20
	for _, c := range []struct {
		drain string
		// The redeliveries the new process may see: at most a poll's
		// worth with the drain (a share fetch still in flight after the
		// drain's grace), more than that without.
		most, least float64
	}{
		{drain: "", most: maxRecords},
		{drain: "0s", least: maxRecords + 1},
	} {
		name := "drain_timeout=" + c.drain
		if c.drain == "" {
			name = "default drain_timeout"
		}
		t.Run(name, func(t *testing.T) {
			addr := metricsAddr(t)
			// 10 ms per record keeps the stream going long enough to stop
			// it in the middle of a batch, with each worker's other polls
			// waiting.
			p := newPipe(t, seeds, harness.PipelineOptions{Workers: 2, Consumers: 4, MaxRecords: maxRecords, DrainTimeout: c.drain,
				MetricsListen: addr, Transforms: `[{type: delay, duration: 10ms}]`})
			seedOrders(t, p, 1, n)
			a := startRelay(t, p, "a")
			waitFor(t, p, 2*time.Minute, "some output", func(o outcome) bool { return o.Jobs.Records >= 200 })
			_ = a.Signal(syscall.SIGTERM) // an exited relay shows in its exit code
			start := time.Now()
			if code, err := a.Wait(30 * time.Second); err != nil || code != 0 {
				t.Fatalf("relay after SIGTERM: exit %d, %v; want 0", code, err)
			}
			t.Logf("relay stopped %s after SIGTERM", time.Since(start).Round(time.Millisecond))
			if c.drain == "" && !strings.Contains(a.LogTail(1<<20), `msg="worker drained"`) {
				t.Errorf("relay a logged no 'worker drained' line:\n%s", a.LogTail(4000))
			}
			mid, err := measure(t, p)
			if err != nil {
				t.Fatal(err)
			}
			if len(mid.Jobs.BySource) >= n {
				t.Fatalf("the relay finished before SIGTERM (%v); the test did not stop it mid-stream", mid)
			}
			// A new process with the same instance name finishes the work.
			startRelay(t, p, "a")
			exactlyOnce(t, settled(t, p, n, 3*time.Minute), n, 0)
			_, body := get(addr, "/metrics")
			redelivered := 0.0
			for _, m := range regexp.MustCompile(`(?m)^sharerelay_redeliveries_total\{[^}]*\} (\S+)$`).FindAllStringSubmatch(body, -1) {
				v, _ := strconv.ParseFloat(m[1], 64)
				redelivered += v
			}
			t.Logf("after the stop: %d records left, the new process received %v on a second delivery or later", n-len(mid.Jobs.BySource), redelivered)
			if c.most > 0 && redelivered > c.most || redelivered < c.least {
				t.Errorf("the new process received %v records on a second delivery or later, want between %v and %v", redelivered, c.least, c.most)
			}
		})
	}
}

// An instance started under the name of one still running fences it: the
// old one's producers are fenced, it stops with an error, and its records
// go to the new one. Nothing is lost or written twice.
func TestRealBrokerSameInstanceNameFencesTheZombie(t *testing.T) {
	seeds := seedsFor(t)
	const n = 2000
	p := newPipe(t, seeds, harness.PipelineOptions{Workers: 2, MaxRecords: 20, Transforms: `[{type: delay, duration: 5ms}]`})
	seedOrders(t, p, 1, n)
	old := startRelay(t, p, "x")
	waitFor(t, p, time.Minute, "progress", func(o outcome) bool { return o.Jobs.Records >= 200 })
	startRelay(t, p, "x")
	code, err := old.Wait(time.Minute)
	if err != nil || code == 0 {
		t.Fatalf("the fenced instance exited %d (%v); want a non-zero exit", code, err)
	}
	exactlyOnce(t, settled(t, p, n, 3*time.Minute), n, 0)
}

// At Kafka's default group.share.max.partition.max.record.locks (4,000) a
// group cannot lock what 2 workers × 4 consumers × 2,000 records ask for
// on a one-partition source. When the file sets both, the relay keeps
// them: relay check warns and still passes (a warning is no failure).
// With polls of 50 the locks suffice and it says nothing of them.
func TestRealBrokerRelayCheckWarnsWhenTheGroupCannotLockWhatTheFileAsksFor(t *testing.T) {
	seeds := seedsFor(t)
	short := newPipe(t, seeds, harness.PipelineOptions{Workers: 2, Consumers: 4, MaxRecords: 2000, Partitions: 1})
	code, out := relayCheck(t, short)
	t.Logf("relay check (exit %d):\n%s", code, out)
	if code != 0 {
		t.Fatalf("relay check exited %d on a pipeline whose only problem is a warning", code)
	}
	for _, want := range []string{
		"warn: poll size: record locks short: batch.consumers 4 × batch.max_records 2000, as the file sets them, ask for more than the group's 2000 record locks a worker (4000 a partition × 1 source partition ÷ (1 instance × 2 workers))",
		// The acquire mode it runs with, and why.
		"acquire mode: record_limit (set by batch.acquire_mode",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("relay check does not say %q", want)
		}
	}
	fine := newPipe(t, seeds, harness.PipelineOptions{Workers: 2, Consumers: 4, MaxRecords: 50, Partitions: 1})
	code, out = relayCheck(t, fine)
	if code != 0 || strings.Contains(out, "record locks short") || !strings.Contains(out, "ok: poll size: 4 consumers × 50 records fit the group's") {
		t.Fatalf("relay check (exit %d) on 2 × 4 × 50 records, which one partition's 4000 locks cover:\n%s", code, out)
	}
}

// sizedLine is the relay's start-up line that says how it sized its
// share consumers.
var sizedLine = regexp.MustCompile(`msg="share consumers sized: [^"]*\((\d+) instances? × 2 workers\)[^"]*".* consumers=(\d+) max_records=(\d+)`)

// A pipeline that leaves batch.consumers and batch.max_records to the
// relay gets what the group's record locks hold (Kafka's default broker
// maximum: 4,000 a partition, one partition, 2 workers), as relay check
// says beforehand; a second instance finds the first in the group and
// sizes for two. The first sized for itself alone, so together they ask
// for more than the group can lock — the budget a relay believes in is
// wrong — and the group hands out what is left: the records still go
// through exactly once.
func TestRealBrokerDefaultsAreSizedToTheGroupsRecordLocksAndShared(t *testing.T) {
	seeds := seedsFor(t)
	const n = 20000
	p := newPipe(t, seeds, harness.PipelineOptions{Workers: 2, MaxRecords: -1, Partitions: 1})
	code, out := relayCheck(t, p)
	m := regexp.MustCompile(`ok: poll size: (\d+) consumers? × (\d+) records`).FindStringSubmatch(out)
	if code != 0 || m == nil || strings.Contains(out, "record locks short") {
		t.Fatalf("relay check (exit %d) says no poll size that fits:\n%s", code, out)
	}
	sized := func(pr *harness.Proc) (instances, consumers, records int) {
		t.Helper()
		var sm []string
		deadline := time.Now().Add(time.Minute)
		for sm == nil && time.Now().Before(deadline) {
			sm = sizedLine.FindStringSubmatch(pr.LogTail(1 << 20))
			time.Sleep(100 * time.Millisecond)
		}
		if sm == nil {
			t.Fatalf("relay %s logged no sizing:\n%s", pr.Name(), pr.LogTail(4000))
		}
		instances, _ = strconv.Atoi(sm[1])
		consumers, _ = strconv.Atoi(sm[2])
		records, _ = strconv.Atoi(sm[3])
		return instances, consumers, records
	}
	a := startRelay(t, p, "a")
	inst, c, r := sized(a)
	if inst != 1 || fmt.Sprint(c) != m[1] || fmt.Sprint(r) != m[2] || c*r > 4000/2 || c*r < 4000/4 {
		t.Fatalf("relay a sized for %d instances: %d consumers × %d records; want 1 instance, what relay check said (%s × %s), within 2000 a worker and using at least half",
			inst, c, r, m[1], m[2])
	}
	waitMembers(t, p, c*2)
	b := startRelay(t, p, "b")
	binst, bc, br := sized(b)
	if binst != 2 || bc*br > 4000/4 {
		t.Fatalf("relay b sized for %d instances: %d consumers × %d records; want 2 instances and at most 1000 a worker", binst, bc, br)
	}
	if asked := 2 * (c*r + bc*br); asked <= 4000 {
		t.Fatalf("the instances ask for %d records in all, within the group's 4000 locks; the test wants them over", asked)
	}
	seedOrders(t, p, 1, n)
	exactlyOnce(t, settled(t, p, n, 3*time.Minute), n, 0)
}

// waitMembers waits until p's share group has at least n members.
func waitMembers(t *testing.T, p *harness.Pipeline, n int) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(p.SourceSeeds...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for {
		ids, err := sharegroup.Members(ctx, kadm.NewClient(cl), p.Group)
		if err == nil && len(ids) >= n {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("share group %s has %d members (%v); want %d", p.Group, len(ids), err, n)
		case <-time.After(200 * time.Millisecond):
		}
	}
}
