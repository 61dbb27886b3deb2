package txn

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sharerelay/sharerelay/internal/failpoint"
	"github.com/sharerelay/sharerelay/internal/kafkaerr"
)

// Outcome is what is known about a transaction after EndTxn.
type Outcome int

const (
	// Committed: the coordinator confirmed the commit.
	Committed Outcome = iota
	// NotCommitted: the transaction is certainly not committed (it was
	// aborted, or the commit was never attempted).
	NotCommitted
	// Unknown: the commit request was sent but its answer was lost; the
	// transaction may or may not have committed. The producer has been
	// healed (its epoch bumped, which aborts the transaction if it was
	// still open), so it is safe to begin a new one.
	Unknown
)

// String returns the outcome as logs show it: committed, not-committed
// or unknown.
func (o Outcome) String() string {
	switch o {
	case Committed:
		return "committed"
	case NotCommitted:
		return "not-committed"
	default:
		return "unknown"
	}
}

// ErrExtraRecords means the brokers acknowledged more records written in
// the open transaction than Produce was given: the client sent some twice
// (a broker crash can leave one record batch holding a transaction's
// outputs twice). Commit aborts such a transaction instead of committing
// the duplicates.
var ErrExtraRecords = errors.New("the transaction holds more records than were produced in it")

// ErrFenced means a newer producer with the same transactional id exists:
// this worker is a zombie and must stop.
var ErrFenced = errors.New("producer fenced by a newer instance with the same transactional id")

// Config configures a Producer.
type Config struct {
	// Seeds are the seed brokers.
	Seeds []string
	// TransactionalID must be stable per pipeline, instance and worker,
	// so a restarted instance fences its predecessor.
	TransactionalID string
	// TransactionTimeout is the coordinator's timeout for an open
	// transaction; after it the coordinator aborts it.
	TransactionTimeout time.Duration
	// ClientID is reported to brokers, unless Extra sets one.
	ClientID string
	// MaxBatchBytes caps a record batch before compression (default
	// franz-go's 1,000,012). Set it to the smallest max.message.bytes of
	// the topics written, so a record too large for a topic is refused by
	// the client, alone, instead of failing a whole batch at the broker.
	MaxBatchBytes int32
	// Idempotent makes a producer without transactions, for at-least-once
	// delivery: still idempotent and acks=all, but Begin does nothing,
	// Commit waits for every record produced, and Abort can only drop
	// records not sent yet — what was written stays written. It saves the
	// transaction's round trips and markers.
	Idempotent bool
	// Extra options, e.g. TLS and SASL, tuning (compression, linger), a
	// dialer for fault injection or a logger. They override ClientID and
	// the default linger of 0, and are applied before the options this
	// package enforces, so they cannot weaken acks or idempotence.
	Extra []kgo.Opt
}

// Producer is a transactional producer (or, with Config.Idempotent, an
// idempotent one that writes without transactions). Begin, Produce and End
// must be called from one goroutine.
type Producer struct {
	cl     *kgo.Client
	txnID  string
	txn    bool
	closer sync.Once
	// maxBatch is Config.MaxBatchBytes (0: franz-go's default).
	maxBatch int32
	// unchecked is set while a transaction of this producer id may have
	// ended without its marker in every partition it wrote (see
	// Unchecked); checked is when MarkChecked last cleared it.
	unchecked bool
	checked   time.Time
	// written counts the records the brokers acknowledged since Begin
	// (a kgo hook), produced the records Produce was given since Begin.
	written  *writtenCounter
	produced int64
	// sent are the records given to Produce since Begin; unsent are
	// those among them the brokers did not acknowledge (nil when none
	// failed). wrote is, per partition, what the last transaction to end
	// there wrote (see Last).
	sent   []*kgo.Record
	unsent map[*kgo.Record]bool
	wrote  map[Partition]Span
	// lastEnded are the partitions the last transaction to end wrote.
	lastEnded []Partition
}

// Partition names one partition of a topic.
type Partition struct {
	Topic     string
	Partition int32
}

