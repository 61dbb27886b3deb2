package chaos

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/sharerelay/sharerelay/audit"
	"github.com/sharerelay/sharerelay/integration/harness"
	"github.com/sharerelay/sharerelay/integration/kafkatest"
)

// auditCatchUp bounds the wait, once the verifier has given its verdict,
// for the live auditor to have judged every source record: a few fences
// and the reading of what the relays wrote last, with room for an
// auditor that a late broker bounce made reconnect.
const auditCatchUp = 2 * time.Minute

// auditor is the live auditor (`relay audit`) beside a scenario's relays:
// one process on the harness's direct listeners (the auditor does not go
// through the relays' proxies, so the network faults do not reach it; the
// brokers' bounces and the cluster's node faults do). Like a relay, it is
// restarted when it exits on its own; it then resumes from its checkpoint,
// its counters continuing where the checkpoint left them.
type auditor struct {
	s    *scenario
	addr string

	mu      sync.Mutex
	cur     *harness.Proc
	n       int  // processes started
	exits   int  // exits on its own
	gone    bool // stopped for good: no more restarts
	supDone chan struct{}
}

// startAuditor starts the live auditor on the scenario's pipeline file,
// with the direct listener as its brokers.
func (s *scenario) startAuditor() {
	s.t.Helper()
	port, err := kafkatest.FreePort()
	if err != nil {
		s.t.Fatal(err)
	}
	a := &auditor{s: s, addr: fmt.Sprintf("127.0.0.1:%d", port), supDone: make(chan struct{})}
	p, err := a.spawn()
	if err != nil {
		s.t.Fatalf("starting the live auditor: %v", err)
	}
	s.auditor = a
	go a.supervise(p)
}

// spawn starts an auditor process unless the auditor is gone.
func (a *auditor) spawn() (*harness.Proc, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.gone {
		return nil, errGone
	}
	a.n++
	c := harness.AuditCommand(relayBin, a.s.p.Path, a.addr)
	c.LogPath = filepath.Join(a.s.dir, fmt.Sprintf("audit.%d.log", a.n))
	// The file's brokers and metrics address are references each relay
	// fills in; the auditor gets the direct listeners (the source
	// cluster's too, in a cross-cluster scenario), and its --listen.
	c.Env = []string{"CHAOS_BROKERS=" + strings.Join(a.s.env.direct, ","), "CHAOS_SOURCE_BROKERS=" + strings.Join(a.s.src.direct, ","),
		"CHAOS_METRICS_ADDR=" + a.addr}
	p, err := harness.Start(c)
	if err != nil {
		return nil, err
	}
	a.cur = p
	return p, nil
}

// supervise restarts the auditor 1 s after it exits on its own, until it is
// stopped for good.
func (a *auditor) supervise(p *harness.Proc) {
	defer close(a.supDone)
	for {
		<-p.Done()
		a.mu.Lock()
		gone := a.gone
		if !gone {
			a.exits++
		}
		n := a.n
		a.mu.Unlock()
		if gone {
			return
		}
		a.s.t.Logf("live auditor #%d exited on its own with status %d; restarting it. Log tail:\n%s", n, p.ExitCode(), p.LogTail(2000))
		select {
		case <-time.After(time.Second):
		case <-a.s.stopCh:
		}
		var err error
		if p, err = a.spawn(); err != nil {
			if err != errGone {
				a.s.t.Errorf("restarting the live auditor: %v", err)
			}
			return
		}
	}
}

// stop ends the auditor with SIGTERM and returns its exit status (-1 when
// it had to be killed after 30 s, or was not running).
func (a *auditor) stop() int {
	a.mu.Lock()
	a.gone = true
	p := a.cur
	a.mu.Unlock()
	code := -1
	if p != nil && !p.Exited() {
		_ = p.Signal(syscall.SIGTERM) // nothing to do once it has exited
		var err error
		if code, err = p.Wait(30 * time.Second); err != nil {
			a.s.t.Logf("live auditor: %v; SIGKILL", err)
			p.Kill()
			code = -1
		}
	}
	<-a.supDone
	return code
}

