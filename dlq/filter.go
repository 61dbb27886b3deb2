package dlq

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Filter selects dead letters. Within a field any value matches (an
// empty field matches everything); every field must match.
type Filter struct {
	// Classes, Steps and Kinds match __connect.errors.exception.class.name,
	// class.name and kind exactly.
	Classes, Steps, Kinds []string
	// Since and Until bound __connect.errors.timestamp: Since included,
	// Until excluded; a zero time leaves that side open.
	Since, Until time.Time
	// Offsets restrict the dead letters to these ranges of the
	// dead-letter topic's offsets; nil means every offset.
	Offsets []OffsetRange
}

// OffsetRange is the offsets From to To (both included) of one partition
// of the dead-letter topic; To < 0 means to the end.
type OffsetRange struct {
	Partition int32
	From, To  int64
}

// Match reports whether d is selected.
func (f Filter) Match(d DeadLetter) bool {
	switch {
	case len(f.Classes) > 0 && !slices.Contains(f.Classes, d.Class),
		len(f.Steps) > 0 && !slices.Contains(f.Steps, d.Step),
		len(f.Kinds) > 0 && !slices.Contains(f.Kinds, d.Kind),
		!f.Since.IsZero() && d.Time.Before(f.Since),
		!f.Until.IsZero() && !d.Time.Before(f.Until):
		return false
	}
	return f.inOffsets(d.Record.Partition, d.Record.Offset)
}

func (f Filter) inOffsets(p int32, o int64) bool {
	if f.Offsets == nil {
		return true
	}
	for _, r := range f.Offsets {
		if r.Partition == p && o >= r.From && (r.To < 0 || o <= r.To) {
			return true
		}
	}
	return false
}

// starts returns, per partition the Offsets name, the first offset worth
// reading; nil when every partition is read from its start.
func (f Filter) starts() map[int32]int64 {
	if f.Offsets == nil {
		return nil
	}
	out := map[int32]int64{}
	for _, r := range f.Offsets {
		if o, ok := out[r.Partition]; !ok || r.From < o {
			out[r.Partition] = r.From
		}
	}
	return out
}

// String describes f in a canonical form, e.g. `class=fail,json
// kind=permanent offsets=0:10-20`; "" selects everything.
func (f Filter) String() string {
	var parts []string
	list := func(name string, vs []string) {
		if len(vs) > 0 {
			vs = slices.Sorted(slices.Values(vs))
			parts = append(parts, name+"="+strings.Join(slices.Compact(vs), ","))
		}
	}
	list("class", f.Classes)
	list("step", f.Steps)
	list("kind", f.Kinds)
	if !f.Since.IsZero() {
		parts = append(parts, "since="+f.Since.UTC().Format(time.RFC3339Nano))
	}
	if !f.Until.IsZero() {
		parts = append(parts, "until="+f.Until.UTC().Format(time.RFC3339Nano))
	}
	if f.Offsets != nil {
		rs := make([]string, len(f.Offsets))
		for i, r := range f.Offsets {
			rs[i] = fmt.Sprintf("%d:%d-", r.Partition, r.From)
			if r.To >= 0 {
				rs[i] += strconv.FormatInt(r.To, 10)
			}
		}
		parts = append(parts, "offsets="+strings.Join(rs, ","))
	}
	return strings.Join(parts, " ")
}

// ParseOffsets parses `p:from-to,...`: partition p's offsets from to to,
// both included. `p:from-` runs to the end, `p:o` is the one offset o.
func ParseOffsets(s string) ([]OffsetRange, error) {
	var out []OffsetRange
	for part := range strings.SplitSeq(s, ",") {
		part = strings.TrimSpace(part)
		ps, rng, ok := strings.Cut(part, ":")
		if !ok {
			return nil, fmt.Errorf("offsets %q: want partition:from-to", part)
		}
		p, err := strconv.ParseInt(ps, 10, 32)
		if err != nil || p < 0 {
			return nil, fmt.Errorf("offsets %q: bad partition %q", part, ps)
		}
		r := OffsetRange{Partition: int32(p)}
		from, to, isRange := strings.Cut(rng, "-")
		if r.From, err = strconv.ParseInt(from, 10, 64); err != nil || r.From < 0 {
			return nil, fmt.Errorf("offsets %q: bad offset %q", part, from)
		}
		switch {
		case !isRange:
			r.To = r.From
		case to == "":
			r.To = -1
		default:
			if r.To, err = strconv.ParseInt(to, 10, 64); err != nil || r.To < r.From {
				return nil, fmt.Errorf("offsets %q: bad end %q (want an offset at or after %d)", part, to, r.From)
			}
		}
		out = append(out, r)
	}
	if len(out) == 0 {
		return nil, errors.New("offsets: empty")
	}
	return out, nil
}

// ParseTime parses a --since or --until value: an RFC 3339 time
// (YYYY-MM-DDThh:mm:ssZ), a date (YYYY-MM-DD, UTC midnight), or a
// duration meaning that long before now (90m, 24h).
func ParseTime(s string, now time.Time) (time.Time, error) {
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return t, nil
	}
	if t, err := time.Parse(time.DateOnly, s); err == nil {
		return t, nil
	}
	if d, err := time.ParseDuration(s); err == nil && d >= 0 {
		return now.Add(-d), nil
	}
	return time.Time{}, fmt.Errorf("%q is not a time (RFC 3339 YYYY-MM-DDThh:mm:ssZ, or a date YYYY-MM-DD) or a duration ago (90m, 24h)", s)
}
