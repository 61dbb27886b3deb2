// Command relay runs a sharerelay pipeline.
//
//	relay run -c configs/<pipeline>.yaml [--instance NAME] [--log-format text|json]
//	relay validate <file>...
//	relay test [-v] <pipeline.yaml> [tests.yaml...]
//	relay verify -c configs/<pipeline>.yaml [--json]
//	relay dlq inspect -c configs/<pipeline>.yaml [--json] [selection]
//	relay dlq replay -c configs/<pipeline>.yaml [selection] [--to TOPIC] [--dry-run]
//	relay check -c configs/<pipeline>.yaml
//	relay demo
//	relay version
//
// run logs, once at start, the build and the effective configuration with
// its secrets redacted, then the configuration's warnings; validate prints
// the warnings too, without failing.
//
// run stops cleanly on SIGTERM or SIGINT: it stops polling, writes the
// records it holds for up to batch.drain_timeout, releases whatever was not
// committed, leaves the share group and exits 0. A second signal exits at
// once with status 130.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"golang.org/x/sync/errgroup"

	"github.com/sharerelay/sharerelay/config"
	"github.com/sharerelay/sharerelay/demo"
	"github.com/sharerelay/sharerelay/metrics"
	"github.com/sharerelay/sharerelay/relay"
)

const usage = `usage:
  relay run -c <pipeline.yaml> [--instance NAME] [--log-level info] [--log-format text|json]
  relay validate <pipeline.yaml>...
  relay test [-v] <pipeline.yaml> [tests.yaml...]
  relay verify -c <pipeline.yaml> [--json] [--timeout 5m]
  relay dlq inspect -c <pipeline.yaml> [--json] [selection]       (relay dlq help: the selection flags)
  relay dlq replay -c <pipeline.yaml> [selection] [--to TOPIC] [--dry-run] [--job NAME]
  relay check -c <pipeline.yaml> [--timeout 1m]
  relay demo
  relay version
`

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return 2
	}
	switch args[0] {
	case "run":
		return cmdRun(args[1:], stderr)
	case "validate":
		return cmdValidate(args[1:], stdout, stderr)
	case "test":
		return cmdTest(args[1:], stdout, stderr)
	case "demo":
		return cmdDemo(args[1:], stdout, stderr)
	case "verify":
		return cmdVerify(args[1:], stdout, stderr)
	case "dlq":
		return cmdDLQ(args[1:], stdout, stderr)
	case "check":
		return cmdCheck(args[1:], stdout, stderr)
	case "version", "--version":
		readBuildVersion().print(stdout)
		return 0
	case "-h", "--help", "help":
		fmt.Fprint(stdout, usage)
		return 0
	default:
		fmt.Fprintf(stderr, "relay: unknown command %q\n%s", args[0], usage)
		return 2
	}
}

// signalContext returns a context cancelled by the first SIGTERM/SIGINT; a
// second one exits the process at once.
func signalContext(log *slog.Logger) (context.Context, func()) {
	ctx, cancel := context.WithCancel(context.Background())
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT)
	go func() {
		s, ok := <-sigs
		if !ok {
			return
		}
		log.Info("signal received; stopping cleanly: writing what is held, then leaving (send again to exit at once)", "signal", s.String())
		cancel()
		if s, ok = <-sigs; ok {
			log.Error("second signal; exiting at once", "signal", s.String())
			os.Exit(130)
		}
	}()
	return ctx, func() { signal.Stop(sigs); close(sigs); cancel() }
}

// newLogger returns a logger writing to w at level, as logfmt text or as
// one JSON object a line (format "text" or "json").
func newLogger(w io.Writer, level, format string) (*slog.Logger, error) {
	var l slog.Level
	if err := l.UnmarshalText([]byte(level)); err != nil {
		return nil, fmt.Errorf("--log-level: %w", err)
	}
	opts := &slog.HandlerOptions{Level: l}
	switch format {
	case "text":
		return slog.New(slog.NewTextHandler(w, opts)), nil
	case "json":
		return slog.New(slog.NewJSONHandler(w, opts)), nil
	}
	return nil, fmt.Errorf("--log-format: %q is not text or json", format)
}