// kill is teardown after a failure.
func (a *auditor) kill() {
	a.mu.Lock()
	a.gone = true
	p := a.cur
	a.mu.Unlock()
	if p != nil {
		if a.s.t.Failed() {
			a.s.t.Logf("---- live auditor (%s) log tail ----\n%s", p.LogPath(), p.LogTail(8000))
		}
		p.Kill()
	}
	<-a.supDone
}

// judge waits until the auditor has judged every source record the
// verifier counted (its lag 0), stops it, records its counters in the
// report, and returns how they differ from the verifier's verdict: the
// auditor must reach, live and through the same faults, the verdict
// `relay verify` reached after the fact.
func (a *auditor) judge(rep *audit.Report) []string {
	s := a.s
	start := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), auditCatchUp)
	c, err := harness.WaitAudit(ctx, a.addr, func(c harness.AuditCounters) bool {
		return c.LagRecords == 0 && c.Judged >= int64(rep.Total.Sources)
	})
	cancel()
	caughtUp := time.Since(start).Round(100 * time.Millisecond)
	code := a.stop()
	a.mu.Lock()
	exits, processes := a.exits, a.n
	a.mu.Unlock()
	s.count(func(r *result) {
		r.Audit = &auditResult{Judged: c.Judged, Lost: c.Lost, Duplicated: c.Duplicated, Incomplete: c.Incomplete,
			Unexpected: c.Unexpected, DeadLettered: c.DeadLettered, Filtered: c.Filtered, Lag: c.LagRecords,
			Exits: exits, CaughtUp: caughtUp.String()}
	})
	s.t.Logf("live auditor: %v, %d process(es), caught up %s after the verdict", c, processes, caughtUp)
	var problems []string
	if err != nil {
		problems = append(problems, fmt.Sprintf("live auditor: not caught up within %s of the verdict: %v", auditCatchUp, err))
	}
	if code != 0 {
		problems = append(problems, fmt.Sprintf("live auditor: exit status %d after SIGTERM, want 0", code))
	}
	tot := rep.Total
	for _, d := range []struct {
		what      string
		got, want int64
	}{
		{"judged", c.Judged, int64(tot.Sources)},
		{"lost", c.Lost, int64(tot.Lost)},
		{"duplicated", c.Duplicated, int64(tot.Duplicated)},
		{"incomplete", c.Incomplete, int64(tot.Incomplete)},
		{"unexpected", c.Unexpected, int64(tot.Unexpected)},
		{"dead-lettered", c.DeadLettered, int64(tot.DeadLettered)},
		{"filtered", c.Filtered, int64(tot.Filtered)},
	} {
		if d.got != d.want {
			problems = append(problems, fmt.Sprintf("live auditor: %s %d, relay verify %d", d.what, d.got, d.want))
		}
	}
	return problems
}

// auditResult is the live auditor's part of a scenario's report: its
// final counters, its exits on its own (each restarted from its
// checkpoint), and how long after the verifier's verdict it had judged
// every record.
type auditResult struct {
	Judged       int64  `json:"judged"`
	Lost         int64  `json:"lost"`
	Duplicated   int64  `json:"duplicated"`
	Incomplete   int64  `json:"incomplete"`
	Unexpected   int64  `json:"unexpected"`
	DeadLettered int64  `json:"dead_lettered"`
	Filtered     int64  `json:"filtered"`
	Lag          int64  `json:"lag"`
	Exits        int    `json:"exits_on_its_own"`
	CaughtUp     string `json:"caught_up_after_verdict"`
}

// String is the auditor's part of the report line: " audit=[…]", or ""
// when the scenario ran no auditor.
func (a *auditResult) String() string {
	if a == nil {
		return ""
	}
	exits := ""
	if a.Exits > 0 {
		exits = fmt.Sprintf(" exits %d", a.Exits)
	}
	return fmt.Sprintf(" audit=[judged %d lost %d dup %d lag %d%s]", a.Judged, a.Lost, a.Duplicated, a.Lag, exits)
}
