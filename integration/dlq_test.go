package integration

// relay dlq replay on the real broker (issue 10): a pipeline dead-letters
// two kinds of orders (and REJECTs them, dead_letter.ack: reject); one
// kind is copied to a topic of its own, the other sent through the fixed
// chain — each replay killed once mid-way (SIGKILL at a failpoint, after
// a commit and before one) and run twice more. Every selected dead letter
// ends up replayed exactly once, and relay verify agrees.

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sharerelay/sharerelay/audit"
	"github.com/sharerelay/sharerelay/dlq"
	"github.com/sharerelay/sharerelay/integration/harness"
	"github.com/sharerelay/sharerelay/internal/failpoint"
	"github.com/sharerelay/sharerelay/lineage"
)

// Every 20th order has a bad address, every 20th from 10 an unknown SKU:
// both fail for good.
const (
	badAddressRule = `  - {type: fail, name: bad-address, kind: permanent, reason: bad address, when: {field: order_id, modulo: 20, remainder: 0}}`
	badSKURule     = `  - {type: fail, name: bad-sku, kind: permanent, reason: unknown sku, when: {field: order_id, modulo: 20, remainder: 10}}`
	dlqTransforms  = "\n" + badAddressRule + "\n" + badSKURule + "\n  - {type: set, field: status, value: packing}"
)

// runDLQ runs `relay dlq <sub> -c cfg args...` to its end with env added,
// and returns its exit code and its stdout (the --json report).
func runDLQ(t *testing.T, cfg string, env []string, sub string, args ...string) (int, []byte) {
	t.Helper()
	c := harness.RelayDLQCommand(relayBin, cfg, sub, args...)
	dir := t.TempDir()
	c.Env, c.LogPath, c.StdoutPath = env, filepath.Join(dir, "log"), filepath.Join(dir, "stdout")
	pr, err := harness.Start(c)
	if err != nil {
		t.Fatal(err)
	}
	code, err := pr.Wait(90 * time.Second)
	if err != nil {
		pr.Kill()
		t.Fatalf("%s: %v\n%s", c.Name, err, pr.LogTail(5000))
	}
	out, _ := os.ReadFile(c.StdoutPath)
	if code != 0 && code != 137 {
		t.Fatalf("%s %v: exit %d\n%s\n%s", c.Name, args, code, out, pr.LogTail(5000))
	}
	return code, out
}

// replayRun runs relay dlq replay with args; kill, when set, is a
// failpoint (e.g. dlq-replay-after-commit) at which the second hit SIGKILLs
// the process. It returns the report of a run that finished.
func replayRun(t *testing.T, cfg, kill string, args ...string) *dlq.ReplayReport {
	t.Helper()
	var env []string
	if kill != "" {
		env = []string{failpoint.EnvVar + "=" + kill + "=kill@2"}
	}
	code, out := runDLQ(t, cfg, env, "replay", append(args, "--json", "--chunk", "3")...)
	if kill != "" {
		if code != 137 {
			t.Fatalf("replay %v with %s: exit %d, want 137 (killed)\n%s", args, kill, code, out)
		}
		return nil
	}
	var rep dlq.ReplayReport
	if err := json.Unmarshal(out, &rep); err != nil || code != 0 {
		t.Fatalf("replay %v: exit %d, report %v\n%s", args, code, err, out)
	}
	return &rep
}

// replayedOnce reads topic and checks that it holds, from the replays,
// exactly one record per dead letter of want (the order ids they stand
// for) and nothing else of the replays; check looks at each record.
func replayedOnce(t *testing.T, p *harness.Pipeline, topic string, want map[string]bool, check func(*kgo.Record) error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	perDeadLetter := map[lineage.Source]int{}
	perOrder := map[string]int{}
	var problems []string
	cl, err := kgo.NewClient(kgo.SeedBrokers(p.Seeds...), kgo.ConsumeTopics(topic), kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	tl, err := audit.ReadCommitted(ctx, []kgo.Opt{kgo.SeedBrokers(p.Seeds...)}, topic)
	if err != nil {
		t.Fatal(err)
	}
	for read := 0; read < tl.Records; {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("reading %s: %d of %d records", topic, read, tl.Records)
		}
		fs.EachRecord(func(r *kgo.Record) {
			read++
			at, ok := lineage.SourceOf(r)
			if !ok || at.Topic != p.DeadLetter {
				return // the relay's own output
			}
			perDeadLetter[at]++
			of, _, ok := lineage.ReplayOf(r)
			if !ok || of.Topic != p.Source {
				problems = append(problems, fmt.Sprintf("record of dead letter %v names %+v as its original", at, of))
			}
			perOrder[string(r.Key)]++
			if err := check(r); err != nil {
				problems = append(problems, err.Error())
			}
		})
	}
	for at, n := range perDeadLetter {
		if n != 1 {
			problems = append(problems, fmt.Sprintf("dead letter %v replayed %d times", at, n))
		}
	}
	for id := range want {
		if perOrder[id] != 1 {
			problems = append(problems, fmt.Sprintf("order %s: %d replayed records, want 1", id, perOrder[id]))
		}
	}
	if len(perOrder) != len(want) {
		problems = append(problems, fmt.Sprintf("%d orders replayed, want %d", len(perOrder), len(want)))
	}
	if len(problems) > 0 {
		t.Fatalf("%s: not replayed exactly once:\n%s", topic, strings.Join(problems[:min(10, len(problems))], "\n"))
	}
}

// ordersWith returns the order ids of 1..n with id % 20 == rem.
func ordersWith(n, rem int) map[string]bool {
	out := map[string]bool{}
	for i := 1; i <= n; i++ {
		if i%20 == rem {
			out[strconv.Itoa(i)] = true
		}
	}
	return out
}

