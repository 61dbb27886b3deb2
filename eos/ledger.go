package eos

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sharerelay/sharerelay/internal/brokerfloor"
	"github.com/sharerelay/sharerelay/internal/kafkaerr"
	"github.com/sharerelay/sharerelay/internal/wait"
)

// LedgerConfig configures a Ledger.
type LedgerConfig struct {
	// ClientOpts must include the seed brokers.
	ClientOpts []kgo.Opt
	// Topic is the claim ledger; SnapshotTopic holds its snapshots
	// (default Topic + ".snapshots").
	Topic, SnapshotTopic string
	// Partitions of the ledger when the relay creates it (default 1: a
	// total order of claims, so conflicting claims never wait on each
	// other in a cycle). Never change it for an existing ledger.
	Partitions int32
	// Retention of the ledger when the relay creates it (default 7 days).
	// It only has to outlive SnapshotEvery by a wide margin.
	Retention time.Duration
	// Gen is the ledger generation; claims of other generations are
	// ignored.
	Gen int64
	// ClaimWait bounds the wait for an earlier pending claim's marker; on
	// timeout the worker aborts its transaction (always safe). Set it
	// above the producers' transaction timeout, so a crashed writer's
	// claim is aborted by the coordinator before it runs out.
	ClaimWait time.Duration
	// SnapshotEvery is how often the index is snapshotted (default 10s;
	// negative disables snapshots).
	SnapshotEvery time.Duration
	// Markers is the broker's marker epoch convention (default
	// MarkersAtNextEpoch, Apache Kafka's under transaction.version 2).
	Markers MarkerEpochs
	// TransactionTimeout is the producers' transaction timeout: a claim
	// pending much longer than this lost its marker, and the resolver
	// settles it (default 10s).
	TransactionTimeout time.Duration
	// OutputTopics are where the resolver looks for the outcome of a
	// claim that names no output topics (claims written before claims
	// named them).
	OutputTopics []string
	// ResolveSlack widens the resolver's look at the outputs around a
	// claim's time, for clock skew between the writer and the brokers
	// (default 30s).
	ResolveSlack time.Duration
	// ResolveEvery is how often the resolver looks for claims to settle,
	// and the base of its retry pause (default 1s). ResolveTimeout bounds
	// one attempt (default 60s).
	ResolveEvery, ResolveTimeout time.Duration
	// Instance names this process in the resolution records it writes.
	Instance string
	// Logger; nil means slog.Default().
	Logger *slog.Logger
	// ReadOnly opens the ledger only to look (Guard's Committed): it
	// creates no topic (ErrNoLedger when the ledger topic does not
	// exist), writes no snapshot and runs no resolver. For tools that
	// must write nothing, such as relay dlq replay --dry-run. Its Guards
	// must not claim.
	ReadOnly bool
}

// SnapshotTopic is the default snapshot topic of the ledger topic ledger.
func SnapshotTopic(ledger string) string { return ledger + ".snapshots" }

