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
	rep := &LedgerReport{}
	type pk struct {
		p   int32
		pid int64
	}
	type pos struct {
		p int32
		o int64
	}
	live := map[pk][]*trackedClaim{}
	byPos := map[pos]*trackedClaim{}
	drop := func(c *trackedClaim, p int32) { delete(byPos, pos{p, c.offset}) }
	err := scan(ctx, opts, false, []string{topic}, nil, func(r *kgo.Record) {
		k := pk{r.Partition, r.ProducerID}
		if r.Attrs.IsControl() {
			if len(r.Key) < 4 {
				return
			}
			var keep []*trackedClaim
			for _, c := range live[k] {
				switch {
				case int32(r.ProducerEpoch) == int32(c.epoch)+1:
					drop(c, r.Partition)
				case int32(r.ProducerEpoch) > int32(c.epoch)+1:
					c.orphan = true
					rep.Orphaned++
				default:
					keep = append(keep, c)
				}
			}
			live[k] = keep
			return
		}
		for _, h := range r.Headers {
			if h.Key == ledgerKindHeader && string(h.Value) == ledgerKindResolved {
				var res ledgerResolution
				if json.Unmarshal(r.Value, &res) != nil {
					return
				}
				for _, cp := range res.Claims {
					c := byPos[pos{cp.Partition, cp.Offset}]
					if c == nil {
						continue
					}
					drop(c, cp.Partition)
					if res.Commit {
						rep.SettledCommitted++
					} else {
						rep.SettledAborted++
					}
				}
				return
			}
		}
		var cl ledgerClaim
		if json.Unmarshal(r.Value, &cl) != nil || cl.Gen != gen {
			return
		}
		rep.Claims++
		var keep []*trackedClaim
		for _, c := range live[k] {
			if c.epoch < r.ProducerEpoch {
				c.orphan = true
				rep.Orphaned++
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
		live[k] = append(keep, c)
		byPos[pos{r.Partition, r.Offset}] = c
	})
	if err != nil {
		return nil, err
	}
	for _, c := range byPos {
		if c.orphan {
			rep.Unsettled = append(rep.Unsettled, c.desc)
		} else {
			rep.Pending++
		}
	}
	sort.Strings(rep.Unsettled)
	return rep, nil
}
