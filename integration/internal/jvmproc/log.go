package jvmproc

import (
	"fmt"
	"io"
	"os"
	"strings"
)

// logTail returns the last lines written to the file at path after
// offset: at most 60 lines of the last 16 KiB.
func logTail(path string, offset int64) string {
	const maxBytes, maxLines = 16 << 10, 60
	b, err := readFrom(path, offset, maxBytes)
	if err != nil {
		return fmt.Sprintf("(cannot read %s: %v)", path, err)
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > maxLines {
		lines = lines[len(lines)-maxLines:]
	}
	return strings.Join(lines, "\n")
}

// readFrom reads the file at path from offset, keeping at most the last
// max bytes when max >= 0.
func readFrom(path string, offset, max int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("open log: %w", err)
	}
	defer f.Close()
	if max >= 0 {
		if fi, err := f.Stat(); err == nil && fi.Size()-max > offset {
			offset = fi.Size() - max
		}
	}
	if _, err := f.Seek(offset, io.SeekStart); err != nil {
		return nil, fmt.Errorf("seek log: %w", err)
	}
	b, err := io.ReadAll(f)
	if err != nil {
		return nil, fmt.Errorf("read log: %w", err)
	}
	return b, nil
}
