package integration

import (
	"context"
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sharerelay/sharerelay/integration/harness"
	"github.com/sharerelay/sharerelay/lineage"
)

// fanOutTransforms make 0, 1 or 2 lines of order i (i % 3), one record per
// line, and write every line of each fifth order twice (a copy to the
// same topic): fan-outs of 0, 1, 2 and 4 records per source record.
const fanOutTransforms = `
  - {type: set, name: lines, field: lines, expr: "[1, 2].filter(x, x <= int(value.order_id) % 3)"}
  - {type: split, name: one-per-line, field: lines, to: line}
  - {type: copy, name: twice, topics: ["OUTPUT"], when: {expr: "int(value.order_id) % 5 == 0"}}`

// fanOutWant is how many outputs order i must have.
func fanOutWant(i int) int {
	n := i % 3
	if i%5 == 0 {
		n *= 2
	}
	return n
}

// A pipeline that splits and copies records is verified exactly by relay
// verify across relay kills: every output carries its index among its
// source record's outputs, so a fan-out with an output written twice and
// one with an output missing are both caught, and a split of an empty
// array counts as filtered, not lost.
func TestRealBrokerFanOutIsVerifiedExactlyAcrossKills(t *testing.T) {
	seeds := seedsFor(t)
	const n = 3000
	// The copy step names the output topic, so the pipeline's name (which
	// the topics' names come from) is chosen here.
	name := fmt.Sprintf("fanout-%x", time.Now().UnixNano())
	ctx0, cancel0 := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel0()
	p, err := harness.NewPipeline(ctx0, harness.PipelineOptions{Name: name, Seeds: seeds, Dir: t.TempDir(), Workers: 2, MaxRecords: 40,
		Transforms: strings.ReplaceAll(fanOutTransforms, "OUTPUT", name+".jobs")})
	if err != nil {
		t.Fatal(err)
	}
	seedOrders(t, p, 1, n)
	want := 0
	for i := 1; i <= n; i++ {
		want += fanOutWant(i)
	}

	a := startRelay(t, p, "a")
	startRelay(t, p, "b")
	waitFor(t, p, 2*time.Minute, "some output", func(o outcome) bool { return o.Jobs.Records >= want/4 })
	_ = a.Signal(syscall.SIGKILL)
	if _, err := a.Wait(10 * time.Second); err != nil {
		t.Fatal(err)
	}
	startRelay(t, p, "a")
	waitFor(t, p, 3*time.Minute, fmt.Sprintf("%d outputs and lag 0", want), func(o outcome) bool {
		return o.Jobs.Records >= want && o.Lag == 0
	})
	waitNoOpenTxn(t, seeds, p.Output, p.DeadLetter)

	code, r := relayVerify(t, p)
	filtered := n / 3 // order_id % 3 == 0: no line
	if code != 0 || !r.Exact || r.OutputRecords != want || r.Total.Filtered != filtered || r.Total.Output != n-filtered ||
		r.Total.Duplicated != 0 || r.Total.Incomplete != 0 || r.Total.Lost != 0 {
		t.Fatalf("relay verify: exit %d, exact %v, %d output records (want %d), total %+v (want %d filtered, %d with output)",
			code, r.Exact, r.OutputRecords, want, r.Total, filtered, n-filtered)
	}
	t.Logf("relay verify exact after a SIGKILL: %d output records of %d source records, %d filtered (empty splits)", r.OutputRecords, n, r.Total.Filtered)

	// Read the outputs in order: the first part of one four-record
	// fan-out (all parts of a source record share its key, so its
	// partition, and follow each other there), and a part of another.
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.ConsumeTopics(p.Output),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	var first, other *kgo.Record
	seen := map[lineage.Source]bool{}
	for read := 0; read < want && other == nil && ctx.Err() == nil; {
		cl.PollFetches(ctx).EachRecord(func(rec *kgo.Record) {
			read++
			src, _ := lineage.SourceOf(rec)
			_, count, ok := lineage.IndexOf(rec)
			switch {
			case !ok || count != 4 || seen[src]:
			case first == nil:
				first = rec
			case other == nil && rec.Partition != first.Partition:
				other = rec
			}
			seen[src] = true
		})
	}
	if first == nil || other == nil {
		t.Fatalf("no two four-record fan-outs in two partitions found (%v, %v)", first, other)
	}
	adm := kadm.NewClient(cl)

	// One output of a fan-out missing (the partition cut just past it):
	// not exact, incomplete.
	del := kadm.Offsets{}
	del.Add(kadm.Offset{Topic: first.Topic, Partition: first.Partition, At: first.Offset + 1})
	if resp, err := adm.DeleteRecords(ctx, del); err != nil || resp.Error() != nil {
		t.Fatalf("deleting records of %s[%d] below %d: %v %v", first.Topic, first.Partition, first.Offset+1, err, resp.Error())
	}
	if code, r = relayVerify(t, p); code == 0 || r.Exact || r.Total.Incomplete == 0 || r.Total.Duplicated != 0 {
		t.Fatalf("after deleting one output of a fan-out: exit %d, exact %v, total %+v; want not exact, incomplete > 0, none duplicated", code, r.Exact, r.Total)
	}
	incomplete := r.Total.Incomplete

	// One output of another fan-out written twice: duplicated 1.
	dup := &kgo.Record{Topic: other.Topic, Partition: other.Partition, Key: other.Key, Value: other.Value, Headers: other.Headers}
	pr, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer pr.Close()
	if err := pr.ProduceSync(ctx, dup).FirstErr(); err != nil {
		t.Fatal(err)
	}
	if code, r = relayVerify(t, p); code == 0 || r.Exact || r.Total.Duplicated != 1 || r.Total.Incomplete != incomplete {
		t.Fatalf("after writing one output of a fan-out twice: exit %d, exact %v, total %+v; want not exact, 1 duplicated, %d incomplete", code, r.Exact, r.Total, incomplete)
	}
	t.Logf("relay verify caught the missing output (%d incomplete) and the duplicated one (1 duplicated)", incomplete)
}
