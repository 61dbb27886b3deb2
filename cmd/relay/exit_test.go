package main

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sharerelay/sharerelay/internal/kfaketest"
)

// exitCase is one command line and what it must do: its exit code, and
// text its stdout and stderr must hold.
type exitCase struct {
	name string
	// args returns the command line; it may start a cluster or a server
	// for t.
	args           func(t *testing.T) []string
	code           int
	stdout, stderr string
}

// Files shared by the cases: a valid pipeline on a closed port (no
// broker is reached by the offline commands), an invalid one, and tests.
func exitFiles(t *testing.T) (dir string) {
	return writeFiles(t, map[string]string{
		"packing.yaml": packing,
		"other.yaml":   packing,
		"bad.yaml":     "name: x\nbrokers: [127.0.0.1:1]\nworkers: four\n",
		"tests/packing.test.yaml": "cases: [{name: passes, input: {value: {}}, " +
			"expect: {outputs: [{value: {status: packing}}]}}]\n",
		"failing.test.yaml": "cases: [{name: fails, input: {value: {}}, expect: {release: true}}]\n",
		"broken.test.yaml":  "cases: [{name: broken, expect: {}}\n",
	})
}

// clusterPipeline starts kfake with topics and writes a pipeline file for
// it (orders to jobs, dead letters in jobs.dlq, at least once; extra is
// YAML appended to it).
func clusterPipeline(t *testing.T, extra string, topics ...string) (string, *kfake.Cluster) {
	t.Helper()
	c := kfaketest.Cluster(t, kfake.SeedTopics(1, topics...))
	dir := writeFiles(t, map[string]string{"p.yaml": fmt.Sprintf("name: p\nbrokers: [%s]\ndelivery: at-least-once\n"+
		"source: {topics: [orders], group: g}\noutput: {topic: jobs}\ndead_letter: {topic: jobs.dlq}\n%s", c.ListenAddrs()[0], extra)})
	return filepath.Join(dir, "p.yaml"), c
}

// readyServer serves /readyz answering code and body, for relay health.
func readyServer(t *testing.T, code int, body string) string {
	t.Helper()
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/readyz" {
			http.NotFound(w, r)
			return
		}
		w.WriteHeader(code)
		fmt.Fprintln(w, body)
	}))
	t.Cleanup(s.Close)
	return s.Listener.Addr().String()
}

// closedAddr returns an address nothing listens on.
func closedAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

