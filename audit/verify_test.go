package audit

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sharerelay/sharerelay/lineage"
)

func TestVerifyFindsLostDuplicatedBothAndUnexpectedRecords(t *testing.T) {
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, "src", "out", "dlq"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	opts := []kgo.Opt{kgo.SeedBrokers(c.ListenAddrs()...), kgo.DefaultProduceTopic("src")}
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	// Source offsets 0..9.
	for i := 0; i < 10; i++ {
		if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte(strconv.Itoa(i))}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	out := func(topic string, off int64) *kgo.Record {
		return &kgo.Record{Topic: topic, Headers: lineage.SetSource(nil, lineage.Source{Topic: "src", Partition: 0, Offset: off})}
	}
	// 0..5 once; 6 twice (duplicate); 7 in output and dead letters (both);
	// 8 dead-lettered only; 9 nowhere (lost); 42 does not exist (unexpected).
	var recs []*kgo.Record
	for o := int64(0); o <= 5; o++ {
		recs = append(recs, out("out", o))
	}
	recs = append(recs, out("out", 6), out("out", 6), out("out", 7), out("dlq", 7), out("dlq", 8), out("out", 42))
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	r, err := Verify(ctx, VerifyConfig{ClientOpts: opts[:1], Sources: []string{"src"}, SourceCommitted: true, Outputs: []string{"out"}, DeadLetter: "dlq"})
	if err != nil {
		t.Fatal(err)
	}
	got := r.Total
	if got.Sources != 10 || got.Lost != 1 || got.Duplicated != 1 || got.Both != 1 || got.Unexpected != 1 || got.DeadLettered != 2 || r.Exact {
		t.Fatalf("report %+v exact=%v; want 10 sources, 1 lost, 1 duplicated, 1 both, 1 unexpected, 2 dead-lettered, not exact", got, r.Exact)
	}
	if len(r.Partitions) != 1 || len(r.Partitions[0].LostSample) != 1 || r.Partitions[0].LostSample[0] != 9 {
		t.Fatalf("lost sample %v, want [9]", r.Partitions[0].LostSample)
	}

	// With a filtering pipeline the record without output is filtered.
	r, err = Verify(ctx, VerifyConfig{ClientOpts: opts[:1], Sources: []string{"src"}, SourceCommitted: true, Outputs: []string{"out"}, DeadLetter: "dlq", AtMostOnce: true})
	if err != nil {
		t.Fatal(err)
	}
	if r.Total.Lost != 0 || r.Total.Filtered != 1 {
		t.Fatalf("at-most-once report %+v; want 0 lost, 1 filtered", r.Total)
	}
}

