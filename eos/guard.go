package eos

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// ledgerGuard is a worker's Guard on the claim ledger.
type ledgerGuard struct {
	l     *Ledger
	txnID string
	// The claims of the open transaction, from Claims to Check.
	open    []*claimGroup
	spare   []*claimGroup // groups of earlier transactions, reused
	nSrcs   int
	records []*kgo.Record
	last    []Pos // the claims of the last Check, watched for Resolve
}

// Committed reports which sources the index shows committed. A lagging
// reader may miss recent commits; Claim catches those.
func (g *ledgerGuard) Committed(srcs []Source) []bool {
	out := make([]bool, len(srcs))
	g.l.mu.Lock()
	defer g.l.mu.Unlock()
	// A batch is runs of records of one partition: look the partition up
	// once a run, not once a record.
	var (
		last PartKey
		ps   *partState
	)
	for i, s := range srcs {
		if k := (PartKey{s.TopicID, s.Topic, s.Partition}); i == 0 || k != last {
			last, ps = k, g.l.idx.parts[keyOf(k)]
		}
		out[i] = g.l.idx.committedIn(ps, s.Offset)
	}
	return out
}

type claimGroup struct {
	key     PartKey
	offsets []int64
	idx     []int // indexes into srcs
	pos     Pos
}

// Claims returns one claim record per source partition of srcs, to be
// produced in the open transaction with the outputs, which go to outputs
// (topics).
func (g *ledgerGuard) Claims(ctx context.Context, tx Tx, srcs []Source, outputs []string, since int64) ([]*kgo.Record, error) {
	g.forget()
	pid, epoch, err := tx.ProducerID(ctx)
	if err != nil {
		return nil, fmt.Errorf("eos: claim: %w", err)
	}
	g.recycle()
	g.nSrcs = len(srcs)
	var cg *claimGroup
	for i, s := range srcs {
		// A transaction's sources come in runs of one partition: look
		// the group up once a run, and then by a short search (a
		// transaction's source partitions are few) rather than a map.
		if i == 0 || s.Partition != srcs[i-1].Partition || s.TopicID != srcs[i-1].TopicID || s.Topic != srcs[i-1].Topic {
			k := keyOf(PartKey{s.TopicID, s.Topic, s.Partition})
			cg = nil
			for _, o := range g.open {
				if keyOf(o.key) == k {
					cg = o
					break
				}
			}
			if cg == nil {
				cg = g.group(PartKey{s.TopicID, s.Topic, s.Partition})
				g.open = append(g.open, cg)
			}
		}
		cg.offsets = append(cg.offsets, s.Offset)
		cg.idx = append(cg.idx, i)
	}
	g.records = make([]*kgo.Record, len(g.open))
	at := time.Now().UnixMilli()
	for i, cg := range g.open {
		c := Claim{
			Gen: g.l.cfg.Gen, Topic: cg.key.Topic, TopicID: cg.key.TopicID, Partition: cg.key.Partition,
			Ranges: Ranges(cg.offsets), TxnID: g.txnID, ProducerID: pid, Epoch: epoch,
			Outputs: outputs, At: at, Since: since,
		}
		if g.records[i], err = NewClaimRecord(g.l.cfg.Topic, &c); err != nil {
			return nil, err
		}
	}
	return g.records, nil
}

// recycle keeps the last transaction's claim groups for the next one: a
// batch's offsets are thousands, and growing them anew each transaction
// was most of what Claims allocated. No group outlives its transaction:
// Check is done with them before the next Claims.
func (g *ledgerGuard) recycle() {
	for i, cg := range g.open {
		cg.offsets, cg.idx = cg.offsets[:0], cg.idx[:0]
		g.spare = append(g.spare, cg)
		g.open[i] = nil
	}
	g.open = g.open[:0]
}

// group returns an empty claim group for source partition k.
func (g *ledgerGuard) group(k PartKey) *claimGroup {
	n := len(g.spare)
	if n == 0 {
		return &claimGroup{key: k}
	}
	cg := g.spare[n-1]
	g.spare[n-1] = nil
	g.spare = g.spare[:n-1]
	cg.key, cg.pos = k, Pos{}
	return cg
}

// NewClaimRecord encodes claim c as a record of ledger topic: keyed by its
// source partition, so every claim of one source partition lands in the
// same ledger partition.
func NewClaimRecord(topic string, c *Claim) (*kgo.Record, error) {
	v, err := json.Marshal(c)
	if err != nil {
		return nil, fmt.Errorf("eos: encoding claim: %w", err)
	}
	return &kgo.Record{Topic: topic, Key: claimKey(c.Key()), Value: v}, nil
}

