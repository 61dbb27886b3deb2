package relay

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"golang.org/x/sync/errgroup"

	"github.com/sharerelay/sharerelay/config"
	"github.com/sharerelay/sharerelay/eos"
	"github.com/sharerelay/sharerelay/metrics"
	"github.com/sharerelay/sharerelay/transform"
	"github.com/sharerelay/sharerelay/txn"
)

// Options configures a Relay.
type Options struct {
	// Pipeline is the validated pipeline (config.Load). Required.
	Pipeline *config.Pipeline
	// Instance names this process among the pipeline's instances. It is
	// part of every worker's transactional id, so it must be stable across
	// restarts of "the same" instance (a restart then fences its zombie)
	// and unique among instances running at once. Required.
	Instance string
	// Registerer receives the metrics; nil means a private registry.
	Registerer prometheus.Registerer
	// Logger; nil means slog.Default().
	Logger *slog.Logger
	// Chain, when set, replaces the chain built from Pipeline.Transforms:
	// for embedding the relay with transforms written in Go.
	Chain *transform.Chain
	// ClientOpts are added to every Kafka client the relay creates (for
	// example a dialer for fault injection, or TLS/SASL).
	ClientOpts []kgo.Opt
	// WrapGuard, when set, wraps the delivery protocol's Guard of each
	// worker (for example to time it); the protocol itself is always
	// the one Pipeline.Delivery chooses.
	WrapGuard func(eos.Guard) eos.Guard
	// OnReady is called once the start-up checks passed and every worker
	// has its clients.
	OnReady func()
	// LedgerMarkers is the cluster's transaction marker convention; the
	// zero value is Apache Kafka's. Only a relay on franz-go's kfake
	// (tests, the embedded demo) sets eos.MarkersAtSameOrNextEpoch.
	LedgerMarkers eos.MarkerEpochs
}

// Relay runs one pipeline in this process.
type Relay struct {
	opts   Options
	p      *config.Pipeline
	chain  *transform.Chain
	m      *metrics.Metrics
	log    *slog.Logger
	limits ShareLimits
	// attempt is the number of deliveries a retryable failure gets before
	// it is dead-lettered; refreshed while running (group configs can
	// change under the relay).
	attempt atomic.Int32
	ledger  *eos.Ledger // delivery: exactly-once
}

// New validates opts and builds the transform chain. It does not touch
// Kafka.
func New(opts Options) (*Relay, error) {
	if opts.Pipeline == nil {
		return nil, errors.New("relay: Options.Pipeline is required")
	}
	if opts.Instance == "" {
		return nil, errors.New("relay: Options.Instance is required")
	}
	if strings.ContainsAny(opts.Instance, " \t\n") {
		return nil, fmt.Errorf("relay: instance %q must not contain spaces", opts.Instance)
	}
	chain := opts.Chain
	if chain == nil {
		var err error
		if chain, err = transform.Build(opts.Pipeline.Transforms); err != nil {
			return nil, fmt.Errorf("relay: pipeline %s: %w", opts.Pipeline.Name, err)
		}
	}
	reg := opts.Registerer
	if reg == nil {
		reg = prometheus.NewRegistry()
	}
	log := opts.Logger
	if log == nil {
		log = slog.Default()
	}
	log = log.With("pipeline", opts.Pipeline.Name, "instance", opts.Instance)
	return &Relay{
		opts:  opts,
		p:     opts.Pipeline,
		chain: chain,
		m:     metrics.New(reg, opts.Pipeline.Name),
		log:   log,
	}, nil
}

// Metrics returns the relay's metrics.
func (r *Relay) Metrics() *metrics.Metrics { return r.m }

// TransactionalID returns the transactional id of worker i of this instance:
// stable per pipeline, instance and worker.
func (r *Relay) TransactionalID(i int) string {
	return fmt.Sprintf("sharerelay-%s-%s-%d", r.p.Name, r.opts.Instance, i)
}

func (r *Relay) clientOpts(extra ...kgo.Opt) []kgo.Opt {
	opts := append([]kgo.Opt{kgo.SeedBrokers(r.p.Brokers...)}, r.opts.ClientOpts...)
	return append(opts, extra...)
}

