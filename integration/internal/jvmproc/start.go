package jvmproc

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"time"
)

// ErrPortInUse marks a start that failed because a port was taken, as
// [Spec.PortInUse] read it in the log: the caller may pick other ports
// and start again.
var ErrPortInUse = errors.New("port already in use")

// Spec is one start of a server process: the command, where its output
// goes, and how to tell that it is ready.
type Spec struct {
	// Cmd is the command to run, with its Path, Args and Dir (named in
	// the error of a failed start). Start sets its Stdout, Stderr and
	// SysProcAttr.
	Cmd *exec.Cmd

	// Detached starts the process in a session of its own, so that it
	// outlives the Go process; otherwise it is in a process group of its
	// own and, on Linux, killed when the Go process dies.
	Detached bool

	// Log is the file that receives the process's stdout and stderr. It
	// is appended to, so that it keeps every start; only what this start
	// wrote is read for the ready line and the error's tail.
	Log string

	// Tag opens the banner lines written to the log around the start,
	// such as "kafkatest": "=== kafkatest: starting broker … ===".
	Tag string

	// Name and Addr name the server in the errors and the banners:
	// "broker" and "127.0.0.1:9092" give "start broker 127.0.0.1:9092".
	Name, Addr string

	// Note, when set, follows the address in parentheses in the starting
	// banner, such as the java binary chosen.
	Note string

	// Timeout bounds the wait for the server to be ready.
	Timeout time.Duration

	// ReadyLine must be in the log before the server is probed: a line
	// the server writes once it serves, so that an answer is not another
	// process's on the same port.
	ReadyLine string

	// FatalLines in the log mean the start has failed, although the JVM
	// may take a while to exit.
	FatalLines []string

	// Probe asks the server whether it is ready, every 100ms once
	// ReadyLine is in the log, until it returns nil; the last error is
	// named when the time is up. An error wrapped with [Permanent] ends
	// the wait at once. Its context ends with the wait.
	Probe func(context.Context) error

	// Awaited is what the error of a process that exits before it is
	// ready says it did not do: "was ready" (when empty) gives "broker
	// process exited before it was ready (exit status 1)".
	Awaited string

	// PortInUse, when set, reports whether the tail of the log of a
	// failed start shows a failed bind; the error then wraps
	// [ErrPortInUse].
	PortInUse func(tail string) bool
}

// Start starts s.Cmd and waits until it is ready: its log has s.ReadyLine
// and s.Probe answers, for at most s.Timeout or until ctx ends. It writes
// a banner line to the log before the start and, once the server is
// ready, another with the time taken. On failure the process is killed
// and the error ends with the tail of what this start wrote to the log:
//
//	start broker 127.0.0.1:9092 (dir /tmp/…): broker not ready after 1m30s (…)
//	--- broker log tail ---
//	…
//
// Start does not check that the process is not running: the caller does,
// with its own error.
func (p *Proc) Start(ctx context.Context, s Spec) error {
	logf, err := os.OpenFile(s.Log, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("start %s: open log: %w", s.Name, err)
	}
	defer logf.Close()
	fi, err := logf.Stat()
	if err != nil {
		return fmt.Errorf("start %s: stat log: %w", s.Name, err)
	}
	offset := fi.Size()
	began := time.Now()
	note := ""
	if s.Note != "" {
		note = " (" + s.Note + ")"
	}
	fmt.Fprintf(logf, "=== %s: starting %s %s%s at %s ===\n", s.Tag, s.Name, s.Addr, note, began.Format(time.RFC3339Nano))

	s.Cmd.Stdout, s.Cmd.Stderr = logf, logf // *os.File: no copying goroutine, survives our exit
	s.Cmd.SysProcAttr = sysProcAttr(s.Detached)
	done, err := p.run(s.Cmd)
	if err != nil {
		return fmt.Errorf("start %s: run java: %w", s.Name, err)
	}
	if err := p.waitReady(ctx, s, offset, done); err != nil {
		p.Kill()
		tail := logTail(s.Log, offset)
		if s.PortInUse != nil && s.PortInUse(tail) {
			err = fmt.Errorf("%w: %w", ErrPortInUse, err)
		}
		return fmt.Errorf("start %s %s (dir %s): %w\n--- %s log tail ---\n%s", s.Name, s.Addr, s.Cmd.Dir, err, s.Name, tail)
	}
	fmt.Fprintf(logf, "=== %s: %s %s ready after %s ===\n", s.Tag, s.Name, s.Addr, time.Since(began).Round(time.Millisecond))
	return nil
}

// run starts cmd and records it as the current process, with a goroutine
// that waits for its exit and then closes the returned channel.
func (p *Proc) run(cmd *exec.Cmd) (<-chan struct{}, error) {
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	done := make(chan struct{})
	go func() {
		cmd.Wait() // the exit status is read from cmd.ProcessState
		close(done)
	}()
	p.mu.Lock()
	p.cmd, p.done = cmd, done
	p.mu.Unlock()
	return done, nil
}

// waitReady waits until the log written since offset contains
// s.ReadyLine and s.Probe answers, failing early when the process exits
// or the log shows one of s.FatalLines.
func (p *Proc) waitReady(ctx context.Context, s Spec, offset int64, done <-chan struct{}) error {
	ctx, cancel := context.WithTimeout(ctx, s.Timeout)
	defer cancel()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	awaited := s.Awaited
	if awaited == "" {
		awaited = "was ready"
	}
	var (
		logged  bool
		lastErr error
	)
	for {
		select {
		case <-done:
			return fmt.Errorf("%s process exited before it %s (%s)", s.Name, awaited, p.exitStatus())
		case <-ctx.Done():
			if lastErr != nil {
				return fmt.Errorf("%s not ready after %s (last probe: %v): %w", s.Name, s.Timeout, lastErr, ctx.Err())
			}
			return fmt.Errorf("%s not ready after %s (no %q in the log): %w", s.Name, s.Timeout, s.ReadyLine, ctx.Err())
		case <-tick.C:
		}
		if !logged {
			log, err := readFrom(s.Log, offset, -1)
			if err != nil {
				return err
			}
			for _, l := range s.FatalLines {
				if bytes.Contains(log, []byte(l)) {
					return fmt.Errorf("%s failed to start (%q in the log)", s.Name, l)
				}
			}
			if logged = bytes.Contains(log, []byte(s.ReadyLine)); !logged {
				continue
			}
		}
		if lastErr = s.Probe(ctx); lastErr == nil {
			return nil
		}
		var perm permanent
		if errors.As(lastErr, &perm) {
			return perm.err
		}
	}
}

// Permanent wraps an error of [Spec.Probe] that probing again cannot
// mend (a client that cannot be made): the start fails with err at once.
func Permanent(err error) error { return permanent{err} }

// permanent is an error of Permanent.
type permanent struct{ err error }

func (p permanent) Error() string { return p.err.Error() }
func (p permanent) Unwrap() error { return p.err }
