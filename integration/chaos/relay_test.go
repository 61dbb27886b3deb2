package chaos

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/sharerelay/sharerelay/integration/harness"
	"github.com/sharerelay/sharerelay/integration/kafkatest"
)

// relay is one relay slot: an instance name, a proxy, and the succession of
// processes (incarnations) that run under that name. A supervisor restarts
// the process whenever it exits, like systemd or Kubernetes would: after
// the delay the fault chose, or after 1 s when it exited on its own.
type relay struct {
	s    *scenario
	slot int
	name string

	mu        sync.Mutex
	cur       *incarnation
	incs      []*incarnation
	gone      bool          // stopped for good: no more restarts
	nextDelay time.Duration // restart delay after an exit the harness caused
	supDone   chan struct{}
}

// incarnation is one relay process.
type incarnation struct {
	*harness.Proc
	n           int
	metricsAddr string
	started     time.Time
	env         []string

	mu     sync.Mutex
	cause  string // why the harness ended it ("" = on its own)
	maxima map[string]float64
}

func (inc *incarnation) setCause(c string) {
	inc.mu.Lock()
	inc.cause = c
	inc.mu.Unlock()
}

func (inc *incarnation) getCause() string {
	inc.mu.Lock()
	defer inc.mu.Unlock()
	return inc.cause
}

// start launches the first incarnation and the supervisor.
func (r *relay) start() {
	r.mu.Lock() // a fleet's scale-in may read it (fleet_test.go)
	r.supDone = make(chan struct{})
	r.mu.Unlock()
	inc, err := r.spawn()
	if err != nil {
		r.s.t.Fatalf("starting relay %s: %v", r.name, err)
	}
	go r.supervise(inc)
}

// spawn starts a new incarnation unless the relay is gone.
func (r *relay) spawn() (*incarnation, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.gone {
		return nil, errGone
	}
	port, err := kafkatest.FreePort()
	if err != nil {
		return nil, err
	}
	n := len(r.incs) + 1
	inc := &incarnation{n: n, metricsAddr: fmt.Sprintf("127.0.0.1:%d", port), started: time.Now(), maxima: map[string]float64{}}
	c := harness.RelayCommand(relayBin, r.s.p.Path, r.name)
	c.LogPath = filepath.Join(r.s.dir, fmt.Sprintf("%s.%d.log", r.name, n))
	brokers := strings.Join(r.s.env.direct, ",")
	if !r.s.o.Direct {
		brokers = r.s.env.slots[r.slot]
	}
	c.Env = []string{"CHAOS_BROKERS=" + brokers, "CHAOS_METRICS_ADDR=" + inc.metricsAddr}
	if r.s.cross() {
		// The source cluster through this slot's own proxies to it.
		c.Env = append(c.Env, "CHAOS_SOURCE_BROKERS="+r.s.src.slots[r.slot])
	}
	if r.s.o.Env != nil {
		inc.env = r.s.o.Env(r.slot, n)
		c.Env = append(c.Env, inc.env...)
	}
	if inc.Proc, err = harness.Start(c); err != nil {
		return nil, err
	}
	r.cur = inc
	r.incs = append(r.incs, inc)
	return inc, nil
}

var errGone = errors.New("relay stopped for good")

// supervise restarts the relay whenever its process exits, until the relay
// is stopped for good.
func (r *relay) supervise(inc *incarnation) {
	defer close(r.supDone)
	for {
		<-inc.Done()
		r.mu.Lock()
		gone := r.gone
		delay := r.nextDelay
		r.nextDelay = 0
		r.mu.Unlock()
		if gone {
			return
		}
		cause := inc.getCause()
		if cause == "" {
			delay = time.Second
			code := inc.ExitCode()
			if fp := failpointKill(inc); fp != "" {
				r.s.count(func(res *result) { res.FailpointKills++ })
				r.s.t.Logf("relay %s#%d killed by failpoint %s (exit %d)", r.name, inc.n, fp, code)
			} else {
				r.s.count(func(res *result) { res.RelayExits++ })
				r.s.t.Logf("relay %s#%d exited on its own with status %d after %s; restarting. Log tail:\n%s",
					r.name, inc.n, code, time.Since(inc.started).Round(time.Millisecond), inc.LogTail(1500))
			}
		}
		select {
		case <-time.After(delay):
		case <-r.s.stopCh:
		}
		var err error
		inc, err = r.spawn()
		if errors.Is(err, errGone) {
			return
		}
		if err != nil {
			r.s.t.Errorf("restarting relay %s: %v", r.name, err)
			return
		}
	}
}