func (c *LedgerConfig) defaults() {
	if c.SnapshotTopic == "" {
		c.SnapshotTopic = SnapshotTopic(c.Topic)
	}
	if c.Partitions <= 0 {
		c.Partitions = 1
	}
	if c.Retention <= 0 {
		c.Retention = 7 * 24 * time.Hour
	}
	if c.ClaimWait <= 0 {
		c.ClaimWait = 30 * time.Second
	}
	if c.SnapshotEvery == 0 {
		c.SnapshotEvery = 10 * time.Second
	}
	if c.TransactionTimeout <= 0 {
		c.TransactionTimeout = 10 * time.Second
	}
	if c.ResolveSlack <= 0 {
		c.ResolveSlack = 30 * time.Second
	}
	if c.ResolveEvery <= 0 {
		c.ResolveEvery = time.Second
	}
	if c.ResolveTimeout <= 0 {
		c.ResolveTimeout = 60 * time.Second
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.ReadOnly {
		c.SnapshotEvery = -1
	}
}

// ErrClaimWaitTimeout means an earlier claim of the same source offset
// stayed pending longer than ClaimWait; the worker aborts.
var ErrClaimWaitTimeout = errors.New("eos: timed out waiting for an earlier claim's transaction to end")

// Ledger is an instance's view of the claim ledger: a reader that tails the
// ledger and keeps the Index, and the snapshots that make restarts fast.
// Workers use it through Guards.
type Ledger struct {
	cfg LedgerConfig
	log *slog.Logger

	mu      sync.Mutex
	idx     *Index
	changed chan struct{} // closed and replaced whenever idx changes
	// stale are claims workers waited on too long, for the resolver;
	// unsettled is how many claims the resolver could not settle yet.
	stale       map[Pos]bool
	unsettled   int
	resolveKick chan struct{}

	// failed is closed, and failure set, when the ledger can no longer be
	// read (its topic deleted or recreated, reading not authorized).
	failed  chan struct{}
	failure error

	topicID     [16]byte // the ledger topic's ID when opened
	noSnapshots bool     // ReadOnly: the snapshot topic does not exist

	reader   *kgo.Client
	snap     *kgo.Client
	resolver *kgo.Client // writes resolution records to chosen partitions
	cancel   context.CancelFunc
	wg       sync.WaitGroup

	// StartupStats describes how the ledger was loaded.
	StartupStats StartupStats
}

// StartupStats says how an instance rebuilt its index.
type StartupStats struct {
	SnapshotNext    map[int32]int64
	RecordsReplayed int64
	Elapsed         time.Duration
}

// OpenLedger creates the ledger topics if needed, checks the cluster's
// transaction.version, loads the latest snapshot, replays the ledger after
// it up to its current end, and starts tailing it.
func OpenLedger(ctx context.Context, cfg LedgerConfig) (*Ledger, error) {
	cfg.defaults()
	start := time.Now()
	l := &Ledger{cfg: cfg, log: cfg.Logger.With("ledger", cfg.Topic), changed: make(chan struct{}),
		stale: map[Pos]bool{}, resolveKick: make(chan struct{}, 1), failed: make(chan struct{})}

	// A short metadata age: the topics may be created just below.
	admCl, err := kgo.NewClient(append(append([]kgo.Opt{}, cfg.ClientOpts...), kgo.MetadataMinAge(100*time.Millisecond))...)
	if err != nil {
		return nil, fmt.Errorf("eos: creating admin client: %w", err)
	}
	defer admCl.Close()
	if err := checkTransactionV2(ctx, admCl, l.log); err != nil {
		return nil, err
	}
	adm := kadm.NewClient(admCl)
	if err := l.ensureTopics(ctx, adm); err != nil {
		return nil, err
	}

	snap, err := l.restoreIndex(ctx)
	if err != nil {
		return nil, err
	}
	assign, ends, err := l.replayFrom(ctx, admCl)
	if err != nil {
		return nil, err
	}
	rctx, err := l.startReading(assign)
	if err != nil {
		return nil, err
	}

	// Catch up to the end seen at start, so Committed is meaningful from
	// the first batch on.
	for p := int32(0); p < cfg.Partitions; p++ {
		end, _ := ends.Lookup(cfg.Topic, p)
		if err := l.waitApplied(ctx, Pos{p, end.Offset - 1}); err != nil {
			l.Close()
			return nil, fmt.Errorf("eos: catching up with ledger %s[%d]: %w", cfg.Topic, p, err)
		}
	}
	l.logLoaded(snap, start)

	if cfg.SnapshotEvery > 0 {
		l.wg.Add(1)
		go l.snapshotLoop(rctx)
	}
	return l, nil
}

// restoreIndex sets l.idx from the latest snapshot of the generation, or
// to an empty index when there is none (or no snapshot topic); it returns
// the snapshot, nil for none.
func (l *Ledger) restoreIndex(ctx context.Context) (*Snapshot, error) {
	var snap *Snapshot
	if !l.noSnapshots {
		var err error
		if snap, err = l.loadSnapshot(ctx); err != nil {
			return nil, err
		}
	}
	if snap != nil {
		l.idx = Restore(snap, l.cfg.Markers)
		if snap.Format < SnapshotFormat {
			l.log.Warn("snapshot written by an older relay: its pending claims have no epochs and are settled by the resolver",
				"format", snap.Format, "pending", len(snap.Pending))
		}
	} else {
		l.idx = NewIndex(l.cfg.Gen, l.cfg.Markers)
	}
	return snap, nil
}

// replayFrom returns where the reader starts in each ledger partition (the
// index's next offset, refused when the ledger's history no longer reaches
// back to it) and the ledger's ends now, up to which OpenLedger catches up.
func (l *Ledger) replayFrom(ctx context.Context, admCl *kgo.Client) (map[int32]kgo.Offset, kadm.ListedOffsets, error) {
	cfg := l.cfg
	starts, err := retryListing(ctx, admCl, func(adm *kadm.Client) (kadm.ListedOffsets, error) {
		return adm.ListStartOffsets(ctx, cfg.Topic)
	})
	if err != nil {
		return nil, nil, fmt.Errorf("eos: listing start offsets of %s: %w", cfg.Topic, err)
	}
	ends, err := retryListing(ctx, admCl, func(adm *kadm.Client) (kadm.ListedOffsets, error) {
		return adm.ListEndOffsets(ctx, cfg.Topic)
	})
	if err != nil {
		return nil, nil, fmt.Errorf("eos: listing end offsets of %s: %w", cfg.Topic, err)
	}
	assign := make(map[int32]kgo.Offset)
	for p := int32(0); p < cfg.Partitions; p++ {
		next := l.idx.Next(p)
		if so, ok := starts.Lookup(cfg.Topic, p); ok && so.Offset > next {
			return nil, nil, fmt.Errorf("eos: ledger %s[%d] starts at offset %d but the index needs it from %d: "+
				"its history was deleted before a snapshot covered it; raise ledger.generation to start a fresh ledger generation",
				cfg.Topic, p, so.Offset, next)
		}
		assign[p] = kgo.NewOffset().At(next)
	}
	l.StartupStats.SnapshotNext = l.idx.Snapshot().Next
	return assign, ends, nil
}

// startReading creates the ledger reader (from assign), the snapshot
// producer and, unless ReadOnly, the resolution producer, and starts the
// resolver and the reader goroutines. It returns their context, which
// l.cancel ends; on error it has closed what it created and started
// nothing.
func (l *Ledger) startReading(assign map[int32]kgo.Offset) (context.Context, error) {
	cfg := l.cfg
	var err error
	l.reader, err = kgo.NewClient(append(append([]kgo.Opt{}, cfg.ClientOpts...),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{cfg.Topic: assign}),
		kgo.FetchIsolationLevel(kgo.ReadUncommitted()),
		kgo.KeepControlRecords(),
		kgo.FetchMaxWait(200*time.Millisecond),
	)...)
	if err != nil {
		return nil, fmt.Errorf("eos: creating ledger reader: %w", err)
	}
	// Snapshots are zstd whatever the pipeline's compression: its
	// compressor is dropped so that this codec applies.
	l.snap, err = kgo.NewClient(append(append([]kgo.Opt{}, cfg.ClientOpts...), kgo.WithCompressor(nil), kgo.ProducerBatchCompression(kgo.ZstdCompression()),
		kgo.ProducerBatchMaxBytes(16<<20))...)
	if err != nil {
		l.reader.Close()
		return nil, fmt.Errorf("eos: creating snapshot producer: %w", err)
	}
	rctx, cancel := context.WithCancel(context.Background())
	l.cancel = cancel
	if !cfg.ReadOnly {
		l.resolver, err = kgo.NewClient(append(append([]kgo.Opt{}, cfg.ClientOpts...), kgo.RecordPartitioner(kgo.ManualPartitioner()))...)
		if err != nil {
			cancel()
			l.reader.Close()
			l.snap.Close()
			return nil, fmt.Errorf("eos: creating resolution producer: %w", err)
		}
		l.wg.Add(1)
		go l.resolveLoop(rctx)
	}
	l.wg.Add(1)
	go l.read(rctx)
	return rctx, nil
}