// Span is what one transaction of the producer wrote to one partition:
// the offset of its first record there, and how it ended. The records
// themselves are not kept (they would hold their fetch buffers): they are
// in the partition, for whoever must write them again (see Last).
type Span struct {
	First   int64
	Outcome Outcome
}

// writtenCounter counts the records the client finished as written. kgo
// calls it synchronously for every record, just before the record's
// promise, so once Flush returns the count holds every record of the
// transaction, whoever produced it.
type writtenCounter struct{ n atomic.Int64 }

// OnProduceRecordUnbuffered implements kgo.HookProduceRecordUnbuffered.
func (c *writtenCounter) OnProduceRecordUnbuffered(_ *kgo.Record, err error) {
	if err == nil {
		c.n.Add(1)
	}
}

// Unchecked reports whether the partitions this producer writes must be
// checked for a transaction of its producer id left open before the next
// transaction begins: a single-node broker killed while it writes
// transaction markers can lose one partition's marker, and the producer
// id's next transaction in that partition would then end the old records
// with its own marker (Kafka keeps them in the producer's open span), so
// records of an aborted transaction could become visible, or those of a
// committed one be aborted. It is true for a new producer, after a
// transaction that did not end committed or an abort that failed, after
// MarkUnchecked, and when the worker's clients met a broker failure or
// opened a connection (disruptedAt) since the last check. Always false
// without transactions.
func (p *Producer) Unchecked(disruptedAt time.Time) bool {
	return p.txn && (p.unchecked || p.checked.Before(disruptedAt))
}

// MarkUnchecked makes Unchecked true until the next MarkChecked: a
// transaction of this producer id may be open in a partition it writes.
func (p *Producer) MarkUnchecked() { p.unchecked = true }

// Drop fails the records of the open transaction not written yet and waits
// until none is in flight, so that the offsets of those written are final
// (OpenFirsts) before an abort.
func (p *Producer) Drop(ctx context.Context) error {
	if err := p.cl.AbortBufferedRecords(ctx); err != nil {
		return fmt.Errorf("txn: dropping buffered records: %w", err)
	}
	return nil
}

// MarkChecked records that no transaction of the producer id is open in
// the partitions it writes.
func (p *Producer) MarkChecked() { p.unchecked, p.checked = false, time.Now() }

// MaxBatchBytes is the largest record batch the client builds
// (Config.MaxBatchBytes; 0 when franz-go's default applies): it splits a
// partition's records into batches no larger.
func (p *Producer) MaxBatchBytes() int32 { return p.maxBatch }

// New creates a Producer and initialises its producer id, which fences any
// older producer with the same transactional id.
func New(ctx context.Context, cfg Config) (*Producer, error) {
	if cfg.TransactionalID == "" {
		return nil, errors.New("txn: transactional id is required")
	}
	// Defaults Extra may override: neither touches what a transaction
	// guarantees.
	opts := []kgo.Opt{kgo.ProducerLinger(0)}
	if cfg.ClientID != "" {
		opts = append(opts, kgo.ClientID(cfg.ClientID))
	}
	opts = append(opts, cfg.Extra...)
	written := &writtenCounter{}
	// Enforced.
	opts = append(opts,
		kgo.SeedBrokers(cfg.Seeds...),
		kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.RecordRetries(10), // bounded: a stuck produce must fail the txn, not hang it
		kgo.WithHooks(written),
	)
	if !cfg.Idempotent {
		opts = append(opts, kgo.TransactionalID(cfg.TransactionalID), kgo.TransactionTimeout(cfg.TransactionTimeout))
	}
	if cfg.MaxBatchBytes > 0 {
		opts = append(opts, kgo.ProducerBatchMaxBytes(cfg.MaxBatchBytes))
	}
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return nil, fmt.Errorf("txn: creating producer %s: %w", cfg.TransactionalID, err)
	}
	p := &Producer{cl: cl, txnID: cfg.TransactionalID, txn: !cfg.Idempotent, maxBatch: cfg.MaxBatchBytes, unchecked: true, written: written}
	if _, _, err := p.ProducerID(ctx); err != nil {
		cl.Close()
		return nil, err
	}
	return p, nil
}

