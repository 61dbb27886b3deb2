package registrytest

import (
	"context"
	"net"
	"os"
	"testing"
	"time"
)

// takePort listens on a free port of 127.0.0.1 until the test ends, as
// another process would, and returns it.
func takePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return l.Addr().(*net.TCPAddr).Port
}

func TestAStartOnAPortAnotherProcessTookIsRetriedOnAnother(t *testing.T) {
	skipShort(t)
	ctx, cancel := context.WithTimeout(context.Background(), sharedStartTimeout)
	defer cancel()
	r, err := newRegistry(ctx, Options{})
	if err != nil {
		skipOrFail(t, "registry", err)
	}
	t.Cleanup(func() {
		r.Stop()
		if !t.Failed() {
			removeAll(t, r.Dir())
		}
	})
	taken := takePort(t)

	// The first attempt, on the taken port, fails as jvmproc.ErrPortInUse (as
	// its log says); the second picks another port.
	r.port = taken
	began := time.Now()
	if err := r.startOnPorts(ctx, true); err != nil {
		t.Fatalf("a start allowed to pick again: %v", err)
	}
	t.Logf("started on port %d after a failed attempt on %d, in %s", r.port, taken, time.Since(began).Round(time.Millisecond))
	if r.port == taken {
		t.Errorf("the registry runs on the taken port %d", taken)
	}
	log, err := os.ReadFile(r.LogPath())
	if err != nil {
		t.Fatal(err)
	}
	if !containsPortInUse(string(log)) {
		t.Errorf("the log of the first attempt does not say the port was in use:\n%s", log)
	}
}

// removeAll removes a test's registry directory, logging a failure.
func removeAll(t *testing.T, dir string) {
	if err := os.RemoveAll(dir); err != nil {
		t.Logf("remove %s: %v", dir, err)
	}
}
