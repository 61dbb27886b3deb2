package jvmproc

import (
	"os"
	"path/filepath"
	"runtime"
)

// FindInRepo returns the path of rel, a file of this repository such as
// "integration/kafka/pom.xml", looking for it in the working directory and
// each directory above it up to the repository root (the first with a
// go.mod), then the same way from this package's sources, for a test
// binary run from elsewhere. It reports false when neither finds it; the
// caller says what it was looking for.
func FindInRepo(rel string) (string, bool) {
	var starts []string
	if wd, err := os.Getwd(); err == nil {
		starts = append(starts, wd)
	}
	if _, file, _, ok := runtime.Caller(0); ok {
		starts = append(starts, filepath.Dir(file))
	}
	for _, dir := range starts {
		for {
			p := filepath.Join(dir, rel)
			if _, err := os.Stat(p); err == nil {
				return p, true
			}
			if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
				break // repo root reached without it
			}
			parent := filepath.Dir(dir)
			if parent == dir {
				break
			}
			dir = parent
		}
	}
	return "", false
}