// Client returns the underlying client, for metadata and admin requests
// made on the producer's connections.
func (p *Producer) Client() *kgo.Client { return p.cl }

// TransactionalID returns the producer's transactional id.
func (p *Producer) TransactionalID() string { return p.txnID }

// ProducerID returns the current producer id and epoch, initialising them
// if needed.
func (p *Producer) ProducerID(ctx context.Context) (int64, int16, error) {
	id, epoch, err := p.cl.ProducerID(ctx)
	if err != nil {
		if isFenced(err) {
			return 0, 0, fmt.Errorf("txn: %s: %w: %w", p.txnID, ErrFenced, err)
		}
		return 0, 0, fmt.Errorf("txn: initialising producer id for %s: %w", p.txnID, err)
	}
	return id, epoch, nil
}

// Begin starts a transaction.
func (p *Producer) Begin() error {
	if !p.txn {
		return nil
	}
	p.written.n.Store(0)
	p.produced = 0
	p.sent, p.unsent = nil, nil
	if err := p.cl.BeginTransaction(); err != nil {
		if isFenced(err) {
			return fmt.Errorf("txn: begin: %w: %w", ErrFenced, err)
		}
		return fmt.Errorf("txn: begin: %w", err)
	}
	return nil
}

// WriteError lists the records of one Produce call that were not written,
// by their index among the records passed to Produce.
type WriteError struct {
	Failed map[int]error
	Total  int
}

// Error counts the records not written and quotes up to three distinct
// causes, so one bad batch does not flood a log line.
func (e *WriteError) Error() string {
	idx := slices.Sorted(maps.Keys(e.Failed))
	var b strings.Builder
	fmt.Fprintf(&b, "%d of %d records not written", len(idx), e.Total)
	seen := map[string]bool{}
	for _, i := range idx {
		if m := e.Failed[i].Error(); !seen[m] && len(seen) < 3 {
			seen[m] = true
			b.WriteString("; ")
			b.WriteString(m)
		}
	}
	return b.String()
}

// Unwrap returns the records' errors, so errors.Is finds any of them.
func (e *WriteError) Unwrap() []error {
	out := make([]error, 0, len(e.Failed))
	for _, i := range slices.Sorted(maps.Keys(e.Failed)) {
		out = append(out, e.Failed[i])
	}
	return out
}

// Produce writes recs in the open transaction and waits until the broker
// acknowledged every one (acks=all), or ctx ends. When records fail it
// returns a *WriteError saying which (wrapping ErrFenced when the producer
// was fenced); the transaction must then be aborted. When ctx ends first
// it returns ctx's error: the records still in flight are the abort's (or
// Close's) to drop.
func (p *Producer) Produce(ctx context.Context, recs ...*kgo.Record) error {
	if len(recs) == 0 {
		return nil
	}
	p.produced += int64(len(recs))
	if p.txn {
		p.sent = append(p.sent, recs...)
	}
	var (
		mu     sync.Mutex // guards failed and at
		failed map[int]error
		at     map[*kgo.Record]int // a record's index, built at the first failure
		left   atomic.Int64
		done   = make(chan struct{})
	)
	left.Store(int64(len(recs)))
	// One promise for every record (a closure per record would be an
	// allocation per record on the hot path).
	promise := func(r *kgo.Record, err error) {
		if err != nil {
			mu.Lock()
			if at == nil {
				failed, at = make(map[int]error), make(map[*kgo.Record]int, len(recs))
				for i, r := range recs {
					at[r] = i
				}
			}
			failed[at[r]] = fmt.Errorf("producing to %s: %w", r.Topic, kafkaerr.Denied(err, "WRITE", r.Topic, ""))
			mu.Unlock()
		}
		if left.Add(-1) == 0 {
			close(done)
		}
	}
	// The records of one call are stamped with one time, not one each:
	// franz-go would read the clock for every record without a timestamp.
	now := time.Now()
	for _, r := range recs {
		if r.Timestamp.IsZero() {
			r.Timestamp = now
		}
		p.cl.Produce(ctx, r, promise)
	}
	select {
	case <-done:
	case <-ctx.Done():
		return fmt.Errorf("txn: producing %d records: %w", len(recs), ctx.Err())
	}
	if len(failed) == 0 {
		return nil
	}
	if p.txn && p.unsent == nil {
		p.unsent = make(map[*kgo.Record]bool, len(failed))
	}
	for i := range failed {
		if p.txn {
			p.unsent[recs[i]] = true
		}
	}
	we := &WriteError{Failed: failed, Total: len(recs)}
	if isFenced(we) {
		return fmt.Errorf("txn: %w: %w", ErrFenced, we)
	}
	return we
}