// logLoaded records how many ledger records the startup replayed after
// snap (nil: from the start) and how long it took since start, and logs
// the loaded index.
func (l *Ledger) logLoaded(snap *Snapshot, start time.Time) {
	l.mu.Lock()
	for p := int32(0); p < l.cfg.Partitions; p++ {
		if snap != nil {
			l.StartupStats.RecordsReplayed += l.idx.Next(p) - snap.Next[p]
		} else {
			l.StartupStats.RecordsReplayed += l.idx.Next(p)
		}
	}
	st := l.idx.Stats()
	l.mu.Unlock()
	l.StartupStats.Elapsed = time.Since(start)
	l.log.Info("claim ledger loaded", "generation", l.cfg.Gen, "snapshot", snap != nil,
		"replayed", l.StartupStats.RecordsReplayed, "elapsed", l.StartupStats.Elapsed,
		"source_partitions", st.Partitions, "committed_ranges", st.Ranges, "pending_claims", st.Pending, "orphaned_claims", st.Orphans)
}

// Close stops the reader and the snapshot writer.
func (l *Ledger) Close() {
	if l.cancel != nil {
		l.cancel()
	}
	l.wg.Wait()
	if l.reader != nil {
		l.reader.Close()
	}
	if l.snap != nil {
		l.snap.Close()
	}
	if l.resolver != nil {
		l.resolver.Close()
	}
}

