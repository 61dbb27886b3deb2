package eos

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// Resolution is a ledger record that settles claims the ledger cannot
// resolve by itself: claims whose marker the broker lost (orphans), or
// claims pending far longer than any transaction can stay open. A resolver
// writes it once it has established the outcome of the claims' transaction
// from the transaction's outputs; every reader applies it in ledger order,
// so every instance, snapshot and restart agrees on it.
type Resolution struct {
	// Claims are the ledger positions of the claims settled (all in the
	// ledger partition the resolution is written to).
	Claims     []Pos `json:"claims"`
	ProducerID int64 `json:"producer_id"`
	Epoch      int16 `json:"epoch"`
	Commit     bool  `json:"commit"`
	// Evidence says where the outcome was read, for people.
	Evidence string `json:"evidence"`
	// By names the writer (an instance, or "operator").
	By string `json:"by"`
}

// Ledger record kinds, in the HeaderKind header. A record without it is a
// claim.
const (
	HeaderKind     = "sharerelay.ledger.kind"
	KindResolution = "resolution"
)

// errUndecided wraps the reason the resolver could not settle a claim yet.
var errUndecided = errors.New("outcome not established")

// ResolverStats counts what the resolver did since the ledger opened.
type ResolverStats struct {
	// Orphaned counts claims this instance saw orphaned: their producer
	// moved to a later epoch in the ledger before their marker appeared.
	Orphaned int64
	// Committed and Aborted count claims settled by a resolution record
	// (whoever wrote it).
	Committed, Aborted int64
	// Unsettled is the number of claims the resolver is working on and
	// could not settle yet (orphans, and claims pending too long).
	Unsettled int
}

// partVerdict is what one output partition shows of a transaction.
type partVerdict struct {
	topic     string
	partition int32
	dataAt    int64 // first offset of the transaction's records here; -1: none seen
	marker    int8  // -1: no marker after the data; 0 abort; 1 commit
	markerAt  int64
	epoch     int16 // the marker's epoch
	continued bool  // the producer wrote a later epoch here before the marker
	done      bool
}

func (v *partVerdict) String() string {
	m := map[int8]string{0: "ABORT", 1: "COMMIT"}[v.marker]
	s := fmt.Sprintf("%s[%d]: records from offset %d, %s marker at %d (epoch %d)", v.topic, v.partition, v.dataAt, m, v.markerAt, v.epoch)
	if v.continued {
		s += ", after records of a later epoch (the broker lost this transaction's marker here too)"
	}
	return s
}

// judge establishes the outcome of the transaction of claim c from its
// outputs: whether its records are visible to read_committed readers, the
// definition of "committed" the relay guarantees. In each output partition
// the broker closes a producer's open transaction at that producer's next
// control record (ProducerAppendInfo.appendEndTxnMarker), so the records of
// producer P at epoch E are visible iff the first control record of P after
// them is a COMMIT — whichever epoch it carries. That is asked of every
// partition of the claim's output topics around the claim's time; the
// outcome is established only when at least one partition holds the
// transaction's records, every such partition has closed it, and all
// agree. A broker that breaks atomicity (committed in one partition,
// aborted in another) is reported and left unsettled: no outcome makes
// the record exactly-once then.
func (l *Ledger) judge(ctx context.Context, c ClaimInfo) (commit bool, evidence string, err error) {
	if c.Epoch == EpochUnknown || c.At == 0 {
		if c, err = l.reread(ctx, c); err != nil {
			return false, "", err
		}
	}
	topics := c.Outputs
	if len(topics) == 0 {
		topics = l.cfg.OutputTopics
	}
	if len(topics) == 0 {
		return false, "", fmt.Errorf("%w: the claim names no output topics and none are configured", errUndecided)
	}
	from := c.At - l.cfg.ResolveSlack.Milliseconds()
	if c.Since != 0 && c.Since < c.At {
		// Records stamped with earlier times than the writer's clock
		// (their sources'): offsets are found by those times.
		from = c.Since - l.cfg.ResolveSlack.Milliseconds()
	}
	with, err := l.outputVerdicts(ctx, c, topics, from)
	if err != nil {
		return false, "", err
	}
	who := fmt.Sprintf("producer %d epoch %d (%s)", c.ProducerID, c.Epoch, c.TxnID)
	if len(with) == 0 {
		return false, "", fmt.Errorf("%w: no record of %s in %v since %s", errUndecided, who, topics, time.UnixMilli(from).UTC().Format(time.RFC3339))
	}
	return agreedOutcome(who, with)
}

