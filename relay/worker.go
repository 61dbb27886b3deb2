package relay

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sharerelay/sharerelay/eos"
	"github.com/sharerelay/sharerelay/internal/failpoint"
	"github.com/sharerelay/sharerelay/lineage"
	"github.com/sharerelay/sharerelay/metrics"
	"github.com/sharerelay/sharerelay/transform"
	"github.com/sharerelay/sharerelay/txn"
)

// maxErrorHeader bounds the error message copied into a dead letter.
const maxErrorHeader = 4096

// worker runs the loop of one share consumer and one transactional producer.
type worker struct {
	id          int
	label       string // worker label value for metrics
	pipeline    string
	outputTopic string
	dlqTopic    string
	maxAttempts *atomic.Int32 // shared with the Relay, which refreshes it
	txnTimeout  time.Duration
	pollTimeout time.Duration
	// renewEvery is how often the locks of a batch in flight are renewed;
	// 0 disables renewal.
	renewEvery time.Duration

	topicIDs map[string][16]byte // source topic IDs, resolved at start

	src  *shareSource
	prod *txn.Producer
	// newProducer replaces a producer that can no longer begin or abort
	// transactions (franz-go: "producer ID has a fatal, unrecoverable
	// error"); the new one re-initialises the producer id, which aborts
	// whatever the old one left open.
	newProducer func(context.Context) (*txn.Producer, error)
	// broken is set when prod must be replaced before the next poll.
	broken bool
	// failures counts consecutive failed transactions, for the backoff.
	failures int
	guard    eos.Guard
	chain    *transform.Chain
	m        *metrics.Metrics
	log      *slog.Logger
	now      func() time.Time
}

// plan is what one source record of a batch turned into.
type plan struct {
	outs       []*kgo.Record // outputs, or the single dead letter
	deadLetter bool
}

// run polls and processes batches until ctx is cancelled. The batch in
// flight when ctx is cancelled is finished (committed or aborted) and fully
// acknowledged before run returns. It returns an error only when the worker
// cannot go on (fenced by a newer instance).
func (w *worker) run(ctx context.Context) error {
	w.m.WorkersRunning.Inc()
	defer w.m.WorkersRunning.Dec()
	backoff := 100 * time.Millisecond
	for ctx.Err() == nil {
		// Never take records while unable to write them: a worker
		// whose transactions fail at once would acquire and release
		// records in a tight loop, burning their deliveries until the
		// broker archives them.
		if w.broken {
			if err := w.replaceProducer(ctx); err != nil {
				return err
			}
		}
		if w.failures > 0 {
			sleepCtx(ctx, min(time.Duration(w.failures)*100*time.Millisecond, 2*time.Second))
			if ctx.Err() != nil {
				break
			}
		}
		pctx, cancel := context.WithTimeout(ctx, w.pollTimeout)
		b, err := w.src.poll(pctx)
		cancel()
		if err != nil {
			if errors.Is(err, errUnresolved) {
				w.log.Error("safety net fired", "err", err)
			} else if b.len() == 0 {
				w.log.Warn("poll failed; retrying", "err", err, "backoff", backoff)
				sleepCtx(ctx, backoff)
				backoff = min(2*backoff, 5*time.Second)
				continue
			}
		}
		backoff = 100 * time.Millisecond
		if b.len() == 0 {
			continue
		}
		if err := w.process(ctx, b); err != nil {
			return err
		}
	}
	return nil
}