// WaitCaughtUp waits until the reader has applied the ledger up to its end
// as of the call.
func (l *Ledger) WaitCaughtUp(ctx context.Context) error {
	cl, err := kgo.NewClient(l.cfg.ClientOpts...)
	if err != nil {
		return fmt.Errorf("eos: %w", err)
	}
	ends, err := retryListing(ctx, cl, func(adm *kadm.Client) (kadm.ListedOffsets, error) {
		return adm.ListEndOffsets(ctx, l.cfg.Topic)
	})
	cl.Close()
	if err != nil {
		return fmt.Errorf("eos: listing end offsets of %s: %w", l.cfg.Topic, err)
	}
	var werr error
	ends.Each(func(o kadm.ListedOffset) {
		if werr == nil {
			werr = l.waitApplied(ctx, Pos{o.Partition, o.Offset - 1})
		}
	})
	return werr
}

// Snapshot returns the index's state as a snapshot would hold it.
func (l *Ledger) Snapshot() *Snapshot {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.idx.Snapshot()
}

// Stats returns the index's size.
func (l *Ledger) Stats() Stats {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.idx.Stats()
}

func (l *Ledger) broadcast() {
	close(l.changed)
	l.changed = make(chan struct{})
}

// read tails the ledger and applies every record to the index. A fetch
// error is logged once and retried with a growing pause; when the ledger
// topic is gone (deleted or recreated) or cannot be read for good, the
// ledger fails (Failed) with one clear error: it holds the exactly-once
// state, and nothing can be committed safely without it.
func (l *Ledger) read(ctx context.Context) {
	defer l.wg.Done()
	var backoff time.Duration
	var lastErr string
	for {
		fs := l.reader.PollFetches(ctx)
		if ctx.Err() != nil {
			return
		}
		var ferr error
		fs.EachError(func(_ string, p int32, err error) {
			if ferr == nil {
				ferr = fmt.Errorf("reading %s[%d]: %w", l.cfg.Topic, p, err)
			}
		})
		if ferr != nil {
			if kafkaerr.Classify(ferr) == kafkaerr.Destination {
				if gone := l.checkTopic(ctx); gone != nil {
					l.fail(gone)
					return
				}
			}
			backoff = min(max(2*backoff, 100*time.Millisecond), 10*time.Second)
			if msg := ferr.Error(); msg != lastErr {
				lastErr = msg
				l.log.Warn("reading the ledger failed; retrying", "err", ferr, "backoff", backoff)
			}
			if !wait.Sleep(ctx, backoff) {
				return
			}
		} else if backoff > 0 {
			l.log.Info("reading the ledger again")
			backoff, lastErr = 0, ""
		}
		l.mu.Lock()
		before := l.idx.Stats().Orphans
		fs.EachRecord(l.apply)
		if after := l.idx.Stats().Orphans; after > before {
			select {
			case l.resolveKick <- struct{}{}:
			default:
			}
		}
		l.broadcast()
		l.mu.Unlock()
	}
}

// checkTopic returns an error when the ledger topic no longer is the one
// opened: deleted, recreated, or not readable.
func (l *Ledger) checkTopic(ctx context.Context) error {
	cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	td, err := kadm.NewClient(l.reader).ListTopics(cctx, l.cfg.Topic)
	if err != nil {
		return nil // cannot tell: keep retrying
	}
	d, ok := td[l.cfg.Topic]
	switch {
	case !ok || errors.Is(d.Err, kerr.UnknownTopicOrPartition):
		return fmt.Errorf("%w: %s was deleted; restore it, or raise ledger.generation to start a new one (records already relayed would be relayed again)", ErrLedgerLost, l.cfg.Topic)
	case d.Err != nil && kafkaerr.Classify(d.Err) == kafkaerr.Destination:
		return fmt.Errorf("%w: %s cannot be read: %w", ErrLedgerLost, l.cfg.Topic, d.Err)
	case d.Err == nil && l.topicID != ([16]byte{}) && d.ID != l.topicID:
		return fmt.Errorf("%w: %s was deleted and recreated; its claims are gone: restore it, or raise ledger.generation to start a new one", ErrLedgerLost, l.cfg.Topic)
	}
	return nil
}

