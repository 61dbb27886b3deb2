package dlq

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sharerelay/sharerelay/config"
	"github.com/sharerelay/sharerelay/eos"
	"github.com/sharerelay/sharerelay/format"
	"github.com/sharerelay/sharerelay/internal/failpoint"
	"github.com/sharerelay/sharerelay/internal/kafkaerr"
	"github.com/sharerelay/sharerelay/internal/wait"
	"github.com/sharerelay/sharerelay/lineage"
	"github.com/sharerelay/sharerelay/transform"
	"github.com/sharerelay/sharerelay/txn"
)

// ReplayOptions configure Replay.
type ReplayOptions struct {
	// Pipeline is the validated pipeline (config.Load) whose dead letters
	// are replayed, through its chain, with its claim ledger. Required.
	Pipeline *config.Pipeline
	// ClientOpts are the client options (kafkaopts) of the pipeline's
	// sink cluster, seed brokers included: the dead letters, the claim
	// ledger, the outputs and To are all there.
	ClientOpts []kgo.Opt
	// SourceClientOpts are those of its source cluster (source.cluster),
	// used only to explain a To that exists there and not on the sink
	// cluster. Nil, or a pipeline on one cluster: not asked.
	SourceClientOpts []kgo.Opt
	// Filter selects the dead letters.
	Filter Filter
	// To, when set, copies the selected dead letters unchanged (key,
	// value, and headers but the __connect.errors.* ones) to this topic
	// instead of running the chain. It must exist on the sink cluster
	// (a replay writes in one transaction with the claim ledger, so only
	// there), and be neither the dead-letter topic nor the ledger.
	To string
	// Chain, when set and To is not, replaces the chain built from
	// Pipeline.Transforms (as relay.Options.Chain does).
	Chain *transform.Chain
	// Job names the replay: its transactional id is
	// sharerelay-<pipeline>-dlq-replay-<job>, and it never selects the
	// dead letters it wrote itself. Required; [a-zA-Z0-9._-]+, at most 64
	// characters (JobID derives one from the selection).
	Job string
	// DryRun reads and decides, and writes nothing: the ledger is only
	// read, and the chain's results are counted, not produced.
	DryRun bool
	// ChunkSize is the most dead letters per transaction (default 100).
	ChunkSize int
	// Attempts is how many times a dead letter whose transform fails
	// with a retryable error is tried before it is dead-lettered again
	// (kind attempts-exhausted); each try sees the next delivery count.
	// Default: the pipeline's dead_letter.max_attempts, else 4.
	Attempts int32
	// Samples is how many dead letters the report shows (default 5;
	// negative: none).
	Samples int
	// LedgerMarkers is the cluster's marker convention (see
	// relay.Options.LedgerMarkers); kfake needs
	// eos.MarkersAtSameOrNextEpoch.
	LedgerMarkers eos.MarkerEpochs
	// WrapGuard, when set, wraps the ledger's Guard (as
	// relay.Options.WrapGuard does).
	WrapGuard func(eos.Guard) eos.Guard
	// Logger; nil means slog.Default().
	Logger *slog.Logger
}

// ReplayReport is what a replay did (or, for a dry run, would do).
type ReplayReport struct {
	Snapshot
	Job             string `json:"job"`
	TransactionalID string `json:"transactional_id"`
	// Mode is "chain" (through the pipeline's transforms) or "copy" (to
	// To, unchanged).
	Mode   string `json:"mode"`
	To     string `json:"to,omitempty"`
	Filter string `json:"filter,omitempty"`
	DryRun bool   `json:"dry_run"`
	// Read counts the dead letters read, Selected those the filter
	// selected.
	Read     int `json:"read"`
	Selected int `json:"selected"`
	// Skipped dead letters: OwnJob were written by this job (records that
	// failed again in an earlier run of it), CutDown had their value left
	// out by the relay (nothing to replay).
	OwnJob  int `json:"own_job"`
	CutDown int `json:"cut_down"`
	// AlreadyReplayed were committed by an earlier replay (found in the
	// ledger, or committed by an overlapping replay while this one ran).
	AlreadyReplayed int `json:"already_replayed"`
	// Replayed were replayed by this run (a dry run: would be), and
	// became Outputs records (per topic in ByTopic), nothing (Filtered),
	// or a dead letter again (DeadLettered).
	Replayed     int     `json:"replayed"`
	Outputs      int     `json:"outputs"`
	ByTopic      []Count `json:"by_topic"`
	Filtered     int     `json:"filtered"`
	DeadLettered int     `json:"dead_lettered"`
	// Transactions committed, and Conflicts (transactions aborted
	// because an overlapping replay committed some of their dead
	// letters first).
	Transactions int      `json:"transactions"`
	Conflicts    int      `json:"conflicts"`
	Samples      []Sample `json:"samples"`
	Elapsed      string   `json:"elapsed"`
}

