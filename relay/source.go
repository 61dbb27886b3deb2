package relay

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sharerelay/sharerelay/internal/failpoint"
	"github.com/sharerelay/sharerelay/internal/kafkaerr"
	"github.com/sharerelay/sharerelay/metrics"
)

// shareSource is the only way a worker receives records. It feeds the
// worker from one or more share consumers ("fetchers") of the group; each
// fetcher polls its own client in its own goroutine and polls again only
// once the worker has acknowledged every record of its previous poll —
// franz-go's next poll would accept whatever is left, so that rule is what
// keeps a record from being accepted without output. The worker takes
// every poll that is ready (next) and writes them in one transaction:
// several fetchers make transactions larger (their fixed cost is shared by
// more records) and let the next fetch overlap the current commit.
type shareSource struct {
	fetchers []*fetcher
	// waiting are polls handed over and not taken yet; arrived is
	// signalled when one is added.
	mu      sync.Mutex
	waiting []*poll
	arrived chan struct{}
	// onUnresolved is called with the number of records the safety net
	// released (a bug indicator).
	onUnresolved func(n int)
	// group is the share group, named in an authorization error.
	group string

	// stopping is closed by stop: the fetchers poll no more. idle is
	// closed once every fetcher has returned: no poll will arrive.
	stopping chan struct{}
	stopOnce sync.Once
	idle     chan struct{}
	// timers cancel the fetchers' context at the end of a stop's grace;
	// close stops them.
	timers []*time.Timer

	cancel context.CancelFunc
	wg     sync.WaitGroup
}

// fetcher is one share consumer of a worker.
type fetcher struct {
	cl *kgo.Client
	// max is max_records. PollRecords takes at most that many, which
	// the broker does not exceed with record_limit; with whole (the
	// fetches acquire whole record batches) it takes everything the
	// fetch acquired. The client fetches only inside a poll, and a
	// record left in its buffer would wait with no lock renewal
	// (docs/decisions/fetch-ahead.md).
	max   int
	whole bool
	// again is signalled when the worker has acknowledged the fetcher's
	// last poll: it may poll again.
	again chan struct{}
}

// poll is what one fetcher's PollRecords returned.
type poll struct {
	f    *fetcher
	recs []*kgo.Record
	err  error
}

// newShareSource starts a fetcher goroutine per client. Close stops them.
// wholeBatches says the clients' fetches acquire whole record batches
// (batch_optimized), often more than maxRecords: a poll then takes all of
// it.
func newShareSource(clients []*kgo.Client, group string, maxRecords int, wholeBatches bool, onUnresolved func(int)) *shareSource {
	ctx, cancel := context.WithCancel(context.Background())
	s := &shareSource{arrived: make(chan struct{}, 1), onUnresolved: onUnresolved, group: group, cancel: cancel,
		stopping: make(chan struct{}), idle: make(chan struct{})}
	for _, cl := range clients {
		f := &fetcher{cl: cl, max: maxRecords, whole: wholeBatches, again: make(chan struct{}, 1)}
		s.fetchers = append(s.fetchers, f)
		s.wg.Add(1)
		go s.fetch(ctx, f)
	}
	go func() { s.wg.Wait(); close(s.idle) }()
	return s
}

// stop tells the fetchers to poll no more (a worker draining at
// shutdown). A poll already in flight gets up to grace to come back with
// what its fetch acquired, which is handed over like any poll — those
// records are acquired, and writing them is what keeps their delivery
// from being spent for nothing — and is then cut short.
//
// stop may be called again with a shorter grace (a worker quiesced for a
// resize and then told to shut down): the shortest wins.
func (s *shareSource) stop(grace time.Duration) {
	s.stopOnce.Do(func() { close(s.stopping) })
	if grace <= 0 {
		s.cancel()
		return
	}
	t := time.AfterFunc(grace, s.cancel)
	s.mu.Lock()
	s.timers = append(s.timers, t)
	s.mu.Unlock()
}

// exhausted reports whether the fetchers have returned and every poll
// they handed over has been taken: nothing more will come from next.
func (s *shareSource) exhausted() bool {
	select {
	case <-s.idle:
	default:
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.waiting) == 0
}