// current returns the running incarnation, or nil.
func (r *relay) current() *incarnation {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.cur == nil || r.cur.Exited() {
		return nil
	}
	return r.cur
}

// kill SIGKILLs the running incarnation and has it restarted after
// restart. It returns false when no process was running.
func (r *relay) kill(restart time.Duration) bool {
	inc := r.current()
	if inc == nil {
		return false
	}
	r.mu.Lock()
	r.nextDelay = restart
	r.mu.Unlock()
	inc.setCause("SIGKILL")
	inc.Kill()
	return true
}

// term sends SIGTERM and waits for a clean exit (status 0) for up to
// grace, then SIGKILLs. It returns the exit status, or -1 when nothing ran,
// and whether the process had logged anything (reached its main).
//
// fp names the relay's own failpoint when one killed it while it
// drained (a kill@ failpoint armed for a commit the drain makes).
func (r *relay) term(restart, grace time.Duration) (code int, took time.Duration, logged bool, fp string) {
	inc := r.current()
	if inc == nil {
		return -1, 0, false, ""
	}
	r.mu.Lock()
	r.nextDelay = restart
	r.mu.Unlock()
	inc.setCause("SIGTERM")
	start := time.Now()
	_ = inc.Signal(syscall.SIGTERM) // nothing to do once it has exited
	select {
	case <-inc.Done():
	case <-time.After(grace):
		inc.setCause("SIGTERM timeout, SIGKILL")
		inc.Kill()
	}
	return inc.ExitCode(), time.Since(start), inc.LogTail(1) != "", failpointKill(inc)
}

// stopForGood stops the relay with SIGTERM (SIGKILL after 60 s) and ends
// its supervisor.
func (r *relay) stopForGood() {
	r.mu.Lock()
	r.gone = true
	inc := r.cur
	r.mu.Unlock()
	if inc != nil && !inc.Exited() {
		inc.setCause("final SIGTERM")
		_ = inc.Signal(syscall.SIGCONT) // nothing to do once it has exited
		_ = inc.Signal(syscall.SIGTERM)
		select {
		case <-inc.Done():
			if c := inc.ExitCode(); c != 0 {
				r.s.t.Logf("relay %s#%d exited %d after the final SIGTERM", r.name, inc.n, c)
			}
		case <-time.After(60 * time.Second):
			r.s.t.Logf("relay %s#%d did not stop within 60 s of SIGTERM; SIGKILL", r.name, inc.n)
			inc.Kill()
		}
	}
	if r.supDone != nil {
		<-r.supDone
	}
}

// killForGood is teardown after a failure.
func (r *relay) killForGood() {
	r.mu.Lock()
	r.gone = true
	inc := r.cur
	r.mu.Unlock()
	if inc != nil && !inc.Exited() {
		inc.setCause("teardown")
		inc.Kill()
	}
	if r.supDone != nil {
		<-r.supDone
	}
}

func (r *relay) describe() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var b strings.Builder
	for _, inc := range r.incs {
		state := "running"
		if inc.Exited() {
			state = fmt.Sprintf("exit %d (%s)", inc.ExitCode(), inc.getCause())
		}
		fmt.Fprintf(&b, "#%d %s %v; ", inc.n, state, inc.env)
	}
	return b.String()
}

// logTail logs the end of every incarnation's log that ended on its own
// and of the last one.
func (r *relay) logTail(t *testing.T, max int) {
	r.mu.Lock()
	incs := append([]*incarnation{}, r.incs...)
	r.mu.Unlock()
	for i, inc := range incs {
		if i == len(incs)-1 || inc.getCause() == "" {
			t.Logf("---- relay %s#%d log (%s) tail ----\n%s", r.name, inc.n, inc.LogPath(), inc.LogTail(max))
		}
	}
}

// failpointKill returns the failpoint named in the log line the relay
// writes before a failpoint kills it, or "".
func failpointKill(inc *incarnation) string {
	b := []byte(inc.LogTail(4096))
	i := bytes.LastIndex(b, []byte("failpoint "))
	if i < 0 || !bytes.Contains(b[i:], []byte(": killing process")) {
		return ""
	}
	name, _, _ := strings.Cut(string(b[i+len("failpoint "):]), ":")
	return name
}

// scrapeLoop scrapes every running relay's /metrics every 500 ms.
func (s *scenario) scrapeLoop() {
	defer s.scrapeWG.Done()
	t := time.NewTicker(500 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-s.stopCh:
			return
		case <-t.C:
		}
		s.scrapeOnce()
	}
}

var scrapeClient = &http.Client{Timeout: 400 * time.Millisecond}