var jobRE = regexp.MustCompile(`^[a-zA-Z0-9._-]{1,64}$`)

// JobID derives a replay job's name from what it replays: the pipeline,
// the dead-letter topic, the destination (to, or the chain when empty) and
// selection, the selection as the user wrote it. The same replay started
// again gets the same job, so its transactional id fences a killed
// predecessor's open transaction.
func JobID(pipeline, topic, to, selection string) string {
	if to == "" {
		to = "chain"
	}
	sum := sha256.Sum256([]byte("pipeline=" + pipeline + "\ndlq=" + topic + "\nto=" + to + "\nselection=" + selection))
	return hex.EncodeToString(sum[:6])
}

// TransactionalID is the transactional id of replay job job of pipeline.
func TransactionalID(pipeline, job string) string {
	return "sharerelay-" + pipeline + "-dlq-replay-" + job
}

// chunkBytes bounds the dead letters of one transaction, besides
// ChunkSize.
const chunkBytes = 4 << 20

// Replay sends the dead letters o.Filter selects back, exactly once (see
// the package documentation). It returns the report so far with any
// error; running the replay again after an error, or a kill, finishes it
// without writing anything twice.
func Replay(ctx context.Context, o ReplayOptions) (*ReplayReport, error) {
	start := time.Now()
	r, err := newReplayer(o)
	if err != nil {
		return nil, err
	}
	defer r.close()
	if err := r.open(ctx); err != nil {
		return r.rep, err
	}
	var (
		chunk []*item
		size  int
	)
	flush := func() error {
		err := r.process(ctx, chunk)
		chunk, size = chunk[:0], 0
		return err
	}
	snap, err := read(ctx, o.ClientOpts, r.p.DeadLetter.Topic, o.Filter.starts(), func(snap *Snapshot, recs []*kgo.Record) error {
		for _, rec := range recs {
			r.rep.Read++
			d := Parse(rec)
			switch {
			case !o.Filter.Match(d):
				continue
			case d.Job == r.o.Job:
				r.rep.OwnJob++
				continue
			}
			r.rep.Selected++
			if d.CutDown {
				r.rep.CutDown++
				r.sample(d, "skipped: cut down, no value to replay")
				continue
			}
			chunk = append(chunk, &item{d: d, src: eos.Source{
				Topic: rec.Topic, TopicID: snap.TopicID, Partition: rec.Partition, Offset: rec.Offset,
			}})
			size += len(rec.Key) + len(rec.Value)
			if len(chunk) >= r.o.ChunkSize || size >= chunkBytes {
				if err := flush(); err != nil {
					return err
				}
			}
		}
		return nil
	})
	r.rep.Snapshot = snap
	if err == nil && len(chunk) > 0 {
		err = flush()
	}
	r.rep.ByTopic = counts(r.byTopic)
	r.rep.Elapsed = time.Since(start).Round(time.Millisecond).String()
	return r.rep, err
}

// replayer is one run of Replay.
type replayer struct {
	o        ReplayOptions
	p        *config.Pipeline
	chain    *transform.Chain
	attempts int32
	txnID    string
	writes   []string // the topics the replay may write
	log      *slog.Logger

	ledger *eos.Ledger
	guard  eos.Guard // nil: a dry run on a pipeline without a ledger
	prod   *txn.Producer

	rep     *ReplayReport
	byTopic map[string]int
}

// item is one selected dead letter and what it became.
type item struct {
	d          DeadLetter
	src        eos.Source // the dead letter's coordinates: the replay's source record
	outs       []*kgo.Record
	deadLetter bool
}

