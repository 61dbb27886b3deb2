package relay

import (
	"context"
	"fmt"
	"log/slog"
	"strconv"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sharerelay/sharerelay/config"
	"github.com/sharerelay/sharerelay/eos"
	"github.com/sharerelay/sharerelay/metrics"
	"github.com/sharerelay/sharerelay/sharegroup"
	"github.com/sharerelay/sharerelay/txn"
)

// A worker's life: its clients are created (the lanes' transactional
// producers and Guards, then its share consumers), it runs until told to
// stop and drains what it holds, and its clients are torn down in the
// reverse order (acknowledgements flushed and the group left, then the
// producers and Guards closed).

// runWorker creates worker i's clients, runs its loop, and tears it down.
// ready is called once, when the worker runs or could not start.
func (r *Relay) runWorker(ctx context.Context, i int, topicIDs map[string][16]byte, ready func()) error {
	log := r.log.With("worker", i)
	disrupt := &disruptions{count: r.m.BrokerDisruptions.WithLabelValues(strconv.Itoa(i))}
	lanes, err := r.newLanes(ctx, i, disrupt)
	if err != nil {
		ready()
		return fmt.Errorf("relay: worker %d: %w", i, err)
	}
	defer closeLanes(lanes)
	srcDisrupt := &disruptions{count: r.m.SourceDisruptions.WithLabelValues(strconv.Itoa(i))}
	sourceOf := func(s size) (*shareSource, error) {
		clients, err := r.newShareConsumers(i, s, log, srcDisrupt)
		if err != nil {
			return nil, err
		}
		return newShareSource(clients, r.p.Source.Group, s.maxRecords, r.wholeBatches, func(n int) { r.m.InvariantBreaks.Add(float64(n)) }), nil
	}
	start := r.wantSize()
	src, err := sourceOf(start)
	if err != nil {
		ready()
		return fmt.Errorf("relay: worker %d: %w", i, err)
	}
	w := r.newWorker(i, log, topicIDs, src, lanes, disrupt)
	w.want, w.newSource = r.wantSize, sourceOf
	w.setSize(start)
	ready()
	log.Info("worker started", "transactional_id", r.TransactionalID(i))
	runErr := r.runDraining(ctx, w, log)
	r.leaveGroup(ctx, w)
	r.health.fine(i)
	log.Info("worker stopped", "err", runErr)
	return runErr
}

// newLanes creates worker i's lanes (Relay.lanes): each a transactional
// producer, waiting out a cluster that cannot be reached, and its Guard.
func (r *Relay) newLanes(ctx context.Context, i int, disrupt *disruptions) ([]*lane, error) {
	lanes := make([]*lane, 0, r.lanes())
	for l := range r.lanes() {
		ln, err := r.newLane(ctx, r.laneTransactionalID(i, l), disrupt)
		if err != nil {
			closeLanes(lanes)
			return nil, err
		}
		lanes = append(lanes, ln)
	}
	return lanes, nil
}

// newLane creates the lane of transactional id id.
func (r *Relay) newLane(ctx context.Context, id string, disrupt *disruptions) (*lane, error) {
	ln := &lane{newProducer: r.producerOf(id, disrupt)}
	err := r.retry(ctx, "creating the transactional producer", func() (err error) {
		ln.prod, err = ln.newProducer(ctx)
		return err
	})
	if err != nil {
		return nil, err
	}
	if ln.guard, err = r.newGuard(id); err != nil {
		ln.prod.Close()
		return nil, err
	}
	if r.opts.WrapGuard != nil {
		ln.guard = r.opts.WrapGuard(ln.guard)
	}
	return ln, nil
}

// producerOf returns a function that creates a producer of transactional
// id id, whose clients report their failures to disrupt.
func (r *Relay) producerOf(id string, disrupt *disruptions) func(context.Context) (*txn.Producer, error) {
	return func(ctx context.Context) (*txn.Producer, error) {
		return txn.New(ctx, txn.Config{
			Seeds:              r.p.Brokers,
			TransactionalID:    id,
			TransactionTimeout: r.p.Output.TransactionTimeout,
			ClientID:           id,
			MaxBatchBytes:      r.maxBatch(),
			// At-least-once writes without transactions: nothing to
			// claim, and a batch written twice is what it allows.
			Idempotent: r.p.Delivery == config.AtLeastOnce,
			Extra:      r.clientOpts(kgo.WithHooks(disrupt)),
		})
	}
}

