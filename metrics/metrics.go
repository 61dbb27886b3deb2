// Package metrics defines the relay's Prometheus metrics and its HTTP
// endpoint (/metrics, /healthz, /readyz). Metrics are registered on an
// injected prometheus.Registerer, never the global one, so tests can read
// them and several relays can live in one process.
package metrics

import (
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"
)

// Ack types, as label values of AcksTotal.
const (
	AckAccept  = "accept"
	AckRelease = "release"
	AckReject  = "reject"
	AckRenew   = "renew"
)

// Phases of a batch, as label values of PhaseSeconds.
const (
	PhasePoll       = "poll"
	PhaseIdle       = "idle"
	PhaseTransform  = "transform"
	PhaseProduce    = "produce"
	PhaseClaimCheck = "claim_check"
	PhaseCommit     = "commit"
	PhaseAck        = "ack"
)

// Transaction outcomes, as label values of TransactionsTotal.
const (
	TxnCommitted = "committed"
	TxnAborted   = "aborted"
	TxnUnknown   = "unknown"
)

// Metrics are the relay's instruments. Labels: pipeline is constant; worker
// is the worker index within the process.
type Metrics struct {
	RecordsPolled    *prometheus.CounterVec
	Redeliveries     *prometheus.CounterVec
	RecordsProduced  *prometheus.CounterVec
	RecordsFiltered  *prometheus.CounterVec
	DeadLetters      *prometheus.CounterVec
	Acks             *prometheus.CounterVec
	AckErrors        *prometheus.CounterVec
	Transactions     *prometheus.CounterVec
	BatchSeconds     prometheus.Histogram
	AlreadyCommitted *prometheus.CounterVec
	ClaimConflicts   *prometheus.CounterVec
	ProducerResets   *prometheus.CounterVec
	// BrokerDisruptions counts the requests of a worker's producers that
	// failed on the wire and the connections they could not open: a
	// broker killed, restarted or cut off, which moves the leaders and
	// coordinators it held.
	BrokerDisruptions *prometheus.CounterVec
	// SourceDisruptions is BrokerDisruptions for a worker's share
	// consumers: the source cluster's brokers (with source.cluster, a
	// cluster of its own) killed, restarted or cut off.
	SourceDisruptions *prometheus.CounterVec
	// HangingSpans counts checks that found a transaction of a worker's
	// producer id left open by a lost marker (the worker holds its
	// records until it is completed).
	HangingSpans *prometheus.CounterVec
	// LostMarkers counts transactions that continued a span an earlier
	// transaction of the worker's producer id left open, by what the
	// worker did: committed (the earlier one committed too), aborted
	// (it did not), restored (an abort discarded committed records,
	// written again and committed through the worker's other producer
	// before the abort), restored_after_abort (written again only after
	// the abort, which a crash in between loses: the other producer
	// could not commit them first), claims (an abort discarded
	// committed claims), unknown (the earlier outcome is not known
	// here).
	LostMarkers *prometheus.CounterVec
	// RetiredHanging is the number of partition spans left open by
	// transactional ids this instance no longer uses (a lost marker).
	RetiredHanging  prometheus.Gauge
	InvariantBreaks prometheus.Counter
	WorkersRunning  prometheus.Gauge

	// Everyday failures: what could not be written, and why the relay
	// waits.
	WriteFailures          *prometheus.CounterVec
	RecordsRejected        *prometheus.CounterVec
	DeadLettersTruncated   *prometheus.CounterVec
	ReleasedOnLastDelivery *prometheus.CounterVec
	RecordsHeld            *prometheus.CounterVec
	SchemaRegistryRequests prometheus.Counter
	AmbiguousCommits       *prometheus.CounterVec
	Paused                 *prometheus.GaugeVec
	Ready                  prometheus.Gauge
	LockBudget             *prometheus.HistogramVec
	LockDuration           prometheus.Gauge
	AcquireWholeBatches    prometheus.Gauge
	ShareGroupLag          *prometheus.GaugeVec
	// PollRecords and ShareConsumers are each worker's poll size and
	// share consumers now; Resizes counts the times a worker moved its
	// consumers to a new size while running (the fleet grew or shrank).
	PollRecords    *prometheus.GaugeVec
	ShareConsumers *prometheus.GaugeVec
	Resizes        *prometheus.CounterVec
	// PhaseSeconds is where a worker's time goes, by phase (Phase*).
	PhaseSeconds *prometheus.HistogramVec

	ledger atomic.Pointer[func() LedgerStats]
}