func newReplayer(o ReplayOptions) (*replayer, error) {
	p := o.Pipeline
	switch {
	case p == nil:
		return nil, errors.New("dlq: ReplayOptions.Pipeline is required")
	case !jobRE.MatchString(o.Job):
		return nil, fmt.Errorf("dlq: job %q: want 1 to 64 letters, digits, '.', '_' or '-'", o.Job)
	case o.To == p.DeadLetter.Topic:
		return nil, fmt.Errorf("dlq: --to %s is the dead-letter topic itself", o.To)
	case o.To != "" && o.To == p.Ledger.Topic:
		return nil, fmt.Errorf("dlq: --to %s is the claim ledger", o.To)
	}
	if o.ChunkSize <= 0 {
		o.ChunkSize = 100
	}
	if o.Samples == 0 {
		o.Samples = 5
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	r := &replayer{o: o, p: p, txnID: TransactionalID(p.Name, o.Job), byTopic: map[string]int{},
		log: o.Logger.With("pipeline", p.Name, "job", o.Job)}
	r.rep = &ReplayReport{Snapshot: Snapshot{Topic: p.DeadLetter.Topic}, Job: o.Job, TransactionalID: r.txnID, Mode: "chain",
		To: o.To, Filter: o.Filter.String(), DryRun: o.DryRun, Samples: []Sample{}}
	if o.To != "" {
		r.rep.Mode, r.writes = "copy", []string{o.To}
		return r, nil
	}
	r.writes = p.OutputTopics() // the dead-letter topic included
	r.chain = o.Chain
	if r.chain == nil {
		// A dead letter keeps its source record's bytes: it is read in
		// the source's formats, as the relay reads it.
		formats, _, err := format.ForPipeline(p)
		if err != nil {
			return nil, fmt.Errorf("dlq: pipeline %s: %w", p.Name, err)
		}
		if r.chain, err = p.ChainWith(formats); err != nil {
			return nil, fmt.Errorf("dlq: pipeline %s: %w", p.Name, err)
		}
	}
	r.attempts = o.Attempts
	if r.attempts <= 0 {
		r.attempts = int32(p.DeadLetter.MaxAttempts)
	}
	if r.attempts <= 0 {
		r.attempts = 4 // tries within this run; a replay has no share deliveries to spare
	}
	return r, nil
}

// open checks the topics the replay writes, opens the pipeline's claim
// ledger and, unless this is a dry run, the job's transactional producer
// (which fences a killed run's producer and aborts what it left open).
func (r *replayer) open(ctx context.Context) error {
	cl, err := kgo.NewClient(r.o.ClientOpts...)
	if err != nil {
		return fmt.Errorf("dlq: %w", err)
	}
	td, err := kadm.NewClient(cl).ListTopics(ctx, r.writes...)
	cl.Close()
	if err != nil {
		return fmt.Errorf("dlq: looking up %v: %w", r.writes, err)
	}
	var missing []string
	for _, t := range r.writes {
		if d, ok := td[t]; !ok || d.Err != nil {
			missing = append(missing, t)
		}
	}
	if len(missing) > 0 {
		if err := r.toOnSourceOnly(ctx, missing); err != nil {
			return err
		}
		return fmt.Errorf("dlq: topics the replay writes do not exist (create them first): %v", missing)
	}

	timeout := r.p.Output.TransactionTimeout
	r.ledger, err = eos.OpenLedger(ctx, eos.LedgerConfig{
		ClientOpts:         r.o.ClientOpts,
		Topic:              r.p.Ledger.Topic,
		Gen:                int64(r.p.Ledger.Generation),
		ClaimWait:          timeout + 5*time.Second,
		TransactionTimeout: timeout,
		OutputTopics:       r.writes,
		SnapshotEvery:      -1, // the relays' snapshots cover these claims too
		Markers:            r.o.LedgerMarkers,
		Instance:           "dlq-replay-" + r.o.Job,
		Logger:             r.log,
		ReadOnly:           r.o.DryRun,
	})
	switch {
	case errors.Is(err, eos.ErrNoLedger):
		r.log.Info("the claim ledger does not exist yet: nothing was replayed before", "ledger", r.p.Ledger.Topic)
	case err != nil:
		return fmt.Errorf("dlq: opening the claim ledger: %w", err)
	default:
		r.guard = r.ledger.Guard(r.txnID)
		if r.o.WrapGuard != nil {
			r.guard = r.o.WrapGuard(r.guard)
		}
	}
	if r.o.DryRun {
		return nil
	}
	r.prod, err = txn.New(ctx, txn.Config{
		Seeds:              r.p.Brokers,
		TransactionalID:    r.txnID,
		TransactionTimeout: timeout,
		ClientID:           r.txnID,
		Extra:              r.o.ClientOpts,
	})
	if err != nil {
		return fmt.Errorf("dlq: %w", err)
	}
	r.log.Info("replaying dead letters", "transactional_id", r.txnID, "mode", r.rep.Mode, "to", r.o.To, "filter", r.rep.Filter)
	return nil
}

// toOnSourceOnly explains a To missing on the sink cluster (in missing)
// that exists on the pipeline's source cluster: the replay cannot write
// it, since its records commit in one transaction with the claim ledger,
// on the sink cluster. It returns nil when that is not the case, or the
// source cluster cannot tell, which leaves the plain "does not exist".
func (r *replayer) toOnSourceOnly(ctx context.Context, missing []string) error {
	if r.o.To == "" || !r.p.CrossCluster() || len(r.o.SourceClientOpts) == 0 || !slices.Contains(missing, r.o.To) {
		return nil
	}
	cl, err := kgo.NewClient(r.o.SourceClientOpts...)
	if err != nil {
		return nil
	}
	td, err := kadm.NewClient(cl).ListTopics(ctx, r.o.To)
	cl.Close()
	if d, ok := td[r.o.To]; err != nil || !ok || d.Err != nil {
		return nil
	}
	return fmt.Errorf("dlq: --to %s exists on the source cluster only: a replay writes only to the sink cluster (%s), inside the claim ledger's transaction; "+
		"create the topic there and copy it across (MirrorMaker, say), or let a pipeline read it from there",
		r.o.To, strings.Join(r.p.Brokers, ","))
}

func (r *replayer) close() {
	if r.guard != nil {
		r.guard.Close()
	}
	if r.prod != nil {
		r.prod.Close()
	}
	if r.ledger != nil {
		r.ledger.Close()
	}
}

// process replays one chunk: the dead letters the ledger shows committed
// are skipped, the rest planned and written in one transaction (a dry
// run only counts them).
func (r *replayer) process(ctx context.Context, chunk []*item) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	done := make([]bool, len(chunk))
	if r.guard != nil {
		srcs := make([]eos.Source, len(chunk))
		for i, it := range chunk {
			srcs[i] = it.src
		}
		done = r.guard.Committed(srcs)
	}
	var pending []*item
	for i, it := range chunk {
		if done[i] {
			r.rep.AlreadyReplayed++
			r.sample(it.d, "already replayed")
			continue
		}
		if err := r.plan(ctx, it); err != nil {
			return err
		}
		pending = append(pending, it)
	}
	if r.o.DryRun {
		r.count(pending)
		return nil
	}
	return r.write(ctx, pending)
}

