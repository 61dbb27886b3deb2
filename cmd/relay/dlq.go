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

// dlqCommands are relay dlq's subcommands.
var dlqCommands = []*command{
	{
		name:     "dlq inspect",
		synopsis: "dlq inspect [--json] [--decode] [selection] [--bucket 1h] [--samples 5] <pipeline.yaml>",
		summary:  "count and sample the pipeline's dead letters",
		about: `Reads the pipeline's dead-letter topic and prints how many dead letters
there are by error class, transform step, kind and time bucket, with a few
samples. The selection flags (--class, --step, --kind, --since, --until,
--offsets) narrow what is counted: every one given must match, and a list
matches any of its values. It writes nothing. With source.cluster, the
dead letters are read on the sink cluster (the top-level brokers).

--decode shows each sample's key and value as JSON, read with the
source's formats (value_format, key_format) as the relay reads them,
schema registry included; a key or value that does not decode shows why
(often the reason it is a dead letter) and its bytes. When the schema
registry cannot be asked, one line says so and the keys and values that
need it are shown as bytes.

` + fileNote,
		exit0: "the report was printed",
		exit1: "the dead-letter topic could not be read (the cluster unreachable, --timeout)",
		exit2: configExit2 + "; a selection that does not parse",
		examples: []string{
			"relay dlq inspect configs/booknest-packing.yaml",
			"relay dlq inspect --since 24h --class json --json configs/booknest-packing.yaml",
			"relay dlq inspect --decode --samples 3 --class avro configs/examples/avro-orders.yaml",
		},
		run: cmdDLQInspect,
	},
	{
		name:     "dlq replay",
		synopsis: "dlq replay [selection] [--to TOPIC] [--dry-run] [--job NAME] <pipeline.yaml>",
		summary:  "send dead letters through the transforms again, or copy them to a topic",
		about: `Replays the selected dead letters through the pipeline's transforms to its
outputs (one failing again is dead-lettered again), or with --to copies
them unchanged to that topic, exactly once: a dead letter is replayed at
most once per ledger generation, whatever the job, so running the same
command again finishes a replay that stopped and skips what was done.
--dry-run says what would be replayed and writes nothing. The selection
flags work as for relay dlq inspect. With source.cluster, everything a
replay reads and writes — dead letters, claim ledger, outputs, the --to
topic — is on the sink cluster (the top-level brokers).

` + fileNote,
		exit0: "the selected dead letters were replayed (with --dry-run: listed)",
		exit1: "the replay failed or stopped before the end: run the same command again to finish it",
		exit2: configExit2 + "; a selection that does not parse",
		examples: []string{
			"relay dlq replay --class json --dry-run configs/booknest-packing.yaml",
			"relay dlq replay --since 24h --to orders.retry configs/booknest-packing.yaml",
		},
		run: cmdDLQReplay,
	},
}

// cmdDLQ runs `relay dlq inspect` and `relay dlq replay`.
func cmdDLQ(c *command, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		c.help(stderr, flag.NewFlagSet(c.name, flag.ContinueOnError))
		return exitUsage
	}
	switch args[0] {
	case "-h", "--help", "help":
		if len(args) > 1 && args[0] == "help" {
			return cmdDLQ(c, []string{args[1], "--help"}, stdout, stderr)
		}
		c.help(stdout, flag.NewFlagSet(c.name, flag.ContinueOnError))
		return exitOK
	}
	sub := lookup(dlqCommands, args[0])
	if sub == nil {
		return c.usageError(stderr, "unknown command %q: inspect or replay", args[0])
	}
	return sub.run(sub, args[1:], stdout, stderr)
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
	kafka                 *kafkaopts.Clusters
}

func (f *dlqFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.cfgPath, "c", "", "give `pipeline.yaml` as a flag instead of as the argument")
	fs.BoolVar(&f.asJSON, "json", false, "print the report as JSON")
	fs.DurationVar(&f.timeout, "timeout", 30*time.Minute, "give up after this long")
	fs.Var(&f.classes, "class", "select by error `class`, the header __connect.errors.exception.class.name\n(e.g. fail, json, cel, MESSAGE_TOO_LARGE; repeatable, comma-separated)")
	fs.Var(&f.steps, "step", "select by transform `step`, the header __connect.errors.class.name\n(e.g. bad-address, 0:set; repeatable, comma-separated)")
	fs.Var(&f.kinds, "kind", "select by `kind`: permanent, attempts-exhausted or write (repeatable, comma-separated)")
	fs.StringVar(&f.since, "since", "", "select dead letters written at or after this `time`, the header __connect.errors.timestamp:\nan RFC 3339 time, a date (YYYY-MM-DD), or a duration ago such as 24h")
	fs.StringVar(&f.until, "until", "", "select dead letters written before this `time` (as --since)")
	fs.StringVar(&f.offsets, "offsets", "", "select by `offsets` of the dead-letter topic: P:FROM-TO[,...]\n(P:FROM- to its end, P:O one)")
}

