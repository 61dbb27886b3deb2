package main

import (
	"bytes"
	"context"
	"io"
	"net"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sharerelay/sharerelay/config"
)

func TestTheHealthAndMetricsAddressIsTheFlagsElseTheFilesElseTheEnvironments(t *testing.T) {
	for _, tc := range []struct {
		name                   string
		flag, listen, env      string
		wantAddr, wantFromPart string
	}{
		{"the flag wins over the file and the environment", ":1", ":2", ":3", ":1", "--metrics-addr"},
		{"the file wins over the environment", "", ":2", ":3", ":2", "metrics.listen in p.yaml"},
		{"the environment applies to a file without metrics.listen", "", "", ":3", ":3", "$RELAY_METRICS_ADDR"},
		{"with none of them health and metrics are off", "", "", "", "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv(metricsAddrEnv, tc.env)
			got := chooseMetricsAddr(tc.flag, &config.Pipeline{Metrics: config.Metrics{Listen: tc.listen}}, "p.yaml")
			if got.addr != tc.wantAddr || got.from != tc.wantFromPart {
				t.Fatalf("got %+v, want %s from %s", got, tc.wantAddr, tc.wantFromPart)
			}
		})
	}
}

func TestAPortInUseStopsTheStartWithExitTwoNamingWhereTheAddressCameFrom(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	taken := ln.Addr().String()
	dir := writeFiles(t, map[string]string{
		"packing.yaml": packing,
		"listen.yaml":  packing + "metrics: {listen: \"" + taken + "\"}\n",
	})
	for _, tc := range []struct {
		name, file, env string
		args            []string
		from            string
	}{
		{"the flag", "packing.yaml", "", []string{"--metrics-addr", taken}, "from=--metrics-addr"},
		{"the file", "listen.yaml", "", nil, `from="metrics.listen in ` + filepath.Join(dir, "listen.yaml") + `"`},
		{"the environment", "packing.yaml", taken, nil, "from=$RELAY_METRICS_ADDR"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv(metricsAddrEnv, tc.env)
			var errb bytes.Buffer
			start := time.Now()
			code := run(append(append([]string{"run", "--instance", "t"}, tc.args...), filepath.Join(dir, tc.file)), io.Discard, &errb)
			log := errb.String()
			if code != 2 || !strings.Contains(log, "cannot serve health and metrics") || !strings.Contains(log, tc.from) ||
				!strings.Contains(log, "address already in use") {
				t.Fatalf("exit %d:\n%s\nwant exit 2, the address in use, and %s", code, log, tc.from)
			}
			// Before touching Kafka: the relay's first try at the brokers
			// (a closed port here) would log franz-go's dial failure.
			if strings.Contains(log, "franz-go") || strings.Contains(log, "connecting to the cluster") || time.Since(start) > 5*time.Second {
				t.Errorf("the relay tried the cluster before stopping:\n%s", log)
			}
		})
	}
}

// servingAddr is the address of the log's "serving /metrics" line.
var servingAddr = regexp.MustCompile(`msg="serving /metrics, /healthz, /readyz" .*addr=(\S+) from=(\S+)`)

func TestAFileWithoutMetricsServesReadinessOnRelayMetricsAddrAndRelayHealthAsksIt(t *testing.T) {
	// The newcomer: a pipeline file with no metrics block, and
	// the container image's RELAY_METRICS_ADDR.
	t.Setenv(metricsAddrEnv, "127.0.0.1:0")
	path, _ := clusterPipeline(t, "", "orders", "jobs", "jobs.dlq")
	log, stop := startRun(t, path, "--instance", "i1")
	log.waitFor(t, "serving /metrics")
	m := servingAddr.FindStringSubmatch(log.String())
	if m == nil || m[2] != "$RELAY_METRICS_ADDR" {
		t.Fatalf("no serving line from $RELAY_METRICS_ADDR:\n%s", log.String())
	}
	// relay health answers 1 until the relay is ready, then 0.
	var out, errb bytes.Buffer
	for deadline := time.Now().Add(20 * time.Second); ; {
		out.Reset()
		errb.Reset()
		code := run([]string{"health", "--addr", m[1]}, &out, &errb)
		if code == 0 && out.String() == "ready\n" {
			break
		}
		if code != 1 || !strings.HasPrefix(out.String(), "not ready: ") {
			t.Fatalf("relay health before the relay is ready: exit %d, stdout %q, stderr %q; want exit 1 and why", code, out.String(), errb.String())
		}
		if time.Now().After(deadline) {
			t.Fatalf("relay health still says %q after 20 s:\n%s", out.String(), log.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
	if code := stop(); code != 0 {
		t.Fatalf("relay run: exit %d after its stop, want 0:\n%s", code, log.String())
	}
	// And with the relay gone, nothing answers.
	if code := run([]string{"health", "--addr", m[1]}, &out, &errb); code != 1 || !strings.Contains(errb.String(), "not reachable") {
		t.Fatalf("relay health with the relay stopped: exit %d, stderr %q; want exit 1, not reachable", code, errb.String())
	}
}

func TestRelayHealthAsksTheLoopbackForAnAddressOnEveryInterface(t *testing.T) {
	for _, tc := range []struct{ name, addr, want string }{
		{"a port alone", ":9464", "127.0.0.1:9464"},
		{"every IPv4 interface", "0.0.0.0:9464", "127.0.0.1:9464"},
		{"every IPv6 interface", "[::]:9464", "[::1]:9464"},
		{"a host", "relay-0.relay:9464", "relay-0.relay:9464"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got, err := dialAddr(tc.addr); err != nil || got != tc.want {
				t.Fatalf("dialAddr(%q) = %q, %v; want %q", tc.addr, got, err, tc.want)
			}
		})
	}
}

// lockedBuffer is a bytes.Buffer that a running relay writes its log to
// while the test reads it.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// waitFor waits until the log holds want, or fails t after 20 s.
func (b *lockedBuffer) waitFor(t *testing.T, want string) {
	t.Helper()
	for deadline := time.Now().Add(20 * time.Second); !strings.Contains(b.String(), want); {
		if time.Now().After(deadline) {
			t.Fatalf("no %q in the log after 20 s:\n%s", want, b.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// startRun starts relay run with args on the pipeline file path. stop
// stops it as a signal would and returns its exit code.
func startRun(t *testing.T, path string, args ...string) (log *lockedBuffer, stop func() int) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	log = &lockedBuffer{}
	done := make(chan int, 1)
	go func() {
		done <- runPipeline(ctx, lookup(commands, "run"), append(args, path), io.Discard, log)
	}()
	var code *int
	stop = func() int {
		t.Helper()
		if code != nil {
			return *code
		}
		cancel()
		select {
		case c := <-done:
			code = &c
			return c
		case <-time.After(30 * time.Second):
			t.Fatalf("relay run did not stop within 30 s of its context:\n%s", log.String())
			return -1
		}
	}
	t.Cleanup(func() { stop() })
	return log, stop
}

// startUp runs relay run with args on the pipeline file path until the
// log holds until, then stops it; it returns the exit code and the log.
func startUp(t *testing.T, path, until string, args ...string) (int, string) {
	t.Helper()
	log, stop := startRun(t, path, args...)
	log.waitFor(t, until)
	return stop(), log.String()
}