// Run checks the cluster, sets the share group's configs, starts the workers
// and blocks until ctx is cancelled and every worker has finished its batch
// in flight, acknowledged it, and left the group. It returns an error if the
// start-up checks fail or a worker has to stop (fenced).
func (r *Relay) Run(ctx context.Context) error {
	topicIDs, err := r.prepare(ctx)
	if err != nil {
		return err
	}
	if r.p.Delivery == config.ExactlyOnce {
		r.ledger, err = eos.OpenLedger(ctx, eos.LedgerConfig{
			ClientOpts: r.clientOpts(),
			Topic:      r.p.Ledger.Topic,
			Gen:        int64(r.p.Ledger.Generation),
			// Longer than the transaction timeout: a crashed writer's
			// claim is aborted by its coordinator before we give up.
			ClaimWait:          r.p.Output.TransactionTimeout + 5*time.Second,
			TransactionTimeout: r.p.Output.TransactionTimeout,
			OutputTopics:       r.p.OutputTopics(),
			Markers:            r.opts.LedgerMarkers,
			Instance:           r.opts.Instance,
			Logger:             r.log,
		})
		if err != nil {
			return fmt.Errorf("relay: opening the claim ledger: %w", err)
		}
		defer r.ledger.Close()
		r.m.WatchLedger(func() metrics.LedgerStats {
			st, rs := r.ledger.Stats(), r.ledger.ResolverStats()
			return metrics.LedgerStats{Pending: st.Pending, Orphaned: st.Orphans, Unsettled: rs.Unsettled,
				OrphanedTotal: rs.Orphaned, SettledCommit: rs.Committed, SettledAbort: rs.Aborted}
		})
	}
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() error { return r.watchTopicIDs(gctx, topicIDs) })
	g.Go(func() error { return r.refreshLimits(gctx, 30*time.Second) })
	var ready sync.WaitGroup
	ready.Add(r.p.Workers)
	for i := 0; i < r.p.Workers; i++ {
		g.Go(func() error { return r.runWorker(gctx, i, topicIDs, ready.Done) })
	}
	readyC := make(chan struct{})
	go func() { ready.Wait(); close(readyC) }()
	select {
	case <-readyC:
		r.log.Info("relay running", "workers", r.p.Workers)
		if r.opts.OnReady != nil {
			r.opts.OnReady()
		}
	case <-gctx.Done():
	}
	err = g.Wait()
	r.log.Info("relay stopped", "err", err)
	return err
}

// every runs check every interval with a client of its own until ctx ends
// or check returns an error: the relay's background watchers.
func (r *Relay) every(ctx context.Context, interval time.Duration, check func(*kgo.Client) error) error {
	cl, err := kgo.NewClient(r.clientOpts()...)
	if err != nil {
		return fmt.Errorf("relay: %w", err)
	}
	defer cl.Close()
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
		if err := check(cl); err != nil {
			return err
		}
	}
}

// watchTopicIDs stops the relay when a source topic is deleted and
// recreated while it runs: claims are keyed by topic ID, and the workers
// resolved the IDs at start.
func (r *Relay) watchTopicIDs(ctx context.Context, ids map[string][16]byte) error {
	return r.every(ctx, 10*time.Second, func(cl *kgo.Client) error {
		td, err := kadm.NewClient(cl).ListTopics(ctx, r.p.Source.Topics...)
		if err != nil {
			return nil // try again next time
		}
		for name, id := range ids {
			if d, ok := td[name]; ok && d.Err == nil && d.ID != id {
				return fmt.Errorf("relay: source topic %s was recreated (topic ID changed) while running; restart the relay", name)
			}
		}
		return nil
	})
}

