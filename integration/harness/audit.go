package harness

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// The live auditor's metrics the tests read (docs/operations.md, "Live
// audit"). Each counter is summed over its labels (pipeline, source
// partition, delivery).
const (
	AuditJudged       = "sharerelay_audit_records_judged_total"
	AuditLost         = "sharerelay_audit_lost_total"
	AuditDuplicated   = "sharerelay_audit_duplicated_total"
	AuditIncomplete   = "sharerelay_audit_incomplete_total"
	AuditUnexpected   = "sharerelay_audit_unexpected_total"
	AuditDeadLettered = "sharerelay_audit_dead_lettered_total"
	AuditFiltered     = "sharerelay_audit_filtered_total"
	AuditLagRecords   = "sharerelay_audit_lag_records"
	AuditReady        = "sharerelay_audit_ready"
)

// AuditCommand returns the command that runs the live auditor of the
// pipeline file config with the relay binary bin (`relay audit -c config
// --listen listen`), its metrics on listen, named "relay audit". The
// caller sets its LogPath and, if needed, its Env before Start.
func AuditCommand(bin, config, listen string) Command {
	return Command{
		Name: "relay audit",
		Path: bin,
		Args: []string{"audit", "-c", config, "--listen", listen, "--log-level", "info"},
	}
}

// AuditCounters are the live auditor's counters as its /metrics shows
// them, each summed over the source partitions.
type AuditCounters struct {
	Judged, Lost, Duplicated, Incomplete, Unexpected, DeadLettered, Filtered int64
	// LagRecords is the source records not judged yet.
	LagRecords int64
	// Ready is sharerelay_audit_ready: the auditor reads every topic
	// it judges.
	Ready bool
}

// String is the counters in one line, as a report shows them.
func (c AuditCounters) String() string {
	return fmt.Sprintf("judged %d lost %d dup %d incomplete %d unexpected %d dead-lettered %d filtered %d lag %d",
		c.Judged, c.Lost, c.Duplicated, c.Incomplete, c.Unexpected, c.DeadLettered, c.Filtered, c.LagRecords)
}

// ParseAuditMetrics reads the auditor's counters from the Prometheus text
// format. A metric that is not there counts 0: a counter with no label
// values yet has no sample.
func ParseAuditMetrics(r io.Reader) (AuditCounters, error) {
	var c AuditCounters
	fields := map[string]*int64{
		AuditJudged: &c.Judged, AuditLost: &c.Lost, AuditDuplicated: &c.Duplicated,
		AuditIncomplete: &c.Incomplete, AuditUnexpected: &c.Unexpected,
		AuditDeadLettered: &c.DeadLettered, AuditFiltered: &c.Filtered, AuditLagRecords: &c.LagRecords,
	}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, "sharerelay_audit_") {
			continue
		}
		name, _, _ := strings.Cut(line, "{")
		name, _, _ = strings.Cut(name, " ")
		sp := strings.LastIndexByte(line, ' ')
		v, err := strconv.ParseFloat(line[sp+1:], 64)
		if err != nil {
			return c, fmt.Errorf("reading the auditor's metrics: %q: %w", line, err)
		}
		if f, ok := fields[name]; ok {
			*f += int64(v)
		} else if name == AuditReady {
			c.Ready = v == 1
		}
	}
	if err := sc.Err(); err != nil {
		return c, fmt.Errorf("reading the auditor's metrics: %w", err)
	}
	return c, nil
}

// ScrapeAudit reads the auditor's counters from http://addr/metrics.
func ScrapeAudit(ctx context.Context, addr string) (AuditCounters, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+"/metrics", nil)
	if err != nil {
		return AuditCounters{}, fmt.Errorf("scraping the auditor: %w", err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return AuditCounters{}, fmt.Errorf("scraping the auditor: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return AuditCounters{}, fmt.Errorf("scraping the auditor: %s", resp.Status)
	}
	return ParseAuditMetrics(resp.Body)
}

// WaitAudit scrapes the auditor on addr every 100 ms until cond holds and
// returns the counters that met it; when ctx ends first it returns the
// last counters read with an error saying so (and the last scrape's
// error, if the auditor did not answer).
func WaitAudit(ctx context.Context, addr string, cond func(AuditCounters) bool) (AuditCounters, error) {
	var (
		last    AuditCounters
		lastErr error
	)
	for {
		sctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		c, err := ScrapeAudit(sctx, addr)
		cancel()
		if err == nil {
			last = c
			if cond(c) {
				return c, nil
			}
		}
		lastErr = err
		select {
		case <-ctx.Done():
			if lastErr != nil {
				return last, fmt.Errorf("waiting for the auditor on %s: %w (last scrape: %v; counters %v)", addr, ctx.Err(), lastErr, last)
			}
			return last, fmt.Errorf("waiting for the auditor on %s: %w (counters %v)", addr, ctx.Err(), last)
		case <-time.After(100 * time.Millisecond):
		}
	}
}
