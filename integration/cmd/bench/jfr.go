package main

import (
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
)

// startBrokerRecording starts a Java Flight Recorder recording (the
// "profile" settings: CPU samples every 10 ms, allocations, locks) of the
// local broker's JVM pid into path, through the JDK's jcmd; the returned
// function stops it, which writes the file. Read it with `jfr print
// --events jdk.ExecutionSample` or JDK Mission Control. Without a local
// broker or jcmd it warns once and records nothing: a profile is a
// diagnostic, never a reason to fail a measurement.
func startBrokerRecording(pid int, path string) (stop func()) {
	if pid <= 0 {
		return func() {}
	}
	jcmd, err := exec.LookPath("jcmd")
	if err != nil {
		progress("warning: no jcmd on PATH: the broker is not profiled")
		return func() {}
	}
	name := strings.TrimSuffix(filepath.Base(path), ".jfr")
	p := strconv.Itoa(pid)
	if out, err := exec.Command(jcmd, p, "JFR.start", "name="+name, "settings=profile", "jdk.Compilation#threshold=0ms", "jdk.ExecutionSample#period=1ms", "filename="+path).CombinedOutput(); err != nil {
		progress("warning: starting the broker's flight recording: %v: %s", err, out)
		return func() {}
	}
	return func() {
		if out, err := exec.Command(jcmd, p, "JFR.stop", "name="+name).CombinedOutput(); err != nil {
			progress("warning: stopping the broker's flight recording: %v: %s", err, out)
		}
	}
}
