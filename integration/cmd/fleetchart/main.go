// Command fleetchart draws the elastic fleet's throughput against time as
// an SVG image, from the samples `make bench-fleet` writes (the bench's
// -fleet-csv): the committed output rate of each run given, over a
// rolling window, on shaded bands of the schedule's plateaus labelled
// with the fleet size, the fleet size as a step line on the right axis,
// the change instants as dashed lines, and N × one instance's rate as a
// dotted step line per run (or N × -ceiling once), the scaling the fleet
// would have if it were linear. It uses the standard library only, so the chart can be drawn
// again from the CSV files kept beside it.
//
//	go run ./integration/cmd/fleetchart -o docs/images/fleet.svg before=docs/images/fleet-before.csv after=docs/images/fleet-after.csv
//
// Each argument is label=path; the bands and the fleet size are the first
// run's.
package main

import (
	"encoding/csv"
	"errors"
	"flag"
	"fmt"
	"html"
	"io"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"
)

func main() {
	out := flag.String("o", "fleet.svg", "the SVG file to write")
	window := flag.Float64("window", 5, "the rolling window of the output rate, in seconds (the bench's -fleet-window)")
	title := flag.String("title", "Elastic fleet: committed output against time", "the chart's title")
	ceiling := flag.Float64("ceiling", 0, "records/s one instance would do if its transform were all that took time (the bench's ceiling); when set, N × it is the dotted line, instead of N × each run's first plateau, which is noisy when an instance commits large polls seconds apart")
	flag.Parse()
	if flag.NArg() == 0 {
		fmt.Fprintln(os.Stderr, "fleetchart: give one or more label=path.csv")
		os.Exit(2)
	}
	var runs []run
	for _, arg := range flag.Args() {
		label, path, ok := strings.Cut(arg, "=")
		if !ok {
			label, path = arg, arg
		}
		r, err := readRun(label, path, *window)
		if err != nil {
			fmt.Fprintln(os.Stderr, "fleetchart:", err)
			os.Exit(1)
		}
		if *ceiling > 0 {
			r.single, r.ceiling = *ceiling, true
		}
		runs = append(runs, r)
	}
	f, err := os.Create(*out)
	if err == nil {
		err = draw(f, *title, *window, runs)
		err = errors.Join(err, f.Close())
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "fleetchart:", err)
		os.Exit(1)
	}
}

// sample is one row of the bench's CSV, with the rate computed from it.
type sample struct {
	t         float64 // seconds since the schedule began
	plateau   int     // 1, 2, ...; 0 after the schedule
	instances int
	output    float64 // committed outputs so far
	rate      float64 // records/s over the window ending here; NaN before a window
}

// run is one CSV file: a measured run of the schedule.
type run struct {
	label   string
	samples []sample
	// single is the first plateau's median rate over its second half,
	// divided by its fleet size: one instance's rate; or, with ceiling,
	// the -ceiling given.
	single  float64
	ceiling bool
}

// readRun reads a CSV file the bench wrote and computes its rates over
// window seconds.
func readRun(label, path string, window float64) (run, error) {
	f, err := os.Open(path)
	if err != nil {
		return run{}, fmt.Errorf("reading %s: %w", path, err)
	}
	defer f.Close()
	rows, err := csv.NewReader(f).ReadAll()
	if err != nil || len(rows) < 2 {
		return run{}, fmt.Errorf("reading %s: %v (%d rows)", path, err, len(rows))
	}
	col := map[string]int{}
	for i, name := range rows[0] {
		col[name] = i
	}
	for _, need := range []string{"t_s", "plateau", "instances", "output_total"} {
		if _, ok := col[need]; !ok {
			return run{}, fmt.Errorf("reading %s: no column %s", path, need)
		}
	}
	r := run{label: label}
	for n, row := range rows[1:] {
		var s sample
		var errs []error
		num := func(name string) float64 {
			v, err := strconv.ParseFloat(row[col[name]], 64)
			errs = append(errs, err)
			return v
		}
		s.t, s.plateau, s.instances, s.output = num("t_s"), int(num("plateau")), int(num("instances")), num("output_total")
		if err := errors.Join(errs...); err != nil {
			return run{}, fmt.Errorf("reading %s, row %d: %w", path, n+2, err)
		}
		r.samples = append(r.samples, s)
	}
	for j := range r.samples {
		r.samples[j].rate = math.NaN()
		for i := j - 1; i >= 0; i-- {
			if d := r.samples[j].t - r.samples[i].t; d >= window {
				r.samples[j].rate = (r.samples[j].output - r.samples[i].output) / d
				break
			}
		}
	}
	r.single = r.firstPlateauRate(window)
	return r, nil
}

