package jvmproc

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// fake is a Spec that runs script with /bin/sh in a new directory, for a
// server that is ready once it printed "ready" and probe answers.
func fake(t *testing.T, script string, probe func(context.Context) error) Spec {
	t.Helper()
	if _, err := os.Stat("/bin/sh"); err != nil {
		t.Skip("no /bin/sh")
	}
	dir := t.TempDir()
	cmd := exec.Command("/bin/sh", "-c", script)
	cmd.Dir = dir
	return Spec{
		Cmd:        cmd,
		Log:        filepath.Join(dir, "fake.log"),
		Tag:        "jvmproctest",
		Name:       "fake",
		Addr:       "127.0.0.1:1",
		Timeout:    5 * time.Second,
		ReadyLine:  "ready",
		FatalLines: []string{"Address already in use"},
		Probe:      probe,
		PortInUse:  func(tail string) bool { return strings.Contains(tail, "Address already in use") },
	}
}

// answers is a probe that always answers.
func answers(context.Context) error { return nil }

// started starts s, failing the test when it cannot, and kills it when
// the test ends.
func started(t *testing.T, s Spec) *Proc {
	t.Helper()
	p := new(Proc)
	t.Cleanup(func() {
		if err := p.Kill(); err != nil {
			t.Error(err)
		}
	})
	if err := p.Start(context.Background(), s); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestAStartWaitsForTheLineAndTheProbeAndWritesBannersAroundIt(t *testing.T) {
	probes := 0
	s := fake(t, `echo booting; sleep 0.3; echo ready; exec sleep 60`, func(context.Context) error {
		if probes++; probes < 3 {
			return errors.New("not yet")
		}
		return nil
	})
	s.Note = "/bin/sh"
	p := started(t, s)
	if p.Pid() == 0 || probes != 3 {
		t.Fatalf("after Start: pid %d, %d probes; want a pid and 3 probes", p.Pid(), probes)
	}
	log, err := os.ReadFile(s.Log)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(log)), "\n")
	if len(lines) != 4 ||
		!strings.HasPrefix(lines[0], "=== jvmproctest: starting fake 127.0.0.1:1 (/bin/sh) at ") ||
		lines[1] != "booting" || lines[2] != "ready" ||
		!strings.HasPrefix(lines[3], "=== jvmproctest: fake 127.0.0.1:1 ready after ") {
		t.Errorf("log:\n%s", log)
	}
	gone, err := p.Terminate(false)
	if err != nil || !gone || p.Pid() != 0 {
		t.Errorf("Terminate: gone %v, %v, pid %d; want gone and no pid", gone, err, p.Pid())
	}
	if gone, err := p.Terminate(false); err != nil || !gone {
		t.Errorf("Terminate when not running: gone %v, %v; want true, nil", gone, err)
	}
}

func TestAProcessThatExitsEarlyFailsTheStartWithItsStatusAndTheLogTail(t *testing.T) {
	s := fake(t, `echo "something broke"; exit 3`, answers)
	var p Proc
	err := p.Start(context.Background(), s)
	want := "start fake 127.0.0.1:1 (dir " + s.Cmd.Dir + "): fake process exited before it was ready (exit status 3)\n--- fake log tail ---\n"
	if err == nil || !strings.HasPrefix(err.Error(), want) || !strings.HasSuffix(err.Error(), "\nsomething broke") {
		t.Fatalf("Start: %v\nwant %q… ending with the log", err, want)
	}
	if errors.Is(err, ErrPortInUse) {
		t.Error("the error wraps ErrPortInUse")
	}

	s = fake(t, `exit 3`, answers)
	s.Awaited = "answered"
	if err := p.Start(context.Background(), s); err == nil || !strings.Contains(err.Error(), ": fake process exited before it answered (exit status 3)") {
		t.Errorf("Start with Awaited: %v", err)
	}
}

func TestAFatalLineFailsTheStartAtOnceAndABindFailureIsErrPortInUse(t *testing.T) {
	s := fake(t, `echo "java.net.BindException: Address already in use"; exec sleep 60`, answers)
	var p Proc
	began := time.Now()
	err := p.Start(context.Background(), s)
	if err == nil || !strings.Contains(err.Error(), `: fake failed to start ("Address already in use" in the log)`) {
		t.Fatalf("Start: %v", err)
	}
	if !errors.Is(err, ErrPortInUse) {
		t.Errorf("Start: %v; want it to wrap ErrPortInUse", err)
	}
	if d := time.Since(began); d > 3*time.Second {
		t.Errorf("the failed start took %s", d)
	}
	if p.Pid() != 0 {
		t.Error("the process runs after the failed start")
	}
}

