package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sharerelay/sharerelay/audit"
	"github.com/sharerelay/sharerelay/config"
	"github.com/sharerelay/sharerelay/eos"
	"github.com/sharerelay/sharerelay/internal/kfaketest"
	"github.com/sharerelay/sharerelay/lineage"
	"github.com/sharerelay/sharerelay/relay"
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

// The relay runs across two clusters — share group on one, outputs, dead
// letters and claim ledger on the other — with every tenth order
// dead-lettered; relay verify calls the result exact, and again after
// relay dlq replay sent the dead letters through the fixed chain.
func TestVerifyAfterTheRelayAndAReplayAcrossClustersIsExact(t *testing.T) {
	src := kfaketest.Cluster(t, kfake.ClusterID("regional"), kfake.SeedTopics(2, "orders"))
	sink := kfaketest.Cluster(t, kfake.ClusterID("central"), kfake.SeedTopics(2, "orders"), kfake.SeedTopics(1, "orders.dlq"))
	const n, bad = 60, 6
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(src.ListenAddrs()...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	var recs []*kgo.Record
	for i := 1; i <= n; i++ {
		recs = append(recs, &kgo.Record{Topic: "orders", Key: fmt.Append(nil, i), Value: fmt.Appendf(nil, `{"order_id":%d}`, i)})
	}
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	file := func(chain string) string {
		return fmt.Sprintf("name: p\nbrokers: [%s]\nworkers: 1\n"+
			"source: {topics: [orders], group: g, cluster: {brokers: [%s]}}\n"+
			"output: {topic: orders, transaction_timeout: 5s}\ndead_letter: {topic: orders.dlq}\n"+
			"batch: {max_records: 20, poll_timeout: 200ms}\ntransforms:%s\n", sink.ListenAddrs()[0], src.ListenAddrs()[0], chain)
	}
	dir := writeFiles(t, map[string]string{
		"broken.yaml": file("\n  - {type: fail, name: bad-address, kind: permanent, reason: bad address, when: {field: order_id, modulo: 10, remainder: 0}}\n  - {type: set, field: status, value: packing}"),
		"fixed.yaml":  file("\n  - {type: set, field: status, value: packing}"),
	})
	broken, fixed := filepath.Join(dir, "broken.yaml"), filepath.Join(dir, "fixed.yaml")

	p, err := config.Load(broken)
	if err != nil {
		t.Fatal(err)
	}
	r, err := relay.New(relay.Options{Pipeline: p, Instance: "t", Registerer: prometheus.NewRegistry(),
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), LedgerMarkers: eos.MarkersAtSameOrNextEpoch})
	if err != nil {
		t.Fatal(err)
	}
	rctx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- r.Run(rctx) }()
	// Until every order is written and the group has accepted it.
	sinkOpts, srcAdm := []kgo.Opt{kgo.SeedBrokers(sink.ListenAddrs()...)}, kadm.NewClient(cl)
	for {
		out, err1 := audit.ReadCommitted(ctx, sinkOpts, "orders", "orders.dlq")
		lag, err2 := audit.ShareGroupLag(ctx, srcAdm, "g", "orders")
		if err1 == nil && err2 == nil && out.Records >= n && audit.TotalLag(lag) == 0 {
			break
		}
		select {
		case err := <-done:
			t.Fatalf("the relay stopped: %v", err)
		case <-ctx.Done():
			t.Fatalf("the relay did not finish: %d records, lag %v (%v, %v)", out.Records, lag, err1, err2)
		case <-time.After(100 * time.Millisecond):
		}
	}
	stop()
	if err := <-done; err != nil {
		t.Fatalf("relay: %v", err)
	}

	// The totals row: records, output, dead-lettered, lost.
	total := regexp.MustCompile(fmt.Sprintf(`total +%d +%d +%d +0 `, n, n-bad, bad))
	verify := func(wants ...string) {
		t.Helper()
		var out, errb bytes.Buffer
		if code := run([]string{"verify", broken}, &out, &errb); code != exitOK {
			t.Fatalf("verify: exit %d, want 0\n%s%s", code, out.String(), errb.String())
		}
		if !total.MatchString(out.String()) {
			t.Fatalf("verify output lacks the totals %s:\n%s", total, out.String())
		}
		for _, want := range append(wants, "claim ledger: ", "read from two clusters", "verdict: EXACT") {
			if !strings.Contains(out.String(), want) {
				t.Fatalf("verify output lacks %q:\n%s", want, out.String())
			}
		}
	}
	verify()

	var out, errb bytes.Buffer
	if code := run([]string{"dlq", "replay", fixed}, &out, &errb); code != exitOK || !strings.Contains(out.String(), fmt.Sprintf("replayed %d: %d outputs", bad, bad)) {
		t.Fatalf("dlq replay: exit %d\n%s%s", code, out.String(), errb.String())
	}
	verify(fmt.Sprintf("replayed dead letters (relay dlq replay): %d: %d to the output", bad, bad))
}