// fetch polls f's client whenever the worker has acknowledged its previous
// poll, and hands each non-empty poll (or error) to the worker, until
// stop or ctx ends. Records of a poll that ctx cut short are handed over
// too: they are acquired, and a record the worker never takes is released
// by close.
func (s *shareSource) fetch(ctx context.Context, f *fetcher) {
	defer s.wg.Done()
	for ctx.Err() == nil {
		select {
		case <-s.stopping:
			return
		default:
		}
		most := f.max
		if f.whole && failpoint.Hit(failpoint.PollPart) == nil {
			most = -1 // everything fetched
		}
		fs := f.cl.PollRecords(ctx, most)
		p := &poll{f: f, recs: fs.Records()}
		if ctx.Err() != nil && len(p.recs) == 0 {
			return
		}
		if len(p.recs) > 0 && failpoint.Hit(failpoint.DuplicatePoll) != nil {
			p.recs = append(p.recs, p.recs...)
		}
		fs.EachError(func(t string, part int32, err error) {
			if p.err == nil && !errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded) {
				p.err = fmt.Errorf("polling %s[%d]: %w", t, part, kafkaerr.Denied(err, "READ", t, s.group))
			}
		})
		if len(p.recs) == 0 && p.err == nil {
			continue
		}
		s.mu.Lock()
		s.waiting = append(s.waiting, p)
		s.mu.Unlock()
		select {
		case s.arrived <- struct{}{}:
		default:
		}
		if len(p.recs) == 0 {
			continue // an error alone: nothing to acknowledge
		}
		select {
		case <-f.again:
		case <-s.stopping:
			return
		case <-ctx.Done():
			return
		}
	}
}

// next returns the next batch: it waits up to timeout for a first poll,
// then takes every poll already waiting, up to perBatch records (a poll is
// never split). A batch holding fewer than perBatch/2 records then waits up
// to linger for the polls of the fetchers still fetching, and takes them
// as they come, until it holds perBatch/2, every fetcher has handed in, or
// linger is over: a share group hands out records in pieces when its
// record locks run short (share.partition.max.record.locks), and every
// piece written alone costs a whole transaction. linger 0 takes only
// what is ready. An empty batch (and no error) means nothing arrived in
// time, or that the source is exhausted after stop. Errors of polls come
// back with the records that came with them.
func (s *shareSource) next(ctx context.Context, timeout time.Duration, perBatch int, linger time.Duration) (*batch, error) {
	b := &batch{}
	var errs []error
	take := func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		for len(s.waiting) > 0 && (b.len() == 0 || b.len()+len(s.waiting[0].recs) <= perBatch) {
			p := s.waiting[0]
			s.waiting = s.waiting[1:]
			if p.err != nil {
				errs = append(errs, p.err)
			}
			if len(p.recs) > 0 {
				b.add(p)
			}
		}
		if len(s.waiting) > 0 { // more for the next batch
			select {
			case s.arrived <- struct{}{}:
			default:
			}
		}
	}
	t := time.NewTimer(timeout)
	defer t.Stop()
	take()
	for b.len() == 0 && len(errs) == 0 {
		select {
		case <-s.arrived:
		case <-s.idle: // stopped: what is waiting is all there is
			take()
			return b, errors.Join(errs...)
		case <-t.C:
			return b, nil
		case <-ctx.Done():
			return b, nil
		}
		take()
	}
	if linger > 0 && len(errs) == 0 && b.len() < perBatch/2 && len(b.polls) < len(s.fetchers) {
		l := time.NewTimer(linger)
		defer l.Stop()
		for b.len() < perBatch/2 && len(b.polls) < len(s.fetchers) && len(errs) == 0 {
			select {
			case <-s.arrived:
				take()
				continue
			case <-s.idle:
				take()
			case <-l.C:
			case <-ctx.Done():
			}
			break
		}
	}
	return b, errors.Join(errs...)
}