// firstPlateauRate is the median rate of the windows wholly in the second
// half of the first plateau, over its fleet size (the bench's "single").
func (r run) firstPlateauRate(window float64) float64 {
	var start, end float64 = -1, -1
	n := 0
	for _, s := range r.samples {
		if s.plateau == 1 {
			if start < 0 {
				start = s.t
			}
			end, n = s.t, s.instances
		}
	}
	if start < 0 || n == 0 {
		return 0
	}
	var rates []float64
	for _, s := range r.samples {
		if s.plateau == 1 && s.t >= start+(end-start)/2 && s.t-window >= start && !math.IsNaN(s.rate) {
			rates = append(rates, s.rate)
		}
	}
	if len(rates) == 0 {
		return 0
	}
	slices.Sort(rates)
	m := rates[len(rates)/2]
	if len(rates)%2 == 0 {
		m = (rates[len(rates)/2-1] + m) / 2
	}
	return m / float64(n)
}

// band is a stretch of time at one plateau of the first run.
type band struct {
	from, to  float64
	plateau   int
	instances int
}

// bands cuts the first run into its plateaus and the final drain.
func bands(r run) []band {
	var out []band
	for i, s := range r.samples {
		to := s.t
		if i+1 < len(r.samples) {
			to = r.samples[i+1].t
		}
		if n := len(out); n > 0 && out[n-1].plateau == s.plateau && out[n-1].instances == s.instances {
			out[n-1].to = to
			continue
		}
		from := s.t
		if i == 0 {
			from = 0
		}
		out = append(out, band{from: from, to: to, plateau: s.plateau, instances: s.instances})
	}
	return out
}

// Chart geometry, in SVG user units.
const (
	width, height                        = 960.0, 480.0
	left, right, top, bottom             = 72.0, 64.0, 56.0, 64.0
	plotW, plotH                         = width - left - right, height - top - bottom
	bandFill, bandFillAlt, drainBandFill = "#eef2f7", "#f9fafc", "#fbf3e6"
)

// colors of the runs, in order.
var colors = []string{"#c0392b", "#1f6fb2", "#2e8b57", "#8e44ad"}