// readyz returns what the incarnation's /readyz answers: each paused
// worker with its reason, or why it cannot be asked.
func (inc *incarnation) readyz() string {
	resp, err := (&http.Client{Timeout: 2 * time.Second}).Get("http://" + inc.metricsAddr + "/readyz")
	if err != nil {
		return err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 8192))
	return fmt.Sprintf("%s %s", resp.Status, strings.TrimSpace(string(b)))
}

func (s *scenario) scrapeOnce() {
	for _, r := range s.relays {
		inc := r.current()
		if inc == nil {
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), 400*time.Millisecond)
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+inc.metricsAddr+"/metrics", nil)
		resp, err := scrapeClient.Do(req)
		if err != nil {
			cancel()
			continue
		}
		vals := parseMetrics(resp.Body)
		resp.Body.Close()
		cancel()
		inc.mu.Lock()
		for k, v := range vals {
			if v > inc.maxima[k] {
				inc.maxima[k] = v
			}
		}
		inc.mu.Unlock()
	}
}

// parseMetrics sums the sharerelay_* samples of the Prometheus text format
// by metric name and, for transactions and acks, outcome or type:
// "sharerelay_transactions_total/aborted".
func parseMetrics(r io.Reader) map[string]float64 {
	out := map[string]float64{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, "sharerelay_") {
			continue
		}
		sp := strings.LastIndexByte(line, ' ')
		if sp < 0 {
			continue
		}
		v, err := strconv.ParseFloat(line[sp+1:], 64)
		if err != nil {
			continue
		}
		head := line[:sp]
		name, labels, _ := strings.Cut(head, "{")
		key := name
		for _, l := range []string{`outcome="`, `type="`, `repair="`} {
			if i := strings.Index(labels, l); i >= 0 {
				rest := labels[i+len(l):]
				if j := strings.IndexByte(rest, '"'); j >= 0 {
					key += "/" + rest[:j]
				}
			}
		}
		out[key] += v
	}
	return out
}

// metricTotals sums, over every incarnation of every relay, the largest
// value each counter reached: counters restart at 0 with each process.
func (s *scenario) metricTotals() map[string]float64 {
	tot := map[string]float64{}
	for _, r := range s.relays {
		r.mu.Lock()
		incs := append([]*incarnation{}, r.incs...)
		r.mu.Unlock()
		for _, inc := range incs {
			inc.mu.Lock()
			for k, v := range inc.maxima {
				tot[k] += v
			}
			inc.mu.Unlock()
		}
	}
	return tot
}

func (s *scenario) collectMetrics() {
	m := s.metricTotals()
	res := s.res
	s.resMu.Lock()
	defer s.resMu.Unlock()
	res.Polled = int(m["sharerelay_records_polled_total"])
	res.Redeliveries = int(m["sharerelay_redeliveries_total"])
	res.Committed = int(m["sharerelay_transactions_total/committed"])
	res.Aborted = int(m["sharerelay_transactions_total/aborted"])
	res.Unknown = int(m["sharerelay_transactions_total/unknown"])
	res.AckErrors = int(m["sharerelay_ack_errors_total"])
	res.ClaimConflicts = int(m["sharerelay_claim_conflicts_total"])
	res.AlreadyCommitted = int(m["sharerelay_already_committed_total"])
	res.DeadLettersMetric = int(m["sharerelay_dead_letters_total"])
	res.InvariantBreaks = int(m["sharerelay_invariant_violations_total"])
	res.ProducerResets = int(m["sharerelay_producer_resets_total"])
	res.HeldHanging = int(m["sharerelay_hanging_transactions_total"])
	res.RecordsHeld = int(m["sharerelay_records_held_total"])
	res.RegistryRequests = int(m["sharerelay_schema_registry_requests_total"])
	for k, v := range m {
		if strings.HasPrefix(k, "sharerelay_lost_markers_total/") {
			res.LostMarkers += int(v)
		}
	}
	for _, r := range s.relays {
		r.mu.Lock()
		incs := append([]*incarnation{}, r.incs...)
		r.mu.Unlock()
		res.Incarnations += len(incs)
		// The relay counts an EndTxn whose answer was lost as
		// committed or aborted once the ledger resolved it, so the
		// ambiguous commits are counted from its logs.
		for _, inc := range incs {
			b, _ := os.ReadFile(inc.LogPath())
			for _, line := range bytes.Split(b, []byte("\n")) {
				if bytes.Contains(line, []byte(`msg="commit outcome unknown; resolved"`)) {
					res.Ambiguous++
					if bytes.Contains(line, []byte("committed=true")) {
						res.AmbiguousCommitted++
					}
				}
			}
		}
	}
}
