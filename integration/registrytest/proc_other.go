//go:build unix && !linux

package registrytest

import "syscall"

// sysProcAttr puts the JVM in its own process group, so signals reach it
// alone. Outside Linux it is not killed automatically when the Go process
// dies: the tests' TestMain stops it.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}
