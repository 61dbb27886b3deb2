// Command bench measures what the relay costs: its throughput and latency
// side by side with the baselines a user would compare it with, in one run,
// on one broker. It is a measurement, not a test: it fails only when it
// cannot measure, and prints a warning when a sanity check does not hold.
//
//	make bench BENCH_ARGS='-records 20000 -runs 1'
//	go run ./integration/cmd/bench [flags]
//
// The broker is the cluster in KAFKA_BOOTSTRAP_SERVERS when set, otherwise
// a local Apache Kafka broker started with integration/kafkatest (with the
// JVM flags of Kafka's own start scripts rather than the test defaults,
// which cap the JIT for a fast start) and stopped at the end, also on
// SIGINT or SIGTERM.
//
// Throughput. For each value size (-sizes) a source topic of 3 partitions
// is loaded once with -records records (keyed, JSON values with an id).
// Then four contenders read that same topic, each through its own fresh
// share group (share.auto.offset.reset=earliest), until every record is
// acknowledged:
//
//	raw-share   franz-go share consumers that accept every record
//	            explicitly and produce nothing: the ceiling
//	copier      the copier a user would write by hand: share consume,
//	            idempotent produce (acks=all) to an output topic, wait for
//	            the batch's produce acks, accept the batch; no transaction
//	relay-alo   the relay in-process, delivery: at-least-once, no
//	            transforms, batch.max_records 500
//	relay-eos   the same with delivery: exactly-once (its own claim
//	            ledger, <pipeline>.ledger)
//
// A warm-up pass (-warmup) first runs every contender once, untimed, over a
// small topic: a fresh broker creates its internal share-group and
// transaction state topics on first use.
//
// Every contender runs -workers share consumers, and every contender that
// writes gets a fresh output topic of 3 partitions, read back afterwards
// (read_committed) to check it holds one output per source record. A run is
// timed from the first record received to the last record acknowledged
// (the acknowledgement handed to the share consumer, which sends it with
// its next fetch); the share group's lag must then reach 0 before the
// contender is stopped. The contender set is repeated -runs times,
// interleaved (a b c d, a b c d, ...) to spread machine noise, and the
// median records/s of each contender is reported with the ratios between
// them.
//
// Latency (-latency). For relay-alo and relay-eos in turn, a steady producer
// writes -rate records/s for -latency-duration into a fresh source topic
// while the relay runs; a read_committed consumer on the output takes, for
// each output, the time it became visible minus the time the producer's
// promise reported the source record appended (both on this process's
// monotonic clock, so a remote broker's clock does not matter), matched
// through the sharerelay.source.* lineage headers. p50/p90/p99/max are
// reported in milliseconds.
//
// -trace prints, after every contender run, the latency of each kind of
// Kafka request its clients made and, for the relay, the time per batch
// and in the exactly-once claim (through a wrapped eos.Guard on a ledger
// opened the way the relay opens it). -cpuprofile-dir writes a CPU profile
// of this process (the relay runs in it) per contender run.
//
// Progress goes to stderr, the result tables to stdout, and with -json the
// results also to a file.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/sharerelay/sharerelay/config"
)

// options are the command's flags.
type options struct {
	records         int
	sizes           []int
	runs            int
	workers         int
	latency         bool
	rate            int
	latencyDuration time.Duration
	jsonPath        string
	warmUp          bool
	trace           bool
	cpuProfileDir   string
}

