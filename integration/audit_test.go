package integration

import (
	"context"
	"fmt"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sharerelay/sharerelay/audit"
	"github.com/sharerelay/sharerelay/integration/harness"
	"github.com/sharerelay/sharerelay/internal/failpoint"
)

// The live auditor (relay audit) against the anomalies the relay cannot
// cause and the chaos suite never meets: a committed transaction's output
// aborted by an operator, records skipped by a reset of the share group's
// start offset, a record written twice by hand. Each must show up in the
// auditor's counters within auditReportBound of the anomaly, as relay
// verify sees it afterwards, while the auditor writes nothing to the
// pipeline's topics and moves nothing in its share group.

// auditFenceInterval is the auditor's fence interval in these tests
// (--interval; the default is 5 s, which the chaos suite runs): how often
// it reads the share group's start offsets and then the outputs' high
// watermarks, below which it judges the records the group has finished.
const auditFenceInterval = 2 * time.Second

// auditReportBound is how long after an anomaly the auditor must count
// it: the next fence (at most one interval away; one more should the
// fence's read of the start offsets just miss the anomaly), the fence
// after it, whose settling judges the first's records, then the reading
// up to those fences' high watermarks and the scrape, a few seconds at
// most on these few records.
const auditReportBound = 3*auditFenceInterval + 5*time.Second

// liveAudit is a relay audit process on a test pipeline.
type liveAudit struct {
	pr   *harness.Proc
	addr string
}

// startAudit starts the live auditor on p and waits until it is ready. It
// is killed when the test ends, and its log shown if the test failed.
func startAudit(t *testing.T, p *harness.Pipeline) *liveAudit {
	t.Helper()
	a := &liveAudit{addr: metricsAddr(t)}
	c := harness.AuditCommand(relayBin, p.Path, a.addr)
	c.Args = append(c.Args, "--interval", auditFenceInterval.String())
	c.LogPath = filepath.Join(t.TempDir(), "audit.log")
	pr, err := harness.Start(c)
	if err != nil {
		t.Fatal(err)
	}
	a.pr = pr
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("---- log of relay audit (tail) ----\n%s", pr.LogTail(20000))
		}
		pr.Kill()
	})
	a.wait(t, "ready", 30*time.Second, func(c harness.AuditCounters) bool { return c.Ready })
	return a
}

// wait scrapes the auditor until cond holds, and fails the test when d
// passes first.
func (a *liveAudit) wait(t *testing.T, what string, d time.Duration, cond func(harness.AuditCounters) bool) harness.AuditCounters {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	c, err := harness.WaitAudit(ctx, a.addr, cond)
	if err != nil {
		t.Fatalf("live auditor: %s not within %s: %v", what, d, err)
	}
	return c
}