// outputVerdicts reads every partition of topics from the first offset at
// or after time from (milliseconds) and returns the verdicts of those that
// hold records of c's transaction, sorted by topic and partition.
func (l *Ledger) outputVerdicts(ctx context.Context, c ClaimInfo, topics []string, from int64) ([]*partVerdict, error) {
	cl, err := kgo.NewClient(l.cfg.ClientOpts...)
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	starts, err := adm.ListOffsetsAfterMilli(ctx, from, topics...)
	if err != nil {
		return nil, fmt.Errorf("listing offsets of %v at %s: %w", topics, time.UnixMilli(from).UTC().Format(time.RFC3339), err)
	}
	ends, err := adm.ListEndOffsets(ctx, topics...)
	if err != nil {
		return nil, fmt.Errorf("listing end offsets of %v: %w", topics, err)
	}
	assign := map[string]map[int32]kgo.Offset{}
	states := map[string]map[int32]*partVerdict{}
	remaining := 0
	starts.Each(func(s kadm.ListedOffset) {
		end, ok := ends.Lookup(s.Topic, s.Partition)
		if s.Err != nil || !ok || end.Err != nil || s.Partition < 0 || s.Offset < 0 || s.Offset >= end.Offset {
			return
		}
		if assign[s.Topic] == nil {
			assign[s.Topic], states[s.Topic] = map[int32]kgo.Offset{}, map[int32]*partVerdict{}
		}
		assign[s.Topic][s.Partition] = kgo.NewOffset().At(s.Offset)
		states[s.Topic][s.Partition] = &partVerdict{topic: s.Topic, partition: s.Partition, dataAt: -1, marker: -1}
		remaining++
	})
	if remaining > 0 {
		if err := l.scanOutputs(ctx, c, assign, states, ends, &remaining); err != nil {
			return nil, err
		}
	}
	var with []*partVerdict
	for _, ps := range states {
		for _, v := range ps {
			if v.dataAt >= 0 {
				with = append(with, v)
			}
		}
	}
	sort.Slice(with, func(i, j int) bool {
		return with[i].topic < with[j].topic || with[i].topic == with[j].topic && with[i].partition < with[j].partition
	})
	return with, nil
}

// agreedOutcome is the outcome of the transaction of who (judge's rule)
// from the verdicts of the partitions holding its records: established
// only when every one has closed it and all agree.
func agreedOutcome(who string, with []*partVerdict) (commit bool, evidence string, err error) {
	var open, commits, aborts []string
	for _, v := range with {
		switch v.marker {
		case -1:
			open = append(open, fmt.Sprintf("%s[%d]@%d", v.topic, v.partition, v.dataAt))
		case 1:
			commits = append(commits, v.String())
		default:
			aborts = append(aborts, v.String())
		}
	}
	switch {
	case len(open) > 0:
		return false, "", fmt.Errorf("%w: the transaction of %s is still open in %s", errUndecided, who, strings.Join(open, ", "))
	case len(commits) > 0 && len(aborts) > 0:
		return false, "", fmt.Errorf("%w: the broker broke the atomicity of the transaction of %s: committed in %s; aborted in %s",
			errUndecided, who, strings.Join(commits, "; "), strings.Join(aborts, "; "))
	case len(commits) > 0:
		return true, who + ": " + strings.Join(commits, "; "), nil
	default:
		return false, who + ": " + strings.Join(aborts, "; "), nil
	}
}

