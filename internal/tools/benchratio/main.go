// Command benchratio reads `go test -bench` output and prints, for each
// benchmark, the median of its runs (ns/op, B/op, allocs/op) and the
// ratio of its ns/op to its baseline's: the benchmark of the same name
// with the first element after the top-level name replaced by -base.
// make bench runs it on BenchmarkFormats, so that each format's cost a
// record reads beside JSON's:
//
//	go test -run '^$' -bench BenchmarkFormats -benchmem -count 6 ./format/ | go run ./internal/tools/benchratio -base json
package main

import (
	"bufio"
	"flag"
	"fmt"
	"io"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
)

// line matches a benchmark result: its name (without the GOMAXPROCS
// suffix) and its measurements.
var line = regexp.MustCompile(`^(Benchmark\S+?)(?:-\d+)?\s+\d+\s+(.*)$`)

// result is one benchmark's runs: each unit's values.
type result struct {
	name string
	vals map[string][]float64
}

func main() {
	base := flag.String("base", "json", "the element of a benchmark's name its ratio is taken against")
	flag.Parse()
	rs, err := parse(os.Stdin)
	if err != nil {
		fmt.Fprintln(os.Stderr, "benchratio:", err)
		os.Exit(1)
	}
	if len(rs) == 0 {
		fmt.Fprintln(os.Stderr, "benchratio: no benchmark results on stdin")
		os.Exit(1)
	}
	report(os.Stdout, rs, *base)
}

// parse reads benchmark results, in the order they first appear.
func parse(r io.Reader) ([]*result, error) {
	var order []*result
	byName := map[string]*result{}
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		m := line.FindStringSubmatch(sc.Text())
		if m == nil {
			continue
		}
		res := byName[m[1]]
		if res == nil {
			res = &result{name: m[1], vals: map[string][]float64{}}
			byName[m[1]] = res
			order = append(order, res)
		}
		f := strings.Fields(m[2])
		for i := 0; i+1 < len(f); i += 2 {
			v, err := strconv.ParseFloat(f[i], 64)
			if err != nil {
				continue
			}
			res.vals[f[i+1]] = append(res.vals[f[i+1]], v)
		}
	}
	return order, sc.Err()
}

func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Sorted(slices.Values(xs))
	if n := len(s); n%2 == 1 {
		return s[n/2]
	} else {
		return (s[n/2-1] + s[n/2]) / 2
	}
}

// baseline is the name of name's baseline: its second element replaced
// by base ("BenchmarkFormats/avro/200B/x" → "BenchmarkFormats/json/200B/x").
func baseline(name, base string) string {
	parts := strings.Split(name, "/")
	if len(parts) < 2 {
		return ""
	}
	parts[1] = base
	return strings.Join(parts, "/")
}

func report(w io.Writer, rs []*result, base string) {
	med := map[string]float64{}
	for _, r := range rs {
		med[r.name] = median(r.vals["ns/op"])
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "benchmark\truns\tns/op\tB/op\tallocs/op\tvs %s\t\n", base)
	for _, r := range rs {
		ratio := "-"
		if b, ok := med[baseline(r.name, base)]; ok && b > 0 {
			ratio = fmt.Sprintf("%.2f×", med[r.name]/b)
		}
		fmt.Fprintf(tw, "%s\t%d\t%.0f\t%.0f\t%.0f\t%s\t\n", strings.TrimPrefix(r.name, "Benchmark"), len(r.vals["ns/op"]),
			med[r.name], median(r.vals["B/op"]), median(r.vals["allocs/op"]), ratio)
	}
	tw.Flush()
}
