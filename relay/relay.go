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
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"golang.org/x/sync/errgroup"

	"github.com/sharerelay/sharerelay/audit"
	"github.com/sharerelay/sharerelay/config"
	"github.com/sharerelay/sharerelay/eos"
	"github.com/sharerelay/sharerelay/internal/kafkaerr"
	"github.com/sharerelay/sharerelay/internal/kafkaopts"
	"github.com/sharerelay/sharerelay/internal/kgolog"
	"github.com/sharerelay/sharerelay/metrics"
	"github.com/sharerelay/sharerelay/sharegroup"
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
	// ClientOpts are added to every Kafka client the relay creates, after
	// the options the pipeline configures (brokers, TLS, SASL, tuning; see
	// internal/kafkaopts): for example hooks for fault injection.
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
	limits limits
	health *health
	kafka  *kafkaopts.Options // every client's options
	ledger *eos.Ledger        // delivery: exactly-once
	// kgoLog is every client's franz-go logger: its warnings and
	// errors, one line a minute for each message.
	kgoLog *kgolog.Logger
	// sizes are the topics' max.message.bytes, refreshed while running.
	sizes atomic.Pointer[map[string]int]
	// consumers is the share consumers a worker runs: batch.consumers,
	// lowered by prepare when needed (CrashConsumers); prepare runs
	// before any worker.
	consumers int
	// wholeBatches says the share consumers acquire whole record batches
	// (batch.acquire_mode resolved by prepare: config.Batch.Acquire).
	wholeBatches bool
}

// limits are the share group's settings the workers depend on, refreshed
// while running (group configs can change under the relay).
type limits struct {
	attemptsV atomic.Int32 // deliveries a retryable failure gets before its dead letter
	limitV    atomic.Int32 // the group's delivery count limit
	lockMs    atomic.Int64 // the group's record lock duration
	// attemptsFrom, when not 0, caps the limit the default attempts are
	// derived from (GroupPlan.AttemptsLimit); set by prepare before
	// anything reads it.
	attemptsFrom int
}

// attemptsLimit is the delivery limit the default attempts derive from,
// for a group whose limit is limit.
func (l *limits) attemptsLimit(limit int) int {
	if l.attemptsFrom > 0 {
		return min(limit, l.attemptsFrom)
	}
	return limit
}

func (l *limits) attempts() int32     { return l.attemptsV.Load() }
func (l *limits) deliveryLimit() int  { return int(l.limitV.Load()) }
func (l *limits) lock() time.Duration { return time.Duration(l.lockMs.Load()) * time.Millisecond }

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
		if chain, err = opts.Pipeline.Chain(); err != nil {
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
	kafka, err := kafkaopts.New(opts.Pipeline)
	if err != nil {
		return nil, fmt.Errorf("relay: pipeline %s: %w", opts.Pipeline.Name, err)
	}
	log = log.With("pipeline", opts.Pipeline.Name, "instance", opts.Instance)
	m := metrics.New(reg, opts.Pipeline.Name)
	return &Relay{
		opts:   opts,
		p:      opts.Pipeline,
		chain:  chain,
		m:      m,
		log:    log,
		health: newHealth(log, m),
		kafka:  kafka,
		kgoLog: kgolog.New(log, kgoLogWindow),
	}, nil
}

// Ready reports whether the relay can make progress — started, and every
// worker able to take and write records — and if not, why. It is what
// /readyz serves.
func (r *Relay) Ready() (bool, string) { return r.health.Ready() }

// Metrics returns the relay's metrics.
func (r *Relay) Metrics() *metrics.Metrics { return r.m }

// TransactionalID returns the transactional id of worker i of this instance:
// stable per pipeline, instance and worker.
func (r *Relay) TransactionalID(i int) string {
	return r.transactionalIDPrefix() + strconv.Itoa(i)
}

// transactionalIDPrefix is what every transactional id of this instance's
// workers begins with.
func (r *Relay) transactionalIDPrefix() string {
	return fmt.Sprintf("sharerelay-%s-%s-", r.p.Name, r.opts.Instance)
}

// lanes is the number of transactional producers a worker alternates:
// two with exactly-once and batch.background_commit (see
// worker.switchLane), else one (at-least-once writes without
// transactions).
func (r *Relay) lanes() int {
	if r.p.Delivery == config.ExactlyOnce && (r.p.Batch.BackgroundCommit == nil || *r.p.Batch.BackgroundCommit) {
		return 2
	}
	return 1
}

