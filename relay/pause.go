package relay

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/sharerelay/sharerelay/eos"
	"github.com/sharerelay/sharerelay/internal/kafkaerr"
)

// pause holds the worker after a write failed for a reason retrying will
// cure (the cluster unreachable or slow, a topic missing or not writable,
// an earlier claim of its records not settled yet):
// it reports the worker not ready with the reason and waits, with a
// capped backoff, until the topics the pipeline writes are there again.
// It returns false when ctx ends or the worker is told to stop first: a
// drain at shutdown writes what can be written, and holding records for
// a cluster that does not take them would only delay the stop.
func (w *worker) pause(ctx context.Context, cause error) bool {
	class := kafkaerr.Classify(cause)
	reason := "cluster unavailable"
	switch {
	case errors.Is(cause, errHangingSpan):
		reason = "hanging transaction"
	case errors.Is(cause, eos.ErrClaimWaitTimeout):
		reason = "claim blocked"
	case class == kafkaerr.Destination:
		reason = "destination unavailable"
	case w.crossCluster:
		// Writes go to the sink: say which of the two is out.
		reason = "sink cluster unavailable"
	}
	w.health.paused(w.id, reason, cause)
	for attempt := 1; ; attempt++ {
		if !w.hold(ctx, min(time.Duration(attempt)*500*time.Millisecond, 15*time.Second)) {
			return false
		}
		if err := w.ensureProducer(ctx); err != nil || ctx.Err() != nil || w.stopping() {
			return false
		}
		if err := w.probe(ctx); err != nil {
			w.health.paused(w.id, reason, err)
			continue
		}
		return true // try the transaction again
	}
}

// probe checks that the topics the pipeline writes exist and answer.
func (w *worker) probe(ctx context.Context) error {
	pctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	td, err := kadm.NewClient(w.cur.prod.Client()).ListTopics(pctx, w.writes...)
	if err != nil {
		return err
	}
	for _, t := range w.writes {
		d, ok := td[t]
		switch {
		case !ok:
			return fmt.Errorf("topic %s does not exist", t)
		case d.Err != nil:
			return fmt.Errorf("topic %s: %w", t, d.Err)
		}
	}
	return nil
}

// hold waits d, or less when ctx ends or the worker is told to stop; it
// reports whether it waited all of d. The backoffs of a worker use it: a
// worker told to stop writes what it holds without waiting, or releases
// it.
func (w *worker) hold(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
	case <-w.quit:
	}
	return false
}

// stopping reports whether the worker has been told to stop: it takes no
// new records, and writes (drains) those it holds.
func (w *worker) stopping() bool {
	select {
	case <-w.quit:
		return true
	default:
		return false
	}
}

// pollDoing names what failed when a poll fails, for the not-ready reason:
// with two clusters, on which one.
func (w *worker) pollDoing() string {
	if w.crossCluster {
		return "polling the share group on the source cluster"
	}
	return "polling the share group"
}

// producerDoing is pollDoing for creating a transactional producer, on
// the sink cluster.
func (w *worker) producerDoing() string {
	if w.crossCluster {
		return "creating the transactional producer on the sink cluster"
	}
	return "creating the transactional producer"
}
