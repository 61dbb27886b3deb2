package lineage

import (
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sharerelay/sharerelay/transform"
)

// Output is the record written for output index of the count outputs the
// transform chain made of source record src: o's topic (defaultTopic when
// o names none), key, value and headers, labelled with the lineage headers
// (Label). The worker, `relay test` and the dead-letter replay all build
// outputs with it, so what a pipeline test shows is what the relay writes.
func Output(o *transform.Record, defaultTopic string, src Source, index, count int) kgo.Record {
	return OutputIn(o, defaultTopic, src, index, count, Room{})
}

// Room is memory an output's headers may take instead of allocating their
// own (OutputIn). Output is on every record's path, and two allocations a
// record — the header slice and the lineage values — are most of what the
// relay allocates for small records; a worker carves one block per batch
// into a Room per record instead. Headers is room for the header slice
// (OutputRoom says how much one output takes), Bytes for the lineage
// headers' values (SourceBytes). Whatever does not fit is allocated: the
// zero Room allocates everything.
type Room struct {
	Headers []kgo.RecordHeader
	Bytes   []byte
}

// OutputRoom is the length of the header slice OutputIn makes for a single
// output (count 1) of a record with n headers of its own: those and the
// three source coordinates.
func OutputRoom(n int) int { return n + 3 }

// SourceBytes is the most bytes the values of the source coordinates of a
// record of topic take: the topic and the decimal partition and offset.
func SourceBytes(topic string) int { return len(topic) + 11 + 20 }

// OutputIn is Output building the record's headers in room. Distinct
// records must be given disjoint rooms (each clipped to its own capacity):
// the headers of the record returned use that memory.
func OutputIn(o *transform.Record, defaultTopic string, src Source, index, count int, room Room) kgo.Record {
	n := OutputRoom(len(o.Headers))
	if count > 1 {
		n += 2
	}
	hs := room.Headers[:0]
	if cap(hs) < n {
		hs = make([]kgo.RecordHeader, 0, n)
	}
	// Label's rule, without its copies: the record's own headers are
	// converted into the room, then labelled in place.
	for _, h := range o.Headers {
		hs = append(hs, kgo.RecordHeader{Key: h.Key, Value: h.Value})
	}
	hs = label(hs[:0], hs, src, index, count, room.Bytes)
	topic := o.Topic
	if topic == "" {
		topic = defaultTopic
	}
	return kgo.Record{Topic: topic, Key: o.Key, Value: o.Value, Headers: hs, Timestamp: o.Timestamp}
}

// CopyInto sets *dst to the output of source record r through an empty
// transform chain, which passes every record through unchanged: what
// Output gives for r's key, value and headers as the only output, written
// to topic, with its headers in room (see OutputIn), and r's timestamp
// unless now (the producer then writes the time of writing). It saves the
// worker the transform record Output would need.
func CopyInto(dst, r *kgo.Record, topic string, room Room, now bool) {
	hs := room.Headers[:0]
	if n := OutputRoom(len(r.Headers)); cap(hs) < n {
		hs = make([]kgo.RecordHeader, 0, n)
	}
	hs = label(hs, r.Headers, Source{Topic: r.Topic, Partition: r.Partition, Offset: r.Offset}, 0, 1, room.Bytes)
	dst.Topic, dst.Key, dst.Value, dst.Headers = topic, r.Key, r.Value, hs
	dst.Timestamp = r.Timestamp
	if now {
		dst.Timestamp = time.Time{}
	}
}