// LedgerStats is what the claim ledger reports, read at scrape time.
type LedgerStats struct {
	// Pending and Orphaned are the claims the index tracks: waiting for
	// their marker, or whose marker the broker lost.
	Pending, Orphaned int
	// Unsettled are claims the resolver could not settle yet: the records
	// they cover stay blocked.
	Unsettled int
	// OrphanedTotal counts claims this instance saw orphaned;
	// SettledCommit and SettledAbort the resolutions it applied.
	OrphanedTotal, SettledCommit, SettledAbort int64
}

// WatchLedger makes the ledger metrics read f; before, they read zero.
func (m *Metrics) WatchLedger(f func() LedgerStats) { m.ledger.Store(&f) }

func (m *Metrics) ledgerStats() LedgerStats {
	if f := m.ledger.Load(); f != nil {
		return (*f)()
	}
	return LedgerStats{}
}

// New creates the metrics and registers them on reg.
func New(reg prometheus.Registerer, pipeline string) *Metrics {
	f := factory{reg: reg, c: prometheus.Labels{"pipeline": pipeline}}
	m := &Metrics{}
	m.newWorkerCounters(f)
	m.newBatchMetrics(f)
	m.newWriteFailureCounters(f)
	m.newStateMetrics(f)
	m.newLedgerMetrics(reg, pipeline)
	return m
}

// factory creates metrics in the sharerelay namespace, labelled with the
// pipeline (c), on reg.
type factory struct {
	reg prometheus.Registerer
	c   prometheus.Labels
}

// counter creates and registers a counter vector with the given variable
// labels.
func (f factory) counter(name, help string, labels ...string) *prometheus.CounterVec {
	v := prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: "sharerelay", Name: name, Help: help, ConstLabels: f.c,
	}, labels)
	f.reg.MustRegister(v)
	return v
}

// newWorkerCounters creates the per-worker counters of records, acks and
// transactions, registering each as it is created.
func (m *Metrics) newWorkerCounters(f factory) {
	m.RecordsPolled = f.counter("records_polled_total", "Records received from the share group (every delivery counts).", "worker")
	m.Redeliveries = f.counter("redeliveries_total", "Records received with a delivery count above 1.", "worker")
	m.RecordsProduced = f.counter("records_produced_total", "Output records written in committed transactions.", "worker")
	m.RecordsFiltered = f.counter("records_filtered_total", "Source records the transforms filtered out (accepted, nothing produced).", "worker")
	m.DeadLetters = f.counter("dead_letters_total", "Source records written to the dead-letter topic in committed transactions.", "worker")
	m.Acks = f.counter("acks_total", "Share acknowledgements sent, by type.", "worker", "type")
	m.AckErrors = f.counter("ack_errors_total", "Share acknowledgements the broker refused or the client could not deliver.", "worker")
	m.Transactions = f.counter("transactions_total", "Transactions ended, by outcome.", "worker", "outcome")
	m.AlreadyCommitted = f.counter("already_committed_total", "Records accepted without processing because the claim ledger shows them committed (exactly-once only).", "worker")
	m.ProducerResets = f.counter("producer_resets_total", "Transactional producers replaced after a fatal error (they could no longer begin or abort transactions).", "worker")
	m.SourceDisruptions = f.counter("source_disruptions_total", "Requests of the worker's share consumers that failed on the wire, and connections they could not open: a broker of the source cluster (source.cluster, else the only one) killed, restarted or cut off. Acknowledgements in flight fail and their records come back, to be found committed. A steady rate means a source broker the relay cannot reach.", "worker")
	m.BrokerDisruptions = f.counter("broker_disruptions_total", "Requests of the worker's transactional producers that failed on the wire, and connections they could not open: a broker killed, restarted or cut off (its leaders and coordinators move to other nodes). The relay rides them out; a steady rate means a broker it cannot reach.", "worker")
	m.HangingSpans = f.counter("hanging_transactions_total", "Checks that found a transaction of the worker's producer id open in a partition it writes after the broker lost its marker; the worker holds its records until an operator completes it (see docs/exactly-once.md).", "worker")
	m.LostMarkers = f.counter("lost_markers_total", "Transactions that continued a span an earlier transaction of the worker's producer id left open after the broker lost its marker, by what the worker did: committed, aborted, restored (written again before the abort), restored_after_abort, claims, unknown (see docs/exactly-once.md).", "worker", "repair")
	m.ClaimConflicts = f.counter("claim_conflicts_total", "Records dropped from a transaction because an earlier claim committed them (exactly-once only).", "worker")
}

