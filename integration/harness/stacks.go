package harness

import (
	"fmt"
	"os"
	"regexp"
	"sort"
	"strings"
	"syscall"
	"time"
)

// Stacks makes a Go process print its goroutines (SIGQUIT, which ends
// it) and returns those whose stack holds a frame matching match, each
// distinct stack once with the number of goroutines that share it — for
// a run that is stuck, where a log says what happened last and not where
// a goroutine waits. The process must not handle SIGQUIT itself.
func (p *Proc) Stacks(match string, wait time.Duration) (string, error) {
	before, _ := os.ReadFile(p.logPath)
	if err := p.Signal(syscall.SIGQUIT); err != nil {
		return "", err
	}
	if _, err := p.Wait(wait); err != nil {
		return "", err
	}
	b, err := os.ReadFile(p.logPath)
	if err != nil {
		return "", fmt.Errorf("reading the log of %s: %w", p.name, err)
	}
	if len(b) >= len(before) {
		b = b[len(before):]
	}
	return FilterStacks(string(b), match), nil
}

var goroutineHeader = regexp.MustCompile(`^goroutine \d+ [^[]*\[([^\]]*)\]:`)

// argsOrOffsets are what make two goroutines stopped at the same place
// print differently: arguments, frame offsets and addresses, the
// creator's goroutine, and minutes waited.
var argsOrOffsets = regexp.MustCompile(`(?m)\([^()]*\)$|\+0x[0-9a-f]+| fp=0x[0-9a-f]+ sp=0x[0-9a-f]+ pc=0x[0-9a-f]+| in goroutine \d+|, \d+ minutes`)

// FilterStacks takes a Go goroutine dump and keeps the goroutines whose
// stack holds a line containing match, grouping identical stacks.
func FilterStacks(dump, match string) string {
	type group struct {
		text  string
		count int
	}
	groups := map[string]*group{}
	for _, block := range strings.Split(dump, "\n\n") {
		block = strings.TrimSpace(block)
		lines := strings.Split(block, "\n")
		if len(lines) == 0 || !goroutineHeader.MatchString(lines[0]) || !strings.Contains(block, match) {
			continue
		}
		state := goroutineHeader.FindStringSubmatch(lines[0])[1]
		key := argsOrOffsets.ReplaceAllString("["+state+"]\n"+strings.Join(lines[1:], "\n"), "")
		if g, ok := groups[key]; ok {
			g.count++
			continue
		}
		groups[key] = &group{text: key, count: 1}
	}
	keys := make([]string, 0, len(groups))
	for k := range groups {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var out strings.Builder
	for _, k := range keys {
		g := groups[k]
		fmt.Fprintf(&out, "%d goroutine(s) %s\n\n", g.count, g.text)
	}
	return out.String()
}
