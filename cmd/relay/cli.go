package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
)

// The exit codes, the same for every command, so that a script or a
// supervisor can tell "the check said no" from "fix the command line or
// the file": systemd's unit does not restart on exitUsage.
const (
	exitOK     = 0
	exitFailed = 1 // the check failed: not exact, a FAIL line, a failing test, not ready; run: the relay failed
	exitUsage  = 2 // a usage or configuration error: a bad flag or argument, an invalid pipeline file
)

// command is one of relay's commands, as its help describes it.
type command struct {
	name     string // as typed after "relay": "run", "dlq inspect"
	synopsis string // the usage line, without "relay "
	summary  string // one line, for the list of commands
	about    string // what it does, a paragraph or two
	// exit says what each exit code means for this command; exit1 ""
	// means the command does not exit 1.
	exit0, exit1, exit2 string
	examples            []string
	// run runs the command; c is this command, for its help and messages.
	run func(c *command, args []string, stdout, stderr io.Writer) int
}

// fileNote is what every command taking a pipeline file says about the
// ways to give it.
const fileNote = `The pipeline file may also be given as -c <pipeline.yaml>; flags may come
before or after it.`

// usageExit2 is exit 2 for the commands that read no pipeline file.
const usageExit2 = "usage error: an unknown flag, a missing or extra argument"

// configExit2 is exit 2 for the commands that read a pipeline file.
const configExit2 = "usage or configuration error: an unknown flag, a missing or extra argument, the pipeline file missing or invalid"

// help prints c's help to w: synopsis, description, flags, exit codes
// and examples.
func (c *command) help(w io.Writer, fs *flag.FlagSet) {
	fmt.Fprintf(w, "relay %s: %s\n\nusage: relay %s\n\n%s\n", c.name, c.summary, c.synopsis, strings.TrimSpace(c.about))
	if hasFlags(fs) {
		fmt.Fprintln(w, "\nflags:")
		fs.SetOutput(w)
		fs.PrintDefaults()
	}
	fmt.Fprintln(w, "\nexit status:")
	fmt.Fprintf(w, "  0  %s\n", wrap(c.exit0, 5))
	if c.exit1 != "" {
		fmt.Fprintf(w, "  1  %s\n", wrap(c.exit1, 5))
	}
	fmt.Fprintf(w, "  2  %s\n", wrap(c.exit2, 5))
	if len(c.examples) > 0 {
		fmt.Fprintln(w, "\nexamples:")
		for _, e := range c.examples {
			fmt.Fprintf(w, "  %s\n", e)
		}
	}
}

// helpWidth is the width help text is wrapped to.
const helpWidth = 78

// wrap wraps text to helpWidth, indenting the lines after the first by
// indent spaces (the first is indented by the caller).
func wrap(text string, indent int) string {
	var b strings.Builder
	col := indent
	for i, word := range strings.Fields(text) {
		switch {
		case i == 0:
		case col+1+len(word) > helpWidth:
			b.WriteString("\n" + strings.Repeat(" ", indent))
			col = indent
		default:
			b.WriteByte(' ')
			col++
		}
		b.WriteString(word)
		col += len(word)
	}
	return b.String()
}

func hasFlags(fs *flag.FlagSet) bool {
	n := 0
	fs.VisitAll(func(*flag.Flag) { n++ })
	return n > 0
}

// parse parses args with fs, which holds c's flags. Flags may come before
// and after the positional arguments, which it returns in order (Go's
// flag package stops at the first non-flag: parse parses the rest again);
// everything after "--" is positional. With -h or --help it prints c's
// help to stdout and returns exitOK and false; on a bad flag it says so on
// stderr and returns exitUsage and false.
func (c *command) parse(fs *flag.FlagSet, args []string, stdout, stderr io.Writer) (pos []string, code int, ok bool) {
	fs.SetOutput(stderr)
	fs.Usage = func() {} // the error is printed by flag; the hint below
	for {
		err := fs.Parse(args)
		if errors.Is(err, flag.ErrHelp) {
			c.help(stdout, fs)
			return nil, exitOK, false
		}
		if err != nil {
			fmt.Fprintf(stderr, "usage: relay %s (relay %s --help for more)\n", c.synopsis, c.name)
			return nil, exitUsage, false
		}
		rest := fs.Args()
		if len(rest) == 0 {
			return pos, exitOK, true
		}
		if n := len(args) - len(rest); n > 0 && args[n-1] == "--" {
			return append(pos, rest...), exitOK, true
		}
		pos, args = append(pos, rest[0]), rest[1:]
	}
}

// usageError prints a usage problem of c and returns exitUsage.
func (c *command) usageError(stderr io.Writer, format string, a ...any) int {
	fmt.Fprintf(stderr, "relay %s: %s\nusage: relay %s (relay %s --help for more)\n", c.name, fmt.Sprintf(format, a...), c.synopsis, c.name)
	return exitUsage
}

// files returns the files a command was given: the -c flag's file (cfg)
// first, then the positional arguments. A first positional argument that
// names the -c file again is the same file given twice, and dropped.
func files(cfg string, pos []string) []string {
	if cfg == "" {
		return pos
	}
	if len(pos) > 0 && sameFile(cfg, pos[0]) {
		pos = pos[1:]
	}
	return append([]string{cfg}, pos...)
}

// onePipeline returns the one pipeline file a command was given, as -c
// (cfg) or as its argument (pos). None, or two different ones, is a usage
// error: it prints why and returns false.
func (c *command) onePipeline(cfg string, pos []string, stderr io.Writer) (string, bool) {
	fs := files(cfg, pos)
	switch {
	case len(fs) == 0:
		c.usageError(stderr, "no pipeline file given")
		return "", false
	case len(fs) > 1 && cfg != "":
		c.usageError(stderr, "-c %s and %s: give the pipeline file once, as -c or as the argument", cfg, strings.Join(fs[1:], " "))
		return "", false
	case len(fs) > 1:
		c.usageError(stderr, "one pipeline file expected, got %s", strings.Join(fs, " "))
		return "", false
	}
	return fs[0], true
}

// sameFile reports whether a and b name the same file: the same path, or
// the same file reached by two paths.
func sameFile(a, b string) bool {
	if filepath.Clean(a) == filepath.Clean(b) {
		return true
	}
	sa, erra := os.Stat(a)
	sb, errb := os.Stat(b)
	return erra == nil && errb == nil && os.SameFile(sa, sb)
}

// cfgFlag registers -c, the older way to name the pipeline file.
func cfgFlag(fs *flag.FlagSet) *string {
	return fs.String("c", "", "give `pipeline.yaml` as a flag instead of as the argument")
}

// noArgs is a usage error unless pos is empty, for commands that take no
// arguments.
func (c *command) noArgs(pos []string, stderr io.Writer) bool {
	if len(pos) > 0 {
		c.usageError(stderr, "unexpected argument %q", pos[0])
		return false
	}
	return true
}
