package main

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
)

// docsPath matches a path into docs/ ending in .md, with an optional
// anchor: what code writes when it sends a reader to a page.
var docsPath = regexp.MustCompile(`docs/[A-Za-z0-9_./-]*\.md(?:#[\pL\pN_-]+)?`)

// ignoreFile, on a line of its own as a // or # comment, keeps a file's
// docs paths from being checked: for test fixtures that name pages on
// purpose.
var ignoreFile = regexp.MustCompile(`(?m)^[ \t]*(?://|#)[ \t]*linkcheck:ignore-file\b`)

// codeFiles returns the files git tracks under root that are not
// Markdown, relative to root with forward slashes.
func codeFiles(root string) ([]string, error) {
	cmd := exec.Command("git", "ls-files", "-z", "--cached")
	cmd.Dir = root
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("listing the tracked files under %s: %w: %s", root, err, strings.TrimSpace(stderr.String()))
	}
	var files []string
	for _, f := range strings.Split(string(out), "\x00") {
		if f != "" && !strings.HasSuffix(f, ".md") {
			files = append(files, f)
		}
	}
	return files, nil
}

// checkCode checks every docs path written in the file at rel (relative
// to root). A binary file, a file deleted but still tracked, a submodule
// and a file that opts out (ignoreFile) have none.
func (c *checker) checkCode(rel string) ([]problem, error) {
	path := filepath.Join(c.root, filepath.FromSlash(rel))
	if st, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) || err == nil && st.IsDir() {
		return nil, nil
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	if bytes.IndexByte(data[:min(len(data), 8000)], 0) >= 0 || ignoreFile.Match(data) {
		return nil, nil
	}
	var out []problem
	for i, line := range strings.Split(string(data), "\n") {
		for _, m := range docsPath.FindAllStringIndex(line, -1) {
			if !boundary(line, m[0], m[1]) {
				continue
			}
			target := line[m[0]:m[1]]
			dest, frag, _ := strings.Cut(target, "#")
			if msg := c.checkDest(dest, frag); msg != "" {
				out = append(out, problem{file: rel, line: i + 1, msg: fmt.Sprintf("docs path %q: %s", target, msg)})
			}
		}
	}
	return out, nil
}

// boundary reports whether line[start:end] stands on its own as a path:
// not the tail of a longer name (mydocs/…) nor the head of one (….mdx).
// A slash before it is fine: ../docs/… and …/blob/main/docs/… name the
// repository's page.
func boundary(line string, start, end int) bool {
	if start > 0 && (nameByte(line[start-1]) || line[start-1] == '-' || line[start-1] == '.') {
		return false
	}
	return end == len(line) || !nameByte(line[end])
}

// nameByte reports whether b continues a name: an ASCII letter, a digit
// or an underscore.
func nameByte(b byte) bool {
	return b == '_' || 'a' <= b && b <= 'z' || 'A' <= b && b <= 'Z' || '0' <= b && b <= '9'
}
