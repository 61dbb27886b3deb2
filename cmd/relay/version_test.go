package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
	"testing"

	"github.com/sharerelay/sharerelay/config"
)

func TestVersionPrintsTheModuleRevisionTimeAndToolchain(t *testing.T) {
	bi := &debug.BuildInfo{
		GoVersion: "go1.26.8",
		Main:      debug.Module{Path: "github.com/sharerelay/sharerelay", Version: "v0.4.0"},
		Deps:      []*debug.Module{{Path: "github.com/twmb/franz-go", Version: "v1.22.3"}},
		Settings: []debug.BuildSetting{
			{Key: "vcs.revision", Value: "383075c0ffee"}, {Key: "vcs.time", Value: "2026-01-02T03:04:05Z"},
			{Key: "vcs.modified", Value: "true"}, {Key: "GOOS", Value: "linux"}, {Key: "GOARCH", Value: "arm64"},
		},
	}
	var out bytes.Buffer
	versionOf(bi).print(&out)
	want := `relay v0.4.0
  module    github.com/sharerelay/sharerelay
  revision  383075c0ffee (modified: built with uncommitted changes)
  time      2026-01-02T03:04:05Z
  go        go1.26.8 linux/arm64
  franz-go  v1.22.3
`
	if out.String() != want {
		t.Errorf("got:\n%s\nwant:\n%s", out.String(), want)
	}
	if got := versionOf(bi).revision(); got != "383075c0ffee+modified" {
		t.Errorf("revision for logs %q", got)
	}

	bi.Settings = nil
	out.Reset()
	versionOf(bi).print(&out)
	if !strings.Contains(out.String(), "revision  unknown (built without VCS information") {
		t.Errorf("without VCS information:\n%s", out.String())
	}
}

func TestRelayVersionRunsAndNamesTheModule(t *testing.T) {
	var out, errb bytes.Buffer
	if code := run([]string{"version"}, &out, &errb); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	for _, want := range []string{"relay ", "module    github.com/sharerelay/sharerelay", "go        go1."} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
}

func TestValidatePrintsWarningsButSucceeds(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "plain.yaml")
	os.WriteFile(file, []byte(`name: p
brokers: [127.0.0.1:1]
source: {topics: [a]}
output: {topic: b}
dead_letter: {topic: c}
sasl: {mechanism: PLAIN, username: u, password: "${RELAY_TEST_SECRET}"}
`), 0o644)
	t.Setenv("RELAY_TEST_SECRET", "hunter2-s3cret")
	var out, errb bytes.Buffer
	if code := run([]string{"validate", file}, &out, &errb); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	if want := file + ": ok, 1 warning\n"; out.String() != want {
		t.Errorf("stdout %q, want %q", out.String(), want)
	}
	if want := file + ":6:19: warning: sasl.mechanism: PLAIN without TLS sends the password in clear text"; !strings.HasPrefix(errb.String(), want) {
		t.Errorf("stderr %q, want it to start with %q", errb.String(), want)
	}
}

func TestTheStartLogIsJSONWithTheConfigRedacted(t *testing.T) {
	p, err := config.Parse("p.yaml", []byte(`name: p
brokers: [127.0.0.1:1]
source: {topics: [a]}
output: {topic: b}
dead_letter: {topic: c}
sasl: {mechanism: PLAIN, username: u, password: hunter2-s3cret}
`), nil)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	log, err := newLogger(&buf, "info", "json")
	if err != nil {
		t.Fatal(err)
	}
	log.Info("relay starting", append(readBuildVersion().logAttrs(), "instance", "i", "config", p)...)
	logWarnings(log, p)
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != 2 {
		t.Fatalf("want 2 lines, got:\n%s", buf.String())
	}
	var start struct {
		Msg     string `json:"msg"`
		Version string `json:"version"`
		Config  struct {
			Brokers []string `json:"brokers"`
			SASL    struct {
				Password string `json:"password"`
			} `json:"sasl"`
			Client struct {
				Producer struct {
					Compression string `json:"compression"`
				} `json:"producer"`
			} `json:"client"`
		} `json:"config"`
	}
	if err := json.Unmarshal([]byte(lines[0]), &start); err != nil {
		t.Fatal(err)
	}
	if start.Msg != "relay starting" || start.Version == "" || start.Config.Brokers[0] != "127.0.0.1:1" ||
		start.Config.SASL.Password != "[redacted]" || start.Config.Client.Producer.Compression != "snappy" {
		t.Errorf("start line: %s", lines[0])
	}
	var warn map[string]any
	if err := json.Unmarshal([]byte(lines[1]), &warn); err != nil {
		t.Fatal(err)
	}
	if warn["level"] != "WARN" || warn["path"] != "sasl.mechanism" || warn["at"] != "p.yaml:6:19" {
		t.Errorf("warning line: %s", lines[1])
	}
	if strings.Contains(buf.String(), "hunter2") {
		t.Errorf("the log shows the password:\n%s", buf.String())
	}
}

func TestRunRefusesAnUnknownLogFormat(t *testing.T) {
	var errb bytes.Buffer
	if code := run([]string{"run", "-c", "x.yaml", "--log-format", "xml"}, &bytes.Buffer{}, &errb); code != 2 {
		t.Errorf("exit %d, want 2: %s", code, errb.String())
	}
	if !strings.Contains(errb.String(), `--log-format: "xml" is not text or json`) {
		t.Errorf("stderr: %s", errb.String())
	}
}
