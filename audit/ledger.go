package audit

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"

	"github.com/twmb/franz-go/pkg/kgo"
)

// ledgerKindHeader marks a record of the claim ledger that is not a claim;
// the value "resolution" settles claims. The checker reads the ledger on
// its own, sharing no code with the relay's ledger reader (eos), so the
// two can be compared.
const (
	ledgerKindHeader   = "sharerelay.ledger.kind"
	ledgerKindResolved = "resolution"
)

// LedgerReport is what the claim ledger shows of transactions whose marker
// the broker did not deliver to it.
type LedgerReport struct {
	// Claims is the number of claims of the generation read.
	Claims int `json:"claims"`
	// Orphaned counts claims whose producer wrote a later epoch to the
	// ledger partition before the claim's own marker (at the claim's
	// epoch + 1): the broker lost that marker.
	Orphaned int `json:"orphaned"`
	// SettledCommitted and SettledAborted count claims settled by
	// resolution records (written by a relay's resolver from the
	// transaction's outputs, or by an operator).
	SettledCommitted int `json:"settled_committed"`
	SettledAborted   int `json:"settled_aborted"`
	// Pending counts claims still without a marker or resolution at the
	// end of the ledger (in flight while the pipeline runs).
	Pending int `json:"pending"`
	// Unsettled lists the orphaned claims nothing settled: the source
	// records they cover stay blocked (and end up archived by the broker).
	Unsettled []string `json:"unsettled,omitempty"`
}

type ledgerClaim struct {
	Gen       int64  `json:"gen"`
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
	TxnID     string `json:"txn_id"`
	Ranges    []struct {
		First int64 `json:"f"`
		Last  int64 `json:"l"`
	} `json:"ranges"`
}

type ledgerResolution struct {
	Claims []struct {
		Partition int32 `json:"p"`
		Offset    int64 `json:"o"`
	} `json:"claims"`
	Commit bool `json:"commit"`
}

// trackedClaim is a claim the checker has not seen resolved yet.
type trackedClaim struct {
	offset int64
	epoch  int16
	orphan bool
	desc   string
}

// ReadLedger reads claim ledger topic (generation gen) up to its end and
// reports the claims whose marker was lost and how they were settled. The
// rule it applies: under transaction.version 2, a claim written at epoch
// E belongs to a transaction whose markers carry E+1; a later epoch of its
// producer in the partition first means the marker was lost.
func ReadLedger(ctx context.Context, opts []kgo.Opt, topic string, gen int64) (*LedgerReport, error) {
	lc := &ledgerChecker{
		rep:   &LedgerReport{},
		gen:   gen,
		live:  map[ledgerProducer][]*trackedClaim{},
		byPos: map[ledgerPos]*trackedClaim{},
	}
	if err := scan(ctx, opts, false, []string{topic}, nil, lc.record); err != nil {
		return nil, err
	}
	rep := lc.rep
	for _, c := range lc.byPos {
		if c.orphan {
			rep.Unsettled = append(rep.Unsettled, c.desc)
		} else {
			rep.Pending++
		}
	}
	sort.Strings(rep.Unsettled)
	return rep, nil
}

// ledgerProducer is a producer in one ledger partition.
type ledgerProducer struct {
	p   int32
	pid int64
}

// ledgerPos is a record's position in the ledger.
type ledgerPos struct {
	p int32
	o int64
}

// ledgerChecker follows the ledger's claims, markers and resolutions, in
// the order ReadLedger scans them.
type ledgerChecker struct {
	rep *LedgerReport
	gen int64
	// live: per producer, its claims still awaiting their marker; byPos:
	// every claim neither committed, aborted nor settled yet.
	live  map[ledgerProducer][]*trackedClaim
	byPos map[ledgerPos]*trackedClaim
}

// record follows one ledger record: a marker, a resolution or a claim.
func (lc *ledgerChecker) record(r *kgo.Record) {
	if r.Attrs.IsControl() {
		lc.marker(r)
		return
	}
	for _, h := range r.Headers {
		if h.Key == ledgerKindHeader && string(h.Value) == ledgerKindResolved {
			lc.resolution(r)
			return
		}
	}
	lc.claim(r)
}

// drop forgets claim c of ledger partition p: it is resolved.
func (lc *ledgerChecker) drop(c *trackedClaim, p int32) { delete(lc.byPos, ledgerPos{p, c.offset}) }

// marker follows a transaction marker: it resolves its producer's claims
// of the epoch before it and orphans those of older epochs.
func (lc *ledgerChecker) marker(r *kgo.Record) {
	if len(r.Key) < 4 {
		return
	}
	k := ledgerProducer{r.Partition, r.ProducerID}
	var keep []*trackedClaim
	for _, c := range lc.live[k] {
		switch {
		case int32(r.ProducerEpoch) == int32(c.epoch)+1:
			lc.drop(c, r.Partition)
		case int32(r.ProducerEpoch) > int32(c.epoch)+1:
			c.orphan = true
			lc.rep.Orphaned++
		default:
			keep = append(keep, c)
		}
	}
	lc.live[k] = keep
}

// resolution follows a resolution record: it settles the claims it names.
func (lc *ledgerChecker) resolution(r *kgo.Record) {
	var res ledgerResolution
	if json.Unmarshal(r.Value, &res) != nil {
		return
	}
	for _, cp := range res.Claims {
		c := lc.byPos[ledgerPos{cp.Partition, cp.Offset}]
		if c == nil {
			continue
		}
		lc.drop(c, cp.Partition)
		if res.Commit {
			lc.rep.SettledCommitted++
		} else {
			lc.rep.SettledAborted++
		}
	}
}

// claim follows a claim of generation lc.gen: a later epoch of its producer
// orphans the producer's claims of older epochs still awaiting a marker.
func (lc *ledgerChecker) claim(r *kgo.Record) {
	var cl ledgerClaim
	if json.Unmarshal(r.Value, &cl) != nil || cl.Gen != lc.gen {
		return
	}
	lc.rep.Claims++
	k := ledgerProducer{r.Partition, r.ProducerID}
	var keep []*trackedClaim
	for _, c := range lc.live[k] {
		if c.epoch < r.ProducerEpoch {
			c.orphan = true
			lc.rep.Orphaned++
		} else {
			keep = append(keep, c)
		}
	}
	rs := ""
	for i, rg := range cl.Ranges {
		if i > 0 {
			rs += ","
		}
		rs += fmt.Sprintf("%d-%d", rg.First, rg.Last)
	}
	c := &trackedClaim{offset: r.Offset, epoch: r.ProducerEpoch,
		desc: fmt.Sprintf("%s[%d] %s: producer %d epoch %d (%s), ledger %d/%d", cl.Topic, cl.Partition, rs, r.ProducerID, r.ProducerEpoch, cl.TxnID, r.Partition, r.Offset)}
	lc.live[k] = append(keep, c)
	lc.byPos[ledgerPos{r.Partition, r.Offset}] = c
}