// plan decides what it becomes: a copy to To, or the chain's outputs
// or a dead letter again.
func (r *replayer) plan(ctx context.Context, it *item) error {
	d := it.d
	at := lineage.Source{Topic: it.src.Topic, Partition: it.src.Partition, Offset: it.src.Offset}
	of := d.Source
	if !d.SourceOK {
		of = at // the oldest ancestor known
	}
	if r.o.To != "" {
		hs := lineage.SetReplay(lineage.SetSource(originalHeaders(d), at), of, r.o.Job)
		it.outs = []*kgo.Record{{Topic: r.o.To, Key: d.Record.Key, Value: d.Record.Value, Headers: hs}}
		return nil
	}
	held := 0
	for attempt := int32(1); ; attempt++ {
		in := &transform.Record{
			Topic: r.p.Output.Topic,
			Key:   d.Record.Key,
			Value: d.Record.Value,
			Source: transform.Source{Topic: of.Topic, Partition: of.Partition, Offset: of.Offset,
				DeliveryCount: attempt, Timestamp: d.Record.Timestamp},
		}
		for _, h := range originalHeaders(d) {
			in.Headers = append(in.Headers, transform.Header{Key: h.Key, Value: h.Value})
		}
		outs, err := r.chain.Apply(ctx, in)
		if err == nil {
			it.outs = make([]*kgo.Record, len(outs))
			for i, o := range outs {
				out := lineage.Output(o, r.p.Output.Topic, at, i, len(outs))
				out.Headers = lineage.SetReplay(out.Headers, of, r.o.Job)
				it.outs[i] = &out
			}
			return nil
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		dec := transform.Decide(err, attempt, r.attempts)
		if dec.Hold {
			// Not the record's fault (a schema registry that cannot
			// answer): wait for it, as the relay does, without counting
			// an attempt; never dead-letter the record for it.
			held++
			if held == 1 {
				r.log.Warn("holding a dead letter: its transform cannot run now; waiting", "reason", dec.Err.Reason, "err", dec.Err)
			}
			if !wait.Sleep(ctx, min(time.Duration(held)*500*time.Millisecond, 15*time.Second)) {
				return ctx.Err()
			}
			attempt--
			continue
		}
		if dec.Release {
			if !r.o.DryRun && !wait.Sleep(ctx, min(time.Duration(attempt)*100*time.Millisecond, time.Second)) {
				return ctx.Err()
			}
			continue
		}
		kind := lineage.DLQKindPermanent
		if dec.Exhausted {
			kind = lineage.DLQKindAttemptsExhausted
		}
		stage := lineage.DLQStageTransformation
		switch dec.Err.Converter {
		case "value":
			stage = lineage.DLQStageValueConverter
		case "key":
			stage = lineage.DLQStageKeyConverter
		}
		it.outs = []*kgo.Record{r.deadLetter(d, at, of, reason{
			stage: stage, step: dec.Err.Step, class: dec.Err.Class, kind: kind, msg: dec.Err.Error(),
		}, attempt)}
		it.deadLetter = true
		return nil
	}
}

// reason is why a replayed dead letter was dead-lettered again.
type reason struct{ stage, step, class, kind, msg string }

// maxErrorHeader bounds the error message copied into a dead letter, as
// the relay does.
const maxErrorHeader = 4096

// deadLetter is the dead letter of replaying d, which is at (the
// dead-letter topic's coordinates) and stands for of: the record d was
// made from, with the relay's __connect.errors.* headers describing the
// failure of the record replayed, d — its topic, partition and offset are
// at — and the replay headers.
func (r *replayer) deadLetter(d DeadLetter, at, of lineage.Source, why reason, attempts int32) *kgo.Record {
	msg := why.msg
	if len(msg) > maxErrorHeader {
		msg = msg[:maxErrorHeader]
	}
	hs := append(lineage.SetSource(originalHeaders(d), at),
		kgo.RecordHeader{Key: lineage.HeaderDLQTopic, Value: []byte(at.Topic)},
		kgo.RecordHeader{Key: lineage.HeaderDLQPartition, Value: strconv.AppendInt(nil, int64(at.Partition), 10)},
		kgo.RecordHeader{Key: lineage.HeaderDLQOffset, Value: strconv.AppendInt(nil, at.Offset, 10)},
		kgo.RecordHeader{Key: lineage.HeaderDLQPipeline, Value: []byte(r.p.Name)},
		kgo.RecordHeader{Key: lineage.HeaderDLQWorker, Value: []byte(r.txnID)},
		kgo.RecordHeader{Key: lineage.HeaderDLQStage, Value: []byte(why.stage)},
		kgo.RecordHeader{Key: lineage.HeaderDLQStep, Value: []byte(why.step)},
		kgo.RecordHeader{Key: lineage.HeaderDLQErrorClass, Value: []byte(why.class)},
		kgo.RecordHeader{Key: lineage.HeaderDLQErrorMessage, Value: []byte(msg)},
		kgo.RecordHeader{Key: lineage.HeaderDLQDeliveryCount, Value: strconv.AppendInt(nil, int64(attempts), 10)},
		kgo.RecordHeader{Key: lineage.HeaderDLQTime, Value: []byte(time.Now().UTC().Format(time.RFC3339Nano))},
		kgo.RecordHeader{Key: lineage.HeaderDLQKind, Value: []byte(why.kind)},
	)
	hs = lineage.SetReplay(hs, of, r.o.Job)
	return &kgo.Record{Topic: r.p.DeadLetter.Topic, Key: d.Record.Key, Value: d.Record.Value, Headers: hs}
}

// write writes the plans of pending in one transaction with their claims,
// as a relay worker writes a batch: claims and outputs in one produce,
// Check before the commit (a conflict drops the dead letters an
// overlapping replay committed and writes the rest again), Resolve when
// the commit's answer is lost. Any other failure ends the replay; the
// transaction is aborted (or left to the coordinator), so running it
// again is safe.
func (r *replayer) write(ctx context.Context, pending []*item) error {
	for len(pending) > 0 {
		var (
			recs   []*kgo.Record
			owner  []*item
			topics []string
		)
		srcs := make([]eos.Source, len(pending))
		for i, it := range pending {
			srcs[i] = it.src
			for _, rec := range it.outs {
				rec.Context = nil // a retry produces the record again
				recs = append(recs, rec)
				owner = append(owner, it)
				if !slices.Contains(topics, rec.Topic) {
					topics = append(topics, rec.Topic)
				}
			}
		}
		// Once begun, the transaction is finished even when ctx ends,
		// within the time the coordinator gives it anyway.
		tctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), r.p.Output.TransactionTimeout+5*time.Second)
		again, err := r.transact(tctx, pending, srcs, recs, owner, topics)
		cancel()
		if err != nil {
			return err
		}
		pending = again
	}
	return nil
}

