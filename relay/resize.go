package relay

import (
	"context"
	"fmt"
	"time"

	"github.com/sharerelay/sharerelay/internal/failpoint"
)

// A worker's share consumers follow the fleet: when the relay instances in
// the share group change (Relay.watchFleet), each worker moves its
// consumers to the new size at a batch boundary. A share consumer's poll
// size is fixed when it is created, so a resize replaces the consumers:
//
//	quiesceForResize  the fetchers poll no more; a poll in flight comes
//	                  back on its own and is handed over like any other
//	run               writes every poll handed over, as usual (holds,
//	                  pauses and retries included: nothing is released
//	                  because a resize is pending)
//	resize            once the source is exhausted: the background commits
//	                  awaited, so every record is acknowledged; the
//	                  acknowledgements flushed, the group left and the old
//	                  consumers closed; then the new ones created
//
// No record is released by it, and none spends a delivery: the old
// consumers hold nothing when they leave.

// size is the share consumers of one worker and the records each asks for
// in a poll.
type size struct{ consumers, maxRecords int }

// resizeGrace bounds how long a resize waits for a share fetch in flight
// to come back on its own: a broker answers within the fetch's wait
// (client.consumer.fetch_max_wait) when it has no records. Past it the
// fetch is cut short; what it had acquired is handed over all the same.
const resizeGrace = 10 * time.Second

// quiesceForResize starts a resize when the size the fleet asks for is not
// the worker's: its fetchers poll no more once their current poll is
// handed over (resize finishes it once the source is exhausted). A worker
// told to stop does not start one.
func (w *worker) quiesceForResize(ctx context.Context) error {
	if w.resizing || w.want == nil || w.stopping() {
		return nil
	}
	if s := w.want(); s == w.size || s.consumers <= 0 || s.maxRecords <= 0 {
		return nil
	}
	w.resizing = true
	if failpoint.Hit(failpoint.ResizeAbrupt) != nil {
		w.src.stop(0)
		if err := w.awaitCommits(); err != nil {
			return err
		}
		return w.replaceSource(ctx)
	}
	w.log.Debug("resizing share consumers: taking no new polls", "consumers", w.size.consumers, "max_records", w.size.maxRecords)
	w.src.stop(resizeGrace)
	return nil
}

// resize replaces the worker's exhausted source by share consumers of the
// size the fleet asks for now. Every batch taken from the old source is
// acknowledged first: the commits running in the background are awaited
// (it returns their error when a newer instance fenced the worker), and
// replaceSource flushes the acknowledgements.
func (w *worker) resize(ctx context.Context) error {
	if err := w.awaitCommits(); err != nil {
		return err
	}
	return w.replaceSource(ctx)
}

// replaceSource closes the worker's share consumers, which flush their
// acknowledgements and leave the group first (so the new consumers join a
// group in which this instance holds no record), and creates those of the
// size the fleet asks for now. A stop arriving meanwhile stops the new
// source at once.
func (w *worker) replaceSource(ctx context.Context) error {
	closeConsumers(ctx, w, w.src)
	s := w.want()
	src, err := w.newSource(s)
	if err != nil {
		return fmt.Errorf("worker %d: resizing its share consumers: %w", w.id, err)
	}
	w.setSource(src)
	from := w.size
	w.setSize(s)
	w.resizing = false
	w.m.Resizes.WithLabelValues(w.label).Inc()
	w.log.Debug("share consumers replaced", "consumers", s.consumers, "max_records", s.maxRecords,
		"from_consumers", from.consumers, "from_max_records", from.maxRecords)
	return nil
}

// setSize records that the worker's source is of size s: the records a
// batch takes follow it (recordsPerBatch), and the gauges show it.
func (w *worker) setSize(s size) {
	w.size = s
	w.perBatch = recordsPerBatch(s.consumers, s.maxRecords)
	w.m.PollRecords.WithLabelValues(w.label).Set(float64(s.maxRecords))
	w.m.ShareConsumers.WithLabelValues(w.label).Set(float64(s.consumers))
}

// setSource makes src the worker's source; when the worker was told to
// stop meanwhile, src is stopped at once (it will hand over nothing).
func (w *worker) setSource(src *shareSource) {
	w.srcMu.Lock()
	defer w.srcMu.Unlock()
	w.src = src
	select {
	case <-w.quit:
		src.stop(0)
	default:
	}
}

// stop tells the worker to take no new records and to drain what it holds:
// its source polls no more, and a poll in flight gets up to grace to come
// back (shareSource.stop).
func (w *worker) stop(grace time.Duration) {
	w.srcMu.Lock()
	defer w.srcMu.Unlock()
	w.quitOnce.Do(func() { close(w.quit) })
	w.src.stop(grace)
}
