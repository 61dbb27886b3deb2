package relay

import (
	"context"
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sharerelay/sharerelay/config"
)

// TestRetiredTransactionalIDs: the ids a worker of this instance uses are
// the ones the current settings give it; any other id of the instance
// (more workers before, a second producer before background_commit was
// turned off) is retired, and a transaction of a retired id open in a
// partition the pipeline writes is found, with its coordinator's state.
// Ids of other instances and of the workers in use are left alone.
func TestRetiredTransactionalIDs(t *testing.T) {
	c := fakeCluster(t)
	p := pipeline(t, c, "")
	off := false
	p.Delivery, p.Ledger.Topic, p.Batch.BackgroundCommit = config.ExactlyOnce, "jobs.ledger", &off
	r, err := New(Options{Pipeline: p, Instance: "i1"})
	if err != nil {
		t.Fatal(err)
	}
	inUse := r.inUseTransactionalIDs()
	if want := []string{"sharerelay-test-i1-0", "sharerelay-test-i1-1"}; !slices.Equal(slices.Sorted(maps.Keys(inUse)), want) {
		t.Fatalf("in use: %v, want %v", slices.Sorted(maps.Keys(inUse)), want)
	}
	pattern := r.retiredPattern()
	for id, want := range map[string]bool{
		"sharerelay-test-i1-0.1": true, "sharerelay-test-i1-7": true, "sharerelay-test-i1-12.1": true,
		"sharerelay-test-i10-0": false, "sharerelay-test-i1-x": false, "sharerelay-test-i1-0.1x": false, "other-i1-0": false,
	} {
		if got := pattern.MatchString(id); got != want {
			t.Errorf("pattern %s matches %q: %v, want %v", pattern, id, got, want)
		}
	}

	// Open transactions writing to jobs: a retired id of this instance,
	// an id in use, and an id of another instance.
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	open := func(id string) *kgo.Client {
		cl, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...), kgo.TransactionalID(id), kgo.DefaultProduceTopic("jobs"))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(cl.Close)
		if err := cl.BeginTransaction(); err != nil {
			t.Fatal(err)
		}
		if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte(id)}).FirstErr(); err != nil {
			t.Fatal(err)
		}
		return cl
	}
	retired := open("sharerelay-test-i1-0.1")
	open("sharerelay-test-i1-0")
	open("sharerelay-test-i2-0.1")

	adm := kadm.NewClient(retired)
	spans, busy, err := retiredSpans(ctx, adm, pattern, inUse, []string{"jobs", "jobs.dlq", "jobs.ledger"})
	if err != nil {
		t.Fatal(err)
	}
	if len(spans) != 1 || spans[0].txnID != "sharerelay-test-i1-0.1" || spans[0].state != "Ongoing" || spans[0].tp.Topic != "jobs" || !busy {
		t.Fatalf("spans %v, busy %v: want one Ongoing span of sharerelay-test-i1-0.1 on jobs, busy", spans, busy)
	}

	// Ended, its markers written: nothing open, nothing to watch.
	if err := retired.EndTransaction(ctx, kgo.TryCommit); err != nil {
		t.Fatal(err)
	}
	spans, busy, err = retiredSpans(ctx, adm, pattern, inUse, []string{"jobs", "jobs.dlq", "jobs.ledger"})
	if err != nil || len(spans) != 0 || busy {
		t.Fatalf("after the commit: spans %v, busy %v, err %v; want none", spans, busy, err)
	}
}
