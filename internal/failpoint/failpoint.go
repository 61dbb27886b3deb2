// Package failpoint injects faults at named points of the relay, so tests can
// break a guarantee at an exact moment instead of hoping a sleep lands there.
//
// Failpoints are switched on by the environment variable SHARERELAY_FAILPOINTS
// (read once, at the first Hit) or by Enable in tests:
//
//	SHARERELAY_FAILPOINTS='after-commit-before-ack=kill@3;before-commit=sleep(20s)'
//
// Actions:
//
//	kill        SIGKILL this process (a crash: no deferred code runs)
//	sleep(D)    block for duration D (a stall, a GC pause, SIGSTOP-like)
//	error       make Hit return ErrInjected
//
// A suffix @N fires only on the N-th hit (1-based), @N+ on the N-th and
// later; without it the action fires on every hit. With no failpoint set,
// Hit costs one atomic load.
package failpoint

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// EnvVar is the environment variable that configures failpoints.
const EnvVar = "SHARERELAY_FAILPOINTS"

// Names of the failpoints compiled into the relay.
const (
	// BeforeCommit: outputs and claims are produced, EndTxn not sent.
	BeforeCommit = "before-commit"
	// AfterCommitBeforeAck: the transaction committed, the share
	// acknowledgements are not yet handed to the client.
	AfterCommitBeforeAck = "after-commit-before-ack"
	// EndTxnResponseLost: EndTxn was sent and answered, but the worker
	// behaves as if the answer were lost (an ambiguous commit).
	EndTxnResponseLost = "endtxn-response-lost"
	// BeforeDeadLetterCommit: a batch holding a dead letter is about to
	// commit.
	BeforeDeadLetterCommit = "before-dead-letter-commit"
	// ReplayBeforeCommit: a dead-letter replay's chunk (outputs and
	// claims) is produced, EndTxn not sent.
	ReplayBeforeCommit = "dlq-replay-before-commit"
	// ReplayAfterCommit: a dead-letter replay's chunk committed; the
	// replay has not read on.
	ReplayAfterCommit = "dlq-replay-after-commit"
	// SkipSpanCheck: with "error", a worker begins its transaction
	// without checking for one of its producer id left open by a lost
	// marker (tests show what the check prevents).
	SkipSpanCheck = "skip-span-check"
	// SkipEndSpanCheck: with "error", a worker ends its transaction
	// without checking whether it continued a span of its producer id
	// that a lost marker left open (tests show what the check prevents).
	SkipEndSpanCheck = "skip-end-span-check"
	// SkipRetiredCheck: with "error", the relay does not look for spans
	// left open by transactional ids this instance no longer uses
	// (tests show what the check reports).
	SkipRetiredCheck = "skip-retired-check"
	// AfterProduce: a transaction's outputs and claims are written, its
	// claim check not made yet.
	AfterProduce = "after-produce"
	// DuplicatePoll: with "error", a share consumer's poll hands each of
	// its records over twice, as one batch can hold two deliveries of a
	// record after a broker restart (tests show that it is written
	// once).
	DuplicatePoll = "duplicate-poll"
	// PollPart: with "error", a share consumer's poll takes only
	// batch.max_records of what its fetch acquired and leaves the rest
	// in the client's buffer, where no lock renewal reaches it, as the
	// relay once did with whole source batches (tests show the locks of
	// what waits expire).
	PollPart = "poll-part"
	// LostMarkerRepair: between the two steps of a lost marker's
	// repair (see relay/lostmarkers.go), where an abort discards an
	// earlier transaction's committed records with the span they share:
	// their copies are committed through the worker's other producer
	// and the abort is not made yet; or, when they could not be written
	// first (RestoreAside), the abort is made and they are not written
	// again yet. With "kill", a crash there (tests show the second
	// loses them, the first does not).
	LostMarkerRepair = "lost-marker-repair"
	// RestoreAside: with "error", the committed records a lost marker's
	// abort discards cannot be written again before the abort, as when
	// the worker's other producer fails, and are written after it.
	RestoreAside = "restore-aside"
	// ClaimWaitTimeout: with "error", a worker's claim check ends as if
	// an earlier claim of its records stayed unsettled past ClaimWait
	// (tests show the records are held, not released).
	ClaimWaitTimeout = "claim-wait-timeout"
	// ResizeAbrupt: with "error", a worker resizing its share consumers
	// (the fleet grew or shrank) replaces them at once, as a resize that
	// does not first write what they hold would: polls in flight cut
	// short, those handed over released (tests show what the drain
	// prevents).
	ResizeAbrupt = "resize-abrupt"
)

// ErrInjected is returned by Hit for the "error" action.
var ErrInjected = errors.New("failpoint: injected error")

type point struct {
	action string
	arg    time.Duration
	nth    int64
	orMore bool
	hits   atomic.Int64
}

var (
	mu      sync.Mutex
	points  map[string]*point
	loaded  sync.Once
	enabled atomic.Bool
)

func load() {
	loaded.Do(func() {
		if v := os.Getenv(EnvVar); v != "" {
			if err := set(v); err != nil {
				fmt.Fprintf(os.Stderr, "failpoint: ignoring %s: %v\n", EnvVar, err)
			}
		}
	})
}

// Enable replaces the active failpoints with spec (the EnvVar syntax).
func Enable(spec string) error {
	load()
	return set(spec)
}

// Disable turns every failpoint off.
func Disable() {
	load()
	mu.Lock()
	points = nil
	enabled.Store(false)
	mu.Unlock()
}

func set(spec string) error {
	ps := make(map[string]*point)
	for _, part := range strings.Split(spec, ";") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		name, act, ok := strings.Cut(part, "=")
		if !ok {
			return fmt.Errorf("%q: want name=action", part)
		}
		p := &point{}
		if a, n, ok := strings.Cut(act, "@"); ok {
			act = a
			if strings.HasSuffix(n, "+") {
				p.orMore = true
				n = strings.TrimSuffix(n, "+")
			}
			v, err := strconv.ParseInt(n, 10, 64)
			if err != nil || v < 1 {
				return fmt.Errorf("%q: bad hit number %q", part, n)
			}
			p.nth = v
		}
		switch {
		case act == "kill" || act == "error":
			p.action = act
		case strings.HasPrefix(act, "sleep(") && strings.HasSuffix(act, ")"):
			d, err := time.ParseDuration(act[len("sleep(") : len(act)-1])
			if err != nil {
				return fmt.Errorf("%q: %w", part, err)
			}
			p.action, p.arg = "sleep", d
		default:
			return fmt.Errorf("%q: unknown action %q", part, act)
		}
		ps[strings.TrimSpace(name)] = p
	}
	mu.Lock()
	points = ps
	enabled.Store(len(ps) > 0)
	mu.Unlock()
	return nil
}

// Hit runs the action of failpoint name, if it is enabled and due.
func Hit(name string) error {
	load()
	if !enabled.Load() {
		return nil
	}
	mu.Lock()
	p := points[name]
	mu.Unlock()
	if p == nil {
		return nil
	}
	n := p.hits.Add(1)
	if p.nth > 0 && (n < p.nth || (!p.orMore && n != p.nth)) {
		return nil
	}
	switch p.action {
	case "kill":
		fmt.Fprintf(os.Stderr, "failpoint %s: killing process %d\n", name, os.Getpid())
		_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
		select {} // never returns
	case "sleep":
		fmt.Fprintf(os.Stderr, "failpoint %s: sleeping %s\n", name, p.arg)
		time.Sleep(p.arg)
	case "error":
		return fmt.Errorf("%w at %s", ErrInjected, name)
	}
	return nil
}
