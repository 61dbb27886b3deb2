package main

import (
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"unicode"
)

// problem is one broken link.
type problem struct {
	file string // relative to the root, with forward slashes
	line int
	msg  string
}

func (p problem) String() string { return fmt.Sprintf("%s:%d: %s", p.file, p.line, p.msg) }

// link is one link of a page.
type link struct {
	line   int
	target string
}

// page is what a Markdown file offers and asks for.
type page struct {
	anchors map[string]bool
	links   []link
}

// pages returns the Markdown files checked under root: README.md and
// docs/**/*.md, relative to root.
func pages(root string) ([]string, error) {
	var files []string
	if _, err := os.Stat(filepath.Join(root, "README.md")); err == nil {
		files = append(files, "README.md")
	}
	docs := filepath.Join(root, "docs")
	err := filepath.WalkDir(docs, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() && strings.HasSuffix(d.Name(), ".md") {
			rel, err := filepath.Rel(root, path)
			if err != nil {
				return err
			}
			files = append(files, filepath.ToSlash(rel))
		}
		return nil
	})
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	return files, nil
}

// checkTree checks every page under root, and every docs path written in
// the files git tracks there that are not Markdown, and returns the broken
// ones, pages first, by file and line.
func checkTree(root string) ([]problem, error) {
	files, err := pages(root)
	if err != nil {
		return nil, err
	}
	code, err := codeFiles(root)
	if err != nil {
		return nil, err
	}
	c := &checker{root: root, parsed: map[string]*page{}}
	var out []problem
	for _, f := range files {
		ps, err := c.checkFile(f)
		if err != nil {
			return nil, err
		}
		out = append(out, ps...)
	}
	for _, f := range code {
		ps, err := c.checkCode(f)
		if err != nil {
			return nil, err
		}
		out = append(out, ps...)
	}
	return out, nil
}

// checker checks links, reading each target page once.
type checker struct {
	root   string
	parsed map[string]*page // by path relative to root
}

// load parses the page at rel (relative to root).
func (c *checker) load(rel string) (*page, error) {
	if p, ok := c.parsed[rel]; ok {
		return p, nil
	}
	data, err := os.ReadFile(filepath.Join(c.root, filepath.FromSlash(rel)))
	if err != nil {
		return nil, err
	}
	p := parse(string(data))
	c.parsed[rel] = p
	return p, nil
}

// checkFile checks the links of the page at rel.
func (c *checker) checkFile(rel string) ([]problem, error) {
	p, err := c.load(rel)
	if err != nil {
		return nil, err
	}
	var out []problem
	for _, l := range p.links {
		if msg := c.checkLink(rel, l.target); msg != "" {
			out = append(out, problem{file: rel, line: l.line, msg: msg})
		}
	}
	return out, nil
}

// external matches a link with a scheme (https:, mailto:) or a
// protocol-relative one (//host).
var external = regexp.MustCompile(`^([a-zA-Z][a-zA-Z0-9+.-]*:|//)`)

// checkLink returns why target, a link of the page from, is broken, ""
// when it is not.
func (c *checker) checkLink(from, target string) string {
	if external.MatchString(target) {
		return ""
	}
	path, frag, _ := strings.Cut(target, "#")
	path, err := url.PathUnescape(path)
	if err != nil {
		return fmt.Sprintf("link %q: %v", target, err)
	}
	dest := from
	if path != "" {
		if strings.HasPrefix(path, "/") {
			dest = filepath.ToSlash(filepath.Clean(strings.TrimPrefix(path, "/")))
		} else {
			dest = filepath.ToSlash(filepath.Join(filepath.Dir(from), path))
		}
		if dest == ".." || strings.HasPrefix(dest, "../") {
			return fmt.Sprintf("link %q points outside the repository", target)
		}
	}
	if msg := c.checkDest(dest, frag); msg != "" {
		return fmt.Sprintf("link %q: %s", target, msg)
	}
	return ""
}

// checkDest returns why dest (relative to root), with the fragment frag
// ("" for none), names no file or no anchor of it, "" when it names one.
func (c *checker) checkDest(dest, frag string) string {
	if _, err := os.Stat(filepath.Join(c.root, filepath.FromSlash(dest))); err != nil {
		return "no file " + dest
	}
	if frag == "" || !strings.HasSuffix(dest, ".md") {
		return "" // a line anchor of a source file (#L10) is GitHub's, not the file's
	}
	if f, err := url.PathUnescape(frag); err == nil {
		frag = f
	}
	p, err := c.load(dest)
	if err != nil {
		return err.Error()
	}
	if p.anchors[frag] {
		return ""
	}
	msg := fmt.Sprintf("no anchor #%s in %s", frag, dest)
	if near := nearest(frag, p.anchors); near != "" {
		msg += fmt.Sprintf(" (did you mean #%s?)", near)
	}
	return msg
}

