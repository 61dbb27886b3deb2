package harness

import (
	"fmt"
	"maps"
	"os"
	"regexp"
	"slices"
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
	counts := map[string]int{} // a normalised stack → its goroutines
	for _, block := range strings.Split(dump, "\n\n") {
		block = strings.TrimSpace(block)
		lines := strings.Split(block, "\n")
		if len(lines) == 0 || !goroutineHeader.MatchString(lines[0]) || !strings.Contains(block, match) {
			continue
		}
		state := goroutineHeader.FindStringSubmatch(lines[0])[1]
		counts[argsOrOffsets.ReplaceAllString("["+state+"]\n"+strings.Join(lines[1:], "\n"), "")]++
	}
	var out strings.Builder
	for _, stack := range slices.Sorted(maps.Keys(counts)) {
		fmt.Fprintf(&out, "%d goroutine(s) %s\n\n", counts[stack], stack)
	}
	return out.String()
}
