package main

import (
	"bytes"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
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
	if code := run([]string{"audit", "--once", "--json", "--checkpoint-file", filepath.Join(t.TempDir(), "cp.json"), "--listen", "", cfg}, &out, &errb); code != exitOK {
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
