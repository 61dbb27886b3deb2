package registrytest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/sharerelay/sharerelay/integration/kafkatest"
)

// sharedStartTimeout covers unpacking the application with mvn plus the
// start.
const sharedStartTimeout = 5 * time.Minute

// errNoRun is why the shared registry refuses to start in a binary whose
// TestMain would never stop it.
var errNoRun = errors.New("the test binary's TestMain must run the tests with kafkatest.Main (or kafkatest.Run), which stops the shared registry when they end")

// shared is the registry of this test binary, started at most once.
var shared struct {
	once    sync.Once
	mu      sync.Mutex // held while a test starts it again
	r       *Registry
	dir     string
	err     error
	elapsed time.Duration
	logged  bool
}

// Shared returns this test binary's registry, starting it on first use.
// A test that finds it killed or stopped by an earlier test starts it
// again first, on the same port and database, so the schemas registered
// before keep their ids. It is stopped when the tests end by
// kafkatest.Main (or Run), which the binary's TestMain must call. Tests
// that kill it must not run in parallel with others that use it; they
// take a [Dedicated] one instead when others may. The test is skipped
// under -short, and when no JDK 21+ (or mvn, while the application is
// not cached) is found; with SHARERELAY_REQUIRE_BROKER=1 those skips are
// failures. It fails when the registry cannot start.
func Shared(t testing.TB) *Registry {
	t.Helper()
	skipShort(t)
	shared.once.Do(startShared)
	if err := shared.err; err != nil {
		skipOrFail(t, "shared registry", err)
	}
	shared.mu.Lock()
	defer shared.mu.Unlock()
	if !shared.logged {
		shared.logged = true
		t.Logf("registrytest: Apicurio Registry %s at %s ready in %s (log %s)", Version, shared.r.URL(), shared.elapsed.Round(time.Millisecond), shared.r.LogPath())
	}
	if !shared.r.Running() {
		ctx, cancel := context.WithTimeout(context.Background(), DefaultStartTimeout)
		defer cancel()
		began := time.Now()
		if err := shared.r.Start(ctx); err != nil {
			t.Fatalf("registrytest: start the shared registry, left stopped by an earlier test, again: %v", err)
		}
		t.Logf("registrytest: shared registry %s, left stopped by an earlier test, started again in %s", shared.r.Addr(), time.Since(began).Round(time.Millisecond))
	}
	return shared.r
}

// startShared starts the binary's registry the first time, in a new
// directory, after registering its stop with kafkatest.Run.
func startShared() {
	began := time.Now()
	defer func() { shared.elapsed = time.Since(began) }()
	if !kafkatest.AtExit(stopShared) {
		shared.err = errNoRun
		return
	}
	if shared.dir, shared.err = os.MkdirTemp("", "sharerelay-registry-shared-"); shared.err != nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), sharedStartTimeout)
	defer cancel()
	shared.r, shared.err = StartLocal(ctx, Options{Dir: filepath.Join(shared.dir, "registry")})
}

// stopShared stops the binary's registry when the tests end, keeping its
// directory when they failed and it has a log to read.
func stopShared(failed bool) {
	shared.mu.Lock()
	defer shared.mu.Unlock()
	if shared.dir == "" {
		return
	}
	if r := shared.r; r != nil {
		if err := r.Stop(); err != nil {
			fmt.Fprintf(os.Stderr, "registrytest: %v\n", err)
		}
	}
	log := filepath.Join(shared.dir, "registry", "registry.log")
	if _, err := os.Stat(log); err == nil && failed {
		fmt.Fprintf(os.Stderr, "registrytest: tests failed; registry kept in %s (log %s)\n", shared.dir, log)
	} else if err := os.RemoveAll(shared.dir); err != nil {
		fmt.Fprintf(os.Stderr, "registrytest: remove the registry directory: %v\n", err)
	}
}

// Dedicated starts a registry of the test's own, in a new directory and
// on its own port, configured by opts (the zero Options for the usual
// one; opts.Dir is ignored), for a test that kills or reconfigures it
// while other tests use the shared one. It is stopped when the test
// ends, and its directory removed unless the test failed, when the log's
// path is logged. It is skipped and fails as [Shared] is.
func Dedicated(t testing.TB, opts Options) *Registry {
	t.Helper()
	skipShort(t)
	opts.Dir = ""
	ctx, cancel := context.WithTimeout(context.Background(), sharedStartTimeout)
	defer cancel()
	began := time.Now()
	r, err := StartLocal(ctx, opts)
	if err != nil {
		skipOrFail(t, "registry", err)
	}
	t.Logf("registrytest: registry %s ready in %s (log %s)", r.URL(), time.Since(began).Round(time.Millisecond), r.LogPath())
	t.Cleanup(func() {
		if err := r.Stop(); err != nil {
			t.Errorf("registrytest: %v", err)
		}
		if t.Failed() {
			t.Logf("registrytest: test failed; registry kept in %s (log %s)", r.Dir(), r.LogPath())
		} else if err := os.RemoveAll(r.Dir()); err != nil {
			t.Logf("registrytest: remove the registry directory: %v", err)
		}
	})
	return r
}

// skipShort skips the test under -short, or fails it when a registry is
// required.
func skipShort(t testing.TB) {
	t.Helper()
	if testing.Short() {
		if os.Getenv(kafkatest.EnvRequireBroker) == "1" {
			t.Fatalf("registrytest: a real-registry test under -short with %s=1", kafkatest.EnvRequireBroker)
		}
		t.Skip("registrytest: no schema registry under -short")
	}
}

// skipOrFail skips the test when a tool is missing, unless a registry is
// required, and fails it otherwise.
func skipOrFail(t testing.TB, what string, err error) {
	t.Helper()
	if errors.Is(err, kafkatest.ErrToolMissing) && os.Getenv(kafkatest.EnvRequireBroker) != "1" {
		t.Skipf("registrytest: no %s (install a JDK %d+ and mvn): %v", what, MinJava, err)
	}
	t.Fatalf("registrytest: %s: %v", what, err)
}