// ack hands the batch's acknowledgements to the clients that polled its
// records, in runs of one type (a batch is usually accepted whole: one
// call a poll), and lets those fetchers poll again. It returns how many
// records got each type. A record still undecided is a bug in the worker
// (every path decides): it is released, never accepted, and counted by
// the safety net. The acknowledgements travel with each client's next
// share fetch or an explicit flush.
func (s *shareSource) ack(b *batch) (counts ackCounts) {
	if n := b.unresolved(); n > 0 && s.onUnresolved != nil {
		s.onUnresolved(n)
	}
	b.setAll(kgo.AckRelease)
	acks := b.acks
	for _, p := range b.polls {
		for i := 0; i < len(p.recs); {
			st, j := acks[i], i+1
			for j < len(p.recs) && acks[j] == st {
				j++
			}
			p.f.cl.MarkAcks(st, p.recs[i:j]...)
			counts[st] += j - i
			i = j
		}
		acks = acks[len(p.recs):]
		select {
		case p.f.again <- struct{}{}:
		default:
		}
	}
	b.sent = true
	return counts
}

// ackCounts counts records by acknowledgement type (kgo.AckStatus).
type ackCounts [kgo.AckRenew + 1]int

// renew extends the lock of every record of b, and of the polls waiting
// to be taken (KIP-1222), and sends the renewals. It is an optimisation
// only: safety never depends on a lock still being held.
func (s *shareSource) renew(ctx context.Context, b *batch) error {
	var errs []error
	s.mu.Lock()
	polls := append(append([]*poll(nil), b.polls...), s.waiting...)
	s.mu.Unlock()
	for _, p := range polls {
		p.f.cl.MarkAcks(kgo.AckRenew, p.recs...)
		if err := p.f.cl.FlushAcks(ctx); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// close stops the fetchers. The batch the worker holds must have been
// acknowledged; polls handed over but not taken are released, and their
// records counted in the result.
func (s *shareSource) close() int {
	s.cancel() // the fetchers' context: also ends a poll that stop gave some grace
	s.wg.Wait()
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, t := range s.timers {
		t.Stop()
	}
	n := 0
	for _, p := range s.waiting {
		p.f.cl.MarkAcks(kgo.AckRelease, p.recs...)
		n += len(p.recs)
	}
	s.waiting = nil
	return n
}

// finish acknowledges b once every record's fate is chosen (process):
// the renewal of its locks stopped, each extra copy given the
// acknowledgement of the copy written, and the batch's time observed.
func (w *worker) finish(b *batch, copies map[int]int, start time.Time, stopRenew func()) {
	stopRenew()
	for dup, kept := range copies {
		b.set(dup, b.acks[kept])
	}
	acked := time.Now()
	w.acknowledge(b)
	w.phase(metrics.PhaseAck, acked)
	d := time.Since(start)
	w.m.BatchSeconds.Observe(d.Seconds())
	if lock := w.limits.lock(); lock > 0 {
		w.m.LockBudget.WithLabelValues(w.label).Observe(d.Seconds() / lock.Seconds())
	}
}

// acknowledge hands the batch's acknowledgements to the client and counts
// them; a record released on its last delivery will be archived by the
// broker, which the relay must never cause (counted; should stay 0).
func (w *worker) acknowledge(b *batch) {
	limit := w.limits.deliveryLimit()
	for i, r := range b.recs {
		if b.acks[i] == kgo.AckRelease && limit > 0 && int(r.DeliveryCount()) >= limit {
			w.m.ReleasedOnLastDelivery.WithLabelValues(w.label).Inc()
			w.log.Warn("released a record on its last delivery: the broker will archive it",
				"topic", r.Topic, "partition", r.Partition, "offset", r.Offset, "delivery", r.DeliveryCount())
		}
	}
	for st, n := range w.src.ack(b) {
		if n > 0 {
			w.m.Acks.WithLabelValues(w.label, ackLabel(kgo.AckStatus(st))).Add(float64(n))
		}
	}
}

// renewWhileInFlight renews the acquisition locks of b every renewEvery
// until the returned function is called (which waits for the renewer to
// stop, so no renewal races the batch's final acknowledgements). Renewal is
// an optimisation: a lock that expires anyway only costs a redelivery,
// which the delivery protocol makes harmless.
func (w *worker) renewWhileInFlight(ctx context.Context, b *batch) func() {
	if w.renewEvery <= 0 {
		return func() {}
	}
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(w.renewEvery)
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case <-t.C:
			}
			fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), w.renewEvery)
			if err := w.src.renew(fctx, b); err != nil {
				w.log.Debug("renewing locks", "err", err)
			}
			cancel()
			w.m.Acks.WithLabelValues(w.label, metrics.AckRenew).Add(float64(b.len()))
		}
	}()
	return func() { close(stop); <-done }
}
