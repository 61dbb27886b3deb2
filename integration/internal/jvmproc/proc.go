package jvmproc

import (
	"errors"
	"fmt"
	"os/exec"
	"sync"
	"syscall"
	"time"
)

// StopGrace is how long [Proc.Terminate] waits after SIGTERM: long enough
// for a JVM's shutdown hooks (a broker's controlled shutdown, a
// registry's database close), after which the callers kill it.
const StopGrace = 20 * time.Second

// Proc is a server process started by [Proc.Start], and started again by
// the next Start once it has exited. The zero value is a process that is
// not running. Its methods are safe for concurrent use, but Start,
// Terminate and Kill are meant to be called from one goroutine at a time.
// A Proc must not be copied after first use.
type Proc struct {
	mu   sync.Mutex
	cmd  *exec.Cmd
	done chan struct{} // closed when cmd has exited
}

// Pid returns the process id, or 0 when the process is not running.
func (p *Proc) Pid() int {
	cmd, _ := p.current()
	if cmd == nil {
		return 0
	}
	return cmd.Process.Pid
}

// Terminate sends SIGTERM for a clean shutdown and waits up to
// [StopGrace] for the process to exit. With wake it sends SIGCONT right
// after: a process stopped with SIGSTOP keeps the SIGTERM pending until it
// runs again. It reports whether the process is gone, so that the caller
// can [Proc.Kill] it when it is not; it is true when the process was not
// running.
func (p *Proc) Terminate(wake bool) (gone bool, err error) {
	cmd, done := p.current()
	if cmd == nil {
		return true, nil
	}
	if err := signalGroup(cmd.Process.Pid, syscall.SIGTERM); err != nil {
		return false, err
	}
	if wake {
		if err := signalGroup(cmd.Process.Pid, syscall.SIGCONT); err != nil {
			return false, err
		}
	}
	select {
	case <-done:
		return true, nil
	case <-time.After(StopGrace):
		return false, nil
	}
}

// Kill sends SIGKILL, like kill -9, and waits for the process to exit. It
// is a no-op when the process is not running.
func (p *Proc) Kill() error {
	cmd, done := p.current()
	if cmd == nil {
		return nil
	}
	if err := signalGroup(cmd.Process.Pid, syscall.SIGKILL); err != nil {
		return err
	}
	<-done
	return nil
}

// Signal sends sig to the process's group without waiting, such as
// SIGSTOP to make it hang and SIGCONT to let it run again. It is a no-op
// when the process is not running.
func (p *Proc) Signal(sig syscall.Signal) error {
	cmd, _ := p.current()
	if cmd == nil {
		return nil
	}
	return signalGroup(cmd.Process.Pid, sig)
}

// current returns the running process and its exit channel, or nil.
func (p *Proc) current() (*exec.Cmd, chan struct{}) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd == nil || exited(p.done) {
		return nil, nil
	}
	return p.cmd, p.done
}

// exitStatus describes how the current process ended.
func (p *Proc) exitStatus() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd == nil || p.cmd.ProcessState == nil {
		return "unknown status"
	}
	return p.cmd.ProcessState.String()
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
