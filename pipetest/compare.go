package pipetest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"math/big"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sharerelay/sharerelay/config"
)

// compare lists every difference between what a case expects and what
// became of its record, one line each, and reports whether the record
// came to the kind of outcome expected.
func (e *env) compare(ctx context.Context, s *Suite, want Expect, got outcome) (diffs []string, sameOutcome bool) {
	sameOutcome = true
	add := func(format string, args ...any) { diffs = append(diffs, fmt.Sprintf(format, args...)) }

	switch {
	case want.Release:
		if !got.release {
			add("want the record released for another delivery, got %s", got.describe())
			sameOutcome = false
		}
	case want.DeadLetter != nil:
		d := got.deadLetter
		if d == nil {
			add("want a dead letter, got %s", got.describe())
			sameOutcome = false
			break
		}
		w := want.DeadLetter
		if k := dlqKind(d); w.Kind != "" && w.Kind != k {
			add("dead_letter.kind: want %s, got %s", w.Kind, k)
		}
		if w.Class != "" && w.Class != d.Err.Class {
			add("dead_letter.class: want %q, got %q", w.Class, d.Err.Class)
		}
		if w.Step != "" && w.Step != d.Err.Step {
			add("dead_letter.step: want %q, got %q", w.Step, d.Err.Step)
		}
		if msg := d.Err.Error(); w.Reason != "" && !strings.Contains(msg, w.Reason) {
			add("dead_letter.reason: want a message containing %q, got %q", w.Reason, msg)
		}
	default:
		if got.release || got.deadLetter != nil || got.held != nil {
			add("want %s, got %s", plural(len(*want.Outputs), "output"), got.describe())
			sameOutcome = false
			break
		}
		outs := *want.Outputs
		if len(outs) != len(got.outs) {
			add("want %s, got %d:", plural(len(outs), "output"), len(got.outs))
			sameOutcome = false
			for i, o := range got.outs {
				add("  got outputs[%d]: %s", i, e.describeRecord(ctx, o))
			}
			break
		}
		for i, w := range outs {
			diffs = append(diffs, e.compareOutput(ctx, s, fmt.Sprintf("outputs[%d]", i), w, got.outs[i])...)
		}
	}
	return diffs, sameOutcome
}

func plural(n int, what string) string {
	switch n {
	case 0:
		return "no " + what + " (filtered out)"
	case 1:
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}

func (e *env) compareOutput(ctx context.Context, s *Suite, path string, want Output, got *kgo.Record) []string {
	p := e.p
	var diffs []string
	add := func(format string, args ...any) { diffs = append(diffs, fmt.Sprintf(format, args...)) }
	topic := want.Topic
	if topic == "" {
		topic = p.Output.Topic
	}
	if topic != got.Topic {
		add("%s.topic: want %s, got %s", path, topic, got.Topic)
	}
	if want.Key != nil {
		key, err := e.read(ctx, got.Topic, 1, got.Key)
		f, _ := p.OutputFormats(got.Topic)
		switch {
		case err != nil:
			add("%s.key: does not read back: %v", path, err)
		case config.StructuredFormat(f.KeyFormat):
			diffs = append(diffs, compareValue(path+".key", want.Key, key)...)
		default:
			if w, _ := valueBytes(want.Key); string(w) != string(key) {
				add("%s.key: want %s, got %s", path, quoteBytes(w), quoteBytes(key))
			}
		}
	}
	if want.Value != nil {
		v, err := e.read(ctx, got.Topic, 0, got.Value)
		if err != nil {
			add("%s.value: does not read back: %v", path, err)
		} else {
			diffs = append(diffs, compareValue(path+".value", want.Value, v)...)
		}
	}
	if want.Timestamp != "" {
		diffs = append(diffs, compareTimestamp(path+".timestamp", want.Timestamp, got.Timestamp)...)
	}
	if want.Partition != nil {
		diffs = append(diffs, comparePartition(s, path+".partition", *want.Partition, got)...)
	}
	for _, k := range slices.Sorted(maps.Keys(want.Headers)) {
		w := want.Headers[k]
		v, ok := lastHeader(got, k)
		switch {
		case w == nil && ok:
			add("%s.headers[%q]: want none, got %q", path, k, v)
		case w != nil && !ok:
			add("%s.headers[%q]: want %q, got none", path, k, *w)
		case w != nil && *w != v:
			add("%s.headers[%q]: want %q, got %q", path, k, *w, v)
		}
	}
	return diffs
}

func lastHeader(r *kgo.Record, key string) (string, bool) {
	for i := len(r.Headers) - 1; i >= 0; i-- {
		if r.Headers[i].Key == key {
			return string(r.Headers[i].Value), true
		}
	}
	return "", false
}

// compareValue compares an expected YAML value with a record value: as
// JSON when both are JSON, else as bytes.
func compareValue(path string, want any, got []byte) []string {
	wantBytes, err := valueBytes(want)
	if err != nil {
		return []string{fmt.Sprintf("%s: %v", path, err)}
	}
	wj, werr := parseJSON(wantBytes)
	gj, gerr := parseJSON(got)
	if werr == nil && gerr == nil {
		var diffs []string
		diffJSON(path, wj, gj, &diffs)
		return diffs
	}
	if !bytes.Equal(wantBytes, got) {
		return []string{fmt.Sprintf("%s: want %s, got %s", path, quoteBytes(wantBytes), quoteBytes(got))}
	}
	return nil
}

func parseJSON(b []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var x any
	if err := dec.Decode(&x); err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, fmt.Errorf("trailing data")
	}
	return x, nil
}

