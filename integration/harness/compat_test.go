package harness

import (
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func TestCompatRowsRoundTripAndRenderAsTheMatrixTable(t *testing.T) {
	path := filepath.Join(t.TempDir(), "rows.jsonl")
	if rows, err := ReadCompatRows(path); err != nil || rows != nil {
		t.Fatalf("ReadCompatRows of a missing file = %v, %v; want none, no error", rows, err)
	}
	want := []CompatRow{
		{Kafka: "4.2.2", Records: 4000, BrokerKills: 1, Redeliveries: 12, Verdict: VerdictExact, Seconds: 41.6},
		{Kafka: "4.3.2", Records: 4000, BrokerKills: 1, ShareStalls: 1, Verdict: VerdictExact, Seconds: 98.2},
		{Kafka: "4.4.0", Records: 4000, Lost: -1, Duplicated: -1, Verdict: VerdictFail, Seconds: 7},
	}
	for _, r := range want {
		if err := AppendCompatRow(path, r); err != nil {
			t.Fatal(err)
		}
	}
	got, err := ReadCompatRows(path)
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Fatalf("ReadCompatRows = %+v, %v; want %+v", got, err, want)
	}
	table := CompatTable(got)
	for _, line := range []string{
		"| Kafka | records | lost | duplicated | broker kills | redeliveries | verdict | seconds |",
		"| 4.2.2 | 4000 | 0 | 0 | 1 | 12 | EXACT | 42 |",
		"| 4.3.2 | 4000 | 0 | 0 | 1 (+1 restart for a stalled share partition) | 0 | EXACT | 98 |",
		"| 4.4.0 | 4000 | – | – | 0 | 0 | FAIL | 7 |",
	} {
		if !strings.Contains(table, line+"\n") {
			t.Errorf("table:\n%s\nhas no line %q", table, line)
		}
	}
}