// newBatchMetrics creates the process-wide batch duration, safety-net,
// running-workers and retired-hanging metrics, and registers them
// together.
func (m *Metrics) newBatchMetrics(f factory) {
	m.BatchSeconds = prometheus.NewHistogram(prometheus.HistogramOpts{
		Namespace: "sharerelay", Name: "batch_duration_seconds", ConstLabels: f.c,
		Help:    "Time from a poll returning records to every record of the batch being acknowledged.",
		Buckets: prometheus.ExponentialBuckets(0.001, 2, 16),
	})
	m.InvariantBreaks = prometheus.NewCounter(prometheus.CounterOpts{
		Namespace: "sharerelay", Name: "invariant_violations_total", ConstLabels: f.c,
		Help: "Times a safety net fired (e.g. a batch not fully acknowledged before the next poll). Must stay 0.",
	})
	m.WorkersRunning = prometheus.NewGauge(prometheus.GaugeOpts{
		Namespace: "sharerelay", Name: "workers_running", ConstLabels: f.c,
		Help: "Workers currently running their loop.",
	})
	m.RetiredHanging = prometheus.NewGauge(prometheus.GaugeOpts{
		Namespace: "sharerelay", Name: "retired_hanging_transactions", ConstLabels: f.c,
		Help: "Partitions where a transactional id this instance no longer uses (fewer workers, batch.background_commit off) left a transaction open after the broker lost its marker: read_committed readers wait there until an operator completes it (see docs/exactly-once.md). Should be 0.",
	})
	f.reg.MustRegister(m.BatchSeconds, m.InvariantBreaks, m.WorkersRunning, m.RetiredHanging)
}

// newWriteFailureCounters creates the per-worker counters of what could not
// be written, registering each as it is created.
func (m *Metrics) newWriteFailureCounters(f factory) {
	m.WriteFailures = f.counter("write_failures_total", "Transactions that failed while writing, by class: record (an output the cluster refuses for good: its source record is dead-lettered), destination (a topic missing, recreated or not writable: the worker pauses), cluster (unreachable or slow: the worker pauses).", "worker", "class")
	m.RecordsRejected = f.counter("records_rejected_total", "Source records dead-lettered because the cluster refuses their outputs for good (too large for the topic or the client, invalid).", "worker")
	m.DeadLettersTruncated = f.counter("dead_letters_truncated_total", "Dead letters too large for the dead-letter topic, written again without the source value and headers (then key).", "worker")
	m.ReleasedOnLastDelivery = f.counter("released_on_last_delivery_total", "Records the relay released on their last delivery: the broker archives them without output. Should stay 0.", "worker")
	m.RecordsHeld = f.counter("records_held_total", "Source records a worker held because their transform needed what was out of reach (a schema registry that cannot answer): neither released (no delivery spent) nor dead-lettered, but transformed again once it answers; counted once a hold.", "worker")
	m.SchemaRegistryRequests = f.counter("schema_registry_requests_total", "Requests the relay sent its schema registries (pipelines with avro, protobuf or json_schema); flat under a steady stream, as schemas by id and by version are cached for good.").WithLabelValues()
	m.AmbiguousCommits = f.counter("ambiguous_commits_total", "Commits whose EndTxn answer was lost (each also counts as transactions_total{outcome=\"unknown\"}), by how the claim ledger resolved them: committed, not-committed, unresolved (released).", "worker", "resolution")
}

