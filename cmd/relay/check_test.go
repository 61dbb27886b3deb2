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

// relay check reaches source.cluster with its own client options: the
// source cluster holds the source topic, the sink cluster the topics the
// relay writes, and each line names the cluster it asked.
func TestCheckAsksTheSourceTopicOfTheSourceClusterAndTheOutputsOfTheSink(t *testing.T) {
	src := kfaketest.Cluster(t, kfake.ClusterID("source-id"), kfake.SeedTopics(3, "orders"))
	sink := kfaketest.Cluster(t, kfake.ClusterID("sink-id"), kfake.SeedTopics(3, "jobs", "dlq"))
	path := filepath.Join(t.TempDir(), "p.yaml")
	os.WriteFile(path, fmt.Appendf(nil, "name: p\nbrokers: [%s]\nsource: {cluster: {brokers: [%s]}, topics: [orders], group: g}\noutput: {topic: jobs}\ndead_letter: {topic: dlq}\n",
		sink.ListenAddrs()[0], src.ListenAddrs()[0]), 0o644)
	var out, errb bytes.Buffer
	code := run([]string{"check", "-c", path}, &out, &errb)
	if code != 0 || strings.Contains(out.String(), "FAIL") {
		t.Fatalf("check exit %d:\n%s%s\nwant exit 0, no FAIL", code, out.String(), errb.String())
	}
	for _, want := range []string{
		"ok: brokers (source cluster): 1 in the cluster, reached through " + src.ListenAddrs()[0],
		"ok: source topic orders (source cluster): 3 partitions",
		"ok: brokers (sink cluster): 1 in the cluster, reached through " + sink.ListenAddrs()[0],
		"ok: output topic jobs (sink cluster): 3 partitions",
		"ok: cluster ids: two clusters: the source cluster is source-id, the sink cluster sink-id",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("no line %q in:\n%s", want, out.String())
		}
	}
}
