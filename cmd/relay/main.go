// Command relay runs a sharerelay pipeline, and validates, tests, checks
// and audits it. Every command that takes a pipeline file takes it the
// same way, relay <command> [flags] <pipeline.yaml>:
//
//	relay validate <pipeline.yaml>...
//	relay test [-v] <pipeline.yaml> [tests.yaml...]
//	relay check [--timeout 1m] <pipeline.yaml>
//	relay run [--instance NAME] [--metrics-addr host:port] [--log-format text|json] <pipeline.yaml>
//	relay health [--addr host:port]
//	relay verify [--json] [--timeout 5m] <pipeline.yaml>
//	relay dlq inspect [--json] [selection] <pipeline.yaml>
//	relay dlq replay [selection] [--to TOPIC] [--dry-run] <pipeline.yaml>
//	relay demo
//	relay version
//	relay help [command]
//
// -c <pipeline.yaml> is accepted in place of the argument, and flags may
// follow the file. The exit codes are the same for every command: 0
// success, 1 the check failed, 2 a usage or configuration error (exitOK,
// exitFailed, exitUsage). Each command's help (commands.go) is its
// reference: relay help <command>.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"

	"github.com/sharerelay/sharerelay/config"
	"github.com/sharerelay/sharerelay/demo"
	"github.com/sharerelay/sharerelay/format"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// run runs the command args name and returns its exit code.
func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		printOverview(stderr)
		return exitUsage
	}
	name, rest := args[0], args[1:]
	switch name {
	case "-h", "--help", "help":
		if len(rest) == 0 || strings.HasPrefix(rest[0], "-") || rest[0] == "help" {
			printOverview(stdout)
			return exitOK
		}
		// relay help dlq inspect is relay dlq inspect --help.
		return run(append(slices.Clone(rest), "--help"), stdout, stderr)
	case "--version":
		name = "version"
	}
	c := lookup(commands, name)
	if c == nil {
		fmt.Fprintf(stderr, "relay: unknown command %q (relay help lists them)\n", name)
		return exitUsage
	}
	return c.run(c, rest, stdout, stderr)
}

// signals catches SIGTERM and SIGINT from the moment it is made, so that
// a signal during start-up (a supervisor stopping an instance it just
// started) ends the command cleanly instead of killing the process with
// the default action.
type signals struct{ ch chan os.Signal }

func catchSignals() *signals {
	s := &signals{ch: make(chan os.Signal, 2)}
	signal.Notify(s.ch, syscall.SIGTERM, syscall.SIGINT)
	return s
}

// watch returns a context cancelled when parent is, or on the first
// signal, logged to log; a second signal exits the process at once with
// status 130. A signal caught before watch waits for it.
func (s *signals) watch(parent context.Context, log *slog.Logger) context.Context {
	ctx, cancel := context.WithCancel(parent)
	go func() {
		defer cancel()
		sig, ok := <-s.ch
		if !ok {
			return
		}
		log.Info("signal received; stopping cleanly: writing what is held, then leaving (send again to exit at once)", "signal", sig.String())
		cancel()
		if sig, ok = <-s.ch; ok {
			log.Error("second signal; exiting at once", "signal", sig.String())
			os.Exit(130)
		}
	}()
	return ctx
}

// stop stops catching signals, and ends watch's goroutine.
func (s *signals) stop() { signal.Stop(s.ch); close(s.ch) }

func cmdValidate(c *command, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet(c.name, flag.ContinueOnError)
	cfg := cfgFlag(fs)
	pos, code, ok := c.parse(fs, args, stdout, stderr)
	if !ok {
		return code
	}
	paths := files(*cfg, pos)
	if len(paths) == 0 {
		return c.usageError(stderr, "give one or more pipeline files")
	}
	status := exitOK
	for _, path := range paths {
		p, err := config.Load(path, format.Check)
		if err != nil {
			fmt.Fprintln(stderr, err)
			status = exitUsage
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

func cmdDemo(c *command, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet(c.name, flag.ContinueOnError)
	level := fs.String("log-level", "warn", "log level: debug, info, warn, error")
	pos, code, ok := c.parse(fs, args, stdout, stderr)
	if !ok {
		return code
	}
	if !c.noArgs(pos, stderr) {
		return exitUsage
	}
	sigs := catchSignals()
	defer sigs.stop()
	log, err := newLogger(stderr, *level, "text")
	if err != nil {
		return c.usageError(stderr, "%v", err)
	}
	if err := demo.Run(sigs.watch(context.Background(), log), stdout, log); err != nil {
		fmt.Fprintln(stderr, err)
		return exitFailed
	}
	return exitOK
}

func cmdVersion(c *command, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet(c.name, flag.ContinueOnError)
	pos, code, ok := c.parse(fs, args, stdout, stderr)
	if !ok {
		return code
	}
	if !c.noArgs(pos, stderr) {
		return exitUsage
	}
	readBuildVersion().print(stdout)
	return exitOK
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
