package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"syscall"
	"time"
)

// state is DIR/state.json, written by up and removed by down.
type state struct {
	Pid            int    `json:"pid"`
	Addr           string `json:"addr"`
	Port           int    `json:"port"`
	ControllerAddr string `json:"controller_addr"`
	Log            string `json:"log"`
}

// statePath returns DIR/state.json.
func statePath(dir string) string { return filepath.Join(dir, "state.json") }

// readState reads DIR/state.json; a missing file gives os.ErrNotExist.
func readState(dir string) (state, error) {
	var st state
	b, err := os.ReadFile(statePath(dir))
	if err != nil {
		return st, fmt.Errorf("read state: %w", err)
	}
	if err := json.Unmarshal(b, &st); err != nil {
		return st, fmt.Errorf("parse %s: %w", statePath(dir), err)
	}
	return st, nil
}

// writeState writes DIR/state.json atomically.
func writeState(dir string, st state) error {
	b, err := json.MarshalIndent(st, "", "  ")
	if err != nil {
		return fmt.Errorf("encode state: %w", err)
	}
	tmp := statePath(dir) + ".tmp"
	if err := os.WriteFile(tmp, append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("write state: %w", err)
	}
	if err := os.Rename(tmp, statePath(dir)); err != nil {
		return fmt.Errorf("write state: %w", err)
	}
	return nil
}

var listenersRE = regexp.MustCompile(`(?m)^listeners=PLAINTEXT://127\.0\.0\.1:(\d+),CONTROLLER://127\.0\.0\.1:(\d+)$`)

// previousPorts reads the ports of the last start from
// DIR/server.properties; zeros when there was none.
func previousPorts(dir string) (port, cport int) {
	b, err := os.ReadFile(filepath.Join(dir, "server.properties"))
	if err != nil {
		return 0, 0
	}
	m := listenersRE.FindSubmatch(b)
	if m == nil {
		return 0, 0
	}
	port, _ = strconv.Atoi(string(m[1]))
	cport, _ = strconv.Atoi(string(m[2]))
	return port, cport
}

// portOf returns the port of a host:port address, or 0.
func portOf(addr string) int {
	_, p, err := net.SplitHostPort(addr)
	if err != nil {
		return 0
	}
	n, _ := strconv.Atoi(p)
	return n
}

// brokerAlive reports whether pid is a live Kafka JVM. Where /proc exists
// its command line must mention kafka.Kafka, so a recycled pid is not
// mistaken for the broker.
func brokerAlive(pid int) bool {
	if pid <= 0 {
		return false
	}
	if err := syscall.Kill(pid, 0); err != nil && !errors.Is(err, syscall.EPERM) {
		return false
	}
	cmdline, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "cmdline"))
	if err != nil {
		return !dirExists("/proc/self") // no /proc: trust kill(pid, 0)
	}
	return bytes.Contains(cmdline, []byte("kafka.Kafka"))
}

// dirExists reports whether path is an existing directory.
func dirExists(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.IsDir()
}

// stopPid sends SIGTERM to the broker's process group, waits up to grace
// for it to exit, then sends SIGKILL and waits again.
func stopPid(pid int, grace time.Duration) error {
	for _, step := range []struct {
		sig  syscall.Signal
		wait time.Duration
	}{{syscall.SIGTERM, grace}, {syscall.SIGKILL, 10 * time.Second}} {
		if err := syscall.Kill(-pid, step.sig); err != nil && !errors.Is(err, syscall.ESRCH) {
			return fmt.Errorf("signal %v to pid %d: %w", step.sig, pid, err)
		}
		for deadline := time.Now().Add(step.wait); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
			if !brokerAlive(pid) {
				return nil
			}
		}
	}
	return fmt.Errorf("pid %d still alive after SIGKILL", pid)
}
