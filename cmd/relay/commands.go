package main

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
)

// overview is what relay help prints before the list of commands.
const overview = `relay runs one sharerelay pipeline: it moves Kafka records from source
topics, read through a share group, through a chain of transforms to
output topics, exactly once, and dead-letters the records it cannot
deliver. One YAML file describes one pipeline.

usage: relay <command> [flags] <pipeline.yaml>
`

// overviewEnd is what relay help prints after the list of commands.
const overviewEnd = `
A first pipeline, in the order to try it:
  relay validate pipeline.yaml   check the file offline: every problem, as file:line:col
  relay test pipeline.yaml       run its test cases offline
  relay check pipeline.yaml      check its cluster: brokers, topics, ACLs, share group
  relay run pipeline.yaml        run it (health and metrics: --metrics-addr :9464)

Flags may come before or after the file, with one dash or two (-json,
--json); -c <pipeline.yaml> is accepted in place of the file.
relay help <command>, or relay <command> --help, describes a command.

exit status, the same for every command:
  0  success
  1  the check failed: a failing case (test), a FAIL line (check), not exact
     (verify), not ready (health); for run, the relay failed while running
  2  usage or configuration error: an unknown command or flag, a missing or
     extra argument, a missing or invalid pipeline file
`

// commands are relay's commands, in the order relay help lists them.
var commands = []*command{
	{
		name:     "validate",
		synopsis: "validate <pipeline.yaml>...",
		summary:  "check pipeline files offline: every problem at once, as file:line:col",
		about: `Reads each pipeline file, fills in ${VAR} references from the environment,
applies the defaults and checks the result, without connecting to any
broker. Every problem of a file is printed at once, as file:line:col with
the field's path, and with a suggestion where a name is misspelt. Warnings
are printed too; they do not fail the file.

` + fileNote,
		exit0:    "every file is valid (warnings allowed)",
		exit2:    "usage or configuration error: an unknown flag, no file given, a file missing or invalid",
		examples: []string{"relay validate configs/booknest-packing.yaml", "relay validate configs/*.yaml configs/examples/*.yaml"},
		run:      cmdValidate,
	},
	{
		name:     "test",
		synopsis: "test [-v] <pipeline.yaml> [tests.yaml...]",
		summary:  "run a pipeline's test cases offline",
		about: `Runs the pipeline's transforms on the cases of its test files, with no
cluster, and compares what comes out (outputs, dead letters, releases)
with what each case expects; a failing case prints a diff. With no test
file named, it runs tests/<name>.test.yaml beside <name>.yaml.

` + fileNote,
		exit0:    "every case passed",
		exit1:    "a case failed",
		exit2:    configExit2 + "; a test file missing or invalid",
		examples: []string{"relay test configs/booknest-packing.yaml", "relay test -v pipeline.yaml tests/edge-cases.test.yaml"},
		run:      cmdTest,
	},
	{
		name:     "check",
		synopsis: "check [flags] <pipeline.yaml>",
		summary:  "check a pipeline against its cluster before running it",
		about: `Connects as the pipeline does (its brokers, TLS and SASL settings) and
checks what running it needs: the brokers answer and speak share groups,
the topics exist, the ACLs allow what the relay does, the share group's
settings suit the pipeline, and the schema registry (for avro, protobuf
and json_schema) answers, accepts the relay's credentials and holds or
will accept the schemas the outputs are written with. Prints one line
per check: ok, warn or FAIL. It changes nothing on the cluster or the
registry.

` + fileNote,
		exit0:    "no check failed (warnings allowed)",
		exit1:    "a check failed (a FAIL line)",
		exit2:    configExit2,
		examples: []string{"relay check configs/booknest-packing.yaml"},
		run:      cmdCheck,
	},
	{
		name:     "run",
		synopsis: "run [flags] <pipeline.yaml>",
		summary:  "run the pipeline until SIGTERM or SIGINT",
		about: `Runs the pipeline: reads the source topics through the share group, passes
each record through the transforms, writes the outputs and dead letters
(in transactions, with delivery: exactly-once) and acknowledges the
records. On SIGTERM or SIGINT it stops polling, writes what it holds for
up to batch.drain_timeout, releases the rest, leaves the share group and
exits 0; a second signal exits at once with status 130.

It logs the build and the effective configuration (secrets redacted)
first, then the configuration's warnings, then where /metrics, /healthz
and /readyz listen, or that they are off. They listen on --metrics-addr,
else on the file's metrics.listen, else on $RELAY_METRICS_ADDR; with none
of these they are off. Every log line carries pipeline and instance.

` + fileNote,
		exit0: "stopped cleanly on SIGTERM or SIGINT (a second signal exits at once, with 130)",
		exit1: "the relay failed while running: fenced by another instance of the same name, " +
			"a topic missing or access denied at start, the cluster refusing the credentials, the claim ledger lost",
		exit2: configExit2 + "; the health and metrics address invalid or in use",
		examples: []string{
			"relay run configs/booknest-packing.yaml",
			"relay run --instance packer-1 --metrics-addr :9464 --log-format json configs/booknest-packing.yaml",
			"RELAY_METRICS_ADDR=127.0.0.1:9464 relay run configs/booknest-packing.yaml",
		},
		run: cmdRun,
	},
	{
		name:     "health",
		synopsis: "health [--addr host:port] [--timeout 5s]",
		summary:  "ask a running relay whether it is ready (a container HEALTHCHECK)",
		about: `Asks a running relay's /readyz and prints its answer: "ready", or "not
ready:" and why. The address is --addr, else $RELAY_METRICS_ADDR, else
127.0.0.1:9464; an address that listens on every interface (":9464",
"0.0.0.0:9464") is asked on the loopback. It needs no shell or curl, so an
image without them can use it:

  HEALTHCHECK CMD ["/usr/local/bin/relay", "health"]`,
		exit0:    "the relay is ready",
		exit1:    "the relay is not ready, or nothing answers at the address",
		exit2:    usageExit2 + "; an address that is not host:port",
		examples: []string{"relay health", "relay health --addr 127.0.0.1:9464"},
		run:      cmdHealth,
	},
	{
		name:     "verify",
		synopsis: "verify [flags] <pipeline.yaml>",
		summary:  "audit a pipeline: every source record in the output or the dead letters, once",
		about: `Reads the pipeline's source, output and dead-letter topics (and its claim
ledger) and checks that every source record up to the group's position
is in the output or the dead letters exactly once: nothing lost, nothing
duplicated. Prints a table per source partition and a verdict, EXACT or
NOT EXACT. It shares no code with the relay, and writes nothing. With
source.cluster, the sources and the group's lag are read on the source
cluster, the outputs, dead letters and ledger on the sink cluster.

` + fileNote,
		exit0:    "EXACT",
		exit1:    "NOT EXACT, or the audit could not finish (the cluster unreachable, --timeout)",
		exit2:    configExit2,
		examples: []string{"relay verify configs/booknest-packing.yaml", "relay verify --json configs/booknest-packing.yaml"},
		run:      cmdVerify,
	},
	{
		name:     "audit",
		synopsis: "audit [flags] <pipeline.yaml>",
		summary:  "audit a running pipeline continuously: relay verify's verdict as metrics",
		about: `Runs beside the relay and judges every source record as relay verify
would, once it has settled: once the share group has acknowledged it and
every transaction that could still write its outputs has ended
(docs/operations.md, "Live audit", states the rule). It never judges a
record in flight. Its counters — records judged, lost, duplicated,
incomplete, unexpected, dead-lettered, filtered — and its lag are served
on --listen (/metrics, /healthz, /readyz). It resumes from a checkpoint (a
compacted topic <pipeline>.audit on the sink cluster, or
--checkpoint-file), so its counters continue across restarts. It writes
nothing but the checkpoint. On SIGTERM or SIGINT it writes the checkpoint
and exits 0. With --once it judges what is acknowledged by now, prints a
report like relay verify's and exits.

` + fileNote,
		exit0:    "stopped cleanly on SIGTERM or SIGINT; with --once, exact (or only the duplicates at-least-once allows)",
		exit1:    "the audit could not start or run (the checkpoint unreadable, the clusters unreachable); with --once, not exact, or no fence settled within --timeout",
		exit2:    configExit2 + "; the --listen address invalid or in use",
		examples: []string{"relay audit configs/booknest-packing.yaml", "relay audit --listen :9465 --interval 10s configs/booknest-packing.yaml", "relay audit --once --no-checkpoint configs/booknest-packing.yaml"},
		run:      cmdAudit,
	},
	{
		name:     "dlq",
		synopsis: "dlq inspect|replay [flags] <pipeline.yaml>",
		summary:  "inspect the dead letters, or replay them",
		about: `relay dlq inspect counts and samples the dead letters; relay dlq replay
sends them through the pipeline's transforms again, or copies them to a
topic. relay dlq <inspect|replay> --help describes each, with the flags
that select dead letters.`,
		exit0:    "see relay dlq inspect --help and relay dlq replay --help",
		exit1:    "see relay dlq inspect --help and relay dlq replay --help",
		exit2:    usageExit2,
		examples: []string{"relay dlq inspect configs/booknest-packing.yaml", "relay dlq replay --class json --dry-run configs/booknest-packing.yaml"},
		run:      cmdDLQ,
	},
	{
		name:     "demo",
		synopsis: "demo [--log-level warn]",
		summary:  "run the BookNest pipeline on an embedded cluster and check it: no Kafka needed",
		about: `Starts an in-process Kafka (kfake), runs configs/booknest-packing.yaml on it
with 2000 orders, then checks that every order became a job or a dead
letter exactly once. It takes a few seconds and needs nothing but the
binary. kfake is a demonstration broker, not the proof of a guarantee.`,
		exit0:    "the demo's numbers are right",
		exit1:    "they are not, or the demo failed",
		exit2:    usageExit2,
		examples: []string{"relay demo"},
		run:      cmdDemo,
	},
	{
		name:     "version",
		synopsis: "version",
		summary:  "print the version and how the binary was built",
		about:    `Prints the version, the commit it was built from, the Go toolchain and the franz-go version linked in. relay --version does the same.`,
		exit0:    "always, given no argument",
		exit2:    usageExit2,
		examples: []string{"relay version"},
		run:      cmdVersion,
	},
}

// lookup returns the command called name among cs, or nil.
func lookup(cs []*command, name string) *command {
	for _, c := range cs {
		if c.name == name || strings.HasSuffix(c.name, " "+name) {
			return c
		}
	}
	return nil
}

// printOverview prints what relay is, its commands and the exit codes.
func printOverview(w io.Writer) {
	fmt.Fprint(w, overview)
	fmt.Fprintln(w, "\ncommands:")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, c := range commands {
		fmt.Fprintf(tw, "  %s\t%s\n", c.name, c.summary)
	}
	fmt.Fprintf(tw, "  help\tthis, or a command's help: relay help <command>\n")
	tw.Flush()
	fmt.Fprint(w, overviewEnd)
}
