package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/sharerelay/sharerelay/config"
	"github.com/sharerelay/sharerelay/dlq"
	"github.com/sharerelay/sharerelay/internal/kafkaopts"
)

const dlqUsage = `usage:
  relay dlq inspect -c <pipeline.yaml> [--json] [selection] [--bucket 1h] [--samples 5]
  relay dlq replay  -c <pipeline.yaml> [--json] [selection] [--to TOPIC] [--dry-run] [--job NAME]
                    [--chunk 100] [--attempts N] [--log-level warn]
selection (every one given must match; a list matches any of its values):
  --class X[,Y]   __connect.errors.exception.class.name (e.g. fail, json, cel, MESSAGE_TOO_LARGE)
  --step S[,T]    __connect.errors.class.name, the transform step (e.g. bad-address, 0:set)
  --kind K[,L]    permanent, attempts-exhausted or write
  --since T       __connect.errors.timestamp at or after T: YYYY-MM-DDThh:mm:ssZ, YYYY-MM-DD, or 24h (ago)
  --until T       ... before T
  --offsets P:FROM-TO[,...]   offsets of the dead-letter topic (P:FROM- to its end, P:O one)
`

// cmdDLQ runs `relay dlq inspect` and `relay dlq replay`.
func cmdDLQ(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, dlqUsage)
		return 2
	}
	switch args[0] {
	case "inspect":
		return cmdDLQInspect(args[1:], stdout, stderr)
	case "replay":
		return cmdDLQReplay(args[1:], stdout, stderr)
	case "-h", "--help", "help":
		fmt.Fprint(stdout, dlqUsage)
		return 0
	}
	fmt.Fprintf(stderr, "relay dlq: unknown command %q\n%s", args[0], dlqUsage)
	return 2
}

// listFlag collects a repeatable, comma-separated flag.
type listFlag []string

func (l *listFlag) String() string { return strings.Join(*l, ",") }

func (l *listFlag) Set(v string) error {
	for x := range strings.SplitSeq(v, ",") {
		if x = strings.TrimSpace(x); x != "" {
			*l = append(*l, x)
		}
	}
	return nil
}

// dlqFlags are the flags both commands share.
type dlqFlags struct {
	cfgPath               string
	asJSON                bool
	timeout               time.Duration
	classes, steps, kinds listFlag
	since, until, offsets string
	pipeline              *config.Pipeline
	filter                dlq.Filter
	kafka                 *kafkaopts.Options
}

func (f *dlqFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.cfgPath, "c", "", "pipeline config file (YAML)")
	fs.BoolVar(&f.asJSON, "json", false, "print the report as JSON")
	fs.DurationVar(&f.timeout, "timeout", 30*time.Minute, "give up after this long")
	fs.Var(&f.classes, "class", "select by error class (repeatable, comma-separated)")
	fs.Var(&f.steps, "step", "select by transform step (repeatable, comma-separated)")
	fs.Var(&f.kinds, "kind", "select by kind: permanent, attempts-exhausted, write")
	fs.StringVar(&f.since, "since", "", "select dead letters written at or after this time (RFC 3339, a date, or a duration ago)")
	fs.StringVar(&f.until, "until", "", "select dead letters written before this time")
	fs.StringVar(&f.offsets, "offsets", "", "select by dead-letter topic offsets: P:FROM-TO[,...]")
}

// load parses what the flags name: the pipeline, its client options, the
// selection. It prints the problem and returns false on error.
func (f *dlqFlags) load(cmd string, stderr io.Writer) bool {
	// Unlike check and verify, the dlq commands print no config warnings.
	var code int
	if f.pipeline, f.kafka, code = loadPipeline("dlq "+cmd, f.cfgPath, false, stderr); code != 0 {
		return false
	}
	var err error
	now := time.Now()
	f.filter = dlq.Filter{Classes: f.classes, Steps: f.steps, Kinds: f.kinds}
	for _, t := range []struct {
		name, val string
		dst       *time.Time
	}{{"--since", f.since, &f.filter.Since}, {"--until", f.until, &f.filter.Until}} {
		if t.val == "" {
			continue
		}
		if *t.dst, err = dlq.ParseTime(t.val, now); err != nil {
			fmt.Fprintf(stderr, "relay dlq %s: %s: %v\n", cmd, t.name, err)
			return false
		}
	}
	if f.offsets != "" {
		if f.filter.Offsets, err = dlq.ParseOffsets(f.offsets); err != nil {
			fmt.Fprintf(stderr, "relay dlq %s: --offsets: %v\n", cmd, err)
			return false
		}
	}
	return true
}

