package main

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sharerelay/sharerelay/lineage"
)

// runClassic runs the classic-eos contender: the exactly-once copier a
// team would write without share groups, with franz-go's
// GroupTransactSession — a classic consumer group (read_committed), each
// poll transformed (t.delay per record, sequentially), produced and
// committed with its offsets in one transaction — or classic-alo, the
// same loop without the transaction. It can use at most one consumer per
// partition; extra consumers sit idle.
func (b *bench) runClassic(ctx context.Context, t trial, tr *tracker, tc *traceCollector) error {
	wctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	defer func() { cancel(); wg.Wait() }()
	failed := make(chan error, t.workers)
	for i := range t.workers {
		opts := b.clientOpts(
			kgo.ClientID(fmt.Sprintf("%s-%d", t.name, i)),
			kgo.ConsumerGroup(t.name),
			kgo.ConsumeTopics(t.source),
			kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
			kgo.FetchIsolationLevel(kgo.ReadCommitted()),
			kgo.RequiredAcks(kgo.AllISRAcks()),
			kgo.ProducerLinger(0),
			tc.hooks(),
		)
		var (
			loop        func(context.Context) error
			closeClient func()
		)
		if t.c.noTxn {
			cl, err := kgo.NewClient(append(opts, kgo.DisableAutoCommit())...)
			if err != nil {
				return fmt.Errorf("creating classic consumer %d: %w", i, err)
			}
			loop = func(ctx context.Context) error {
				return classicLoop(ctx, cl.PollRecords, produceThenCommit(cl, t), t, tr)
			}
			closeClient = cl.Close
		} else {
			s, err := kgo.NewGroupTransactSession(append(opts,
				kgo.TransactionalID(fmt.Sprintf("%s-%d", t.name, i)),
				kgo.TransactionTimeout(10*time.Second),
			)...)
			if err != nil {
				return fmt.Errorf("creating classic consumer %d: %w", i, err)
			}
			loop = func(ctx context.Context) error { return classicLoop(ctx, s.PollRecords, transactWrite(s, t), t, tr) }
			closeClient = s.Close
		}
		wg.Go(func() {
			defer closeClient()
			if err := loop(wctx); err != nil {
				failed <- fmt.Errorf("consumer %d: %w", i, err)
			}
		})
	}
	// No share group: every record committed (with its offsets) is done.
	return b.awaitAcked(ctx, t, tr, failed)
}

// classicLoop is one consumer of a classic contender: each poll's records
// are transformed and handed to write, which reports whether they were
// committed; poll is the consumer's PollRecords.
func classicLoop(ctx context.Context, poll func(context.Context, int) kgo.Fetches, write func(context.Context, []*kgo.Record) (bool, error), t trial, tr *tracker) error {
	for {
		recs := classicPoll(ctx, poll(ctx, t.maxRecords), t)
		if ctx.Err() != nil {
			return nil
		}
		if len(recs) == 0 {
			continue
		}
		tr.receive(len(recs))
		committed, err := write(ctx, recs)
		if ctx.Err() != nil {
			return nil
		}
		if err != nil {
			return err
		}
		if committed {
			tr.ack(len(recs))
		}
	}
}

// transactWrite is classic-eos's write: the poll's outputs produced and
// its offsets committed in one transaction. A transaction that cannot end
// is reported and its records left to be fetched again.
func transactWrite(s *kgo.GroupTransactSession, t trial) func(context.Context, []*kgo.Record) (bool, error) {
	return func(ctx context.Context, recs []*kgo.Record) (bool, error) {
		if err := s.Begin(); err != nil {
			return false, fmt.Errorf("begin: %w", err)
		}
		perr := s.ProduceSync(ctx, classicOutputs(recs, t)...).FirstErr()
		committed, err := s.End(ctx, kgo.TransactionEndTry(perr == nil))
		if err != nil && ctx.Err() == nil {
			progress("warning: classic-eos: ending a transaction of %d records: %v", len(recs), err)
		}
		return committed && err == nil, nil
	}
}

// produceThenCommit is classic-alo's write: the poll's outputs produced
// (idempotent), then its offsets committed.
func produceThenCommit(cl *kgo.Client, t trial) func(context.Context, []*kgo.Record) (bool, error) {
	return func(ctx context.Context, recs []*kgo.Record) (bool, error) {
		if err := cl.ProduceSync(ctx, classicOutputs(recs, t)...).FirstErr(); err != nil {
			return false, fmt.Errorf("produce: %w", err)
		}
		if err := cl.CommitRecords(ctx, recs...); err != nil {
			return false, fmt.Errorf("commit: %w", err)
		}
		return true, nil
	}
}

// classicPoll returns the records of a classic contender's poll, after
// printing its first fetch error as a warning (franz-go retries it).
func classicPoll(ctx context.Context, fs kgo.Fetches, t trial) []*kgo.Record {
	var ferr error
	fs.EachError(func(topic string, p int32, err error) {
		if ferr == nil && ctx.Err() == nil && !errors.Is(err, context.Canceled) {
			ferr = fmt.Errorf("fetching %s[%d]: %w", topic, p, err)
		}
	})
	if ferr != nil {
		progress("warning: %s: %v", t.c.name, ferr)
	}
	return fs.Records()
}

// classicOutputs transforms the records of a classic contender's poll
// (t.delay per record, sequentially) into their outputs.
func classicOutputs(recs []*kgo.Record, t trial) []*kgo.Record {
	outs := make([]*kgo.Record, len(recs))
	for i, r := range recs {
		if t.delay > 0 {
			time.Sleep(t.delay) // the transform
		}
		src := lineage.Source{Topic: r.Topic, Partition: r.Partition, Offset: r.Offset}
		outs[i] = &kgo.Record{Topic: t.output, Key: r.Key, Value: r.Value, Headers: lineage.SetSource(r.Headers, src)}
	}
	return outs
}

// awaitAcked waits until tr has every record acknowledged (no share-group
// lag to wait for), with the stall check of await.
func (b *bench) awaitAcked(ctx context.Context, t trial, tr *tracker, failed <-chan error) error {
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	lastAcked, lastProgress := int64(-1), time.Now()
	for {
		select {
		case <-tr.done:
			return nil
		case err := <-failed:
			return fmt.Errorf("stopped before the end: %w", err)
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
			_, acked := tr.counts()
			if acked != lastAcked {
				lastAcked, lastProgress = acked, time.Now()
			} else if time.Since(lastProgress) > stallTimeout {
				return fmt.Errorf("no progress for %s (%d of %d records committed)", stallTimeout, acked, t.n)
			}
		}
	}
}
