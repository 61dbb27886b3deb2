package main

import (
	"context"
	"flag"
	"fmt"
	"io"

	"github.com/sharerelay/sharerelay/config"
	"github.com/sharerelay/sharerelay/format"
	"github.com/sharerelay/sharerelay/pipetest"
)

// cmdTest runs a pipeline's tests offline: relay test [-v] <pipeline.yaml>
// [tests.yaml...]. With no test files named, it runs
// pipetest.DefaultFile. It exits 1 when a case fails; 2 on a usage error,
// an invalid pipeline, or a test file it cannot load (which outweighs a
// failing case in another file: the run is incomplete).
func cmdTest(c *command, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet(c.name, flag.ContinueOnError)
	cfg := cfgFlag(fs)
	verbose := fs.Bool("v", false, "list the passing cases too")
	pos, code, ok := c.parse(fs, args, stdout, stderr)
	if !ok {
		return code
	}
	args = files(*cfg, pos)
	if len(args) == 0 {
		return c.usageError(stderr, "give a pipeline file, then optionally test files")
	}
	path := args[0]
	p, err := config.Load(path, format.Check)
	if err != nil {
		fmt.Fprintln(stderr, err)
		return exitUsage
	}
	tests := args[1:]
	if len(tests) == 0 {
		tests = []string{pipetest.DefaultFile(path)}
	}
	status := exitOK
	for _, file := range tests {
		s, err := pipetest.Load(file)
		if err != nil {
			fmt.Fprintln(stderr, err) // every line names its file:line:col
			status = exitUsage
			continue
		}
		results, err := pipetest.Run(context.Background(), p, s)
		if err != nil {
			fmt.Fprintln(stderr, err)
			status = exitUsage
			continue
		}
		if pipetest.Report(stdout, s, results, *verbose) > 0 {
			status = max(status, exitFailed)
		}
	}
	return status
}