// Commit flushes and commits the open transaction and reports what is known
// of its outcome. Whenever the outcome is not Committed the producer is left
// ready for a new transaction (aborted or healed), unless the error wraps
// ErrFenced.
func (p *Producer) Commit(ctx context.Context) (o Outcome, err error) {
	defer func() {
		if o != Committed {
			p.unchecked = true
		}
		if p.txn {
			p.ended(o)
		}
	}()
	if !p.txn {
		// Every record was acknowledged by Produce already.
		if err := p.cl.Flush(ctx); err != nil {
			return NotCommitted, fmt.Errorf("txn: flush: %w", err)
		}
		// Tests lose the answer of the last write here: without a
		// transaction, the equivalent of a lost EndTxn answer is a
		// write the broker appended whose acknowledgement never came
		// back (the client gave up), which at-least-once redoes.
		if ferr := failpoint.Hit(failpoint.EndTxnResponseLost); ferr != nil {
			return Unknown, fmt.Errorf("txn: write outcome unknown: %w", ferr)
		}
		return Committed, nil
	}
	if err := p.cl.Flush(ctx); err != nil {
		return NotCommitted, errors.Join(fmt.Errorf("txn: flush before commit: %w", err), p.Abort(ctx))
	}
	if err := p.checkWritten(); err != nil {
		return NotCommitted, errors.Join(err, p.Abort(ctx))
	}
	err = p.cl.EndTransaction(ctx, kgo.TryCommit)
	if err == nil {
		// Tests lose the answer of a commit that succeeded here, the
		// way a dropped EndTxn response does.
		if ferr := failpoint.Hit(failpoint.EndTxnResponseLost); ferr != nil {
			return Unknown, fmt.Errorf("txn: commit outcome unknown: %w", ferr)
		}
		return Committed, nil
	}
	switch {
	case isFenced(err):
		return NotCommitted, fmt.Errorf("txn: commit: %w: %w", ErrFenced, err)
	case errors.Is(err, kerr.OperationNotAttempted), errors.Is(err, kerr.TransactionAbortable):
		return NotCommitted, errors.Join(fmt.Errorf("txn: commit not attempted: %w", err), p.Abort(ctx))
	}
	var ke *kerr.Error
	if errors.As(err, &ke) && !ke.Retriable && ke.Code != kerr.UnknownServerError.Code {
		// A definitive answer from the coordinator that is not a
		// commit: the transaction did not commit.
		return NotCommitted, errors.Join(fmt.Errorf("txn: commit refused: %w", err), p.Abort(ctx))
	}
	// The answer was lost (transport error, timeout, UNKNOWN_SERVER_ERROR).
	// franz-go's documented recovery is TryAbort, which re-initialises the
	// producer id: the epoch bump aborts the transaction if it is still
	// open, and is harmless if it committed.
	if aerr := p.cl.EndTransaction(ctx, kgo.TryAbort); aerr != nil && isFenced(aerr) {
		return Unknown, fmt.Errorf("txn: commit outcome unknown: %w; %w: %w", err, ErrFenced, aerr)
	}
	return Unknown, fmt.Errorf("txn: commit outcome unknown: %w", err)
}

// checkWritten compares the records the brokers acknowledged in the open
// transaction with those Produce was given; it runs after Flush, when the
// count is complete. A count above is ErrExtraRecords.
func (p *Producer) checkWritten() error {
	if n := p.written.n.Load(); n > p.produced {
		return fmt.Errorf("txn: %w: the brokers acknowledged %d records, %d were produced", ErrExtraRecords, n, p.produced)
	}
	return nil
}

