package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"strings"
	"time"
)

// results is everything measured, as written by -json.
type results struct {
	Started    time.Time       `json:"started"`
	Elapsed    string          `json:"elapsed"`
	Broker     string          `json:"broker"`
	Records    int             `json:"records"`
	Runs       int             `json:"runs"`
	Workers    int             `json:"workers"`
	Sizes      []int           `json:"sizes"`
	Throughput []sizeResult    `json:"throughput"`
	Latency    []latencyResult `json:"latency,omitempty"`
	EOSOverALO float64         `json:"eos_over_alo"`
}

// sizeResult is the throughput of every contender for one value size.
type sizeResult struct {
	Size       int                `json:"size"`
	Records    int                `json:"records"`
	Contenders []contenderResult  `json:"contenders"`
	Ratios     map[string]float64 `json:"ratios"`
}

// contenderResult summarises a contender's runs.
type contenderResult struct {
	Name       string      `json:"name"`
	Runs       []runResult `json:"runs"`
	Median     float64     `json:"median_rec_per_s"`
	Min        float64     `json:"min_rec_per_s"`
	Max        float64     `json:"max_rec_per_s"`
	RatioVsRaw float64     `json:"ratio_vs_raw"`
}

// runResult is one run of one contender.
type runResult struct {
	Run       int     `json:"run"`
	Seconds   float64 `json:"seconds"`
	RecPerSec float64 `json:"rec_per_s"`
	Warning   string  `json:"warning,omitempty"`
}

// latencyResult is the latency of one relay contender.
type latencyResult struct {
	Contender string  `json:"contender"`
	Size      int     `json:"size"`
	Rate      int     `json:"rate"`
	Duration  string  `json:"duration"`
	Records   int     `json:"records"`
	Missing   int     `json:"missing"`
	P50       float64 `json:"p50_ms"`
	P90       float64 `json:"p90_ms"`
	P99       float64 `json:"p99_ms"`
	Max       float64 `json:"max_ms"`
}

// throughput loads a source topic of size-byte values once and runs every
// contender over it -runs times, interleaved.
func (b *bench) throughput(ctx context.Context, size int) (sizeResult, error) {
	sr := sizeResult{Size: size, Records: b.opts.records}
	prefix := fmt.Sprintf("%dB", size)
	src := b.name(prefix, "src")
	created := []string{src}
	defer func() { b.deleteTopics(created...) }()
	if err := b.createTopic(ctx, src, sourcePartitions, nil); err != nil {
		return sr, err
	}
	if err := b.load(ctx, src, size, b.opts.records); err != nil {
		return sr, err
	}

	runs := make(map[string][]runResult)
	for run := 1; run <= b.opts.runs; run++ {
		progress("%d B values, run %d of %d", size, run, b.opts.runs)
		for _, c := range contenders {
			t := trial{c: c, size: size, run: run, source: src, n: b.opts.records,
				name: b.name(prefix, fmt.Sprintf("r%d", run), c.name)}
			rr, err := b.runTrial(ctx, t, &created)
			if err != nil {
				return sr, err
			}
			runs[c.name] = append(runs[c.name], rr)
		}
	}

	medians := make(map[string]float64)
	for _, c := range contenders {
		cr := summarize(c.name, runs[c.name])
		medians[c.name] = cr.Median
		sr.Contenders = append(sr.Contenders, cr)
	}
	for i := range sr.Contenders {
		sr.Contenders[i].RatioVsRaw = ratio(sr.Contenders[i].Median, medians[rawShare.name])
	}
	sr.Ratios = map[string]float64{
		"relay-alo/raw":       ratio(medians[relayALO.name], medians[rawShare.name]),
		"relay-eos/raw":       ratio(medians[relayEOS.name], medians[rawShare.name]),
		"relay-eos/relay-alo": ratio(medians[relayEOS.name], medians[relayALO.name]),
		"copier/raw":          ratio(medians[copier.name], medians[rawShare.name]),
	}
	return sr, nil
}

// warmUp runs every contender once, untimed, over a small topic: a fresh
// broker creates its share-group state and transaction state topics on
// first use, and its JIT compiler is cold.
func (b *bench) warmUp(ctx context.Context) error {
	size, n := b.opts.sizes[0], min(b.opts.records, 10_000)
	src := b.name("warmup", "src")
	created := []string{src}
	defer func() { b.deleteTopics(created...) }()
	if err := b.createTopic(ctx, src, sourcePartitions, nil); err != nil {
		return err
	}
	if err := b.load(ctx, src, size, n); err != nil {
		return err
	}
	progress("warm-up: every contender once over %d records (not counted)", n)
	for _, c := range contenders {
		t := trial{c: c, size: size, run: 0, source: src, n: n, name: b.name("warmup", c.name)}
		if _, err := b.runTrial(ctx, t, &created); err != nil {
			return fmt.Errorf("warm-up: %w", err)
		}
	}
	return nil
}

