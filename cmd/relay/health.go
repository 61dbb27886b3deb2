package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"time"
)

// defaultHealthAddr is where relay health asks when neither --addr nor
// $RELAY_METRICS_ADDR says: the metrics port, on the loopback.
const defaultHealthAddr = "127.0.0.1:9464"

// cmdHealth asks a running relay's /readyz whether it is ready: the
// container HEALTHCHECK of an image with no shell and no curl.
func cmdHealth(c *command, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet(c.name, flag.ContinueOnError)
	def := os.Getenv(metricsAddrEnv)
	if def == "" {
		def = defaultHealthAddr
	}
	addr := fs.String("addr", def, "the relay's health and metrics address, `host:port` (default $"+metricsAddrEnv+", else "+defaultHealthAddr+")")
	timeout := fs.Duration("timeout", 5*time.Second, "give up after this long")
	pos, code, ok := c.parse(fs, args, stdout, stderr)
	if !ok {
		return code
	}
	if !c.noArgs(pos, stderr) {
		return exitUsage
	}
	target, err := dialAddr(*addr)
	if err != nil {
		return c.usageError(stderr, "--addr %s: %v", *addr, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()
	ready, msg, err := readyz(ctx, "http://"+target+"/readyz")
	if err != nil {
		fmt.Fprintf(stderr, "relay health: not reachable: %v (is the relay running, with health on? relay run --help says how)\n", err)
		return exitFailed
	}
	fmt.Fprintln(stdout, msg)
	if !ready {
		return exitFailed
	}
	return exitOK
}

// readyz asks url and returns whether it answered 200, and its answer
// ("ready", or "not ready: <why>"), or why it could not ask.
func readyz(ctx context.Context, url string) (ready bool, msg string, err error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return false, "", err
	}
	// One request, no connection kept: the process exits next.
	tr := &http.Transport{DisableKeepAlives: true}
	defer tr.CloseIdleConnections()
	resp, err := (&http.Client{Transport: tr}).Do(req)
	if err != nil {
		return false, "", err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 4096))
	if err != nil {
		return false, "", fmt.Errorf("reading %s: %w", url, err)
	}
	msg = strings.TrimSpace(string(body))
	if resp.StatusCode == http.StatusOK {
		return true, msg, nil
	}
	if msg == "" {
		msg = "not ready: " + resp.Status
	}
	return false, msg, nil
}

// dialAddr turns a listen address into one to connect to: a host that
// means every interface (empty, 0.0.0.0, ::) becomes the loopback.
func dialAddr(addr string) (string, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "", err
	}
	if port == "" {
		return "", fmt.Errorf("no port")
	}
	switch host {
	case "", "0.0.0.0":
		host = "127.0.0.1"
	case "::":
		host = "::1"
	}
	return net.JoinHostPort(host, port), nil
}
