package kafkatest

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/sharerelay/sharerelay/integration/internal/jvmproc"
)

// SharedBroker is a local JVM broker shared by the tests of one binary
// beside the one [Bootstrap] returns: a cluster of its own, with its own
// KRaft cluster id ([NamedClusterID] of its Name), directory and ports.
// It starts when a test first asks for it ([SharedBroker.Broker]), so a
// binary whose tests do not ask pays nothing, and [Run] stops it when the
// tests end. Declare it as a package variable; its Options may make it a
// secured broker ([Secure]) while the binary's first broker stays
// PLAINTEXT:
//
//	var secured *kafkatest.Secured
//	var sink = &kafkatest.SharedBroker{Name: "secured", Options: func(dir string) (kafkatest.Options, error) {
//		opts, s, err := kafkatest.Secure(kafkatest.Options{}, kafkatest.Security{Dir: dir})
//		secured = s
//		return opts, err
//	}}
//
// [SecondBroker] is the plain one, for tests that need two clusters.
type SharedBroker struct {
	// Name names the broker in logs, errors and its directory, and
	// derives its cluster id. Required, and unique in the binary.
	Name string
	// Options returns the broker's options, given a new directory of the
	// broker's own for files it needs (certificates, say); nil means the
	// zero Options. SharedBroker sets Options.Dir (a directory under dir)
	// and, when it is empty, Options.ClusterID. It is called again, with
	// the same dir, when a start fails because another process took a
	// port it picked.
	Options func(dir string) (Options, error)
	// Ready, when set, runs once after the first start, e.g. to add SCRAM
	// users; when it fails, the broker is stopped and every test that
	// asks for it fails with the error.
	Ready func(ctx context.Context, b *Broker) error

	once    sync.Once
	mu      sync.Mutex // held while a test starts the broker again
	b       *Broker
	dir     string
	err     error
	elapsed time.Duration
	logged  bool
}

// sharedBrokers are the SharedBrokers this binary started, for [Run] to
// stop.
var sharedBrokers struct {
	mu   sync.Mutex
	list []*SharedBroker
}

// second is the binary's second broker, see [SecondBroker].
var second = &SharedBroker{Name: "second"}

// SecondBroker returns this test binary's second local broker: a
// PLAINTEXT cluster independent of the one [Bootstrap] and [LocalBroker]
// return (another KRaft cluster id, directory and ports), for tests of a
// relay whose share group is on one cluster and its outputs on another.
// It is a [SharedBroker]: started by the first test that asks for it,
// started again when a test left it stopped or paused, and stopped by
// [Run]. Tests that kill it must not run in parallel with others that use
// it. It is skipped as [SharedBroker.Broker] says.
func SecondBroker(t testing.TB) *Broker {
	t.Helper()
	return second.Broker(t)
}

// NamedClusterID returns a KRaft cluster id derived from name: the same
// name gives the same id, different names different ids (a base64url
// UUID, as StorageTool takes with -t).
func NamedClusterID(name string) string {
	sum := sha256.Sum256([]byte("sharerelay kafkatest cluster " + name))
	return base64.RawURLEncoding.EncodeToString(sum[:16])
}