// transact runs one transaction of write; it returns the items to write
// again (after a conflict or a record the cluster refused).
func (r *replayer) transact(ctx context.Context, pending []*item, srcs []eos.Source, recs []*kgo.Record, owner []*item, topics []string) ([]*item, error) {
	var claims []*kgo.Record
	if r.guard != nil {
		var err error
		if claims, err = r.guard.Claims(ctx, r.prod, srcs, topics, eos.Since(recs)); err != nil {
			return nil, fmt.Errorf("dlq: claiming: %w", err)
		}
	}
	if len(recs)+len(claims) == 0 {
		r.count(pending) // only filtered dead letters, and nothing to claim
		return nil, nil
	}
	if err := r.prod.Begin(); err != nil {
		return nil, fmt.Errorf("dlq: %w", err)
	}
	if err := r.prod.Produce(ctx, append(recs, claims...)...); err != nil {
		aerr := r.prod.Abort(ctx)
		if aerr == nil && r.refused(err, recs, owner) {
			return pending, nil
		}
		return nil, errors.Join(fmt.Errorf("dlq: producing %d records: %w", len(recs)+len(claims), err), aerr)
	}
	if len(claims) > 0 {
		conflicts, err := r.guard.Check(ctx)
		if err != nil {
			return nil, errors.Join(fmt.Errorf("dlq: checking the claims: %w", err), r.prod.Abort(ctx))
		}
		if slices.Contains(conflicts, true) {
			var rest []*item
			for i, it := range pending {
				if conflicts[i] {
					r.rep.AlreadyReplayed++
					r.sample(it.d, "already replayed (by an overlapping replay)")
				} else {
					rest = append(rest, it)
				}
			}
			r.rep.Conflicts++
			if err := r.prod.Abort(ctx); err != nil {
				return nil, fmt.Errorf("dlq: aborting after a claim conflict: %w", err)
			}
			return rest, nil
		}
	}
	if err := failpoint.Hit(failpoint.ReplayBeforeCommit); err != nil {
		return nil, errors.Join(err, r.prod.Abort(ctx))
	}
	outcome, err := r.prod.Commit(ctx)
	switch outcome {
	case txn.Committed:
	case txn.Unknown:
		// The EndTxn answer was lost: never guess, ask the ledger.
		ok := false
		var rerr error
		if r.guard != nil {
			ok, rerr = r.guard.Resolve(ctx)
		}
		if !ok {
			return nil, fmt.Errorf("dlq: commit outcome unknown (%w); not resolved (%v): run the replay again, it skips what committed", err, rerr)
		}
		r.log.Warn("commit outcome unknown; the ledger shows it committed", "err", err)
	default:
		return nil, fmt.Errorf("dlq: %w", err)
	}
	r.rep.Transactions++
	r.count(pending)
	if err := failpoint.Hit(failpoint.ReplayAfterCommit); err != nil {
		return nil, err
	}
	return nil, nil
}

