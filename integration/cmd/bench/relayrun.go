package main

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sharerelay/sharerelay/config"
	"github.com/sharerelay/sharerelay/eos"
	"github.com/sharerelay/sharerelay/metrics"
	"github.com/sharerelay/sharerelay/relay"
)

// relayInstance is the instance name of every in-process relay; pipeline
// names are unique per run, so transactional ids never collide.
const relayInstance = "bench"

// runRelay runs the relay in-process on the trial's pipeline until every
// record is acknowledged, then stops it. It returns the seconds the
// workers spent per phase (sharerelay_phase_seconds) and the acquire
// mode the relay ran with.
func (b *bench) runRelay(ctx context.Context, t trial, tr *tracker, tc *traceCollector) (map[string]float64, string, error) {
	p, err := b.pipeline(t)
	if err != nil {
		return nil, "", err
	}
	r, closeRelay, err := b.newRelay(ctx, p, tc, nil)
	if err != nil {
		return nil, "", err
	}
	rctx, cancel := context.WithCancel(ctx)
	var (
		wg     sync.WaitGroup
		runErr error
	)
	failed := make(chan error, 1)
	wg.Go(func() {
		runErr = r.Run(rctx)
		if rctx.Err() == nil {
			failed <- fmt.Errorf("the relay returned: %v", runErr)
		}
	})
	wg.Go(func() { followMetrics(rctx, r.Metrics(), t.workers, tr) })

	err = b.await(ctx, t, tr, failed)
	// The phases up to the last acknowledgement, not the shutdown.
	phases := phaseSeconds(r.Metrics())
	mode := config.AcquireRecordLimit
	var whole dto.Metric
	if r.Metrics().AcquireWholeBatches.Write(&whole) == nil && whole.GetGauge().GetValue() == 1 {
		mode = config.AcquireBatchOptimized
	}
	cancel()
	wg.Wait()
	closeRelay()
	tc.relayBatches(r.Metrics(), t.workers)
	if err == nil && runErr != nil {
		err = fmt.Errorf("stopping the relay: %w", runErr)
	}
	return phases, mode, err
}

// phaseOrder is the order phases are printed in.
var phaseOrder = []string{metrics.PhasePoll, metrics.PhaseIdle, metrics.PhaseTransform, metrics.PhaseProduce,
	metrics.PhaseClaimCheck, metrics.PhaseCommit, metrics.PhaseAck}

// phaseSeconds reads the seconds spent per phase from the relay's
// sharerelay_phase_seconds histogram.
func phaseSeconds(m *metrics.Metrics) map[string]float64 {
	out := make(map[string]float64, len(phaseOrder))
	for _, ph := range phaseOrder {
		var d dto.Metric
		if h, ok := m.PhaseSeconds.WithLabelValues(ph).(prometheus.Metric); ok && h.Write(&d) == nil {
			out[ph] = d.GetHistogram().GetSampleSum()
		}
	}
	return out
}

// formatPhases prints each phase's share of the time the phases add up to
// (the workers' time), with the seconds.
func formatPhases(ph map[string]float64) string {
	total := 0.0
	for _, v := range ph {
		total += v
	}
	if total == 0 {
		return "none"
	}
	var parts []string
	for _, k := range phaseOrder {
		parts = append(parts, fmt.Sprintf("%s %.0f%% (%.2fs)", k, 100*ph[k]/total, ph[k]))
	}
	return strings.Join(parts, ", ")
}

// newRelay creates the relay of pipeline p. With tracing it wraps the
// delivery Guard to time the claim. close releases what newRelay opened;
// call it after Run returned.
func (b *bench) newRelay(_ context.Context, p *config.Pipeline, tc *traceCollector, onReady func()) (*relay.Relay, func(), error) {
	opts := relay.Options{
		Pipeline:   p,
		Instance:   relayInstance,
		Registerer: prometheus.NewRegistry(),
		Logger:     b.relayLog,
		ClientOpts: []kgo.Opt{tc.hooks()},
		OnReady:    onReady,
	}
	if tc.enabled {
		opts.WrapGuard = func(g eos.Guard) eos.Guard { return &timedGuard{Guard: g, tc: tc} }
	}
	r, err := relay.New(opts)
	if err != nil {
		return nil, nil, fmt.Errorf("creating the relay: %w", err)
	}
	return r, func() {}, nil
}

// followMetrics feeds the relay's counters of records polled and records
// accepted into tr every millisecond until ctx ends.
func followMetrics(ctx context.Context, m *metrics.Metrics, workers int, tr *tracker) {
	var polled, accepted []prometheus.Counter
	for i := range workers {
		w := strconv.Itoa(i)
		polled = append(polled, m.RecordsPolled.WithLabelValues(w))
		accepted = append(accepted, m.Acks.WithLabelValues(w, metrics.AckAccept))
	}
	follow(ctx, func(int64) time.Duration { return time.Millisecond }, tr, func() (int64, int64, bool) {
		return sumCounters(polled), sumCounters(accepted), true
	})
}

// follow reads the relay's totals of records polled and records accepted,
// waiting every(the records accepted so far) before each read, and feeds
// what they grew by into tr, until ctx ends. A read that fails (ok false)
// is skipped.
func follow(ctx context.Context, every func(accepted int64) time.Duration, tr *tracker, read func() (polled, accepted int64, ok bool)) {
	wait := time.NewTimer(every(0))
	defer wait.Stop()
	var seenPolled, seenAccepted int64
	for {
		select {
		case <-ctx.Done():
			return
		case <-wait.C:
		}
		if p, a, ok := read(); ok {
			tr.receive(int(p - seenPolled))
			tr.ack(int(a - seenAccepted))
			seenPolled, seenAccepted = max(seenPolled, p), max(seenAccepted, a)
		}
		wait.Reset(every(seenAccepted))
	}
}

func sumCounters(cs []prometheus.Counter) int64 {
	var sum float64
	for _, c := range cs {
		var m dto.Metric
		if c.Write(&m) == nil {
			sum += m.GetCounter().GetValue()
		}
	}
	return int64(sum)
}
