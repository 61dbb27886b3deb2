package relay

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sharerelay/sharerelay/metrics"
)

// phase records the time since start as spent in phase.
func (w *worker) phase(phase string, start time.Time) {
	w.m.PhaseSeconds.WithLabelValues(phase).Observe(time.Since(start).Seconds())
}

// countTxn counts a transaction attempt that ended in transactions_total.
func (w *worker) countTxn(out outcome) {
	if out.txn != "" {
		w.m.Transactions.WithLabelValues(w.label, out.txn).Inc()
	}
}

// countCommitted counts what a committed transaction wrote.
func (w *worker) countCommitted(plans []plan, pending []int) {
	var dead, filtered, produced int
	for _, i := range pending {
		switch p := &plans[i]; {
		case p.deadLetter:
			dead++
		case len(p.outs) == 0:
			filtered++
		default:
			produced += len(p.outs)
		}
	}
	for _, c := range []struct {
		vec *prometheus.CounterVec
		n   int
	}{{w.m.DeadLetters, dead}, {w.m.RecordsFiltered, filtered}, {w.m.RecordsProduced, produced}} {
		if c.n > 0 {
			c.vec.WithLabelValues(w.label).Add(float64(c.n))
		}
	}
}

func ackLabel(s kgo.AckStatus) string {
	switch s {
	case kgo.AckAccept:
		return metrics.AckAccept
	case kgo.AckRelease:
		return metrics.AckRelease
	case kgo.AckReject:
		return metrics.AckReject
	default:
		return metrics.AckRenew
	}
}