// ratioOrder is the order the ratios are printed in.
var ratioOrder = []string{"relay-alo/raw", "relay-eos/raw", "relay-eos/relay-alo", "copier/raw"}

func summarize(name string, runs []runResult) contenderResult {
	rates := make([]float64, len(runs))
	for i, r := range runs {
		rates[i] = r.RecPerSec
	}
	slices.Sort(rates)
	return contenderResult{Name: name, Runs: runs, Median: median(rates), Min: rates[0], Max: rates[len(rates)-1]}
}

// median of sorted xs.
func median(xs []float64) float64 {
	n := len(xs)
	if n%2 == 1 {
		return xs[n/2]
	}
	return (xs[n/2-1] + xs[n/2]) / 2
}

func ratio(a, b float64) float64 {
	if b == 0 {
		return 0
	}
	return a / b
}

// printSize prints the throughput table of one size.
func printSize(w io.Writer, sr sizeResult) {
	fmt.Fprintf(w, "\nthroughput: %d records of %d B values\n", sr.Records, sr.Size)
	fmt.Fprintf(w, "%-7s %-11s %4s %13s %9s %9s %13s\n", "size", "contender", "runs", "median rec/s", "min", "max", "ratio-vs-raw")
	for _, c := range sr.Contenders {
		fmt.Fprintf(w, "%-7s %-11s %4d %13.0f %9.0f %9.0f %13.2f\n",
			fmt.Sprintf("%d B", sr.Size), c.Name, len(c.Runs), c.Median, c.Min, c.Max, c.RatioVsRaw)
	}
	var parts []string
	for _, k := range ratioOrder {
		parts = append(parts, fmt.Sprintf("%s %.2f", k, sr.Ratios[k]))
	}
	fmt.Fprintf(w, "ratios of medians: %s\n", strings.Join(parts, ", "))
	for _, c := range sr.Contenders {
		for _, r := range c.Runs {
			if r.Warning != "" {
				fmt.Fprintf(w, "WARNING: %s\n", r.Warning)
			}
		}
	}
}

// printLatency prints the latency table.
func printLatency(w io.Writer, ls []latencyResult) {
	if len(ls) == 0 {
		return
	}
	fmt.Fprintf(w, "\nlatency: %d rec/s of %d B values for %s, append acknowledged -> output visible (read_committed)\n",
		ls[0].Rate, ls[0].Size, ls[0].Duration)
	fmt.Fprintf(w, "%-11s %8s %8s %8s %8s %8s %8s\n", "contender", "records", "missing", "p50 ms", "p90 ms", "p99 ms", "max ms")
	for _, l := range ls {
		fmt.Fprintf(w, "%-11s %8d %8d %8.1f %8.1f %8.1f %8.1f\n", l.Contender, l.Records, l.Missing, l.P50, l.P90, l.P99, l.Max)
	}
}

// printSummary prints the exactly-once / at-least-once line and returns
// the ratio: the geometric mean over the sizes.
func printSummary(w io.Writer, srs []sizeResult) float64 {
	if len(srs) == 0 {
		return 0
	}
	logSum := 0.0
	var per []string
	for _, sr := range srs {
		r := sr.Ratios["relay-eos/relay-alo"]
		logSum += math.Log(r)
		per = append(per, fmt.Sprintf("%d B: %.2f", sr.Size, r))
	}
	g := math.Exp(logSum / float64(len(srs)))
	fmt.Fprintln(w)
	if len(srs) == 1 {
		fmt.Fprintf(w, "exactly-once / at-least-once = %.2f\n", g)
	} else {
		fmt.Fprintf(w, "exactly-once / at-least-once = %.2f (geometric mean of %s)\n", g, strings.Join(per, ", "))
	}
	return g
}

func writeJSON(path string, res results) error {
	data, err := json.MarshalIndent(res, "", "  ")
	if err != nil {
		return fmt.Errorf("encoding the results: %w", err)
	}
	if err := os.WriteFile(path, append(data, '\n'), 0o644); err != nil {
		return fmt.Errorf("writing the results: %w", err)
	}
	return nil
}