// laneTransactionalID is the transactional id of worker i's producer l:
// TransactionalID(i) for the first, with ".1" appended for the second
// (exactly-once alternates two).
func (r *Relay) laneTransactionalID(i, l int) string {
	if l == 0 {
		return r.TransactionalID(i)
	}
	return fmt.Sprintf("%s.%d", r.TransactionalID(i), l)
}

// Run checks the cluster, sets the share group's configs, starts the workers
// and blocks until ctx is cancelled and every worker has finished its batch
// in flight, acknowledged it, and left the group. While the cluster cannot
// be reached it waits (not ready), retrying with backoff. It returns an
// error if a start-up check fails for a reason waiting cannot cure (a topic
// missing, a permission denied), the claim ledger is lost, or a worker has
// to stop (fenced).
func (r *Relay) Run(ctx context.Context) error {
	defer r.health.stop()
	defer context.AfterFunc(ctx, r.health.drain)()
	var topicIDs map[string][16]byte
	err := r.retry(ctx, "connecting to the cluster", func() (err error) {
		topicIDs, err = r.prepare(ctx)
		return err
	})
	if err != nil {
		return err
	}
	if r.p.Delivery == config.ExactlyOnce {
		err := r.retry(ctx, "opening the claim ledger", func() (err error) {
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
			return err
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
	g.Go(func() error { return r.watchLag(gctx, 15*time.Second) })
	g.Go(func() error { return r.watchRetired(gctx) })
	if r.ledger != nil {
		g.Go(func() error {
			select {
			case <-gctx.Done():
				return nil
			case <-r.ledger.Failed():
				return fmt.Errorf("relay: stopping: %w", r.ledger.Err())
			}
		})
	}
	var ready sync.WaitGroup
	ready.Add(r.p.Workers)
	for i := 0; i < r.p.Workers; i++ {
		g.Go(func() error { return r.runWorker(gctx, i, topicIDs, ready.Done) })
	}
	readyC := make(chan struct{})
	go func() { ready.Wait(); close(readyC) }()
	select {
	case <-readyC:
		r.health.setStarting("")
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

// retry runs start until it succeeds, fails for a reason waiting cannot
// cure, or ctx ends. While the cluster cannot be reached the relay is not
// ready; the outage is logged when it starts, every 30 s, and when it
// ends.
func (r *Relay) retry(ctx context.Context, what string, start func() error) error {
	began, logged, eofSince := time.Now(), time.Time{}, time.Time{}
	for attempt := 1; ; attempt++ {
		err := start()
		if err == nil {
			if attempt > 1 {
				r.log.Info(what+": done", "after", time.Since(began).Round(time.Millisecond), "attempts", attempt)
			}
			return nil
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if !transient(err) {
			return err
		}
		// A broker that closes every connection at once is usually
		// one that wants TLS or SASL the client does not speak (or a
		// proxy cutting it): waited out for a while, then a stop that
		// keeps franz-go's hint.
		var eof *kgo.ErrFirstReadEOF
		if errors.As(err, &eof) {
			if eofSince.IsZero() {
				eofSince = time.Now()
			} else if time.Since(eofSince) > firstReadEOFLimit {
				return fmt.Errorf("%s: the broker closed every connection at once for %s: %w", what, firstReadEOFLimit, err)
			}
		} else {
			eofSince = time.Time{}
		}
		r.health.setStarting(what + ": " + err.Error())
		backoff := min(time.Duration(attempt)*500*time.Millisecond, 10*time.Second)
		if time.Since(logged) >= outageLogEvery {
			r.log.Warn(what+" failed; retrying", "err", err, "attempt", attempt, "for", time.Since(began).Round(time.Second), "backoff", backoff)
			logged = time.Now()
		}
		if !sleepCtx(ctx, backoff) {
			return ctx.Err()
		}
	}
}

// firstReadEOFLimit is how long start-up waits out a broker that closes
// every connection at once.
const firstReadEOFLimit = time.Minute

// transient reports whether a start-up error is worth waiting out: the
// cluster could not be reached, or answered with a retriable error.
func transient(err error) bool {
	var ke *kerr.Error
	return kafkaerr.Unreachable(err) || errors.As(err, &ke) && ke.Retriable
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

// watchTopicIDs watches the source topics while the relay runs: a topic
// deleted and recreated stops the relay (claims are keyed by topic ID, and
// the workers resolved the IDs at start); a deleted one is reported (the
// relay is not ready, the share group delivers nothing from it).
func (r *Relay) watchTopicIDs(ctx context.Context, ids map[string][16]byte) error {
	return r.every(ctx, 10*time.Second, func(cl *kgo.Client) error {
		td, err := kadm.NewClient(cl).ListTopics(ctx, r.p.Source.Topics...)
		if err != nil {
			return nil // try again next time; the workers report outages
		}
		var gone []string
		for name, id := range ids {
			d, ok := td[name]
			switch {
			case ok && d.Err == nil && d.ID != id:
				return fmt.Errorf("relay: source topic %s was recreated (topic ID changed) while running; restart the relay", name)
			case !ok || errors.Is(d.Err, kerr.UnknownTopicOrPartition):
				gone = append(gone, name)
			}
		}
		if len(gone) > 0 {
			r.health.paused(sourceSlot, "source topic deleted", fmt.Errorf("source topics %v do not exist any more", gone))
		} else {
			r.health.fine(sourceSlot)
		}
		return nil
	})
}

// watchLag publishes the share group's lag per source partition, from the
// broker's share-group offsets.
func (r *Relay) watchLag(ctx context.Context, interval time.Duration) error {
	return r.every(ctx, interval, func(cl *kgo.Client) error {
		lag, err := audit.ShareGroupLag(ctx, kadm.NewClient(cl), r.p.Source.Group, r.p.Source.Topics...)
		if err != nil {
			return nil
		}
		for t, ps := range lag {
			for p, l := range ps {
				r.m.ShareGroupLag.WithLabelValues(t, strconv.Itoa(int(p))).Set(float64(l))
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
	td, err := checkTopics(ctx, cl, dedupe(names), topicGrace)
	if err != nil {
		return nil, fmt.Errorf("relay: %w", err)
	}
	ids := make(map[string][16]byte)
	for _, t := range r.p.Source.Topics {
		ids[t] = td[t].ID
	}
	sizes, err := maxMessageBytes(ctx, adm, r.p.OutputTopics())
	if err != nil {
		return nil, fmt.Errorf("relay: %w", err)
	}
	r.storeSizes(sizes)
	r.log.Info("largest record batches the topics take (max.message.bytes)", "bytes", sizes)

	parts := 0
	for _, t := range r.p.Source.Topics {
		parts += len(td[t].Partitions)
	}
	if r.p.Source.ManageGroupConfig == nil || *r.p.Source.ManageGroupConfig {
		plan := sharegroup.ConfigsToSet(ctx, cl, r.p, parts)
		for _, note := range plan.Notes {
			r.log.Info("share group "+note, "group", r.p.Source.Group)
		}
		for _, w := range plan.Warnings {
			r.log.Warn("share group "+w, "group", r.p.Source.Group)
		}
		cfgs := plan.Configs
		r.limits.attemptsFrom = plan.AttemptsLimit
		if err := sharegroup.SetConfigs(ctx, cl, r.p.Source.Group, cfgs); err != nil {
			return nil, fmt.Errorf("relay: %w", err)
		}
		// Group configs propagate through the metadata log: reading the
		// delivery limit too early would see the old one, and a relay
		// that believes in a higher limit than the broker's lets the
		// broker archive records silently.
		if err := sharegroup.WaitConfigs(ctx, cl, r.p.Source.Group, cfgs); err != nil {
			return nil, fmt.Errorf("relay: %w", err)
		}
		r.log.Info("share group configs set", "group", r.p.Source.Group, "configs", cfgs)
	} else {
		r.log.Info("share group configs left alone (source.manage_group_config: false)", "group", r.p.Source.Group)
	}

	l, err := sharegroup.EffectiveLimits(ctx, cl, r.p.Source.Group)
	if err != nil {
		r.log.Warn("could not read the share group's delivery limit; assuming Kafka's default", "limit", l.DeliveryCountLimit, "err", err)
	}
	r.setLimits(l)
	r.consumers = sharegroup.ConsumersPerWorker(r.p.Workers, r.p.Batch.Consumers, l.DeliveryCountLimit)
	switch {
	case r.p.Workers >= l.DeliveryCountLimit:
		r.log.Warn("workers reach the group's delivery limit: a crash of this instance can cost a record it held one delivery for each of the instance's share consumers, so a crash alone can make the broker archive a record without output or dead letter; run more instances with fewer workers, or raise share.delivery.count.limit",
			"workers", r.p.Workers, "consumers", r.consumers, "delivery_count_limit", l.DeliveryCountLimit)
	case r.consumers < r.p.Batch.Consumers:
		r.log.Warn("batch.consumers lowered: a crash of this instance can cost a record it held one delivery for each of the instance's share consumers, and workers × consumers must stay below the group's delivery limit so that a crash alone never makes the broker archive a record; raise share.delivery.count.limit or run more instances with fewer workers",
			"batch_consumers", r.p.Batch.Consumers, "consumers", r.consumers, "workers", r.p.Workers, "delivery_count_limit", l.DeliveryCountLimit)
	}
	mode, why := r.p.Batch.Acquire()
	r.wholeBatches = mode == config.AcquireBatchOptimized
	if r.wholeBatches {
		r.m.AcquireWholeBatches.Set(1) // 0 until then
	}
	r.log.Info("acquire mode "+mode, "why", why, "record_locks", l.RecordLocks, "partitions", parts)
	if err := checkBrokerDLQ(ctx, cl, r.p, r.log); err != nil {
		return nil, fmt.Errorf("relay: %w", err)
	}
	r.log.Info("delivery limits", "delivery_count_limit", l.DeliveryCountLimit, "from", l.From, "workers", r.p.Workers, "consumers", r.consumers,
		"max_attempts", r.limits.attempts(), "lock_duration_ms", l.LockDurationMs, "delivery", r.p.Delivery)
	if r.p.Delivery == config.ExactlyOnce && r.p.Output.TransactionTimeout >= time.Duration(l.LockDurationMs)*time.Millisecond {
		r.log.Warn("output.transaction_timeout is not below the share lock duration: a crashed worker's claim may outlive the lock of the records it blocks",
			"transaction_timeout", r.p.Output.TransactionTimeout, "lock_duration_ms", l.LockDurationMs)
	}
	return ids, nil
}

// setLimits derives the attempts a failing record gets from the group's
// limits, and publishes them to the workers.
func (r *Relay) setLimits(l sharegroup.Limits) {
	a := int32(r.p.DeadLetter.MaxAttempts)
	if a == 0 {
		// Keep the broker's last deliveries as spares: a crash during
		// the last attempt then still leaves a delivery, which
		// dead-letters the record instead of the broker archiving it.
		a = int32(config.DefaultMaxAttempts(r.limits.attemptsLimit(l.DeliveryCountLimit)))
	}
	switch spare := l.DeliveryCountLimit - int(a); {
	case spare <= 0:
		r.log.Warn("dead_letter.max_attempts leaves no spare delivery: a crash during the last attempt lets the broker archive the record without a dead letter",
			"max_attempts", a, "delivery_count_limit", l.DeliveryCountLimit)
	case spare == 1:
		r.log.Warn("dead_letter.max_attempts leaves one spare delivery: a crash can cost a record two (the one it held, and one a share fetch left waiting in the broker acquires for the dead connection), so the broker may archive it without a dead letter; raise share.delivery.count.limit to 4 or more",
			"max_attempts", a, "delivery_count_limit", l.DeliveryCountLimit)
	}
	r.limits.limitV.Store(int32(l.DeliveryCountLimit))
	r.limits.lockMs.Store(int64(l.LockDurationMs))
	r.m.LockDuration.Set(float64(l.LockDurationMs) / 1000)
	if old := r.limits.attemptsV.Swap(a); old != 0 && old != a {
		r.log.Info("share group delivery limit changed", "delivery_count_limit", l.DeliveryCountLimit, "max_attempts", a)
	}
}

// refreshLimits re-reads the group's delivery limit every interval, so an
// operator lowering share.delivery.count.limit while the relay runs does
// not make the broker archive records the relay still means to retry.
func (r *Relay) refreshLimits(ctx context.Context, interval time.Duration) error {
	return r.every(ctx, interval, func(cl *kgo.Client) error {
		if l, err := sharegroup.EffectiveLimits(ctx, cl, r.p.Source.Group); err == nil {
			r.setLimits(l)
		}
		if sizes, err := maxMessageBytes(ctx, kadm.NewClient(cl), r.p.OutputTopics()); err == nil {
			r.storeSizes(sizes)
		}
		return nil
	})
}

// maxBatch is the producers' batch limit: the largest max.message.bytes
// of the topics written, so the client refuses no record a topic takes
// (write keeps each topic's batches within that topic's limit).
func (r *Relay) maxBatch() int32 {
	m := 0
	for _, v := range *r.sizes.Load() {
		m = max(m, v)
	}
	return int32(m)
}

// runWorker creates worker i's clients, runs its loop, and tears it down:
// acknowledgements flushed, group left, clients closed.
func (r *Relay) runWorker(ctx context.Context, i int, topicIDs map[string][16]byte, ready func()) error {
	label := strconv.Itoa(i)
	log := r.log.With("worker", i)
	txnID := r.TransactionalID(i)

	disrupt := &disruptions{}
	lanes := make([]*lane, r.lanes())
	for l := range lanes {
		lanes[l] = &lane{}
	}
	defer func() {
		for _, l := range lanes {
			if l.guard != nil {
				l.guard.Close()
			}
		}
	}()
	for l, ln := range lanes {
		id := r.laneTransactionalID(i, l)
		ln.newProducer = func(ctx context.Context) (*txn.Producer, error) {
			return txn.New(ctx, txn.Config{
				Seeds:              r.p.Brokers,
				TransactionalID:    id,
				TransactionTimeout: r.p.Output.TransactionTimeout,
				ClientID:           id,
				MaxBatchBytes:      r.maxBatch(),
				// At-least-once writes without transactions: nothing
				// to claim, and a batch written twice is what it
				// allows.
				Idempotent: r.p.Delivery == config.AtLeastOnce,
				Extra:      r.clientOpts(kgo.WithHooks(disrupt)),
			})
		}
		err := r.retry(ctx, "creating the transactional producer", func() (err error) {
			ln.prod, err = ln.newProducer(ctx)
			return err
		})
		if err == nil {
			ln.guard, err = r.newGuard(id)
		}
		if err != nil {
			ready()
			for _, l := range lanes {
				if l.prod != nil {
					l.prod.Close()
				}
			}
			return fmt.Errorf("relay: worker %d: %w", i, err)
		}
		if r.opts.WrapGuard != nil {
			ln.guard = r.opts.WrapGuard(ln.guard)
		}
	}
	// The lanes' producers are closed through the worker, which swaps
	// them; closeProducers closes them before the worker exists.
	closeProducers := func() {
		for _, l := range lanes {
			l.prod.Close()
		}
	}

	// The worker's share consumers: one or more (batch.consumers), whose
	// polls are written together (see shareSource).
	var clients []*kgo.Client
	closeClients := func() {
		for _, cl := range clients {
			cl.Close()
		}
	}
	wholeBatches := r.wholeBatches
	for c := range r.consumers {
		opts := r.clientOpts(
			kgo.ClientID(fmt.Sprintf("%s-c%d", txnID, c)),
			kgo.ShareGroup(r.p.Source.Group),
			kgo.ConsumeTopics(r.p.Source.Topics...),
			kgo.ShareMaxRecords(int32(r.p.Batch.MaxRecords)),
			// Fetch only inside a poll (no fetching ahead), and the
			// source takes all a poll fetched (newShareSource): records
			// acquired beyond what the worker holds would sit in the
			// client's buffer, where nothing renews their locks, and a
			// worker paused by an outage longer than the lock would
			// spend their deliveries (the chaos suite's
			// CHAOS_BATCH_BYTES=1048576 run found that once).
			kgo.MaxConcurrentFetches(0),
		)
		if !wholeBatches {
			// The broker splits record batches to acquire no more
			// than max_records (KIP-1206 record_limit).
			opts = append(opts, kgo.ShareMaxRecordsStrict())
		}
		opts = append(opts,
			kgo.ShareAckCallback(func(_ *kgo.Client, res kgo.ShareAckResults) {
				for _, a := range res {
					if a.Err != nil {
						r.m.AckErrors.WithLabelValues(label).Inc()
						log.Warn("share acknowledgement failed (the record will be delivered again)", "topic", a.Topic, "partition", a.Partition, "err", a.Err)
					}
				}
			}),
		)
		cons, err := kgo.NewClient(opts...)
		if err != nil {
			ready()
			closeProducers()
			closeClients()
			return fmt.Errorf("relay: worker %d: creating share consumer %d: %w", i, c, err)
		}
		clients = append(clients, cons)
	}
	src := newShareSource(clients, r.p.Source.Group, r.p.Batch.MaxRecords, wholeBatches, func(n int) { r.m.InvariantBreaks.Add(float64(n)) })
	spans := r.p.OutputTopics()
	if r.p.Delivery == config.ExactlyOnce {
		spans = append(spans, r.p.Ledger.Topic)
	}
	w := &worker{
		id: i, label: label, pipeline: r.p.Name,
		outputTopic: r.p.Output.Topic, dlqTopic: r.p.DeadLetter.Topic, writes: r.p.OutputTopics(), spans: spans,
		limits: &r.limits, txnTimeout: r.p.Output.TransactionTimeout, pollTimeout: r.p.Batch.PollTimeout, linger: r.p.Batch.Linger,
		topicIDs: topicIDs, renewEvery: r.renewEvery(),
		src: src, most: batchMost(r.consumers, r.p.Batch.MaxRecords), concurrency: r.p.Batch.TransformConcurrency,
		prod: lanes[0].prod, newProducer: lanes[0].newProducer, guard: lanes[0].guard,
		disrupt: disrupt, chain: r.chain, m: r.m, health: r.health, log: log, now: time.Now,
		sizes:             func() map[string]int { return *r.sizes.Load() },
		newReader:         func(opts ...kgo.Opt) (*kgo.Client, error) { return kgo.NewClient(r.clientOpts(opts...)...) },
		rejectDeadLetters: r.p.DeadLetter.Ack == config.DeadLetterReject,
	}
	if len(lanes) > 1 {
		w.spare = &lane{prod: lanes[1].prod, guard: lanes[1].guard, newProducer: lanes[1].newProducer}
	}
	defer func() {
		w.prod.Close()
		if w.spare != nil {
			w.spare.prod.Close()
		}
	}()
	ready()
	log.Info("worker started", "transactional_id", txnID)
	runErr := r.runDraining(ctx, w, log)

	// Teardown: every batch is acknowledged by now; send the
	// acknowledgements, then leave the group (which releases anything
	// the client still buffers). One short budget for both: with the
	// broker gone they cannot succeed, and the records' locks expire
	// anyway.
	if n := src.close(); n > 0 {
		r.m.Acks.WithLabelValues(label, metrics.AckRelease).Add(float64(n))
		log.Info("released records handed over but not taken (drain timeout)", "records", n)
	}
	fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	var tear sync.WaitGroup
	for _, cl := range clients {
		tear.Add(1)
		go func() {
			defer tear.Done()
			if err := cl.FlushAcks(fctx); err != nil {
				log.Warn("flushing acknowledgements at shutdown", "err", err)
			}
			if err := cl.LeaveGroupContext(fctx); err != nil {
				log.Warn("leaving the share group", "err", err)
			}
			cl.Close()
		}()
	}
	tear.Wait()
	r.health.fine(i)
	log.Info("worker stopped", "err", runErr)
	return runErr
}

// drainGrace is how long a share fetch in flight when a worker is told to
// stop may still come back with records for the drain (shareSource.stop):
// a busy broker answers a share fetch in milliseconds, and an idle one
// would hold the stop for its whole wait.
const drainGrace = 250 * time.Millisecond

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
		w.src.stop(min(drain, drainGrace))
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

// renewEvery is a third of the lock duration, or 0 when renewal is off.
func (r *Relay) renewEvery() time.Duration {
	if r.p.Batch.RenewLocks != nil && !*r.p.Batch.RenewLocks {
		return 0
	}
	return r.limits.lock() / 3
}

// batchMost is the most records one batch of a worker takes: the polls of
// half its consumers, rounded up. A consumer polls again only once its
// records are acknowledged, which is when the batch holding them has been
// written (at-least-once: every output acknowledged by the brokers) or
// its commit has ended (exactly-once: the commit runs beside the next
// batch). A batch that took every poll would leave the next one nothing
// to start on until then: fetch, write and commit would not overlap.
// With half, the other half is fetching or ready meanwhile (make bench,
// 200 B: exactly-once 0.74–0.88× of at-least-once with every poll in the
// batch, 0.97–1.00× with half; at-least-once waited for a poll 45–49% of
// the worker's time with every poll and 19–23% with half, and went from
// 0.97–1.00× the copier to 1.17–1.18×).
func batchMost(consumers, maxRecords int) int {
	return (consumers + 1) / 2 * maxRecords
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
