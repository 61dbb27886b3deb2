package pipetest

import (
	"fmt"
	"io"
)

// Report writes the results of suite s to w — each failing case with what
// became of its record and every difference, each passing case too when
// verbose — then a line counting them. It returns the number of failed
// cases.
//
//	FAIL a paid order becomes a packing job (tests/p.test.yaml:3)
//	     got 1 output
//	     outputs[0].value.status: want "packed", got "packing"
//	tests/p.test.yaml: 3 passed, 1 failed
func Report(w io.Writer, s *Suite, results []Result, verbose bool) (failed int) {
	for _, r := range results {
		if r.Passed() {
			if verbose {
				fmt.Fprintf(w, "ok   %s (%s:%d)\n", r.Case.Name, s.File, r.Case.Line)
			}
			continue
		}
		failed++
		fmt.Fprintf(w, "FAIL %s (%s:%d)\n", r.Case.Name, s.File, r.Case.Line)
		if r.SameOutcome {
			fmt.Fprintf(w, "     got %s\n", r.Got)
		}
		for _, d := range r.Diffs {
			fmt.Fprintf(w, "     %s\n", d)
		}
	}
	fmt.Fprintf(w, "%s: %d passed, %d failed\n", s.File, len(results)-failed, failed)
	return failed
}
