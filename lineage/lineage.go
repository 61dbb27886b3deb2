// Package lineage names the record headers that tie every record the relay
// writes to the source record it came from, and the dead-letter headers that
// say why a record was dead-lettered. Auditing tools (relay verify among
// them) rely on these names; they are part of the product's interface.
package lineage

import (
	"strconv"

	"github.com/twmb/franz-go/pkg/kgo"
)

// Source coordinates, on every output and dead-letter record, as decimal
// strings.
const (
	HeaderSourceTopic     = "sharerelay.source.topic"
	HeaderSourcePartition = "sharerelay.source.partition"
	HeaderSourceOffset    = "sharerelay.source.offset"
)

// Fan-out position, on every output record (not on dead letters), as
// decimal strings: the record's index among the outputs of its source
// record (0-based, in the order the transform chain returned them) and
// how many outputs that source record has. With the source coordinates
// they tell a fan-out (indexes 0 to count-1, once each) from a duplicate
// (the same index twice).
const (
	HeaderSourceIndex = "sharerelay.source.index"
	HeaderSourceCount = "sharerelay.source.count"
)

// Dead-letter headers follow Kafka Connect's __connect.errors.* convention
// (DeadLetterQueueReporter), so existing DLQ tooling can read them. The
// names Connect does not have (delivery count, time, kind) use the same
// prefix.
const (
	DLQPrefix              = "__connect.errors."
	HeaderDLQTopic         = DLQPrefix + "topic"
	HeaderDLQPartition     = DLQPrefix + "partition"
	HeaderDLQOffset        = DLQPrefix + "offset"
	HeaderDLQPipeline      = DLQPrefix + "connector.name"
	HeaderDLQWorker        = DLQPrefix + "task.id"
	HeaderDLQStage         = DLQPrefix + "stage"
	HeaderDLQStep          = DLQPrefix + "class.name"
	HeaderDLQErrorClass    = DLQPrefix + "exception.class.name"
	HeaderDLQErrorMessage  = DLQPrefix + "exception.message"
	HeaderDLQDeliveryCount = DLQPrefix + "delivery.count"
	HeaderDLQTime          = DLQPrefix + "timestamp"
	HeaderDLQKind          = DLQPrefix + "kind"
	DLQStageTransformation = "TRANSFORMATION"
	// DLQStageValueConverter and DLQStageKeyConverter mark a record whose
	// value or key could not be read or written in its format (bytes
	// that do not decode, a schema id the registry does not know, a value
	// that does not fit the output's schema): Connect's stages of its
	// converters.
	DLQStageValueConverter   = "VALUE_CONVERTER"
	DLQStageKeyConverter     = "KEY_CONVERTER"
	DLQKindPermanent         = "permanent"
	DLQKindAttemptsExhausted = "attempts-exhausted"
	// DLQStageProduce and DLQKindWrite mark a record whose outputs the
	// cluster refuses for good (too large for the topic or the client,
	// invalid): Connect's KAFKA_PRODUCE stage.
	DLQStageProduce = "KAFKA_PRODUCE"
	DLQKindWrite    = "write"
	// HeaderDLQValueOmitted, on a dead letter that would itself be too
	// large, holds the size in bytes of the source value left out;
	// HeaderDLQHeadersOmitted the number of source headers left out.
	HeaderDLQValueOmitted   = DLQPrefix + "value.omitted.bytes"
	HeaderDLQHeadersOmitted = DLQPrefix + "headers.omitted"
	HeaderDLQKeyOmitted     = DLQPrefix + "key.omitted.bytes"
)

// Replay headers, on every record `relay dlq replay` writes (outputs,
// copies and dead letters written again). The replay treats each dead
// letter as a source record: sharerelay.source.* name the dead letter's
// own coordinates (dead-letter topic, partition, offset), so a replayed
// dead letter is counted once like any source record, and these name the
// original source record the dead letter stood for — carried over when a
// dead letter of a replay is replayed again. sharerelay.replay.job names
// the replay job that wrote the record.
const (
	HeaderReplayOfTopic     = "sharerelay.replay.of.topic"
	HeaderReplayOfPartition = "sharerelay.replay.of.partition"
	HeaderReplayOfOffset    = "sharerelay.replay.of.offset"
	HeaderReplayJob         = "sharerelay.replay.job"
)