func TestEveryCommandExitsZeroOnSuccessOneWhenTheCheckFailsAndTwoOnAUsageOrConfigError(t *testing.T) {
	dir := exitFiles(t)
	f := func(name string) string { return filepath.Join(dir, name) }
	static := func(args ...string) func(*testing.T) []string { return func(*testing.T) []string { return args } }
	for _, tc := range []exitCase{
		// relay with no command, help and unknown commands.
		{name: "relay alone prints the commands to stderr and exits 2", args: static(), code: 2, stderr: "commands:"},
		{name: "an unknown command exits 2", args: static("frobnicate"), code: 2, stderr: `unknown command "frobnicate"`},
		{name: "relay help exits 0", args: static("help"), code: 0, stdout: "exit status, the same for every command"},
		{name: "relay help of an unknown command exits 2", args: static("help", "frobnicate"), code: 2, stderr: "unknown command"},

		// validate
		{name: "validate exits 0 on a valid file", args: static("validate", f("packing.yaml")), code: 0, stdout: "packing.yaml: ok"},
		{name: "validate exits 2 on an invalid file", args: static("validate", f("bad.yaml")), code: 2, stderr: "bad.yaml:3:"},
		{name: "validate exits 2 when one file of two is invalid", args: static("validate", f("packing.yaml"), f("bad.yaml")), code: 2, stdout: "packing.yaml: ok"},
		{name: "validate exits 2 on a missing file", args: static("validate", f("nope.yaml")), code: 2, stderr: "no such file"},
		{name: "validate exits 2 with no file", args: static("validate"), code: 2, stderr: "give one or more pipeline files"},
		{name: "validate exits 2 on an unknown flag", args: static("validate", "--frobnicate", f("packing.yaml")), code: 2, stderr: "flag provided but not defined"},

		// test
		{name: "test exits 0 when every case passes", args: static("test", f("packing.yaml")), code: 0, stdout: "1 passed, 0 failed"},
		{name: "test exits 1 when a case fails", args: static("test", f("packing.yaml"), f("failing.test.yaml")), code: 1, stdout: "FAIL fails"},
		{name: "test exits 2 on an invalid pipeline", args: static("test", f("bad.yaml")), code: 2, stderr: "workers"},
		{name: "test exits 2 on a test file that does not load", args: static("test", f("packing.yaml"), f("broken.test.yaml")), code: 2, stderr: "broken.test.yaml"},
		{name: "test exits 2 when a test file is missing, even beside a failing case",
			args: static("test", f("packing.yaml"), f("failing.test.yaml"), f("nope.test.yaml")), code: 2, stdout: "FAIL fails", stderr: "nope.test.yaml"},
		{name: "test exits 2 with no file", args: static("test"), code: 2, stderr: "give a pipeline file"},

		// check
		{name: "check exits 0 when every check passes", args: func(t *testing.T) []string {
			path, _ := clusterPipeline(t, "", "orders", "jobs", "jobs.dlq")
			return []string{"check", path}
		}, code: 0, stdout: "ok: brokers"},
		{name: "check exits 1 on a FAIL line", args: func(t *testing.T) []string {
			path, _ := clusterPipeline(t, "", "orders", "jobs")
			return []string{"check", path}
		}, code: 1, stdout: "FAIL: dead-letter topic jobs.dlq"},
		{name: "check exits 2 on an invalid file", args: static("check", f("bad.yaml")), code: 2, stderr: "workers"},
		{name: "check exits 2 with no file", args: static("check"), code: 2, stderr: "no pipeline file given"},
		{name: "check exits 2 given two files", args: static("check", f("packing.yaml"), f("other.yaml")), code: 2, stderr: "one pipeline file expected"},

		// run
		{name: "run exits 2 on an invalid file, before touching Kafka", args: static("run", "--instance", "t", f("bad.yaml")), code: 2, stderr: "bad.yaml:3:"},
		{name: "run exits 2 with no file", args: static("run", "--instance", "t"), code: 2, stderr: "no pipeline file given"},
		{name: "run exits 2 on a log format it does not know", args: static("run", "--log-format", "xml", f("packing.yaml")), code: 2, stderr: "--log-format"},
		{name: "run exits 2 when the health and metrics port is in use, naming the flag", args: func(t *testing.T) []string {
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { ln.Close() })
			return []string{"run", "--instance", "t", "--metrics-addr", ln.Addr().String(), f("packing.yaml")}
		}, code: 2, stderr: "from=--metrics-addr"},
		{name: "run exits 1 when the relay fails: a topic missing at start", args: func(t *testing.T) []string {
			path, _ := clusterPipeline(t, "", "orders", "jobs")
			return []string{"run", "--instance", "t", path}
		}, code: 1, stderr: "jobs.dlq"},

		// health
		{name: "health exits 0 when the relay is ready", args: func(t *testing.T) []string {
			return []string{"health", "--addr", readyServer(t, 200, "ready")}
		}, code: 0, stdout: "ready"},
		{name: "health exits 1 when the relay is not ready, saying why", args: func(t *testing.T) []string {
			return []string{"health", "--addr", readyServer(t, 503, "not ready: worker 0: destination unavailable")}
		}, code: 1, stdout: "not ready: worker 0: destination unavailable"},
		{name: "health exits 1 when nothing answers", args: func(t *testing.T) []string {
			return []string{"health", "--addr", closedAddr(t)}
		}, code: 1, stderr: "not reachable"},
		{name: "health exits 2 on an address without a port", args: static("health", "--addr", "localhost"), code: 2, stderr: "missing port"},
		{name: "health exits 2 given an argument", args: static("health", f("packing.yaml")), code: 2, stderr: "unexpected argument"},

		// verify
		{name: "verify exits 1 when not exact: a source record neither output nor dead-lettered", args: func(t *testing.T) []string {
			return []string{"verify", seededPipeline(t)}
		}, code: 1, stdout: "NOT EXACT"},
		{name: "verify exits 2 on an invalid file", args: static("verify", f("bad.yaml")), code: 2, stderr: "workers"},
		{name: "verify exits 2 with no file", args: static("verify"), code: 2, stderr: "no pipeline file given"},

		// dlq
		{name: "dlq inspect exits 0 on a readable dead-letter topic", args: func(t *testing.T) []string {
			return []string{"dlq", "inspect", dlqCluster(t, 2)}
		}, code: 0, stdout: "read 2, selected 2"},
		{name: "dlq inspect exits 2 on a selection that does not parse", args: func(t *testing.T) []string {
			return []string{"dlq", "inspect", "--since", "yesterday-ish", f("packing.yaml")}
		}, code: 2, stderr: "--since"},
		{name: "dlq replay exits 0 on a dry run", args: func(t *testing.T) []string {
			return []string{"dlq", "replay", "--dry-run", "--to", "copies", dlqCluster(t, 2)}
		}, code: 0, stdout: "DRY RUN"},
		{name: "dlq replay exits 1 when the replay fails", args: func(t *testing.T) []string {
			return []string{"dlq", "replay", "--to", "jobs.dlq", dlqCluster(t, 1)}
		}, code: 1, stderr: "dead-letter topic itself"},
		{name: "dlq replay exits 2 with no file", args: static("dlq", "replay", "--dry-run"), code: 2, stderr: "no pipeline file given"},
		{name: "dlq alone exits 2, listing its commands", args: static("dlq"), code: 2, stderr: "relay dlq inspect"},
		{name: "dlq with an unknown command exits 2", args: static("dlq", "purge"), code: 2, stderr: `unknown command "purge"`},

		// demo and version
		{name: "demo exits 2 given an argument", args: static("demo", "now"), code: 2, stderr: "unexpected argument"},
		{name: "version exits 0", args: static("version"), code: 0, stdout: "relay "},
		{name: "version exits 2 given an argument", args: static("version", "--short"), code: 2, stderr: "flag provided but not defined"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out, errb bytes.Buffer
			args := tc.args(t)
			code := run(args, &out, &errb)
			if code != tc.code || !strings.Contains(out.String(), tc.stdout) || !strings.Contains(errb.String(), tc.stderr) {
				t.Fatalf("relay %s: exit %d, stdout:\n%s\nstderr:\n%s\nwant exit %d, %q in stdout, %q in stderr",
					strings.Join(args, " "), code, out.String(), errb.String(), tc.code, tc.stdout, tc.stderr)
			}
		})
	}
}

// seededPipeline starts kfake with one record in orders and nothing in
// jobs, and writes its pipeline file: a pipeline that is not exact.
func seededPipeline(t *testing.T) string {
	t.Helper()
	path, c := clusterPipeline(t, "", "orders", "jobs", "jobs.dlq")
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if err := cl.ProduceSync(context.Background(), &kgo.Record{Topic: "orders", Value: []byte(`{"order_id":1}`)}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	return path
}
