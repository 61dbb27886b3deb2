//go:build unix && !linux

package kafkatest

import "syscall"

// sysProcAttr puts the JVM in its own process group (or session when
// detached) so signals reach it alone. Outside Linux an attached JVM is not
// killed automatically when the Go process dies: call Stop.
func sysProcAttr(detached bool) *syscall.SysProcAttr {
	if detached {
		return &syscall.SysProcAttr{Setsid: true}
	}
	return &syscall.SysProcAttr{Setpgid: true}
}