// process takes one batch from transform to acknowledgement. Every record
// of b has an acknowledgement chosen when it returns, whatever happened.
func (w *worker) process(ctx context.Context, b *batch) (err error) {
	start := w.now()
	stopRenew := w.renewWhileInFlight(ctx, b)
	defer func() {
		stopRenew()
		counts := w.src.ack(b)
		for st, n := range counts {
			w.m.Acks.WithLabelValues(w.label, ackLabel(st)).Add(float64(n))
		}
		w.m.BatchSeconds.Observe(time.Since(start).Seconds())
	}()

	srcs := make([]eos.Source, b.len())
	for i, r := range b.recs {
		srcs[i] = eos.Source{Topic: r.Topic, TopicID: w.topicIDs[r.Topic], Partition: r.Partition, Offset: r.Offset}
		w.m.RecordsPolled.WithLabelValues(w.label).Inc()
		if r.DeliveryCount() > 1 {
			w.m.Redeliveries.WithLabelValues(w.label).Inc()
		}
	}

	// 1. Records an earlier transaction already committed are done.
	done := w.guard.Committed(srcs)
	plans := make([]plan, b.len())
	var pending []int
	for i, r := range b.recs {
		if done[i] {
			b.set(i, kgo.AckAccept)
			w.m.AlreadyCommitted.WithLabelValues(w.label).Inc()
			continue
		}
		// 2. Transform.
		p, release := w.transform(ctx, r)
		switch {
		case release:
			b.set(i, kgo.AckRelease)
		case len(p.outs) == 0:
			// Filtered: nothing to write, nothing to duplicate.
			b.set(i, kgo.AckAccept)
			w.m.RecordsFiltered.WithLabelValues(w.label).Inc()
		default:
			plans[i] = p
			pending = append(pending, i)
		}
	}

	// 3. Write the outputs in transactions until every pending record is
	// committed, conflicts with an earlier commit, or is released.
	for len(pending) > 0 {
		pending, err = w.transact(ctx, b, plans, srcs, pending)
		if err != nil {
			return err
		}
	}
	return nil
}

// replaceProducer closes the broken producer and creates a new one with
// the same transactional id.
func (w *worker) replaceProducer(ctx context.Context) error {
	w.log.Warn("replacing the transactional producer after a fatal error")
	w.prod.Close()
	p, err := w.newProducer(ctx)
	if err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return fmt.Errorf("worker %d: %w", w.id, err)
	}
	w.prod, w.broken = p, false
	w.m.ProducerResets.WithLabelValues(w.label).Inc()
	return nil
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
			w.src.renew(b)
			fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), w.renewEvery)
			if err := w.src.cl.FlushAcks(fctx); err != nil {
				w.log.Debug("renewing locks", "err", err)
			}
			cancel()
			w.m.Acks.WithLabelValues(w.label, metrics.AckRenew).Add(float64(b.len()))
		}
	}()
	return func() { close(stop); <-done }
}

// transform runs the chain on r and returns its plan, or release=true when
// the record should be delivered again.
func (w *worker) transform(ctx context.Context, r *kgo.Record) (p plan, release bool) {
	in := &transform.Record{
		Topic: w.outputTopic,
		Key:   r.Key,
		Value: r.Value,
		Source: transform.Source{
			Topic: r.Topic, Partition: r.Partition, Offset: r.Offset,
			DeliveryCount: r.DeliveryCount(), Timestamp: r.Timestamp,
		},
	}
	if len(r.Headers) > 0 {
		in.Headers = make([]transform.Header, len(r.Headers))
		for i, h := range r.Headers {
			in.Headers[i] = transform.Header{Key: h.Key, Value: h.Value}
		}
	}
	outs, err := w.chain.Apply(ctx, in)
	if err != nil {
		if ctx.Err() != nil {
			return plan{}, true // shutting down: never dead-letter because of it
		}
		e := transform.Classify(err)
		kind := lineage.DLQKindPermanent
		if e.Kind == transform.KindRetry {
			if r.DeliveryCount() < w.maxAttempts.Load() {
				w.log.Debug("transform failed; releasing for another delivery",
					"topic", r.Topic, "partition", r.Partition, "offset", r.Offset,
					"delivery", r.DeliveryCount(), "err", err)
				return plan{}, true
			}
			kind = lineage.DLQKindAttemptsExhausted
		}
		return plan{outs: []*kgo.Record{w.deadLetter(r, e, kind)}, deadLetter: true}, false
	}
	src := lineage.Source{Topic: r.Topic, Partition: r.Partition, Offset: r.Offset}
	p.outs = make([]*kgo.Record, len(outs))
	for i, o := range outs {
		hs := make([]kgo.RecordHeader, len(o.Headers))
		for j, h := range o.Headers {
			hs[j] = kgo.RecordHeader{Key: h.Key, Value: h.Value}
		}
		topic := o.Topic
		if topic == "" {
			topic = w.outputTopic
		}
		p.outs[i] = &kgo.Record{Topic: topic, Key: o.Key, Value: o.Value, Headers: lineage.SetSource(hs, src)}
	}
	return p, false
}