// ErrNoLedger means a ReadOnly ledger's topic does not exist: nothing was
// ever claimed in it.
var ErrNoLedger = errors.New("eos: the claim ledger does not exist")

// ErrLedgerLost means the claim ledger can no longer be read: the
// exactly-once state is gone, and the relay must stop.
var ErrLedgerLost = errors.New("eos: the claim ledger is lost")

func (l *Ledger) fail(err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.failure == nil {
		l.failure = err
		l.log.Error("the claim ledger is lost; stopping", "err", err)
		close(l.failed)
	}
}

// Failed is closed when the ledger can no longer be read; Err says why.
func (l *Ledger) Failed() <-chan struct{} { return l.failed }

// Err returns why the ledger failed, or nil.
func (l *Ledger) Err() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.failure
}

// apply applies one ledger record to the index; l.mu is held.
func (l *Ledger) apply(r *kgo.Record) {
	pos := Pos{r.Partition, r.Offset}
	if r.Attrs.IsControl() {
		commit, ok := parseMarker(r.Key)
		if !ok {
			l.idx.Advance(pos.Partition, pos.Offset+1)
			return
		}
		l.idx.ApplyMarker(pos, r.ProducerID, r.ProducerEpoch, commit)
		return
	}
	if kind := headerValue(r, HeaderKind); kind == KindResolution {
		var res Resolution
		if err := json.Unmarshal(r.Value, &res); err != nil {
			l.log.Error("skipping an unreadable claim resolution", "partition", r.Partition, "offset", r.Offset, "err", err)
			l.idx.Advance(pos.Partition, pos.Offset+1)
			return
		}
		l.idx.ApplyResolution(pos, res.Claims, res.Commit)
		return
	} else if kind != "" {
		l.log.Error("skipping a ledger record of an unknown kind", "partition", r.Partition, "offset", r.Offset, "kind", kind)
		l.idx.Advance(pos.Partition, pos.Offset+1)
		return
	}
	var c Claim
	if err := json.Unmarshal(r.Value, &c); err != nil || r.ProducerID < 0 {
		l.log.Error("skipping a ledger record that is not a claim", "partition", r.Partition, "offset", r.Offset, "producer_id", r.ProducerID, "err", err)
		l.idx.Advance(pos.Partition, pos.Offset+1)
		return
	}
	// The batch's producer id and epoch are the ones its transaction's
	// markers refer to.
	c.ProducerID, c.Epoch = r.ProducerID, r.ProducerEpoch
	if c.At == 0 {
		c.At = r.Timestamp.UnixMilli()
	}
	l.idx.ApplyClaim(pos, &c)
}

func headerValue(r *kgo.Record, key string) string {
	for _, h := range r.Headers {
		if h.Key == key {
			return string(h.Value)
		}
	}
	return ""
}

// parseMarker decodes a control record key: version int16, type int16
// (0 abort, 1 commit).
func parseMarker(key []byte) (commit, ok bool) {
	if len(key) < 4 {
		return false, false
	}
	switch binary.BigEndian.Uint16(key[2:4]) {
	case 0:
		return false, true
	case 1:
		return true, true
	}
	return false, false
}

// waitApplied waits until the reader has applied the record at pos.
func (l *Ledger) waitApplied(ctx context.Context, pos Pos) error {
	for {
		l.mu.Lock()
		ok := l.idx.Applied(pos)
		ch := l.changed
		l.mu.Unlock()
		if ok {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-ch:
		}
	}
}

// LedgerReplication is how the relay replicates the ledger topics it
// creates on a cluster of brokers live brokers: the replication factor,
// and the topic configs that go with it. A claim lost after its
// transaction committed lets the record be written again, so the ledger
// is replicated like the outputs it guards should be: 3 replicas (every
// broker of a smaller cluster), min.insync.replicas 2 with 3, so that a
// claim acks=all accepted is on two brokers and survives the loss of
// either, and unclean leader election off, so that no replica that
// missed a claim can lead. With fewer than 3 replicas min.insync.replicas
// is left to the cluster's default: 2 of 2 would stop every claim while
// either broker is down, and 1 would override a cluster that asks for 2.
func LedgerReplication(brokers int) (replicationFactor int16, configs map[string]string) {
	rf := int16(max(1, min(3, brokers)))
	configs = map[string]string{UncleanLeaderElection: "false"}
	if rf >= 3 {
		configs[MinInsyncReplicas] = "2"
	}
	return rf, configs
}

