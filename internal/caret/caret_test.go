package caret

import "testing"

func TestUnder(t *testing.T) {
	for _, tc := range []struct {
		name, line string
		col        int
		want       string
	}{
		{"the caret sits under the given column", `value.status = "paid"`, 14, "value.status = \"paid\"\n             ^"},
		{"the first column has no padding", "abc", 1, "abc\n^"},
		{"a column past the end puts the caret after the last character", "abc", 9, "abc\n   ^"},
		{"a column below one puts the caret under the first character", "abc", 0, "abc\n^"},
		{"tabs before the column are kept so the caret lines up", "\ta\tb", 4, "\ta\tb\n\t \t^"},
		{"columns count runes, not bytes", `“paid” x`, 8, "“paid” x\n       ^"},
		{"a trailing newline is not part of the line", "ab\r\n", 2, "ab\n ^"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Under(tc.line, tc.col); got != tc.want {
				t.Errorf("Under(%q, %d) =\n%s\nwant\n%s", tc.line, tc.col, got, tc.want)
			}
		})
	}
}