// scanOutputs reads the assigned partitions read_uncommitted with control
// records until each shows the transaction's verdict, ends, or passes the
// time after which the transaction can have written nothing.
func (l *Ledger) scanOutputs(ctx context.Context, c ClaimInfo, assign map[string]map[int32]kgo.Offset,
	states map[string]map[int32]*partVerdict, ends kadm.ListedOffsets, remaining *int) error {
	rd, err := kgo.NewClient(append(append([]kgo.Opt{}, l.cfg.ClientOpts...),
		kgo.ConsumePartitions(assign),
		kgo.FetchIsolationLevel(kgo.ReadUncommitted()),
		kgo.KeepControlRecords(),
		kgo.FetchMaxWait(200*time.Millisecond),
	)...)
	if err != nil {
		return err
	}
	defer rd.Close()
	// After this the transaction wrote nothing more: it was over within
	// its timeout (the coordinator aborts it then).
	last := c.At + (l.cfg.TransactionTimeout + l.cfg.ResolveSlack).Milliseconds()
	// A record's time tells where the window ends only when the records
	// carry the writer's clock; stamped by the pipeline (Since), a later
	// record may carry any time, and the scan goes on to the end.
	byClock := c.Since == 0
	finish := func(v *partVerdict) {
		if !v.done {
			v.done = true
			*remaining--
		}
	}
	for *remaining > 0 {
		fs := rd.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("%w: reading the outputs: %w", errUndecided, err)
		}
		var ferr error
		fs.EachError(func(t string, p int32, err error) {
			ferr = fmt.Errorf("reading %s[%d]: %w", t, p, err)
		})
		if ferr != nil {
			return ferr
		}
		fs.EachRecord(func(r *kgo.Record) {
			v := states[r.Topic][r.Partition]
			if v == nil || v.done {
				return
			}
			if end, _ := ends.Lookup(r.Topic, r.Partition); r.Offset >= end.Offset-1 {
				defer finish(v)
			}
			switch {
			case r.ProducerID != c.ProducerID:
				if byClock && v.dataAt < 0 && r.Timestamp.UnixMilli() > last {
					finish(v) // nothing of the transaction here
				}
			case v.dataAt < 0 && !r.Attrs.IsControl() && r.ProducerEpoch == c.Epoch:
				v.dataAt = r.Offset
			case v.dataAt < 0 && r.ProducerEpoch > c.Epoch:
				// The producer moved on here without writing at
				// c.Epoch first; it cannot write a lower epoch later.
				finish(v)
			case v.dataAt >= 0 && r.Attrs.IsControl():
				if commit, ok := parseMarker(r.Key); ok {
					v.marker, v.markerAt, v.epoch = 0, r.Offset, r.ProducerEpoch
					if commit {
						v.marker = 1
					}
					finish(v)
				}
			case v.dataAt >= 0 && r.ProducerEpoch > c.Epoch:
				// The broker lost this transaction's marker here.
				// Its records stay in the producer's open span, and
				// the producer's next marker in this partition ends
				// the whole span: read_committed readers see them
				// with that marker's outcome, so that marker is the
				// verdict of this partition (see judge's callers:
				// every partition must agree).
				v.continued = true
			}
		})
	}
	return nil
}

