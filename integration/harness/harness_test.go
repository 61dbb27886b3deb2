package harness_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sharerelay/sharerelay/config"
	"github.com/sharerelay/sharerelay/integration/harness"
	"github.com/sharerelay/sharerelay/integration/kafkatest"
	"github.com/sharerelay/sharerelay/internal/kfaketest"
)

// The harness's Kafka helpers run here against kfake, an in-process fake
// cluster, so that they are checked by every `go test -short`; the
// real-broker suites use them against Apache Kafka.

func fakeCluster(t *testing.T, brokers int) []string {
	return newFake(t, brokers).ListenAddrs()
}

func newFake(t *testing.T, brokers int) *kfake.Cluster {
	t.Helper()
	return kfaketest.Cluster(t, kfake.NumBrokers(brokers))
}

func admin(t *testing.T, seeds []string) *kadm.Client {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return kadm.NewClient(cl)
}

func testContext(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func TestCreateTopicsPlacesPartitionsAndSetsConfigs(t *testing.T) {
	c := newFake(t, 2)
	seeds := c.ListenAddrs()
	// kfake ignores replica assignments, so the placement is checked on
	// the requests.
	var mu sync.Mutex
	asked := map[string][]string{}
	c.ControlKey(int16(kmsg.CreateTopics), func(r kmsg.Request) (kmsg.Response, error, bool) {
		mu.Lock()
		defer mu.Unlock()
		for _, rt := range r.(*kmsg.CreateTopicsRequest).Topics {
			asked[rt.Topic] = append(asked[rt.Topic], fmt.Sprintf("parts %d factor %d", rt.NumPartitions, rt.ReplicationFactor))
			for _, ra := range rt.ReplicaAssignment {
				asked[rt.Topic] = append(asked[rt.Topic], fmt.Sprintf("%d:%v", ra.Partition, ra.Replicas))
			}
		}
		return nil, nil, false
	})
	ctx := testContext(t)
	err := harness.CreateTopics(ctx, seeds,
		harness.Topic{Name: "anywhere", Partitions: 3},
		harness.Topic{Name: "on-node-1", Partitions: 4, Broker: 1, Configs: map[string]string{"cleanup.policy": "compact"}},
		harness.Topic{Name: "one-partition"})
	if err != nil {
		t.Fatal(err)
	}
	adm := admin(t, seeds)
	td, err := adm.ListTopics(ctx, "anywhere", "on-node-1", "one-partition")
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]int{"anywhere": 3, "on-node-1": 4, "one-partition": 1} {
		if got := len(td[name].Partitions); got != want {
			t.Errorf("%s has %d partitions, want %d", name, got, want)
		}
	}
	mu.Lock()
	for name, want := range map[string]string{
		"anywhere":      "[parts 3 factor -1]",
		"on-node-1":     "[parts -1 factor -1 0:[1] 1:[1] 2:[1] 3:[1]]",
		"one-partition": "[parts 1 factor -1]",
	} {
		if got := fmt.Sprint(asked[name]); got != want {
			t.Errorf("CreateTopics asked for %s: %s, want %s", name, got, want)
		}
	}
	mu.Unlock()
	rc, err := adm.DescribeTopicConfigs(ctx, "on-node-1")
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := rc.On("on-node-1", nil)
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, kv := range cfg.Configs {
		if kv.Key == "cleanup.policy" {
			found = true
			if kv.MaybeValue() != "compact" {
				t.Errorf("cleanup.policy = %q, want compact", kv.MaybeValue())
			}
		}
	}
	if !found {
		t.Error("cleanup.policy not among the topic's configs")
	}

	err = harness.CreateTopics(ctx, seeds, harness.Topic{Name: "anywhere"})
	if err == nil || !strings.Contains(err.Error(), "creating topic anywhere") {
		t.Errorf("creating an existing topic: %v, want an error naming it", err)
	}
}

