package eos

import (
	"math"
	"reflect"
	"sort"
	"testing"

	"pgregory.net/rapid"
)

func TestIntervalSetAdd(t *testing.T) {
	type add struct{ first, last int64 }
	tests := []struct {
		name string
		adds []add
		want []Range
	}{
		{"an empty set has no ranges", nil, nil},
		{"a single offset is a one-offset range", []add{{5, 5}}, []Range{{5, 5}}},
		{"an inverted range adds nothing", []add{{7, 3}}, nil},
		{"an inverted range leaves the set as it was", []add{{1, 2}, {9, 4}}, []Range{{1, 2}}},
		{"a range adjacent on the right merges", []add{{1, 3}, {4, 6}}, []Range{{1, 6}}},
		{"a range adjacent on the left merges", []add{{4, 6}, {1, 3}}, []Range{{1, 6}}},
		{"an overlapping range on the right merges", []add{{1, 5}, {3, 8}}, []Range{{1, 8}}},
		{"an overlapping range on the left merges", []add{{3, 8}, {1, 5}}, []Range{{1, 8}}},
		{"a range inside another changes nothing", []add{{1, 10}, {3, 4}}, []Range{{1, 10}}},
		{"a range covering another replaces it", []add{{3, 4}, {1, 10}}, []Range{{1, 10}}},
		{"the same range twice is one range", []add{{2, 4}, {2, 4}}, []Range{{2, 4}}},
		{"disjoint ranges stay apart and sorted", []add{{10, 12}, {1, 2}, {5, 6}}, []Range{{1, 2}, {5, 6}, {10, 12}}},
		{"a gap of one offset keeps ranges apart", []add{{1, 2}, {4, 5}}, []Range{{1, 2}, {4, 5}}},
		{"filling a one-offset gap joins both neighbours", []add{{1, 2}, {4, 5}, {3, 3}}, []Range{{1, 5}}},
		{"a range spanning several ranges swallows them all", []add{{1, 1}, {3, 3}, {5, 5}, {7, 7}, {9, 9}, {2, 8}}, []Range{{1, 9}}},
		{"a range spanning some ranges keeps the others", []add{{1, 1}, {4, 4}, {6, 6}, {10, 10}, {3, 7}}, []Range{{1, 1}, {3, 7}, {10, 10}}},
		{"a range inserted between two keeps both", []add{{1, 1}, {10, 10}, {5, 6}}, []Range{{1, 1}, {5, 6}, {10, 10}}},
		{"a range at the front is inserted first", []add{{5, 6}, {10, 10}, {1, 2}}, []Range{{1, 2}, {5, 6}, {10, 10}}},
		{"offset zero merges like any other", []add{{1, 3}, {0, 0}}, []Range{{0, 3}}},
		{"a range touching both ends of a gap merges three", []add{{0, 4}, {8, 9}, {5, 7}}, []Range{{0, 9}}},
		{"large offsets merge", []add{{1 << 40, 1<<40 + 5}, {1<<40 + 6, 1<<40 + 9}}, []Range{{1 << 40, 1<<40 + 9}}},
		{"a fully committed partition collapses to one range", []add{{0, 0}, {2, 2}, {4, 4}, {1, 1}, {3, 3}}, []Range{{0, 4}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var s IntervalSet
			for _, a := range tt.adds {
				s.Add(a.first, a.last)
			}
			got := s.Ranges()
			if len(got) == 0 && len(tt.want) == 0 {
				if s.Len() != 0 {
					t.Fatalf("Len() = %d, want 0", s.Len())
				}
				return
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("Ranges() = %v, want %v", got, tt.want)
			}
			if s.Len() != len(tt.want) {
				t.Fatalf("Len() = %d, want %d", s.Len(), len(tt.want))
			}
		})
	}
}

func TestIntervalSetContains(t *testing.T) {
	var s IntervalSet
	s.Add(2, 4)
	s.Add(8, 8)
	s.Add(10, 20)
	for o, want := range map[int64]bool{
		math.MinInt64: false, -1: false, 0: false, 1: false,
		2: true, 3: true, 4: true, 5: false, 7: false, 8: true, 9: false,
		10: true, 15: true, 20: true, 21: false, math.MaxInt64: false,
	} {
		if got := s.Contains(o); got != want {
			t.Errorf("Contains(%d) = %v, want %v (set %v)", o, got, want, s.Ranges())
		}
	}
	var empty IntervalSet
	if empty.Contains(0) {
		t.Error("the empty set contains 0")
	}
}

// TestIntervalSetExtremeBounds documents a bug in IntervalSet.Add: it
// computes first-1 and last+1, which overflow at math.MinInt64 and
// math.MaxInt64, so a range ending there is not merged and the set loses
// its sorted/disjoint shape. Kafka offsets are in [0, MaxInt64), so no
// claim can reach it today; the fix is a saturating neighbour:
//
//	lo := first
//	if lo > math.MinInt64 { lo-- }
//	hi := last
//	if hi < math.MaxInt64 { hi++ }
//	i := sort.Search(len(s.rs), func(i int) bool { return s.rs[i].Last >= lo })
//	for j < len(s.rs) && s.rs[j].First <= hi { ... }
func TestIntervalSetExtremeBounds(t *testing.T) {
	var s IntervalSet
	s.Add(5, 6)
	s.Add(0, math.MaxInt64)
	if want := []Range{{0, math.MaxInt64}}; !reflect.DeepEqual(s.Ranges(), want) {
		t.Errorf("Add(0, MaxInt64) over {[5,6]}: Ranges() = %v, want %v", s.Ranges(), want)
	}
	var u IntervalSet
	u.Add(0, 5)
	u.Add(math.MinInt64, 10)
	if want := []Range{{math.MinInt64, 10}}; !reflect.DeepEqual(u.Ranges(), want) {
		t.Errorf("Add(MinInt64, 10) over {[0,5]}: Ranges() = %v, want %v", u.Ranges(), want)
	}
}

