package kafkatest

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"syscall"
	"time"
)

// stopGrace is how long Stop waits after SIGTERM before SIGKILL.
const stopGrace = 20 * time.Second

// Stop sends SIGTERM for a clean shutdown, waits up to 20s, then sends
// SIGKILL and waits for the process to exit. It is a no-op when the broker
// is not running.
func (b *Broker) Stop() error {
	cmd, done := b.current()
	if cmd == nil {
		return nil
	}
	if err := signalGroup(cmd.Process.Pid, syscall.SIGTERM); err != nil {
		return fmt.Errorf("stop broker %s: %w", b.Addr(), err)
	}
	// A paused JVM keeps the SIGTERM pending until it runs again.
	if err := signalGroup(cmd.Process.Pid, syscall.SIGCONT); err != nil {
		return fmt.Errorf("stop broker %s: %w", b.Addr(), err)
	}
	select {
	case <-done:
		return nil
	case <-time.After(stopGrace):
	}
	return b.Kill()
}

// Kill sends SIGKILL, like kill -9, and waits for the process to exit. It
// is a no-op when the broker is not running.
//
// Caveat of a single combined node: a transaction whose commit or abort
// markers were not yet written when the JVM died is never completed after
// Restart (read_committed readers stall on it). While the restarted node
// waits for its previous registration to expire, its partitions have no
// leader, and the transaction coordinator skips the markers as if the
// topics had been deleted. Wait until the last stable offset reaches the
// high watermark before Kill when a test needs the data afterwards.
func (b *Broker) Kill() error {
	cmd, done := b.current()
	if cmd == nil {
		return nil
	}
	if err := signalGroup(cmd.Process.Pid, syscall.SIGKILL); err != nil {
		return fmt.Errorf("kill broker %s: %w", b.Addr(), err)
	}
	<-done
	return nil
}

// Pause stops the JVM with SIGSTOP, like a node that hangs (a long GC
// pause, a frozen VM): its connections stay open and nothing answers.
// It is a no-op when the broker is not running.
func (b *Broker) Pause() error {
	cmd, _ := b.current()
	if cmd == nil {
		return nil
	}
	if err := signalGroup(cmd.Process.Pid, syscall.SIGSTOP); err != nil {
		return fmt.Errorf("pause broker %s: %w", b.Addr(), err)
	}
	return nil
}

// Resume lets a paused JVM run again with SIGCONT. It is a no-op when the
// broker is not running or not paused.
func (b *Broker) Resume() error {
	cmd, _ := b.current()
	if cmd == nil {
		return nil
	}
	if err := signalGroup(cmd.Process.Pid, syscall.SIGCONT); err != nil {
		return fmt.Errorf("resume broker %s: %w", b.Addr(), err)
	}
	return nil
}

// Restart stops the broker if it is running and starts it again on the
// same directory, data and ports.
func (b *Broker) Restart(ctx context.Context) error {
	if err := b.Stop(); err != nil {
		return fmt.Errorf("restart: %w", err)
	}
	if err := b.Start(ctx); err != nil {
		return fmt.Errorf("restart: %w", err)
	}
	return nil
}

// current returns the running process and its exit channel, or nil.
func (b *Broker) current() (*exec.Cmd, chan struct{}) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.cmd == nil || exited(b.done) {
		return nil, nil
	}
	return b.cmd, b.done
}

// exited reports whether done is closed.
func exited(done chan struct{}) bool {
	select {
	case <-done:
		return true
	default:
		return false
	}
}

// signalGroup signals the process group led by pid, or pid alone.
func signalGroup(pid int, sig syscall.Signal) error {
	err := syscall.Kill(-pid, sig)
	if errors.Is(err, syscall.ESRCH) {
		err = syscall.Kill(pid, sig)
	}
	if errors.Is(err, syscall.ESRCH) {
		return nil // already gone
	}
	if err != nil {
		return fmt.Errorf("signal %v to pid %d: %w", sig, pid, err)
	}
	return nil
}
