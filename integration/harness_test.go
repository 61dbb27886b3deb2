package integration

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sharerelay/sharerelay/audit"
	"github.com/sharerelay/sharerelay/integration/kafkatest"
)

// relayBin is the relay binary the tests run as real processes.
var relayBin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "sharerelay-bin-")
	if err != nil {
		panic(err)
	}
	relayBin = filepath.Join(dir, "relay")
	out, err := exec.Command("go", "build", "-o", relayBin, "../cmd/relay").CombinedOutput()
	if err != nil {
		fmt.Fprintf(os.Stderr, "building the relay: %v\n%s", err, out)
		os.Exit(1)
	}
	defer os.RemoveAll(dir)
	kafkatest.Main(m)
}

// seedsFor returns the broker for a real-broker test. -short skips these
// tests unless the broker is required (CI), where a skip would be a lie.
func seedsFor(t *testing.T) []string {
	t.Helper()
	if testing.Short() {
		if os.Getenv(kafkatest.EnvRequireBroker) == "1" {
			t.Fatal("real-broker test under -short with SHARERELAY_REQUIRE_BROKER=1")
		}
		t.Skip("real-broker test skipped under -short")
	}
	return kafkatest.Bootstrap(t)
}

var pipelineSeq atomic.Int64

// pipe is one test pipeline: its topics, group and config file.
type pipe struct {
	Name, Source, Output, DLQ, Group string
	Seeds                            []string
	Path                             string
}

// pipeOpts shapes a test pipeline.
type pipeOpts struct {
	Delivery     string // default exactly-once
	Workers      int    // default 2
	Partitions   int32  // source partitions, default 3
	MaxRecords   int    // default 50
	Transforms   string // YAML list, default []
	GroupConfigs map[string]string
	TxnTimeout   string // default 10s
	RenewLocks   bool
	MaxAttempts  int
	// OnBroker places every topic of the pipeline on this broker id
	// (0: wherever the controller chooses).
	OnBroker int32
}

