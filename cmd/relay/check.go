package main

import (
	"context"
	"flag"
	"io"
	"time"

	"github.com/sharerelay/sharerelay/preflight"
)

// cmdCheck runs the preflight checks of a pipeline against its cluster, with
// the pipeline's own client settings, and prints one line per check. Exit 0
// only when no check failed.
func cmdCheck(c *command, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet(c.name, flag.ContinueOnError)
	cfg := cfgFlag(fs)
	timeout := fs.Duration("timeout", time.Minute, "give up after this long")
	pos, code, ok := c.parse(fs, args, stdout, stderr)
	if !ok {
		return code
	}
	p, kafka, code := c.loadPipeline(*cfg, pos, true, stderr)
	if code != exitOK {
		return code
	}
	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()
	rep := preflight.Check(ctx, p, kafka.Sink.Opts(), kafka.Source.Opts())
	rep.Print(stdout)
	if rep.Failed() {
		return exitFailed
	}
	return exitOK
}
