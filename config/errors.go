package config

import (
	"cmp"
	"slices"
	"strconv"
	"strings"
)

// Error is one problem in a pipeline file (or another file read with
// DecodeStrict). Line and Col are 1-based; they are 0 when unknown (a
// Pipeline built in Go has no position at all). Path is the YAML path of
// the offending value, such as "source.topics[0]"; it is empty for an
// error about the file as a whole.
type Error struct {
	File      string
	Line, Col int
	Path, Msg string
	// Snippet, when set, is shown under the message: the line of an
	// expression or of the file with a caret under the column of the
	// error (see package internal/caret).
	Snippet string
}

// Error formats e as "<file>:<line>:<col>: <path>: <message>", leaving out
// the parts that are unknown, followed by the lines of its Snippet, each
// indented by four spaces.
func (e Error) Error() string {
	var b strings.Builder
	if e.File != "" {
		b.WriteString(e.File)
		b.WriteString(":")
	}
	if e.Line > 0 {
		b.WriteString(strconv.Itoa(e.Line))
		b.WriteString(":")
		if e.Col > 0 {
			b.WriteString(strconv.Itoa(e.Col))
			b.WriteString(":")
		}
	}
	if b.Len() > 0 {
		b.WriteString(" ")
	}
	if e.Path != "" {
		b.WriteString(e.Path)
		b.WriteString(": ")
	}
	b.WriteString(e.Msg)
	if e.Snippet != "" {
		for _, ln := range strings.Split(e.Snippet, "\n") {
			b.WriteString("\n    ")
			b.WriteString(ln)
		}
	}
	return b.String()
}

// Errors is every problem found in one pipeline, in the order of their
// position in the file. Load, Parse and Pipeline.Validate return an Errors
// value (as an error) when there is at least one; use errors.As to get at
// the individual errors.
type Errors []Error

// Error joins the errors' texts with newlines, one error per line.
func (es Errors) Error() string {
	lines := make([]string, len(es))
	for i, e := range es {
		lines[i] = e.Error()
	}
	return strings.Join(lines, "\n")
}

// sort orders es by line, column, path and message, dropping exact
// duplicates, so that output is deterministic.
func (es Errors) sort() Errors {
	slices.SortStableFunc(es, func(a, b Error) int {
		return cmp.Or(
			cmp.Compare(a.Line, b.Line),
			cmp.Compare(a.Col, b.Col),
			cmp.Compare(a.Path, b.Path),
			cmp.Compare(a.Msg, b.Msg),
		)
	})
	return slices.Compact(es)
}

// Warning is a setting that works but weakens the pipeline — credentials
// sent in clear text, certificates not verified, a setting that is
// ignored. It is positioned like an Error; relay validate and relay run
// print it without failing.
type Warning Error

// String formats w as "<file>:<line>:<col>: warning: <path>: <message>".
func (w Warning) String() string {
	e := Error(w)
	e.Msg = "warning: " + e.Msg
	if e.Path != "" {
		e.Msg = "warning: " + e.Path + ": " + w.Msg
		e.Path = ""
	}
	return e.Error()
}

func errorsOf(ws []Warning) Errors {
	es := make(Errors, len(ws))
	for i, w := range ws {
		es[i] = Error(w)
	}
	return es
}

// warnings converts es back; nil when es is empty.
func warnings(es Errors) []Warning {
	if len(es) == 0 {
		return nil
	}
	ws := make([]Warning, len(es))
	for i, e := range es {
		ws[i] = Warning(e)
	}
	return ws
}
