package dlq

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

func TestParseOffsetsReadsRangesSingleOffsetsAndOpenEnds(t *testing.T) {
	got, err := ParseOffsets("0:10-20, 1:5,2:7-")
	want := []OffsetRange{{0, 10, 20}, {1, 5, 5}, {2, 7, -1}}
	if err != nil || len(got) != 3 || got[0] != want[0] || got[1] != want[1] || got[2] != want[2] {
		t.Fatalf("ParseOffsets = %v, %v; want %v", got, err, want)
	}
	for _, bad := range []string{"", "10-20", "x:1", "0:5-4", "0:-3", "-1:0"} {
		if _, err := ParseOffsets(bad); err == nil {
			t.Errorf("ParseOffsets(%q) accepted it", bad)
		}
	}
}

func TestParseTimeTakesATimeADateOrADurationAgo(t *testing.T) {
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	for in, want := range map[string]time.Time{
		"2026-11-30T08:15:00Z": time.Date(2026, 11, 30, 8, 15, 0, 0, time.UTC),
		"2026-11-30":           time.Date(2026, 11, 30, 0, 0, 0, 0, time.UTC),
		"90m":                  now.Add(-90 * time.Minute),
	} {
		if got, err := ParseTime(in, now); err != nil || !got.Equal(want) {
			t.Errorf("ParseTime(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	if _, err := ParseTime("yesterday", now); err == nil {
		t.Error("ParseTime(yesterday) accepted it")
	}
}

func TestAFilterMatchesEveryFieldItSetsAndNothingElse(t *testing.T) {
	at := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	d := DeadLetter{Record: &kgo.Record{Partition: 1, Offset: 15}, Class: "json", Step: "0:set", Kind: "permanent", Time: at}
	for _, tc := range []struct {
		name string
		f    Filter
		want bool
	}{
		{"the empty filter selects everything", Filter{}, true},
		{"one of the classes", Filter{Classes: []string{"fail", "json"}}, true},
		{"another class", Filter{Classes: []string{"fail"}}, false},
		{"step and kind", Filter{Steps: []string{"0:set"}, Kinds: []string{"permanent"}}, true},
		{"another kind", Filter{Kinds: []string{"attempts-exhausted"}}, false},
		{"since is included", Filter{Since: at}, true},
		{"until is excluded", Filter{Until: at}, false},
		{"inside an offset range", Filter{Offsets: []OffsetRange{{1, 10, 20}}}, true},
		{"an open-ended offset range", Filter{Offsets: []OffsetRange{{1, 15, -1}}}, true},
		{"another partition", Filter{Offsets: []OffsetRange{{0, 0, -1}}}, false},
	} {
		if got := tc.f.Match(d); got != tc.want {
			t.Errorf("%s: Match = %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestAFiltersStringIsCanonical(t *testing.T) {
	a := Filter{Classes: []string{"json", "fail", "json"}, Offsets: []OffsetRange{{0, 1, -1}}}
	b := Filter{Classes: []string{"fail", "json"}, Offsets: []OffsetRange{{0, 1, -1}}}
	if a.String() != b.String() || a.String() != "class=fail,json offsets=0:1-" {
		t.Fatalf("String = %q and %q", a.String(), b.String())
	}
}
