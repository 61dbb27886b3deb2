package relay

import (
	"context"
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/kgo"
)

// errUnresolved is returned when a batch is polled while the previous one
// still has records without an acknowledgement. The source releases them
// before polling (so nothing is auto-accepted), but it is a bug in the
// worker, counted as an invariant violation.
var errUnresolved = errors.New("relay: polled again before every record of the previous batch was acknowledged; released them")

// shareSource is the only way a worker polls. It remembers the batch it
// handed out and refuses to let franz-go auto-accept any of it: before the
// next poll, every record of the previous batch that has no acknowledgement
// is released.
type shareSource struct {
	cl   *kgo.Client
	max  int
	open *batch
	// onUnresolved is called with the number of records the safety net
	// released (a bug indicator).
	onUnresolved func(n int)
}

// batch is the records of one poll and the acknowledgement chosen for each.
// Its records can only be acknowledged through it, once each.
type batch struct {
	recs []*kgo.Record
	acks []kgo.AckStatus // 0 = not yet decided
	sent bool
}

func (b *batch) len() int { return len(b.recs) }

// set chooses the acknowledgement for record i. The first choice wins.
func (b *batch) set(i int, s kgo.AckStatus) {
	if b.acks[i] == 0 {
		b.acks[i] = s
	}
}

// setAll chooses s for every record without a choice yet.
func (b *batch) setAll(s kgo.AckStatus) {
	for i := range b.acks {
		b.set(i, s)
	}
}

// unresolved returns the number of records without a choice.
func (b *batch) unresolved() int {
	n := 0
	for _, a := range b.acks {
		if a == 0 {
			n++
		}
	}
	return n
}

// poll returns the next batch. If the previous batch still has undecided
// records they are released first, and errUnresolved is returned with the
// new batch.
func (s *shareSource) poll(ctx context.Context) (*batch, error) {
	var warn error
	if s.open != nil {
		if n := s.open.unresolved(); n > 0 {
			s.open.setAll(kgo.AckRelease)
			warn = fmt.Errorf("%w (%d records)", errUnresolved, n)
			if s.onUnresolved != nil {
				s.onUnresolved(n)
			}
		}
		if !s.open.sent {
			s.ack(s.open)
		}
		s.open = nil
	}
	fetches := s.cl.PollRecords(ctx, s.max)
	var ferr error
	fetches.EachError(func(t string, p int32, err error) {
		if ferr == nil && !errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded) {
			ferr = fmt.Errorf("polling %s[%d]: %w", t, p, err)
		}
	})
	recs := fetches.Records()
	b := &batch{recs: recs, acks: make([]kgo.AckStatus, len(recs))}
	if len(recs) > 0 {
		s.open = b
	}
	return b, errors.Join(warn, ferr)
}

// ack hands the batch's acknowledgements to the client, grouped by type.
// Records still undecided are released. The acknowledgements travel with the
// next share fetch or an explicit flush.
func (s *shareSource) ack(b *batch) map[kgo.AckStatus]int {
	b.setAll(kgo.AckRelease)
	byType := make(map[kgo.AckStatus][]*kgo.Record, 3)
	for i, r := range b.recs {
		byType[b.acks[i]] = append(byType[b.acks[i]], r)
	}
	counts := make(map[kgo.AckStatus]int, len(byType))
	for st, rs := range byType {
		s.cl.MarkAcks(st, rs...)
		counts[st] = len(rs)
	}
	b.sent = true
	if s.open == b {
		s.open = nil
	}
	return counts
}

// renew extends the lock of every record of b (KIP-1222). It is an
// optimisation only: safety never depends on a lock still being held.
func (s *shareSource) renew(b *batch) {
	s.cl.MarkAcks(kgo.AckRenew, b.recs...)
}