// Source is a source record's coordinates.
type Source struct {
	Topic     string
	Partition int32
	Offset    int64
}

// SetSource replaces any sharerelay.source.* headers in hs with src's and
// returns the result. The fan-out position of an upstream relay's output
// is dropped too: it does not describe this record (see SetIndex).
func SetSource(hs []kgo.RecordHeader, src Source) []kgo.RecordHeader {
	return label(make([]kgo.RecordHeader, 0, OutputRoom(len(hs))), hs, src, 0, 1, nil)
}

// label is the rule of SetSource, Label and OutputIn in one place: it
// appends to dst the headers of own but any lineage header (an upstream
// relay's), then src's coordinates and, for a fan-out (count > 1), the
// position index of count, and returns the result. dst may be own[:0]:
// the filter only moves headers towards the start, over ones already
// read. buf is room for the coordinates' values (appendSource).
func label(dst, own []kgo.RecordHeader, src Source, index, count int, buf []byte) []kgo.RecordHeader {
	for _, h := range own {
		if !isLineage(h.Key) {
			dst = append(dst, h)
		}
	}
	dst = appendSource(dst, src, buf)
	if count > 1 {
		dst = appendIndex(dst, index, count)
	}
	return dst
}

// isLineage reports whether key is one of the sharerelay.source.*
// headers, which SetSource replaces.
func isLineage(key string) bool {
	switch key {
	case HeaderSourceTopic, HeaderSourcePartition, HeaderSourceOffset, HeaderSourceIndex, HeaderSourceCount:
		return true
	}
	return false
}

// appendSource appends src's coordinates to hs. The three values share
// one array, each clipped to its own length so that appending to one
// cannot overwrite another: buf when it has room for them (see Room),
// else a new one.
func appendSource(hs []kgo.RecordHeader, src Source, buf []byte) []kgo.RecordHeader {
	v := buf[:0]
	if need := len(src.Topic) + decLen(int64(src.Partition)) + decLen(src.Offset); cap(v) < need {
		v = make([]byte, 0, need)
	}
	v = append(v, src.Topic...)
	t := len(v)
	v = strconv.AppendInt(v, int64(src.Partition), 10)
	p := len(v)
	v = strconv.AppendInt(v, src.Offset, 10)
	return append(hs,
		kgo.RecordHeader{Key: HeaderSourceTopic, Value: v[:t:t]},
		kgo.RecordHeader{Key: HeaderSourcePartition, Value: v[t:p:p]},
		kgo.RecordHeader{Key: HeaderSourceOffset, Value: v[p:len(v):len(v)]},
	)
}

// SourceOf reads the sharerelay.source.* headers of r. ok is false when any
// is missing or malformed.
func SourceOf(r *kgo.Record) (src Source, ok bool) {
	var have int
	for _, h := range r.Headers {
		switch h.Key {
		case HeaderSourceTopic:
			src.Topic = string(h.Value)
			have |= 1
		case HeaderSourcePartition:
			p, err := strconv.ParseInt(string(h.Value), 10, 32)
			if err != nil {
				return src, false
			}
			src.Partition = int32(p)
			have |= 2
		case HeaderSourceOffset:
			o, err := strconv.ParseInt(string(h.Value), 10, 64)
			if err != nil {
				return src, false
			}
			src.Offset = o
			have |= 4
		}
	}
	return src, have == 7
}

// decLen is the length of n in decimal.
func decLen(n int64) int {
	l := 1
	if n < 0 {
		l, n = 2, -n // an int64's least value is no source coordinate
	}
	for ; n >= 10; n /= 10 {
		l++
	}
	return l
}

