package lineage

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"
)

func TestSetSourceReplacesOldCoordinatesAndKeepsOtherHeaders(t *testing.T) {
	hs := []kgo.RecordHeader{{Key: "a", Value: []byte("1")}, {Key: HeaderSourceOffset, Value: []byte("99")}}
	hs = SetSource(hs, Source{Topic: "t", Partition: 2, Offset: 7})
	r := &kgo.Record{Headers: hs}
	src, ok := SourceOf(r)
	if !ok || src != (Source{"t", 2, 7}) {
		t.Fatalf("SourceOf = %+v, %v", src, ok)
	}
	if len(hs) != 4 || hs[0].Key != "a" {
		t.Fatalf("headers %v: want the other header kept and one set of coordinates", hs)
	}
}

func TestSourceOfRejectsMissingOrMalformedCoordinates(t *testing.T) {
	for name, hs := range map[string][]kgo.RecordHeader{
		"none":          nil,
		"no offset":     {{Key: HeaderSourceTopic, Value: []byte("t")}, {Key: HeaderSourcePartition, Value: []byte("0")}},
		"bad partition": {{Key: HeaderSourceTopic, Value: []byte("t")}, {Key: HeaderSourcePartition, Value: []byte("x")}, {Key: HeaderSourceOffset, Value: []byte("1")}},
	} {
		if _, ok := SourceOf(&kgo.Record{Headers: hs}); ok {
			t.Errorf("%s: SourceOf accepted %v", name, hs)
		}
	}
}

func TestSetIndexReplacesAnOldPositionAndIndexOfReadsIt(t *testing.T) {
	hs := []kgo.RecordHeader{{Key: "a", Value: []byte("1")}, {Key: HeaderSourceIndex, Value: []byte("5")}}
	hs = SetIndex(hs, 2, 3)
	i, n, ok := IndexOf(&kgo.Record{Headers: hs})
	if !ok || i != 2 || n != 3 {
		t.Fatalf("IndexOf = %d, %d, %v", i, n, ok)
	}
	if len(hs) != 3 || hs[0].Key != "a" {
		t.Fatalf("headers %v: want the other header kept and one position", hs)
	}
}

func TestSetSourceDropsAnUpstreamFanOutPosition(t *testing.T) {
	hs := SetSource(SetIndex(nil, 0, 2), Source{Topic: "t"})
	if i, n, ok := IndexOf(&kgo.Record{Headers: hs}); !ok || i != 0 || n != 1 || len(hs) != 3 {
		t.Fatalf("headers %v: want only the source coordinates (a single output, 0 of 1)", hs)
	}
}

func TestLabelNumbersOnlyAFanOut(t *testing.T) {
	src := Source{Topic: "t", Partition: 1, Offset: 7}
	if hs := Label(nil, src, 0, 1); len(hs) != 3 {
		t.Fatalf("single output: headers %v, want only the source coordinates", hs)
	}
	hs := Label(nil, src, 1, 3)
	if i, n, ok := IndexOf(&kgo.Record{Headers: hs}); !ok || i != 1 || n != 3 || len(hs) != 5 {
		t.Fatalf("fan-out: headers %v, IndexOf = %d of %d (%v)", hs, i, n, ok)
	}
}

func TestIndexOfRejectsMissingOrMalformedPositions(t *testing.T) {
	for name, hs := range map[string][]kgo.RecordHeader{
		"no count":         {{Key: HeaderSourceIndex, Value: []byte("0")}},
		"negative":         {{Key: HeaderSourceIndex, Value: []byte("-1")}, {Key: HeaderSourceCount, Value: []byte("1")}},
		"index past count": {{Key: HeaderSourceIndex, Value: []byte("1")}, {Key: HeaderSourceCount, Value: []byte("1")}},
	} {
		if _, _, ok := IndexOf(&kgo.Record{Headers: hs}); ok {
			t.Errorf("%s: IndexOf accepted %v", name, hs)
		}
	}
}

func TestSetReplayReplacesAnEarlierReplaysHeadersAndReplayOfReadsThem(t *testing.T) {
	hs := SetReplay([]kgo.RecordHeader{{Key: "a", Value: []byte("1")}}, Source{Topic: "orders", Partition: 1, Offset: 2}, "old")
	hs = SetReplay(hs, Source{Topic: "orders", Partition: 3, Offset: 4}, "new")
	of, job, ok := ReplayOf(&kgo.Record{Headers: hs})
	if !ok || of != (Source{"orders", 3, 4}) || job != "new" || len(hs) != 5 || hs[0].Key != "a" {
		t.Fatalf("ReplayOf = %+v, %q, %v; headers %v", of, job, ok, hs)
	}
	if _, _, ok := ReplayOf(&kgo.Record{Headers: []kgo.RecordHeader{{Key: HeaderReplayOfTopic, Value: []byte("t")}}}); ok {
		t.Fatal("ReplayOf accepted a record with only a topic")
	}
}

func TestSetSourceValuesDoNotShareRoomToGrowInto(t *testing.T) {
	for _, src := range []Source{{Topic: "orders", Partition: 0, Offset: 0}, {Topic: "o", Partition: 2147483647, Offset: 9223372036854775807}, {Topic: "t", Partition: -1, Offset: -42}} {
		hs := SetSource(nil, src)
		got, ok := SourceOf(&kgo.Record{Headers: hs})
		if !ok || got != src {
			t.Fatalf("SourceOf(SetSource(%+v)) = %+v, %v", src, got, ok)
		}
		for _, h := range hs {
			if cap(h.Value) != len(h.Value) {
				t.Fatalf("header %s has room to grow (len %d, cap %d): an append would overwrite its neighbour", h.Key, len(h.Value), cap(h.Value))
			}
		}
	}
}
