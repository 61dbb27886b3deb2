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