// counters scrapes the auditor once.
func (a *liveAudit) counters(t *testing.T) harness.AuditCounters {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	c, err := harness.ScrapeAudit(ctx, a.addr)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// reported waits until the auditor reports the anomaly made at since
// (cond), fails the test unless it does within auditReportBound, and
// returns the counters and the time it took.
func (a *liveAudit) reported(t *testing.T, what string, since time.Time, cond func(harness.AuditCounters) bool) (harness.AuditCounters, time.Duration) {
	t.Helper()
	c := a.wait(t, what+" reported", time.Until(since.Add(auditReportBound)), cond)
	took := time.Since(since)
	t.Logf("live auditor reported %s %s after the anomaly (bound %s): %v", what, took.Round(10*time.Millisecond), auditReportBound, c)
	return c, took
}

// stop ends the auditor with SIGTERM: it must write its checkpoint and
// exit 0.
func (a *liveAudit) stop(t *testing.T) {
	t.Helper()
	if err := a.pr.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if code, err := a.pr.Wait(30 * time.Second); err != nil || code != 0 {
		t.Fatalf("relay audit: exit %d (%v) after SIGTERM, want 0", code, err)
	}
}

// pipelineState describes what the auditor must leave alone: the end
// offset of every partition of the pipeline's topics (source, output,
// dead letters, claim ledger and its snapshots) and the share group's
// start offsets. Two equal descriptions taken around the auditor's
// judgement show it wrote nothing there and moved nothing.
func pipelineState(t *testing.T, p *harness.Pipeline) string {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(p.Seeds...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	topics := []string{p.Source, p.Output, p.DeadLetter, p.Ledger, p.Ledger + ".snapshots"}
	ends, err := adm.ListEndOffsets(ctx, topics...)
	if err == nil {
		err = ends.Error()
	}
	if err != nil {
		t.Fatalf("end offsets of %v: %v", topics, err)
	}
	var parts []string
	ends.Each(func(o kadm.ListedOffset) {
		parts = append(parts, fmt.Sprintf("%s[%d] end %d", o.Topic, o.Partition, o.Offset))
	})
	desc, err := adm.DescribeShareGroupOffsets(ctx, p.Group)
	if err == nil {
		err = desc[p.Group].Err
	}
	if err != nil {
		t.Fatalf("share group %s offsets: %v", p.Group, err)
	}
	for topic, ps := range desc[p.Group].Offsets {
		for part, o := range ps {
			parts = append(parts, fmt.Sprintf("group %s[%d] start %d", topic, part, o.StartOffset))
		}
	}
	sort.Strings(parts)
	return strings.Join(parts, "; ")
}

// leftAlone fails the test unless the pipeline's state is still before:
// the auditor judged in between and changed nothing.
func leftAlone(t *testing.T, p *harness.Pipeline, before string) {
	t.Helper()
	if after := pipelineState(t, p); after != before {
		t.Fatalf("the pipeline changed while only the auditor ran:\nbefore: %s\nafter:  %s", before, after)
	}
}

// stopRelay ends a relay with SIGTERM and waits for its clean exit.
func stopRelay(t *testing.T, r *harness.Proc) {
	t.Helper()
	if err := r.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if code, err := r.Wait(30 * time.Second); err != nil || code != 0 {
		t.Fatalf("%s: exit %d (%v) after SIGTERM, want 0", r.Name(), code, err)
	}
}

// agreesWithVerify fails the test unless relay verify, run once the
// auditor has judged every record, counts what the auditor counted.
func agreesWithVerify(t *testing.T, p *harness.Pipeline, c harness.AuditCounters) audit.Report {
	t.Helper()
	_, rep := relayVerify(t, p)
	tot := rep.Total
	if c.Judged != int64(tot.Sources) || c.Lost != int64(tot.Lost) || c.Duplicated != int64(tot.Duplicated) ||
		c.Incomplete != int64(tot.Incomplete) || c.Unexpected != int64(tot.Unexpected) || c.DeadLettered != int64(tot.DeadLettered) {
		t.Fatalf("the live auditor counted %v; relay verify: %+v", c, tot)
	}
	return rep
}

// A transaction of the relay is aborted by hand while it waits to commit
// (an operator taking the open transaction that holds the outputs' last
// stable offset for a hanging one, and aborting it as kafka-transactions.sh
// abort does: markers written to its output partitions). The coordinator,
// which knows nothing of it, then commits the transaction, and the relay
// accepts its records: their outputs are gone. While the transaction is
// open the auditor must judge nothing (no false loss); once the records
// are accepted it must count each of them lost, within the bound.
func TestRealBrokerAuditReportsTheRecordsOfATransactionAbortedByHand(t *testing.T) {
	p := newPipe(t, seedsFor(t), harness.PipelineOptions{Partitions: 1, Workers: 1, TxnTimeout: 30 * time.Second})
	a := startAudit(t, p)
	// The first transaction waits 4 s once its outputs and claims are
	// written: the window the operator aborts it in.
	r := startRelay(t, p, "r1", failpoint.EnvVar+"="+failpoint.BeforeCommit+"=sleep(4s)@1")
	seedOrders(t, p, 1, 10)
	waitLog(t, r, regexp.MustCompile("failpoint "+failpoint.BeforeCommit+": sleeping"), 30*time.Second)
	abortOpenByHand(t, p)
	seedOrders(t, p, 11, 20) // later transactions commit as usual
	if c := a.counters(t); c.Lost != 0 {
		t.Fatalf("the auditor counted records lost before the relay accepted them: %v", c)
	}
	waitLag(t, p, 0, 30*time.Second)
	accepted := time.Now() // within the lag poll's 300 ms of the acceptance
	stopRelay(t, r)
	before := pipelineState(t, p)

	a.reported(t, "the aborted outputs' records lost", accepted, func(c harness.AuditCounters) bool { return c.Lost > 0 })
	c := a.wait(t, "every record judged", auditReportBound, func(c harness.AuditCounters) bool { return c.Judged == 20 && c.LagRecords == 0 })
	time.Sleep(auditFenceInterval) // one more fence: nothing cleared, nothing written
	if again := a.counters(t); again != c {
		t.Fatalf("the auditor's counters moved with nothing new to judge: %v, then %v", c, again)
	}
	leftAlone(t, p, before)

	want := abortedSources(t, p)
	if c.Lost != int64(want) || want == 0 || c.Duplicated != 0 {
		t.Fatalf("the auditor counted %v; the hand-aborted transaction held the only outputs of %d records", c, want)
	}
	agreesWithVerify(t, p, c)
	a.stop(t)
}

// abortOpenByHand aborts every transaction open on p's output, as an
// operator does with kafka-transactions.sh abort: an ABORT marker written
// to each partition it holds open, at the epoch the coordinator would
// write it with (harness.CompleteHanging), behind the coordinator's back.
func abortOpenByHand(t *testing.T, p *harness.Pipeline) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(p.Seeds...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ts := kadm.TopicsSet{}
	ts.Add(p.Output)
	dp, err := adm.DescribeProducers(ctx, ts)
	if err != nil {
		t.Fatal(err)
	}
	var open []harness.HangingTxn
	for _, s := range dp.SortedProducers() {
		if s.CurrentTxnStartOffset >= 0 {
			open = append(open, harness.HangingTxn{Topic: s.Topic, Partition: s.Partition, ProducerID: s.ProducerID, Epoch: s.ProducerEpoch,
				CoordinatorEpoch: s.CoordinatorEpoch, Since: s.CurrentTxnStartOffset, Verdict: "ABORT", Why: "aborted by hand"})
		}
	}
	if len(open) == 0 {
		t.Fatalf("no transaction open on %s while the relay waits to commit", p.Output)
	}
	if err := harness.CompleteHanging(ctx, adm, open); err != nil {
		t.Fatal(err)
	}
	t.Logf("aborted by hand: %v", open)
}

// abortedSources counts the source records whose outputs were all
// aborted: written (read_uncommitted) but never committed.
func abortedSources(t *testing.T, p *harness.Pipeline) int {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	opts := []kgo.Opt{kgo.SeedBrokers(p.Seeds...)}
	all, err := audit.ReadUncommitted(ctx, opts, p.Output)
	if err != nil {
		t.Fatal(err)
	}
	committed, err := audit.ReadCommitted(ctx, opts, p.Output)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for src := range all.BySource {
		if committed.BySource[src] == 0 {
			n++
		}
	}
	return n
}

// An operator moves the share group's start offset past records no relay
// has processed (kafka-share-groups.sh --reset-offsets, with the group
// empty): the broker never delivers them. The auditor must count exactly
// those lost, within the bound, and the records before and after them
// not.
func TestRealBrokerAuditReportsRecordsSkippedByAResetOfTheShareGroup(t *testing.T) {
	p := newPipe(t, seedsFor(t), harness.PipelineOptions{Partitions: 1, Workers: 1})
	a := startAudit(t, p)
	r := startRelay(t, p, "r1")
	seedOrders(t, p, 1, 10) // offsets 0..9: relayed
	waitLag(t, p, 0, 30*time.Second)
	stopRelay(t, r)          // the group is empty: its offsets can be altered
	seedOrders(t, p, 11, 20) // offsets 10..19

	cl, err := kgo.NewClient(kgo.SeedBrokers(p.SourceSeeds...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := kadm.NewClient(cl).AlterShareGroupOffsets(ctx, p.Group, kadm.Offsets{p.Source: {0: {At: 15}}})
	if err == nil {
		err = resp.Error()
	}
	if err != nil {
		t.Fatalf("moving the share group's start offset to 15: %v", err)
	}
	skipped := time.Now()
	before := pipelineState(t, p)

	a.reported(t, "the skipped records lost", skipped, func(c harness.AuditCounters) bool { return c.Lost > 0 })
	c := a.wait(t, "every finished record judged", auditReportBound, func(c harness.AuditCounters) bool { return c.Judged >= 15 })
	time.Sleep(auditFenceInterval)
	if again := a.counters(t); again != c {
		t.Fatalf("the auditor's counters moved with nothing new to judge: %v, then %v", c, again)
	}
	leftAlone(t, p, before)
	if c.Lost != 5 || c.Judged != 15 || c.LagRecords != 5 {
		t.Fatalf("the auditor counted %v; want offsets 10..14 lost among 15 judged, and 15..19 (not delivered yet) unjudged", c)
	}

	startRelay(t, p, "r2") // the records after the skip are relayed
	waitLag(t, p, 0, 30*time.Second)
	c = a.wait(t, "every record judged", auditReportBound, func(c harness.AuditCounters) bool { return c.Judged == 20 && c.LagRecords == 0 })
	if c.Lost != 5 || c.Duplicated != 0 {
		t.Fatalf("after the relay took the records past the skip, the auditor counted %v; want 5 lost (offsets 10..14), no duplicate", c)
	}
	rep := agreesWithVerify(t, p, c)
	if got := rep.Partitions[0].LostSample; fmt.Sprint(got) != "[10 11 12 13 14]" {
		t.Errorf("relay verify's lost offsets %v, want the skipped [10 11 12 13 14]", got)
	}
	a.stop(t)
}

// Someone copies one of the pipeline's committed outputs back into the
// output topic, headers and all (a replay by hand, a mirror run twice):
// the record is in the output twice. The auditor judged it already; it
// must count it duplicated, within the bound.
func TestRealBrokerAuditReportsARecordWrittenTwiceByHand(t *testing.T) {
	p := newPipe(t, seedsFor(t), harness.PipelineOptions{Partitions: 1, Workers: 1})
	a := startAudit(t, p)
	r := startRelay(t, p, "r1")
	seedOrders(t, p, 1, 10)
	waitLag(t, p, 0, 30*time.Second)
	stopRelay(t, r)
	c := a.wait(t, "every record judged", auditReportBound, func(c harness.AuditCounters) bool { return c.Judged == 10 && c.LagRecords == 0 })
	if c.Lost != 0 || c.Duplicated != 0 {
		t.Fatalf("the auditor counted %v before anything went wrong", c)
	}

	copied := copyOneOutput(t, p)
	wrote := time.Now()
	before := pipelineState(t, p)
	c, _ = a.reported(t, "the record written twice duplicated", wrote, func(c harness.AuditCounters) bool { return c.Duplicated > 0 })
	time.Sleep(auditFenceInterval)
	if again := a.counters(t); again != c {
		t.Fatalf("the auditor's counters moved with nothing new to judge: %v, then %v", c, again)
	}
	leftAlone(t, p, before)
	if c.Duplicated != 1 || c.Lost != 0 || c.Judged != 10 {
		t.Fatalf("the auditor counted %v after %s was written twice; want 1 duplicated of 10 judged", c, copied)
	}
	rep := agreesWithVerify(t, p, c)
	t.Logf("relay verify agrees: duplicated %d (e.g. offsets %v)", rep.Total.Duplicated, samples(rep))
	a.stop(t)
}

// copyOneOutput reads p's first committed output and writes a copy of it,
// key, value and headers, to the same partition, and returns what it
// copied.
func copyOneOutput(t *testing.T, p *harness.Pipeline) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	rd, err := kgo.NewClient(kgo.SeedBrokers(p.Seeds...), kgo.ConsumeTopics(p.Output),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	if err != nil {
		t.Fatal(err)
	}
	defer rd.Close()
	var orig *kgo.Record
	for orig == nil {
		fs := rd.PollRecords(ctx, 1)
		if ctx.Err() != nil {
			t.Fatalf("reading an output of %s: %v", p.Output, ctx.Err())
		}
		fs.EachRecord(func(r *kgo.Record) { orig = r })
	}
	wr, err := kgo.NewClient(kgo.SeedBrokers(p.Seeds...), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer wr.Close()
	dup := &kgo.Record{Topic: orig.Topic, Partition: orig.Partition, Key: orig.Key, Value: orig.Value, Headers: orig.Headers}
	if err := wr.ProduceSync(ctx, dup).FirstErr(); err != nil {
		t.Fatalf("writing the copy: %v", err)
	}
	return fmt.Sprintf("%s[%d]@%d", orig.Topic, orig.Partition, orig.Offset)
}

// samples are the duplicated offsets relay verify names, by partition.
func samples(rep audit.Report) map[string][]int64 {
	out := map[string][]int64{}
	for _, pr := range rep.Partitions {
		if len(pr.DuplicatedSample) > 0 {
			out[fmt.Sprintf("%s[%d]", pr.Topic, pr.Partition)] = pr.DuplicatedSample
		}
	}
	return out
}