func TestATimeoutNamesTheLastProbeErrorOrTheMissingLine(t *testing.T) {
	s := fake(t, `echo ready; exec sleep 60`, func(context.Context) error { return errors.New("connection refused") })
	s.Timeout = 500 * time.Millisecond
	var p Proc
	err := p.Start(context.Background(), s)
	if err == nil || !strings.Contains(err.Error(), ": fake not ready after 500ms (last probe: connection refused): context deadline exceeded\n") {
		t.Errorf("Start: %v", err)
	}

	s = fake(t, `exec sleep 60`, answers)
	s.Timeout = 300 * time.Millisecond
	err = p.Start(context.Background(), s)
	if err == nil || !strings.Contains(err.Error(), `: fake not ready after 300ms (no "ready" in the log): context deadline exceeded`) {
		t.Errorf("Start: %v", err)
	}
	if p.Pid() != 0 {
		t.Error("the process runs after the failed start")
	}
}

func TestAPermanentProbeErrorEndsTheWaitWithItsOwnText(t *testing.T) {
	probes := 0
	s := fake(t, `echo ready; exec sleep 60`, func(context.Context) error {
		probes++
		return Permanent(errors.New("create probe client: bad seed"))
	})
	var p Proc
	err := p.Start(context.Background(), s)
	if err == nil || !strings.Contains(err.Error(), "(dir "+s.Cmd.Dir+"): create probe client: bad seed\n") || probes != 1 {
		t.Errorf("Start: %v after %d probes; want the probe's error after one", err, probes)
	}
}

func TestAStartAgainReadsOnlyWhatItsOwnProcessWrote(t *testing.T) {
	s := fake(t, `echo ready; exec sleep 60`, answers)
	p := started(t, s)
	if err := p.Kill(); err != nil || p.Pid() != 0 {
		t.Fatalf("Kill: %v, pid %d", err, p.Pid())
	}
	// The log has "ready" from the first start: the second must not take
	// it for its own, and its error's tail starts at its own banner.
	again := exec.Command("/bin/sh", "-c", `echo "second start"; exit 1`)
	again.Dir = s.Cmd.Dir
	s.Cmd = again
	err := p.Start(context.Background(), s)
	if err == nil || !strings.Contains(err.Error(), "exited before it was ready") || !strings.Contains(err.Error(), "--- fake log tail ---\n=== jvmproctest: starting fake") ||
		!strings.HasSuffix(err.Error(), " ===\nsecond start") {
		t.Errorf("second Start: %v", err)
	}
}

func TestAPausedProcessStopsWhenTerminateWakesIt(t *testing.T) {
	s := fake(t, `echo ready; exec sleep 60`, answers)
	p := started(t, s)
	if err := p.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	began := time.Now()
	gone, err := p.Terminate(true)
	if err != nil || !gone {
		t.Fatalf("Terminate(true) of a paused process: gone %v, %v", gone, err)
	}
	if d := time.Since(began); d > 5*time.Second {
		t.Errorf("Terminate took %s", d)
	}
	if err := p.Signal(syscall.SIGCONT); err != nil {
		t.Errorf("Signal when not running: %v", err)
	}
}

func TestLogTailKeepsTheLastLinesWrittenAfterTheOffset(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.log")
	var b strings.Builder
	b.WriteString("before\n")
	offset := int64(b.Len())
	for i := range 100 {
		b.WriteString("line " + string(rune('a'+i%26)) + "\n")
	}
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(logTail(path, offset), "\n")
	if len(lines) != 60 || lines[59] != "line v" {
		t.Errorf("tail: %d lines ending %q; want 60 ending \"line v\"", len(lines), lines[len(lines)-1])
	}
	if got := logTail(path, int64(b.Len())-7); got != "line v" {
		t.Errorf("tail of the last line: %q", got)
	}
	if got := logTail(filepath.Join(t.TempDir(), "none"), 0); !strings.HasPrefix(got, "(cannot read ") {
		t.Errorf("tail of a missing file: %q", got)
	}
}

func TestFindInRepoFindsAFileOfTheRepositoryFromBelowIt(t *testing.T) {
	p, ok := FindInRepo("integration/kafka/pom.xml")
	if !ok {
		t.Fatal("integration/kafka/pom.xml not found")
	}
	if _, err := os.Stat(p); err != nil || !filepath.IsAbs(p) {
		t.Errorf("found %s: %v", p, err)
	}
	if p, ok := FindInRepo("integration/no-such-file"); ok {
		t.Errorf("found %s", p)
	}
}
