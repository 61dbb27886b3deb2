package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// relay audit --once across two clusters judges what the group accepted
// and prints relay verify's table and verdict; --json the same as JSON.
func TestAuditOnceJudgesWhatTheGroupAcceptedAcrossClusters(t *testing.T) {
	cfg, _, _ := crossClusterPipeline(t, 3)
	var out, errb bytes.Buffer
	if code := run([]string{"audit", "--once", "--no-checkpoint", "--listen", "", "--interval", "100ms", "-c", cfg}, &out, &errb); code != exitOK {
		t.Fatalf("exit %d, want 0\n%s%s", code, out.String(), errb.String())
	}
	for _, want := range []string{"total       3       3", "verdict: EXACT"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("audit output lacks %q:\n%s", want, out.String())
		}
	}
	out.Reset()
	if code := run([]string{"audit", "--once", "--json", "--interval", "100ms", "--checkpoint-file", filepath.Join(t.TempDir(), "cp.json"), "--listen", "", cfg}, &out, &errb); code != exitOK {
		t.Fatalf("--json: exit %d, want 0\n%s", code, errb.String())
	}
	var rep struct {
		Total struct{ Sources, Lost int }
		Exact bool
	}
	if err := json.Unmarshal(out.Bytes(), &rep); err != nil || rep.Total.Sources != 3 || !rep.Exact {
		t.Fatalf("--json: %+v, %v\n%s", rep, err, out.String())
	}
}

// auditServing is the address of relay audit's "serving /metrics" line.
var auditServing = regexp.MustCompile(`msg="serving /metrics, /healthz, /readyz" .*addr=(\S+)`)

// relay audit runs until stopped: relay health asks its /readyz, its
// /metrics counts the judged records per source partition, and a stop
// (as SIGTERM) exits 0 with the checkpoint written.
func TestAuditServesItsMetricsAndReadinessAndStopsCleanly(t *testing.T) {
	cfg, _, _ := crossClusterPipeline(t, 3)
	cp := filepath.Join(t.TempDir(), "audit.json")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	log := &lockedBuffer{}
	done := make(chan int, 1)
	go func() {
		done <- runAudit(ctx, lookup(commands, "audit"), []string{"--listen", "127.0.0.1:0", "--interval", "100ms", "--checkpoint-file", cp, cfg}, io.Discard, log)
	}()
	log.waitFor(t, "serving /metrics")
	m := auditServing.FindStringSubmatch(log.String())
	if m == nil {
		t.Fatalf("no serving line:\n%s", log.String())
	}
	var out, errb bytes.Buffer
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		out.Reset()
		if run([]string{"health", "--addr", m[1]}, &out, &errb) == exitOK {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("relay health on the auditor still says %q after 20 s:\n%s", out.String(), log.String())
		}
	}
	resp, err := http.Get("http://" + m[1] + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		`sharerelay_audit_records_judged_total{partition="0",pipeline="p",topic="orders"} 3`,
		`sharerelay_audit_lost_total{partition="0",pipeline="p",topic="orders"} 0`,
		`sharerelay_audit_info{delivery="at-least-once",pipeline="p"} 1`,
		`sharerelay_audit_ready{pipeline="p"} 1`,
	} {
		if !strings.Contains(string(body), want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
	cancel()
	select {
	case code := <-done:
		if code != exitOK {
			t.Fatalf("exit %d after the stop, want 0:\n%s", code, log.String())
		}
	case <-time.After(20 * time.Second):
		t.Fatalf("relay audit did not stop within 20 s:\n%s", log.String())
	}
	if _, err := os.Stat(cp); err != nil || !strings.Contains(log.String(), "audit stopped") {
		t.Fatalf("after the stop: checkpoint %v; log:\n%s", err, log.String())
	}
}
