package relay

import (
	"cmp"
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
	"github.com/sharerelay/sharerelay/format"
	"github.com/sharerelay/sharerelay/internal/kafkaerr"
	"github.com/sharerelay/sharerelay/internal/kafkaopts"
	"github.com/sharerelay/sharerelay/internal/kgolog"
	"github.com/sharerelay/sharerelay/internal/wait"
	"github.com/sharerelay/sharerelay/metrics"
	"github.com/sharerelay/sharerelay/sharegroup"
	"github.com/sharerelay/sharerelay/transform"
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
	// FleetEvery is how often the relay counts the relay instances in
	// its share group, and FleetSettle how long a new count must hold
	// before the workers resize their share consumers to it (zero: 5 s
	// and 10 s; see watchFleet).
	FleetEvery, FleetSettle time.Duration
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
	kafka  *kafkaopts.Clusters // every client's options: the sink's, the source's
	ledger *eos.Ledger         // delivery: exactly-once
	// kgoLog is every client's franz-go logger: its warnings and
	// errors, one line a minute for each message.
	kgoLog *kgolog.Logger
	// sizes are the topics' max.message.bytes, refreshed while running.
	sizes atomic.Pointer[map[string]int]
	// target is the size the workers' share consumers are to have now:
	// batch.consumers and batch.max_records as startUp sized them to the
	// group's delivery limit and record locks (sharegroup.Size; startUp
	// runs before any worker), then what watchFleet chooses as relay
	// instances come and go. instances is the relay instances startUp
	// counted in the group.
	target    atomic.Pointer[size]
	instances int
	// parts is the number of source partitions startUp found, and
	// groupLimits the share group's limits, as last read.
	parts       int
	groupLimits atomic.Pointer[sharegroup.Limits]
	// fleetEvery and fleetSettle are watchFleet's interval and
	// hysteresis (tests shorten them).
	fleetEvery, fleetSettle time.Duration
	// wholeBatches says the share consumers acquire whole record batches
	// (batch.acquire_mode resolved by startUp: config.Batch.Acquire).
	wholeBatches bool
}

// limits are the share group's settings the workers depend on, refreshed
// while running (group configs can change under the relay).
type limits struct {
	attemptsV atomic.Int32 // deliveries a retryable failure gets before its dead letter
	limitV    atomic.Int32 // the group's delivery count limit
	lockMs    atomic.Int64 // the group's record lock duration
	// attemptsFrom, when not 0, caps the limit the default attempts are
	// derived from (sharegroup.Plan.AttemptsLimit); set by startUp before
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
	var schemas []*format.Registry
	if chain == nil {
		formats, regs, err := format.ForPipeline(opts.Pipeline)
		if err != nil {
			return nil, fmt.Errorf("relay: pipeline %s: %w", opts.Pipeline.Name, err)
		}
		if chain, err = opts.Pipeline.ChainWith(formats); err != nil {
			return nil, fmt.Errorf("relay: pipeline %s: %w", opts.Pipeline.Name, err)
		}
		schemas = regs
	}
	reg := opts.Registerer
	if reg == nil {
		reg = prometheus.NewRegistry()
	}

	log := opts.Logger
	if log == nil {
		log = slog.Default()
	}
	kafka, err := kafkaopts.NewClusters(opts.Pipeline)
	if err != nil {
		return nil, fmt.Errorf("relay: pipeline %s: %w", opts.Pipeline.Name, err)
	}
	log = log.With("pipeline", opts.Pipeline.Name, "instance", opts.Instance)
	m := metrics.New(reg, opts.Pipeline.Name)
	for _, s := range schemas {
		s.CountRequests(m.SchemaRegistryRequests.Inc)
	}
	return &Relay{
		opts:   opts,
		p:      opts.Pipeline,
		chain:  chain,
		m:      m,
		log:    log,
		health: newHealth(log, m),
		kafka:  kafka,
		kgoLog: kgolog.New(log, kgoLogWindow),

		fleetEvery:  cmp.Or(opts.FleetEvery, fleetEvery),
		fleetSettle: cmp.Or(opts.FleetSettle, fleetSettle),
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
	what := "connecting to the cluster"
	if r.p.CrossCluster() {
		what = "connecting to the clusters" // the errors name which
	}
	err := r.retry(ctx, what, func() (err error) {
		topicIDs, err = r.startUp(ctx)
		return err
	})
	if err != nil {
		return err
	}
	if r.p.Delivery == config.ExactlyOnce {
		err := r.retry(ctx, "opening the claim ledger", func() (err error) {
			defer func() { err = r.onSink(err) }()
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
	g.Go(func() error { return r.watchFleet(gctx, r.fleetEvery, r.fleetSettle) })
	g.Go(func() error { return r.watchLag(gctx, 15*time.Second) })
	g.Go(func() error { return r.watchRetiredIDs(gctx) })
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
		if !wait.Sleep(ctx, backoff) {
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

// every runs check every interval with a client of its own, made with
// opts (clientOpts for the sink cluster, sourceClientOpts for the
// source), until ctx ends or check returns an error: the relay's
// background watchers.
func (r *Relay) every(ctx context.Context, interval time.Duration, opts func(...kgo.Opt) []kgo.Opt, check func(*kgo.Client) error) error {
	cl, err := kgo.NewClient(opts()...)
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
//
// With source.cluster it also reports a source cluster it cannot reach:
// the workers find out about an unreachable cluster when they write, and
// with the source on a cluster of its own they only see polls come back
// empty. On one cluster a write failing says it already.
func (r *Relay) watchTopicIDs(ctx context.Context, ids map[string][16]byte) error {
	return r.every(ctx, sourceWatchEvery, r.sourceClientOpts, func(cl *kgo.Client) error {
		lctx, cancel := context.WithTimeout(ctx, sourceWatchEvery)
		td, err := kadm.NewClient(cl).ListTopics(lctx, r.p.Source.Topics...)
		cancel()
		if err != nil {
			if r.p.CrossCluster() && ctx.Err() == nil && kafkaerr.Unreachable(err) {
				r.health.paused(sourceSlot, "source cluster unavailable", err)
			}
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

// sourceWatchEvery is how often the source topics are looked at, and how
// long a look may take.
const sourceWatchEvery = 5 * time.Second

// watchLag publishes the share group's lag per source partition, from the
// broker's share-group offsets.
func (r *Relay) watchLag(ctx context.Context, interval time.Duration) error {
	return r.every(ctx, interval, r.sourceClientOpts, func(cl *kgo.Client) error {
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

// maxBatch is the producers' batch limit: the largest max.message.bytes
// of the topics written, so the client refuses no record a topic takes
// (a worker keeps each topic's batches within that topic's limit).
func (r *Relay) maxBatch() int32 {
	m := 0
	for _, v := range *r.sizes.Load() {
		m = max(m, v)
	}
	return int32(m)
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