// logWarnings logs the configuration's warnings, one line each.
func logWarnings(log *slog.Logger, p *config.Pipeline) {
	for _, w := range p.Warnings {
		log.Warn("pipeline config warning", "path", w.Path, "at", fmt.Sprintf("%s:%d:%d", w.File, w.Line, w.Col), "warning", w.Msg)
	}
}

func cmdRun(args []string, stderr io.Writer) int {
	fs := flag.NewFlagSet("run", flag.ContinueOnError)
	fs.SetOutput(stderr)
	cfgPath := fs.String("c", "", "pipeline config file (YAML)")
	instance := fs.String("instance", "", "this instance's stable name (default $RELAY_INSTANCE, else the host name)")
	level := fs.String("log-level", "info", "log level: debug, info, warn, error")
	format := fs.String("log-format", "text", "log format: text (logfmt) or json")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if *cfgPath == "" {
		fmt.Fprintln(stderr, "relay run: -c <pipeline.yaml> is required")
		return 2
	}
	log, err := newLogger(stderr, *level, *format)
	if err != nil {
		fmt.Fprintln(stderr, "relay run:", err)
		return 2
	}
	// Signals first: a SIGTERM during start-up (a supervisor stopping an
	// instance it just started) then ends the run with exit 0 instead of
	// killing the process with the default action.
	ctx, stop := signalContext(log)
	defer stop()
	p, err := config.Load(*cfgPath)
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 1
	}
	if *instance == "" {
		*instance = os.Getenv("RELAY_INSTANCE")
	}
	if *instance == "" {
		if *instance, err = os.Hostname(); err != nil {
			fmt.Fprintln(stderr, "relay run: --instance not set and no host name:", err)
			return 2
		}
	}
	log.Info("relay starting", append(readBuildVersion().logAttrs(), "instance", *instance, "config", p)...)
	logWarnings(log, p)

	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	var srv *metrics.Server
	if p.Metrics.Listen != "" {
		if srv, err = metrics.Listen(p.Metrics.Listen, reg); err != nil {
			fmt.Fprintln(stderr, "relay run:", err)
			return 1
		}
		log.Info("serving /metrics, /healthz, /readyz", "addr", srv.Addr())
	}
	r, err := relay.New(relay.Options{Pipeline: p, Instance: *instance, Registerer: reg, Logger: log})
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 1
	}
	if srv != nil {
		srv.SetReadiness(r.Ready)
	}

	g, gctx := errgroup.WithContext(ctx)
	relayDone := make(chan struct{})
	g.Go(func() error {
		defer close(relayDone)
		return r.Run(gctx)
	})
	if srv != nil {
		g.Go(func() error {
			sctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			go func() { <-relayDone; cancel() }()
			return srv.Serve(sctx)
		})
	}
	if err := g.Wait(); err != nil && !errors.Is(err, context.Canceled) {
		log.Error("relay failed", "err", err)
		return 1
	}
	return 0
}

func cmdValidate(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprintln(stderr, "relay validate: give one or more pipeline files")
		return 2
	}
	status := 0
	for _, path := range args {
		p, err := config.Load(path)
		if err != nil {
			fmt.Fprintln(stderr, err)
			status = 1
			continue
		}
		for _, w := range p.Warnings {
			fmt.Fprintln(stderr, w)
		}
		if n := len(p.Warnings); n > 0 {
			fmt.Fprintf(stdout, "%s: ok, %d %s\n", path, n, plural(n, "warning", "warnings"))
			continue
		}
		fmt.Fprintf(stdout, "%s: ok\n", path)
	}
	return status
}

func cmdDemo(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("demo", flag.ContinueOnError)
	fs.SetOutput(stderr)
	level := fs.String("log-level", "warn", "log level: debug, info, warn, error")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	log, err := newLogger(stderr, *level, "text")
	if err != nil {
		fmt.Fprintln(stderr, "relay demo:", err)
		return 2
	}
	ctx, stop := signalContext(log)
	defer stop()
	if err := demo.Run(ctx, stdout, log); err != nil {
		fmt.Fprintln(stderr, err)
		return 1
	}
	return 0
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