// Broker returns the shared broker, starting it on first use, for tests
// that use or kill it. A test that leaves it stopped (killed) or paused
// has it started again or resumed when it ends, and a test that finds it
// so (an earlier test's restart failed) starts it again first. The test is
// skipped under -short and when java or mvn is missing (failed instead
// with SHARERELAY_REQUIRE_BROKER=1), and when KAFKA_BOOTSTRAP_SERVERS
// points at an external cluster, which stands for the local brokers and
// cannot give a second cluster; it fails when the broker cannot start.
func (s *SharedBroker) Broker(t testing.TB) *Broker {
	t.Helper()
	if len(ExternalSeeds()) > 0 {
		t.Skipf("kafkatest: %s is set; broker %q is a local cluster of its own, which an external one does not replace", EnvBootstrap, s.Name)
	}
	if testing.Short() {
		if os.Getenv(EnvRequireBroker) == "1" {
			t.Fatalf("kafkatest: a real-broker test (broker %q) under -short with %s=1", s.Name, EnvRequireBroker)
		}
		t.Skipf("kafkatest: no local broker %q under -short", s.Name)
	}
	s.once.Do(s.start)
	if err := s.err; err != nil {
		if errors.Is(err, ErrToolMissing) && os.Getenv(EnvRequireBroker) != "1" {
			t.Skipf("no Kafka broker %q (install java and mvn): %v", s.Name, err)
		}
		t.Fatalf("kafkatest: broker %q: %v", s.Name, err)
	}
	s.mu.Lock()
	if !s.logged {
		s.logged = true
		t.Logf("kafkatest: local broker %q %s (cluster id %s) ready in %s (log %s)", s.Name, s.b.Addr(), s.b.clusterID(), s.elapsed.Round(time.Millisecond), s.b.LogPath())
	}
	err := s.heal()
	s.mu.Unlock()
	if err != nil {
		t.Fatalf("kafkatest: broker %q, left stopped by an earlier test: %v", s.Name, err)
	}
	t.Cleanup(func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		if err := s.heal(); err != nil {
			t.Errorf("kafkatest: broker %q, left stopped by the test: %v", s.Name, err)
		}
	})
	return s.b
}

// heal resumes the broker and starts it when it is not running; s.mu is
// held.
func (s *SharedBroker) heal() error {
	if err := s.b.Resume(); err != nil {
		return err
	}
	if s.b.Running() {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), DefaultStartTimeout)
	defer cancel()
	if err := s.b.Start(ctx); err != nil {
		return fmt.Errorf("start it again: %w", err)
	}
	return nil
}

// start starts the broker the first time, in a new directory, picking new
// ports (and asking Options again) up to three times when another process
// took one.
func (s *SharedBroker) start() {
	began := time.Now()
	defer func() { s.elapsed = time.Since(began) }()
	if s.Name == "" {
		s.err = errors.New("SharedBroker.Name is empty")
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), sharedStartTimeout)
	defer cancel()
	if s.dir, s.err = os.MkdirTemp("", "sharerelay-kafka-"+s.Name+"-"); s.err != nil {
		return
	}
	sharedBrokers.mu.Lock()
	sharedBrokers.list = append(sharedBrokers.list, s)
	sharedBrokers.mu.Unlock()
	for attempt := 1; ; attempt++ {
		opts := Options{}
		if s.Options != nil {
			if opts, s.err = s.Options(s.dir); s.err != nil {
				s.err = fmt.Errorf("options: %w", s.err)
				return
			}
		}
		opts.Dir = filepath.Join(s.dir, "broker")
		if opts.ClusterID == "" {
			opts.ClusterID = NamedClusterID(s.Name)
		}
		s.b, s.err = StartLocal(ctx, opts)
		if s.err == nil || attempt == 3 || !errors.Is(s.err, jvmproc.ErrPortInUse) {
			break
		}
		os.RemoveAll(opts.Dir) // formatted with the ports that failed
	}
	if s.err != nil || s.Ready == nil {
		return
	}
	if err := s.Ready(ctx, s.b); err != nil {
		s.b.Stop()
		s.err = fmt.Errorf("getting it ready: %w", err)
	}
}

// stopSharedBrokers stops the SharedBrokers the binary started, keeping
// their directories when the tests failed.
func stopSharedBrokers(failed bool) {
	sharedBrokers.mu.Lock()
	defer sharedBrokers.mu.Unlock()
	for _, s := range sharedBrokers.list {
		if s.b != nil {
			if err := s.b.Stop(); err != nil {
				fmt.Fprintf(os.Stderr, "kafkatest: broker %q: %v\n", s.Name, err)
			}
		}
		if failed {
			fmt.Fprintf(os.Stderr, "kafkatest: tests failed; broker %q kept in %s (broker/broker.log)\n", s.Name, s.dir)
		} else if err := os.RemoveAll(s.dir); err != nil {
			fmt.Fprintf(os.Stderr, "kafkatest: remove the directory of broker %q: %v\n", s.Name, err)
		}
	}
	sharedBrokers.list = nil
}
