package main

import (
	"bytes"
	"strings"
	"testing"
)

// The auditor's cost is the median CPU-seconds per million records and the
// largest peak RSS over its runs, printed beside the relay's of the same
// runs; a run whose auditor did not finish is left out, not counted as 0.
func TestTheAuditorsCostIsPrintedBesideTheRelays(t *testing.T) {
	runs := []runResult{
		{Run: 1, Workers: 2, RecPerSec: 30000, CPUMicrosPerRecord: 20, PeakRSSMB: 110,
			Audit: &auditRun{CPUSecondsPerMillion: 4, PeakRSSMB: 60, Judged: 1_000_000, CatchUpSeconds: 6}},
		{Run: 2, Workers: 2, RecPerSec: 20000, CPUMicrosPerRecord: 99, PeakRSSMB: 500}, // the auditor did not finish
		{Run: 3, Workers: 2, RecPerSec: 28000, CPUMicrosPerRecord: 22, PeakRSSMB: 120,
			Audit: &auditRun{CPUSecondsPerMillion: 5, PeakRSSMB: 64, Judged: 1_000_000, CatchUpSeconds: 4}},
		{Run: 4, Workers: 2, RecPerSec: 26000, CPUMicrosPerRecord: 24, PeakRSSMB: 115,
			Audit: &auditRun{CPUSecondsPerMillion: 7, PeakRSSMB: 58, Judged: 1_000_000, CatchUpSeconds: 5}},
	}
	s := summarizeAudit(runs)
	if s == nil || len(s.Runs) != 3 || s.CPUSecondsPerMillion != 5 || s.PeakRSSMB != 64 || s.CatchUpSeconds != 5 {
		t.Fatalf("summary %+v; want 3 runs, median 5 CPU-s/1M, peak 64 MB, catch-up 5 s", s)
	}
	if s.Relay.Median != 28000 || s.Relay.CPUMicrosPerRecord != 22 || s.Relay.PeakRSSMB != 120 {
		t.Fatalf("relay beside it %+v; want the same three runs: 28000 rec/s, 22 µs/rec, 120 MB", s.Relay)
	}
	var b bytes.Buffer
	printAudit(&b, 200, s)
	lines := strings.Split(strings.TrimSpace(b.String()), "\n")
	if len(lines) != 3 {
		t.Fatalf("printed:\n%s\nwant a title, a header and one row", b.String())
	}
	for _, want := range []string{"relay rec/s", "relay CPU s/1M", "relay peak RSS MB", "auditor CPU s/1M", "auditor peak MB", "auditor/relay", "catch-up s"} {
		if !strings.Contains(lines[1], want) {
			t.Errorf("header %q lacks %q", lines[1], want)
		}
	}
	if got := strings.Fields(lines[2]); strings.Join(got, " ") != "200 B 3 28000 22.00 120 5.00 64 0.23 5.0" {
		t.Errorf("row %q, want 200 B, 3 runs, the relay's 28000 rec/s 22.00 s/1M 120 MB, the auditor's 5.00 s/1M 64 MB, 0.23 of the relay's CPU, 5.0 s", lines[2])
	}

	runs[0].Audit.Lost = 2
	b.Reset()
	printAudit(&b, 200, summarizeAudit(runs))
	if !strings.Contains(b.String(), "WARNING: the auditor counted 2 lost and 0 duplicated of 1000000 records judged on a healthy run") {
		t.Errorf("a healthy run the auditor found loss in is not flagged:\n%s", b.String())
	}

	b.Reset()
	printAudit(&b, 200, summarizeAudit(runs[1:2]))
	if b.Len() != 0 || summarizeAudit(nil) != nil {
		t.Errorf("no auditor figures: printed %q, want nothing", b.String())
	}
}

func TestAuditRunsMustNotBeNegative(t *testing.T) {
	if _, err := parseFlags([]string{"-audit-runs", "-1"}); err == nil || !strings.Contains(err.Error(), "-audit-runs") {
		t.Fatalf("got %v, want an error naming -audit-runs", err)
	}
	o, err := parseFlags(nil)
	if err != nil || o.auditRuns != 1 {
		t.Fatalf("default -audit-runs %d (%v), want 1", o.auditRuns, err)
	}
}
