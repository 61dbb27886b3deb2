package main

import (
	"fmt"
	"io"

	"github.com/sharerelay/sharerelay/config"
	"github.com/sharerelay/sharerelay/internal/kafkaopts"
)

// loadPipeline loads the pipeline file a command that talks to the cluster
// was given with -c (path), and the client options it connects with. cmd
// is the command as its messages name it ("check", "dlq inspect"). With
// warn, the configuration's warnings are printed to stderr. On failure it
// prints why to stderr and returns exit code 2; on success, 0.
func loadPipeline(cmd, path string, warn bool, stderr io.Writer) (*config.Pipeline, *kafkaopts.Options, int) {
	if path == "" {
		fmt.Fprintf(stderr, "relay %s: -c <pipeline.yaml> is required\n", cmd)
		return nil, nil, 2
	}
	p, err := config.Load(path)
	if err != nil {
		fmt.Fprintln(stderr, err)
		return nil, nil, 2
	}
	if warn {
		for _, w := range p.Warnings {
			fmt.Fprintln(stderr, w)
		}
	}
	kafka, err := kafkaopts.New(p)
	if err != nil {
		fmt.Fprintf(stderr, "relay %s: %v\n", cmd, err)
		return nil, nil, 2
	}
	return p, kafka, 0
}