// load parses what the flags and the arguments (pos) name: the pipeline,
// its client options, the selection. It prints the problem and returns
// false on error.
func (f *dlqFlags) load(c *command, pos []string, stderr io.Writer) bool {
	// Unlike check and verify, the dlq commands print no config warnings.
	var code int
	if f.pipeline, f.kafka, code = c.loadPipeline(f.cfgPath, pos, false, stderr); code != exitOK {
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
			fmt.Fprintf(stderr, "relay %s: %s: %v\n", c.name, t.name, err)
			return false
		}
	}
	if f.offsets != "" {
		if f.filter.Offsets, err = dlq.ParseOffsets(f.offsets); err != nil {
			fmt.Fprintf(stderr, "relay %s: --offsets: %v\n", c.name, err)
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

func cmdDLQInspect(c *command, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet(c.name, flag.ContinueOnError)
	var f dlqFlags
	f.register(fs)
	bucket := fs.Duration("bucket", time.Hour, "width of the time buckets, e.g. 1h or 24h")
	samples := fs.Int("samples", 5, "how many dead letters to show")
	decode := fs.Bool("decode", false, "show the samples' keys and values as JSON, decoded with the source's formats")
	pos, code, ok := c.parse(fs, args, stdout, stderr)
	if !ok {
		return code
	}
	if !f.load(c, pos, stderr) {
		return exitUsage
	}
	if *samples == 0 {
		*samples = -1
	}
	ctx, cancel := context.WithTimeout(context.Background(), f.timeout)
	defer cancel()
	o := dlq.InspectOptions{
		ClientOpts: f.kafka.Sink.Opts(), Topic: f.pipeline.DeadLetter.Topic,
		Filter: f.filter, Bucket: *bucket, Samples: *samples,
	}
	if *decode {
		o.Decode = f.pipeline
	}
	rep, err := dlq.Inspect(ctx, o)
	if err != nil {
		fmt.Fprintln(stderr, "relay dlq inspect:", err)
		return exitFailed
	}
	if f.asJSON {
		if err := printJSON(stdout, rep); err != nil {
			fmt.Fprintln(stderr, "relay dlq inspect:", err)
			return exitFailed
		}
		return exitOK
	}
	fmt.Fprintf(stdout, "pipeline %s — ", f.pipeline.Name)
	rep.Print(stdout)
	return exitOK
}

func cmdDLQReplay(c *command, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet(c.name, flag.ContinueOnError)
	var f dlqFlags
	f.register(fs)
	to := fs.String("to", "", "copy the dead letters unchanged to this `topic` instead of running the pipeline's transforms")
	dryRun := fs.Bool("dry-run", false, "say what would be replayed; write nothing")
	job := fs.String("job", "", "the replay job's `name` (default: derived from the pipeline, --to and the selection)")
	chunk := fs.Int("chunk", 100, "dead letters per transaction")
	attempts := fs.Int("attempts", 0, "tries of a dead letter whose transform fails with a retryable error (default: dead_letter.max_attempts, else 4)")
	level := fs.String("log-level", "warn", "log level: debug, info, warn, error")
	pos, code, ok := c.parse(fs, args, stdout, stderr)
	if !ok {
		return code
	}
	log, err := newLogger(stderr, *level, "text")
	if err != nil {
		return c.usageError(stderr, "%v", err)
	}
	if !f.load(c, pos, stderr) {
		return exitUsage
	}
	if *job == "" {
		*job = dlq.JobID(f.pipeline.Name, f.pipeline.DeadLetter.Topic, *to, f.selection())
	}
	sigs := catchSignals()
	defer sigs.stop()
	ctx, cancel := context.WithTimeout(sigs.watch(context.Background(), log), f.timeout)
	defer cancel()
	rep, err := dlq.Replay(ctx, dlq.ReplayOptions{
		Pipeline: f.pipeline, ClientOpts: f.kafka.Sink.Opts(), SourceClientOpts: f.kafka.Source.Opts(), Filter: f.filter, To: *to,
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
		return exitFailed
	}
	return exitOK
}