// The topic configs LedgerReplication sets.
const (
	MinInsyncReplicas     = "min.insync.replicas"
	UncleanLeaderElection = "unclean.leader.election.enable"
)

func (l *Ledger) ensureTopics(ctx context.Context, adm *kadm.Client) error {
	brokers, err := adm.ListBrokers(ctx)
	if err != nil {
		return fmt.Errorf("eos: listing brokers: %w", err)
	}
	rf, replication := LedgerReplication(len(brokers))
	ret := strconv.FormatInt(l.cfg.Retention.Milliseconds(), 10)
	ledgerCfg := map[string]*string{
		"cleanup.policy": kadm.StringPtr("delete"),
		"retention.ms":   &ret,
	}
	snapCfg := map[string]*string{
		"cleanup.policy":    kadm.StringPtr("compact"),
		"max.message.bytes": kadm.StringPtr(strconv.Itoa(16 << 20)),
	}
	for k, v := range replication {
		ledgerCfg[k], snapCfg[k] = kadm.StringPtr(v), kadm.StringPtr(v)
	}
	for _, t := range []struct {
		name  string
		parts int32
		cfg   map[string]*string
	}{{l.cfg.Topic, l.cfg.Partitions, ledgerCfg}, {l.cfg.SnapshotTopic, 1, snapCfg}} {
		td, err := adm.ListTopics(ctx, t.name)
		if err != nil {
			return fmt.Errorf("eos: looking up %s: %w", t.name, err)
		}
		if d, ok := td[t.name]; l.cfg.ReadOnly && (!ok || d.Err != nil) {
			if t.name == l.cfg.Topic {
				return fmt.Errorf("%w: %s", ErrNoLedger, t.name)
			}
			l.noSnapshots = true
			continue
		}
		if d, ok := td[t.name]; ok && d.Err == nil {
			if t.name == l.cfg.Topic {
				l.topicID = d.ID
			}
			if t.name == l.cfg.Topic && int32(len(d.Partitions)) != t.parts {
				return fmt.Errorf("eos: ledger %s has %d partitions, the pipeline expects %d (never change a ledger's partition count)", t.name, len(d.Partitions), t.parts)
			}
			continue
		}
		resp, err := adm.CreateTopic(ctx, t.parts, rf, t.cfg, t.name)
		if err == nil {
			err = resp.Err
		}
		if err != nil && !errors.Is(err, kerr.TopicAlreadyExists) {
			return fmt.Errorf("eos: creating %s: %w", t.name, err)
		}
		if t.name == l.cfg.Topic && err == nil {
			l.topicID = resp.ID
		}
		l.log.Info("created topic", "topic", t.name, "partitions", t.parts, "replication_factor", rf, "configs", flatten(t.cfg))
	}
	return nil
}

func flatten(m map[string]*string) map[string]string {
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k] = *v
	}
	return out
}

// checkTransactionV2 refuses clusters without KIP-890 transaction version
// 2, without which a delayed claim write could be credited to the
// writer's next transaction (brokerfloor.ErrNoTransactionV2). The ledger
// needs no share group, so it takes only that part of the rule.
func checkTransactionV2(ctx context.Context, cl *kgo.Client, log *slog.Logger) error {
	req := kmsg.NewPtrApiVersionsRequest()
	req.ClientSoftwareName = "sharerelay"
	req.ClientSoftwareVersion = "0"
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return fmt.Errorf("eos: ApiVersions: %w", err)
	}
	v := brokerfloor.Judge(resp, true)
	log.Info("cluster transaction.version", "finalized", v.TransactionVersion)
	if v.NoTransactionV2 != nil {
		return fmt.Errorf("eos: %w", v.NoTransactionV2)
	}
	return nil
}

// Guard returns worker txnID's handle on the ledger.
func (l *Ledger) Guard(txnID string) Guard { return &ledgerGuard{l: l, txnID: txnID} }
