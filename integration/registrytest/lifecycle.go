package registrytest

import (
	"errors"
	"fmt"
	"os/exec"
	"syscall"
	"time"
)

// stopGrace is how long Stop waits after SIGTERM before SIGKILL.
const stopGrace = 20 * time.Second

// Stop shuts the registry down cleanly (SIGTERM), waits up to 20s, then
// kills it (SIGKILL) and waits for the process to exit. It is a no-op
// when the registry is not running.
func (r *Registry) Stop() error {
	cmd, done := r.current()
	if cmd == nil {
		return nil
	}
	if err := signalGroup(cmd.Process.Pid, syscall.SIGTERM); err != nil {
		return fmt.Errorf("stop registry %s: %w", r.Addr(), err)
	}
	select {
	case <-done:
		return nil
	case <-time.After(stopGrace):
	}
	return r.Kill()
}

// Kill sends SIGKILL, like kill -9 or a crash of the machine's process,
// and waits for the process to exit. Every registration the registry
// acknowledged survives it. It is a no-op when the registry is not
// running.
func (r *Registry) Kill() error {
	cmd, done := r.current()
	if cmd == nil {
		return nil
	}
	if err := signalGroup(cmd.Process.Pid, syscall.SIGKILL); err != nil {
		return fmt.Errorf("kill registry %s: %w", r.Addr(), err)
	}
	<-done
	return nil
}

// current returns the running process and its exit channel, or nil.
func (r *Registry) current() (*exec.Cmd, chan struct{}) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.cmd == nil || exited(r.done) {
		return nil, nil
	}
	return r.cmd, r.done
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