// prepare runs the start-up checks: topics exist, the share group's configs
// are set, and the delivery limits are known.
func (r *Relay) prepare(ctx context.Context) (map[string][16]byte, error) {
	cl, err := kgo.NewClient(r.clientOpts()...)
	if err != nil {
		return nil, fmt.Errorf("relay: creating admin client: %w", err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)

	names := append(append([]string{}, r.p.Source.Topics...), r.p.OutputTopics()...)
	td, err := checkTopics(ctx, adm, dedupe(names))
	if err != nil {
		return nil, fmt.Errorf("relay: %w", err)
	}
	ids := make(map[string][16]byte)
	for _, t := range r.p.Source.Topics {
		ids[t] = td[t].ID
	}

	if r.p.Source.ManageGroupConfig == nil || *r.p.Source.ManageGroupConfig {
		cfgs := map[string]string{
			GroupAutoOffsetReset: r.p.Source.AutoOffsetReset,
			GroupIsolationLevel:  r.p.Source.IsolationLevel,
		}
		for k, v := range r.p.Source.GroupConfigs {
			cfgs[k] = v
		}
		if err := SetGroupConfigs(ctx, cl, r.p.Source.Group, cfgs); err != nil {
			return nil, fmt.Errorf("relay: %w", err)
		}
		// Group configs propagate through the metadata log: reading the
		// delivery limit too early would see the old one, and a relay
		// that believes in a higher limit than the broker's lets the
		// broker archive records silently.
		if err := waitGroupConfigs(ctx, cl, r.p.Source.Group, cfgs); err != nil {
			return nil, fmt.Errorf("relay: %w", err)
		}
		r.log.Info("share group configs set", "group", r.p.Source.Group, "configs", cfgs)
	} else {
		r.log.Info("share group configs left alone (source.manage_group_config: false)", "group", r.p.Source.Group)
	}

	r.limits, err = EffectiveShareLimits(ctx, cl, r.p.Source.Group)
	if err != nil {
		r.log.Warn("could not read the share group's delivery limit; assuming Kafka's default", "limit", r.limits.DeliveryCountLimit, "err", err)
	}
	r.setAttempts(r.limits)
	r.log.Info("delivery limits", "delivery_count_limit", r.limits.DeliveryCountLimit, "from", r.limits.From,
		"max_attempts", r.attempt.Load(), "lock_duration_ms", r.limits.LockDurationMs, "delivery", r.p.Delivery)
	if r.p.Delivery == config.ExactlyOnce && r.p.Output.TransactionTimeout >= time.Duration(r.limits.LockDurationMs)*time.Millisecond {
		r.log.Warn("output.transaction_timeout is not below the share lock duration: a crashed worker's claim may outlive the lock of the records it blocks",
			"transaction_timeout", r.p.Output.TransactionTimeout, "lock_duration_ms", r.limits.LockDurationMs)
	}
	return ids, nil
}

// setAttempts derives the attempts a failing record gets from the limits.
func (r *Relay) setAttempts(l ShareLimits) {
	a := int32(r.p.DeadLetter.MaxAttempts)
	if a == 0 {
		// Keep the broker's last delivery as a spare: a crash during
		// the last attempt then still gets one more delivery, which
		// dead-letters the record instead of the broker archiving it.
		a = int32(max(1, l.DeliveryCountLimit-1))
	}
	if int(a) >= l.DeliveryCountLimit {
		r.log.Warn("dead_letter.max_attempts leaves no spare delivery: a crash during the last attempt lets the broker archive the record without a dead letter",
			"max_attempts", a, "delivery_count_limit", l.DeliveryCountLimit)
	}
	if old := r.attempt.Swap(a); old != 0 && old != a {
		r.log.Info("share group delivery limit changed", "delivery_count_limit", l.DeliveryCountLimit, "max_attempts", a)
	}
}

// refreshLimits re-reads the group's delivery limit every interval, so an
// operator lowering share.delivery.count.limit while the relay runs does
// not make the broker archive records the relay still means to retry.
func (r *Relay) refreshLimits(ctx context.Context, interval time.Duration) error {
	return r.every(ctx, interval, func(cl *kgo.Client) error {
		if l, err := EffectiveShareLimits(ctx, cl, r.p.Source.Group); err == nil {
			r.setAttempts(l)
		}
		return nil
	})
}

// runWorker creates worker i's clients, runs its loop, and tears it down:
// acknowledgements flushed, group left, clients closed.
func (r *Relay) runWorker(ctx context.Context, i int, topicIDs map[string][16]byte, ready func()) error {
	label := strconv.Itoa(i)
	log := r.log.With("worker", i)
	txnID := r.TransactionalID(i)

	newProducer := func(ctx context.Context) (*txn.Producer, error) {
		return retryStart(ctx, log, "transactional producer", func() (*txn.Producer, error) {
			return txn.New(ctx, txn.Config{
				Seeds:              r.p.Brokers,
				TransactionalID:    txnID,
				TransactionTimeout: r.p.Output.TransactionTimeout,
				ClientID:           txnID,
				Extra:              r.opts.ClientOpts,
			})
		})
	}
	prod, err := newProducer(ctx)
	if err != nil {
		ready()
		return err
	}

	guard, err := r.newGuard(txnID)
	if err != nil {
		ready()
		return fmt.Errorf("relay: worker %d: %w", i, err)
	}
	if r.opts.WrapGuard != nil {
		guard = r.opts.WrapGuard(guard)
	}
	defer guard.Close()

	cons, err := kgo.NewClient(r.clientOpts(
		kgo.ClientID(txnID),
		kgo.ShareGroup(r.p.Source.Group),
		kgo.ConsumeTopics(r.p.Source.Topics...),
		kgo.ShareMaxRecords(int32(r.p.Batch.MaxRecords)),
		// Acquire no more than a batch: by default the broker returns
		// whole record batches (thousands of small records), and
		// records acquired beyond what the worker processes within the
		// lock sit in the client's buffer until their locks expire,
		// each expiry costing a delivery. One fetch ahead keeps the
		// pipeline busy while bounding what a stalled relay holds.
		kgo.ShareMaxRecordsStrict(),
		kgo.MaxConcurrentFetches(1),
		kgo.ShareAckCallback(func(_ *kgo.Client, res kgo.ShareAckResults) {
			for _, a := range res {
				if a.Err != nil {
					r.m.AckErrors.WithLabelValues(label).Inc()
					log.Warn("share acknowledgement failed (the record will be delivered again)", "topic", a.Topic, "partition", a.Partition, "err", a.Err)
				}
			}
		}),
	)...)
	if err != nil {
		ready()
		return fmt.Errorf("relay: worker %d: creating share consumer: %w", i, err)
	}
	w := &worker{
		id: i, label: label, pipeline: r.p.Name,
		outputTopic: r.p.Output.Topic, dlqTopic: r.p.DeadLetter.Topic,
		maxAttempts: &r.attempt, txnTimeout: r.p.Output.TransactionTimeout, pollTimeout: r.p.Batch.PollTimeout,
		topicIDs: topicIDs, renewEvery: r.renewEvery(),
		src: &shareSource{cl: cons, max: r.p.Batch.MaxRecords, onUnresolved: func(n int) {
			r.m.InvariantBreaks.Add(float64(n))
		}},
		prod: prod, newProducer: newProducer, guard: guard, chain: r.chain, m: r.m, log: log, now: time.Now,
	}
	defer func() { w.prod.Close() }()
	ready()
	log.Info("worker started", "transactional_id", txnID)
	runErr := w.run(ctx)

	// Teardown: every batch is acknowledged by now; send the
	// acknowledgements, then leave the group (which releases anything
	// the client still buffers).
	fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	if err := cons.FlushAcks(fctx); err != nil {
		log.Warn("flushing acknowledgements at shutdown", "err", err)
	}
	if err := cons.LeaveGroupContext(fctx); err != nil {
		log.Warn("leaving the share group", "err", err)
	}
	cons.Close()
	log.Info("worker stopped", "err", runErr)
	return runErr
}

// renewEvery is a third of the lock duration, or 0 when renewal is off.
func (r *Relay) renewEvery() time.Duration {
	if r.p.Batch.RenewLocks != nil && !*r.p.Batch.RenewLocks {
		return 0
	}
	return time.Duration(r.limits.LockDurationMs) * time.Millisecond / 3
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

// retryStart calls start until it succeeds or ctx ends, so a relay started
// while the broker is restarting waits for it instead of exiting.
func retryStart[T any](ctx context.Context, log *slog.Logger, what string, start func() (T, error)) (T, error) {
	backoff := 250 * time.Millisecond
	for {
		v, err := start()
		if err == nil {
			return v, nil
		}
		if errors.Is(err, txn.ErrFenced) || ctx.Err() != nil {
			return v, fmt.Errorf("relay: starting %s: %w", what, err)
		}
		log.Warn("starting "+what+" failed; retrying", "err", err, "backoff", backoff)
		sleepCtx(ctx, backoff)
		backoff = min(2*backoff, 5*time.Second)
	}
}

func dedupe(ss []string) []string {
	seen := make(map[string]bool, len(ss))
	out := ss[:0:0]
	for _, s := range ss {
		if !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	return out
}