// refused handles a produce that failed because the cluster refuses some
// records for good (too large for their topic, invalid): their dead
// letters are dead-lettered again, stage KAFKA_PRODUCE, and it reports
// true. A refused dead letter, or any other failure, reports false.
func (r *replayer) refused(err error, recs []*kgo.Record, owner []*item) bool {
	var we *txn.WriteError
	if !errors.As(err, &we) {
		return false
	}
	replaced := false
	for j, e := range we.Failed {
		if j >= len(recs) {
			continue // a claim
		}
		it := owner[j]
		if kafkaerr.Classify(e) != kafkaerr.Record || it.deadLetter {
			return false
		}
		at := lineage.Source{Topic: it.src.Topic, Partition: it.src.Partition, Offset: it.src.Offset}
		of := it.d.Source
		if !it.d.SourceOK {
			of = at
		}
		it.outs = []*kgo.Record{r.deadLetter(it.d, at, of, reason{
			stage: lineage.DLQStageProduce, class: errClass(e), kind: lineage.DLQKindWrite, msg: e.Error(),
		}, 1)}
		it.deadLetter = true
		replaced = true
		r.log.Warn("output refused by the cluster for good; dead-lettering the dead letter again",
			"partition", it.src.Partition, "offset", it.src.Offset, "err", e)
	}
	return replaced
}