// draw writes the chart of runs to w.
func draw(w io.Writer, title string, window float64, runs []run) error {
	maxT, maxRate, maxN := 0.0, 0.0, 1
	for _, r := range runs {
		for _, s := range r.samples {
			maxT = max(maxT, s.t)
			if !math.IsNaN(s.rate) {
				maxRate = max(maxRate, s.rate)
			}
			maxN = max(maxN, s.instances)
			maxRate = max(maxRate, r.single*float64(s.instances))
		}
	}
	if maxT == 0 || maxRate == 0 {
		return errors.New("nothing to draw: no time or no output in the samples")
	}
	yStep := niceStep(maxRate / 5)
	yMax := math.Ceil(maxRate*1.05/yStep) * yStep
	xStep := niceStep(maxT / 8)
	x := func(t float64) float64 { return left + plotW*t/maxT }
	y := func(v float64) float64 { return top + plotH*(1-v/yMax) }
	yn := func(n float64) float64 { return top + plotH*(1-n/float64(maxN+1)) }

	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%.0f" height="%.0f" viewBox="0 0 %.0f %.0f" font-family="sans-serif" font-size="12">`+"\n", width, height, width, height)
	fmt.Fprintf(&b, `<rect width="100%%" height="100%%" fill="white"/>`+"\n")
	fmt.Fprintf(&b, `<text x="%.0f" y="24" font-size="16" font-weight="bold">%s</text>`+"\n", left, html.EscapeString(title))

	// The plateaus as bands, labelled with the fleet size.
	bs := bands(runs[0])
	for i, bd := range bs {
		fill := bandFill
		if i%2 == 1 {
			fill = bandFillAlt
		}
		label := fmt.Sprintf("N=%d", bd.instances)
		if bd.plateau == 0 {
			fill, label = drainBandFill, "drain"
		}
		fmt.Fprintf(&b, `<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="%s"/>`+"\n", x(bd.from), top, x(bd.to)-x(bd.from), plotH, fill)
		fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" text-anchor="middle" fill="#555">%s</text>`+"\n", (x(bd.from)+x(bd.to))/2, top+14, label)
		if i > 0 {
			fmt.Fprintf(&b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#777" stroke-dasharray="4 3"/>`+"\n", x(bd.from), top, x(bd.from), top+plotH)
		}
	}

	// Axes, ticks and grid.
	for v := 0.0; v <= yMax+yStep/2; v += yStep {
		fmt.Fprintf(&b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#ddd"/>`+"\n", left, y(v), left+plotW, y(v))
		fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" text-anchor="end">%s</text>`+"\n", left-6, y(v)+4, thousands(v))
	}
	for t := 0.0; t <= maxT; t += xStep {
		fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" text-anchor="middle">%.0f</text>`+"\n", x(t), top+plotH+18, t)
	}
	for n := 0; n <= maxN; n++ {
		fmt.Fprintf(&b, `<text x="%.1f" y="%.1f">%d</text>`+"\n", left+plotW+8, yn(float64(n))+4, n)
	}
	fmt.Fprintf(&b, `<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="none" stroke="#333"/>`+"\n", left, top, plotW, plotH)
	fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" text-anchor="middle">seconds since the first instance started</text>`+"\n", left+plotW/2, height-20)
	fmt.Fprintf(&b, `<text transform="translate(18 %.1f) rotate(-90)" text-anchor="middle">committed output, records/s (%g s window)</text>`+"\n", top+plotH/2, window)
	fmt.Fprintf(&b, `<text transform="translate(%.1f %.1f) rotate(90)" text-anchor="middle">relay instances</text>`+"\n", width-16, top+plotH/2)

	// The fleet size of the first run, on the right axis.
	b.WriteString(`<path fill="none" stroke="#444" stroke-width="1.5" d="` + stepPath(runs[0].samples, x, func(s sample) float64 { return yn(float64(s.instances)) }) + `"/>` + "\n")

	for i, r := range runs {
		c := colors[i%len(colors)]
		if r.single > 0 && (!r.ceiling || i == 0) {
			ideal := func(s sample) float64 { return y(r.single * float64(s.instances)) }
			fmt.Fprintf(&b, `<path fill="none" stroke="%s" stroke-opacity="0.6" stroke-width="1.2" stroke-dasharray="1 3" d="%s"/>`+"\n", c, stepPath(r.samples, x, ideal))
		}
		var d strings.Builder
		pen := "M"
		for _, s := range r.samples {
			if math.IsNaN(s.rate) {
				pen = "M"
				continue
			}
			fmt.Fprintf(&d, "%s%.1f %.1f ", pen, x(s.t), y(s.rate))
			pen = "L"
		}
		fmt.Fprintf(&b, `<path fill="none" stroke="%s" stroke-width="1.8" d="%s"/>`+"\n", c, strings.TrimSpace(d.String()))
	}

	// The legend.
	lx, ly := left+plotW-300, top+30
	for i, r := range runs {
		c := colors[i%len(colors)]
		fmt.Fprintf(&b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="%s" stroke-width="2"/>`+"\n", lx, ly, lx+24, ly, c)
		fmt.Fprintf(&b, `<text x="%.1f" y="%.1f">%s: output rate</text>`+"\n", lx+30, ly+4, html.EscapeString(r.label))
		ly += 16
		switch {
		case r.single > 0 && r.ceiling && i == 0:
			fmt.Fprintf(&b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="%s" stroke-dasharray="1 3" stroke-width="1.5"/>`+"\n", lx, ly, lx+24, ly, c)
			fmt.Fprintf(&b, `<text x="%.1f" y="%.1f">N × the transform's ceiling (%s/s an instance)</text>`+"\n", lx+30, ly+4, thousands(r.single))
			ly += 16
		case r.single > 0 && !r.ceiling:
			fmt.Fprintf(&b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="%s" stroke-dasharray="1 3" stroke-width="1.5"/>`+"\n", lx, ly, lx+24, ly, c)
			fmt.Fprintf(&b, `<text x="%.1f" y="%.1f">%s: N × one instance (%s/s)</text>`+"\n", lx+30, ly+4, html.EscapeString(r.label), thousands(r.single))
			ly += 16
		}
	}
	fmt.Fprintf(&b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#444" stroke-width="1.5"/>`+"\n", lx, ly, lx+24, ly)
	fmt.Fprintf(&b, `<text x="%.1f" y="%.1f">relay instances (right axis)</text>`+"\n", lx+30, ly+4)
	b.WriteString("</svg>\n")
	_, err := io.WriteString(w, b.String())
	return err
}

// stepPath draws v of the samples as a step line: level until the next
// sample, then up or down.
func stepPath(ss []sample, x func(float64) float64, v func(sample) float64) string {
	var d strings.Builder
	for i, s := range ss {
		if i == 0 {
			fmt.Fprintf(&d, "M%.1f %.1f ", x(0), v(s))
		}
		fmt.Fprintf(&d, "H%.1f V%.1f ", x(s.t), v(s))
	}
	return strings.TrimSpace(d.String())
}

// niceStep rounds a raw tick step up to 1, 2 or 5 times a power of ten.
func niceStep(raw float64) float64 {
	if raw <= 0 {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(raw)))
	for _, m := range []float64{1, 2, 5, 10} {
		if raw <= m*p {
			return m * p
		}
	}
	return 10 * p
}

// thousands writes v rounded, with commas between groups of three digits.
func thousands(v float64) string {
	s := strconv.FormatInt(int64(math.Round(v)), 10)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}
