package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sharerelay/sharerelay/internal/kfaketest"
	"github.com/sharerelay/sharerelay/lineage"
)

// dlqCluster starts kfake with a dead-letter topic holding n dead letters
// of class fail (step bad-address) for orders[0]@0..n-1, and writes a
// pipeline file for it.
func dlqCluster(t *testing.T, n int) (cfg string) {
	t.Helper()
	c := kfaketest.Cluster(t, kfake.SeedTopics(1, "orders", "jobs", "jobs.dlq", "copies"))
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	for i := range n {
		hs := append(lineage.SetSource(nil, lineage.Source{Topic: "orders", Offset: int64(i)}),
			kgo.RecordHeader{Key: lineage.HeaderDLQErrorClass, Value: []byte("fail")},
			kgo.RecordHeader{Key: lineage.HeaderDLQStep, Value: []byte("bad-address")},
			kgo.RecordHeader{Key: lineage.HeaderDLQKind, Value: []byte("permanent")},
			kgo.RecordHeader{Key: lineage.HeaderDLQErrorMessage, Value: []byte("transform bad-address: bad address")})
		rec := &kgo.Record{Topic: "jobs.dlq", Key: fmt.Append(nil, i), Value: fmt.Appendf(nil, `{"order_id":%d}`, i), Headers: hs}
		if err := cl.ProduceSync(context.Background(), rec).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	cfg = filepath.Join(t.TempDir(), "p.yaml")
	y := fmt.Sprintf("name: p\nbrokers: [%q]\nsource: {topics: [orders]}\noutput: {topic: jobs}\ndead_letter: {topic: jobs.dlq}\n", c.ListenAddrs()[0])
	if err := os.WriteFile(cfg, []byte(y), 0o644); err != nil {
		t.Fatal(err)
	}
	return cfg
}

func TestDLQInspectPrintsCountsAndSamplesAsTextAndJSON(t *testing.T) {
	cfg := dlqCluster(t, 4)
	var out, errb bytes.Buffer
	if code := run([]string{"dlq", "inspect", "-c", cfg}, &out, &errb); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	for _, want := range []string{"read 4, selected 4", "fail", "bad-address", "orders[0]@3", "bad address"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("inspect output lacks %q:\n%s", want, out.String())
		}
	}
	out.Reset()
	if code := run([]string{"dlq", "inspect", "-c", cfg, "--json", "--offsets", "0:1-2"}, &out, &errb); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	var rep struct {
		Selected int
		ByClass  []struct{ Name string } `json:"by_class"`
	}
	if err := json.Unmarshal(out.Bytes(), &rep); err != nil || rep.Selected != 2 || len(rep.ByClass) != 1 || rep.ByClass[0].Name != "fail" {
		t.Fatalf("--json --offsets 0:1-2: %+v, %v\n%s", rep, err, out.String())
	}
}

func TestDLQReplayDryRunSaysWhatItWouldCopyAndWritesNothing(t *testing.T) {
	cfg := dlqCluster(t, 3)
	var out, errb bytes.Buffer
	if code := run([]string{"dlq", "replay", "-c", cfg, "--to", "copies", "--dry-run", "--class", "fail"}, &out, &errb); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	for _, want := range []string{"DRY RUN", "would replay 3", "copied unchanged to copies", "→ copies ×1"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("dry run output lacks %q:\n%s", want, out.String())
		}
	}
	if code := run([]string{"dlq", "replay", "-c", cfg, "--to", "jobs.dlq"}, &out, &errb); code == 0 || !strings.Contains(errb.String(), "dead-letter topic itself") {
		t.Fatalf("--to the dead-letter topic: exit %d, %s", code, errb.String())
	}
}

// relay dlq replay --to a topic that only the source cluster has fails
// with why: a replay writes to the sink cluster alone.
func TestDLQReplayAcrossClustersRefusesATopicOnlyTheSourceClusterHas(t *testing.T) {
	src := kfaketest.Cluster(t, kfake.SeedTopics(1, "orders", "orders.retry"))
	sink := kfaketest.Cluster(t, kfake.SeedTopics(1, "jobs", "jobs.dlq"))
	dir := writeFiles(t, map[string]string{"p.yaml": fmt.Sprintf("name: p\nbrokers: [%s]\n"+
		"source: {topics: [orders], cluster: {brokers: [%s]}}\noutput: {topic: jobs}\ndead_letter: {topic: jobs.dlq}\n",
		sink.ListenAddrs()[0], src.ListenAddrs()[0])})
	var out, errb bytes.Buffer
	code := run([]string{"dlq", "replay", "--to", "orders.retry", filepath.Join(dir, "p.yaml")}, &out, &errb)
	if code != exitFailed || !strings.Contains(errb.String(), "--to orders.retry exists on the source cluster only") {
		t.Fatalf("exit %d, want 1 and why\n%s%s", code, out.String(), errb.String())
	}
}

func TestDLQInspectDecodeShowsEachSamplesKeyAndValueAsJSON(t *testing.T) {
	cfg := dlqCluster(t, 2)
	var out, errb bytes.Buffer
	if code := run([]string{"dlq", "inspect", "--decode", "-c", cfg}, &out, &errb); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	for _, want := range []string{
		"decoded with the source's formats (value json, key string)\n",
		"0@1  key    \"1\"\n     value  {\"order_id\":1}\n",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("inspect --decode output lacks %q:\n%s", want, out.String())
		}
	}
	out.Reset()
	if code := run([]string{"dlq", "inspect", "--decode", "--json", "-c", cfg}, &out, &errb); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	var rep struct {
		Samples []struct {
			Key, Value struct{ JSON any }
		}
	}
	if err := json.Unmarshal(out.Bytes(), &rep); err != nil || len(rep.Samples) != 2 || rep.Samples[1].Key.JSON != "1" || fmt.Sprint(rep.Samples[1].Value.JSON) != "map[order_id:1]" {
		t.Fatalf("--decode --json: %+v, %v\n%s", rep, err, out.String())
	}
}