// selection is the selection as written, in a canonical order: what a
// default job name is derived from, so that `--since 24h` names the same
// job on every run.
func (f *dlqFlags) selection() string {
	sorted := func(l listFlag) string {
		s := slices.Clone([]string(l))
		slices.Sort(s)
		return strings.Join(slices.Compact(s), ",")
	}
	return fmt.Sprintf("class=%s step=%s kind=%s since=%s until=%s offsets=%s",
		sorted(f.classes), sorted(f.steps), sorted(f.kinds), f.since, f.until, f.offsets)
}

func printJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

func cmdDLQInspect(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("dlq inspect", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var f dlqFlags
	f.register(fs)
	bucket := fs.Duration("bucket", time.Hour, "width of the time buckets, e.g. 1h or 24h")
	samples := fs.Int("samples", 5, "how many dead letters to show")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if !f.load("inspect", stderr) {
		return 2
	}
	if *samples == 0 {
		*samples = -1
	}
	ctx, cancel := context.WithTimeout(context.Background(), f.timeout)
	defer cancel()
	rep, err := dlq.Inspect(ctx, dlq.InspectOptions{
		ClientOpts: f.kafka.Opts(), Topic: f.pipeline.DeadLetter.Topic,
		Filter: f.filter, Bucket: *bucket, Samples: *samples,
	})
	if err != nil {
		fmt.Fprintln(stderr, "relay dlq inspect:", err)
		return 1
	}
	if f.asJSON {
		if err := printJSON(stdout, rep); err != nil {
			fmt.Fprintln(stderr, "relay dlq inspect:", err)
			return 1
		}
		return 0
	}
	fmt.Fprintf(stdout, "pipeline %s — ", f.pipeline.Name)
	rep.Print(stdout)
	return 0
}

func cmdDLQReplay(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("dlq replay", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var f dlqFlags
	f.register(fs)
	to := fs.String("to", "", "copy the dead letters unchanged to this topic instead of running the pipeline's transforms")
	dryRun := fs.Bool("dry-run", false, "say what would be replayed; write nothing")
	job := fs.String("job", "", "the replay job's name (default: derived from the pipeline, --to and the selection)")
	chunk := fs.Int("chunk", 100, "dead letters per transaction")
	attempts := fs.Int("attempts", 0, "tries of a dead letter whose transform fails with a retryable error (default: dead_letter.max_attempts, else 4)")
	level := fs.String("log-level", "warn", "log level: debug, info, warn, error")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	log, err := newLogger(stderr, *level, "text")
	if err != nil {
		fmt.Fprintln(stderr, "relay dlq replay:", err)
		return 2
	}
	if !f.load("replay", stderr) {
		return 2
	}
	if *job == "" {
		*job = dlq.JobID(f.pipeline.Name, f.pipeline.DeadLetter.Topic, *to, f.selection())
	}
	sctx, stop := signalContext(log)
	defer stop()
	ctx, cancel := context.WithTimeout(sctx, f.timeout)
	defer cancel()
	rep, err := dlq.Replay(ctx, dlq.ReplayOptions{
		Pipeline: f.pipeline, ClientOpts: f.kafka.Opts(), Filter: f.filter, To: *to,
		Job: *job, DryRun: *dryRun, ChunkSize: *chunk, Attempts: int32(*attempts), Logger: log,
	})
	if rep != nil {
		if f.asJSON {
			if jerr := printJSON(stdout, rep); jerr != nil {
				err = errors.Join(err, jerr)
			}
		} else {
			rep.Print(stdout)
		}
	}
	if err != nil {
		fmt.Fprintln(stderr, "relay dlq replay:", err)
		if ctx.Err() != nil || errors.Is(err, context.Canceled) {
			fmt.Fprintln(stderr, "relay dlq replay: stopped before the end; run the same command again to finish (it skips what was replayed)")
		}
		return 1
	}
	return 0
}
