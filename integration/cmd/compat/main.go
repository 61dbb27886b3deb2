// Command compat runs the compatibility scenario
// (integration's TestCompatExactlyOnceAcrossABrokerKill: an exactly-once
// stream with the broker killed -9 mid-stream and restarted, judged by
// relay verify) once on each Kafka release it is given, one broker at a
// time, and prints a table of the results:
//
//	make compat                                   # the supported lines
//	make compat COMPAT_VERSIONS='4.3.2'           # one release
//	go run ./integration/cmd/compat -versions '4.2.2 4.4.0'
//
// Each release runs as its own `go test` with SHARERELAY_KAFKA_VERSION set
// (integration/kafkatest fetches that release's jars with mvn the first
// time) and SHARERELAY_REQUIRE_BROKER=1, so a broker that cannot start is
// a failure, not a skip; its output goes to -logs/<release>.log. It exits
// 1 when any release's run fails or is not exact, after printing the whole
// table. It starts its brokers itself: KAFKA_BOOTSTRAP_SERVERS must be
// unset.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/sharerelay/sharerelay/integration/harness"
	"github.com/sharerelay/sharerelay/integration/kafkatest"
)

// scenario is the test each release runs, in integrationPackage (by
// import path, so that it runs from any directory of the module).
const (
	scenario           = "TestCompatExactlyOnceAcrossABrokerKill"
	integrationPackage = "github.com/sharerelay/sharerelay/integration"
)

func main() {
	versions := flag.String("versions", "", "Kafka releases to run on, separated by spaces or commas (required; the Makefile's COMPAT_VERSIONS)")
	logs := flag.String("logs", filepath.Join("bin", "compat"), "directory for each release's go test output")
	timeout := flag.Duration("timeout", 20*time.Minute, "bound on each release's run, jar fetch included")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	ok, err := run(ctx, os.Stdout, fields(*versions), *logs, *timeout)
	if err != nil {
		fmt.Fprintf(os.Stderr, "compat: %v\n", err)
		os.Exit(2)
	}
	if !ok {
		os.Exit(1)
	}
}

// fields splits a list of releases on spaces and commas.
func fields(s string) []string {
	return strings.FieldsFunc(s, func(r rune) bool { return r == ',' || r == ' ' || r == '\t' || r == '\n' })
}

// run runs the scenario on each release in versions and prints the table
// to w; ok is false when a release failed.
func run(ctx context.Context, w io.Writer, versions []string, logs string, timeout time.Duration) (ok bool, err error) {
	if len(versions) == 0 {
		return false, errors.New("no releases given (-versions)")
	}
	if len(kafkatest.ExternalSeeds()) > 0 {
		return false, fmt.Errorf("%s is set: the scenario kills its own broker of each release; unset it", kafkatest.EnvBootstrap)
	}
	if err := os.MkdirAll(logs, 0o755); err != nil {
		return false, fmt.Errorf("logs directory: %w", err)
	}
	report, err := filepath.Abs(filepath.Join(logs, "rows.jsonl"))
	if err != nil {
		return false, fmt.Errorf("report file: %w", err)
	}
	if err := os.Remove(report); err != nil && !errors.Is(err, os.ErrNotExist) {
		return false, fmt.Errorf("report file: %w", err)
	}

	var rows []harness.CompatRow
	ok = true
	for _, v := range versions {
		logPath := filepath.Join(logs, v+".log")
		fmt.Fprintf(w, "Kafka %s: running %s (log %s)\n", v, scenario, logPath)
		start := time.Now()
		testErr := goTest(ctx, v, report, logPath, timeout)
		got, err := harness.ReadCompatRows(report)
		if err != nil {
			return false, err
		}
		row := harness.CompatRow{Kafka: v, Lost: -1, Duplicated: -1, Verdict: harness.VerdictFail, Seconds: time.Since(start).Seconds()}
		if len(got) > len(rows) {
			row = got[len(got)-1]
		}
		if testErr != nil || row.Verdict != harness.VerdictExact {
			ok = false
			if row.Verdict == harness.VerdictExact {
				row.Verdict = harness.VerdictFail // the test failed after its row
			}
		}
		rows = append(rows, row)
		fmt.Fprintf(w, "Kafka %s: %s in %s%s\n", v, row.Verdict, time.Since(start).Round(time.Second), errSuffix(testErr))
		if ctx.Err() != nil {
			return false, ctx.Err()
		}
	}
	fmt.Fprintf(w, "\n%s", harness.CompatTable(rows))
	return ok, nil
}

// goTest runs the scenario on release v, its output to logPath.
func goTest(ctx context.Context, v, report, logPath string, timeout time.Duration) error {
	out, err := os.Create(logPath)
	if err != nil {
		return fmt.Errorf("log: %w", err)
	}
	defer out.Close()
	ctx, cancel := context.WithTimeout(ctx, timeout+time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "go", "test", "-count=1", "-v", "-timeout", timeout.String(),
		"-run", "^"+scenario+"$", integrationPackage)
	cmd.Env = append(os.Environ(),
		kafkatest.EnvKafkaVersion+"="+v,
		kafkatest.EnvRequireBroker+"=1",
		harness.EnvCompatReport+"="+report)
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("go test: %w", err)
	}
	return nil
}

// errSuffix is " (err)" for a progress line, "" for no error.
func errSuffix(err error) string {
	if err == nil {
		return ""
	}
	return " (" + err.Error() + ")"
}
