package eos

import (
	"math"
	"slices"
	"sort"
)

// Range is an inclusive range of source offsets.
type Range struct {
	First int64 `json:"f"`
	Last  int64 `json:"l"`
}

// Ranges turns offsets into sorted, merged ranges.
func Ranges(offsets []int64) []Range {
	if len(offsets) == 0 {
		return nil
	}
	os := offsets
	if !slices.IsSorted(os) { // a poll's offsets usually come in order
		os = slices.Clone(offsets)
		slices.Sort(os)
	}
	out := []Range{{os[0], os[0]}}
	for _, o := range os[1:] {
		last := &out[len(out)-1]
		switch {
		case o <= last.Last:
		case o == last.Last+1:
			last.Last = o
		default:
			out = append(out, Range{o, o})
		}
	}
	return out
}

// IntervalSet is a set of int64 kept as sorted, disjoint, non-adjacent
// ranges. When every offset of a partition is committed its runs collapse
// into one range, so memory is bounded by the holes, not by history.
type IntervalSet struct {
	rs []Range
}

// Add inserts [first, last].
func (s *IntervalSet) Add(first, last int64) {
	if first > last {
		return
	}
	// lo and hi are the neighbours that merge with [first, last],
	// clamped so the extremes do not overflow.
	lo, hi := first, last
	if lo > math.MinInt64 {
		lo--
	}
	if hi < math.MaxInt64 {
		hi++
	}
	// i: first range that ends at or after lo (could merge).
	i := sort.Search(len(s.rs), func(i int) bool { return s.rs[i].Last >= lo })
	j := i
	for j < len(s.rs) && s.rs[j].First <= hi {
		first = min(first, s.rs[j].First)
		last = max(last, s.rs[j].Last)
		j++
	}
	if i == j {
		s.rs = append(s.rs, Range{})
		copy(s.rs[i+1:], s.rs[i:])
		s.rs[i] = Range{first, last}
		return
	}
	s.rs[i] = Range{first, last}
	s.rs = append(s.rs[:i+1], s.rs[j:]...)
}

// Contains reports whether o is in the set.
func (s *IntervalSet) Contains(o int64) bool {
	i := sort.Search(len(s.rs), func(i int) bool { return s.rs[i].Last >= o })
	return i < len(s.rs) && s.rs[i].First <= o
}

// Ranges returns the set's ranges (shared; do not modify).
func (s *IntervalSet) Ranges() []Range { return s.rs }

// Len returns the number of ranges (the set's memory footprint).
func (s *IntervalSet) Len() int { return len(s.rs) }

// overlaps reports whether any offset of rs is in [first, last].
func overlaps(rs []Range, o int64) bool {
	for _, r := range rs {
		if r.First <= o && o <= r.Last {
			return true
		}
	}
	return false
}
