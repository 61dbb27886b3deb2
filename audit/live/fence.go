package live

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
)

// takeFence takes fence seq: first the share group's start offsets, on
// the source cluster, then the sources' offsets, then the outputs' and
// dead letters' on the sink cluster. The order is the settling rule: a
// record below its start offset was acknowledged, and the relay
// acknowledges a record only once its outputs' transaction committed
// (exactly-once) or the brokers acknowledged its outputs (at-least-once),
// so those outputs are below the ends read after.
//
// The start offset the group reports trails what it acknowledged: the
// broker persists a partition's new start offset only with a later
// acknowledgement, so the last records acknowledged before the group
// goes idle stay above it. Where the group reports no lag, every record
// below the partition's end is acknowledged (none is available,
// acquired or waiting); the fence then takes the end read just before,
// which is no later than the one the lag was counted against.
func takeFence(ctx context.Context, src, sink *kadm.Client, group string, sources, outputs []string, seq uint64) (*fence, error) {
	f := &fence{seq: seq, taken: time.Now(), spso: map[tp]int64{}}
	_, before, err := offsets(ctx, src, sources)
	if err != nil {
		return nil, err
	}
	desc, err := src.DescribeShareGroupOffsets(ctx, group)
	if err != nil {
		return nil, fmt.Errorf("describing share group %s offsets: %w", group, err)
	}
	d := desc[group]
	switch {
	case errors.Is(d.Err, kerr.GroupIDNotFound):
		// No group yet: nothing acknowledged, nothing to judge.
	case d.Err != nil:
		return nil, fmt.Errorf("describing share group %s offsets: %w", group, d.Err)
	}
	want := map[string]bool{}
	for _, t := range sources {
		want[t] = true
	}
	for t, ps := range d.Offsets {
		if !want[t] {
			continue
		}
		for p, o := range ps {
			if o.Err != nil || o.StartOffset < 0 {
				continue
			}
			f.spso[tp{t, p}] = o.StartOffset
			if end, ok := before[tp{t, p}]; ok && o.Lag == 0 {
				f.spso[tp{t, p}] = max(o.StartOffset, end)
			}
		}
	}
	if f.srcStart, f.srcEnd, err = offsets(ctx, src, sources); err != nil {
		return nil, err
	}
	if f.outStart, f.outEnd, err = offsets(ctx, sink, outputs); err != nil {
		return nil, err
	}
	return f, nil
}

// offsets lists the topics' start and end (high watermark) offsets; a
// topic that does not exist (a dead-letter topic before its first dead
// letter) has no partitions.
func offsets(ctx context.Context, adm *kadm.Client, topics []string) (start, end map[tp]int64, err error) {
	start, end = map[tp]int64{}, map[tp]int64{}
	for _, l := range []struct {
		into map[tp]int64
		list func(context.Context, ...string) (kadm.ListedOffsets, error)
		what string
	}{{start, adm.ListStartOffsets, "start"}, {end, adm.ListEndOffsets, "end"}} {
		lo, err := l.list(ctx, topics...)
		if err != nil {
			return nil, nil, fmt.Errorf("listing %s offsets of %v: %w", l.what, topics, err)
		}
		var ferr error
		lo.Each(func(o kadm.ListedOffset) {
			switch {
			case errors.Is(o.Err, kerr.UnknownTopicOrPartition):
			case o.Err != nil:
				ferr = fmt.Errorf("listing %s offsets of %s[%d]: %w", l.what, o.Topic, o.Partition, o.Err)
			default:
				l.into[tp{o.Topic, o.Partition}] = o.Offset
			}
		})
		if ferr != nil {
			return nil, nil, ferr
		}
	}
	return start, end, nil
}