// Check is called once the records of Claims were produced (so they carry
// their ledger positions). It waits until the reader has applied them and
// applies the conflict rule, waiting (up to ClaimWait) for earlier claims
// of the same offsets to be resolved. A claim that blocks for longer than
// a transaction can stay open lost its marker: the resolver is asked to
// settle it. conflicts is indexed like Claims' srcs.
func (g *ledgerGuard) Check(ctx context.Context) ([]bool, error) {
	if len(g.open) == 0 || len(g.records) != len(g.open) {
		return nil, errors.New("eos: Check without Claims")
	}
	g.l.mu.Lock()
	for i, cg := range g.open {
		cg.pos = Pos{g.records[i].Partition, g.records[i].Offset}
		g.l.idx.Watch(cg.pos)
		g.last = append(g.last, cg.pos)
	}
	g.l.mu.Unlock()

	// Claims in several ledger partitions can wait on each other in a
	// cycle; ClaimWait breaks it (one side aborts). With one ledger
	// partition claims are totally ordered and only wait on earlier ones.
	wctx, cancel := context.WithTimeout(ctx, g.l.cfg.ClaimWait)
	defer cancel()
	stale := time.NewTimer(g.l.cfg.TransactionTimeout)
	defer stale.Stop()
	conflicts := make([]bool, g.nSrcs)
	for {
		g.l.mu.Lock()
		var blockers []Pos
		var cerr error
		for _, cg := range g.open {
			c, b, err := g.l.idx.Check(cg.pos, cg.key, cg.offsets)
			if err != nil {
				cerr = err
				break
			}
			blockers = append(blockers, b...)
			for j, conflict := range c {
				conflicts[cg.idx[j]] = conflict
			}
		}
		ch := g.l.changed
		g.l.mu.Unlock()
		if cerr != nil {
			return nil, cerr
		}
		if len(blockers) == 0 {
			return conflicts, nil
		}
		select {
		case <-wctx.Done():
			if errors.Is(wctx.Err(), context.DeadlineExceeded) && ctx.Err() == nil {
				return nil, fmt.Errorf("%w (%s; blocked by the claims at %v)", ErrClaimWaitTimeout, g.l.cfg.ClaimWait, blockers)
			}
			return nil, wctx.Err()
		case <-stale.C:
			// Longer than any transaction stays open: the blockers'
			// markers are late or lost.
			for _, b := range blockers {
				g.l.requestResolve(b)
			}
		case <-ch:
		}
	}
}

// Resolve waits for the marker of the last claim's transaction and reports
// whether it committed. An orphaned claim (the ledger lost its marker)
// waits for the resolver's verdict. It waits at most until ctx ends; then
// the outcome stays unknown and the worker releases the records, which is
// safe: whoever gets them next finds them committed if they were.
func (g *ledgerGuard) Resolve(ctx context.Context) (bool, error) {
	if len(g.last) == 0 {
		return false, errors.New("eos: resolve: no claim to resolve")
	}
	pos := g.last[0] // every claim of a transaction shares its fate
	asked := false
	for {
		g.l.mu.Lock()
		f := g.l.idx.Fate(pos)
		ch := g.l.changed
		g.l.mu.Unlock()
		switch f {
		case FateCommitted:
			return true, nil
		case FateAborted:
			return false, nil
		case FateOrphaned:
			if !asked {
				g.l.requestResolve(pos)
				asked = true
			}
		}
		select {
		case <-ctx.Done():
			return false, fmt.Errorf("eos: resolving the commit by the ledger (claim %v %s): %w", pos, f, ctx.Err())
		case <-ch:
		}
	}
}

func (g *ledgerGuard) forget() {
	if len(g.last) == 0 {
		return
	}
	g.l.mu.Lock()
	for _, p := range g.last {
		g.l.idx.Forget(p)
	}
	g.l.mu.Unlock()
	g.last = g.last[:0]
}

// Close forgets the watched claims.
func (g *ledgerGuard) Close() { g.forget() }

// claimKey keys a claim by its source partition, so every claim of one
// source partition lands in the same ledger partition.
func claimKey(k PartKey) []byte {
	id := k.Topic
	if k.TopicID != ([16]byte{}) {
		id = hex.EncodeToString(k.TopicID[:])
	}
	return []byte(id + "/" + strconv.Itoa(int(k.Partition)))
}