func parseFlags(args []string) (options, error) {
	var o options
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	fs.IntVar(&o.records, "records", 200000, "records per source topic")
	sizes := fs.String("sizes", "200,1024", "value sizes in bytes, comma separated; one source topic each")
	fs.IntVar(&o.runs, "runs", 3, "runs of the whole contender set per size (the median is reported)")
	fs.IntVar(&o.workers, "workers", 2, "share consumers per contender (the relay's workers)")
	fs.BoolVar(&o.latency, "latency", true, "measure end-to-end latency of relay-alo and relay-eos")
	fs.IntVar(&o.rate, "rate", 2000, "records/s of the latency producer")
	fs.DurationVar(&o.latencyDuration, "latency-duration", 15*time.Second, "how long the latency producer runs per contender")
	fs.StringVar(&o.jsonPath, "json", "", "also write the results as JSON to this file")
	fs.BoolVar(&o.warmUp, "warmup", true, "first run every contender once over a small topic, untimed")
	fs.BoolVar(&o.trace, "trace", false, "print request latencies and relay batch phases after each contender run")
	fs.StringVar(&o.cpuProfileDir, "cpuprofile-dir", "", "write a CPU profile of each contender run into this directory")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	if fs.NArg() > 0 {
		return o, fmt.Errorf("unexpected arguments: %v", fs.Args())
	}
	for s := range strings.SplitSeq(*sizes, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || n < 1 || n > 512<<10 {
			return o, fmt.Errorf("-sizes: %q is not a size between 1 and %d bytes", s, 512<<10)
		}
		o.sizes = append(o.sizes, n)
	}
	switch {
	case o.records < 1:
		return o, fmt.Errorf("-records must be at least 1, got %d", o.records)
	case o.runs < 1:
		return o, fmt.Errorf("-runs must be at least 1, got %d", o.runs)
	case o.workers < 1 || o.workers > config.MaxWorkers:
		return o, fmt.Errorf("-workers must be between 1 and %d, got %d", config.MaxWorkers, o.workers)
	case o.latency && o.rate < 1:
		return o, fmt.Errorf("-rate must be at least 1, got %d", o.rate)
	case o.latency && o.latencyDuration <= 0:
		return o, fmt.Errorf("-latency-duration must be positive, got %s", o.latencyDuration)
	}
	return o, nil
}

func main() {
	opts, err := parseFlags(os.Args[1:])
	if errors.Is(err, flag.ErrHelp) {
		return
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	go func() {
		<-ctx.Done()
		// From now on a second signal kills the process at once.
		stop()
	}()
	err = run(ctx, opts)
	stop()
	if err != nil {
		if ctx.Err() != nil {
			err = fmt.Errorf("interrupted: %w", err)
		}
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

// run does the whole measurement. It stops the broker it started, and
// every goroutine it started, before it returns.
func run(ctx context.Context, opts options) (err error) {
	began := time.Now()
	br, err := getBroker(ctx)
	if err != nil {
		return err
	}
	defer func() {
		if serr := br.stop(); serr != nil {
			err = errors.Join(err, serr)
		}
	}()

	b, err := newBench(opts, br)
	if err != nil {
		return err
	}
	defer b.close()
	progress("broker %s (%s); %d records per size, sizes %v, %d runs, %d workers",
		strings.Join(br.seeds, ","), br.kind, opts.records, opts.sizes, opts.runs, opts.workers)

	res := results{
		Started: began.UTC(), Broker: br.kind, Records: opts.records, Runs: opts.runs,
		Workers: opts.workers, Sizes: opts.sizes,
	}
	if opts.warmUp {
		if err := b.warmUp(ctx); err != nil {
			return err
		}
	}
	for _, size := range opts.sizes {
		sr, err := b.throughput(ctx, size)
		if err != nil {
			return fmt.Errorf("throughput, %d B values: %w", size, err)
		}
		res.Throughput = append(res.Throughput, sr)
		printSize(os.Stdout, sr)
	}
	if opts.latency {
		size := opts.sizes[0]
		for _, c := range []contender{relayALO, relayEOS} {
			lr, err := b.latency(ctx, c, size)
			if err != nil {
				return fmt.Errorf("latency of %s: %w", c.name, err)
			}
			res.Latency = append(res.Latency, lr)
		}
		printLatency(os.Stdout, res.Latency)
	}
	res.EOSOverALO = printSummary(os.Stdout, res.Throughput)
	res.Elapsed = time.Since(began).Round(time.Millisecond).String()
	if opts.jsonPath != "" {
		if err := writeJSON(opts.jsonPath, res); err != nil {
			return err
		}
		progress("results written to %s", opts.jsonPath)
	}
	progress("done in %s", time.Since(began).Round(time.Second))
	return nil
}

// progress prints a timestamped progress line to stderr.
func progress(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "%s bench: %s\n", time.Now().Format("15:04:05.000"), fmt.Sprintf(format, args...))
}
