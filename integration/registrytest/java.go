package registrytest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/sharerelay/sharerelay/integration/kafkatest"
)

// EnvJavaHome names, when set, the JDK the registry runs on, ahead of
// JAVA_HOME and the JVM folders. It must be Java 21 or newer: a wrong
// one fails the test rather than being passed over.
const EnvJavaHome = "SHARERELAY_REGISTRY_JAVA_HOME"

// MinJava is the oldest Java the registry runs on: its classes are
// version 65, and an older JVM stops with UnsupportedClassVersionError.
const MinJava = 21

// jvmDirs are the folders JDKs are installed in, each JDK a folder of
// its own (on macOS with the home under Contents/Home).
var jvmDirs = []string{"/usr/lib/jvm", "/usr/lib64/jvm", "/Library/Java/JavaVirtualMachines"}

// javaFinder looks for a JDK of at least MinJava; its fields are the
// environment, so that tests can give it another.
type javaFinder struct {
	getenv   func(string) string
	dirs     []string
	lookPath func(string) (string, error)
}

// foundJava is the java binary findJava chose, looked up once.
var foundJava = sync.OnceValues(func() (string, error) {
	return javaFinder{getenv: os.Getenv, dirs: jvmDirs, lookPath: exec.LookPath}.find()
})

// findJava returns the java binary of a JDK 21 or newer; see find.
func findJava() (string, error) { return foundJava() }

// find returns the java binary of the first JDK of at least MinJava:
// $SHARERELAY_REGISTRY_JAVA_HOME (which must be one), $JAVA_HOME, the
// newest in the JVM folders, then java on PATH. With none, the error
// wraps kafkatest.ErrToolMissing and says what was found.
func (f javaFinder) find() (string, error) {
	if home := f.getenv(EnvJavaHome); home != "" {
		v, err := homeVersion(home)
		if err != nil {
			return "", fmt.Errorf("%s=%s: %w", EnvJavaHome, home, err)
		}
		if v < MinJava {
			return "", fmt.Errorf("%s=%s is Java %d; Apicurio Registry %s needs Java %d or newer", EnvJavaHome, home, v, Version, MinJava)
		}
		return javaIn(home), nil
	}
	var seen []string
	if home := f.getenv("JAVA_HOME"); home != "" {
		v, err := homeVersion(home)
		switch {
		case err != nil:
			seen = append(seen, fmt.Sprintf("JAVA_HOME=%s (%v)", home, err))
		case v >= MinJava:
			return javaIn(home), nil
		default:
			seen = append(seen, fmt.Sprintf("JAVA_HOME=%s (Java %d)", home, v))
		}
	}
	best, bestV := "", 0
	for _, home := range f.installed() {
		v, err := homeVersion(home)
		if err != nil {
			continue
		}
		if v > bestV {
			best, bestV = home, v
		}
		if v < MinJava {
			seen = append(seen, fmt.Sprintf("%s (Java %d)", home, v))
		}
	}
	if bestV >= MinJava {
		return javaIn(best), nil
	}
	if p, err := f.lookPath("java"); err == nil {
		v, err := binVersion(p)
		switch {
		case err != nil:
			seen = append(seen, fmt.Sprintf("%s on PATH (%v)", p, err))
		case v >= MinJava:
			return p, nil
		default:
			seen = append(seen, fmt.Sprintf("%s on PATH (Java %d)", p, v))
		}
	}
	found := "none"
	if len(seen) > 0 {
		found = strings.Join(seen, ", ")
	}
	return "", fmt.Errorf("%w: Apicurio Registry %s needs Java %d or newer; found %s: install a JDK %d+ or set %s to one",
		kafkatest.ErrToolMissing, Version, MinJava, found, MinJava, EnvJavaHome)
}

// installed lists the JDK homes in the JVM folders, in name order.
func (f javaFinder) installed() []string {
	var homes []string
	for _, dir := range f.dirs {
		entries, err := os.ReadDir(dir)
		if err != nil {
			continue
		}
		for _, e := range entries {
			for _, home := range []string{filepath.Join(dir, e.Name()), filepath.Join(dir, e.Name(), "Contents", "Home")} {
				if fi, err := os.Stat(javaIn(home)); err == nil && !fi.IsDir() {
					homes = append(homes, home)
				}
			}
		}
	}
	return homes
}

// javaIn is the java binary of the JDK at home.
func javaIn(home string) string { return filepath.Join(home, "bin", "java") }

// releaseVersion matches the JAVA_VERSION line of a JDK's release file.
var releaseVersion = regexp.MustCompile(`(?m)^JAVA_VERSION="([^"]+)"`)

// homeVersion returns the major Java version of the JDK at home, from
// its release file, or by running its java when it has none.
func homeVersion(home string) (int, error) {
	java := javaIn(home)
	if fi, err := os.Stat(java); err != nil || fi.IsDir() {
		return 0, fmt.Errorf("no %s", java)
	}
	if b, err := os.ReadFile(filepath.Join(home, "release")); err == nil {
		if m := releaseVersion.FindSubmatch(b); m != nil {
			return majorVersion(string(m[1]))
		}
	}
	return runVersion(java)
}

// binVersion returns the major version of a java binary: that of the JDK
// it belongs to, through symbolic links (/usr/bin/java).
func binVersion(java string) (int, error) {
	if real, err := filepath.EvalSymlinks(java); err == nil {
		if v, err := homeVersion(filepath.Dir(filepath.Dir(real))); err == nil {
			return v, nil
		}
	}
	return runVersion(java)
}

// versionLine matches the first line of `java -version`:
// openjdk version "17.0.15" 2025-04-15.
var versionLine = regexp.MustCompile(`version "([^"]+)"`)

// runVersion runs java -version and returns the major version.
func runVersion(java string) (int, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, java, "-version").CombinedOutput()
	if err != nil {
		return 0, fmt.Errorf("%s -version: %w", java, err)
	}
	m := versionLine.FindSubmatch(out)
	if m == nil {
		return 0, fmt.Errorf("%s -version: no version in %q", java, bytes.TrimSpace(out))
	}
	return majorVersion(string(m[1]))
}

// majorVersion returns the major number of a Java version string:
// 25.0.3 → 25, 21 → 21, 1.8.0_402 → 8.
func majorVersion(s string) (int, error) {
	s = strings.TrimPrefix(s, "1.")
	end := strings.IndexFunc(s, func(r rune) bool { return r < '0' || r > '9' })
	if end == 0 {
		return 0, errors.New("java version " + strconv.Quote(s) + " has no major number")
	}
	if end > 0 {
		s = s[:end]
	}
	return strconv.Atoi(s)
}
