package eos

import (
	"context"

	"github.com/twmb/franz-go/pkg/kgo"
)

// Source identifies one source record: the coordinates its outputs carry in
// their sharerelay.source.* headers. TopicID distinguishes a topic from a
// deleted and recreated one of the same name (whose offsets restart at 0).
type Source struct {
	Topic     string
	TopicID   [16]byte
	Partition int32
	Offset    int64
}

// Tx is the part of a worker's open transaction a Guard may use.
type Tx interface {
	// ProducerID returns the producer id and epoch of the transaction.
	ProducerID(ctx context.Context) (int64, int16, error)
	// TransactionalID returns the producer's transactional id.
	TransactionalID() string
}

// Guard is one worker's handle on the delivery protocol. The worker calls it
// at three points of every batch:
//
//  1. Committed, before transforming: records already committed by an
//     earlier transaction are accepted without producing anything.
//  2. Claims, inside the open transaction: the Guard returns the records
//     that claim the batch's sources, and the worker produces them in one
//     request with the outputs (a separate request would cost a round trip
//     per transaction). Then Check, before the commit: the Guard says which
//     records an earlier transaction has committed meanwhile; if any, the
//     worker aborts, accepts those and redoes the rest.
//  3. Resolve, when the commit's outcome is unknown: the Guard decides
//     whether the transaction committed. It never guesses.
//
// A Guard is used by one worker goroutine at a time, but for Committed,
// which only reads the ledger and may run while another goroutine ends
// the Guard's transaction (a worker commits a batch's last transaction in
// the background while it takes the next batch).
type Guard interface {
	Committed(srcs []Source) []bool
	Claims(ctx context.Context, tx Tx, srcs []Source, outputs []string, since int64) ([]*kgo.Record, error)
	Check(ctx context.Context) (conflicts []bool, err error)
	Resolve(ctx context.Context) (committed bool, err error)
	// Close releases the Guard's resources.
	Close()
}

// Since is what a transaction writing recs passes to Guard.Claims: the
// earliest timestamp (Unix milliseconds) among the records stamped before
// they are produced (with their source's time, or an expression's), or 0
// when none is (the producer stamps them with its clock, about the
// claim's time). The resolver finds a transaction's records in its output
// partitions by time, and a record stamped with its source's time may be
// far older than its writing.
func Since(recs []*kgo.Record) int64 {
	var since int64
	for _, r := range recs {
		if r.Timestamp.IsZero() {
			continue
		}
		if ms := r.Timestamp.UnixMilli(); since == 0 || ms < since {
			since = ms
		}
	}
	return since
}

// AtLeastOnce is the Guard of delivery: at-least-once. It claims nothing,
// so a record whose lock expires while its transaction commits, or whose
// acknowledgement is lost after the commit, is processed again: outputs may
// be duplicated, never lost. An unknown commit outcome is treated as "not
// committed" (the record is released), which is what makes it at-least-once.
type AtLeastOnce struct{}

// Committed reports nothing as committed.
func (AtLeastOnce) Committed(srcs []Source) []bool { return make([]bool, len(srcs)) }

// Claims claims nothing.
func (AtLeastOnce) Claims(context.Context, Tx, []Source, []string, int64) ([]*kgo.Record, error) {
	return nil, nil
}

// Check reports no conflict.
func (AtLeastOnce) Check(context.Context) ([]bool, error) { return nil, nil }

// Resolve reports "not committed": the records are released and may be
// duplicated.
func (AtLeastOnce) Resolve(context.Context) (bool, error) { return false, nil }

// Close does nothing.
func (AtLeastOnce) Close() {}