// newGuard returns the delivery protocol of the worker with txnID.
func (r *Relay) newGuard(txnID string) (eos.Guard, error) {
	switch r.p.Delivery {
	case config.AtLeastOnce:
		return eos.AtLeastOnce{}, nil
	case config.ExactlyOnce:
		return r.ledger.Guard(txnID), nil
	default:
		return nil, fmt.Errorf("unknown delivery %q", r.p.Delivery)
	}
}

// closeLanes closes the lanes' producers (the ones the lanes hold now: a
// worker replaces a stale producer in its lane), then their Guards.
func closeLanes(lanes []*lane) {
	for _, ln := range lanes {
		ln.prod.Close()
	}
	for _, ln := range lanes {
		ln.guard.Close()
	}
}

// newShareConsumers creates worker i's share consumers of size s
// (batch.consumers and batch.max_records, as sized to the group's
// delivery limit and record locks), whose polls the worker writes
// together (see shareSource).
//
// Their failures on the wire are counted in srcDisrupt
// (sharerelay_source_disruptions_total).
func (r *Relay) newShareConsumers(i int, s size, log *slog.Logger, srcDisrupt *disruptions) ([]*kgo.Client, error) {
	label := strconv.Itoa(i)
	clients := make([]*kgo.Client, 0, s.consumers)
	for c := range s.consumers {
		opts := r.sourceClientOpts(
			kgo.ClientID(sharegroup.ClientID(r.transactionalIDPrefix(), i, c)),
			kgo.ShareGroup(r.p.Source.Group),
			kgo.ConsumeTopics(r.p.Source.Topics...),
			kgo.ShareMaxRecords(int32(s.maxRecords)),
			// Fetch only inside a poll (no fetching ahead), and the
			// source takes all a poll fetched (newShareSource): records
			// acquired beyond what the worker holds would sit in the
			// client's buffer, where nothing renews their locks, and a
			// worker paused by an outage longer than the lock would
			// spend their deliveries.
			kgo.MaxConcurrentFetches(0),
			kgo.WithHooks(srcDisrupt),
		)
		if !r.wholeBatches {
			// The broker splits record batches to acquire no more
			// than max_records (KIP-1206 record_limit).
			opts = append(opts, kgo.ShareMaxRecordsStrict())
		}
		opts = append(opts, kgo.ShareAckCallback(func(_ *kgo.Client, res kgo.ShareAckResults) {
			for _, a := range res {
				if a.Err != nil {
					r.m.AckErrors.WithLabelValues(label).Inc()
					log.Warn("share acknowledgement failed (the record will be delivered again)", "topic", a.Topic, "partition", a.Partition, "err", a.Err)
				}
			}
		}))
		cons, err := kgo.NewClient(opts...)
		if err != nil {
			for _, cl := range clients {
				cl.Close()
			}
			return nil, fmt.Errorf("creating share consumer %d: %w", c, err)
		}
		clients = append(clients, cons)
	}
	return clients, nil
}

// newWorker assembles worker i from its clients and the pipeline.
func (r *Relay) newWorker(i int, log *slog.Logger, topicIDs map[string][16]byte, src *shareSource, lanes []*lane, disrupt *disruptions) *worker {
	spans := r.p.OutputTopics()
	if r.p.Delivery == config.ExactlyOnce {
		spans = append(spans, r.p.Ledger.Topic)
	}
	w := &worker{
		id: i, label: strconv.Itoa(i), pipeline: r.p.Name,
		outputTopic: r.p.Output.Topic, dlqTopic: r.p.DeadLetter.Topic, writes: r.p.OutputTopics(), spans: spans,
		limits: &r.limits, txnTimeout: r.p.Output.TransactionTimeout, pollTimeout: r.p.Batch.PollTimeout, linger: r.p.Batch.Linger,
		topicIDs: topicIDs, renewEvery: r.renewEvery(),
		src: src, quit: make(chan struct{}), concurrency: r.p.Batch.TransformConcurrency,
		cur:     lanes[0],
		disrupt: disrupt, chain: r.chain, m: r.m, health: r.health, log: log, now: time.Now,
		sizes:             func() map[string]int { return *r.sizes.Load() },
		newReader:         func(opts ...kgo.Opt) (*kgo.Client, error) { return kgo.NewClient(r.clientOpts(opts...)...) },
		rejectDeadLetters: r.p.DeadLetter.Ack == config.DeadLetterReject,
		crossCluster:      r.p.CrossCluster(),
	}
	w.copiesAsIs, w.stampNow = r.chain.CopiesAsIs()
	switch {
	case len(lanes) > 1:
		w.spare = lanes[1]
	case r.p.Delivery == config.ExactlyOnce:
		w.newAside = r.producerOf(r.laneTransactionalID(i, 1), disrupt)
	}
	return w
}

