package harness

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"syscall"
	"time"
)

// Command is a process to start.
type Command struct {
	// Name names the process in errors, e.g. "relay a".
	Name string
	// Path is the executable; Args its arguments (without the name).
	Path string
	Args []string
	// Env is added to the test process's own environment (a later entry
	// wins over an earlier one of the same variable).
	Env []string
	// LogPath is created (or truncated) and receives the process's
	// stdout and stderr. Required: a process whose output is lost cannot
	// be diagnosed.
	LogPath string
	// StdoutPath, when set, receives the process's stdout instead, so
	// that a report it prints there can be read apart from its logs.
	StdoutPath string
}

// Proc is a running (or exited) process started by Start. Its methods are
// safe for concurrent use.
type Proc struct {
	name    string
	logPath string
	cmd     *exec.Cmd
	done    chan struct{}
	err     error // cmd.Wait's result; set before done is closed
}

// Start starts c in its own process group, so that signals sent to the
// test (a Ctrl-C) do not reach it and signals sent to it reach it alone.
// The caller owns the process: it must end with its own exit, Kill, or a
// signal and Wait.
func Start(c Command) (*Proc, error) {
	if c.LogPath == "" {
		return nil, fmt.Errorf("starting %s: no log path", c.Name)
	}
	f, err := os.Create(c.LogPath)
	if err != nil {
		return nil, fmt.Errorf("starting %s: %w", c.Name, err)
	}
	cmd := exec.Command(c.Path, c.Args...)
	cmd.Env = append(os.Environ(), c.Env...)
	cmd.Stdout, cmd.Stderr = f, f
	var out *os.File
	if c.StdoutPath != "" {
		if out, err = os.Create(c.StdoutPath); err != nil {
			f.Close()
			return nil, fmt.Errorf("starting %s: %w", c.Name, err)
		}
		cmd.Stdout = out
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		f.Close()
		if out != nil {
			out.Close()
		}
		return nil, fmt.Errorf("starting %s: %w", c.Name, err)
	}
	p := &Proc{name: c.Name, logPath: c.LogPath, cmd: cmd, done: make(chan struct{})}
	// Owned by the process: it returns when the process exits.
	go func() {
		p.err = cmd.Wait()
		f.Close()
		if out != nil {
			out.Close()
		}
		close(p.done)
	}()
	return p, nil
}

// Name returns the Command's name.
func (p *Proc) Name() string { return p.name }

// LogPath returns the file that receives the process's output.
func (p *Proc) LogPath() string { return p.logPath }

// Pid returns the process id, to read the process's entries in /proc (its
// CPU time, its peak resident set size) while it runs.
func (p *Proc) Pid() int { return p.cmd.Process.Pid }

// Signal sends sig to the process. It fails once the process has exited
// (os.ErrProcessDone), never signalling another process that reused the
// pid.
func (p *Proc) Signal(sig syscall.Signal) error {
	if err := p.cmd.Process.Signal(sig); err != nil {
		return fmt.Errorf("signalling %s with %v: %w", p.name, sig, err)
	}
	return nil
}

// Kill ends the process with SIGKILL and returns once it has exited. It
// sends SIGCONT first, so that a process a test stopped with SIGSTOP is
// not left stopped should the kill be delayed. Killing an exited process
// does nothing.
func (p *Proc) Kill() {
	if p.Exited() {
		return
	}
	_ = p.cmd.Process.Signal(syscall.SIGCONT)
	_ = p.cmd.Process.Kill()
	<-p.done
}

// Done returns a channel closed when the process has exited, for callers
// that wait on it together with something else.
func (p *Proc) Done() <-chan struct{} { return p.done }

// Exited reports whether the process has exited.
func (p *Proc) Exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// Wait waits up to d for the process to exit and returns its exit code:
// the status it exited with, or 128+n when signal n killed it (as a shell
// reports it, so a SIGKILL is 137). The error says the process did not
// exit within d, or why its status is unknown.
func (p *Proc) Wait(d time.Duration) (int, error) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-p.done:
	case <-t.C:
		return -1, fmt.Errorf("%s did not exit within %s", p.name, d)
	}
	return p.status()
}

// ExitCode returns the exit code as Wait does once the process has
// exited, and -1 while it runs or when its status is unknown.
func (p *Proc) ExitCode() int {
	if !p.Exited() {
		return -1
	}
	code, _ := p.status()
	return code
}

// status decodes the result of cmd.Wait; the process has exited.
func (p *Proc) status() (int, error) {
	var ee *exec.ExitError
	if errors.As(p.err, &ee) {
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return 128 + int(ws.Signal()), nil
		}
		return ee.ExitCode(), nil
	}
	if p.err != nil {
		return -1, fmt.Errorf("%s: %w", p.name, p.err)
	}
	return 0, nil
}

// LogTail returns at most the last max bytes of the process's log, or ""
// when it cannot be read.
func (p *Proc) LogTail(max int) string {
	b, _ := os.ReadFile(p.logPath)
	if len(b) > max {
		b = b[len(b)-max:]
	}
	return string(b)
}
