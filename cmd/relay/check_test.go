package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/sharerelay/sharerelay/internal/kfaketest"
)

func TestCheckPassesAPipelineItsClusterCanRun(t *testing.T) {
	c := kfaketest.Cluster(t, kfake.SeedTopics(3, "orders", "jobs", "dlq"))
	path := filepath.Join(t.TempDir(), "p.yaml")
	os.WriteFile(path, fmt.Appendf(nil, "name: p\nbrokers: [%s]\nsource: {topics: [orders], group: g}\noutput: {topic: jobs}\ndead_letter: {topic: dlq}\n",
		c.ListenAddrs()[0]), 0o644)
	var out, errb bytes.Buffer
	code := run([]string{"check", "-c", path}, &out, &errb)
	if code != 0 || !strings.HasPrefix(out.String(), "ok: brokers: ") || strings.Contains(out.String(), "FAIL") {
		t.Fatalf("check exit %d:\n%s%s\nwant exit 0, ok: brokers first, no FAIL", code, out.String(), errb.String())
	}
	for _, want := range []string{"ok: source topic orders: 3 partitions", "ok: ledger topic p.ledger: does not exist yet", "ok: transactional ids sharerelay-p-*: WRITE allowed"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("no line %q in:\n%s", want, out.String())
		}
	}
}

func TestCheckFailsAMissingTopicAndNeedsAFile(t *testing.T) {
	c := kfaketest.Cluster(t, kfake.SeedTopics(1, "orders", "jobs"))
	path := filepath.Join(t.TempDir(), "p.yaml")
	os.WriteFile(path, fmt.Appendf(nil, "name: p\nbrokers: [%s]\nsource: {topics: [orders], group: g}\noutput: {topic: jobs}\ndead_letter: {topic: dlq}\n",
		c.ListenAddrs()[0]), 0o644)
	var out, errb bytes.Buffer
	if code := run([]string{"check", "-c", path}, &out, &errb); code != 1 || !strings.Contains(out.String(), "FAIL: dead-letter topic dlq: does not exist (create it first)") {
		t.Fatalf("check exit %d:\n%s\nwant exit 1 and the dead-letter topic named", code, out.String())
	}
	if code := run([]string{"check"}, &out, &errb); code != 2 {
		t.Fatalf("check without -c: exit %d, want 2", code)
	}
}
