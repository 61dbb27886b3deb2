package relay

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sharerelay/sharerelay/eos"
	"github.com/sharerelay/sharerelay/txn"
)

// lane is one transactional producer of a worker, with its delivery
// Guard and its background commit.
type lane struct {
	prod  *txn.Producer
	guard eos.Guard
	// stale is set when prod must be replaced before the lane's next
	// transaction: it can no longer begin or abort transactions, or its
	// metadata is stale (a topic deleted and recreated).
	stale bool
	// newProducer creates a producer with the lane's transactional id;
	// the new one re-initialises the producer id, which aborts whatever
	// the old one left open.
	newProducer func(context.Context) (*txn.Producer, error)
	// committing is the lane's background commit, nil when none runs.
	committing chan laneResult
}

// switchLane makes the spare lane current. A worker alternates its
// transactions between two transactional ids: the coordinator is still
// writing the markers of a transaction just committed when the next one
// begins, and a produce into that next transaction under the same id
// meets CONCURRENT_TRANSACTIONS, which the broker retries only after
// add.partitions.to.txn.retry.backoff.ms; under another id it goes ahead
// at once (docs/decisions/two-lanes.md).
func (w *worker) switchLane() {
	if w.spare != nil {
		w.cur, w.spare = w.spare, w.cur
	}
}

// commitInBackground ends the current lane's open transaction, which
// wrote the plans of now, in a goroutine, and then acknowledges the batch
// (finish): accepted when it committed, released otherwise. The lane
// carries the goroutine's result until the worker next switches to it
// (awaitCommit); the lane's producer and Guard are the goroutine's alone
// until then.
//
// The batch's records and outputs are written by then (produce waited for
// every one), and what is left only counts and acknowledges them: their
// payloads are dropped first, so that the records of two batches — the one
// committing and the next one the other lane writes — do not hold their
// fetch responses at once for the length of a commit.
func (w *worker) commitInBackground(ctx context.Context, b *batch, plans []plan, now []int, finish func()) {
	ln := w.cur
	prod, guard := ln.prod, ln.guard
	b.dropPayloads()
	dropPayloads(plans)
	done := make(chan laneResult, 1)
	ln.committing = done
	go func() {
		out := w.commit(ctx, prod, guard, len(now))
		res := laneResult{out: out, batch: batchDone}
		if out.kind == committed {
			w.committed(b, plans, now)
		} else {
			for _, i := range now {
				b.set(i, kgo.AckRelease)
			}
			res.batch = batchFailed
		}
		finish()
		done <- res
	}()
}

// dropPayloads lets go of the keys, values and headers of the plans'
// outputs, keeping how many there are and which are dead letters (see
// commitInBackground).
func dropPayloads(plans []plan) {
	for _, p := range plans {
		for _, o := range p.outs {
			o.Key, o.Value, o.Headers = nil, nil, nil
		}
	}
}

// laneResult is how a lane's background commit ended.
type laneResult struct {
	out   outcome
	batch batchResult
}

// awaitCommit waits for the background commit of the current lane, if one
// is running, and takes its result: a producer to replace (stale), a
// failed batch for the backoff, or fencing, which it returns as an
// outcome (the worker handles it as it would the commit's own).
func (w *worker) awaitCommit() *outcome {
	if w.cur.committing == nil {
		return nil
	}
	r := <-w.cur.committing
	w.cur.committing = nil
	w.cur.stale = w.cur.stale || r.out.stale
	if r.batch == batchFailed {
		w.failedInBackground++
	}
	if r.out.kind == fenced {
		return &outcome{kind: fenced, err: r.out.err} // counted when it ended
	}
	return nil
}

// awaitCommits waits for every lane's background commit (and so for the
// acknowledgement of every batch): at shutdown, before the consumers
// close. A fenced lane is returned as an error.
func (w *worker) awaitCommits() error {
	var errs []error
	for range 2 {
		if out := w.awaitCommit(); out != nil {
			errs = append(errs, w.fenced(out.err))
		}
		w.switchLane()
	}
	return errors.Join(errs...)
}

// ensureProducer replaces the producer when it is stale, retrying (with
// the worker reported not ready) until a new one is ready, ctx ends, or
// the worker is told to stop (a drain does not wait for the cluster). It
// returns an error wrapping txn.ErrFenced when a newer instance owns the
// transactional id, and an error when it gives up.
func (w *worker) ensureProducer(ctx context.Context) error {
	if !w.cur.stale {
		return nil
	}
	w.cur.prod.Close()
	for attempt := 0; ; attempt++ {
		p, err := w.cur.newProducer(ctx)
		if err == nil {
			p.Inherit(w.cur.prod)
			w.cur.prod, w.cur.stale = p, false
			w.m.ProducerResets.WithLabelValues(w.label).Inc()
			w.log.Info("transactional producer replaced")
			return nil
		}
		if errors.Is(err, txn.ErrFenced) {
			return fmt.Errorf("worker %d: %w", w.id, err)
		}
		w.health.trouble(w.id, "creating the transactional producer", err)
		if !w.hold(ctx, min(time.Duration(attempt+1)*500*time.Millisecond, 10*time.Second)) {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return fmt.Errorf("worker %d: stopping without a transactional producer: %w", w.id, err)
		}
	}
}
