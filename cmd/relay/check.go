package main

import (
	"context"
	"flag"
	"fmt"
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
	instances := fs.Int("instances", 0, "check a planned fleet of this many relay instances: each one's poll size, and whether the delivery-limit and lock-budget rules hold for the fleet (0: the instances in the group now, and this one)")
	pos, code, ok := c.parse(fs, args, stdout, stderr)
	if !ok {
		return code
	}
	if *instances < 0 {
		fmt.Fprintf(stderr, "relay %s: -instances %d: want a number of instances, 1 or more (0: those in the group now)\n", c.name, *instances)
		return exitUsage
	}
	p, kafka, code := c.loadPipeline(*cfg, pos, true, stderr)
	if code != exitOK {
		return code
	}
	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()
	rep := preflight.Check(ctx, p, kafka.Sink.Opts(), kafka.Source.Opts(), preflight.WithInstances(*instances))
	rep.Print(stdout)
	if rep.Failed() {
		return exitFailed
	}
	return exitOK
}
