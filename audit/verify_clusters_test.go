package audit

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sharerelay/sharerelay/internal/kfaketest"
	"github.com/sharerelay/sharerelay/lineage"
	"github.com/sharerelay/sharerelay/sharegroup"
)

func seedsOf(c *kfake.Cluster) []kgo.Opt { return []kgo.Opt{kgo.SeedBrokers(c.ListenAddrs()...)} }

// produce writes recs to c, each to its Partition, and returns them with
// their offsets, in the order they were written.
func produce(ctx context.Context, t *testing.T, c *kfake.Cluster, recs ...*kgo.Record) []*kgo.Record {
	t.Helper()
	cl, err := kgo.NewClient(append(seedsOf(c), kgo.RecordPartitioner(kgo.ManualPartitioner()))...)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	res := cl.ProduceSync(ctx, recs...)
	if err := res.FirstErr(); err != nil {
		t.Fatal(err)
	}
	out := make([]*kgo.Record, len(res))
	for i, pr := range res {
		out[i] = pr.Record
	}
	return out
}

// finishGroup has share group g on c accept n records of topic: its lag
// there is then what was not consumed.
func finishGroup(ctx context.Context, t *testing.T, c *kfake.Cluster, g, topic string, n int) {
	t.Helper()
	cfg, err := kgo.NewClient(seedsOf(c)...)
	if err != nil {
		t.Fatal(err)
	}
	err = sharegroup.SetConfigs(ctx, cfg, g, map[string]string{sharegroup.AutoOffsetReset: "earliest"})
	cfg.Close()
	if err != nil {
		t.Fatal(err)
	}
	cl, err := kgo.NewClient(append(seedsOf(c), kgo.ShareGroup(g), kgo.ConsumeTopics(topic))...)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	for got := 0; got < n; {
		fs := cl.PollRecords(ctx, n)
		if ctx.Err() != nil {
			t.Fatalf("the share group took %d of %d records: %v", got, n, ctx.Err())
		}
		recs := fs.Records()
		cl.MarkAcks(kgo.AckAccept, recs...)
		got += len(recs)
	}
	if err := cl.FlushAcks(ctx); err != nil {
		t.Fatal(err)
	}
}

// outputOf is an output (or dead letter) in topic of source record src.
func outputOf(topic string, src *kgo.Record) *kgo.Record {
	return &kgo.Record{Topic: topic, Headers: lineage.SetSource(nil, lineage.Source{Topic: src.Topic, Partition: src.Partition, Offset: src.Offset})}
}

