package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sharerelay/sharerelay/internal/kfaketest"
	"github.com/sharerelay/sharerelay/lineage"
	"github.com/sharerelay/sharerelay/sharegroup"
)

// crossClusterPipeline starts two kfake clusters — the source cluster
// with orders, the sink cluster with an output topic of the same name and
// jobs.dlq — and writes a pipeline file from one to the other. Share
// group g has taken and accepted n records of orders, each of which has
// its output on the sink cluster.
func crossClusterPipeline(t *testing.T, n int) (cfg string, src, sink *kfake.Cluster) {
	t.Helper()
	src = kfaketest.Cluster(t, kfake.SeedTopics(1, "orders"))
	sink = kfaketest.Cluster(t, kfake.SeedTopics(1, "orders", "jobs.dlq"))
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(src.ListenAddrs()...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	out, err := kgo.NewClient(kgo.SeedBrokers(sink.ListenAddrs()...))
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	if err := sharegroup.SetConfigs(ctx, cl, "g", map[string]string{sharegroup.AutoOffsetReset: "earliest"}); err != nil {
		t.Fatal(err)
	}
	for i := range n {
		r := &kgo.Record{Topic: "orders", Value: fmt.Appendf(nil, `{"order_id":%d}`, i)}
		if err := cl.ProduceSync(ctx, r).FirstErr(); err != nil {
			t.Fatal(err)
		}
		o := &kgo.Record{Topic: "orders", Headers: lineage.SetSource(nil, lineage.Source{Topic: "orders", Offset: r.Offset})}
		if err := out.ProduceSync(ctx, o).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	group, err := kgo.NewClient(kgo.SeedBrokers(src.ListenAddrs()...), kgo.ShareGroup("g"), kgo.ConsumeTopics("orders"))
	if err != nil {
		t.Fatal(err)
	}
	defer group.Close()
	for got := 0; got < n; {
		recs := group.PollRecords(ctx, n).Records()
		if ctx.Err() != nil {
			t.Fatalf("the share group took %d of %d records: %v", got, n, ctx.Err())
		}
		group.MarkAcks(kgo.AckAccept, recs...)
		got += len(recs)
	}
	if err := group.FlushAcks(ctx); err != nil {
		t.Fatal(err)
	}
	dir := writeFiles(t, map[string]string{"p.yaml": fmt.Sprintf("name: p\nbrokers: [%s]\ndelivery: at-least-once\n"+
		"source: {topics: [orders], group: g, cluster: {brokers: [%s]}}\noutput: {topic: orders}\ndead_letter: {topic: jobs.dlq}\n",
		sink.ListenAddrs()[0], src.ListenAddrs()[0])})
	return filepath.Join(dir, "p.yaml"), src, sink
}

// relay verify of a pipeline with source.cluster reads the sources and
// the group on the source cluster and the outputs on the sink cluster,
// and says so. Were the sources read on the sink cluster, its orders
// topic — the outputs, which have no share group there — would show lag.
func TestVerifyReadsEachSideOnItsOwnClusterAndSaysWhich(t *testing.T) {
	cfg, src, sink := crossClusterPipeline(t, 3)
	var out, errb bytes.Buffer
	if code := run([]string{"verify", cfg}, &out, &errb); code != exitOK {
		t.Fatalf("exit %d, want 0\n%s%s", code, out.String(), errb.String())
	}
	for _, want := range []string{
		"read from two clusters: sources and share group on the source cluster " + src.ListenAddrs()[0] +
			", outputs, dead letters and ledger on the sink cluster " + sink.ListenAddrs()[0],
		"verdict: EXACT",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("verify output lacks %q:\n%s", want, out.String())
		}
	}
	out.Reset()
	if code := run([]string{"verify", "--json", cfg}, &out, &errb); code != exitOK {
		t.Fatalf("--json: exit %d, want 0\n%s", code, errb.String())
	}
	var rep struct {
		Total    struct{ Sources, Lag int }
		Clusters struct{ Source, Sink string }
	}
	if err := json.Unmarshal(out.Bytes(), &rep); err != nil || rep.Total.Sources != 3 || rep.Total.Lag != 0 ||
		rep.Clusters.Source != src.ListenAddrs()[0] || rep.Clusters.Sink != sink.ListenAddrs()[0] {
		t.Fatalf("--json: %+v, %v\n%s", rep, err, out.String())
	}
}

// Without source.cluster the report says nothing of clusters.
func TestVerifyOnOneClusterNamesNoCluster(t *testing.T) {
	var out, errb bytes.Buffer
	run([]string{"verify", seededPipeline(t)}, &out, &errb)
	if !strings.Contains(out.String(), "verdict:") || strings.Contains(out.String(), "two clusters") {
		t.Fatalf("verify output:\n%s%s", out.String(), errb.String())
	}
}
