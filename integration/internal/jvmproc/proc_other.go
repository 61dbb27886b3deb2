//go:build unix && !linux

package jvmproc

import "syscall"

// sysProcAttr puts the process in its own process group (or session when
// detached) so signals reach it alone. Outside Linux an attached process
// is not killed automatically when the Go process dies: the harnesses
// stop it (the tests' TestMain, a test's cleanup).
func sysProcAttr(detached bool) *syscall.SysProcAttr {
	if detached {
		return &syscall.SysProcAttr{Setsid: true}
	}
	return &syscall.SysProcAttr{Setpgid: true}
}
