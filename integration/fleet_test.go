package integration

import (
	"context"
	"regexp"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sharerelay/sharerelay/integration/harness"
)

// resizedLine is the line a relay logs when its workers move to a new size
// of share consumers (relay/fleet.go).
var resizedLine = regexp.MustCompile(`msg="share consumers resized: [^"]*".*? instances=(\d+) from_instances=(\d+) consumers=(\d+) max_records=(\d+)`)

// A fleet on the real broker goes from one instance to four and back to
// one under a backlog, the three stopped by SIGTERM as Kubernetes scales a
// StatefulSet in. The first instance resizes its share consumers at each
// change, to its share of the group's record locks, and nothing is lost,
// written twice, released, or delivered a second time: every output
// carries the delivery count its source had when it was written (1), the
// leavers' drains included.
func TestRealBrokerAFleetOfOneToFourToOneResizesAndSpendsNoDelivery(t *testing.T) {
	seeds := seedsFor(t)
	const n = 10000
	p := newPipe(t, seeds, harness.PipelineOptions{Workers: 1, MaxRecords: -1, Partitions: 2, MetricsListen: "${SHARERELAY_TEST_METRICS:-}",
		GroupConfigs: map[string]string{"share.partition.max.record.locks": "400"},
		// 10 ms a record keeps the backlog from running dry before the
		// fleet shrinks; the header tells each output's delivery count.
		Transforms: `[{type: delay, duration: 10ms}, {type: header, header: dc, action: set, expr: 'string(delivery_count)'}]`})
	seedOrders(t, p, 1, n)
	addrs := map[string]string{}
	start := func(name string) *harness.Proc {
		addrs[name] = metricsAddr(t)
		return startRelay(t, p, name, "SHARERELAY_TEST_METRICS="+addrs[name])
	}
	resized := func(pr *harness.Proc, instances int) []string {
		t.Helper()
		deadline := time.Now().Add(90 * time.Second)
		for time.Now().Before(deadline) {
			for _, m := range resizedLine.FindAllStringSubmatch(pr.LogTail(1<<22), -1) {
				if m[1] == strconv.Itoa(instances) {
					return m
				}
			}
			time.Sleep(200 * time.Millisecond)
		}
		t.Fatalf("relay %s logged no resize to %d instances:\n%s", pr.Name(), instances, pr.LogTail(6000))
		return nil
	}
	pollSize := func(name string) float64 { return metric(t, addrs[name], "sharerelay_poll_records") }

	a := start("a")
	waitFor(t, p, 2*time.Minute, "a's first outputs", func(o outcome) bool { return o.Jobs.Records >= 100 })
	alone := pollSize("a")
	more := []*harness.Proc{start("b"), start("c"), start("d")}
	four := resized(a, 4)
	t.Logf("a at four instances: %s", four[0])
	// The workers move at their next batch boundary, after the line.
	waitPollSize := func(want string) {
		t.Helper()
		deadline := time.Now().Add(30 * time.Second)
		for got := pollSize("a"); strconv.FormatFloat(got, 'f', -1, 64) != want; got = pollSize("a") {
			if time.Now().After(deadline) {
				t.Fatalf("a's poll size is %v, want %s as its resize line says, within 30s of the line", got, want)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	waitPollSize(four[4])
	if got := pollSize("a"); got >= alone {
		t.Fatalf("a's poll size is %v after the fleet grew to four, want less than its %v alone", got, alone)
	}
	mid, err := measure(t, p)
	if err != nil {
		t.Fatal(err)
	}
	if len(mid.Jobs.BySource) >= n {
		t.Fatalf("the backlog ran dry before the fleet shrank (%v): no resize under load", mid)
	}
	for _, pr := range more {
		_ = pr.Signal(syscall.SIGTERM) // an exited relay shows in its exit code
	}
	for _, pr := range more {
		if code, err := pr.Wait(60 * time.Second); err != nil || code != 0 {
			t.Fatalf("%s after SIGTERM: exit %d, %v; want 0", pr.Name(), code, err)
		}
	}
	one := resized(a, 1)
	t.Logf("a alone again: %s", one[0])
	waitPollSize(one[4])
	exactlyOnce(t, settled(t, p, n, 4*time.Minute), n, 0)
	if got := pollSize("a"); got != alone {
		t.Errorf("a's poll size is %v alone again, want %v as at its start", got, alone)
	}
	if got := metric(t, addrs["a"], "sharerelay_resizes_total"); got != 2 {
		t.Errorf("a resized %v times, want 2", got)
	}
	if got := metricWhere(t, addrs["a"], "sharerelay_acks_total", `type="release"`); got != 0 {
		t.Errorf("a released %v records, want none", got)
	}
	dcs := outputDeliveryCounts(t, p, n)
	if len(dcs) != 1 || dcs["1"] != n {
		t.Errorf("outputs by their source's delivery count: %v; want all %d at 1 (no record spent a delivery)", dcs, n)
	}
}

// outputDeliveryCounts reads p's n outputs read_committed and counts them
// by their dc header.
func outputDeliveryCounts(t *testing.T, p *harness.Pipeline, n int) map[string]int {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(p.Seeds...), kgo.ConsumeTopics(p.Output),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	dcs := map[string]int{}
	for seen := 0; seen < n; {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("reading %s: %v after %d of %d", p.Output, ctx.Err(), seen, n)
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
	return dcs
}