func TestVerifyCallsAnExactPipelineExact(t *testing.T) {
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(2, "src", "out"), kfake.SeedTopics(1, "dlq"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	opts := []kgo.Opt{kgo.SeedBrokers(c.ListenAddrs()...)}
	cl, _ := kgo.NewClient(opts...)
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var recs []*kgo.Record
	for i := 0; i < 100; i++ {
		recs = append(recs, &kgo.Record{Topic: "src", Key: []byte(strconv.Itoa(i))})
	}
	res := cl.ProduceSync(ctx, recs...)
	if err := res.FirstErr(); err != nil {
		t.Fatal(err)
	}
	var outs []*kgo.Record
	for _, pr := range res {
		topic := "out"
		if pr.Record.Partition == 1 && pr.Record.Offset%10 == 0 {
			topic = "dlq"
		}
		outs = append(outs, &kgo.Record{Topic: topic, Headers: lineage.SetSource(nil, lineage.Source{Topic: "src", Partition: pr.Record.Partition, Offset: pr.Record.Offset})})
	}
	if err := cl.ProduceSync(ctx, outs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	r, err := Verify(ctx, VerifyConfig{ClientOpts: opts, Sources: []string{"src"}, SourceCommitted: true, Outputs: []string{"out"}, DeadLetter: "dlq"})
	if err != nil {
		t.Fatal(err)
	}
	if !r.Exact || r.Total.Sources != 100 || len(r.Partitions) != 2 {
		t.Fatalf("report %+v exact=%v, want exact over 100 sources in 2 partitions", r.Total, r.Exact)
	}
}

// A fan-out is checked exactly: each of its outputs names its index and
// the count; a missing output and a duplicated one are both caught, even
// together with the same count.
func TestVerifyChecksFanOutsExactly(t *testing.T) {
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, "src", "out", "dlq"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	opts := []kgo.Opt{kgo.SeedBrokers(c.ListenAddrs()...), kgo.DefaultProduceTopic("src")}
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for i := 0; i < 5; i++ {
		if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte(strconv.Itoa(i))}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	out := func(off int64, index, count int) *kgo.Record {
		return &kgo.Record{Topic: "out", Headers: lineage.Label(nil, lineage.Source{Topic: "src", Partition: 0, Offset: off}, index, count)}
	}
	recs := []*kgo.Record{
		out(0, 0, 3), out(0, 1, 3), out(0, 2, 3), // complete
		out(1, 0, 3), out(1, 2, 3), // index 1 missing: incomplete
		out(2, 0, 3), out(2, 0, 3), out(2, 1, 3), // index 0 twice, 2 missing: duplicated
		out(3, 0, 1),                                           // a single output
		out(4, 0, 3), out(4, 1, 3), out(4, 2, 3), out(4, 2, 3), // one too many: duplicated
	}
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	r, err := Verify(ctx, VerifyConfig{ClientOpts: opts[:1], Sources: []string{"src"}, SourceCommitted: true, Outputs: []string{"out"}, DeadLetter: "dlq"})
	if err != nil {
		t.Fatal(err)
	}
	got := r.Total
	if got.Sources != 5 || got.Output != 5 || got.Lost != 0 || got.Incomplete != 1 || got.Duplicated != 2 || r.Exact {
		t.Fatalf("report %+v exact=%v; want 5 sources with output, 1 incomplete (offset 1), 2 duplicated (offsets 2, 4)", got, r.Exact)
	}
	if p := r.Partitions[0]; len(p.IncompleteSample) != 1 || p.IncompleteSample[0] != 1 || len(p.DuplicatedSample) != 2 {
		t.Fatalf("samples: incomplete %v, duplicated %v", p.IncompleteSample, p.DuplicatedSample)
	}
}

// Records a replay of dead letters wrote name a dead letter as their
// source: they are counted per dead letter, and a dead letter replayed
// twice makes the pipeline not exact.
func TestVerifyCountsReplaysOfDeadLettersAndFindsOneReplayedTwice(t *testing.T) {
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, "src", "out", "dlq"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	opts := []kgo.Opt{kgo.SeedBrokers(c.ListenAddrs()...)}
	cl, _ := kgo.NewClient(opts...)
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	from := func(topic, srcTopic string, off int64) *kgo.Record {
		return &kgo.Record{Topic: topic, Headers: lineage.SetSource(nil, lineage.Source{Topic: srcTopic, Offset: off})}
	}
	// Sources 0..2 are dead-lettered (dlq offsets 0..2); the replay sends
	// dead letter 0 to the output, dead-letters 2 again (dlq offset 3).
	recs := []*kgo.Record{{Topic: "src"}, {Topic: "src"}, {Topic: "src"},
		from("dlq", "src", 0), from("dlq", "src", 1), from("dlq", "src", 2),
		from("out", "dlq", 0), from("dlq", "dlq", 2)}
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	cfg := VerifyConfig{ClientOpts: opts, Sources: []string{"src"}, SourceCommitted: true, Outputs: []string{"out"}, DeadLetter: "dlq"}
	r, err := Verify(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if rr := r.Replays; !r.Exact || rr == nil || rr.DeadLetters != 2 || rr.Output != 1 || rr.DeadLettered != 1 || rr.Duplicated != 0 || r.Total.Unexpected != 0 {
		t.Fatalf("report %+v, replays %+v, exact %v; want exact, 2 dead letters replayed: 1 to the output, 1 dead-lettered again", r.Total, rr, r.Exact)
	}
	// A second replay of dead letter 0.
	if err := cl.ProduceSync(ctx, from("out", "dlq", 0)).FirstErr(); err != nil {
		t.Fatal(err)
	}
	if r, err = Verify(ctx, cfg); err != nil {
		t.Fatal(err)
	}
	if rr := r.Replays; r.Exact || rr.Duplicated != 1 || len(rr.DuplicatedSample) != 1 || rr.DuplicatedSample[0] != "dlq[0]@0" {
		t.Fatalf("replays %+v, exact %v; want dlq[0]@0 duplicated, not exact", rr, r.Exact)
	}
}
