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
	for attempt := 0; ; attempt++ {
		err := w.cur.renew(ctx)
		if err == nil {
			w.m.ProducerResets.WithLabelValues(w.label).Inc()
			w.log.Info("transactional producer replaced")
			return nil
		}
		if errors.Is(err, txn.ErrFenced) {
			return fmt.Errorf("worker %d: %w", w.id, err)
		}
		w.health.trouble(w.id, w.producerDoing(), err)
		if !w.hold(ctx, min(time.Duration(attempt+1)*500*time.Millisecond, 10*time.Second)) {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return fmt.Errorf("worker %d: stopping without a transactional producer: %w", w.id, err)
		}
	}
}

// renew closes the lane's producer and replaces it with a new one of its
// transactional id (one attempt), which takes over what the old one knew
// of the spans its transactions wrote (txn.Producer.Inherit); the new
// one's initialisation aborts whatever the old one left open.
func (ln *lane) renew(ctx context.Context) error {
	ln.prod.Close()
	ln.stale = true // until a new one is in place
	p, err := ln.newProducer(ctx)
	if err != nil {
		return err
	}
	p.Inherit(ln.prod)
	ln.prod, ln.stale = p, false
	return nil
}

// otherLane returns the lane on which to write again the committed records
// the current lane's open transaction is about to discard with a span a
// lost marker left open, while that transaction stays open
// (restoreFirst): the spare lane once its background commit has ended,
// its producer replaced if it must be; for a worker with one lane, a lane
// made for the occasion with the transactional id its second lane would
// have, which done closes. It makes one attempt at a new producer: the
// open transaction runs against its timeout meanwhile.
func (w *worker) otherLane(ctx context.Context) (ln *lane, done func(), err error) {
	if w.spare == nil {
		if w.newAside == nil {
			return nil, nil, errors.New("the worker has no second producer")
		}
		p, err := w.newAside(ctx)
		if err != nil {
			return nil, nil, fmt.Errorf("creating a second producer: %w", err)
		}
		return &lane{prod: p}, p.Close, nil
	}
	ln = w.spare
	stale := ln.stale
	if ln.committing != nil {
		r := <-ln.committing
		ln.committing <- r // the worker takes it when it next switches to the lane (awaitCommit)
		if r.out.kind == fenced {
			return nil, nil, fmt.Errorf("the spare producer's last commit: %w", r.out.err)
		}
		stale = stale || r.out.stale
	}
	if stale {
		if err := ln.renew(ctx); err != nil {
			return nil, nil, fmt.Errorf("replacing the spare producer: %w", err)
		}
		w.m.ProducerResets.WithLabelValues(w.label).Inc()
	}
	return ln, func() {}, nil
}
