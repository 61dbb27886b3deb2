// Package audit reads what a pipeline wrote — output and dead-letter topics,
// read_committed, up to a snapshot of their end — and counts it per source
// record, using the sharerelay.source.* headers. The demo, the tests and
// `relay verify` all judge "nothing lost, nothing duplicated" with it.
//
// A pipeline with source.cluster spans two clusters: the sources and the
// share group (their lag) are read on the source cluster, what the
// pipeline wrote — outputs, dead letters, claim ledger — on the sink
// cluster. Every reader here takes the client options of the cluster its
// topics are on; VerifyConfig takes both.
package audit

import (
	"context"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sharerelay/sharerelay/lineage"
)

// Tally is what a set of topics holds, per source record.
type Tally struct {
	// BySource counts records per source coordinate.
	BySource map[lineage.Source]int
	// Records is the number of data records read.
	Records int
	// Unlabelled counts records without sharerelay.source.* headers.
	Unlabelled int
}

// Duplicates returns the source coordinates that appear more than once.
func (t Tally) Duplicates() []lineage.Source {
	var out []lineage.Source
	for s, n := range t.BySource {
		if n > 1 {
			out = append(out, s)
		}
	}
	return out
}

// ReadCommitted reads topics from their start to their last stable offset
// at the time of the call, read_committed, and tallies the records. opts
// must include the seed brokers of the cluster the topics are on. It gives
// up when ctx ends.
func ReadCommitted(ctx context.Context, opts []kgo.Opt, topics ...string) (Tally, error) {
	return read(ctx, opts, true, topics)
}

// ReadUncommitted is ReadCommitted with read_uncommitted: it includes the
// data of aborted transactions, so the difference counts aborted writes.
func ReadUncommitted(ctx context.Context, opts []kgo.Opt, topics ...string) (Tally, error) {
	return read(ctx, opts, false, topics)
}

func read(ctx context.Context, opts []kgo.Opt, committed bool, topics []string) (Tally, error) {
	t := Tally{BySource: make(map[lineage.Source]int)}
	err := scan(ctx, opts, committed, topics, nil, func(r *kgo.Record) {
		if r.Attrs.IsControl() {
			return
		}
		t.Records++
		src, ok := lineage.SourceOf(r)
		if !ok {
			t.Unlabelled++
			return
		}
		t.BySource[src]++
	})
	return t, err
}

// scan reads topics from their start to a snapshot of their ends (the last
// stable offsets when committed) and calls onRecord for every record below
// it, control records (transaction markers) included. onEnds, if set, sees
// the snapshot first.
func scan(ctx context.Context, opts []kgo.Opt, committed bool, topics []string, onEnds func(kadm.ListedOffsets), onRecord func(*kgo.Record)) error {
	ends, err := snapshotEnds(ctx, opts, committed, topics)
	if err != nil {
		return err
	}
	if onEnds != nil {
		onEnds(ends)
	}
	want, remaining := nonEmptyFromStart(ends)
	if remaining == 0 {
		return nil
	}
	cl, err := newScanConsumer(opts, committed, want)
	if err != nil {
		return err
	}
	defer cl.Close()
	done := make(map[string]map[int32]bool)
	for remaining > 0 {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			return fmt.Errorf("audit: reading %v (%d partitions unfinished): %w", topics, remaining, ctx.Err())
		}
		var ferr error
		fs.EachError(func(tp string, p int32, err error) {
			ferr = fmt.Errorf("audit: reading %s[%d]: %w", tp, p, err)
		})
		if ferr != nil {
			return ferr
		}
		fs.EachRecord(func(r *kgo.Record) {
			end, _ := ends.Lookup(r.Topic, r.Partition)
			if r.Offset >= end.Offset {
				return // past the snapshot
			}
			if r.Offset == end.Offset-1 {
				if done[r.Topic] == nil {
					done[r.Topic] = make(map[int32]bool)
				}
				if !done[r.Topic][r.Partition] {
					done[r.Topic][r.Partition] = true
					remaining--
				}
			}
			onRecord(r)
		})
	}
	return nil
}

// snapshotEnds lists the topics' ends: the last stable offsets when
// committed, the high watermarks otherwise.
func snapshotEnds(ctx context.Context, opts []kgo.Opt, committed bool, topics []string) (kadm.ListedOffsets, error) {
	admCl, err := kgo.NewClient(opts...)
	if err != nil {
		return nil, fmt.Errorf("audit: creating client: %w", err)
	}
	adm := kadm.NewClient(admCl)
	var ends kadm.ListedOffsets
	if committed {
		ends, err = adm.ListCommittedOffsets(ctx, topics...)
	} else {
		ends, err = adm.ListEndOffsets(ctx, topics...)
	}
	admCl.Close()
	if err == nil {
		err = ends.Error()
	}
	if err != nil {
		return nil, fmt.Errorf("audit: listing end offsets of %v: %w", topics, err)
	}
	return ends, nil
}

// nonEmptyFromStart returns the partitions of ends that have records below
// their end, each to be consumed from its start, and how many there are.
func nonEmptyFromStart(ends kadm.ListedOffsets) (map[string]map[int32]kgo.Offset, int) {
	want := make(map[string]map[int32]kgo.Offset)
	remaining := 0
	ends.Each(func(o kadm.ListedOffset) {
		if o.Offset <= 0 {
			return
		}
		if want[o.Topic] == nil {
			want[o.Topic] = make(map[int32]kgo.Offset)
		}
		want[o.Topic][o.Partition] = kgo.NewOffset().AtStart()
		remaining++
	})
	return want, remaining
}

// newScanConsumer returns a client consuming the partitions of want with
// the isolation level committed asks for, control records kept.
func newScanConsumer(opts []kgo.Opt, committed bool, want map[string]map[int32]kgo.Offset) (*kgo.Client, error) {
	iso := kgo.ReadUncommitted()
	if committed {
		iso = kgo.ReadCommitted()
	}
	cl, err := kgo.NewClient(append(append([]kgo.Opt{}, opts...),
		kgo.ConsumePartitions(want),
		kgo.FetchIsolationLevel(iso),
		kgo.KeepControlRecords(),
		kgo.FetchMaxWait(500*time.Millisecond),
	)...)
	if err != nil {
		return nil, fmt.Errorf("audit: creating consumer: %w", err)
	}
	return cl, nil
}
