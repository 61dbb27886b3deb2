package main

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strconv"
	"syscall"
	"time"

	"github.com/sharerelay/sharerelay/integration/harness"
	"github.com/sharerelay/sharerelay/integration/kafkatest"
)

// The live auditor's cost (-audit-runs). relay-eos runs once more as its
// own process with `relay audit` beside it, as an operator runs the two:
// the auditor tails the source, the outputs, the dead letters and the
// ledger while the relay works, and judges each record once the share
// group has finished it. Its CPU (user+system, from its start until it has
// judged every record) over the records, in seconds per million records
// (the same number as µs a record), and its peak resident set size are
// printed beside the relay's of the same run. The run is apart from
// relay-eos-bin's: on two cores the auditor takes CPU from the relay, and
// relay-eos-bin's figures are what the relay costs alone.

// relayEOSAudit is relay-eos run as its own process with the live auditor
// beside it.
var relayEOSAudit = func() contender {
	c := relayEOS.asProcess()
	c.name += "+audit"
	c.slug = "relay-eos-bin-audit"
	c.audit = true
	return c
}()

// auditCatchUpTimeout bounds the wait, once the relay has acknowledged
// every record, for the auditor to have judged them all: a fence interval
// or two and the reading of the last outputs.
const auditCatchUpTimeout = 2 * time.Minute

// auditRun is what one run of the auditor cost.
type auditRun struct {
	// CPUSeconds is the auditor process's CPU, user+system, from its
	// start until it had judged every record; CPUSecondsPerMillion is it
	// over the records, per million (equal to µs a record).
	CPUSeconds           float64 `json:"cpu_seconds"`
	CPUSecondsPerMillion float64 `json:"cpu_seconds_per_1m_records"`
	// PeakRSSMB is the auditor process's peak resident set size.
	PeakRSSMB float64 `json:"peak_rss_mb"`
	// Judged is the records it judged; Lost and Duplicated what it found
	// (0 on a healthy run).
	Judged     int64 `json:"judged"`
	Lost       int64 `json:"lost"`
	Duplicated int64 `json:"duplicated"`
	// CatchUpSeconds is how long after the relay's last acknowledgement
	// it had judged every record.
	CatchUpSeconds float64 `json:"catch_up_seconds"`
}

// auditSummary is the live auditor's cost on one size: the medians over
// its runs, beside the relay's of the same runs.
type auditSummary struct {
	Runs []auditRun `json:"runs"`
	// CPUSecondsPerMillion and PeakRSSMB are the auditor's: the median
	// and the largest over the runs.
	CPUSecondsPerMillion float64 `json:"cpu_seconds_per_1m_records"`
	PeakRSSMB            float64 `json:"peak_rss_mb"`
	CatchUpSeconds       float64 `json:"catch_up_seconds"`
	// Relay is relay-eos run as its own process beside it, over the
	// same runs (its CPU a record is its CPU-seconds per million).
	Relay contenderResult `json:"relay"`
}

// summarizeAudit sums up the runs of relay-eos with the auditor beside
// it that have the auditor's figures (a run whose auditor did not finish
// has none); nil when none has.
func summarizeAudit(runs []runResult) *auditSummary {
	runs = slices.DeleteFunc(slices.Clone(runs), func(r runResult) bool { return r.Audit == nil })
	if len(runs) == 0 {
		return nil
	}
	s := &auditSummary{Relay: summarize(relayEOSAudit.name, runs)}
	var cpu, catchUp []float64
	for _, r := range runs {
		s.Runs = append(s.Runs, *r.Audit)
		cpu, catchUp = append(cpu, r.Audit.CPUSecondsPerMillion), append(catchUp, r.Audit.CatchUpSeconds)
		s.PeakRSSMB = max(s.PeakRSSMB, r.Audit.PeakRSSMB)
	}
	slices.Sort(cpu)
	slices.Sort(catchUp)
	s.CPUSecondsPerMillion, s.CatchUpSeconds = median(cpu), median(catchUp)
	return s
}

