package eos

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// snapshotKey is the snapshot topic's key for a generation: the topic is
// compacted, so only the latest snapshot of each generation is kept.
func snapshotKey(gen int64) []byte { return []byte("gen-" + strconv.FormatInt(gen, 10)) }

// loadSnapshot returns the most advanced snapshot of this generation in the
// snapshot topic, or nil.
func (l *Ledger) loadSnapshot(ctx context.Context) (*Snapshot, error) {
	admCl, err := kgo.NewClient(append(append([]kgo.Opt{}, l.cfg.ClientOpts...), kgo.MetadataMinAge(100*time.Millisecond))...)
	if err != nil {
		return nil, fmt.Errorf("eos: %w", err)
	}
	ends, err := retryListing(ctx, admCl, func(adm *kadm.Client) (kadm.ListedOffsets, error) {
		return adm.ListEndOffsets(ctx, l.cfg.SnapshotTopic)
	})
	admCl.Close()
	if err != nil {
		return nil, fmt.Errorf("eos: listing end offsets of %s: %w", l.cfg.SnapshotTopic, err)
	}
	end, _ := ends.Lookup(l.cfg.SnapshotTopic, 0)
	if end.Offset <= 0 {
		return nil, nil
	}
	cl, err := kgo.NewClient(append(append([]kgo.Opt{}, l.cfg.ClientOpts...),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{l.cfg.SnapshotTopic: {0: kgo.NewOffset().AtStart()}}),
		kgo.FetchMaxWait(200*time.Millisecond),
	)...)
	if err != nil {
		return nil, fmt.Errorf("eos: %w", err)
	}
	defer cl.Close()
	want := string(snapshotKey(l.cfg.Gen))
	var best *Snapshot
	bestPos := int64(-1)
	for {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			return nil, fmt.Errorf("eos: reading snapshots: %w", ctx.Err())
		}
		var ferr error
		fs.EachError(func(_ string, _ int32, err error) { ferr = err })
		if ferr != nil {
			return nil, fmt.Errorf("eos: reading snapshots: %w", ferr)
		}
		last := int64(-1)
		fs.EachRecord(func(r *kgo.Record) {
			last = r.Offset
			if string(r.Key) != want {
				return
			}
			var s Snapshot
			if err := json.Unmarshal(r.Value, &s); err != nil || s.Gen != l.cfg.Gen {
				l.log.Warn("skipping an unreadable snapshot", "offset", r.Offset, "err", err)
				return
			}
			var pos int64
			for _, n := range s.Next {
				pos += n
			}
			if pos >= bestPos {
				best, bestPos = &s, pos
			}
		})
		if last >= end.Offset-1 {
			return best, nil
		}
	}
}

// snapshotLoop writes a snapshot every SnapshotEvery when the index moved.
func (l *Ledger) snapshotLoop(ctx context.Context) {
	defer l.wg.Done()
	t := time.NewTicker(l.cfg.SnapshotEvery)
	defer t.Stop()
	var lastPos int64 = -1
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		pos, err := l.WriteSnapshot(ctx, lastPos)
		if err != nil {
			if ctx.Err() == nil {
				l.log.Warn("writing a ledger snapshot", "err", err)
			}
			continue
		}
		lastPos = pos
	}
}

// WriteSnapshot writes a snapshot of the index unless it has not moved
// since position skipAt (the sum of its per-partition positions). It returns
// the snapshot's position.
func (l *Ledger) WriteSnapshot(ctx context.Context, skipAt int64) (int64, error) {
	l.mu.Lock()
	s := l.idx.Snapshot()
	l.mu.Unlock()
	var pos int64
	for _, n := range s.Next {
		pos += n
	}
	if pos == skipAt {
		return pos, nil
	}
	v, err := json.Marshal(s)
	if err != nil {
		return skipAt, fmt.Errorf("eos: encoding snapshot: %w", err)
	}
	rec := &kgo.Record{Topic: l.cfg.SnapshotTopic, Key: snapshotKey(l.cfg.Gen), Value: v}
	if err := l.snap.ProduceSync(ctx, rec).FirstErr(); err != nil {
		return skipAt, fmt.Errorf("eos: producing snapshot: %w", err)
	}
	l.log.Debug("ledger snapshot written", "next", s.Next, "bytes", len(v), "pending", len(s.Pending))
	return pos, nil
}

// retryListing lists offsets, retrying for a while when a topic created a
// moment ago is not served everywhere yet.
func retryListing(ctx context.Context, cl *kgo.Client, list func(*kadm.Client) (kadm.ListedOffsets, error)) (kadm.ListedOffsets, error) {
	adm := kadm.NewClient(cl)
	for attempt := 0; ; attempt++ {
		l, err := list(adm)
		if err == nil {
			err = l.Error()
		}
		if err == nil {
			return l, nil
		}
		if attempt >= 100 || ctx.Err() != nil {
			return nil, err
		}
		cl.ForceMetadataRefresh()
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}
