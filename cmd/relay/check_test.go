package main

import (
	"bytes"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/sharerelay/sharerelay/internal/kfaketest"
	"github.com/sharerelay/sharerelay/internal/srtest"
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

// relay check asks the pipeline's schema registry about the schema its
// output is written with, and fails, with what to do, while the relay
// could not write with it.
func TestCheckFailsAnOutputSchemaTheRegistryDoesNotHaveUnlessTheRelayRegistersIt(t *testing.T) {
	c := kfaketest.Cluster(t, kfake.SeedTopics(1, "orders", "jobs", "dlq"))
	reg := srtest.New()
	defer reg.Close()
	dir := writeFiles(t, map[string]string{
		"order.avsc": `{"type":"record","name":"Order","fields":[{"name":"id","type":"long"}]}`,
	})
	for _, tc := range []struct {
		auto string
		code int
		want string
	}{
		{"false", 1, "FAIL: output topic jobs value schema (schema registry " + reg.URL() + "): subject jobs-value does not exist: register order.avsc under it, or set output.value_schema.auto_register: true"},
		{"true", 0, "ok: output topic jobs value schema (schema registry " + reg.URL() + "): subject jobs-value does not exist yet: order.avsc will be registered under it at the first record (auto_register)"},
	} {
		path := filepath.Join(dir, "p.yaml")
		os.WriteFile(path, fmt.Appendf(nil, "name: p\nbrokers: [%s]\nschema_registry: {urls: [%s]}\nsource: {topics: [orders], group: g}\n"+
			"output: {topic: jobs, value_format: avro, value_schema: {file: order.avsc, auto_register: %s}}\ndead_letter: {topic: dlq}\n",
			c.ListenAddrs()[0], reg.URL(), tc.auto), 0o644)
		var out, errb bytes.Buffer
		code := run([]string{"check", "-c", path}, &out, &errb)
		if code != tc.code || !strings.Contains(out.String(), tc.want+"\n") || !strings.Contains(out.String(), "ok: schema registry "+reg.URL()+": reachable") {
			t.Errorf("auto_register %s: exit %d:\n%s%s\nwant exit %d, the registry reachable and the line %q", tc.auto, code, out.String(), errb.String(), tc.code, tc.want)
		}
	}
	// Asked, but nothing registered: relay check changes nothing.
	resp, err := http.Get(reg.URL() + "/subjects/jobs-value/versions/latest")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if reg.Requests.Load() == 0 || resp.StatusCode != http.StatusNotFound {
		t.Fatalf("the registry was asked %d times and answers %s for jobs-value: want asked, and the subject still missing", reg.Requests.Load(), resp.Status)
	}
}

// relay check --instances N sizes each instance of a planned fleet of N
// and judges the fleet's rules. On 3 partitions of 2,000 record locks
// (kfake's default, which the relay cannot raise there), 2 workers of
// relay-sized polls fit at 1, 4 and 16 instances; at 32 the smallest polls
// worth a transaction (100 records) hold more than the group can lock. A
// delivery limit that does not cover what one instance's crash can cost
// breaks the other rule, whatever the fleet's size.
func TestCheckInstancesSizesAPlannedFleetAndJudgesItsRules(t *testing.T) {
	c := kfaketest.Cluster(t, kfake.SeedTopics(3, "orders", "jobs", "dlq"),
		kfake.BrokerConfigs(map[string]string{"group.share.delivery.count.limit": "10"}))
	file := func(attempts int) string {
		path := filepath.Join(t.TempDir(), "p.yaml")
		os.WriteFile(path, fmt.Appendf(nil, "name: p\nbrokers: [%s]\nworkers: 2\nsource: {topics: [orders], group: g}\noutput: {topic: jobs}\ndead_letter: {topic: dlq, max_attempts: %d}\n",
			c.ListenAddrs()[0], attempts), 0o644)
		return path
	}
	holds, lowSpares := file(3), file(8)
	for _, tc := range []struct {
		path      string
		instances int
		want      []string
	}{
		{holds, 1, []string{"ok: poll size for 1 instance: 2 consumers × 1500 records", "ok: fleet of 1 instance: delivery-limit and lock-budget rules hold: 6000 records held at most (1 × 2 workers × 2 × 1500), of the group's 6000 record locks"}},
		{holds, 4, []string{"ok: poll size for 4 instances: 2 consumers × 375 records", "ok: fleet of 4 instances: delivery-limit and lock-budget rules hold: 6000 records held at most (4 × 2 workers × 2 × 375)"}},
		{holds, 16, []string{"ok: poll size for 16 instances: 1 consumer × 187 records", "ok: fleet of 16 instances: delivery-limit and lock-budget rules hold: 5984 records held at most (16 × 2 workers × 1 × 187)"}},
		{holds, 32, []string{"warn: poll size for 32 instances: record locks short", "warn: fleet of 32 instances: lock budget broken: 6400 records held at most (32 × 2 workers × 1 × 100), of the group's 6000 record locks"}},
		{lowSpares, 4, []string{"warn: fleet of 4 instances: delivery limit broken: ", "a crash of one instance can cost a record 4 deliveries (2 workers × 2 consumers), more than the 2 spares of delivery limit 10"}},
	} {
		t.Run(fmt.Sprint(tc.instances), func(t *testing.T) {
			var out, errb bytes.Buffer
			run([]string{"check", "-c", tc.path, "-instances", fmt.Sprint(tc.instances)}, &out, &errb)
			for _, want := range tc.want {
				if !strings.Contains(out.String(), want) {
					t.Errorf("no line with %q in:\n%s%s", want, out.String(), errb.String())
				}
			}
		})
	}
	var out, errb bytes.Buffer
	if code := run([]string{"check", "-c", holds, "-instances", "-1"}, &out, &errb); code != 2 || !strings.Contains(errb.String(), "-instances -1") {
		t.Fatalf("check -instances -1: exit %d, %q; want 2 naming the flag", code, errb.String())
	}
}
