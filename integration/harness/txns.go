package harness

import (
	"context"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
)

// OpenTransactions returns the partitions of topics that hold an open
// transaction: whose last stable offset is below their high watermark, so
// that read_committed readers cannot see past it. Each is described as
// "topic[partition] lso L hw H". A partition the broker answers with an
// error is an error, not an answer: it may well hold an open transaction.
func OpenTransactions(ctx context.Context, adm *kadm.Client, topics ...string) ([]string, error) {
	hw, err := adm.ListEndOffsets(ctx, topics...)
	if err == nil {
		err = hw.Error()
	}
	if err != nil {
		return nil, fmt.Errorf("high watermarks of %v: %w", topics, err)
	}
	ls, err := adm.ListCommittedOffsets(ctx, topics...)
	if err == nil {
		err = ls.Error()
	}
	if err != nil {
		return nil, fmt.Errorf("last stable offsets of %v: %w", topics, err)
	}
	var open []string
	hw.Each(func(o kadm.ListedOffset) {
		if l, ok := ls.Lookup(o.Topic, o.Partition); !ok || l.Offset != o.Offset {
			open = append(open, fmt.Sprintf("%s[%d] lso %d hw %d", o.Topic, o.Partition, l.Offset, o.Offset))
		}
	})
	return open, nil
}

// WaitNoOpenTransactions polls OpenTransactions every 200 ms until no
// partition of topics holds an open transaction, and fails when ctx ends
// first, with the partitions still open (or the last error). A test waits
// for it before it kills a single broker: one killed while commit markers
// are being written can leave a transaction open for good.
func WaitNoOpenTransactions(ctx context.Context, adm *kadm.Client, topics ...string) error {
	for {
		open, err := OpenTransactions(ctx, adm, topics...)
		if err == nil && len(open) == 0 {
			return nil
		}
		select {
		case <-ctx.Done():
			if err != nil {
				return fmt.Errorf("waiting for no open transaction on %v: %w (last error: %v)", topics, ctx.Err(), err)
			}
			return fmt.Errorf("waiting for no open transaction on %v: %w; still open: %v", topics, ctx.Err(), open)
		case <-time.After(200 * time.Millisecond):
		}
	}
}
