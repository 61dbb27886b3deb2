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
func cmdCheck(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("check", flag.ContinueOnError)
	fs.SetOutput(stderr)
	cfgPath := fs.String("c", "", "pipeline config file (YAML)")
	timeout := fs.Duration("timeout", time.Minute, "give up after this long")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	p, kafka, code := loadPipeline("check", *cfgPath, true, stderr)
	if code != 0 {
		return code
	}
	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()
	rep := preflight.Check(ctx, p, kafka.Opts())
	rep.Print(stdout)
	if rep.Failed() {
		return 1
	}
	return 0
}
