package dlq

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"go.uber.org/goleak"

	"github.com/sharerelay/sharerelay/audit"
	"github.com/sharerelay/sharerelay/config"
	"github.com/sharerelay/sharerelay/eos"
	"github.com/sharerelay/sharerelay/internal/failpoint"
	"github.com/sharerelay/sharerelay/internal/kfaketest"
	"github.com/sharerelay/sharerelay/lineage"
	"github.com/sharerelay/sharerelay/relay"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// The pipeline of these tests: every 10th order has a bad address (a
// permanent failure, step bad-address, class fail); a value that is not
// JSON fails the same step with class json.
const brokenChain = `
  - {type: fail, name: bad-address, kind: permanent, reason: bad address, when: {field: order_id, modulo: 10, remainder: 0}}
  - {type: set, field: status, value: packing}`

// fixedChain is the chain once the address rule is fixed.
const fixedChain = `
  - {type: set, field: status, value: packing}`

const (
	orders     = 100 // orders 1..100: 10 bad addresses
	notJSON    = 3   // then 3 values that are not JSON
	badAddress = orders / 10
)

func quiet() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// cluster starts kfake with the pipeline's topics and two replay targets.
func cluster(t *testing.T) *kfake.Cluster {
	t.Helper()
	return kfaketest.Cluster(t, kfake.SeedTopics(2, "orders", "jobs"), kfake.SeedTopics(1, "jobs.dlq", "replayed", "replayed.naive"))
}

func pipeline(t *testing.T, c *kfake.Cluster, chain string) *config.Pipeline {
	t.Helper()
	y := fmt.Sprintf(`
name: test
brokers: [%q]
workers: 2
source: {topics: [orders], group: g}
output: {topic: jobs}
dead_letter: {topic: jobs.dlq}
batch: {max_records: 20, poll_timeout: 200ms}
transforms: %s
`, c.ListenAddrs()[0], chain)
	p, err := config.Parse("test.yaml", []byte(y), func(string) (string, bool) { return "", false })
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func seeds(c *kfake.Cluster) []kgo.Opt { return []kgo.Opt{kgo.SeedBrokers(c.ListenAddrs()...)} }

// deadLetters runs the relay, exactly-once, on the broken pipeline until
// every order is in the output or the dead letters: 13 dead letters, 10
// of class fail, 3 of class json.
func deadLetters(t *testing.T, c *kfake.Cluster) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cl, err := kgo.NewClient(seeds(c)...)
	if err != nil {
		t.Fatal(err)
	}
	var recs []*kgo.Record
	for i := 1; i <= orders; i++ {
		recs = append(recs, &kgo.Record{Topic: "orders", Key: strconv.AppendInt(nil, int64(i), 10), Value: fmt.Appendf(nil, `{"order_id":%d}`, i)})
	}
	for i := range notJSON {
		recs = append(recs, &kgo.Record{Topic: "orders", Value: fmt.Appendf(nil, "garbage %d", i),
			Headers: []kgo.RecordHeader{{Key: "origin", Value: []byte("legacy")}}})
	}
	err = cl.ProduceSync(ctx, recs...).FirstErr()
	cl.Close()
	if err != nil {
		t.Fatal(err)
	}
	r, err := relay.New(relay.Options{Pipeline: pipeline(t, c, brokenChain), Instance: "t", Logger: quiet(),
		LedgerMarkers: eos.MarkersAtSameOrNextEpoch})
	if err != nil {
		t.Fatal(err)
	}
	rctx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- r.Run(rctx) }()
	for {
		jobs, err1 := audit.ReadCommitted(ctx, seeds(c), "jobs")
		dlq, err2 := audit.ReadCommitted(ctx, seeds(c), "jobs.dlq")
		if err1 == nil && err2 == nil && jobs.Records+dlq.Records >= orders+notJSON {
			if dlq.Records != badAddress+notJSON {
				t.Fatalf("the relay wrote %d dead letters, want %d", dlq.Records, badAddress+notJSON)
			}
			break
		}
		select {
		case err := <-done:
			t.Fatalf("relay stopped: %v", err)
		case <-ctx.Done():
			t.Fatalf("the relay did not finish: %v %v", err1, err2)
		case <-time.After(100 * time.Millisecond):
		}
	}
	stop()
	if err := <-done; err != nil {
		t.Fatalf("relay: %v", err)
	}
}