// deadLetter builds the dead-letter record for r: the original key, value
// and headers, plus the source coordinates and the reason.
func (w *worker) deadLetter(r *kgo.Record, e *transform.Error, kind string) *kgo.Record {
	msg := e.Error()
	if len(msg) > maxErrorHeader {
		msg = msg[:maxErrorHeader]
	}
	src := lineage.Source{Topic: r.Topic, Partition: r.Partition, Offset: r.Offset}
	hs := append(lineage.SetSource(append([]kgo.RecordHeader(nil), r.Headers...), src),
		kgo.RecordHeader{Key: lineage.HeaderDLQTopic, Value: []byte(r.Topic)},
		kgo.RecordHeader{Key: lineage.HeaderDLQPartition, Value: strconv.AppendInt(nil, int64(r.Partition), 10)},
		kgo.RecordHeader{Key: lineage.HeaderDLQOffset, Value: strconv.AppendInt(nil, r.Offset, 10)},
		kgo.RecordHeader{Key: lineage.HeaderDLQPipeline, Value: []byte(w.pipeline)},
		kgo.RecordHeader{Key: lineage.HeaderDLQWorker, Value: []byte(w.prod.TransactionalID())},
		kgo.RecordHeader{Key: lineage.HeaderDLQStage, Value: []byte(lineage.DLQStageTransformation)},
		kgo.RecordHeader{Key: lineage.HeaderDLQStep, Value: []byte(e.Step)},
		kgo.RecordHeader{Key: lineage.HeaderDLQErrorClass, Value: []byte(e.Class)},
		kgo.RecordHeader{Key: lineage.HeaderDLQErrorMessage, Value: []byte(msg)},
		kgo.RecordHeader{Key: lineage.HeaderDLQDeliveryCount, Value: strconv.AppendInt(nil, int64(r.DeliveryCount()), 10)},
		kgo.RecordHeader{Key: lineage.HeaderDLQTime, Value: []byte(w.now().UTC().Format(time.RFC3339Nano))},
		kgo.RecordHeader{Key: lineage.HeaderDLQKind, Value: []byte(kind)},
	)
	return &kgo.Record{Topic: w.dlqTopic, Key: r.Key, Value: r.Value, Headers: hs}
}

