package relay

import (
	"bytes"
	"context"
	"slices"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sharerelay/sharerelay/internal/kfaketest"
	"github.com/sharerelay/sharerelay/metrics"
	"github.com/sharerelay/sharerelay/txn"
)

// sizingWorker is a worker with what the size checks and dead letters
// use: metrics, a log, a dead-letter topic and a producer (a dead letter
// names the producer's transactional id).
func sizingWorker(t *testing.T) *worker {
	t.Helper()
	c := kfaketest.Cluster(t, kfake.SeedTopics(1, "jobs", "jobs.dlq"))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	prod, err := txn.New(ctx, txn.Config{Seeds: c.ListenAddrs(), TransactionalID: "sizing-0", TransactionTimeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(prod.Close)
	return &worker{
		label: "0", pipeline: "sizing", outputTopic: "jobs", dlqTopic: "jobs.dlq",
		limits: &limits{}, m: metrics.New(prometheus.NewRegistry(), "sizing"),
		log: quietLogger(), now: time.Now, cur: &lane{prod: prod},
	}
}

// sizingBatch is a batch of one source record a value size, each planned
// as one output of that size to jobs.
func sizingBatch(sizes ...int) (*batch, []plan) {
	b, p := &batch{}, &poll{}
	plans := make([]plan, len(sizes))
	for i, n := range sizes {
		v := bytes.Repeat([]byte("x"), n)
		p.recs = append(p.recs, &kgo.Record{Topic: "orders", Offset: int64(i), Value: v})
		plans[i] = plan{outs: []*kgo.Record{{Topic: "jobs", Value: v}}}
	}
	b.add(p)
	return b, plans
}

func TestAnOutputTooLargeForItsTopicBecomesADeadLetterBeforeAnyWrite(t *testing.T) {
	w := sizingWorker(t)
	b, plans := sizingBatch(100, 5000, 200)
	bg := newBudget(map[string]int{"jobs": 1000, "jobs.dlq": 1 << 20}, nil, 1<<20)
	pending := w.deadLetterTooLarge(b, plans, []int{0, 1, 2}, bg)
	if !slices.Equal(pending, []int{0, 1, 2}) {
		t.Fatalf("pending %v; want every record still to write", pending)
	}
	if !plans[1].deadLetter || len(plans[1].outs) != 1 || plans[1].outs[0].Topic != "jobs.dlq" {
		t.Fatalf("the too large record's plan is %+v; want one dead letter to jobs.dlq", plans[1])
	}
	if plans[0].deadLetter || plans[2].deadLetter {
		t.Fatalf("records that fit were dead-lettered")
	}
	if b.unresolved() != 3 {
		t.Fatalf("%d records acknowledged; the size check must leave every acknowledgement to the commit", 3-b.unresolved())
	}
}

func TestARecordNotEvenACutDownDeadLetterFitsIsReleasedAndLeftOut(t *testing.T) {
	w := sizingWorker(t)
	b, plans := sizingBatch(100, 5000, 200)
	// The dead-letter topic takes less than a dead letter's headers alone.
	bg := newBudget(map[string]int{"jobs": 1000, "jobs.dlq": 150}, nil, 1<<20)
	pending := w.deadLetterTooLarge(b, plans, []int{0, 1, 2}, bg)
	if !slices.Equal(pending, []int{0, 2}) {
		t.Fatalf("pending %v; want [0 2]: the record nothing fits is left out", pending)
	}
	if b.acks[1] != kgo.AckRelease || !plans[1].unwritable() {
		t.Fatalf("record 1: ack %v, plan %+v; want released, unwritable", b.acks[1], plans[1])
	}
	if b.acks[0] != 0 || b.acks[2] != 0 {
		t.Fatalf("records that fit were acknowledged: %v", b.acks)
	}
}

func TestFitOnlySplitsWhatOneTransactionTakes(t *testing.T) {
	b, plans := sizingBatch(400, 400, 400, 400)
	// The client's batches are larger than the topic takes: one batch of
	// the topic's limit a transaction.
	bg := newBudget(map[string]int{"jobs": 1000}, nil, 1<<20)
	now, later := bg.fit(plans, []int{0, 1, 2, 3})
	if !slices.Equal(now, []int{0, 1}) || !slices.Equal(later, []int{2, 3}) {
		t.Fatalf("now %v, later %v; want [0 1] and [2 3]", now, later)
	}
	if b.unresolved() != 4 || slices.ContainsFunc(plans, func(p plan) bool { return p.deadLetter }) {
		t.Fatalf("fit changed a plan or an acknowledgement")
	}
	// One plan larger than the budget still goes alone.
	_, plans = sizingBatch(900, 900)
	now, later = newBudget(map[string]int{"jobs": 1000}, nil, 1<<20).fit(plans, []int{0, 1})
	if !slices.Equal(now, []int{0}) || !slices.Equal(later, []int{1}) {
		t.Fatalf("now %v, later %v; want [0] and [1]", now, later)
	}
}