func TestDeleteTopicsDeletesThemAndFailsOnAMissingOne(t *testing.T) {
	seeds := fakeCluster(t, 1)
	ctx := testContext(t)
	if err := harness.CreateTopics(ctx, seeds, harness.Topic{Name: "a"}, harness.Topic{Name: "b"}); err != nil {
		t.Fatal(err)
	}
	if err := harness.DeleteTopics(ctx, seeds, "a", "b"); err != nil {
		t.Fatal(err)
	}
	td, err := admin(t, seeds).ListTopics(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(td.Names()) != 0 {
		t.Errorf("topics left after deleting them: %v", td.Names())
	}
	if err := harness.DeleteTopics(ctx, seeds, "a"); err == nil || !strings.Contains(err.Error(), "deleting topic a") {
		t.Errorf("deleting a missing topic: %v, want an error naming it", err)
	}
}

func TestOrdersSeedWritesEveryOrderKeyedByItsID(t *testing.T) {
	for _, tc := range []struct {
		name   string
		orders harness.Orders
		value  func(i int) string
	}{
		{"plain orders carry only their id", harness.Orders{Topic: "plain"},
			func(i int) string { return fmt.Sprintf(`{"order_id":%d}`, i) }},
		{"orders of a run also name the run", harness.Orders{Topic: "run", Run: "chaos-x-1"},
			func(i int) string { return fmt.Sprintf(`{"order_id":%d,"run":"chaos-x-1"}`, i) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			seeds := fakeCluster(t, 1)
			ctx := testContext(t)
			if err := harness.CreateTopics(ctx, seeds, harness.Topic{Name: tc.orders.Topic, Partitions: 3}); err != nil {
				t.Fatal(err)
			}
			if err := tc.orders.Seed(ctx, seeds, 5, 104); err != nil {
				t.Fatal(err)
			}
			cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.ConsumeTopics(tc.orders.Topic),
				kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
			if err != nil {
				t.Fatal(err)
			}
			defer cl.Close()
			seen := map[string]string{}
			for len(seen) < 100 && ctx.Err() == nil {
				cl.PollFetches(ctx).EachRecord(func(r *kgo.Record) {
					if _, dup := seen[string(r.Key)]; dup {
						t.Errorf("order %s written twice", r.Key)
					}
					seen[string(r.Key)] = string(r.Value)
				})
			}
			for i := 5; i <= 104; i++ {
				if got, want := seen[fmt.Sprint(i)], tc.value(i); got != want {
					t.Fatalf("order %d: value %q, want %q", i, got, want)
				}
			}
			if len(seen) != 100 {
				t.Fatalf("%d orders written, want 100", len(seen))
			}
		})
	}
}

func TestOpenTransactionsSeesATransactionUntilItEnds(t *testing.T) {
	seeds := fakeCluster(t, 1)
	ctx := testContext(t)
	if err := harness.CreateTopics(ctx, seeds, harness.Topic{Name: "out", Partitions: 2}, harness.Topic{Name: "other"}); err != nil {
		t.Fatal(err)
	}
	adm := admin(t, seeds)
	tx, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.TransactionalID("t"))
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Close()
	if err := tx.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	if err := tx.ProduceSync(ctx, &kgo.Record{Topic: "out", Partition: 1, Value: []byte("x")}).FirstErr(); err != nil {
		t.Fatal(err)
	}

	open, err := harness.OpenTransactions(ctx, adm, "out", "other")
	if err != nil {
		t.Fatal(err)
	}
	if len(open) != 1 || !strings.HasPrefix(open[0], "out[") {
		t.Fatalf("open transactions %v, want one partition of out", open)
	}
	short, cancel := context.WithTimeout(ctx, 700*time.Millisecond)
	err = harness.WaitNoOpenTransactions(short, adm, "out")
	cancel()
	if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "still open") {
		t.Fatalf("waiting while a transaction is open: %v, want a deadline error listing it", err)
	}

	if err := tx.EndTransaction(ctx, kgo.TryCommit); err != nil {
		t.Fatal(err)
	}
	if err := harness.WaitNoOpenTransactions(ctx, adm, "out", "other"); err != nil {
		t.Fatalf("after the commit: %v", err)
	}
}

