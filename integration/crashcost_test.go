package integration

import (
	"context"
	"regexp"
	"slices"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sharerelay/sharerelay/integration/harness"
	"github.com/sharerelay/sharerelay/internal/failpoint"
	"github.com/sharerelay/sharerelay/lineage"
)

// limitsLine is the relay's start-up log line with the delivery limit it
// found and the share consumers each worker runs.
var limitsLine = regexp.MustCompile(`msg="delivery limits".* delivery_count_limit=(\d+) .* consumers=(\d+) `)

// crashHeld kills a relay of p (SIGKILL before its first commit) while
// its share consumers hold every record of a drained topic and the rest
// wait in the broker with fetches of their own, the case where a crash
// costs a record the most deliveries: the dead connections' waiting
// fetches acquire the released records again. It returns the delivery
// limit and the consumers a worker ran, from the relay's log.
func crashHeld(t *testing.T, p *harness.Pipeline) (limit, consumers int) {
	t.Helper()
	a := startRelay(t, p, "a", fp(failpoint.BeforeCommit+"=kill@1"))
	if code, err := a.Wait(2 * time.Minute); err != nil || code != 128+int(syscall.SIGKILL) {
		t.Fatalf("relay a: exit %d, %v; want killed by the failpoint", code, err)
	}
	m := limitsLine.FindStringSubmatch(a.LogTail(1 << 20))
	if m == nil {
		t.Fatalf("relay a logged no delivery limits:\n%s", a.LogTail(4000))
	}
	limit, _ = strconv.Atoi(m[1])
	consumers, _ = strconv.Atoi(m[2])
	return limit, consumers
}

// deliveriesAfterCrash reads the group with a plain share consumer for
// lockFor plus a margin (the dead connections' acquisitions expire by
// then) and returns the delivery count of each record it gets, accepting
// them.
func deliveriesAfterCrash(t *testing.T, p *harness.Pipeline, lockFor time.Duration) []int32 {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(p.SourceSeeds...), kgo.ShareGroup(p.Group), kgo.ConsumeTopics(p.Source))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), lockFor+15*time.Second)
	defer cancel()
	var counts []int32
	for ctx.Err() == nil {
		cl.PollRecords(ctx, 500).EachRecord(func(r *kgo.Record) { counts = append(counts, r.DeliveryCount()) })
	}
	return counts
}

// A crash costs a record more than the delivery the crashed relay held:
// the fetches its other share consumers had left waiting in the broker
// acquire the released records for the dead connections. Measured here
// with 2 workers × 4 consumers holding every record of a drained topic
// (delivery limit 10, so that nothing is archived on the way): the
// records come back on their third delivery or later, and never later
// than one delivery per share consumer of the crashed instance — the
// bound sharegroup.ConsumersPerWorker and the raised delivery limit
// (sharegroup.ConfigsToSet) rest on. Should a Kafka release stop
// re-acquiring for dead connections, the first check fails, and both can
// be revisited.
func TestRealBrokerACrashCostsARecordMoreThanTheDeliveryItHeld(t *testing.T) {
	seeds := seedsFor(t)
	const n = 100
	p := newPipe(t, seeds, harness.PipelineOptions{
		Workers: 2, Consumers: 4, MaxRecords: 50,
		GroupConfigs: map[string]string{"share.delivery.count.limit": "10", "share.record.lock.duration.ms": "6000"},
	})
	seedOrders(t, p, 1, n)
	limit, consumers := crashHeld(t, p)
	if limit != 10 || consumers != 4 {
		t.Fatalf("relay a ran with delivery limit %d and %d consumers a worker, want 10 and 4", limit, consumers)
	}
	counts := deliveriesAfterCrash(t, p, 6*time.Second)
	if len(counts) != n {
		t.Fatalf("%d records read after the crash, want %d", len(counts), n)
	}
	most := slices.Max(counts)
	t.Logf("after the crash of 8 share consumers holding %d records, the records come back on delivery %d at most (min %d)", n, most, slices.Min(counts))
	if most <= 2 {
		t.Fatalf("every record came back on its second delivery at most: the crash cost only the delivery it held (the broker changed: revisit sharegroup.ConsumersPerWorker)")
	}
	if most > 1+8+1 {
		t.Fatalf("a record came back on delivery %d: more than one per share consumer of the crashed instance", most)
	}
}

// The relay raises the group's delivery limit for its share consumers
// (sharegroup.ConfigsToSet): with 2 workers × 4 consumers and nothing in
// the file, the limit becomes the broker's maximum of 10 and each worker
// keeps its 4 consumers. A crash while they hold every record then loses
// nothing, and a failing record is still dead-lettered after 3 attempts,
// as on the broker's default limit, not after 8.
func TestRealBrokerTheRaisedDeliveryLimitKeepsConsumersAndLosesNothingInACrash(t *testing.T) {
	seeds := seedsFor(t)
	const n = 100
	p := newPipe(t, seeds, harness.PipelineOptions{
		Workers: 2, Consumers: 4, MaxRecords: 50,
		GroupConfigs: map[string]string{"share.record.lock.duration.ms": "6000"},
		Transforms:   `[{type: fail, kind: retry, reason: always fails, when: {field: order_id, modulo: 20, remainder: 0}}]`,
	})
	seedOrders(t, p, 1, n)
	limit, consumers := crashHeld(t, p)
	if limit != 10 || consumers != 4 {
		t.Fatalf("relay a ran with delivery limit %d and %d consumers a worker, want 10 and 4", limit, consumers)
	}
	if got := groupConfig(t, p, "share.delivery.count.limit"); got != "10" {
		t.Fatalf("the group's share.delivery.count.limit is %q, want 10 (raised by the relay)", got)
	}
	startRelay(t, p, "b")
	o := settled(t, p, n, 2*time.Minute)
	exactlyOnce(t, o, n, n/20)

	// Seed more failing records on the running relay b: each is
	// dead-lettered on its third delivery, the default attempts on
	// the broker's limit of 5.
	seedOrders(t, p, n+1, 2*n)
	o = settled(t, p, 2*n, 2*time.Minute)
	exactlyOnce(t, o, 2*n, 2*n/20)
	counts := dlqDeliveryCounts(t, p)
	for id := n + 20; id <= 2*n; id += 20 {
		if c := counts[strconv.Itoa(id)]; c != "3" {
			t.Errorf("order %d dead-lettered on delivery %q, want 3", id, c)
		}
	}
}

// dlqDeliveryCounts reads p's dead-letter topic and returns each dead
// letter's delivery count header, by order id.
func dlqDeliveryCounts(t *testing.T, p *harness.Pipeline) map[string]string {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(p.Seeds...), kgo.ConsumeTopics(p.DeadLetter), kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	out := map[string]string{}
	for ctx.Err() == nil {
		cl.PollFetches(ctx).EachRecord(func(r *kgo.Record) {
			for _, h := range r.Headers {
				if h.Key == lineage.HeaderDLQDeliveryCount {
					out[string(r.Key)] = string(h.Value)
				}
			}
		})
	}
	return out
}