func newPipe(t *testing.T, seeds []string, o pipeOpts) *pipe {
	t.Helper()
	if o.Delivery == "" {
		o.Delivery = "exactly-once"
	}
	if o.Workers == 0 {
		o.Workers = 2
	}
	if o.Partitions == 0 {
		o.Partitions = 3
	}
	if o.MaxRecords == 0 {
		o.MaxRecords = 50
	}
	if o.Transforms == "" {
		o.Transforms = "[]"
	}
	if o.TxnTimeout == "" {
		o.TxnTimeout = "10s"
	}
	n := pipelineSeq.Add(1)
	base := strings.ToLower(strings.NewReplacer("/", "-", "_", "-").Replace(t.Name()))
	if len(base) > 60 {
		base = base[:60]
	}
	p := &pipe{Name: fmt.Sprintf("%s-%d-%d", base, n, time.Now().UnixNano()%1e6), Seeds: seeds}
	p.Source, p.Output, p.DLQ, p.Group = p.Name+".orders", p.Name+".jobs", p.Name+".dlq", p.Name+".group"
	createTopicOn(t, seeds, p.Source, o.Partitions, o.OnBroker, nil)
	createTopicOn(t, seeds, p.Output, 3, o.OnBroker, nil)
	createTopicOn(t, seeds, p.DLQ, 1, o.OnBroker, nil)

	var gc strings.Builder
	for k, v := range o.GroupConfigs {
		fmt.Fprintf(&gc, "\n    %s: %q", k, v)
	}
	if gc.Len() == 0 {
		gc.WriteString(" {}")
	}
	y := fmt.Sprintf(`name: %s
brokers: [%q]
delivery: %s
workers: %d
source:
  topics: [%s]
  group: %s
  group_configs:%s
output:
  topic: %s
  transaction_timeout: %s
dead_letter:
  topic: %s
  max_attempts: %d
batch:
  max_records: %d
  poll_timeout: 500ms
  renew_locks: %v
transforms: %s
metrics:
  listen: ""
`, p.Name, strings.Join(seeds, ","), o.Delivery, o.Workers, p.Source, p.Group, gc.String(), p.Output, o.TxnTimeout, p.DLQ, o.MaxAttempts, o.MaxRecords, o.RenewLocks, o.Transforms)
	p.Path = filepath.Join(t.TempDir(), "pipeline.yaml")
	if err := os.WriteFile(p.Path, []byte(y), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func createTopic(t *testing.T, seeds []string, name string, parts int32) {
	t.Helper()
	createTopicOn(t, seeds, name, parts, 0, nil)
}

// createTopicOn creates a topic with replication factor 1 and configs, on
// broker id broker when it is not 0.
func createTopicOn(t *testing.T, seeds []string, name string, parts int32, broker int32, configs map[string]string) {
	t.Helper()
	if broker != 0 {
		cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...))
		if err != nil {
			t.Fatal(err)
		}
		defer cl.Close()
		req := kmsg.NewPtrCreateTopicsRequest()
		rt := kmsg.NewCreateTopicsRequestTopic()
		rt.Topic, rt.NumPartitions, rt.ReplicationFactor = name, -1, -1
		for p := range parts {
			ra := kmsg.NewCreateTopicsRequestTopicReplicaAssignment()
			ra.Partition, ra.Replicas = p, []int32{broker}
			rt.ReplicaAssignment = append(rt.ReplicaAssignment, ra)
		}
		for k, v := range configs {
			c := kmsg.NewCreateTopicsRequestTopicConfig()
			c.Name, c.Value = k, kmsg.StringPtr(v)
			rt.Configs = append(rt.Configs, c)
		}
		req.Topics = append(req.Topics, rt)
		req.TimeoutMillis = 30000
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		resp, err := req.RequestWith(ctx, cl)
		if err == nil {
			err = kerr.ErrorForCode(resp.Topics[0].ErrorCode)
		}
		if err != nil {
			t.Fatalf("creating topic %s on broker %d: %v", name, broker, err)
		}
		return
	}
	var cfg map[string]*string
	for k, v := range configs {
		if cfg == nil {
			cfg = map[string]*string{}
		}
		cfg[k] = kmsg.StringPtr(v)
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	resp, err := kadm.NewClient(cl).CreateTopic(ctx, parts, 1, cfg, name)
	if err == nil {
		err = resp.Err
	}
	if err != nil {
		t.Fatalf("creating topic %s: %v", name, err)
	}
}

// seedOrders writes orders {"order_id": i}, i = from..to, keyed by id.
func seedOrders(t *testing.T, p *pipe, from, to int) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(p.Seeds...), kgo.ProducerLinger(5*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	recs := make([]*kgo.Record, 0, to-from+1)
	for i := from; i <= to; i++ {
		recs = append(recs, &kgo.Record{Topic: p.Source, Key: strconv.AppendInt(nil, int64(i), 10), Value: fmt.Appendf(nil, `{"order_id":%d}`, i)})
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatalf("seeding %s: %v", p.Source, err)
	}
}

// proc is a relay process.
type proc struct {
	t    *testing.T
	name string
	cmd  *exec.Cmd
	done chan struct{}
	err  error
}

func startRelay(t *testing.T, p *pipe, instance string, env ...string) *proc {
	t.Helper()
	logPath := filepath.Join(t.TempDir(), instance+".log")
	f, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(relayBin, "run", "-c", p.Path, "--instance", instance, "--log-level", "info")
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdout, cmd.Stderr = f, f
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pr := &proc{t: t, name: instance, cmd: cmd, done: make(chan struct{})}
	go func() {
		pr.err = cmd.Wait()
		f.Close()
		close(pr.done)
	}()
	t.Cleanup(func() {
		pr.kill()
		if t.Failed() {
			b, _ := os.ReadFile(logPath)
			if len(b) > 20000 {
				b = b[len(b)-20000:]
			}
			t.Logf("---- log of relay %s (tail) ----\n%s", instance, b)
		}
	})
	return pr
}

func (p *proc) signal(s syscall.Signal) { _ = p.cmd.Process.Signal(s) }

func (p *proc) kill() {
	select {
	case <-p.done:
		return
	default:
	}
	_ = syscall.Kill(p.cmd.Process.Pid, syscall.SIGCONT)
	_ = p.cmd.Process.Kill()
	<-p.done
}

// exited reports whether the process has exited.
func (p *proc) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// wait waits for the process to exit and returns its exit code.
func (p *proc) wait(d time.Duration) (int, error) {
	select {
	case <-p.done:
	case <-time.After(d):
		return -1, fmt.Errorf("relay %s did not exit within %s", p.name, d)
	}
	var ee *exec.ExitError
	if errors.As(p.err, &ee) {
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return 128 + int(ws.Signal()), nil
		}
		return ee.ExitCode(), nil
	}
	if p.err != nil {
		return -1, p.err
	}
	return 0, nil
}

// outcome is what a pipeline wrote, judged per source record.
type outcome struct {
	Jobs, DLQ audit.Tally
	Lag       int64
}

func (o outcome) String() string {
	return fmt.Sprintf("jobs %d (unique %d, duplicated %d), dead letters %d (unique %d), lag %d",
		o.Jobs.Records, len(o.Jobs.BySource), len(o.Jobs.Duplicates()), o.DLQ.Records, len(o.DLQ.BySource), o.Lag)
}

func measure(t *testing.T, p *pipe) (outcome, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	seeds := []kgo.Opt{kgo.SeedBrokers(p.Seeds...)}
	var o outcome
	var err error
	if o.Jobs, err = audit.ReadCommitted(ctx, seeds, p.Output); err != nil {
		return o, err
	}
	if o.DLQ, err = audit.ReadCommitted(ctx, seeds, p.DLQ); err != nil {
		return o, err
	}
	cl, err := kgo.NewClient(seeds...)
	if err != nil {
		return o, err
	}
	defer cl.Close()
	lag, err := audit.ShareGroupLag(ctx, kadm.NewClient(cl), p.Group, p.Source)
	if err != nil {
		return o, err
	}
	o.Lag = audit.TotalLag(lag)
	return o, nil
}