func TestRanges(t *testing.T) {
	tests := []struct {
		name    string
		offsets []int64
		want    []Range
	}{
		{"no offsets give no ranges", nil, nil},
		{"one offset is one range", []int64{7}, []Range{{7, 7}}},
		{"consecutive offsets are one range", []int64{3, 4, 5}, []Range{{3, 5}}},
		{"unsorted offsets are sorted", []int64{5, 3, 4}, []Range{{3, 5}}},
		{"duplicates are dropped", []int64{4, 4, 5, 5, 4}, []Range{{4, 5}}},
		{"gaps split ranges", []int64{1, 2, 4, 7, 8, 9}, []Range{{1, 2}, {4, 4}, {7, 9}}},
		{"unsorted with gaps", []int64{9, 1, 8, 2, 4, 7}, []Range{{1, 2}, {4, 4}, {7, 9}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := append([]int64(nil), tt.offsets...)
			got := Ranges(tt.offsets)
			if !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("Ranges(%v) = %v, want %v", tt.offsets, got, tt.want)
			}
			if !reflect.DeepEqual(in, tt.offsets) {
				t.Fatalf("Ranges modified its argument: %v became %v", in, tt.offsets)
			}
		})
	}
}

// checkShape fails unless rs is sorted, disjoint and non-adjacent, with
// First <= Last in every range.
func checkShape(t interface{ Fatalf(string, ...any) }, rs []Range) {
	for i, r := range rs {
		if r.First > r.Last {
			t.Fatalf("range %d is inverted: %v", i, rs)
		}
		if i > 0 && rs[i-1].Last+1 >= r.First {
			t.Fatalf("ranges %d and %d are not sorted, disjoint and non-adjacent: %v", i-1, i, rs)
		}
	}
}

// TestIntervalSetModel compares IntervalSet with a map model over random
// adds (small offsets, so merges, overlaps and adjacency are frequent).
func TestIntervalSetModel(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		var s IntervalSet
		model := map[int64]bool{}
		n := rapid.IntRange(0, 40).Draw(t, "adds")
		for range n {
			first := rapid.Int64Range(-5, 60).Draw(t, "first")
			last := first + rapid.Int64Range(-2, 8).Draw(t, "len")
			s.Add(first, last)
			for o := first; o <= last; o++ {
				model[o] = true
			}
			checkShape(t, s.Ranges())
			if s.Len() != len(s.Ranges()) {
				t.Fatalf("Len() = %d but %d ranges", s.Len(), len(s.Ranges()))
			}
			for o := int64(-10); o <= 75; o++ {
				if s.Contains(o) != model[o] {
					t.Fatalf("Contains(%d) = %v, model says %v; ranges %v", o, s.Contains(o), model[o], s.Ranges())
				}
			}
		}
		// The ranges hold exactly the model's offsets.
		count := 0
		for _, r := range s.Ranges() {
			for o := r.First; o <= r.Last; o++ {
				if !model[o] {
					t.Fatalf("range %v holds %d, which was never added", r, o)
				}
				count++
			}
		}
		if count != len(model) {
			t.Fatalf("ranges hold %d offsets, model %d", count, len(model))
		}
	})
}

// TestRangesModel: Ranges(offsets) covers exactly the distinct offsets and
// agrees with an IntervalSet built offset by offset.
func TestRangesModel(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		offsets := rapid.SliceOf(rapid.Int64Range(0, 40)).Draw(t, "offsets")
		rs := Ranges(offsets)
		checkShape(t, rs)
		var s IntervalSet
		for _, o := range offsets {
			s.Add(o, o)
		}
		if len(rs) != len(s.Ranges()) || (len(rs) > 0 && !reflect.DeepEqual(rs, s.Ranges())) {
			t.Fatalf("Ranges(%v) = %v, IntervalSet has %v", offsets, rs, s.Ranges())
		}
		distinct := map[int64]bool{}
		for _, o := range offsets {
			distinct[o] = true
			if !overlaps(rs, o) {
				t.Fatalf("offset %d not in Ranges %v", o, rs)
			}
		}
		var covered []int64
		for _, r := range rs {
			for o := r.First; o <= r.Last; o++ {
				covered = append(covered, o)
			}
		}
		if len(covered) != len(distinct) {
			t.Fatalf("Ranges(%v) = %v covers %d offsets, want %d", offsets, rs, len(covered), len(distinct))
		}
		if !sort.SliceIsSorted(covered, func(i, j int) bool { return covered[i] < covered[j] }) {
			t.Fatalf("Ranges(%v) = %v is not sorted", offsets, rs)
		}
	})
}