// diffJSON appends a line for every place where got differs from want,
// naming it by its path: objects key by key, arrays of the same length
// element by element, numbers by value (1.0 equals 1).
func diffJSON(path string, want, got any, diffs *[]string) {
	switch w := want.(type) {
	case map[string]any:
		g, ok := got.(map[string]any)
		if !ok {
			break
		}
		keys := slices.Sorted(maps.Keys(w))
		for k := range g {
			if _, ok := w[k]; !ok {
				keys = append(keys, k)
			}
		}
		slices.Sort(keys)
		for _, k := range keys {
			p := path + "." + k
			if !isIdent(k) {
				p = path + "[" + strconv.Quote(k) + "]"
			}
			wv, wok := w[k]
			gv, gok := g[k]
			switch {
			case !gok:
				*diffs = append(*diffs, fmt.Sprintf("%s: want %s, got nothing", p, compact(wv)))
			case !wok:
				*diffs = append(*diffs, fmt.Sprintf("%s: want nothing, got %s", p, compact(gv)))
			default:
				diffJSON(p, wv, gv, diffs)
			}
		}
		return
	case []any:
		g, ok := got.([]any)
		if !ok || len(g) != len(w) {
			break
		}
		for i := range w {
			diffJSON(fmt.Sprintf("%s[%d]", path, i), w[i], g[i], diffs)
		}
		return
	case json.Number:
		if g, ok := got.(json.Number); ok && sameNumber(w, g) {
			return
		}
	default:
		if want == got {
			return
		}
	}
	*diffs = append(*diffs, fmt.Sprintf("%s: want %s, got %s", path, compact(want), compact(got)))
}

func sameNumber(a, b json.Number) bool {
	x, ok1 := new(big.Rat).SetString(string(a))
	y, ok2 := new(big.Rat).SetString(string(b))
	if !ok1 || !ok2 {
		return a == b
	}
	return x.Cmp(y) == 0
}

func isIdent(k string) bool {
	if k == "" {
		return false
	}
	for _, c := range k {
		if !(c == '_' || c == '-' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9') {
			return false
		}
	}
	return true
}

// compact is a decoded JSON value as compact JSON text.
func compact(v any) string {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return fmt.Sprint(v)
	}
	return strings.TrimSuffix(buf.String(), "\n")
}

// quoteBytes shows record bytes: quoted text, or "null" for no bytes.
func quoteBytes(b []byte) string {
	if b == nil {
		return "null"
	}
	return strconv.Quote(string(b))
}

// describeRecord shows an output record on one line, its value and key
// read back from their formats.
func (e *env) describeRecord(ctx context.Context, r *kgo.Record) string {
	k, err := e.read(ctx, r.Topic, 1, r.Key)
	if err != nil {
		k = r.Key
	}
	v, err := e.read(ctx, r.Topic, 0, r.Value)
	if err != nil {
		v = r.Value
	}
	return fmt.Sprintf("topic %s, key %s, value %s", r.Topic, quoteBytes(k), quoteBytes(v))
}

// compareTimestamp compares an output's timestamp with the expected one:
// RFC 3339 text, or "now" for none (the producer's time of writing).
func compareTimestamp(path, want string, got time.Time) []string {
	show := func(t time.Time) string {
		if t.IsZero() {
			return "none (the time of writing)"
		}
		return t.UTC().Format(time.RFC3339Nano)
	}
	if want == "now" {
		if !got.IsZero() {
			return []string{fmt.Sprintf("%s: want none (the time of writing), got %s", path, show(got))}
		}
		return nil
	}
	w, err := time.Parse(time.RFC3339Nano, want)
	if err != nil {
		return []string{fmt.Sprintf("%s: %q is neither RFC 3339 nor now", path, want)}
	}
	if !w.Equal(got) {
		return []string{fmt.Sprintf("%s: want %s, got %s", path, show(w), show(got))}
	}
	return nil
}

// comparePartition compares the partition a keyed output lands on, as
// the producer partitions it (murmur2 of the key, as Java's producer),
// with the expected one.
func comparePartition(s *Suite, path string, want int, got *kgo.Record) []string {
	if got.Key == nil {
		return []string{path + ": the output has no key: the producer spreads keyless records over the partitions as it writes them"}
	}
	n, ok := s.Partitions[got.Topic]
	if !ok || n < 1 {
		return []string{fmt.Sprintf("%s: give the partitions of %s in the test file (partitions: {%s: N})", path, got.Topic, got.Topic)}
	}
	if p := Partition(got.Key, n); p != want {
		return []string{fmt.Sprintf("%s: want %d, got %d (of %d)", path, want, p, n)}
	}
	return nil
}

// keyed partitions keyed records as the relay's producer does.
var keyed = kgo.StickyKeyPartitioner(nil)

// Partition is the partition of n a record with key lands on, as the
// relay's producer chooses it and as Java's producer does: murmur2 of the
// key, made positive, modulo n.
func Partition(key []byte, n int) int {
	return keyed.ForTopic("").Partition(&kgo.Record{Key: key}, n)
}
