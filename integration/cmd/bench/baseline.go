package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"

	"github.com/sharerelay/sharerelay/integration/kafkatest"
)

// latencyRound is one round of the latency runs: each relay contender of
// this bench and, with -latency-baseline, the baseline bench's, one after
// the other on the same broker. A shared machine's speed drifts within
// minutes, so only runs side by side compare.
type latencyRound struct {
	Round    int             `json:"round"`
	Now      []latencyResult `json:"now"`
	Baseline []latencyResult `json:"baseline,omitempty"`
}

// latencyRounds runs -latency-rounds rounds of the latency runs at the
// first size. The baseline goes first in odd rounds and last in even ones,
// so that a drift of the machine within a round favours neither.
func (b *bench) latencyRounds(ctx context.Context, size int) ([]latencyRound, error) {
	var rounds []latencyRound
	for r := 1; r <= b.opts.latencyRounds; r++ {
		progress("latency round %d of %d", r, b.opts.latencyRounds)
		lr := latencyRound{Round: r}
		base := func() error {
			if b.opts.latencyBaseline == "" {
				return nil
			}
			var err error
			lr.Baseline, err = b.baselineLatency(ctx, size)
			return err
		}
		if r%2 == 1 {
			if err := base(); err != nil {
				return rounds, err
			}
		}
		for _, c := range []contender{relayALO, relayEOS} {
			l, err := b.latency(ctx, c, size)
			if err != nil {
				return rounds, fmt.Errorf("latency of %s: %w", c.name, err)
			}
			lr.Now = append(lr.Now, l)
		}
		if r%2 == 0 {
			if err := base(); err != nil {
				return rounds, err
			}
		}
		rounds = append(rounds, lr)
	}
	return rounds, nil
}

// baselineLatency runs the baseline bench (-latency-baseline, built from
// an earlier commit) against this bench's broker: a throughput table of
// a few records, which its flags cannot leave out, then its latency runs
// with this bench's rate, duration and workers. It returns its latency
// results.
func (b *bench) baselineLatency(ctx context.Context, size int) ([]latencyResult, error) {
	dir, err := os.MkdirTemp("", "bench-baseline-")
	if err != nil {
		return nil, fmt.Errorf("baseline: %w", err)
	}
	defer os.RemoveAll(dir)
	out := filepath.Join(dir, "results.json")
	cmd := exec.CommandContext(ctx, b.opts.latencyBaseline,
		"-records", "2000", "-runs", "1", "-warmup=false", "-sizes", strconv.Itoa(size),
		"-workers", strconv.Itoa(b.opts.workers), "-rate", strconv.Itoa(b.opts.rate),
		"-latency-duration", b.opts.latencyDuration.String(), "-json", out)
	cmd.Env = append(os.Environ(), kafkatest.EnvBootstrap+"="+strings.Join(b.br.seeds, ","))
	var log bytes.Buffer
	cmd.Stdout, cmd.Stderr = &log, &log
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
	cmd.WaitDelay = processStopTimeout
	progress("latency baseline: %s", b.opts.latencyBaseline)
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("the baseline bench %s: %w; its last output:\n%s", b.opts.latencyBaseline, err, tail(&log, 20))
	}
	var res struct {
		Latency []latencyResult `json:"latency"`
	}
	raw, err := os.ReadFile(out)
	if err == nil {
		err = json.Unmarshal(raw, &res)
	}
	if err != nil || len(res.Latency) == 0 {
		return nil, fmt.Errorf("the baseline bench %s wrote no latency results (%v); its last output:\n%s", b.opts.latencyBaseline, err, tail(&log, 20))
	}
	for _, l := range res.Latency {
		progress("latency baseline %s: %d records, p50 %.1f ms, p90 %.1f ms, p99 %.1f ms, max %.1f ms", l.Contender, l.Records, l.P50, l.P90, l.P99, l.Max)
	}
	return res.Latency, nil
}

// tail returns the last n lines of r.
func tail(r io.Reader, n int) string {
	raw, _ := io.ReadAll(r)
	lines := strings.Split(strings.TrimRight(string(raw), "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

// latencyMedians returns, per contender in the order of the first round,
// the median of each figure over the rounds (which: Now or Baseline).
func latencyMedians(rounds []latencyRound, which func(latencyRound) []latencyResult) []latencyResult {
	var names []string
	by := make(map[string][]latencyResult)
	for _, r := range rounds {
		for _, l := range which(r) {
			if _, ok := by[l.Contender]; !ok {
				names = append(names, l.Contender)
			}
			by[l.Contender] = append(by[l.Contender], l)
		}
	}
	var out []latencyResult
	for _, name := range names {
		ls := by[name]
		m := latencyResult{Contender: name, Size: ls[0].Size, Rate: ls[0].Rate, Duration: ls[0].Duration}
		pick := func(f func(latencyResult) float64) float64 {
			xs := make([]float64, len(ls))
			for i, l := range ls {
				xs[i] = f(l)
			}
			slices.Sort(xs)
			return median(xs)
		}
		for _, l := range ls {
			m.Records += l.Records
			m.Missing += l.Missing
		}
		m.P50 = pick(func(l latencyResult) float64 { return l.P50 })
		m.P90 = pick(func(l latencyResult) float64 { return l.P90 })
		m.P99 = pick(func(l latencyResult) float64 { return l.P99 })
		m.Max = pick(func(l latencyResult) float64 { return l.Max })
		out = append(out, m)
	}
	return out
}

// pairedP99 is the median over the rounds of contender's p99 over the
// baseline's p99 in the same round; 0 without a baseline.
func pairedP99(rounds []latencyRound, contender string) float64 {
	var xs []float64
	for _, r := range rounds {
		now, base := findLatency(r.Now, contender), findLatency(r.Baseline, contender)
		if now != nil && base != nil && base.P99 > 0 {
			xs = append(xs, now.P99/base.P99)
		}
	}
	if len(xs) == 0 {
		return 0
	}
	slices.Sort(xs)
	return median(xs)
}

func findLatency(ls []latencyResult, contender string) *latencyResult {
	for i := range ls {
		if ls[i].Contender == contender {
			return &ls[i]
		}
	}
	return nil
}
