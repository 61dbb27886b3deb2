package lineage

import (
	"reflect"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sharerelay/sharerelay/transform"
)

func TestOutputInARoomBuildsWhatOutputBuildsWithoutAllocating(t *testing.T) {
	src := Source{Topic: "orders", Partition: 2, Offset: 1_234_567}
	o := &transform.Record{Key: []byte("k"), Value: []byte("v")}
	want := Output(o, "jobs", src, 0, 1)
	room := Room{Headers: make([]kgo.RecordHeader, 0, OutputRoom(0)), Bytes: make([]byte, 0, SourceBytes(src.Topic))}
	var got kgo.Record
	if n := testing.AllocsPerRun(100, func() { got = OutputIn(o, "jobs", src, 0, 1, room) }); n != 0 {
		t.Fatalf("OutputIn allocated %v times a record with room for its headers", n)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("OutputIn = %+v, Output = %+v", got, want)
	}
	if &got.Headers[0] != &room.Headers[:1][0] || &got.Headers[0].Value[0] != &room.Bytes[:1][0] {
		t.Fatal("OutputIn did not build the headers in the room it was given")
	}
}

func TestOutputInAllocatesWhatDoesNotFitItsRoom(t *testing.T) {
	src := Source{Topic: "orders", Partition: -2147483648, Offset: -9223372036854775808}
	o := &transform.Record{Headers: []transform.Header{{Key: "trace", Value: []byte("x")}, {Key: HeaderSourceIndex, Value: []byte("1")}}}
	small := Room{Headers: make([]kgo.RecordHeader, 0, 1), Bytes: make([]byte, 0, 3)}
	for _, count := range []int{1, 3} {
		got := OutputIn(o, "jobs", src, 0, count, small)
		want := Output(o, "jobs", src, 0, count)
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("count %d: OutputIn in a small room = %+v, Output = %+v", count, got, want)
		}
		if s, ok := SourceOf(&got); !ok || s != src {
			t.Fatalf("count %d: SourceOf = %+v, %v", count, s, ok)
		}
		if i, n, ok := IndexOf(&got); !ok || i != 0 || n != count {
			t.Fatalf("count %d: IndexOf = %d of %d (%v); headers %v", count, i, n, ok, got.Headers)
		}
	}
}

func TestOutputsInNeighbouringRoomsDoNotShareRoomToGrowInto(t *testing.T) {
	hs := make([]kgo.RecordHeader, 2*OutputRoom(0))
	bs := make([]byte, 2*SourceBytes("t"))
	var outs [2]kgo.Record
	for i := range outs {
		h, b := OutputRoom(0), SourceBytes("t")
		room := Room{Headers: hs[i*h : i*h : (i+1)*h], Bytes: bs[i*b : i*b : (i+1)*b]}
		outs[i] = OutputIn(&transform.Record{}, "jobs", Source{Topic: "t", Partition: int32(i), Offset: int64(10 + i)}, 0, 1, room)
	}
	// Growing the first record's headers and values must leave the
	// second's alone.
	outs[0].Headers = append(outs[0].Headers, kgo.RecordHeader{Key: "x"})
	for j := range outs[0].Headers[:3] {
		outs[0].Headers[j].Value = append(outs[0].Headers[j].Value, '!')
	}
	if s, ok := SourceOf(&outs[1]); !ok || s != (Source{Topic: "t", Partition: 1, Offset: 11}) || len(outs[1].Headers) != 3 {
		t.Fatalf("the second output's headers changed: %v", outs[1].Headers)
	}
}

func TestCopyIntoBuildsWhatOutputBuildsForAnUntransformedRecord(t *testing.T) {
	for _, r := range []*kgo.Record{
		{Topic: "orders", Partition: 1, Offset: 42, Key: []byte("k"), Value: []byte("v")},
		{Topic: "orders", Partition: 0, Offset: 7, Value: []byte("v"), Headers: []kgo.RecordHeader{
			{Key: "trace", Value: []byte("t")}, {Key: HeaderSourceTopic, Value: []byte("upstream")}, {Key: HeaderSourceCount, Value: []byte("2")}, {Key: "trace", Value: []byte("u")},
		}},
	} {
		in := &transform.Record{Key: r.Key, Value: r.Value}
		for _, h := range r.Headers {
			in.Headers = append(in.Headers, transform.Header{Key: h.Key, Value: h.Value})
		}
		want := Output(in, "jobs", Source{Topic: r.Topic, Partition: r.Partition, Offset: r.Offset}, 0, 1)
		for _, room := range []Room{{}, {Headers: make([]kgo.RecordHeader, 0, OutputRoom(len(r.Headers))), Bytes: make([]byte, 0, SourceBytes(r.Topic))}} {
			var got kgo.Record
			CopyInto(&got, r, "jobs", room, false)
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("CopyInto = %+v\nOutput   = %+v", got, want)
			}
		}
	}
}

// BenchmarkOutput is what labelling one output costs, allocating its
// headers (Output) or in room carved from a batch's block (OutputIn).
func BenchmarkOutput(b *testing.B) {
	src := Source{Topic: "orders", Partition: 2, Offset: 1_234_567}
	o := &transform.Record{Key: []byte("k"), Value: make([]byte, 200)}
	b.Run("alone", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			_ = Output(o, "jobs", src, 0, 1)
		}
	})
	b.Run("copy-in-room", func(b *testing.B) {
		const n = 2000
		r := &kgo.Record{Topic: src.Topic, Partition: src.Partition, Offset: src.Offset, Key: o.Key, Value: o.Value}
		hs := make([]kgo.RecordHeader, n*OutputRoom(0))
		bs := make([]byte, n*SourceBytes(src.Topic))
		outs := make([]kgo.Record, n)
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			h, c := OutputRoom(0), SourceBytes(src.Topic)
			CopyInto(&outs[i], r, "jobs", Room{Headers: hs[i*h : i*h : (i+1)*h], Bytes: bs[i*c : i*c : (i+1)*c]}, false)
			if i++; i == n {
				i = 0
			}
		}
	})
	b.Run("in-room", func(b *testing.B) {
		const n = 2000
		hs := make([]kgo.RecordHeader, n*OutputRoom(0))
		bs := make([]byte, n*SourceBytes(src.Topic))
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			h, c := OutputRoom(0), SourceBytes(src.Topic)
			_ = OutputIn(o, "jobs", src, 0, 1, Room{Headers: hs[i*h : i*h : (i+1)*h], Bytes: bs[i*c : i*c : (i+1)*c]})
			if i++; i == n {
				i = 0
			}
		}
	})
}
