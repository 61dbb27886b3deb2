package main

import (
	"bufio"
	"fmt"
	"math"
	"os"
	"runtime/debug"
	"strconv"
	"strings"
)

// resetPeakRSS resets this process's peak resident set size (Linux: 5 to
// /proc/self/clear_refs), so peakRSSMB measures one contender run. The
// relay runs in this process; so do the other contenders' clients. The
// heap the previous run's read-back left is returned to the system first
// (a million records' tally would otherwise count as this run's peak).
func resetPeakRSS() {
	debug.FreeOSMemory()
	_ = os.WriteFile("/proc/self/clear_refs", []byte("5"), 0)
}

// peakRSSMB returns the peak resident set size since the last reset, in
// MB (VmHWM of /proc/self/status), or 0 where it cannot be read.
func peakRSSMB() float64 { return vmHWM("/proc/self/status") }

// processPeakRSSMB returns the peak resident set size of process pid, in
// MB, or 0 where it cannot be read.
func processPeakRSSMB(pid int) float64 { return vmHWM(fmt.Sprintf("/proc/%d/status", pid)) }

// vmHWM reads the VmHWM line of a /proc/<pid>/status file, in MB.
func vmHWM(path string) float64 {
	f, err := os.Open(path)
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		rest, ok := strings.CutPrefix(sc.Text(), "VmHWM:")
		if !ok {
			continue
		}
		kb, err := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 64)
		if err != nil {
			return 0
		}
		return kb / 1024
	}
	return 0
}

// memoryLimitMiB returns this process's soft memory limit in MiB, 0 when
// there is none.
func memoryLimitMiB() int {
	l := debug.SetMemoryLimit(-1)
	if l == math.MaxInt64 {
		return 0
	}
	return int(l >> 20)
}

// memoryLimitNote says this process's soft memory limit.
func memoryLimitNote() string {
	if l := memoryLimitMiB(); l > 0 {
		return strconv.Itoa(l) + " MiB"
	}
	return "none"
}
