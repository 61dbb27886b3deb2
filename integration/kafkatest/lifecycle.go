package kafkatest

import (
	"context"
	"fmt"
	"syscall"
)

// Stop sends SIGTERM for a clean shutdown, waits up to 20s, then sends
// SIGKILL and waits for the process to exit. It is a no-op when the broker
// is not running.
func (b *Broker) Stop() error {
	// A paused JVM keeps the SIGTERM pending until it runs again: wake it.
	gone, err := b.proc.Terminate(true)
	if err != nil {
		return fmt.Errorf("stop broker %s: %w", b.Addr(), err)
	}
	if gone {
		return nil
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
	if err := b.proc.Kill(); err != nil {
		return fmt.Errorf("kill broker %s: %w", b.Addr(), err)
	}
	return nil
}

// Pause stops the JVM with SIGSTOP, like a node that hangs (a long GC
// pause, a frozen VM): its connections stay open and nothing answers.
// It is a no-op when the broker is not running.
func (b *Broker) Pause() error {
	if err := b.proc.Signal(syscall.SIGSTOP); err != nil {
		return fmt.Errorf("pause broker %s: %w", b.Addr(), err)
	}
	return nil
}

// Resume lets a paused JVM run again with SIGCONT. It is a no-op when the
// broker is not running or not paused.
func (b *Broker) Resume() error {
	if err := b.proc.Signal(syscall.SIGCONT); err != nil {
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
