package dlq

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sharerelay/sharerelay/config"
)

// InspectOptions say what Inspect reads and how it groups.
type InspectOptions struct {
	// ClientOpts must include the seed brokers (the pipeline's
	// kafkaopts options).
	ClientOpts []kgo.Opt
	// Topic is the dead-letter topic.
	Topic string
	// Filter selects the dead letters counted.
	Filter Filter
	// Bucket is the width of the time buckets (default an hour).
	Bucket time.Duration
	// Samples is how many dead letters to show (default 5; negative:
	// none).
	Samples int
	// Decode, when set, is the pipeline whose source formats the
	// samples' keys and values are decoded with (Sample.Key and Value):
	// the relay's own decoders, and its schema registry.
	Decode *config.Pipeline
}

// Count is how many selected dead letters have one value.
type Count struct {
	Name  string `json:"name"`
	Count int    `json:"count"`
}

// Bucket counts the selected dead letters written in [Start,
// Start+bucket), by __connect.errors.timestamp, in UTC.
type Bucket struct {
	Start time.Time `json:"start"`
	Count int       `json:"count"`
}

// Sample is one dead letter, for a person to look at.
type Sample struct {
	Partition int32     `json:"partition"`
	Offset    int64     `json:"offset"`
	Source    string    `json:"source"` // the original source record, topic[partition]@offset
	Class     string    `json:"class"`
	Step      string    `json:"step"`
	Kind      string    `json:"kind"`
	Time      time.Time `json:"time"`
	Reason    string    `json:"reason"`
	// Outcome says what a replay made of it (replay reports only).
	Outcome string `json:"outcome,omitempty"`
	// Key and Value are the source record's key and value, decoded
	// (InspectOptions.Decode only).
	Key   *Content `json:"key,omitempty"`
	Value *Content `json:"value,omitempty"`

	raw raw
}

// Report is what Inspect found.
type Report struct {
	Snapshot
	Filter string `json:"filter,omitempty"`
	// Read counts the dead letters read; Selected those the filter
	// selected, which the rest counts; CutDown the selected ones whose
	// value the relay left out (not replayable).
	Read     int `json:"read"`
	Selected int `json:"selected"`
	CutDown  int `json:"cut_down"`
	// ByClass, ByStep and ByKind count the selected dead letters by
	// error class, step and kind, most first.
	ByClass []Count `json:"by_class"`
	ByStep  []Count `json:"by_step"`
	ByKind  []Count `json:"by_kind"`
	// Bucket is the width of ByTime's buckets.
	Bucket  string   `json:"bucket"`
	ByTime  []Bucket `json:"by_time"`
	Samples []Sample `json:"samples"`
	// Decoded says how the samples' keys and values were decoded
	// (InspectOptions.Decode only).
	Decoded *Decoding `json:"decoded,omitempty"`
}

// Inspect reads the dead-letter topic read_committed, up to its last
// stable offset when it starts, and counts the dead letters the filter
// selects. With Decode, it then decodes the samples' keys and values; a
// sample that does not decode, or a registry that cannot be asked, is
// said so in the report, and fails nothing.
func Inspect(ctx context.Context, o InspectOptions) (*Report, error) {
	if o.Bucket <= 0 {
		o.Bucket = time.Hour
	}
	if o.Samples == 0 {
		o.Samples = 5
	}
	rep := &Report{Filter: o.Filter.String(), Bucket: shortDuration(o.Bucket), Samples: []Sample{}}
	class, step, kind, times := map[string]int{}, map[string]int{}, map[string]int{}, map[time.Time]int{}
	snap, err := read(ctx, o.ClientOpts, o.Topic, o.Filter.starts(), func(_ *Snapshot, recs []*kgo.Record) error {
		for _, r := range recs {
			rep.Read++
			d := Parse(r)
			if !o.Filter.Match(d) {
				continue
			}
			rep.Selected++
			if d.CutDown {
				rep.CutDown++
			}
			class[d.Class]++
			step[d.Step]++
			kind[d.Kind]++
			times[d.Time.UTC().Truncate(o.Bucket)]++
			if len(rep.Samples) < o.Samples {
				rep.Samples = append(rep.Samples, sampleOf(d))
			}
		}
		return nil
	})
	rep.Snapshot = snap
	if err != nil {
		return nil, err
	}
	rep.ByClass, rep.ByStep, rep.ByKind = counts(class), counts(step), counts(kind)
	for _, t := range slices.SortedFunc(maps.Keys(times), time.Time.Compare) {
		rep.ByTime = append(rep.ByTime, Bucket{Start: t, Count: times[t]})
	}
	if o.Decode != nil {
		rep.Decoded = decodeSamples(ctx, o.Decode, rep.Samples)
	}
	return rep, nil
}