// transact writes the plans of pending in one transaction and chooses the
// acknowledgement of each. It returns the records to try again in a new
// transaction (those left after a claim conflict), or an error when the
// worker must stop.
func (w *worker) transact(ctx context.Context, b *batch, plans []plan, srcs []eos.Source, pending []int) ([]int, error) {
	// Once begun, the transaction is finished even if ctx is cancelled
	// (shutdown lets the batch in flight commit or abort), bounded by the
	// transaction timeout after which the coordinator aborts it anyway.
	tctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), w.txnTimeout+10*time.Second)
	defer cancel()

	releaseAll := func() {
		for _, i := range pending {
			b.set(i, kgo.AckRelease)
		}
	}
	fail := func(stage string, err error) ([]int, error) {
		w.log.Warn("transaction failed; releasing its records", "stage", stage, "records", len(pending), "err", err)
		w.failures++
		if stage == "begin" {
			w.broken = true
		} else if aerr := w.prod.Abort(tctx); aerr != nil {
			err = errors.Join(err, aerr)
			w.broken = true
		}
		w.m.Transactions.WithLabelValues(w.label, metrics.TxnAborted).Inc()
		releaseAll()
		if errors.Is(err, txn.ErrFenced) {
			return nil, fmt.Errorf("worker %d: %w", w.id, err)
		}
		return nil, nil
	}

	if err := w.prod.Begin(); err != nil {
		return fail("begin", err)
	}
	var recs []*kgo.Record
	var topics []string
	hasDLQ := false
	for _, i := range pending {
		for _, r := range plans[i].outs {
			// A retry after a claim conflict produces these records
			// again; franz-go keeps the first attempt's (cancelled)
			// context on a record, which would fail the retry at once.
			r.Context = nil
			if !slices.Contains(topics, r.Topic) {
				topics = append(topics, r.Topic)
			}
		}
		recs = append(recs, plans[i].outs...)
		hasDLQ = hasDLQ || plans[i].deadLetter
	}
	claimSrcs := make([]eos.Source, len(pending))
	for j, i := range pending {
		claimSrcs[j] = srcs[i]
	}
	// The claims go in the same produce request as the outputs.
	claims, err := w.guard.Claims(tctx, w.prod, claimSrcs, topics)
	if err != nil {
		return fail("claim", err)
	}
	if err := w.prod.Produce(tctx, append(recs, claims...)...); err != nil {
		return fail("produce", err)
	}
	var conflicts []bool
	if len(claims) > 0 {
		if conflicts, err = w.guard.Check(tctx); err != nil {
			return fail("claim check", err)
		}
	}
	if anyTrue(conflicts) {
		// An earlier transaction committed some of these records: they
		// are done. Abort ours and redo the rest.
		var rest []int
		for j, i := range pending {
			if conflicts[j] {
				b.set(i, kgo.AckAccept)
				w.m.ClaimConflicts.WithLabelValues(w.label).Inc()
			} else {
				rest = append(rest, i)
			}
		}
		if err := w.prod.Abort(tctx); err != nil {
			pending = rest
			return fail("abort after conflict", err)
		}
		w.m.Transactions.WithLabelValues(w.label, metrics.TxnAborted).Inc()
		return rest, nil
	}

	if hasDLQ {
		if err := failpoint.Hit(failpoint.BeforeDeadLetterCommit); err != nil {
			return fail("failpoint", err)
		}
	}
	if err := failpoint.Hit(failpoint.BeforeCommit); err != nil {
		return fail("failpoint", err)
	}
	outcome, err := w.prod.Commit(tctx)
	if outcome == txn.Unknown {
		committed, rerr := w.guard.Resolve(tctx)
		w.log.Warn("commit outcome unknown; resolved", "committed", committed, "err", errors.Join(err, rerr))
		if rerr == nil && committed {
			outcome, err = txn.Committed, nil
		}
	}
	switch outcome {
	case txn.Committed:
		w.failures = 0
		w.m.Transactions.WithLabelValues(w.label, metrics.TxnCommitted).Inc()
		for _, i := range pending {
			if plans[i].deadLetter {
				w.m.DeadLetters.WithLabelValues(w.label).Inc()
			} else {
				w.m.RecordsProduced.WithLabelValues(w.label).Add(float64(len(plans[i].outs)))
			}
		}
		_ = failpoint.Hit(failpoint.AfterCommitBeforeAck)
		for _, i := range pending {
			b.set(i, kgo.AckAccept)
		}
		return nil, nil
	case txn.Unknown:
		w.m.Transactions.WithLabelValues(w.label, metrics.TxnUnknown).Inc()
	default:
		w.m.Transactions.WithLabelValues(w.label, metrics.TxnAborted).Inc()
	}
	w.log.Warn("transaction not committed; releasing its records", "outcome", outcome, "records", len(pending), "err", err)
	w.failures++
	releaseAll()
	if errors.Is(err, txn.ErrFenced) {
		return nil, fmt.Errorf("worker %d: %w", w.id, err)
	}
	return nil, nil
}

func anyTrue(bs []bool) bool {
	for _, b := range bs {
		if b {
			return true
		}
	}
	return false
}

func ackLabel(s kgo.AckStatus) string {
	switch s {
	case kgo.AckAccept:
		return metrics.AckAccept
	case kgo.AckRelease:
		return metrics.AckRelease
	case kgo.AckReject:
		return metrics.AckReject
	default:
		return metrics.AckRenew
	}
}

func sleepCtx(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}
