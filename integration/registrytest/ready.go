package registrytest

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
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

// containsPortInUse reports whether a registry log shows a failed bind.
func containsPortInUse(log string) bool {
	return strings.Contains(log, "Address already in use") || strings.Contains(log, "seems to be in use by another process")
}

// prober returns Start's readiness probe: GET /subjects of the ccompat
// API answers 200.
func (r *Registry) prober() func(context.Context) error {
	hc := &http.Client{Timeout: 5 * time.Second}
	return func(ctx context.Context) error { return probe(ctx, hc, r.URL()+"/subjects") }
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
