package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"golang.org/x/sync/errgroup"

	"github.com/sharerelay/sharerelay/config"
	"github.com/sharerelay/sharerelay/format"
	"github.com/sharerelay/sharerelay/metrics"
	"github.com/sharerelay/sharerelay/relay"
)

// metricsAddrEnv is the environment variable that turns health and
// metrics on when neither the flag nor the file does; the container image
// sets it to :9464.
const metricsAddrEnv = "RELAY_METRICS_ADDR"

func cmdRun(c *command, args []string, stdout, stderr io.Writer) int {
	return runPipeline(context.Background(), c, args, stdout, stderr)
}

// runPipeline is relay run, stopped by ctx as by a signal.
func runPipeline(parent context.Context, c *command, args []string, stdout, stderr io.Writer) int {
	// Signals first: a SIGTERM during start-up (a supervisor stopping an
	// instance it just started) then ends the run with exit 0 instead of
	// killing the process with the default action.
	sigs := catchSignals()
	defer sigs.stop()
	f, path, code, ok := parseRunFlags(c, args, stdout, stderr)
	if !ok {
		return code
	}
	base, err := newLogger(stderr, f.level, f.format)
	if err != nil {
		return c.usageError(stderr, "%v", err)
	}
	// Until the file is loaded there is no pipeline name to log with: a
	// problem up to here is printed, not logged, and names the file.
	p, instance, ok := loadForRun(path, f.instance, stderr)
	if !ok {
		return exitUsage
	}
	// Every line from here on carries pipeline and instance. The relay adds
	// them to its own lines, so it is given the logger without them.
	log := base.With("pipeline", p.Name, "instance", instance)
	ctx := sigs.watch(parent, log)
	log.Info("relay starting", append(readBuildVersion().logAttrs(), "config", p)...)
	logWarnings(log, p)

	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	r, err := relay.New(relay.Options{Pipeline: p, Instance: instance, Registerer: reg, Logger: base})
	if err != nil {
		log.Error("relay failed to start", "err", err)
		return exitUsage
	}
	srv, ok := startHealth(log, chooseMetricsAddr(f.metricsAddr, p, path), reg)
	if !ok {
		return exitUsage
	}
	if srv != nil {
		srv.SetReadiness(r.Ready)
	}
	return serve(ctx, log, r, srv)
}

// runFlags are relay run's flags.
type runFlags struct {
	instance, level, format, metricsAddr string
}

// parseRunFlags parses relay run's command line: its flags and the
// pipeline file's path. ok false means stop with code (help printed, or a
// usage error).
func parseRunFlags(c *command, args []string, stdout, stderr io.Writer) (f runFlags, path string, code int, ok bool) {
	fs := flag.NewFlagSet(c.name, flag.ContinueOnError)
	cfg := cfgFlag(fs)
	fs.StringVar(&f.instance, "instance", "", "this instance's stable `name` (default $RELAY_INSTANCE, else the host name)")
	fs.StringVar(&f.level, "log-level", "info", "log `level`: debug, info, warn, error")
	fs.StringVar(&f.format, "log-format", "text", "log `format`: text (logfmt) or json")
	fs.StringVar(&f.metricsAddr, "metrics-addr", "", "serve /metrics, /healthz and /readyz on this `host:port` (default: the file's metrics.listen, else $"+metricsAddrEnv+", else off)")
	pos, code, ok := c.parse(fs, args, stdout, stderr)
	if !ok {
		return f, "", code, false
	}
	if path, ok = c.onePipeline(*cfg, pos, stderr); !ok {
		return f, "", exitUsage, false
	}
	return f, path, exitOK, true
}

// loadForRun loads the pipeline at path and chooses the instance name:
// the flag's, else $RELAY_INSTANCE, else the host name. A problem is
// printed to stderr, naming the file.
func loadForRun(path, instance string, stderr io.Writer) (*config.Pipeline, string, bool) {
	p, err := config.Load(path, format.Check)
	if err != nil {
		fmt.Fprintln(stderr, err)
		return nil, "", false
	}
	if instance == "" {
		instance = os.Getenv("RELAY_INSTANCE")
	}
	if instance == "" {
		if instance, err = os.Hostname(); err != nil {
			fmt.Fprintf(stderr, "relay run: %s: --instance not set and no host name: %v\n", path, err)
			return nil, "", false
		}
	}
	return p, instance, true
}

// startHealth binds the health and metrics server at addr, or says that
// they are off. It runs before the relay touches the cluster (relay.New
// does not): a port in use stops the start here, naming where the
// address came from (ok false). A nil server is off.
func startHealth(log *slog.Logger, addr metricsAddr, reg *prometheus.Registry) (srv *metrics.Server, ok bool) {
	if addr.addr == "" {
		log.Info("health and metrics are off: no --metrics-addr, no metrics.listen in the file, no $" + metricsAddrEnv + "; set one to serve /metrics, /healthz and /readyz")
		return nil, true
	}
	srv, err := metrics.Listen(addr.addr, reg)
	if err != nil {
		log.Error("cannot serve health and metrics: choose another address", "from", addr.from, "addr", addr.addr, "err", err)
		return nil, false
	}
	log.Info("serving /metrics, /healthz, /readyz", "addr", srv.Addr(), "from", addr.from)
	return srv, true
}

// serve runs the relay, and the health and metrics server while the
// relay runs, until ctx ends (a signal) or the relay fails.
func serve(ctx context.Context, log *slog.Logger, r *relay.Relay, srv *metrics.Server) int {
	if err := runServing(ctx, r.Run, srv); err != nil {
		log.Error("relay failed", "err", err)
		return exitFailed
	}
	return exitOK
}

// runServing runs run, and srv (when not nil) for as long as run runs:
// the server answers until run returns, also through a drain after ctx
// ended, so that /readyz says the process is stopping. It returns run's
// or the server's error; a cancel is no error.
func runServing(ctx context.Context, run func(context.Context) error, srv *metrics.Server) error {
	g, gctx := errgroup.WithContext(ctx)
	done := make(chan struct{})
	g.Go(func() error {
		defer close(done)
		return run(gctx)
	})
	if srv != nil {
		g.Go(func() error {
			sctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			go func() { <-done; cancel() }()
			return srv.Serve(sctx)
		})
	}
	if err := g.Wait(); err != nil && !errors.Is(err, context.Canceled) {
		return err
	}
	return nil
}

// metricsAddr is where health and metrics listen, and what said so.
type metricsAddr struct {
	addr string // host:port; "" is off
	from string // "--metrics-addr", "metrics.listen in <file>", "$RELAY_METRICS_ADDR"
}

// chooseMetricsAddr picks the health and metrics address: the flag, the
// most specific, else the file's metrics.listen, else the environment
// (what a container image or a unit sets for every pipeline), else off.
func chooseMetricsAddr(flagAddr string, p *config.Pipeline, path string) metricsAddr {
	switch {
	case flagAddr != "":
		return metricsAddr{flagAddr, "--metrics-addr"}
	case p.Metrics.Listen != "":
		return metricsAddr{p.Metrics.Listen, "metrics.listen in " + path}
	}
	if env := os.Getenv(metricsAddrEnv); env != "" {
		return metricsAddr{env, "$" + metricsAddrEnv}
	}
	return metricsAddr{}
}