// count adds the items of a committed (or, in a dry run, planned) chunk
// to the report.
func (r *replayer) count(items []*item) {
	for _, it := range items {
		r.rep.Replayed++
		var outcome string
		switch {
		case it.deadLetter:
			r.rep.DeadLettered++
			outcome = "dead-lettered again: " + dlClass(it.outs[0])
		case len(it.outs) == 0:
			r.rep.Filtered++
			outcome = "filtered"
		default:
			r.rep.Outputs += len(it.outs)
			per := map[string]int{}
			for _, o := range it.outs {
				r.byTopic[o.Topic]++
				per[o.Topic]++
			}
			for _, t := range slices.Sorted(maps.Keys(per)) {
				if outcome != "" {
					outcome += ", "
				}
				outcome += fmt.Sprintf("→ %s ×%d", t, per[t])
			}
		}
		r.sample(it.d, outcome)
	}
}

func (r *replayer) sample(d DeadLetter, outcome string) {
	if len(r.rep.Samples) < r.o.Samples {
		s := sampleOf(d)
		s.Outcome = outcome
		r.rep.Samples = append(r.rep.Samples, s)
	}
}

// dlClass is a dead letter's error class, for a sample.
func dlClass(rec *kgo.Record) string {
	for _, h := range rec.Headers {
		if h.Key == lineage.HeaderDLQErrorClass {
			return string(h.Value)
		}
	}
	return "?"
}

// errClass names a write error by its Kafka error code, e.g.
// MESSAGE_TOO_LARGE.
func errClass(err error) string {
	var ke *kerr.Error
	if errors.As(err, &ke) {
		return ke.Message
	}
	return "write"
}

// Print writes r for a person.
func (r *ReplayReport) Print(w io.Writer) {
	verb := "replayed"
	if r.DryRun {
		verb = "would replay"
		fmt.Fprintln(w, "DRY RUN: nothing written")
	}
	mode := "through the pipeline's transform chain"
	if r.Mode == "copy" {
		mode = "copied unchanged to " + r.To
	}
	fmt.Fprintf(w, "replay job %s (transactional id %s): dead letters of %s %s\n", r.Job, r.TransactionalID, r.Topic, mode)
	fmt.Fprintf(w, "read up to offsets %s", endsString(r.Ends))
	if r.Filter != "" {
		fmt.Fprintf(w, "; filter: %s", r.Filter)
	}
	fmt.Fprintln(w)
	fmt.Fprintf(w, "selected %d: %s %d, already replayed %d, cut down (skipped) %d; dead letters of this job's own earlier runs (not selected): %d\n",
		r.Selected, verb, r.Replayed, r.AlreadyReplayed, r.CutDown, r.OwnJob)
	fmt.Fprintf(w, "%s %d: %d outputs", verb, r.Replayed, r.Outputs)
	for _, c := range r.ByTopic {
		fmt.Fprintf(w, " (%s %d)", c.Name, c.Count)
	}
	fmt.Fprintf(w, ", %d filtered, %d dead-lettered again\n", r.Filtered, r.DeadLettered)
	if !r.DryRun {
		fmt.Fprintf(w, "transactions %d, claim conflicts %d, elapsed %s\n", r.Transactions, r.Conflicts, r.Elapsed)
	}
	printSamples(w, "samples", r.Samples)
}