func TestNewPipelineWritesAFileTheRelayLoads(t *testing.T) {
	for _, tc := range []struct {
		name  string
		opts  harness.PipelineOptions
		check func(t *testing.T, p *harness.Pipeline, c *config.Pipeline)
	}{
		{
			name: "the defaults make an exactly-once pipeline on the seeds",
			check: func(t *testing.T, p *harness.Pipeline, c *config.Pipeline) {
				want := []string{
					fmt.Sprint(c.Brokers), fmt.Sprint(p.Seeds),
					c.Delivery, "exactly-once",
					fmt.Sprint(c.Workers, c.Batch.MaxRecords, c.Batch.PollTimeout, c.Output.TransactionTimeout), "2 50 500ms 10s",
					fmt.Sprint(*c.Batch.RenewLocks, c.DeadLetter.MaxAttempts, len(c.Transforms), c.Metrics.Listen == ""), "false 0 0 true",
					c.DeadLetter.Ack, "accept",
				}
				for i := 0; i < len(want); i += 2 {
					if want[i] != want[i+1] {
						t.Errorf("got %s, want %s", want[i], want[i+1])
					}
				}
			},
		},
		{
			name: "every option reaches the file, and environment references are left to the relay",
			opts: harness.PipelineOptions{
				Brokers: []string{"${HARNESS_BROKERS}"}, MetricsListen: "${HARNESS_METRICS}",
				Delivery: "at-least-once", Workers: 3, Partitions: 1, MaxRecords: 7, PollTimeout: time.Second,
				TxnTimeout: 4 * time.Second, RenewLocks: true, MaxAttempts: 2, DeadLetterAck: "reject",
				GroupConfigs: map[string]string{"share.record.lock.duration.ms": "6000", "share.delivery.count.limit": "3"},
				Transforms: `
  - {type: fail, kind: permanent, reason: bad address, when: {field: order_id, modulo: 500, remainder: 0}}
  - {type: set, field: status, value: packing}`,
			},
			check: func(t *testing.T, p *harness.Pipeline, c *config.Pipeline) {
				got := fmt.Sprintln(c.Brokers, c.Metrics.Listen, c.Delivery, c.Workers, c.Batch.MaxRecords, c.Batch.PollTimeout,
					c.Output.TransactionTimeout, *c.Batch.RenewLocks, c.DeadLetter.MaxAttempts, c.DeadLetter.Ack, c.Source.GroupConfigs, len(c.Transforms))
				want := "[127.0.0.1:1 127.0.0.1:2] 127.0.0.1:3 at-least-once 3 7 1s 4s true 2 reject " +
					"map[share.delivery.count.limit:3 share.record.lock.duration.ms:6000] 2\n"
				if got != want {
					t.Errorf("loaded %swant   %s", got, want)
				}
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("HARNESS_BROKERS", "127.0.0.1:1,127.0.0.1:2")
			t.Setenv("HARNESS_METRICS", "127.0.0.1:3")
			o := tc.opts
			o.Name, o.Seeds, o.Dir = "orders-1", fakeCluster(t, 1), t.TempDir()
			p, err := harness.NewPipeline(testContext(t), o)
			if err != nil {
				t.Fatal(err)
			}
			if p.Source != "orders-1.orders" || p.Output != "orders-1.jobs" || p.DeadLetter != "orders-1.dlq" ||
				p.Group != "orders-1.group" || p.Ledger != "orders-1.ledger" || p.Path != filepath.Join(o.Dir, "pipeline.yaml") {
				t.Errorf("pipeline names: %+v", *p)
			}
			td, err := admin(t, o.Seeds).ListTopics(testContext(t))
			if err != nil {
				t.Fatal(err)
			}
			srcParts := 3 // the default
			if o.Partitions != 0 {
				srcParts = int(o.Partitions)
			}
			for name, want := range map[string]int{p.Source: srcParts, p.Output: harness.OutputPartitions, p.DeadLetter: harness.DeadLetterPartitions} {
				if got := len(td[name].Partitions); got != want {
					t.Errorf("%s: %d partitions, want %d", name, got, want)
				}
			}
			c, err := config.Load(p.Path)
			if err != nil {
				b, _ := os.ReadFile(p.Path)
				t.Fatalf("the relay rejects the file: %v\n%s", err, b)
			}
			if c.Name != p.Name || fmt.Sprint(c.Source.Topics) != "["+p.Source+"]" || c.Source.Group != p.Group ||
				c.Output.Topic != p.Output || c.DeadLetter.Topic != p.DeadLetter {
				t.Errorf("the file names other topics than the pipeline: %+v", *c)
			}
			tc.check(t, p, c)
		})
	}
}