// newStateMetrics creates the gauges and histograms of why and where the
// relay waits (paused workers, readiness, the lock budget and duration,
// the acquire mode, the share group's lag, the time per phase), and
// registers them together.
func (m *Metrics) newStateMetrics(f factory) {
	m.Paused = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Namespace: "sharerelay", Name: "worker_paused", ConstLabels: f.c,
		Help: "1 while a worker is paused (taking no records, holding its batch), with the reason.",
	}, []string{"worker", "reason"})
	m.Ready = prometheus.NewGauge(prometheus.GaugeOpts{
		Namespace: "sharerelay", Name: "ready", ConstLabels: f.c,
		Help: "1 while the relay has started and every worker can make progress (what /readyz reports).",
	})
	m.LockBudget = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Namespace: "sharerelay", Name: "lock_budget_ratio", ConstLabels: f.c,
		Help:    "A batch's time from poll to acknowledgement divided by the share group's record lock duration: above 1 its locks expired (without renewal) and its records were delivered again.",
		Buckets: []float64{0.05, 0.1, 0.25, 0.5, 0.75, 0.9, 1, 1.5, 2},
	}, []string{"worker"})
	m.LockDuration = prometheus.NewGauge(prometheus.GaugeOpts{
		Namespace: "sharerelay", Name: "lock_duration_seconds", ConstLabels: f.c,
		Help: "The share group's effective record lock duration.",
	})
	m.AcquireWholeBatches = prometheus.NewGauge(prometheus.GaugeOpts{
		Namespace: "sharerelay", Name: "acquire_whole_batches", ConstLabels: f.c,
		Help: "1 when the share consumers acquire whole record batches (batch.acquire_mode batch_optimized), 0 when a fetch acquires at most batch.max_records (record_limit).",
	})
	m.ShareGroupLag = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Namespace: "sharerelay", Name: "share_group_lag", ConstLabels: f.c,
		Help: "Records of a source partition not yet acknowledged by the share group, from the broker's share-group offsets (every instance reports the same value: aggregate with max).",
	}, []string{"topic", "partition"})
	m.PollRecords = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Namespace: "sharerelay", Name: "poll_records", ConstLabels: f.c,
		Help: "The records each of a worker's share consumers asks for in one poll, as sized to the group's record locks shared among the relay instances in the group; it follows the fleet as instances come and go.",
	}, []string{"worker"})
	m.ShareConsumers = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Namespace: "sharerelay", Name: "share_consumers", ConstLabels: f.c,
		Help: "The share consumers a worker runs now.",
	}, []string{"worker"})
	m.Resizes = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: "sharerelay", Name: "resizes_total", ConstLabels: f.c,
		Help: "Times a worker replaced its share consumers with ones of a new size while running, after every record they held was acknowledged (the relay instances in the group changed).",
	}, []string{"worker"})
	m.PhaseSeconds = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Namespace: "sharerelay", Name: "phase_seconds", ConstLabels: f.c,
		Help:    "Time the workers spend per phase of a batch: poll (waiting for records that came), idle (a poll that came back empty), transform, produce (outputs and claims, until acknowledged), claim_check (exactly-once), commit, ack. The sums show where the time goes.",
		Buckets: prometheus.ExponentialBuckets(0.0001, 2.5, 14),
	}, []string{"phase"})
	f.reg.MustRegister(m.Paused, m.Ready, m.LockBudget, m.LockDuration, m.AcquireWholeBatches, m.ShareGroupLag, m.PollRecords, m.ShareConsumers, m.Resizes, m.PhaseSeconds)
}

// newLedgerMetrics registers the claim ledger's metrics, which read
// m.ledgerStats at scrape time (see WatchLedger).
func (m *Metrics) newLedgerMetrics(reg prometheus.Registerer, pipeline string) {
	gauge := func(name, help string, labels prometheus.Labels, f func(LedgerStats) float64) {
		l := prometheus.Labels{"pipeline": pipeline}
		for k, v := range labels {
			l[k] = v
		}
		reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Namespace: "sharerelay", Name: name, Help: help, ConstLabels: l,
		}, func() float64 { return f(m.ledgerStats()) }))
	}
	count := func(name, help string, labels prometheus.Labels, f func(LedgerStats) float64) {
		l := prometheus.Labels{"pipeline": pipeline}
		for k, v := range labels {
			l[k] = v
		}
		reg.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{
			Namespace: "sharerelay", Name: name, Help: help, ConstLabels: l,
		}, func() float64 { return f(m.ledgerStats()) }))
	}
	const claimsHelp = "Claims the ledger index tracks, by state: pending (waiting for their transaction's marker) or orphaned (the broker lost the marker; the resolver settles them from the outputs)."
	gauge("ledger_claims", claimsHelp, prometheus.Labels{"state": "pending"}, func(s LedgerStats) float64 { return float64(s.Pending) })
	gauge("ledger_claims", claimsHelp, prometheus.Labels{"state": "orphaned"}, func(s LedgerStats) float64 { return float64(s.Orphaned) })
	gauge("ledger_unsettled_claims", "Claims the resolver could not settle yet (no output shows their outcome, or the broker broke a transaction's atomicity): the records they cover stay blocked. Should be 0.",
		nil, func(s LedgerStats) float64 { return float64(s.Unsettled) })
	count("ledger_orphaned_claims_total", "Claims this instance saw orphaned: their producer moved to a later epoch before their marker reached the ledger.",
		nil, func(s LedgerStats) float64 { return float64(s.OrphanedTotal) })
	const settledHelp = "Claims settled by resolution records (read from the ledger by this instance), by outcome."
	count("ledger_resolutions_total", settledHelp, prometheus.Labels{"outcome": TxnCommitted}, func(s LedgerStats) float64 { return float64(s.SettledCommit) })
	count("ledger_resolutions_total", settledHelp, prometheus.Labels{"outcome": TxnAborted}, func(s LedgerStats) float64 { return float64(s.SettledAbort) })
}
