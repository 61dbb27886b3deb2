// Package caret draws the line of text an error is about with a caret
// under the column of the error, the way compilers show where a parse
// stopped.
package caret

import "strings"

// Under returns line, a newline, and a caret under column col (1-based,
// counted in runes) of line. A tab before the column is repeated in the
// caret's line, so that the caret lines up however wide the reader's
// tabs are. A column past the end of the line puts the caret just after
// it; a column below 1 puts it under the first character.
func Under(line string, col int) string {
	line = strings.TrimRight(line, "\r\n")
	var pad strings.Builder
	i := 1
	for _, r := range line {
		if i >= col {
			break
		}
		if r == '\t' {
			pad.WriteByte('\t')
		} else {
			pad.WriteByte(' ')
		}
		i++
	}
	return line + "\n" + pad.String() + "^"
}