// With SourceSeeds the source topic is made on the source cluster and the
// output and dead letters on the sink's, and the file names the source
// cluster with its own brokers and security; without them the file has no
// source.cluster, and SourceSeeds are the Seeds.
func TestNewPipelinePutsTheSourceOnItsOwnCluster(t *testing.T) {
	authority, err := kafkatest.NewCA("source cluster CA")
	if err != nil {
		t.Fatal(err)
	}
	ca := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(ca, authority.CertPEM, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("HARNESS_SOURCE_BROKERS", "127.0.0.1:7,127.0.0.1:8")
	sink, source := fakeCluster(t, 1), fakeCluster(t, 1)
	p, err := harness.NewPipeline(testContext(t), harness.PipelineOptions{
		Name: "across-1", Seeds: sink, Dir: t.TempDir(),
		SourceSeeds: source, SourceBrokers: []string{"${HARNESS_SOURCE_BROKERS}"},
		SourceSecurity: fmt.Sprintf("tls:\n  enabled: true\n  ca_file: %q\nsasl:\n  mechanism: SCRAM-SHA-512\n  username: u\n  password: p\n", ca),
	})
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(p.Seeds, p.SourceSeeds, p.Brokers, p.SourceBrokers) != fmt.Sprint(sink, source, sink, []string{"${HARNESS_SOURCE_BROKERS}"}) {
		t.Errorf("pipeline seeds %v, source seeds %v, brokers %v, source brokers %v; want %v, %v, %v and the reference", p.Seeds, p.SourceSeeds, p.Brokers, p.SourceBrokers, sink, source, sink)
	}
	for _, c := range []struct {
		seeds []string
		side  string
		has   []string
		lacks []string
	}{
		{source, "source", []string{p.Source}, []string{p.Output, p.DeadLetter}},
		{sink, "sink", []string{p.Output, p.DeadLetter}, []string{p.Source}},
	} {
		td, err := admin(t, c.seeds).ListTopics(testContext(t))
		if err != nil {
			t.Fatal(err)
		}
		for _, n := range c.has {
			if !td.Has(n) {
				t.Errorf("the %s cluster has no topic %s", c.side, n)
			}
		}
		for _, n := range c.lacks {
			if td.Has(n) {
				t.Errorf("the %s cluster has topic %s, which belongs to the other", c.side, n)
			}
		}
	}
	c, err := config.Load(p.Path)
	if err != nil {
		b, _ := os.ReadFile(p.Path)
		t.Fatalf("the relay rejects the file: %v\n%s", err, b)
	}
	src, snk := c.SourceCluster(), c.SinkCluster()
	got := fmt.Sprintln(c.CrossCluster(), src.Brokers, src.TLS.Enabled, src.TLS.CAFile == ca, src.SASL.Mechanism, src.SASL.Username,
		snk.Brokers, snk.TLS.Enabled, snk.SASL.Mechanism)
	want := fmt.Sprintln(true, []string{"127.0.0.1:7", "127.0.0.1:8"}, true, true, "SCRAM-SHA-512", "u", sink, false, "")
	if got != want {
		b, _ := os.ReadFile(p.Path)
		t.Errorf("loaded %swant   %s\n%s", got, want, b)
	}

	one, err := harness.NewPipeline(testContext(t), harness.PipelineOptions{Name: "one-1", Seeds: sink, Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(one.Path)
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(one.SourceSeeds) != fmt.Sprint(sink) || one.SourceBrokers != nil || strings.Contains(string(b), "cluster:") {
		t.Errorf("a pipeline on one cluster: source seeds %v (want %v), file:\n%s", one.SourceSeeds, sink, b)
	}

	_, err = harness.NewPipeline(testContext(t), harness.PipelineOptions{Name: "x", Seeds: sink, Dir: t.TempDir(), SourceBrokers: []string{"a:1"}})
	if err == nil || !strings.Contains(err.Error(), "without SourceSeeds") {
		t.Errorf("SourceBrokers without SourceSeeds: %v, want an error", err)
	}
}

func TestNewPipelineNamesEveryMissingOption(t *testing.T) {
	_, err := harness.NewPipeline(context.Background(), harness.PipelineOptions{})
	if err == nil || err.Error() != "pipeline options: no Name, no Seeds, no Dir" {
		t.Fatalf("NewPipeline without options: %v", err)
	}
}

// sh starts a shell script as a Proc logging to a temporary file.
func sh(t *testing.T, script string, env ...string) *harness.Proc {
	t.Helper()
	p, err := harness.Start(harness.Command{Name: "sh", Path: "/bin/sh", Args: []string{"-c", script},
		Env: env, LogPath: filepath.Join(t.TempDir(), "sh.log")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Kill)
	return p
}

func TestProcReportsHowTheProcessEnded(t *testing.T) {
	for _, tc := range []struct {
		name   string
		script string
		end    func(p *harness.Proc) error
		want   int
	}{
		{"an exit status is its exit code", "exit 3", nil, 3},
		{"a clean exit is 0", "true", nil, 0},
		{"SIGTERM is 128+15", "sleep 60", func(p *harness.Proc) error { return p.Signal(syscall.SIGTERM) }, 143},
		{"Kill is SIGKILL, 128+9", "sleep 60", func(p *harness.Proc) error { p.Kill(); return nil }, 137},
		{"Kill ends a stopped process too", "sleep 60", func(p *harness.Proc) error {
			if err := p.Signal(syscall.SIGSTOP); err != nil {
				return err
			}
			p.Kill()
			return nil
		}, 137},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := sh(t, tc.script)
			if tc.end != nil {
				if err := tc.end(p); err != nil {
					t.Fatal(err)
				}
			}
			code, err := p.Wait(10 * time.Second)
			if err != nil || code != tc.want {
				t.Fatalf("Wait = %d, %v; want %d", code, err, tc.want)
			}
			if !p.Exited() || p.ExitCode() != tc.want {
				t.Fatalf("Exited %v, ExitCode %d; want true, %d", p.Exited(), p.ExitCode(), tc.want)
			}
			if err := p.Signal(syscall.SIGTERM); !errors.Is(err, os.ErrProcessDone) {
				t.Fatalf("signalling an exited process: %v, want os.ErrProcessDone", err)
			}
		})
	}
}

func TestProcWaitGivesUpAfterItsDuration(t *testing.T) {
	p := sh(t, "sleep 60")
	start := time.Now()
	code, err := p.Wait(200 * time.Millisecond)
	if err == nil || code != -1 || !strings.Contains(err.Error(), "sh did not exit within 200ms") {
		t.Fatalf("Wait = %d, %v; want -1 and a timeout naming the process", code, err)
	}
	if time.Since(start) > 5*time.Second || p.Exited() || p.ExitCode() != -1 {
		t.Fatalf("after the timeout: waited %s, exited %v, exit code %d", time.Since(start), p.Exited(), p.ExitCode())
	}
	select {
	case <-p.Done():
		t.Fatal("Done closed while the process runs")
	default:
	}
}

func TestProcLogsOutputWithItsEnvironment(t *testing.T) {
	p := sh(t, `echo "hello $HARNESS_GREETING"; echo oops >&2`, "HARNESS_GREETING=world")
	if _, err := p.Wait(10 * time.Second); err != nil {
		t.Fatal(err)
	}
	if got := p.LogTail(1000); got != "hello world\noops\n" {
		t.Fatalf("log %q", got)
	}
	if got := p.LogTail(5); got != "oops\n" {
		t.Fatalf("tail of 5 bytes %q", got)
	}
	if p.Name() != "sh" || filepath.Base(p.LogPath()) != "sh.log" {
		t.Fatalf("name %q, log %q", p.Name(), p.LogPath())
	}
}

func TestStartSendsStdoutApartFromTheLogWhenAsked(t *testing.T) {
	dir := t.TempDir()
	c := harness.Command{Name: "sh", Path: "/bin/sh", Args: []string{"-c", "echo report; echo log >&2"},
		LogPath: filepath.Join(dir, "log"), StdoutPath: filepath.Join(dir, "out")}
	p, err := harness.Start(c)
	if err != nil {
		t.Fatal(err)
	}
	if code, err := p.Wait(10 * time.Second); err != nil || code != 0 {
		t.Fatalf("exit %d, %v", code, err)
	}
	out, _ := os.ReadFile(c.StdoutPath)
	log, _ := os.ReadFile(c.LogPath)
	if string(out) != "report\n" || string(log) != "log\n" {
		t.Fatalf("stdout %q, log %q", out, log)
	}
}

func TestStartRefusesAProcessWithoutALog(t *testing.T) {
	if _, err := harness.Start(harness.Command{Name: "x", Path: "/bin/true"}); err == nil {
		t.Fatal("started a process whose output would be lost")
	}
}

func TestRelayDLQCommandRunsADeadLetterCommandOnThePipeline(t *testing.T) {
	c := harness.RelayDLQCommand("/bin/relay", "/p.yaml", "replay", "--to", "x")
	if got := c.Name + ": " + c.Path + " " + strings.Join(c.Args, " "); got != "relay dlq replay: /bin/relay dlq replay -c /p.yaml --to x" {
		t.Fatal(got)
	}
}

func TestRelayCommandRunsThePipelineAsTheInstance(t *testing.T) {
	c := harness.RelayCommand("/bin/relay", "/p.yaml", "r1")
	if got := c.Name + ": " + c.Path + " " + strings.Join(c.Args, " "); got != "relay r1: /bin/relay run -c /p.yaml --instance r1 --log-level info" {
		t.Fatal(got)
	}
}