// printAudit prints the auditor's cost beside the relay's, for size.
func printAudit(w io.Writer, size int, s *auditSummary) {
	if s == nil {
		return
	}
	fmt.Fprintf(w, "the live auditor beside the relay (relay audit and relay run, each its own process; CPU-seconds per 1M records = µs/rec):\n")
	fmt.Fprintf(w, "%-7s %4s %12s %17s %18s %17s %16s %14s %11s\n", "size", "runs", "relay rec/s", "relay CPU s/1M", "relay peak RSS MB", "auditor CPU s/1M", "auditor peak MB", "auditor/relay", "catch-up s")
	fmt.Fprintf(w, "%-7s %4d %12.0f %17.2f %18.0f %17.2f %16.0f %14.2f %11.1f\n",
		fmt.Sprintf("%d B", size), len(s.Runs), s.Relay.Median, s.Relay.CPUMicrosPerRecord, s.Relay.PeakRSSMB,
		s.CPUSecondsPerMillion, s.PeakRSSMB, ratio(s.CPUSecondsPerMillion, s.Relay.CPUMicrosPerRecord), s.CatchUpSeconds)
	for _, r := range s.Runs {
		if r.Lost > 0 || r.Duplicated > 0 {
			fmt.Fprintf(w, "WARNING: the auditor counted %d lost and %d duplicated of %d records judged on a healthy run\n", r.Lost, r.Duplicated, r.Judged)
		}
	}
	printWarnings(w, s.Relay)
}

// runAudits runs relay-eos as its own process with the auditor beside it
// -audit-runs times over the size's source topic src, into sr.
func (b *bench) runAudits(ctx context.Context, sr *sizeResult, src string, created *[]string) error {
	var runs []runResult
	for run := 1; run <= b.opts.auditRuns; run++ {
		progress("%d B values, %s: the relay and the live auditor, each its own process, run %d of %d", sr.Size, relayEOSAudit.name, run, b.opts.auditRuns)
		t := trial{c: relayEOSAudit, size: sr.Size, run: run, source: src, n: b.opts.records,
			name: b.name(fmt.Sprintf("%dB", sr.Size), fmt.Sprintf("r%d", run), relayEOSAudit.id())}
		rr, err := b.runTrial(ctx, t, created)
		if err != nil {
			return err
		}
		runs = append(runs, rr)
	}
	sr.Audit = summarizeAudit(runs)
	return nil
}

// liveAuditor is a relay audit process beside a relay process.
type liveAuditor struct {
	p     *harness.Proc
	addr  string
	start time.Time
}

// startAuditor starts `relay audit` on the pipeline file path, its
// metrics on a free port and its log in dir.
func (b *bench) startAuditor(path, dir string) (*liveAuditor, error) {
	port, err := kafkatest.FreePort()
	if err != nil {
		return nil, err
	}
	a := &liveAuditor{addr: "127.0.0.1:" + strconv.Itoa(port), start: time.Now()}
	c := harness.AuditCommand(b.opts.relayBin, path, a.addr)
	c.LogPath = filepath.Join(dir, "audit.log")
	if a.p, err = harness.Start(c); err != nil {
		return nil, err
	}
	return a, nil
}

// finish waits until the auditor has judged all n records (relayDone is
// when the relay acknowledged the last), reads its CPU and peak RSS, and
// stops it with SIGTERM. On an error it kills it, and the error holds its
// log's tail.
func (a *liveAuditor) finish(ctx context.Context, n int, relayDone time.Time) (run auditRun, err error) {
	defer func() {
		if err != nil {
			a.p.Kill()
			err = fmt.Errorf("the live auditor: %w; its log ends:\n%s", err, a.p.LogTail(2000))
		}
	}()
	wctx, cancel := context.WithTimeout(ctx, auditCatchUpTimeout)
	c, err := harness.WaitAudit(wctx, a.addr, func(c harness.AuditCounters) bool { return c.Judged >= int64(n) && c.LagRecords == 0 })
	cancel()
	if err != nil {
		return run, err
	}
	run.CatchUpSeconds = max(0, time.Since(relayDone).Seconds())
	// Read before the shutdown: the cost of judging, not of stopping.
	cpu, peak := procCPU(a.p.Pid()), processPeakRSSMB(a.p.Pid())
	run.CPUSeconds, run.CPUSecondsPerMillion, run.PeakRSSMB = cpu.Seconds(), cpuMicrosPerRecord(cpu.Seconds(), n), peak
	run.Judged, run.Lost, run.Duplicated = c.Judged, c.Lost, c.Duplicated
	_ = a.p.Signal(syscall.SIGTERM) // it has exited already if this fails
	code, werr := a.p.Wait(processStopTimeout)
	if werr == nil && code != 0 {
		werr = fmt.Errorf("exit status %d after SIGTERM", code)
	}
	return run, werr
}

// stop kills the auditor, for a run that failed before it was judged.
func (a *liveAuditor) stop() {
	if a != nil {
		a.p.Kill()
	}
}