func replayOpts(t *testing.T, c *kfake.Cluster, chain string, o ReplayOptions) ReplayOptions {
	o.Pipeline = pipeline(t, c, chain)
	o.ClientOpts = seeds(c)
	o.LedgerMarkers = eos.MarkersAtSameOrNextEpoch
	o.Logger = quiet()
	if o.Job == "" {
		o.Job = "test"
	}
	return o
}

func replay(t *testing.T, o ReplayOptions) *ReplayReport {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	rep, err := Replay(ctx, o)
	if err != nil {
		t.Fatalf("replay: %v", err)
	}
	return rep
}

// tally reads topic and counts its records per source (the dead letters'
// coordinates, for a replay's records).
func tally(t *testing.T, c *kfake.Cluster, topic string) audit.Tally {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	tl, err := audit.ReadCommitted(ctx, seeds(c), topic)
	if err != nil {
		t.Fatal(err)
	}
	return tl
}

func header(r *kgo.Record, key string) string {
	for _, h := range r.Headers {
		if h.Key == key {
			return string(h.Value)
		}
	}
	return ""
}

// readAll returns topic's committed records.
func readAll(t *testing.T, c *kfake.Cluster, topic string) []*kgo.Record {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var out []*kgo.Record
	if _, err := read(ctx, seeds(c), topic, nil, func(_ *Snapshot, recs []*kgo.Record) error {
		out = append(out, recs...)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return out
}

func endOffsets(t *testing.T, c *kfake.Cluster, topics ...string) map[string]int64 {
	t.Helper()
	cl, err := kgo.NewClient(seeds(c)...)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ends, err := kadm.NewClient(cl).ListEndOffsets(context.Background(), topics...)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]int64{}
	ends.Each(func(o kadm.ListedOffset) { out[o.Topic] += o.Offset })
	return out
}

func TestInspectCountsTheRelaysDeadLettersByClassStepKindAndTime(t *testing.T) {
	c := cluster(t)
	deadLetters(t, c)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	rep, err := Inspect(ctx, InspectOptions{ClientOpts: seeds(c), Topic: "jobs.dlq", Samples: 20})
	if err != nil {
		t.Fatal(err)
	}
	want := func(what string, got []Count, w ...Count) {
		t.Helper()
		if fmt.Sprint(got) != fmt.Sprint(w) {
			t.Errorf("%s: %v, want %v", what, got, w)
		}
	}
	if rep.Read != 13 || rep.Selected != 13 || rep.CutDown != 0 {
		t.Errorf("read %d, selected %d, cut down %d; want 13, 13, 0", rep.Read, rep.Selected, rep.CutDown)
	}
	want("by class", rep.ByClass, Count{"fail", 10}, Count{"json", 3})
	want("by step", rep.ByStep, Count{"bad-address", 13})
	want("by kind", rep.ByKind, Count{"permanent", 13})
	if n := len(rep.ByTime); n < 1 || n > 2 || rep.ByTime[0].Start != rep.ByTime[0].Start.Truncate(time.Hour) {
		t.Errorf("by time: %v, want one or two hour buckets", rep.ByTime)
	}
	for _, s := range rep.Samples {
		if s.Source == "" || s.Reason == "" || s.Time.IsZero() {
			t.Errorf("sample %+v: want its source, reason and time", s)
		}
	}

	rep, err = Inspect(ctx, InspectOptions{ClientOpts: seeds(c), Topic: "jobs.dlq", Filter: Filter{Classes: []string{"json"}}})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Read != 13 || rep.Selected != 3 || len(rep.Samples) != 3 || rep.Samples[0].Class != "json" {
		t.Errorf("filtered by class json: read %d, selected %d, samples %v", rep.Read, rep.Selected, rep.Samples)
	}
}

// naive replaces the claim ledger's Guard by one that claims nothing: the
// same replay, without exactly-once.
func naive(eos.Guard) eos.Guard { return eos.AtLeastOnce{} }

// badAddresses selects the 10 dead letters of class fail.
var badAddresses = Filter{Classes: []string{"fail"}}

// copyTo replays the bad addresses to topic, 3 dead letters a transaction.
func copyTo(t *testing.T, c *kfake.Cluster, topic string, wrap func(eos.Guard) eos.Guard) ReplayOptions {
	return replayOpts(t, c, fixedChain, ReplayOptions{Filter: badAddresses, To: topic, ChunkSize: 3, WrapGuard: wrap})
}

// assertCopies checks topic's records: records in all, dup dead letters
// in it more than once.
func assertCopies(t *testing.T, c *kfake.Cluster, topic string, records, dup int) {
	t.Helper()
	tl := tally(t, c, topic)
	if tl.Records != records || len(tl.Duplicates()) != dup || len(tl.BySource) != badAddress {
		t.Fatalf("%s: %d records, %d distinct dead letters, %d more than once; want %d, %d, %d",
			topic, tl.Records, len(tl.BySource), len(tl.Duplicates()), records, badAddress, dup)
	}
}

// The duplicate first: a replay without claims — the same code, with a
// Guard that claims nothing — writes every dead letter again when it runs
// twice. With the claim ledger the second run finds them all replayed.
func TestAReplayRunTwiceDuplicatesWithoutClaimsAndNotWithThem(t *testing.T) {
	c := cluster(t)
	deadLetters(t, c)

	for _, run := range []string{"first", "second"} {
		if rep := replay(t, copyTo(t, c, "replayed.naive", naive)); rep.Replayed != badAddress {
			t.Fatalf("naive, %s run: replayed %d, want %d", run, rep.Replayed, badAddress)
		}
	}
	assertCopies(t, c, "replayed.naive", 2*badAddress, badAddress)
	t.Logf("without claims, run twice: %d copies of %d dead letters, %d duplicated", 2*badAddress, badAddress, badAddress)

	first := replay(t, copyTo(t, c, "replayed", nil))
	second := replay(t, copyTo(t, c, "replayed", nil))
	if first.Replayed != badAddress || second.Replayed != 0 || second.AlreadyReplayed != badAddress {
		t.Fatalf("with claims: first run replayed %d; second replayed %d, found %d already replayed; want %d, 0, %d",
			first.Replayed, second.Replayed, second.AlreadyReplayed, badAddress, badAddress)
	}
	assertCopies(t, c, "replayed", badAddress, 0)
}

// A replay killed after it committed some chunks, then run again: without
// claims the committed chunks are written twice; with them, the second
// run only writes the rest.
func TestAReplayKilledAfterACommitDuplicatesWithoutClaimsAndNotWithThem(t *testing.T) {
	c := cluster(t)
	deadLetters(t, c)
	killed := func(o ReplayOptions) {
		t.Helper()
		// The replay stops right after its second commit (6 dead
		// letters), as a process killed there would.
		if err := failpoint.Enable(failpoint.ReplayAfterCommit + "=error@2"); err != nil {
			t.Fatal(err)
		}
		defer failpoint.Disable()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		rep, err := Replay(ctx, o)
		if !errors.Is(err, failpoint.ErrInjected) || rep.Replayed != 6 {
			t.Fatalf("killed replay: %v, replayed %d; want the failpoint's error after 6", err, rep.Replayed)
		}
	}

	killed(copyTo(t, c, "replayed.naive", naive))
	if rep := replay(t, copyTo(t, c, "replayed.naive", naive)); rep.Replayed != badAddress {
		t.Fatalf("naive, run again: replayed %d, want %d", rep.Replayed, badAddress)
	}
	assertCopies(t, c, "replayed.naive", 16, 6)
	t.Logf("without claims, killed after 6 and run again: 16 copies of %d dead letters, 6 duplicated", badAddress)

	killed(copyTo(t, c, "replayed", nil))
	again := replay(t, copyTo(t, c, "replayed", nil))
	if again.Replayed != 4 || again.AlreadyReplayed != 6 {
		t.Fatalf("with claims, run again: replayed %d, already replayed %d; want 4 and 6", again.Replayed, again.AlreadyReplayed)
	}
	assertCopies(t, c, "replayed", badAddress, 0)
}

func TestAReplayThroughTheFixedChainWritesOutputsAndDeadLettersAgainOnce(t *testing.T) {
	c := cluster(t)
	deadLetters(t, c)
	ends := endOffsets(t, c, "jobs", "jobs.dlq")

	dry := replay(t, replayOpts(t, c, fixedChain, ReplayOptions{DryRun: true}))
	if after := endOffsets(t, c, "jobs", "jobs.dlq"); fmt.Sprint(after) != fmt.Sprint(ends) {
		t.Fatalf("a dry run wrote: end offsets %v, were %v", after, ends)
	}
	if dry.Selected != 13 || dry.Replayed != 13 || dry.Outputs != 10 || dry.DeadLettered != 3 || dry.AlreadyReplayed != 0 {
		t.Fatalf("dry run: %+v; want 13 selected, 13 would be replayed: 10 outputs, 3 dead-lettered again", dry)
	}

	rep := replay(t, replayOpts(t, c, fixedChain, ReplayOptions{ChunkSize: 4}))
	if rep.Replayed != 13 || rep.Outputs != 10 || rep.DeadLettered != 3 || rep.Transactions != 4 || fmt.Sprint(rep.ByTopic) != "[{jobs 10}]" {
		t.Fatalf("replay: %+v; want 13 replayed in 4 transactions: 10 outputs to jobs, 3 dead-lettered again", rep)
	}

	// The outputs name the dead letter as their source, and the order
	// it stood for.
	dls := map[int64]DeadLetter{}
	for _, r := range readAll(t, c, "jobs.dlq") {
		dls[r.Offset] = Parse(r)
	}
	var outs int
	for _, r := range readAll(t, c, "jobs") {
		src, _ := lineage.SourceOf(r)
		if src.Topic != "jobs.dlq" {
			continue
		}
		outs++
		of, job, ok := lineage.ReplayOf(r)
		if d := dls[src.Offset]; !ok || job != "test" || of != d.Source || d.Class != "fail" || of.Topic != "orders" ||
			header(r, lineage.HeaderDLQErrorClass) != "" || string(r.Value) != fmt.Sprintf(`{"order_id":%s,"status":"packing"}`, d.Record.Key) {
			t.Fatalf("output %s %v: replay of %+v (%v, job %q), dead letter %+v", r.Value, r.Headers, of, ok, job, d)
		}
	}
	if outs != 10 {
		t.Fatalf("%d outputs label a dead letter as their source, want 10", outs)
	}
	// The values that are not JSON failed again: dead-lettered again,
	// with the usual headers about the dead letter replayed, and the
	// original record's own headers.
	var again []DeadLetter
	for _, d := range dls {
		if d.Job == "test" {
			again = append(again, d)
			at, _ := lineage.SourceOf(d.Record)
			if orig := dls[at.Offset]; at.Topic != "jobs.dlq" || d.Class != "json" || d.Step != "0:set" ||
				d.Source != orig.Source || header(d.Record, lineage.HeaderDLQTopic) != "jobs.dlq" ||
				header(d.Record, lineage.HeaderDLQOffset) != strconv.FormatInt(at.Offset, 10) || header(d.Record, "origin") != "legacy" {
				t.Fatalf("dead letter again %+v (headers %v); the dead letter replayed %+v", d, d.Record.Headers, orig)
			}
		}
	}
	if len(again) != 3 {
		t.Fatalf("%d dead letters written again, want 3", len(again))
	}

	// Run again: everything is replayed, and the job's own dead letters
	// are not selected.
	rep = replay(t, replayOpts(t, c, fixedChain, ReplayOptions{}))
	if rep.Replayed != 0 || rep.AlreadyReplayed != 13 || rep.OwnJob != 3 || rep.Transactions != 0 {
		t.Fatalf("run again: %+v; want nothing replayed, 13 already replayed, the job's own 3 dead letters not selected", rep)
	}
	dry = replay(t, replayOpts(t, c, fixedChain, ReplayOptions{DryRun: true}))
	if dry.Replayed != 0 || dry.AlreadyReplayed != 13 {
		t.Fatalf("dry run after the replay: %+v; want 13 already replayed", dry)
	}

	// Another job may replay the dead letters of the first: their
	// replay headers still name the original records.
	rep = replay(t, replayOpts(t, c, fixedChain, ReplayOptions{Job: "second", Filter: Filter{Classes: []string{"json"}}}))
	if rep.Selected != 6 || rep.AlreadyReplayed != 3 || rep.Replayed != 3 || rep.DeadLettered != 3 {
		t.Fatalf("second job: %+v; want 6 selected (3 already replayed, 3 dead-lettered again)", rep)
	}
	for _, r := range readAll(t, c, "jobs.dlq") {
		if d := Parse(r); d.Job == "second" && d.Source.Topic != "orders" {
			t.Fatalf("a dead letter of a dead letter's replay names %+v, not the original order", d.Source)
		}
	}
}

func TestAnEmptyOrMissingLedgerMeansNothingWasReplayedYet(t *testing.T) {
	c := cluster(t)
	cl, _ := kgo.NewClient(seeds(c)...)
	defer cl.Close()
	hs := lineage.SetSource(nil, lineage.Source{Topic: "orders", Partition: 0, Offset: 7})
	hs = append(hs, kgo.RecordHeader{Key: lineage.HeaderDLQErrorClass, Value: []byte("fail")})
	if err := cl.ProduceSync(context.Background(), &kgo.Record{Topic: "jobs.dlq", Value: []byte(`{"order_id":7}`), Headers: hs}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	// An at-least-once pipeline never made its ledger: the dry run reads
	// none and creates none.
	dry := replay(t, replayOpts(t, c, fixedChain, ReplayOptions{DryRun: true}))
	if dry.Selected != 1 || dry.Replayed != 1 || dry.Samples[0].Source != "orders[0]@7" {
		t.Fatalf("dry run: %+v", dry)
	}
	adm := kadm.NewClient(cl)
	if td, _ := adm.ListTopics(context.Background()); td.Has("test.ledger") {
		t.Fatal("a dry run created the ledger")
	}
	// The replay itself creates it.
	if rep := replay(t, replayOpts(t, c, fixedChain, ReplayOptions{})); rep.Replayed != 1 || rep.Outputs != 1 {
		t.Fatalf("replay: %+v", rep)
	}
}

func TestTwoReplaysOfTheSameDeadLettersAtOnceWriteEachOnce(t *testing.T) {
	c := cluster(t)
	deadLetters(t, c)
	reps := make([]*ReplayReport, 2)
	errs := make([]error, 2)
	done := make(chan int)
	for i := range 2 {
		go func() {
			o := copyTo(t, c, "replayed", nil)
			o.Job, o.ChunkSize = fmt.Sprintf("job%d", i), 2
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			reps[i], errs[i] = Replay(ctx, o)
			done <- i
		}()
	}
	<-done
	<-done
	if errs[0] != nil || errs[1] != nil {
		t.Fatal(errs)
	}
	if n := reps[0].Replayed + reps[1].Replayed; n != badAddress {
		t.Fatalf("the replays replayed %d and %d (conflicts %d and %d), want %d in all",
			reps[0].Replayed, reps[1].Replayed, reps[0].Conflicts, reps[1].Conflicts, badAddress)
	}
	assertCopies(t, c, "replayed", badAddress, 0)
	t.Logf("replayed %d + %d; claim conflicts %d + %d", reps[0].Replayed, reps[1].Replayed, reps[0].Conflicts, reps[1].Conflicts)
}

// crossPipeline is the fixed pipeline reading orders on cluster src and
// writing jobs, jobs.dlq and its ledger on cluster sink.
func crossPipeline(t *testing.T, src, sink *kfake.Cluster) *config.Pipeline {
	t.Helper()
	y := fmt.Sprintf(`
name: test
brokers: [%q]
source: {topics: [orders], group: g, cluster: {brokers: [%q]}}
output: {topic: jobs}
dead_letter: {topic: jobs.dlq}
transforms: %s
`, sink.ListenAddrs()[0], src.ListenAddrs()[0], fixedChain)
	p, err := config.Parse("test.yaml", []byte(y), func(string) (string, bool) { return "", false })
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// With source.cluster a replay reads and writes the sink cluster only: a
// --to topic on both clusters gets the copy on the sink, and one that is
// on the source cluster alone is refused with why, since the copy commits
// in one transaction with the claim ledger on the sink.
func TestAReplayAcrossClustersWritesToTheSinkAndRefusesATopicOnlyTheSourceHas(t *testing.T) {
	src := kfaketest.Cluster(t, kfake.SeedTopics(1, "orders", "retry", "orders.retry"))
	sink := kfaketest.Cluster(t, kfake.SeedTopics(1, "jobs", "jobs.dlq", "retry"))
	cl, err := kgo.NewClient(seeds(sink)...)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	hs := lineage.SetSource(nil, lineage.Source{Topic: "orders", Offset: 7})
	hs = append(hs, kgo.RecordHeader{Key: lineage.HeaderDLQErrorClass, Value: []byte("fail")})
	if err := cl.ProduceSync(context.Background(), &kgo.Record{Topic: "jobs.dlq", Value: []byte(`{"order_id":7}`), Headers: hs}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	opts := func(to string) ReplayOptions {
		return ReplayOptions{Pipeline: crossPipeline(t, src, sink), ClientOpts: seeds(sink), SourceClientOpts: seeds(src),
			To: to, Job: "x", LedgerMarkers: eos.MarkersAtSameOrNextEpoch, Logger: quiet()}
	}

	if rep := replay(t, opts("retry")); rep.Replayed != 1 {
		t.Fatalf("replay to retry: %+v", rep)
	}
	if n, m := tally(t, sink, "retry").Records, tally(t, src, "retry").Records; n != 1 || m != 0 {
		t.Fatalf("retry holds %d copies on the sink cluster and %d on the source cluster, want 1 and 0", n, m)
	}
	for _, c := range []struct {
		cl   *kfake.Cluster
		want bool
	}{{sink, true}, {src, false}} {
		adm, err := kgo.NewClient(seeds(c.cl)...)
		if err != nil {
			t.Fatal(err)
		}
		td, err := kadm.NewClient(adm).ListTopics(context.Background())
		adm.Close()
		if err != nil || td.Has("test.ledger") != c.want {
			t.Fatalf("the claim ledger on %v: %v (%v), want it on the sink cluster only", c.cl.ListenAddrs(), td.Has("test.ledger"), err)
		}
	}

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, dry := range []bool{false, true} {
		o := opts("orders.retry")
		o.DryRun = dry
		_, err := Replay(ctx, o)
		if err == nil || !strings.Contains(err.Error(), "--to orders.retry exists on the source cluster only") ||
			!strings.Contains(err.Error(), "a replay writes only to the sink cluster") || !strings.Contains(err.Error(), "inside the claim ledger's transaction") {
			t.Fatalf("dry run %v: replay to a topic only the source cluster has: %v", dry, err)
		}
	}
	if n := tally(t, src, "orders.retry").Records; n != 0 {
		t.Fatalf("orders.retry on the source cluster holds %d records", n)
	}
	// A topic on neither cluster is just missing.
	if _, err := Replay(ctx, opts("nowhere")); err == nil || !strings.Contains(err.Error(), "do not exist") || strings.Contains(err.Error(), "source cluster") {
		t.Fatalf("replay to a topic on neither cluster: %v", err)
	}
}