// SetIndex replaces any sharerelay.source.index and .count headers in hs
// with index and count, and returns the result.
func SetIndex(hs []kgo.RecordHeader, index, count int) []kgo.RecordHeader {
	out := hs[:0:0]
	for _, h := range hs {
		if h.Key != HeaderSourceIndex && h.Key != HeaderSourceCount {
			out = append(out, h)
		}
	}
	return appendIndex(out, index, count)
}

// appendIndex appends the fan-out position index of count to hs.
func appendIndex(hs []kgo.RecordHeader, index, count int) []kgo.RecordHeader {
	return append(hs,
		kgo.RecordHeader{Key: HeaderSourceIndex, Value: strconv.AppendInt(nil, int64(index), 10)},
		kgo.RecordHeader{Key: HeaderSourceCount, Value: strconv.AppendInt(nil, int64(count), 10)},
	)
}

// Label sets the lineage headers of output index of count outputs of the
// source record src: its coordinates, and — for a fan-out (count > 1) —
// its position. A single output carries no position (0 of 1), which saves
// two headers on every record of a pipeline without fan-out.
func Label(hs []kgo.RecordHeader, src Source, index, count int) []kgo.RecordHeader {
	return label(make([]kgo.RecordHeader, 0, OutputRoom(len(hs))+2), hs, src, index, count, nil)
}

// IndexOf reads the fan-out position of r. A record with neither header
// is a single output: index 0 of 1. ok is false when one header is
// missing or either is malformed, or index is not below count.
func IndexOf(r *kgo.Record) (index, count int, ok bool) {
	var have int
	for _, h := range r.Headers {
		switch h.Key {
		case HeaderSourceIndex, HeaderSourceCount:
			n, err := strconv.ParseUint(string(h.Value), 10, 31)
			if err != nil {
				return 0, 0, false
			}
			if h.Key == HeaderSourceIndex {
				index, have = int(n), have|1
			} else {
				count, have = int(n), have|2
			}
		}
	}
	if have == 0 {
		return 0, 1, true
	}
	return index, count, have == 3 && index < count
}

// SetReplay replaces any sharerelay.replay.* headers in hs with the
// original source record of and the replay job, and returns the result.
func SetReplay(hs []kgo.RecordHeader, of Source, job string) []kgo.RecordHeader {
	out := hs[:0:0]
	for _, h := range hs {
		switch h.Key {
		case HeaderReplayOfTopic, HeaderReplayOfPartition, HeaderReplayOfOffset, HeaderReplayJob:
			continue
		}
		out = append(out, h)
	}
	return append(out,
		kgo.RecordHeader{Key: HeaderReplayOfTopic, Value: []byte(of.Topic)},
		kgo.RecordHeader{Key: HeaderReplayOfPartition, Value: strconv.AppendInt(nil, int64(of.Partition), 10)},
		kgo.RecordHeader{Key: HeaderReplayOfOffset, Value: strconv.AppendInt(nil, of.Offset, 10)},
		kgo.RecordHeader{Key: HeaderReplayJob, Value: []byte(job)},
	)
}

// ReplayOf reads the sharerelay.replay.of.* headers of r and the job that
// wrote it. ok is false when r is no replay's record (a coordinate
// missing or malformed).
func ReplayOf(r *kgo.Record) (of Source, job string, ok bool) {
	var have int
	for _, h := range r.Headers {
		switch h.Key {
		case HeaderReplayOfTopic:
			of.Topic = string(h.Value)
			have |= 1
		case HeaderReplayOfPartition:
			p, err := strconv.ParseInt(string(h.Value), 10, 32)
			if err != nil {
				return of, "", false
			}
			of.Partition = int32(p)
			have |= 2
		case HeaderReplayOfOffset:
			o, err := strconv.ParseInt(string(h.Value), 10, 64)
			if err != nil {
				return of, "", false
			}
			of.Offset = o
			have |= 4
		case HeaderReplayJob:
			job = string(h.Value)
		}
	}
	return of, job, have == 7
}
