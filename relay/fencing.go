package relay

import (
	"fmt"
	"net"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kgo"
)

// A worker whose producer is fenced must tell two causes apart:
//
//   - another instance runs with the same name (a twin, or a zombie that
//     a restarted instance fenced): it must stop, and the newer one goes
//     on;
//   - its own client's recovery was refused after a broker failure: the
//     transaction coordinator that reloaded its state from the log no
//     longer knows the producer's previous epoch, and franz-go's KIP-360
//     re-initialisation with the expected epoch is answered
//     PRODUCER_FENCED although no other instance exists. A fresh producer
//     recovers.
//
// A fence within fenceExcuse of a transport failure of the worker's
// producer (a connection refused, reset or cut: the broker failed) is
// taken for the second; other fences count, and a worker fenced twice
// within fenceWindow stops. Twins fence each other on every transaction,
// so they are told apart within seconds once the cluster is healthy.
const (
	fenceWindow = 30 * time.Second
	fenceExcuse = time.Minute
)

// disruptions remembers when the worker's producer clients last failed to
// reach a broker. It is a kgo hook, added to every producer the worker
// creates, so it outlives a replaced producer.
type disruptions struct {
	last atomic.Int64 // unix nanoseconds; 0 = never
	// dialed is when a producer client last opened a connection, failed
	// or not (unix nanoseconds; 0 = never): a broker that restarted is
	// reached again through a new connection (see changedAt).
	dialed atomic.Int64
	// count, when set, counts each failure
	// (sharerelay_broker_disruptions_total).
	count prometheus.Counter
}

var (
	_ kgo.HookBrokerConnect = (*disruptions)(nil)
	_ kgo.HookBrokerE2E     = (*disruptions)(nil)
)

// OnBrokerConnect notes a failed dial, and every dial (changedAt).
func (d *disruptions) OnBrokerConnect(_ kgo.BrokerMetadata, _ time.Duration, _ net.Conn, err error) {
	d.dialed.Store(time.Now().UnixNano())
	if err != nil {
		d.note()
	}
}

// OnBrokerE2E notes a request that failed on the wire.
func (d *disruptions) OnBrokerE2E(_ kgo.BrokerMetadata, _ int16, e2e kgo.BrokerE2E) {
	if e2e.Err() != nil {
		d.note()
	}
}

func (d *disruptions) note() {
	d.last.Store(time.Now().UnixNano())
	if d.count != nil {
		d.count.Inc()
	}
}

// changedAt returns when the worker's producers last met a failure or
// opened a connection (the zero time if never, or for a nil d). A
// transaction that wrote through a connection opened after the previous
// transaction ended may have written to a broker that restarted in
// between, and could have lost that transaction's marker on the way
// (see worker.commitCheck); a failure alone is not always seen, since a
// connection the broker closed while idle fails no request.
func (d *disruptions) changedAt() time.Time {
	if d == nil {
		return time.Time{}
	}
	if at := max(d.last.Load(), d.dialed.Load()); at != 0 {
		return time.Unix(0, at)
	}
	return time.Time{}
}

// recent reports whether a disruption happened within d of now.
func (d *disruptions) recent(now time.Time, within time.Duration) bool {
	last := d.last.Load()
	return last != 0 && now.Sub(time.Unix(0, last)) < within
}

// fenced handles a fenced producer: another instance with our name, or our
// own client's recovery refused after a broker failure (see fencing.go). A
// fresh producer recovers the second; a twin fences us again at once,
// which stops the worker (the error returned).
func (w *worker) fenced(err error) error {
	now := time.Now()
	w.cur.stale = true
	if w.disrupt != nil && w.disrupt.recent(now, fenceExcuse) {
		w.log.Warn("producer fenced soon after a broker failure (the coordinator forgot its epoch); re-creating it", "err", err)
		return nil // the batch is released
	}
	if !w.fencedAt.IsZero() && now.Sub(w.fencedAt) < fenceWindow {
		return fmt.Errorf("worker %d: fenced twice within %s: another instance runs with the same name: %w", w.id, fenceWindow, err)
	}
	w.fencedAt = now
	w.log.Warn("producer fenced; re-creating it (stops if fenced again soon: another instance with this name)", "err", err)
	return nil
}
