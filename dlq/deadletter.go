package dlq

import (
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sharerelay/sharerelay/lineage"
)

// DeadLetter is one record of a dead-letter topic, with what its headers
// say.
type DeadLetter struct {
	// Record is the dead letter as read.
	Record *kgo.Record
	// Source is the original source record the dead letter stands for:
	// sharerelay.replay.of.* when a replay wrote it, else the
	// __connect.errors topic, partition and offset, else the
	// sharerelay.source.* headers. SourceOK is false when none is there.
	Source   lineage.Source
	SourceOK bool
	// Stage, Step, Class, Kind and Reason are the __connect.errors stage,
	// class.name (the transform step), exception.class.name (the error
	// class), kind and exception.message.
	Stage, Step, Class, Kind, Reason string
	// Time is __connect.errors.timestamp, or the record's timestamp when
	// that is missing or unreadable.
	Time time.Time
	// CutDown is set when the relay left the value (and perhaps the key)
	// out because the dead letter would not fit its topic: such a dead
	// letter cannot be replayed.
	CutDown bool
	// Job is the replay job that wrote it ("" when the relay did).
	Job string
}

// Parse reads the headers of dead letter r.
func Parse(r *kgo.Record) DeadLetter {
	d := DeadLetter{Record: r, Time: r.Timestamp}
	var connect lineage.Source
	var have int
	for _, h := range r.Headers {
		v := string(h.Value)
		switch h.Key {
		case lineage.HeaderDLQStage:
			d.Stage = v
		case lineage.HeaderDLQStep:
			d.Step = v
		case lineage.HeaderDLQErrorClass:
			d.Class = v
		case lineage.HeaderDLQKind:
			d.Kind = v
		case lineage.HeaderDLQErrorMessage:
			d.Reason = v
		case lineage.HeaderDLQTime:
			if t, err := time.Parse(time.RFC3339Nano, v); err == nil {
				d.Time = t
			}
		case lineage.HeaderDLQValueOmitted, lineage.HeaderDLQKeyOmitted:
			d.CutDown = true
		case lineage.HeaderDLQTopic:
			connect.Topic, have = v, have|1
		case lineage.HeaderDLQPartition:
			if p, err := strconv.ParseInt(v, 10, 32); err == nil {
				connect.Partition, have = int32(p), have|2
			}
		case lineage.HeaderDLQOffset:
			if o, err := strconv.ParseInt(v, 10, 64); err == nil {
				connect.Offset, have = o, have|4
			}
		}
	}
	if of, job, ok := lineage.ReplayOf(r); ok {
		d.Source, d.SourceOK, d.Job = of, true, job
	} else if have == 7 {
		d.Source, d.SourceOK = connect, true
	} else {
		d.Source, d.SourceOK = lineage.SourceOf(r)
	}
	return d
}

// originalHeaders returns the headers of the record d was made from: d's
// headers without the __connect.errors.*, sharerelay.source.* and
// sharerelay.replay.* ones, which describe the dead letter, not the
// record.
func originalHeaders(d DeadLetter) []kgo.RecordHeader {
	var out []kgo.RecordHeader
	for _, h := range d.Record.Headers {
		switch {
		case strings.HasPrefix(h.Key, lineage.DLQPrefix):
		case h.Key == lineage.HeaderSourceTopic, h.Key == lineage.HeaderSourcePartition, h.Key == lineage.HeaderSourceOffset,
			h.Key == lineage.HeaderSourceIndex, h.Key == lineage.HeaderSourceCount:
		case h.Key == lineage.HeaderReplayOfTopic, h.Key == lineage.HeaderReplayOfPartition, h.Key == lineage.HeaderReplayOfOffset,
			h.Key == lineage.HeaderReplayJob:
		default:
			out = append(out, kgo.RecordHeader{Key: h.Key, Value: h.Value})
		}
	}
	return out
}

// sourceString formats a source record's coordinates as topic[partition]@offset.
func sourceString(s lineage.Source) string {
	return s.Topic + "[" + strconv.Itoa(int(s.Partition)) + "]@" + strconv.FormatInt(s.Offset, 10)
}
