package relay

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/sharerelay/sharerelay/metrics"
	"github.com/sharerelay/sharerelay/txn"
)

// A lost marker's records are written again on the spare lane while the
// current lane's transaction is open (otherLane): the spare lane is lent
// only once its background commit has ended, and the commit's result stays
// for the worker to take when it next switches to that lane — a fenced
// commit lends nothing and still stops the worker then.
func TestTheSpareLaneIsLentOnlyOnceItsCommitEndedAndKeepsTheResult(t *testing.T) {
	for _, tc := range []struct {
		name     string
		result   outcome
		lent     bool
		awaitErr bool
	}{
		{"a committed background commit lends the lane", outcome{kind: committed}, true, false},
		{"a fenced background commit lends nothing and is still reported", outcome{kind: fenced, err: txn.ErrFenced}, false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := &worker{label: "0", m: metrics.New(prometheus.NewRegistry(), "lanes"), log: quietLogger(),
				cur: &lane{}, spare: &lane{committing: make(chan laneResult, 1)}}
			done := make(chan struct{})
			go func() {
				time.Sleep(50 * time.Millisecond)
				close(done)
				w.spare.committing <- laneResult{out: tc.result, batch: batchDone}
			}()
			ln, release, err := w.otherLane(context.Background())
			select {
			case <-done:
			default:
				t.Fatal("otherLane returned before the spare lane's commit ended")
			}
			if lent := err == nil && ln == w.spare; lent != tc.lent {
				t.Fatalf("lent %v (err %v), want %v", lent, err, tc.lent)
			}
			if release != nil {
				release()
			}
			w.switchLane()
			if len(w.cur.committing) != 1 {
				t.Fatal("the lane's commit result is gone: the worker would wait for it for ever")
			}
			out := w.awaitCommit()
			if got := out != nil && errors.Is(out.err, txn.ErrFenced); got != tc.awaitErr {
				t.Fatalf("the worker's own look at the lane's commit: fenced %v (%v), want %v", got, out, tc.awaitErr)
			}
			if w.cur.committing != nil {
				t.Fatal("the lane's commit result was not taken by awaitCommit")
			}
		})
	}
}
