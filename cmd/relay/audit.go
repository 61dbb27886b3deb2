package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"text/tabwriter"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/sharerelay/sharerelay/audit/live"
	"github.com/sharerelay/sharerelay/config"
	"github.com/sharerelay/sharerelay/internal/kafkaopts"
	"github.com/sharerelay/sharerelay/metrics"
)

// defaultAuditAddr is where relay audit serves its metrics: the port
// after the relay's.
const defaultAuditAddr = "127.0.0.1:9465"

// auditFlags are relay audit's flags.
type auditFlags struct {
	listen, name, checkpointFile, checkpointTopic, level, format string
	interval, checkpointEvery, timeout                           time.Duration
	noCheckpoint, fromEnd, once, asJSON                          bool
}

func cmdAudit(c *command, args []string, stdout, stderr io.Writer) int {
	return runAudit(context.Background(), c, args, stdout, stderr)
}

// runAudit is relay audit, stopped by ctx as by a signal.
func runAudit(parent context.Context, c *command, args []string, stdout, stderr io.Writer) int {
	sigs := catchSignals()
	defer sigs.stop()
	fs := flag.NewFlagSet(c.name, flag.ContinueOnError)
	cfg := cfgFlag(fs)
	var f auditFlags
	fs.StringVar(&f.listen, "listen", defaultAuditAddr, "serve the audit's /metrics, /healthz and /readyz on this `host:port`; empty: off")
	fs.StringVar(&f.name, "name", "", "the audit's `name`: the checkpoint's key (default the pipeline's name)")
	fs.DurationVar(&f.interval, "interval", live.DefaultInterval, "take a fence, and judge up to it, this often")
	fs.DurationVar(&f.checkpointEvery, "checkpoint-interval", live.DefaultCheckpointInterval, "write the checkpoint this often (and on a clean stop)")
	fs.StringVar(&f.checkpointTopic, "checkpoint-topic", "", "keep the checkpoint in this compacted `topic` on the sink cluster (default <pipeline>.audit, created if missing)")
	fs.StringVar(&f.checkpointFile, "checkpoint-file", "", "keep the checkpoint in this `file` instead of a topic")
	fs.BoolVar(&f.noCheckpoint, "no-checkpoint", false, "keep no checkpoint: start from the beginning (or --from-end) every time")
	fs.BoolVar(&f.fromEnd, "from-end", false, "with no checkpoint, start at the topics' current ends instead of the sources' start")
	fs.BoolVar(&f.once, "once", false, "judge every record acknowledged by now, print the report and exit (0 when exact, or only duplicates of an at-least-once pipeline)")
	fs.BoolVar(&f.asJSON, "json", false, "with --once, print the report as JSON")
	fs.DurationVar(&f.timeout, "timeout", 5*time.Minute, "with --once, give up after this long")
	fs.StringVar(&f.level, "log-level", "info", "log `level`: debug, info, warn, error")
	fs.StringVar(&f.format, "log-format", "text", "log `format`: text (logfmt) or json")
	pos, code, ok := c.parse(fs, args, stdout, stderr)
	if !ok {
		return code
	}
	if f.checkpointFile != "" && (f.noCheckpoint || f.checkpointTopic != "") {
		return c.usageError(stderr, "--checkpoint-file, --checkpoint-topic and --no-checkpoint: give one")
	}
	base, err := newLogger(stderr, f.level, f.format)
	if err != nil {
		return c.usageError(stderr, "%v", err)
	}
	p, kafka, code := c.loadPipeline(*cfg, pos, false, stderr)
	if code != exitOK {
		return code
	}
	log := base.With("pipeline", p.Name, "audit", orDefault(f.name, p.Name))
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	a, err := live.New(auditConfig(p, kafka, f, reg, log))
	if err != nil {
		fmt.Fprintf(stderr, "relay audit: %v\n", err)
		return exitUsage
	}
	var srv *metrics.Server
	if f.listen != "" {
		if srv, err = metrics.Listen(f.listen, reg); err != nil {
			log.Error("cannot serve the audit's metrics: choose another address with --listen", "addr", f.listen, "err", err)
			return exitUsage
		}
		srv.SetReadiness(a.Ready)
		log.Info("serving /metrics, /healthz, /readyz", "addr", srv.Addr())
	}
	ctx := sigs.watch(parent, log)
	if f.once {
		return auditOnce(ctx, a, srv, f, stdout, stderr)
	}
	log.Info("auditing", "interval", f.interval, "checkpoint", checkpointWhere(p, f))
	if err := serveAudit(ctx, a, srv); err != nil {
		log.Error("the audit failed", "err", err)
		return exitFailed
	}
	log.Info("audit stopped")
	return exitOK
}

