package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/sharerelay/sharerelay/integration/kafkatest"
	"github.com/sharerelay/sharerelay/metrics"
)

// processStopTimeout bounds a relay process's shutdown after SIGTERM.
const processStopTimeout = 30 * time.Second

// runRelayProcess runs the trial's pipeline with the shipped relay binary
// (-relay-bin, `relay run`) as its own process, follows its progress on
// its metrics endpoint until every record is acknowledged, reads its peak
// resident set size and the CPU it used (user+system, from its start),
// and stops it with SIGTERM. The in-process relay shares this process's
// heap and runtime with the bench; this is the memory and CPU an operator
// sees. For a contender with the live auditor beside it (audit.go) the
// auditor starts with the relay, and once the relay has stopped, what it
// cost to judge every record is returned too.
func (b *bench) runRelayProcess(ctx context.Context, t trial, tr *tracker) (peakMB float64, cpu time.Duration, aud *auditRun, err error) {
	port, err := kafkatest.FreePort()
	if err != nil {
		return 0, 0, nil, err
	}
	t.metricsListen = "127.0.0.1:" + strconv.Itoa(port)
	dir, err := os.MkdirTemp("", "bench-relay-")
	if err != nil {
		return 0, 0, nil, fmt.Errorf("creating the pipeline's directory: %w", err)
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, t.name+".yaml")
	if err := os.WriteFile(path, []byte(b.pipelineYAMLOf(t)), 0o600); err != nil {
		return 0, 0, nil, fmt.Errorf("writing the pipeline: %w", err)
	}
	var auditor *liveAuditor
	if t.c.audit {
		if auditor, err = b.startAuditor(path, dir); err != nil {
			return 0, 0, nil, fmt.Errorf("starting the live auditor: %w", err)
		}
		defer auditor.stop() // a run that failed before it was judged
	}
	cmd := exec.Command(b.opts.relayBin, "run", "-c", path, "--instance", relayInstance, "--log-level", "error")
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if b.opts.memoryLimitMiB > 0 { // the limit the in-process relay runs with
		cmd.Env = append(os.Environ(), fmt.Sprintf("GOMEMLIMIT=%dMiB", b.opts.memoryLimitMiB))
	}
	if err := cmd.Start(); err != nil {
		return 0, 0, nil, fmt.Errorf("starting %s: %w", b.opts.relayBin, err)
	}
	var waitErr error
	exited := make(chan struct{})
	go func() { waitErr = cmd.Wait(); close(exited) }()

	fctx, stopFollow := context.WithCancel(ctx)
	failed := make(chan error, 1)
	var wg sync.WaitGroup
	wg.Go(func() { followEndpoint(fctx, "http://"+t.metricsListen+"/metrics", tr) })
	wg.Go(func() {
		select {
		case <-exited:
			failed <- fmt.Errorf("the relay process exited: %v", waitErr)
		case <-fctx.Done():
		}
	})
	err = b.await(ctx, t, tr, failed)
	// Read before the shutdown: the peak and the CPU of the run itself.
	peakMB, cpu = processPeakRSSMB(cmd.Process.Pid), procCPU(cmd.Process.Pid)
	stopFollow()
	wg.Wait()
	select {
	case <-exited:
	default:
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
			if err == nil && waitErr != nil {
				err = fmt.Errorf("the relay process did not stop cleanly on SIGTERM: %w", waitErr)
			}
		case <-time.After(processStopTimeout):
			_ = cmd.Process.Kill()
			<-exited
			err = errors.Join(err, fmt.Errorf("the relay process did not stop within %s of SIGTERM", processStopTimeout))
		}
	}
	if auditor != nil && err == nil {
		// The relay's figures stand without the auditor's: a run the
		// auditor could not finish is a warning, not a failed bench.
		run, aerr := auditor.finish(ctx, t.n, tr.doneAt())
		if aerr != nil {
			progress("WARNING: %s run %d: %v", t.c.name, t.run, aerr)
			return peakMB, cpu, nil, ctx.Err()
		}
		aud = &run
		progress("  %-13s the live auditor judged %d records (lost %d, duplicated %d) %.1f s after the relay's last acknowledgement: %.2f CPU-seconds per 1M records, peak RSS %.0f MB",
			t.c.name, run.Judged, run.Lost, run.Duplicated, run.CatchUpSeconds, run.CPUSecondsPerMillion, run.PeakRSSMB)
	}
	return peakMB, cpu, aud, err
}

// followEndpoint feeds the relay process's records polled and records
// accepted, read from its /metrics (scrapeInterval apart), into tr until
// ctx ends.
func followEndpoint(ctx context.Context, url string, tr *tracker) {
	hc := &http.Client{Timeout: time.Second}
	every := func(accepted int64) time.Duration { return scrapeInterval(tr.want, accepted, tr.sinceFirst()) }
	follow(ctx, every, tr, func() (int64, int64, bool) {
		p, a, err := scrapeProgress(ctx, hc, url)
		return p, a, err == nil // not listening yet
	})
}

// Bounds of the wait between two scrapes of a relay process's metrics.
const (
	fastScrape = 20 * time.Millisecond
	slowScrape = 250 * time.Millisecond
)

// scrapeInterval is the wait before the next scrape of a relay process's
// metrics, want records to accept, accepted so far, the first polled
// sinceFirst ago (0: none yet). Each end of the timed span is only as
// exact as the wait, so it is short until records flow and as the last
// one nears (an eighth of the time left at the rate so far); in between,
// and once every record is accepted, it is long, as a scrape (the whole
// registry, Go and process collectors included) costs the relay process
// CPU that its µs/rec CPU would count.
func scrapeInterval(want, accepted int64, sinceFirst time.Duration) time.Duration {
	switch {
	case accepted >= want:
		return slowScrape
	case accepted <= 0 || sinceFirst <= 0:
		return fastScrape
	}
	left := time.Duration(float64(sinceFirst) * float64(want-accepted) / float64(accepted))
	return min(max(left/8, fastScrape), slowScrape)
}

// scrapeProgress reads the sums of sharerelay_records_polled_total and of
// sharerelay_acks_total{type="accept"} from a relay's metrics endpoint.
func scrapeProgress(ctx context.Context, hc *http.Client, url string) (polled, accepted int64, err error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return 0, 0, err
	}
	resp, err := hc.Do(req)
	if err != nil {
		return 0, 0, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return 0, 0, fmt.Errorf("%s: %s", url, resp.Status)
	}
	accept := `type="` + metrics.AckAccept + `"`
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line := sc.Text()
		var sum *int64
		switch {
		case strings.HasPrefix(line, "sharerelay_records_polled_total{"):
			sum = &polled
		case strings.HasPrefix(line, "sharerelay_acks_total{") && strings.Contains(line, accept):
			sum = &accepted
		default:
			continue
		}
		v, err := strconv.ParseFloat(line[strings.LastIndexByte(line, ' ')+1:], 64)
		if err != nil {
			return 0, 0, fmt.Errorf("%s: %q: %w", url, line, err)
		}
		*sum += int64(v)
	}
	return polled, accepted, sc.Err()
}