// reread fills in the epoch and time of a claim restored from an old
// snapshot by reading its record from the ledger again.
func (l *Ledger) reread(ctx context.Context, c ClaimInfo) (ClaimInfo, error) {
	rd, err := kgo.NewClient(append(append([]kgo.Opt{}, l.cfg.ClientOpts...),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{l.cfg.Topic: {c.Pos.Partition: kgo.NewOffset().At(c.Pos.Offset)}}),
		kgo.FetchIsolationLevel(kgo.ReadUncommitted()),
		kgo.FetchMaxWait(200*time.Millisecond),
	)...)
	if err != nil {
		return c, err
	}
	defer rd.Close()
	for {
		fs := rd.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			return c, fmt.Errorf("%w: reading the claim at %v again: %w", errUndecided, c.Pos, err)
		}
		var found *kgo.Record
		passed := false
		fs.EachRecord(func(r *kgo.Record) {
			if r.Offset == c.Pos.Offset {
				found = r
			}
			passed = passed || r.Offset >= c.Pos.Offset
		})
		if found != nil {
			c.Epoch, c.ProducerID = found.ProducerEpoch, found.ProducerID
			var cl Claim
			if json.Unmarshal(found.Value, &cl) == nil && cl.At != 0 {
				c.At, c.Since = cl.At, cl.Since
			} else {
				c.At = found.Timestamp.UnixMilli()
			}
			if len(c.Outputs) == 0 {
				c.Outputs = cl.Outputs
			}
			return c, nil
		}
		if passed {
			return c, fmt.Errorf("%w: the claim at %v is no longer in the ledger (retention)", errUndecided, c.Pos)
		}
	}
}

// resolveLoop settles claims the ledger cannot resolve by itself: orphans
// as soon as they appear, and claims a worker has waited on for longer
// than a transaction can stay open (requestResolve). Each attempt reads
// the outputs; an undecided claim is retried with a growing pause, logged
// when its reason changes.
func (l *Ledger) resolveLoop(ctx context.Context) {
	defer l.wg.Done()
	attempts := map[Pos]*resolveAttempt{}
	tick := time.NewTicker(l.cfg.ResolveEvery)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		case <-l.resolveKick:
		}
		cands := l.resolveCandidates()
		tracked := map[Pos]bool{}
		seen := map[producerKey]map[int16]bool{}
		for _, c := range cands {
			tracked[c.Pos] = true
			pk := producerKey{c.Pos.Partition, c.ProducerID}
			if seen[pk][c.Epoch] && c.Epoch != EpochUnknown {
				continue // one judgement per transaction
			}
			if seen[pk] == nil {
				seen[pk] = map[int16]bool{}
			}
			seen[pk][c.Epoch] = true
			a := attempts[c.Pos]
			if a == nil {
				a = &resolveAttempt{}
				attempts[c.Pos] = a
			}
			if time.Now().Before(a.next) {
				continue
			}
			settled, stop := l.tryResolve(ctx, c, a)
			if stop {
				return
			}
			if settled {
				delete(attempts, c.Pos)
			}
		}
		for pos := range attempts {
			if !tracked[pos] {
				delete(attempts, pos)
			}
		}
		l.mu.Lock()
		l.unsettled = len(attempts)
		l.mu.Unlock()
	}
}

// resolveAttempt is what the resolver keeps of its attempts at one claim:
// when to try next, how often it tried, and the last reason it failed.
type resolveAttempt struct {
	next   time.Time
	tries  int
	reason string
}

// resolveCandidates returns the claims for the resolver: the index's
// orphans and the stale claims it still tracks; stale claims it no longer
// tracks are forgotten.
func (l *Ledger) resolveCandidates() []ClaimInfo {
	l.mu.Lock()
	cands := l.idx.Orphans()
	for pos := range l.stale {
		if info, ok := l.idx.Claim(pos); ok {
			cands = append(cands, info)
		} else {
			delete(l.stale, pos)
		}
	}
	l.mu.Unlock()
	return cands
}

