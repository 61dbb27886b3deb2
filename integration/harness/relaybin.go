package harness

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
)

// RelayPackage is the import path of the relay command. BuildRelay builds
// it by import path, not by a relative directory, so that it works from
// any package of the module.
const RelayPackage = "github.com/sharerelay/sharerelay/cmd/relay"

// BuildRelay builds the relay binary into a new temporary directory and
// returns its path and a cleanup that removes the directory. Call it once
// per test binary, from TestMain: the tests then run that binary as real
// processes (real signals, real exits), the way it runs in production.
// The go tool's output is part of the error when the build fails.
func BuildRelay(ctx context.Context) (path string, cleanup func(), err error) {
	dir, err := os.MkdirTemp("", "sharerelay-bin-")
	if err != nil {
		return "", nil, fmt.Errorf("building the relay: %w", err)
	}
	cleanup = func() { os.RemoveAll(dir) }
	path = filepath.Join(dir, "relay")
	out, err := exec.CommandContext(ctx, "go", "build", "-o", path, RelayPackage).CombinedOutput()
	if err != nil {
		cleanup()
		return "", nil, fmt.Errorf("building the relay (go build %s): %w\n%s", RelayPackage, err, out)
	}
	return path, cleanup, nil
}

// RelayCommand returns the command that runs the relay binary bin on the
// pipeline file config as instance (`relay run -c config --instance
// instance --log-level info`), named "relay <instance>". The caller sets
// its LogPath and, if needed, its Env before Start.
func RelayCommand(bin, config, instance string) Command {
	return Command{
		Name: "relay " + instance,
		Path: bin,
		Args: []string{"run", "-c", config, "--instance", instance, "--log-level", "info"},
	}
}

// RelayDLQCommand returns the command that runs `relay dlq <sub> -c config
// args...` with the relay binary bin, named "relay dlq <sub>". The caller
// sets its LogPath (and StdoutPath, to read a --json report) before
// Start.
func RelayDLQCommand(bin, config, sub string, args ...string) Command {
	return Command{
		Name: "relay dlq " + sub,
		Path: bin,
		Args: append([]string{"dlq", sub, "-c", config}, args...),
	}
}
