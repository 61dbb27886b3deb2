package kafkatest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// Environment variables read by the test helpers.
const (
	// EnvBootstrap lists the seed brokers of an external cluster
	// (comma separated); when set, no local broker is started.
	EnvBootstrap = "KAFKA_BOOTSTRAP_SERVERS"
	// EnvRequireBroker, when "1", turns "no broker available" skips into
	// failures.
	EnvRequireBroker = "SHARERELAY_REQUIRE_BROKER"
)

// sharedStartTimeout covers fetching the jars with mvn plus the start.
const sharedStartTimeout = 5 * time.Minute

// shared is the broker of this test binary, started at most once: a
// local JVM broker, or a container (SHARERELAY_BROKER=testcontainers).
var shared struct {
	once      sync.Once
	broker    *Broker
	container *container
	err       error
	elapsed   time.Duration
	logged    atomic.Bool
}

// Main runs the tests of a test binary and then stops the local brokers
// the tests started (the one [Bootstrap] returns, every [SharedBroker],
// the [LocalCluster]), and exits. Call it from TestMain:
//
//	func TestMain(m *testing.M) { kafkatest.Main(m) }
//
// It starts nothing itself; what other helpers registered with [AtExit]
// is stopped too. When tests failed, the broker directories (with
// broker.log) are kept and their paths printed; otherwise they are removed. A
// TestMain with its own clean-up to do after the tests calls Run instead.
func Main(m *testing.M) { os.Exit(Run(m)) }

// Run is Main without the exit: it runs the tests, calls the functions
// [AtExit] registered, stops the local brokers and cluster the tests
// started ([SharedBroker], [LocalCluster]) as Main does, and returns the
// exit code for the caller to pass to os.Exit once it has cleaned up
// (deferred calls do not run on os.Exit).
func Run(m *testing.M) int {
	atExit.mu.Lock()
	atExit.running = true
	atExit.mu.Unlock()
	code := m.Run()
	runAtExit(code != 0)
	stopSharedBrokers(code != 0)
	stopSharedCluster(code != 0)
	if c := shared.container; c != nil {
		if err := c.stop(); err != nil {
			fmt.Fprintf(os.Stderr, "kafkatest: stop the %s container: %v\n", c.image, err)
		}
	}
	if b := shared.broker; b != nil {
		if err := b.Stop(); err != nil {
			fmt.Fprintf(os.Stderr, "kafkatest: %v\n", err)
		}
		if code != 0 {
			fmt.Fprintf(os.Stderr, "kafkatest: tests failed; broker log kept at %s (directory %s)\n", b.LogPath(), b.Dir())
		} else if err := os.RemoveAll(b.Dir()); err != nil {
			fmt.Fprintf(os.Stderr, "kafkatest: remove broker directory: %v\n", err)
		}
	}
	return code
}

// atExit holds the functions [AtExit] registered, for [Run] to call.
var atExit struct {
	mu      sync.Mutex
	running bool // Run is running the tests
	fns     []func(failed bool)
}

// AtExit registers f for [Run] (and so [Main]) to call when the tests
// have ended, before it stops the brokers, with whether they failed: the
// last registered is called first. It lets another test helper that
// starts a process for the whole binary (the schema registry of
// integration/registrytest) have it stopped by the TestMain a package
// already has, kafkatest.Main or Run, with no clean-up of its own. It
// registers nothing and reports false when the tests are not run through
// Run, which would never call f: the caller should then fail the test
// rather than leave its process running.
func AtExit(f func(failed bool)) bool {
	atExit.mu.Lock()
	defer atExit.mu.Unlock()
	if !atExit.running {
		return false
	}
	atExit.fns = append(atExit.fns, f)
	return true
}

// runAtExit calls the functions AtExit registered, last first.
func runAtExit(failed bool) {
	atExit.mu.Lock()
	fns := atExit.fns
	atExit.fns, atExit.running = nil, false
	atExit.mu.Unlock()
	for i := len(fns) - 1; i >= 0; i-- {
		fns[i](failed)
	}
}

// Bootstrap returns the seed brokers tests should use: those in
// KAFKA_BOOTSTRAP_SERVERS if set, otherwise the address of this test
// binary's broker, started on first use: a local JVM broker, or with
// SHARERELAY_BROKER=testcontainers a container (see [EnvBroker]). It skips the test when
// java or mvn is missing (fails instead with SHARERELAY_REQUIRE_BROKER=1)
// and fails it when the broker cannot start.
func Bootstrap(t testing.TB) []string {
	t.Helper()
	if seeds := ExternalSeeds(); len(seeds) > 0 {
		return seeds
	}
	return sharedSeeds(t)
}

// LocalBroker returns this test binary's local broker, starting it if
// needed, for tests that kill or restart it. Such tests must not run in
// parallel with others. If the test leaves the broker stopped, it is
// restarted when the test ends. The test is skipped when
// KAFKA_BOOTSTRAP_SERVERS points at an external cluster, which it cannot
// restart.
func LocalBroker(t testing.TB) *Broker {
	t.Helper()
	if len(ExternalSeeds()) > 0 {
		t.Skipf("kafkatest: %s is set; an external cluster cannot be killed or restarted", EnvBootstrap)
	}
	b := sharedBroker(t)
	t.Cleanup(func() {
		if b.Running() {
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), DefaultStartTimeout)
		defer cancel()
		if err := b.Start(ctx); err != nil {
			t.Errorf("kafkatest: restart the broker left stopped by the test: %v", err)
		}
	})
	return b
}

