package jvmproc

import "syscall"

// sysProcAttr puts the process in its own process group (or session when
// detached) so signals reach it alone, and on Linux makes the kernel
// SIGKILL an attached process when the Go process that started it dies.
// (Strictly, when the OS thread that forked it exits; the Go runtime only
// retires threads of goroutines that exit while locked to them.)
func sysProcAttr(detached bool) *syscall.SysProcAttr {
	if detached {
		return &syscall.SysProcAttr{Setsid: true}
	}
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