// waitFor polls the pipeline's outcome until cond holds or d passes.
func waitFor(t *testing.T, p *pipe, d time.Duration, what string, cond func(outcome) bool) outcome {
	t.Helper()
	deadline := time.Now().Add(d)
	var o outcome
	for {
		var err error
		o, err = measure(t, p)
		if err == nil && cond(o) {
			return o
		}
		if time.Now().After(deadline) {
			t.Fatalf("waiting for %s: not reached within %s: %v (last error %v)", what, d, o, err)
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// settled waits until n source records are all accounted for (output or
// dead letter) and the share group has no lag left, then waits a little
// longer so that a late duplicate has time to show up, and measures again.
func settled(t *testing.T, p *pipe, n int, d time.Duration) outcome {
	t.Helper()
	waitFor(t, p, d, fmt.Sprintf("%d source records accounted for and lag 0", n), func(o outcome) bool {
		return len(o.Jobs.BySource)+len(o.DLQ.BySource) >= n && o.Lag == 0
	})
	time.Sleep(3 * time.Second)
	o, err := measure(t, p)
	if err != nil {
		t.Fatal(err)
	}
	return o
}

// exactlyOnce fails the test unless each of the sources 1..n is in the
// output or the dead letters exactly once, and nothing else is there.
func exactlyOnce(t *testing.T, o outcome, n, wantDLQ int) {
	t.Helper()
	var problems []string
	if d := o.Jobs.Duplicates(); len(d) > 0 {
		problems = append(problems, fmt.Sprintf("%d source records duplicated in the output (e.g. %v)", len(d), d[0]))
	}
	if d := o.DLQ.Duplicates(); len(d) > 0 {
		problems = append(problems, fmt.Sprintf("%d source records duplicated in the dead letters (e.g. %v)", len(d), d[0]))
	}
	both := 0
	for s := range o.DLQ.BySource {
		if o.Jobs.BySource[s] > 0 {
			both++
		}
	}
	if both > 0 {
		problems = append(problems, fmt.Sprintf("%d source records both in output and dead letters", both))
	}
	if got := len(o.Jobs.BySource) + len(o.DLQ.BySource) - both; got != n {
		problems = append(problems, fmt.Sprintf("%d distinct source records accounted for, want %d (lost %d)", got, n, n-got))
	}
	if len(o.DLQ.BySource) != wantDLQ {
		problems = append(problems, fmt.Sprintf("%d dead letters, want %d", len(o.DLQ.BySource), wantDLQ))
	}
	if o.Jobs.Unlabelled+o.DLQ.Unlabelled > 0 {
		problems = append(problems, "records without sharerelay.source.* headers")
	}
	if len(problems) > 0 {
		t.Fatalf("not exactly once: %s\n%v", strings.Join(problems, "; "), o)
	}
}

// duplicated returns how many source records appear more than once in the
// output.
func duplicated(o outcome) int { return len(o.Jobs.Duplicates()) }

// restartBroker kills the local broker with SIGKILL and starts it again on
// the same data directory (a crash, not a clean shutdown). It first waits
// until the given topics have no open transaction: a single broker killed
// while commit markers are still being written can leave a transaction
// open for good after the restart (the coordinator drops the markers while
// the restarted node has no leader), which stalls read_committed readers —
// a Kafka single-node limitation, not the relay's.
func restartBroker(t *testing.T, seeds []string, topics ...string) {
	t.Helper()
	b := kafkatest.LocalBroker(t)
	waitNoOpenTxn(t, seeds, topics...)
	if err := b.Kill(); err != nil {
		t.Fatalf("killing the broker: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	start := time.Now()
	if err := b.Start(ctx); err != nil {
		t.Fatalf("restarting the broker: %v", err)
	}
	t.Logf("broker killed -9 and restarted in %s", time.Since(start).Round(time.Millisecond))
}

// waitNoOpenTxn waits until every partition of topics has its last stable
// offset at its high watermark.
func waitNoOpenTxn(t *testing.T, seeds []string, topics ...string) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	deadline := time.Now().Add(30 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		hw, err1 := adm.ListEndOffsets(ctx, topics...)
		ls, err2 := adm.ListCommittedOffsets(ctx, topics...)
		cancel()
		open := 0
		if err1 == nil && err2 == nil {
			hw.Each(func(o kadm.ListedOffset) {
				if l, ok := ls.Lookup(o.Topic, o.Partition); !ok || l.Offset != o.Offset {
					open++
				}
			})
			if open == 0 {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("transactions still open on %v after 30s (%d partitions, errors %v %v)", topics, open, err1, err2)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// seedsForBench is seedsFor for benchmarks.
func seedsForBench(b *testing.B) []string {
	b.Helper()
	return kafkatest.Bootstrap(b)
}