// Abort aborts the open transaction, dropping records not yet sent.
func (p *Producer) Abort(ctx context.Context) error {
	if err := p.Drop(ctx); err != nil {
		return err
	}
	if !p.txn {
		return nil
	}
	err := p.cl.EndTransaction(ctx, kgo.TryAbort)
	p.ended(NotCommitted)
	if err != nil {
		p.unchecked = true
		if isFenced(err) {
			return fmt.Errorf("txn: abort: %w: %w", ErrFenced, err)
		}
		return fmt.Errorf("txn: abort: %w", err)
	}
	return nil
}

// Close closes the client. An open transaction is left to the coordinator's
// timeout (or to the next producer with the same id, which aborts it).
// It may be called more than once.
func (p *Producer) Close() { p.closer.Do(p.cl.Close) }

// isFenced reports a newer producer with the same transactional id. Only
// PRODUCER_FENCED says so: INVALID_PRODUCER_EPOCH also follows a
// transaction the coordinator aborted on timeout (KIP-588), which the
// producer recovers from by bumping its own epoch (KIP-360) when it aborts;
// a real newer instance then answers PRODUCER_FENCED.
func isFenced(err error) bool { return kafkaerr.Classify(err) == kafkaerr.Fenced }

// ended notes, per partition, where the transaction that just ended began
// writing there and how it ended (Last), and forgets its records. The
// records' partitions and offsets are final: every record was flushed or
// aborted.
func (p *Producer) ended(o Outcome) {
	if len(p.sent) == 0 {
		return
	}
	if p.wrote == nil {
		p.wrote = map[Partition]Span{}
	}
	// A transaction writes few partitions: a slice searched in turn
	// costs less per record than a map lookup.
	var firsts []Span
	var keys []Partition
	for _, r := range p.sent {
		if p.unsent[r] {
			continue
		}
		k := Partition{r.Topic, r.Partition}
		i := slices.Index(keys, k)
		if i < 0 {
			keys = append(keys, k)
			firsts = append(firsts, Span{First: r.Offset, Outcome: o})
			continue
		}
		firsts[i].First = min(firsts[i].First, r.Offset)
	}
	p.lastEnded = keys
	for i, k := range keys {
		p.wrote[k] = firsts[i]
	}
	p.sent, p.unsent = nil, nil
}

// Last returns what the last transaction of this producer's transactional
// id to end in partition tp wrote there, as far as this process knows:
// where its records begin, and how it ended. A broker that loses a marker
// leaves these records in the producer id's open span, which the id's
// next transaction in that partition continues (see OpenFirsts).
func (p *Producer) Last(tp Partition) (Span, bool) {
	s, ok := p.wrote[tp]
	return s, ok
}

// Settle records the outcome of the last transaction, learnt after its
// commit ended Unknown (from the claim ledger).
func (p *Producer) Settle(committed bool) {
	o := NotCommitted
	if committed {
		o = Committed
	}
	for _, k := range p.lastEnded {
		if s, ok := p.wrote[k]; ok && s.Outcome == Unknown {
			s.Outcome = o
			p.wrote[k] = s
		}
	}
}

// Inherit gives p, which replaces old under the same transactional id (the
// same producer id, at a new epoch), what old knew of the spans its
// transactions wrote (Last).
func (p *Producer) Inherit(old *Producer) {
	if old != nil && p.txnID == old.txnID && p.wrote == nil {
		p.wrote = old.wrote
	}
}

// OpenFirsts returns, per partition, the offset of the first record the
// open transaction wrote there. Call it only once Produce returned
// without error: the offsets of records still in flight are not final.
func (p *Producer) OpenFirsts() map[Partition]int64 {
	firsts := map[Partition]int64{}
	for _, r := range p.sent {
		if p.unsent[r] {
			continue
		}
		k := Partition{r.Topic, r.Partition}
		if f, ok := firsts[k]; !ok || r.Offset < f {
			firsts[k] = r.Offset
		}
	}
	return firsts
}