// ExternalSeeds returns the seed brokers listed in KAFKA_BOOTSTRAP_SERVERS
// (comma separated, blanks ignored), or nil when it names none. A non-empty
// result means the operator chose an external cluster: tests must use it
// and not start, kill or restart a broker of their own.
func ExternalSeeds() []string {
	var seeds []string
	for _, s := range strings.Split(os.Getenv(EnvBootstrap), ",") {
		if s = strings.TrimSpace(s); s != "" {
			seeds = append(seeds, s)
		}
	}
	return seeds
}

// sharedBroker returns the binary's JVM broker, started once, or skips or
// fails the test. Under SHARERELAY_BROKER=testcontainers there is none:
// the test (one that kills or restarts the broker) is skipped.
func sharedBroker(t testing.TB) *Broker {
	t.Helper()
	startShared(t)
	if shared.container != nil {
		t.Skipf("kafkatest: %s=%s: this test kills or restarts the broker, which needs the JVM broker", EnvBroker, BackendTestcontainers)
	}
	return shared.broker
}

// sharedSeeds returns the seed brokers of the binary's broker, JVM or
// container, started once.
func sharedSeeds(t testing.TB) []string {
	t.Helper()
	startShared(t)
	if shared.container != nil {
		return shared.container.seeds
	}
	return []string{shared.broker.Addr()}
}

// startShared starts the binary's broker once, with the backend
// SHARERELAY_BROKER chooses, or skips or fails the test. A missing java or
// mvn skips (unless the broker is required); a testcontainers backend that
// cannot start fails: it was asked for explicitly.
func startShared(t testing.TB) {
	t.Helper()
	if testing.Short() {
		if os.Getenv(EnvRequireBroker) == "1" {
			t.Fatal("kafkatest: a real-broker test under -short with " + EnvRequireBroker + "=1")
		}
		t.Skip("kafkatest: no local broker under -short")
	}
	shared.once.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), sharedStartTimeout)
		defer cancel()
		began := time.Now()
		c, err := chooseBackend(os.Getenv)
		switch {
		case err != nil:
			shared.err = err
		case c.backend == BackendTestcontainers:
			shared.container, shared.err = startContainerFor(ctx, c)
		default:
			shared.broker, shared.err = StartLocal(ctx, Options{})
		}
		shared.elapsed = time.Since(began)
	})
	if err := shared.err; err != nil {
		if errors.Is(err, ErrToolMissing) && os.Getenv(EnvRequireBroker) != "1" {
			t.Skipf("no Kafka broker (set %s, or install java and mvn): %v", EnvBootstrap, err)
		}
		t.Fatalf("kafkatest: shared broker: %v", err)
	}
	if shared.logged.CompareAndSwap(false, true) {
		if c := shared.container; c != nil {
			t.Logf("kafkatest: container broker %s (%s) ready in %s", c.seeds, c.image, shared.elapsed.Round(time.Millisecond))
		} else {
			t.Logf("kafkatest: local broker %s ready in %s (log %s)", shared.broker.Addr(), shared.elapsed.Round(time.Millisecond), shared.broker.LogPath())
		}
	}
}

var (
	topicSeq     atomic.Int64
	topicUnsafe  = regexp.MustCompile(`[^a-zA-Z0-9._-]+`)
	topicRunSalt = strconv.FormatInt(time.Now().UnixNano()%(1<<32), 36)
)

// NewTopic creates a topic with the given number of partitions and
// replication factor 1, named after the test and unique across runs, and
// returns its name. The topic is deleted when the test ends.
func NewTopic(t testing.TB, seeds []string, partitions int32) string {
	t.Helper()
	name := topicUnsafe.ReplaceAllString(t.Name(), "_")
	if len(name) > 180 {
		name = name[:180]
	}
	name = fmt.Sprintf("t-%s-%s-%d", name, topicRunSalt, topicSeq.Add(1))

	adm, ctx := Admin(t, seeds)
	resp, err := adm.CreateTopic(ctx, partitions, 1, nil, name)
	if err == nil {
		err = resp.Err
	}
	if err != nil {
		t.Fatalf("kafkatest: create topic %s: %v", name, err)
	}
	t.Cleanup(func() { deleteTopic(t, seeds, name) })
	return name
}

// adminTimeout bounds the few admin requests a test makes with [Admin].
const adminTimeout = 30 * time.Second

// Admin returns an admin client of the cluster at seeds and a context that
// ends 30 seconds from now, for the few admin requests a test makes; the
// client is closed and the context cancelled when t and its subtests end.
// It fails t if the client cannot be made.
func Admin(t testing.TB, seeds []string) (*kadm.Client, context.Context) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...))
	if err != nil {
		t.Fatalf("kafkatest: admin client: %v", err)
	}
	t.Cleanup(cl.Close)
	ctx, cancel := context.WithTimeout(context.Background(), adminTimeout)
	t.Cleanup(cancel)
	return kadm.NewClient(cl), ctx
}

// deleteTopic deletes a test topic, logging (not failing on) errors: the
// broker may have been stopped by the test.
func deleteTopic(t testing.TB, seeds []string, name string) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.RequestRetries(1))
	if err != nil {
		t.Logf("kafkatest: delete topic %s: %v", name, err)
		return
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := kadm.NewClient(cl).DeleteTopic(ctx, name)
	if err == nil {
		err = resp.Err
	}
	if err != nil {
		t.Logf("kafkatest: delete topic %s: %v", name, err)
	}
}