// renewEvery is a third of the lock duration, or 0 when renewal is off.
func (r *Relay) renewEvery() time.Duration {
	if r.p.Batch.RenewLocks != nil && !*r.p.Batch.RenewLocks {
		return 0
	}
	return r.limits.lock() / 3
}

// recordsPerBatch is the most records one batch of a worker takes: the
// polls of half its consumers, rounded up. A consumer polls again only
// once its records are acknowledged, which is when the batch holding them
// has been written (at-least-once: every output acknowledged by the
// brokers) or its commit has ended (exactly-once: the commit runs beside
// the next batch). A batch that took every poll would leave the next one
// nothing to start on until then, so fetch, write and commit would not
// overlap; with half, the other half is fetching or ready meanwhile
// (docs/decisions/records-per-batch.md).
func recordsPerBatch(consumers, maxRecords int) int {
	return (consumers + 1) / 2 * maxRecords
}

// drainGrace is how long, beyond the fetch's own wait, a share fetch in
// flight when a worker is told to stop may still come back with records
// for the drain (shareSource.stop). A broker answers a share fetch when it
// has records or when the fetch's wait (client.consumer.fetch_max_wait)
// is over, so a fetch given that wait is never cut short: one cut short
// has its records acquired all the same, and they come back a delivery
// later — at a scale-in, every leaving instance would spend a poll's worth
// of deliveries. A busy broker answers in milliseconds; an idle one holds
// the stop for its wait at most.
const drainGrace = 250 * time.Millisecond

// stopGrace is drainGrace beyond the source cluster's fetch wait, within
// batch.drain_timeout.
func (r *Relay) stopGrace() time.Duration {
	return min(r.p.Batch.DrainTimeout, r.p.SourceCluster().Client.Consumer.FetchMaxWait+drainGrace)
}

// runDraining runs w until ctx ends and then drains it: w polls no more and
// writes the records it holds (its batch in flight, the polls handed
// over) for up to batch.drain_timeout, after which what is left is
// released. A record acquired has spent a delivery either way; writing it
// is what keeps that delivery from being spent for nothing.
func (r *Relay) runDraining(ctx context.Context, w *worker, log *slog.Logger) error {
	work, stopWork := context.WithCancel(context.WithoutCancel(ctx))
	defer stopWork()
	finished := make(chan struct{})
	stopped := make(chan time.Time, 1)
	go func() {
		select {
		case <-finished:
			return
		case <-ctx.Done():
		}
		stopped <- time.Now()
		drain := r.p.Batch.DrainTimeout
		w.stop(r.stopGrace())
		if drain <= 0 {
			stopWork()
			return
		}
		t := time.NewTimer(drain)
		defer t.Stop()
		select {
		case <-finished:
		case <-t.C:
			log.Warn("drain timeout: releasing the records not written yet", "drain_timeout", drain)
			stopWork()
		}
	}()
	err := w.run(work)
	close(finished)
	select {
	case at := <-stopped:
		log.Info("worker drained", "records_taken_after_stop", w.drained, "took", time.Since(at).Round(time.Millisecond))
	default:
	}
	return err
}

// leaveGroup ends worker w's membership once it has returned (every batch
// it took is acknowledged by then): polls handed over but not taken are
// released, the acknowledgements sent, the group left (which releases
// anything the clients still buffer) and the share consumers closed. One
// short budget for all: with the broker gone they cannot succeed, and
// the records' locks expire anyway.
func (r *Relay) leaveGroup(ctx context.Context, w *worker) {
	closeConsumers(ctx, w, w.src)
}

// closeConsumers closes src and its share consumers (leaveGroup; a
// resize): polls handed over but not taken are released, the
// acknowledgements sent, the group left and the consumers closed, within
// one short budget for all.
func closeConsumers(ctx context.Context, w *worker, src *shareSource) {
	if n := src.close(); n > 0 {
		w.m.Acks.WithLabelValues(w.label, metrics.AckRelease).Add(float64(n))
		w.log.Info("released records handed over but not taken (drain timeout)", "records", n)
	}
	fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	var tear sync.WaitGroup
	for _, f := range src.fetchers {
		cl := f.cl
		tear.Go(func() {
			if err := cl.FlushAcks(fctx); err != nil {
				w.log.Warn("flushing acknowledgements at shutdown", "err", err)
			}
			if err := cl.LeaveGroupContext(fctx); err != nil {
				w.log.Warn("leaving the share group", "err", err)
			}
			cl.Close()
		})
	}
	tear.Wait()
}