// Patterns of the Markdown this tool reads.
var (
	fence     = regexp.MustCompile("^ {0,3}(`{3,}|~{3,})")
	atx       = regexp.MustCompile(`^ {0,3}(#{1,6})(?:[ \t]+(.*?))?(?:[ \t]+#+)?[ \t]*$`)
	htmlID    = regexp.MustCompile(`<[a-zA-Z][^>]*?\s(?:id|name)\s*=\s*["']([^"']+)["']`)
	inline    = regexp.MustCompile(`!?\[(?:[^\[\]]|\[[^\[\]]*\])*\]\(\s*(<[^>]*>|[^)\s]+)(?:\s+(?:"[^"]*"|'[^']*'))?\s*\)`)
	reference = regexp.MustCompile(`^ {0,3}\[[^\]]+\]:\s*(<[^>]*>|\S+)`)
	linkText  = regexp.MustCompile(`!?\[((?:[^\[\]]|\[[^\[\]]*\])*)\]\([^)]*\)`)
	htmlTag   = regexp.MustCompile(`<[^>]+>`)
)

// parse reads a page's anchors and links, skipping fenced code blocks
// and code spans.
func parse(md string) *page {
	p := &page{anchors: map[string]bool{}}
	seen := map[string]int{}
	open := "" // the fence of the code block we are in, "" outside one
	for i, line := range strings.Split(md, "\n") {
		n := i + 1
		if m := fence.FindStringSubmatch(line); m != nil {
			switch {
			case open == "":
				open = m[1]
				continue
			case m[1][0] == open[0] && len(m[1]) >= len(open) && strings.TrimSpace(line[len(m[0]):]) == "":
				open = ""
				continue
			}
		}
		if open != "" {
			continue
		}
		text := stripCode(line)
		for _, m := range htmlID.FindAllStringSubmatch(text, -1) {
			p.anchors[m[1]] = true
		}
		if m := atx.FindStringSubmatch(line); m != nil {
			s := slug(m[2])
			if k := seen[s]; k > 0 {
				p.anchors[s+"-"+strconv.Itoa(k)] = true
			} else {
				p.anchors[s] = true
			}
			seen[s]++
		}
		for _, m := range inline.FindAllStringSubmatch(text, -1) {
			p.links = append(p.links, link{line: n, target: strings.Trim(m[1], "<>")})
		}
		if m := reference.FindStringSubmatch(text); m != nil {
			p.links = append(p.links, link{line: n, target: strings.Trim(m[1], "<>")})
		}
	}
	return p
}

// stripCode replaces the code spans of a line by a placeholder, so that
// a link written as code is not read as one.
func stripCode(line string) string {
	var b strings.Builder
	for i := 0; i < len(line); {
		if line[i] != '`' {
			b.WriteByte(line[i])
			i++
			continue
		}
		run := 1
		for i+run < len(line) && line[i+run] == '`' {
			run++
		}
		ticks := line[i : i+run]
		end := strings.Index(line[i+run:], ticks)
		if end < 0 {
			b.WriteString(ticks) // no closing run: literal backticks
			i += run
			continue
		}
		b.WriteString("code")
		i += run + end + run
	}
	return b.String()
}

// slug is GitHub's anchor for a heading's text: the text as rendered
// (links as their text, code without its backticks, no HTML tags), lower
// case, with every character but letters, digits, marks, '_', '-' and
// spaces dropped, and each space a dash.
func slug(heading string) string {
	heading = linkText.ReplaceAllString(heading, "$1")
	heading = htmlTag.ReplaceAllString(heading, "")
	heading = strings.ReplaceAll(heading, "`", "")
	var b strings.Builder
	for _, r := range strings.ToLower(strings.TrimSpace(heading)) {
		switch {
		case unicode.IsLetter(r) || unicode.IsDigit(r) || unicode.IsMark(r) || r == '_' || r == '-':
			b.WriteRune(r)
		case r == ' ':
			b.WriteByte('-')
		}
	}
	return b.String()
}

// nearest returns the anchor closest to frag, "" when none is close.
func nearest(frag string, anchors map[string]bool) string {
	names := make([]string, 0, len(anchors))
	for a := range anchors {
		names = append(names, a)
	}
	sort.Strings(names) // ties go to the first in order, not to map order
	best, bestD := "", len(frag)/2+2
	for _, a := range names {
		if d := distance(frag, a); d < bestD {
			best, bestD = a, d
		}
	}
	return best
}

// distance is the Levenshtein distance between a and b.
func distance(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	prev := make([]int, len(rb)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(ra); i++ {
		cur := make([]int, len(rb)+1)
		cur[0] = i
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			cur[j] = slices.Min([]int{prev[j] + 1, cur[j-1] + 1, prev[j-1] + cost})
		}
		prev = cur
	}
	return prev[len(rb)]
}