func orDefault(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// auditConfig derives the auditor's configuration from the pipeline and
// the flags: the topics and clusters as relay verify reads them.
func auditConfig(p *config.Pipeline, kafka *kafkaopts.Clusters, f auditFlags, reg prometheus.Registerer, log *slog.Logger) live.Config {
	cfg := live.Config{
		Verify:             verifyConfig(p, kafka),
		Pipeline:           p.Name,
		Delivery:           p.Delivery,
		Interval:           f.interval,
		CheckpointInterval: f.checkpointEvery,
		FromEnd:            f.fromEnd,
		Registerer:         reg,
		Logger:             log,
	}
	switch name := orDefault(f.name, p.Name); {
	case f.noCheckpoint:
	case f.checkpointFile != "":
		cfg.Checkpoint = live.FileStore(f.checkpointFile)
	default:
		cfg.Checkpoint = live.TopicStore(kafka.Sink.Opts(), orDefault(f.checkpointTopic, live.CheckpointTopic(p.Name)), name)
	}
	return cfg
}

func checkpointWhere(p *config.Pipeline, f auditFlags) string {
	switch {
	case f.noCheckpoint:
		return "none"
	case f.checkpointFile != "":
		return "file " + f.checkpointFile
	}
	return "topic " + orDefault(f.checkpointTopic, live.CheckpointTopic(p.Name))
}

// serveAudit runs the auditor, and its metrics server while it runs,
// until ctx ends or the auditor fails.
func serveAudit(ctx context.Context, a *live.Auditor, srv *metrics.Server) error {
	return runServing(ctx, a.Run, srv)
}

// auditOnce is relay audit --once: judge up to the first fence, print the
// report.
func auditOnce(ctx context.Context, a *live.Auditor, srv *metrics.Server, f auditFlags, stdout, stderr io.Writer) int {
	ctx, cancel := context.WithTimeout(ctx, f.timeout)
	defer cancel()
	if srv != nil {
		sctx, stop := context.WithCancel(context.Background())
		served := make(chan struct{})
		go func() { defer close(served); srv.Serve(sctx) }()
		defer func() { stop(); <-served }()
	}
	rep, err := a.RunOnce(ctx)
	if err != nil {
		fmt.Fprintln(stderr, "relay audit:", err)
		return exitFailed
	}
	if f.asJSON {
		if err := printJSON(stdout, rep); err != nil {
			fmt.Fprintln(stderr, "relay audit:", err)
			return exitFailed
		}
	} else {
		printAuditReport(stdout, rep)
	}
	if !rep.AsPromised {
		return exitFailed
	}
	return exitOK
}

func printAuditReport(w io.Writer, r *live.Report) {
	fmt.Fprintf(w, "pipeline %s (%s) — check: %s; judged up to %s\n\n", r.Pipeline, r.Delivery, r.Check, r.JudgedAt.Format(time.RFC3339))
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "source partition\tjudged\toutput\tdead-lettered\tlost\tincomplete\tfiltered\tduplicated\tboth\tunexpected\tunjudged\t")
	for _, pr := range append(r.Partitions, r.Total) {
		label := fmt.Sprintf("%s[%d]", pr.Topic, pr.Partition)
		if pr.Partition < 0 {
			label = "total"
		}
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t\n", label, pr.Sources, pr.Output, pr.DeadLettered,
			pr.Lost, pr.Incomplete, pr.Filtered, pr.Duplicated, pr.Both, pr.Unexpected, pr.Lag)
	}
	tw.Flush()
	fmt.Fprintf(w, "\noutput and dead-letter records read: %d; unlabelled: %d; late (read after their record was judged, counted duplicated): %d\n",
		r.OutputRecords, r.Unlabelled, r.Late)
	printSamples(w, r.Partitions, r.Replays)
	verdict := "EXACT"
	switch {
	case r.Exact:
	case r.AsPromised:
		verdict = "AT LEAST ONCE (duplicates only, as the pipeline's delivery allows)"
	default:
		verdict = "NOT EXACT"
	}
	fmt.Fprintf(w, "verdict: %s\n", verdict)
}
