package main

import (
	"context"
	"flag"
	"fmt"
	"io"

	"github.com/sharerelay/sharerelay/config"
	"github.com/sharerelay/sharerelay/pipetest"
)

// cmdTest runs a pipeline's tests offline: relay test [-v] <pipeline.yaml>
// [tests.yaml...]. With no test files named, it runs
// pipetest.DefaultFile. It exits 1 when a case fails or a file cannot be
// read, 2 on a usage error.
func cmdTest(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("test", flag.ContinueOnError)
	fs.SetOutput(stderr)
	verbose := fs.Bool("v", false, "list the passing cases too")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() == 0 {
		fmt.Fprintln(stderr, "relay test: give a pipeline file, then optionally test files")
		return 2
	}
	path := fs.Arg(0)
	p, err := config.Load(path)
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 1
	}
	chain, err := p.Chain()
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 1
	}
	files := fs.Args()[1:]
	if len(files) == 0 {
		files = []string{pipetest.DefaultFile(path)}
	}
	status := 0
	for _, file := range files {
		s, err := pipetest.Load(file)
		if err != nil {
			fmt.Fprintln(stderr, "relay test:", err)
			status = 1
			continue
		}
		if pipetest.Report(stdout, s, pipetest.Run(context.Background(), p, chain, s), *verbose) > 0 {
			status = 1
		}
	}
	return status
}
