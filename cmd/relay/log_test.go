package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// span prints, but has no exported field: JSON alone would write it as {}.
type span struct{ from, to int64 }

func (s span) String() string { return "orders[0] from 3 to 9" }

func TestTheLogWritesDurationsAsTextAndListsAndMapsWithoutGoSyntax(t *testing.T) {
	attrs := []any{
		"backoff", 500 * time.Millisecond,
		"transforms", []any{map[string]any{"type": "set", "value": "packing", "after": 2 * time.Second}},
		"spans", []span{{3, 9}},
		"err", errors.New("boom"),
	}
	t.Run("text", func(t *testing.T) {
		var b bytes.Buffer
		log, err := newLogger(&b, "info", "text")
		if err != nil {
			t.Fatal(err)
		}
		log.Info("x", attrs...)
		line := b.String()
		for _, want := range []string{" backoff=500ms ", " transforms.0.after=2s ", " transforms.0.type=set ", " transforms.0.value=packing ",
			` spans.0="orders[0] from 3 to 9" `, " err=boom\n"} {
			if !strings.Contains(line, want) {
				t.Errorf("the line lacks %q: %s", want, line)
			}
		}
		if strings.Contains(line, "map[") {
			t.Errorf("the line shows a Go map: %s", line)
		}
	})
	t.Run("json", func(t *testing.T) {
		var b bytes.Buffer
		log, err := newLogger(&b, "info", "json")
		if err != nil {
			t.Fatal(err)
		}
		log.Info("x", attrs...)
		var got struct {
			Backoff    any              `json:"backoff"`
			Transforms []map[string]any `json:"transforms"`
			Spans      []any            `json:"spans"`
			Err        any              `json:"err"`
		}
		if err := json.Unmarshal(b.Bytes(), &got); err != nil {
			t.Fatalf("%v: %s", err, b.String())
		}
		if got.Backoff != "500ms" || len(got.Transforms) != 1 || got.Transforms[0]["after"] != "2s" || got.Transforms[0]["type"] != "set" ||
			len(got.Spans) != 1 || got.Spans[0] != "orders[0] from 3 to 9" || got.Err != "boom" {
			t.Errorf("want backoff 500ms, transforms[0] with after 2s and type set, spans as their text, err boom; got %s", b.String())
		}
	})
}

func TestEveryLineOfAStartUpCarriesPipelineAndInstanceWithDurationsAsTextAndNoGoMaps(t *testing.T) {
	// The broker is a closed port: the relay logs its start, then that
	// connecting failed with the backoff it waits, the duration the issue
	// showed as nanoseconds.
	path := filepath.Join(writeFiles(t, map[string]string{"packing.yaml": packing}), "packing.yaml")
	const retrying = "connecting to the cluster failed; retrying"
	t.Run("text", func(t *testing.T) {
		code, log := startUp(t, path, retrying, "--instance", "i1")
		if code != 0 {
			t.Fatalf("exit %d:\n%s", code, log)
		}
		lines := strings.Split(strings.TrimSpace(log), "\n")
		if !strings.Contains(lines[0], `msg="relay starting"`) {
			t.Errorf("the first line is not the start: %s", lines[0])
		}
		for i, l := range lines {
			if !strings.Contains(l, " pipeline=packing ") || !strings.Contains(l, " instance=i1") {
				t.Errorf("line %d lacks pipeline=packing or instance=i1: %s", i+1, l)
			}
			if strings.Contains(l, "map[") {
				t.Errorf("line %d shows a Go map: %s", i+1, l)
			}
		}
		for _, want := range []string{" config.transforms.0.type=set ", " backoff=500ms", " config.batch.poll_timeout=1s ",
			`msg="health and metrics are off: no --metrics-addr, no metrics.listen in the file, no $RELAY_METRICS_ADDR`} {
			if !strings.Contains(log, want) {
				t.Errorf("the log lacks %q:\n%s", want, log)
			}
		}
	})
	t.Run("json", func(t *testing.T) {
		code, log := startUp(t, path, retrying, "--instance", "i1", "--log-format", "json")
		if code != 0 {
			t.Fatalf("exit %d:\n%s", code, log)
		}
		if strings.Contains(log, "map[") {
			t.Errorf("the log shows a Go map:\n%s", log)
		}
		var sawRetry bool
		for i, l := range strings.Split(strings.TrimSpace(log), "\n") {
			var m map[string]any
			if err := json.Unmarshal([]byte(l), &m); err != nil {
				t.Fatalf("line %d is not JSON (%v): %s", i+1, err, l)
			}
			if m["pipeline"] != "packing" || m["instance"] != "i1" {
				t.Errorf("line %d lacks pipeline packing or instance i1: %s", i+1, l)
			}
			if i == 0 {
				cfg, _ := m["config"].(map[string]any)
				tr, _ := cfg["transforms"].([]any)
				if m["msg"] != "relay starting" || len(tr) != 1 {
					t.Errorf("the first line is not the start with the configuration and its transforms as a list: %s", l)
				}
			}
			if m["msg"] == retrying {
				sawRetry = true
				if m["backoff"] != "500ms" || m["for"] != "0s" {
					t.Errorf("the retry's durations are not text: backoff %v, for %v", m["backoff"], m["for"])
				}
			}
		}
		if !sawRetry {
			t.Errorf("no retry line:\n%s", log)
		}
	})
}

func TestAPipelineThatDoesNotLoadIsReportedAsFileLineColumnNotAsALogLine(t *testing.T) {
	path := filepath.Join(writeFiles(t, map[string]string{"bad.yaml": "name: x\nbrokers: [127.0.0.1:1]\nworkers: four\n"}), "bad.yaml")
	for _, format := range []string{"text", "json"} {
		var errb bytes.Buffer
		code := run([]string{"run", "--log-format", format, path}, io.Discard, &errb)
		fileOnly := strings.Contains(errb.String(), path+":3:10: workers")
		for _, l := range strings.Split(strings.TrimSpace(errb.String()), "\n") {
			fileOnly = fileOnly && strings.HasPrefix(l, path+":")
		}
		if code != 2 || !fileOnly {
			t.Errorf("--log-format %s: exit %d, stderr:\n%s\nwant exit 2 and only the file's errors, each at file:line:col", format, code, errb.String())
		}
	}
}