// A pipeline with source.cluster: the sources and the share group on
// cluster A, the outputs, dead letters and claim ledger on cluster B. The
// output topic on B carries the source's name, so that reading the
// sources on the wrong cluster cannot pass unseen.
func TestVerifyAcrossClustersReadsTheSourceOnOneAndTheOutputsOnTheOther(t *testing.T) {
	a := kfaketest.Cluster(t, kfake.SeedTopics(2, "orders"))
	b := kfaketest.Cluster(t, kfake.SeedTopics(2, "orders"), kfake.SeedTopics(1, "orders.dlq", "ledger"))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	var recs []*kgo.Record
	for i := range 10 {
		recs = append(recs, &kgo.Record{Topic: "orders", Partition: int32(i % 2), Key: fmt.Append(nil, i)})
	}
	srcs := produce(ctx, t, a, recs...)
	finishGroup(ctx, t, a, "g", "orders", len(srcs))
	// 9 to the output, the last one to the dead letters; two claims.
	var outs []*kgo.Record
	for _, s := range srcs[:9] {
		outs = append(outs, outputOf("orders", s))
	}
	outs = append(outs, outputOf("orders.dlq", srcs[9]),
		&kgo.Record{Topic: "ledger", Value: []byte(`{"gen":0,"topic":"orders","partition":0,"txn_id":"t","ranges":[{"f":0,"l":0}]}`)},
		&kgo.Record{Topic: "ledger", Value: []byte(`{"gen":0,"topic":"orders","partition":1,"txn_id":"t","ranges":[{"f":0,"l":0}]}`)})
	produce(ctx, t, b, outs...)

	cfg := VerifyConfig{
		ClientOpts: seedsOf(b), SourceClientOpts: seedsOf(a),
		Clusters: &Clusters{Source: a.ListenAddrs()[0], Sink: b.ListenAddrs()[0]},
		Sources:  []string{"orders"}, SourceCommitted: true, Outputs: []string{"orders"}, DeadLetter: "orders.dlq",
		Group: "g", Ledger: "ledger",
	}
	r, err := Verify(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if tot := r.Total; !r.Exact || tot.Sources != 10 || tot.Output != 9 || tot.DeadLettered != 1 || tot.Lag != 0 || len(r.Partitions) != 2 {
		t.Fatalf("report %+v exact=%v; want exact: 10 sources in 2 partitions, 9 output, 1 dead-lettered, lag 0", tot, r.Exact)
	}
	if r.Ledger == nil || r.Ledger.Claims != 2 {
		t.Fatalf("ledger report %+v, want the 2 claims of cluster B's ledger", r.Ledger)
	}
	if r.Clusters == nil || r.Clusters.Source != a.ListenAddrs()[0] || r.Clusters.Sink != b.ListenAddrs()[0] {
		t.Fatalf("report clusters %+v, want source %s, sink %s", r.Clusters, a.ListenAddrs()[0], b.ListenAddrs()[0])
	}

	// The same audit without the source's options reads B's "orders" —
	// the outputs — as the sources, and B has no such group: not exact.
	one := cfg
	one.SourceClientOpts, one.Clusters = nil, nil
	if r, err := Verify(ctx, one); err != nil {
		t.Fatal(err)
	} else if r.Exact || r.Total.Sources != 9 || r.Total.Lag == 0 {
		t.Fatalf("with the sink's options for the source: report %+v exact=%v; want the 9 outputs taken for sources, lag, not exact", r.Total, r.Exact)
	}

	// A loss and a duplicate across the clusters: two more sources the
	// group finishes, one without an output, one with two.
	more := produce(ctx, t, a, &kgo.Record{Topic: "orders", Partition: 0}, &kgo.Record{Topic: "orders", Partition: 0})
	finishGroup(ctx, t, a, "g", "orders", 2)
	produce(ctx, t, b, outputOf("orders", more[1]), outputOf("orders", more[1]))
	r, err = Verify(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if tot := r.Total; r.Exact || tot.Sources != 12 || tot.Lost != 1 || tot.Duplicated != 1 || tot.Lag != 0 {
		t.Fatalf("report %+v exact=%v; want 12 sources, 1 lost, 1 duplicated, lag 0, not exact", tot, r.Exact)
	}
	var p0 PartitionReport
	for _, p := range r.Partitions {
		if p.Partition == 0 {
			p0 = p
		}
	}
	if len(p0.LostSample) != 1 || p0.LostSample[0] != more[0].Offset || len(p0.DuplicatedSample) != 1 || p0.DuplicatedSample[0] != more[1].Offset {
		t.Fatalf("samples of orders[0]: lost %v, duplicated %v; want [%d], [%d]", p0.LostSample, p0.DuplicatedSample, more[0].Offset, more[1].Offset)
	}
}

// An error reaching one side of a pipeline on two clusters names that
// side's cluster.
func TestVerifyAcrossClustersNamesTheClusterAnErrorCameFrom(t *testing.T) {
	a := kfaketest.Cluster(t, kfake.SeedTopics(1, "orders"))
	b := kfaketest.Cluster(t, kfake.SeedTopics(1, "jobs", "jobs.dlq"))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cfg := VerifyConfig{
		ClientOpts: seedsOf(b), SourceClientOpts: seedsOf(a), Clusters: &Clusters{Source: "a", Sink: "b"},
		Sources: []string{"orders"}, SourceCommitted: true, Outputs: []string{"jobs"}, DeadLetter: "jobs.dlq",
	}
	for _, tc := range []struct {
		name string
		edit func(*VerifyConfig)
		want string
	}{
		{"a source topic missing on the source cluster", func(c *VerifyConfig) { c.Sources = []string{"jobs"} }, "source cluster: "},
		{"an output topic missing on the sink cluster", func(c *VerifyConfig) { c.Outputs = []string{"orders"} }, "sink cluster: "},
		{"the ledger missing on the sink cluster", func(c *VerifyConfig) { c.Ledger = "ledger" }, "sink cluster: "},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := cfg
			tc.edit(&c)
			_, err := Verify(ctx, c)
			if err == nil || !strings.HasPrefix(err.Error(), tc.want) {
				t.Fatalf("error %v, want one starting %q", err, tc.want)
			}
		})
	}
}

// Across clusters the dead-letter topic may carry a source topic's name:
// a replay's record naming dead letter orders[0]@0 is a replay, not a
// second output of source record orders[0]@0.
func TestVerifyAcrossClustersTellsReplaysFromSourcesOfTheDeadLetterTopicsName(t *testing.T) {
	a := kfaketest.Cluster(t, kfake.SeedTopics(1, "orders"))
	b := kfaketest.Cluster(t, kfake.SeedTopics(1, "jobs", "orders"))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	srcs := produce(ctx, t, a, &kgo.Record{Topic: "orders"}, &kgo.Record{Topic: "orders"})
	// Source 0 to the output, source 1 dead-lettered (dead letter
	// orders[0]@0 on B), then replayed to the output.
	produce(ctx, t, b, outputOf("jobs", srcs[0]))
	letter := produce(ctx, t, b, outputOf("orders", srcs[1]))[0]
	replayed := outputOf("jobs", letter)
	replayed.Headers = lineage.SetReplay(replayed.Headers, lineage.Source{Topic: "orders", Offset: srcs[1].Offset}, "job")
	produce(ctx, t, b, replayed)

	r, err := Verify(ctx, VerifyConfig{
		ClientOpts: seedsOf(b), SourceClientOpts: seedsOf(a), Clusters: &Clusters{Source: "a", Sink: "b"},
		Sources: []string{"orders"}, SourceCommitted: true, Outputs: []string{"jobs"}, DeadLetter: "orders",
	})
	if err != nil {
		t.Fatal(err)
	}
	if rr := r.Replays; !r.Exact || r.Total.Duplicated != 0 || rr == nil || rr.DeadLetters != 1 || rr.Output != 1 {
		t.Fatalf("report %+v, replays %+v, exact %v; want exact, 1 dead letter replayed to the output", r.Total, rr, r.Exact)
	}
}