// tryResolve makes one attempt at settling claim c: it judges c's
// transaction (within ResolveTimeout) and writes the resolution. settled
// reports the resolution written (or no longer needed); on failure a is
// given its next try, and the reason logged when it changed. stop reports
// that ctx ended while judging: the resolver is closing.
func (l *Ledger) tryResolve(ctx context.Context, c ClaimInfo, a *resolveAttempt) (settled, stop bool) {
	jctx, cancel := context.WithTimeout(ctx, l.cfg.ResolveTimeout)
	commit, evidence, err := l.judge(jctx, c)
	cancel()
	if ctx.Err() != nil {
		return false, true
	}
	if err != nil {
		a.tries++
		a.next = time.Now().Add(min(time.Duration(a.tries)*l.cfg.ResolveEvery, 30*time.Second))
		if reason := err.Error(); reason != a.reason || a.tries%20 == 0 {
			a.reason = reason
			l.log.Warn("claim outcome not established yet; its records stay blocked",
				"claim", c.Pos, "producer_id", c.ProducerID, "epoch", c.Epoch, "transactional_id", c.TxnID,
				"source", fmt.Sprintf("%s[%d]", c.Key.Topic, c.Key.Partition), "ranges", fmtRanges(c.Ranges),
				"orphan", c.Orphan, "tries", a.tries, "reason", reason)
		}
		return false, false
	}
	if err := l.writeResolution(ctx, c, commit, evidence); err != nil {
		a.tries++
		a.next = time.Now().Add(l.cfg.ResolveEvery)
		l.log.Warn("writing a claim resolution", "claim", c.Pos, "err", err)
		return false, false
	}
	return true, false
}

// writeResolution appends the resolution of c's transaction to c's ledger
// partition, naming every claim of that transaction the index tracks there.
func (l *Ledger) writeResolution(ctx context.Context, c ClaimInfo, commit bool, evidence string) error {
	l.mu.Lock()
	claims := l.idx.Siblings(c.Pos)
	l.mu.Unlock()
	if len(claims) == 0 {
		return nil // settled meanwhile
	}
	res := Resolution{Claims: claims, ProducerID: c.ProducerID, Epoch: c.Epoch, Commit: commit, Evidence: evidence, By: l.cfg.Instance}
	if err := l.AppendResolution(ctx, c.Pos.Partition, claimKey(c.Key), res); err != nil {
		return err
	}
	l.log.Warn("settled a claim whose marker the ledger does not have, from its transaction's outputs",
		"claims", fmt.Sprint(claims), "producer_id", c.ProducerID, "epoch", c.Epoch, "transactional_id", c.TxnID,
		"source", fmt.Sprintf("%s[%d]", c.Key.Topic, c.Key.Partition), "ranges", fmtRanges(c.Ranges),
		"orphan", c.Orphan, "committed", commit, "evidence", evidence)
	return nil
}

// AppendResolution writes res to ledger partition lp. Relays call it from
// their resolver; an operator can settle a claim whose outcome no output
// shows (relay ledger resolve).
func (l *Ledger) AppendResolution(ctx context.Context, lp int32, key []byte, res Resolution) error {
	v, err := json.Marshal(&res)
	if err != nil {
		return err
	}
	r := &kgo.Record{Topic: l.cfg.Topic, Partition: lp, Key: key, Value: v,
		Headers: []kgo.RecordHeader{{Key: HeaderKind, Value: []byte(KindResolution)}}}
	return l.resolver.ProduceSync(ctx, r).FirstErr()
}

// requestResolve asks the resolver to settle the claim at pos: a worker has
// waited on it for longer than a transaction can stay open.
func (l *Ledger) requestResolve(pos Pos) {
	l.mu.Lock()
	l.stale[pos] = true
	l.mu.Unlock()
	select {
	case l.resolveKick <- struct{}{}:
	default:
	}
}

// ResolverStats returns what the resolver did.
func (l *Ledger) ResolverStats() ResolverStats {
	l.mu.Lock()
	defer l.mu.Unlock()
	var s ResolverStats
	s.Orphaned, s.Committed, s.Aborted = l.idx.Counters()
	s.Unsettled = l.unsettled
	return s
}

func fmtRanges(rs []Range) string {
	var b strings.Builder
	for i, r := range rs {
		if i > 0 {
			b.WriteByte(',')
		}
		if r.First == r.Last {
			fmt.Fprintf(&b, "%d", r.First)
		} else {
			fmt.Fprintf(&b, "%d-%d", r.First, r.Last)
		}
	}
	return b.String()
}