func TestRealBrokerDLQReplayToATopicAndThroughTheFixedChainExactlyOnce(t *testing.T) {
	seeds := seedsFor(t)
	const n = 400 // 20 bad addresses, 20 unknown SKUs
	addr := metricsAddr(t)
	p := newPipe(t, seeds, harness.PipelineOptions{Workers: 2, Transforms: dlqTransforms, DeadLetterAck: "reject", MetricsListen: addr})
	copies := p.Name + ".replayed"
	createTopics(t, seeds, harness.Topic{Name: copies})
	seedOrders(t, p, 1, n)

	// The relay dead-letters 40 orders and REJECTs them.
	a := startRelay(t, p, "a")
	o := settled(t, p, n, 2*time.Minute)
	exactlyOnce(t, o, n, 40)
	_, body := get(addr, "/metrics")
	m := regexp.MustCompile(`(?m)^sharerelay_acks_total\{[^}]*type="reject"[^}]*\} (\S+)$`).FindAllStringSubmatch(body, -1)
	rejects := 0.0
	for _, x := range m {
		v, _ := strconv.ParseFloat(x[1], 64)
		rejects += v
	}
	if rejects != 40 {
		t.Fatalf("acks_total{type=reject} = %v, want 40 (one per dead letter)", rejects)
	}
	_ = a.Signal(syscall.SIGTERM)
	if code, err := a.Wait(30 * time.Second); err != nil || code != 0 {
		t.Fatalf("relay after SIGTERM: exit %d, %v", code, err)
	}

	// 1. The bad addresses, copied unchanged to a topic: killed right
	// after its second commit (6 copied), then run twice.
	toTopic := []string{"--step", "bad-address", "--to", copies}
	replayRun(t, p.Path, failpoint.ReplayAfterCommit, toTopic...)
	rep := replayRun(t, p.Path, "", toTopic...)
	if rep.Selected != 20 || rep.AlreadyReplayed != 6 || rep.Replayed != 14 {
		t.Fatalf("copy, after the kill: selected %d, already replayed %d, replayed %d; want 20, 6, 14", rep.Selected, rep.AlreadyReplayed, rep.Replayed)
	}
	if rep = replayRun(t, p.Path, "", toTopic...); rep.AlreadyReplayed != 20 || rep.Replayed != 0 {
		t.Fatalf("copy, run again: already replayed %d, replayed %d; want 20, 0", rep.AlreadyReplayed, rep.Replayed)
	}
	replayedOnce(t, p, copies, ordersWith(n, 0), func(r *kgo.Record) error {
		if want := fmt.Sprintf(`{"order_id":%s}`, r.Key); string(r.Value) != want {
			return fmt.Errorf("copy of order %s: value %s, want it unchanged", r.Key, r.Value)
		}
		for _, h := range r.Headers {
			if strings.HasPrefix(h.Key, lineage.DLQPrefix) {
				return fmt.Errorf("copy of order %s carries %s", r.Key, h.Key)
			}
		}
		return nil
	})

	// 2. The unknown SKUs, through the chain once its rule is fixed: a
	// dry run first, then killed with its second transaction open
	// (SIGKILL before the commit: the next run's producer fences it), then
	// run twice.
	file, err := os.ReadFile(p.Path)
	if err != nil {
		t.Fatal(err)
	}
	fixed := filepath.Join(t.TempDir(), "fixed.yaml")
	if err := os.WriteFile(fixed, []byte(strings.Replace(string(file), badSKURule+"\n", "", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	chain := []string{"--step", "bad-sku"}
	if rep = replayRun(t, fixed, "", append(chain, "--dry-run")...); !rep.DryRun || rep.Replayed != 20 || rep.Outputs != 20 {
		t.Fatalf("dry run: would replay %d with %d outputs, want 20 and 20", rep.Replayed, rep.Outputs)
	}
	replayRun(t, fixed, failpoint.ReplayBeforeCommit, chain...)
	rep = replayRun(t, fixed, "", chain...)
	if rep.Selected != 20 || rep.AlreadyReplayed != 3 || rep.Replayed != 17 || rep.Outputs != 17 {
		t.Fatalf("chain, after the kill: selected %d, already replayed %d, replayed %d (outputs %d); want 20, 3, 17 (17)",
			rep.Selected, rep.AlreadyReplayed, rep.Replayed, rep.Outputs)
	}
	if rep = replayRun(t, fixed, "", chain...); rep.AlreadyReplayed != 20 || rep.Replayed != 0 {
		t.Fatalf("chain, run again: already replayed %d, replayed %d; want 20, 0", rep.AlreadyReplayed, rep.Replayed)
	}
	waitNoOpenTxn(t, seeds, p.Output, p.DeadLetter, copies)
	replayedOnce(t, p, p.Output, ordersWith(n, 10), func(r *kgo.Record) error {
		if want := fmt.Sprintf(`{"order_id":%s,"status":"packing"}`, r.Key); string(r.Value) != want {
			return fmt.Errorf("output of order %s: %s, want %s", r.Key, r.Value, want)
		}
		return nil
	})

	// relay verify: the pipeline exact, the 20 replays through the chain
	// once each (it reads the outputs and dead letters, not the copies).
	code, vr := relayVerify(t, p)
	if code != 0 || !vr.Exact || vr.Replays == nil ||
		vr.Replays.DeadLetters != 20 || vr.Replays.Output != 20 || vr.Replays.Duplicated != 0 {
		t.Fatalf("relay verify: exit %d, report %+v (replays %+v)", code, vr, vr.Replays)
	}
	t.Logf("40 dead letters REJECTed; 20 copied and 20 replayed through the chain, each once, across a kill and two more runs each")
}
