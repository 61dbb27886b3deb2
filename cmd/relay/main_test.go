package main

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/goleak"

	"github.com/sharerelay/sharerelay/metrics"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestValidateAcceptsTheShippedPipelines(t *testing.T) {
	files, _ := filepath.Glob("../../configs/*.yaml")
	if len(files) == 0 {
		t.Fatal("no shipped pipelines found")
	}
	var out, errb bytes.Buffer
	if code := run(append([]string{"validate"}, files...), &out, &errb); code != 0 {
		t.Fatalf("validate exit %d: %s", code, errb.String())
	}
}

func TestValidateRejectsABadFileWithFileAndLineAndTouchesNoBroker(t *testing.T) {
	// The brokers point at a closed port: validate must not try them.
	bad := filepath.Join(t.TempDir(), "bad.yaml")
	os.WriteFile(bad, []byte("name: x\nbrokers: [127.0.0.1:1]\nworkers: four\nsource: {topics: [a]}\noutput: {topic: a}\ndead_letter: {topic: d}\nfoo: 1\n"), 0o644)
	var out, errb bytes.Buffer
	start := time.Now()
	code := run([]string{"validate", bad}, &out, &errb)
	if code == 0 {
		t.Fatal("validate accepted a bad file")
	}
	msg := errb.String()
	for _, want := range []string{bad + ":3:", "workers", bad + ":7:", "foo", "output.topic"} {
		if !strings.Contains(msg, want) {
			t.Errorf("message lacks %q:\n%s", want, msg)
		}
	}
	if time.Since(start) > 5*time.Second {
		t.Errorf("validate took %s; it must not wait on a broker", time.Since(start))
	}
}

func TestRunWithAnInvalidConfigStopsBeforeTouchingKafka(t *testing.T) {
	bad := filepath.Join(t.TempDir(), "bad.yaml")
	os.WriteFile(bad, []byte("name: x\nbrokers: [127.0.0.1:1]\n"), 0o644)
	var errb bytes.Buffer
	if code := run([]string{"run", "-c", bad, "--instance", "t"}, io.Discard, &errb); code == 0 {
		t.Fatal("run accepted an invalid config")
	}
	if !strings.Contains(errb.String(), "source.topics") {
		t.Fatalf("error does not name the missing field: %s", errb.String())
	}
}

func TestTheDemoPassesOnAnEmbeddedCluster(t *testing.T) {
	if testing.Short() {
		t.Skip("the demo takes a few seconds")
	}
	var out, errb bytes.Buffer
	if code := run([]string{"demo"}, &out, &errb); code != 0 {
		t.Fatalf("demo exit %d\n%s\n%s", code, out.String(), errb.String())
	}
	if !strings.Contains(out.String(), "1996") || strings.Contains(out.String(), "MISMATCH") {
		t.Fatalf("demo output:\n%s", out.String())
	}
}

func TestMetricsEndpointServesMetricsHealthAndReadiness(t *testing.T) {
	reg := prometheus.NewRegistry()
	m := metrics.New(reg, "p")
	m.RecordsPolled.WithLabelValues("0").Add(3)
	srv, err := metrics.Listen("127.0.0.1:0", reg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx) }()
	get := func(path string) (int, string) {
		resp, err := http.Get("http://" + srv.Addr() + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, _ := get("/healthz"); code != 200 {
		t.Errorf("/healthz = %d", code)
	}
	if code, _ := get("/readyz"); code != 503 {
		t.Errorf("/readyz before ready = %d, want 503", code)
	}
	srv.SetReadiness(func() (bool, string) { return false, "worker 0: destination unavailable" })
	if code, body := get("/readyz"); code != 503 || !strings.Contains(body, "destination unavailable") {
		t.Errorf("/readyz when paused = %d %q, want 503 with the reason", code, body)
	}
	srv.SetReadiness(func() (bool, string) { return true, "ready" })
	if code, _ := get("/readyz"); code != 200 {
		t.Errorf("/readyz when ready = %d", code)
	}
	if _, body := get("/metrics"); !strings.Contains(body, `sharerelay_records_polled_total{pipeline="p",worker="0"} 3`) {
		t.Errorf("/metrics lacks the counter:\n%s", body)
	}
	http.DefaultClient.CloseIdleConnections()
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}
