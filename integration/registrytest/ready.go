package registrytest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"time"
)

// fatalLines in the log mean the start has failed even though the JVM
// may take a while to exit.
var fatalLines = []string{
	"Address already in use",
	"seems to be in use by another process",
	"Failed to start application",
	"UnsupportedClassVersionError",
}

// errPortInUse marks a start that failed because a port was taken.
var errPortInUse = errors.New("port already in use")

// containsPortInUse reports whether a registry log shows a failed bind.
func containsPortInUse(log string) bool {
	return strings.Contains(log, "Address already in use") || strings.Contains(log, "seems to be in use by another process")
}

// waitReady waits until the log written since offset says the registry
// listens on its address (so that the answer below is not another
// process's on the same port) and GET /subjects of the ccompat API
// answers 200.
func (r *Registry) waitReady(ctx context.Context, timeout time.Duration, offset int64, done <-chan struct{}) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	listening := []byte("Listening on: http://" + r.Addr())
	hc := &http.Client{Timeout: 5 * time.Second}
	var (
		bound   bool
		lastErr error
	)
	for {
		select {
		case <-done:
			return fmt.Errorf("registry process exited before it answered (%s)", r.exitStatus())
		case <-ctx.Done():
			if lastErr != nil {
				return fmt.Errorf("registry not ready after %s (last probe: %v): %w", timeout, lastErr, ctx.Err())
			}
			return fmt.Errorf("registry not ready after %s (no %q in the log): %w", timeout, listening, ctx.Err())
		case <-tick.C:
		}
		if !bound {
			log, err := readFrom(r.LogPath(), offset, -1)
			if err != nil {
				return err
			}
			for _, l := range fatalLines {
				if bytes.Contains(log, []byte(l)) {
					return fmt.Errorf("registry failed to start (%q in the log)", l)
				}
			}
			if bound = bytes.Contains(log, listening); !bound {
				continue
			}
		}
		if lastErr = probe(ctx, hc, r.URL()+"/subjects"); lastErr == nil {
			return nil
		}
	}
}

// probe asks url and wants 200.
func probe(ctx context.Context, hc *http.Client, url string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := hc.Do(req)
	if err != nil {
		return err
	}
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s: %s", url, resp.Status, bytes.TrimSpace(body))
	}
	return nil
}

// exitStatus describes how the current process ended.
func (r *Registry) exitStatus() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.cmd == nil || r.cmd.ProcessState == nil {
		return "unknown status"
	}
	return r.cmd.ProcessState.String()
}

// logTail returns the last lines written to the file at path after offset.
func logTail(path string, offset int64) string {
	const maxBytes, maxLines = 16 << 10, 60
	b, err := readFrom(path, offset, maxBytes)
	if err != nil {
		return fmt.Sprintf("(cannot read %s: %v)", path, err)
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > maxLines {
		lines = lines[len(lines)-maxLines:]
	}
	return strings.Join(lines, "\n")
}

// readFrom reads the file at path from offset, keeping at most the last
// max bytes when max >= 0.
func readFrom(path string, offset, max int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("open log: %w", err)
	}
	defer f.Close()
	if max >= 0 {
		if fi, err := f.Stat(); err == nil && fi.Size()-max > offset {
			offset = fi.Size() - max
		}
	}
	if _, err := f.Seek(offset, io.SeekStart); err != nil {
		return nil, fmt.Errorf("seek log: %w", err)
	}
	b, err := io.ReadAll(f)
	if err != nil {
		return nil, fmt.Errorf("read log: %w", err)
	}
	return b, nil
}
