package registrytest

import "syscall"

// sysProcAttr puts the JVM in its own process group, so signals reach it
// alone, and has the kernel SIGKILL it when the Go process that started
// it dies (strictly, when the OS thread that forked it exits; the Go
// runtime only retires threads of goroutines that exit while locked to
// them).
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
