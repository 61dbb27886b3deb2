package dlq

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// Snapshot is how far a read of the dead-letter topic goes: its last
// stable offset per partition when the read started. Dead letters written
// later are left for the next run.
type Snapshot struct {
	Topic   string          `json:"topic"`
	TopicID [16]byte        `json:"-"`
	Ends    map[int32]int64 `json:"ends"`
}

// ErrNoTopic means the dead-letter topic does not exist.
var ErrNoTopic = errors.New("dlq: the dead-letter topic does not exist")

// read reads topic read_committed from its start — or, for the
// partitions in starts, from there; the others not at all — up to the
// last stable offsets at the time of the call, and hands each poll's
// records to fn in offset order per partition, with the snapshot. It
// stops at fn's first error.
func read(ctx context.Context, opts []kgo.Opt, topic string, starts map[int32]int64, fn func(*Snapshot, []*kgo.Record) error) (Snapshot, error) {
	snap := Snapshot{Topic: topic, Ends: map[int32]int64{}}
	ends, err := lookUpTopic(ctx, opts, &snap)
	if err != nil {
		return snap, err
	}
	want := snap.partitionsToRead(ends, starts)
	if len(want) == 0 {
		return snap, nil
	}
	cl, err := newSnapshotReader(opts, topic, want)
	if err != nil {
		return snap, err
	}
	defer cl.Close()
	for len(want) > 0 {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			return snap, fmt.Errorf("dlq: reading %s: %w", topic, ctx.Err())
		}
		var ferr error
		fs.EachError(func(_ string, p int32, err error) {
			if ferr == nil {
				ferr = fmt.Errorf("dlq: reading %s[%d]: %w", topic, p, err)
			}
		})
		if ferr != nil {
			return snap, ferr
		}
		var recs []*kgo.Record
		fs.EachRecord(func(r *kgo.Record) {
			end := snap.Ends[r.Partition]
			if r.Offset >= end {
				return
			}
			if r.Offset == end-1 {
				delete(want, r.Partition)
			}
			if !r.Attrs.IsControl() {
				recs = append(recs, r)
			}
		})
		if len(recs) > 0 {
			if err := fn(&snap, recs); err != nil {
				return snap, err
			}
		}
	}
	return snap, nil
}

// lookUpTopic sets snap.TopicID and returns the last stable offsets of
// snap.Topic (ErrNoTopic when it does not exist).
func lookUpTopic(ctx context.Context, opts []kgo.Opt, snap *Snapshot) (kadm.ListedOffsets, error) {
	topic := snap.Topic
	admCl, err := kgo.NewClient(opts...)
	if err != nil {
		return nil, fmt.Errorf("dlq: creating client: %w", err)
	}
	adm := kadm.NewClient(admCl)
	td, err := adm.ListTopics(ctx, topic)
	var ends kadm.ListedOffsets
	if err == nil {
		if d, ok := td[topic]; !ok || errors.Is(d.Err, kerr.UnknownTopicOrPartition) {
			err = fmt.Errorf("%w: %s", ErrNoTopic, topic)
		} else if err = d.Err; err == nil {
			snap.TopicID = d.ID
			ends, err = adm.ListCommittedOffsets(ctx, topic)
			if err == nil {
				err = ends.Error()
			}
		}
	}
	admCl.Close()
	if err != nil {
		return nil, fmt.Errorf("dlq: looking up %s: %w", topic, err)
	}
	return ends, nil
}

// partitionsToRead records ends in snap.Ends and returns where to read
// each partition with records below its end: from its offset in starts,
// skipping the partitions starts does not name (from 0 when starts is
// nil).
func (snap *Snapshot) partitionsToRead(ends kadm.ListedOffsets, starts map[int32]int64) map[int32]kgo.Offset {
	want := map[int32]kgo.Offset{}
	ends.Each(func(o kadm.ListedOffset) {
		snap.Ends[o.Partition] = o.Offset
		from, named := starts[o.Partition]
		if starts != nil && !named || from >= o.Offset || o.Offset <= 0 {
			return
		}
		want[o.Partition] = kgo.NewOffset().At(from)
	})
	return want
}

// newSnapshotReader returns a read_committed consumer of topic's
// partitions from the offsets in want.
func newSnapshotReader(opts []kgo.Opt, topic string, want map[int32]kgo.Offset) (*kgo.Client, error) {
	cl, err := kgo.NewClient(append(append([]kgo.Opt{}, opts...),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: want}),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		// The last offset below the snapshot's end is a transaction
		// marker: keep them, to see that end.
		kgo.KeepControlRecords(),
		kgo.FetchMaxWait(500*time.Millisecond),
	)...)
	if err != nil {
		return nil, fmt.Errorf("dlq: creating consumer: %w", err)
	}
	return cl, nil
}
