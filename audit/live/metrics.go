package live

import (
	"strconv"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/sharerelay/sharerelay/audit"
)

// Metrics are the live auditor's instruments, on a registry of its own
// (relay audit serves them on its own endpoint). Labels: pipeline is
// constant; topic and partition name a source partition — or, for a
// dead letter replayed more than once (relay dlq replay), the dead
// letter's partition; unexpected outputs naming no source partition at
// all count with both empty.
type Metrics struct {
	judged, output, deadLettered, filtered, lost, duplicated, both, incomplete, unexpected, late *prometheus.CounterVec
	unlabelled                                                                                   prometheus.Counter
	lagRecords                                                                                   *prometheus.GaugeVec
	ready                                                                                        prometheus.Gauge
	info                                                                                         *prometheus.GaugeVec
	checkpoints                                                                                  *prometheus.CounterVec
	// judgedAt is when the newest judged fence was taken (Unix
	// nanoseconds), read by the scrape.
	judgedAt atomic.Int64
}

// NewMetrics registers the auditor's metrics for pipeline on reg.
func NewMetrics(reg prometheus.Registerer, pipeline string) *Metrics {
	m := &Metrics{}
	labels := prometheus.Labels{"pipeline": pipeline}
	counter := func(name, help string) *prometheus.CounterVec {
		c := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "sharerelay_audit_" + name, Help: help, ConstLabels: labels}, []string{"topic", "partition"})
		reg.MustRegister(c)
		return c
	}
	m.judged = counter("records_judged_total", "Source records judged: acknowledged by the share group, and every transaction that could write their outputs ended.")
	m.output = counter("output_total", "Judged source records with at least one output.")
	m.deadLettered = counter("dead_lettered_total", "Judged source records with at least one dead letter.")
	m.filtered = counter("filtered_total", "Judged source records with neither, in a pipeline whose transforms can drop records.")
	m.lost = counter("lost_total", "Judged source records with neither output nor dead letter, in a pipeline that cannot drop records.")
	m.duplicated = counter("duplicated_total", "Judged source records written more than once (an output or a dead letter twice, a fan-out index twice), outputs read after their record was judged, and dead letters replayed more than once.")
	m.both = counter("both_total", "Judged source records in the output and in the dead letters (and replayed dead letters written both ways).")
	m.incomplete = counter("incomplete_total", "Judged source records whose fan-out is short of the outputs it names.")
	m.unexpected = counter("unexpected_total", "Outputs and dead letters naming a source offset that is no record.")
	m.late = counter("late_total", "Outputs and dead letters read after the source record they name was judged (counted in duplicated_total too).")
	m.unlabelled = prometheus.NewCounter(prometheus.CounterOpts{Name: "sharerelay_audit_unlabelled_total", Help: "Output and dead-letter records without sharerelay.source.* headers.", ConstLabels: labels})
	m.lagRecords = prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "sharerelay_audit_lag_records", Help: "Source records not judged yet: the partition's end at the newest fence minus the judged watermark.", ConstLabels: labels}, []string{"topic", "partition"})
	m.ready = prometheus.NewGauge(prometheus.GaugeOpts{Name: "sharerelay_audit_ready", Help: "1 while the auditor takes fences and reads every topic; 0 before its first judgement and while it cannot (its /readyz says why).", ConstLabels: labels})
	m.info = prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "sharerelay_audit_info", Help: "1, with the pipeline's delivery guarantee: duplicates are expected of at-least-once.", ConstLabels: labels}, []string{"delivery"})
	m.checkpoints = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "sharerelay_audit_checkpoints_total", Help: "Checkpoints written, by result (ok, error).", ConstLabels: labels}, []string{"result"})
	m.judgedAt.Store(time.Now().UnixNano())
	lagSeconds := prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "sharerelay_audit_lag_seconds", Help: "Seconds since the fence of the newest judgement was taken: every record the share group had acknowledged by then is judged.", ConstLabels: labels},
		func() float64 { return time.Since(time.Unix(0, m.judgedAt.Load())).Seconds() })
	reg.MustRegister(m.unlabelled, m.lagRecords, m.ready, m.info, m.checkpoints, lagSeconds)
	for _, r := range []string{"ok", "error"} {
		m.checkpoints.WithLabelValues(r)
	}
	return m
}

// partition creates p's series, at 0 or at its checkpointed counts, so
// that an alert's increase() sees the first anomaly.
func (m *Metrics) partition(p *srcPart) {
	m.judgedDelta(p, audit.PartitionReport{})
	l := p.labels()
	m.late.WithLabelValues(l...).Add(float64(p.late))
	m.lagRecords.WithLabelValues(l...)
}

// judgedDelta adds what p's report counted since before.
func (m *Metrics) judgedDelta(p *srcPart, before audit.PartitionReport) {
	l := p.labels()
	r := &p.rep
	for _, d := range []struct {
		c    *prometheus.CounterVec
		n, b int
	}{
		{m.judged, r.Sources, before.Sources},
		{m.output, r.Output, before.Output},
		{m.deadLettered, r.DeadLettered, before.DeadLettered},
		{m.filtered, r.Filtered, before.Filtered},
		{m.lost, r.Lost, before.Lost},
		{m.duplicated, r.Duplicated, before.Duplicated},
		{m.both, r.Both, before.Both},
		{m.incomplete, r.Incomplete, before.Incomplete},
		{m.unexpected, r.Unexpected, before.Unexpected},
	} {
		d.c.WithLabelValues(l...).Add(float64(d.n - d.b))
	}
}

// judgedUpTo notes that every record acknowledged by t is judged.
func (m *Metrics) judgedUpTo(t time.Time) { m.judgedAt.Store(t.UnixNano()) }

func itoa(p int32) string   { return strconv.Itoa(int(p)) }
func i64toa(o int64) string { return strconv.FormatInt(o, 10) }
