package relay

import (
	"fmt"
	"log/slog"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/sharerelay/sharerelay/metrics"
)

// outageLogEvery rate-limits the "still paused" log line of an outage.
const outageLogEvery = 30 * time.Second

// health is what /readyz reports: the relay is ready only while it has
// started and every worker can make progress. It logs each outage when it
// starts, every outageLogEvery while it lasts (when its cause changes,
// too), and when it ends, and keeps the paused gauge.
type health struct {
	log *slog.Logger
	m   *metrics.Metrics

	mu       sync.Mutex
	starting string // why the relay is not running yet; "" once it is
	workers  map[int]*outage
	stopping bool // told to stop: the workers drain
	stopped  bool
}

// outage is one worker's current trouble.
type outage struct {
	reason, cause string
	since, logged time.Time
}

// sourceSlot is the health slot of the source topics (the topic-ID
// watcher); workers use their ids, from 0.
const sourceSlot = -1

// slotName names a health slot in /readyz: "worker 2", or "source topics".
func slotName(id int) string {
	if id == sourceSlot {
		return "source topics"
	}
	return fmt.Sprintf("worker %d", id)
}

// slotLabel is a health slot's worker label value in worker_paused: the
// worker's id, or "source".
func slotLabel(id int) string {
	if id == sourceSlot {
		return "source"
	}
	return strconv.Itoa(id)
}

// slotValue is a health slot in log lines: the worker's id (a number, as
// in the workers' own lines), or "source".
func slotValue(id int) any {
	if id == sourceSlot {
		return "source"
	}
	return id
}

func newHealth(log *slog.Logger, m *metrics.Metrics) *health {
	return &health{log: log, m: m, starting: "starting", workers: map[int]*outage{}}
}

// Ready reports whether the relay can make progress, and if not why.
func (h *health) Ready() (bool, string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	switch {
	case h.stopped:
		return false, "stopped"
	case h.stopping:
		return false, "stopping: writing the records the workers hold (batch.drain_timeout)"
	case h.starting != "":
		return false, h.starting
	}
	if len(h.workers) == 0 {
		return true, "ready"
	}
	ids := make([]int, 0, len(h.workers))
	for id := range h.workers {
		ids = append(ids, id)
	}
	sort.Ints(ids)
	var parts []string
	for _, id := range ids {
		o := h.workers[id]
		parts = append(parts, fmt.Sprintf("%s: %s for %s: %s", slotName(id), o.reason, time.Since(o.since).Round(time.Second), o.cause))
	}
	return false, strings.Join(parts, "; ")
}

// setStarting records why the relay is not running yet ("" once it runs).
func (h *health) setStarting(why string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.starting = why
	h.setReadyGauge()
}

// drain marks the relay told to stop (not ready): its workers write what
// they hold and take nothing new.
func (h *health) drain() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.stopping = true
	h.setReadyGauge()
}

// stop marks the relay stopped (not ready).
func (h *health) stop() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.stopped = true
	h.setReadyGauge()
}

// paused records that worker id is paused (holding its batch, taking no
// records) for reason, because of cause.
func (h *health) paused(id int, reason string, cause error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	now := time.Now()
	o := h.workers[id]
	switch {
	case o == nil:
		o = &outage{reason: reason, cause: cause.Error(), since: now, logged: now}
		h.workers[id] = o
		msg := "worker paused: taking no records until it can write again"
		if id == sourceSlot {
			msg = "source unavailable: no records come until it is back"
		}
		h.log.Warn(msg, "worker", slotValue(id), "reason", reason, "err", cause)
		h.m.Paused.WithLabelValues(slotLabel(id), reason).Set(1)
		h.setReadyGauge()
		return
	case o.reason != reason:
		h.m.Paused.DeleteLabelValues(slotLabel(id), o.reason)
		h.m.Paused.WithLabelValues(slotLabel(id), reason).Set(1)
		o.reason = reason
		o.logged = time.Time{}
	}
	if c := cause.Error(); c != o.cause || now.Sub(o.logged) >= outageLogEvery {
		o.cause, o.logged = c, now
		h.log.Warn("worker still paused", "worker", slotValue(id), "reason", reason, "for", now.Sub(o.since).Round(time.Second), "err", cause)
	}
}

// trouble is paused for an error met outside a transaction (polling,
// creating the producer).
func (h *health) trouble(id int, doing string, err error) {
	h.paused(id, doing+" failed", err)
}

// fine records that worker id makes progress again.
func (h *health) fine(id int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	o := h.workers[id]
	if o == nil {
		return
	}
	delete(h.workers, id)
	h.m.Paused.DeleteLabelValues(slotLabel(id), o.reason)
	h.log.Info("worker resumed", "worker", slotValue(id), "after", time.Since(o.since).Round(time.Millisecond), "reason", o.reason)
	h.setReadyGauge()
}

// setReadyGauge mirrors Ready in the ready gauge; h.mu is held.
func (h *health) setReadyGauge() {
	v := 0.0
	if !h.stopped && !h.stopping && h.starting == "" && len(h.workers) == 0 {
		v = 1
	}
	h.m.Ready.Set(v)
}
