package main

import (
	"fmt"
	"io"

	"github.com/sharerelay/sharerelay/config"
	"github.com/sharerelay/sharerelay/format"
	"github.com/sharerelay/sharerelay/internal/kafkaopts"
)

// loadPipeline loads the one pipeline file a command that talks to the
// cluster was given, as -c (cfg) or as its argument (pos), and the client
// options of its clusters (the sink's, and the source's). With warn, the configuration's warnings are
// printed to stderr. On failure it prints why to stderr and returns
// exitUsage; on success, exitOK.
func (c *command) loadPipeline(cfg string, pos []string, warn bool, stderr io.Writer) (*config.Pipeline, *kafkaopts.Clusters, int) {
	path, ok := c.onePipeline(cfg, pos, stderr)
	if !ok {
		return nil, nil, exitUsage
	}
	p, err := config.Load(path, format.Check)
	if err != nil {
		fmt.Fprintln(stderr, err)
		return nil, nil, exitUsage
	}
	if warn {
		for _, w := range p.Warnings {
			fmt.Fprintln(stderr, w)
		}
	}
	kafka, err := kafkaopts.NewClusters(p)
	if err != nil {
		fmt.Fprintf(stderr, "relay %s: %s: %v\n", c.name, path, err)
		return nil, nil, exitUsage
	}
	return p, kafka, exitOK
}