func sampleOf(d DeadLetter) Sample {
	s := Sample{Partition: d.Record.Partition, Offset: d.Record.Offset, Class: d.Class, Step: d.Step, Kind: d.Kind,
		Time: d.Time.UTC(), Reason: d.Reason, raw: rawOf(d)}
	if d.SourceOK {
		s.Source = sourceString(d.Source)
	}
	return s
}

// counts sorts m by count, most first, then by name.
func counts(m map[string]int) []Count {
	out := make([]Count, 0, len(m))
	for k, v := range m {
		out = append(out, Count{Name: k, Count: v})
	}
	slices.SortFunc(out, func(a, b Count) int {
		return cmp.Or(cmp.Compare(b.Count, a.Count), cmp.Compare(a.Name, b.Name))
	})
	return out
}

// Print writes r for a person.
func (r *Report) Print(w io.Writer) {
	fmt.Fprintf(w, "dead letters in %s (read_committed, up to offsets %s)\n", r.Topic, endsString(r.Ends))
	if r.Filter != "" {
		fmt.Fprintf(w, "filter: %s\n", r.Filter)
	}
	fmt.Fprintf(w, "read %d, selected %d", r.Read, r.Selected)
	if r.CutDown > 0 {
		fmt.Fprintf(w, " (%d cut down to fit their topic: value left out, not replayable)", r.CutDown)
	}
	fmt.Fprintln(w)
	for _, t := range []struct {
		title string
		cs    []Count
	}{{"error class", r.ByClass}, {"step", r.ByStep}, {"kind", r.ByKind}} {
		fmt.Fprintln(w)
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprintf(tw, "by %s\tcount\n", t.title)
		for _, c := range t.cs {
			fmt.Fprintf(tw, "%s\t%d\n", orNone(c.Name), c.Count)
		}
		tw.Flush()
	}
	if len(r.ByTime) > 0 {
		fmt.Fprintln(w)
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprintf(tw, "by time (UTC, %s buckets)\tcount\n", r.Bucket)
		for _, b := range r.ByTime {
			fmt.Fprintf(tw, "%s\t%d\n", b.Start.Format(time.DateOnly+"T15:04Z"), b.Count)
		}
		tw.Flush()
	}
	printSamples(w, "samples", r.Samples)
	printDecoded(w, r.Decoded, r.Samples)
}

// printSamples writes samples as a table under title.
func printSamples(w io.Writer, title string, samples []Sample) {
	if len(samples) == 0 {
		return
	}
	outcome := slices.ContainsFunc(samples, func(s Sample) bool { return s.Outcome != "" })
	fmt.Fprintf(w, "\n%s\n", title)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	head := "dead letter\tsource\tclass\tstep\tkind\ttime\treason"
	if outcome {
		head += "\treplay"
	}
	fmt.Fprintln(tw, head)
	for _, s := range samples {
		line := fmt.Sprintf("%d@%d\t%s\t%s\t%s\t%s\t%s\t%s", s.Partition, s.Offset, orNone(s.Source), orNone(s.Class), orNone(s.Step),
			orNone(s.Kind), s.Time.Format(time.RFC3339), oneLine(s.Reason, 60))
		if outcome {
			line += "\t" + s.Outcome
		}
		fmt.Fprintln(tw, line)
	}
	tw.Flush()
}

func endsString(ends map[int32]int64) string {
	var parts []string
	for _, p := range slices.Sorted(maps.Keys(ends)) {
		parts = append(parts, fmt.Sprintf("%d:%d", p, ends[p]))
	}
	return "[" + strings.Join(parts, " ") + "]"
}

// shortDuration formats d without zero units: 1h rather than 1h0m0s.
func shortDuration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = s[:len(s)-2]
	}
	if strings.HasSuffix(s, "h0m") {
		s = s[:len(s)-2]
	}
	return s
}

func orNone(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// oneLine returns s on one line, cut to at most n runes.
func oneLine(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}
