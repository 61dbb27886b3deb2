package config

import (
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"go.yaml.in/yaml/v3"

	"github.com/sharerelay/sharerelay/internal/caret"
)

// syntaxError turns a YAML parser error ("yaml: line 3: did not find
// expected key") into an Error at the line and column of the problem,
// with the file's line and a caret under the column, and a hint for the
// usual mistakes (see syntaxHint).
//
// The parser (go.yaml.in/yaml/v3) gives no column, and its line number is
// often that of the enclosing construct, or off by one. Both are found
// instead by parsing prefixes of the file (see failingLine and
// failingColumn). Files are small, so the quadratic cost is moot; past
// maxSyntaxProbeLines lines, or maxSyntaxProbeColumns characters in the
// line, the parser's line is kept and the column left out.
func (l *loader) syntaxError(data []byte, err error) Error {
	msg := strings.TrimPrefix(err.Error(), "yaml: ")
	line := 0
	if m := yamlLineRE.FindStringSubmatch(err.Error()); m != nil {
		line, _ = strconv.Atoi(m[1])
		msg = m[2]
	}
	e := Error{File: l.file, Line: line, Msg: "invalid YAML: " + msg}
	lines := strings.SplitAfter(string(data), "\n")
	if len(lines) > maxSyntaxProbeLines {
		return e
	}
	ln := failingLine(lines, msg)
	if ln == 0 {
		return e
	}
	e.Line = ln
	text := strings.TrimRight(lines[ln-1], "\r\n")
	if len([]rune(text)) > maxSyntaxProbeColumns {
		return e
	}
	e.Col = failingColumn(strings.Join(lines[:ln-1], ""), text, msg)
	e.Msg += syntaxHint(msg, text, e.Col)
	if shown, ok := maskSecrets(text, lines[:ln-1]); ok {
		e.Snippet = caret.Under(shown, e.Col)
	}
	return e
}

const (
	maxSyntaxProbeLines   = 2000
	maxSyntaxProbeColumns = 500
)

// yamlFailure returns the message with which YAML text fails to parse,
// without its line; "" when it parses.
func yamlFailure(text string) string {
	var n yaml.Node
	err := yaml.Unmarshal([]byte(text), &n)
	if err == nil {
		return ""
	}
	if m := yamlLineRE.FindStringSubmatch(err.Error()); m != nil {
		return m[2]
	}
	return strings.TrimPrefix(err.Error(), "yaml: ")
}

// failingLine returns the 1-based number of the first of lines (each
// with its newline) whose inclusion makes the text fail to parse with
// msg; 0 if none does.
func failingLine(lines []string, msg string) int {
	var prefix strings.Builder
	for i, ln := range lines {
		prefix.WriteString(ln)
		if yamlFailure(prefix.String()) == msg {
			return i + 1
		}
	}
	return 0
}

// failingColumn returns the column (1-based, in runes) of the problem in
// text, the first line at which the document fails with msg; before is
// the text of the lines above it. The column is one past the longest
// start of text with which the document does not fail with msg: where
// the parser, reading on, first meets what it cannot take. A prefix cut
// in the middle of a construct may fail with the same message as the
// whole (a flow list cut after an element lacks its ']' as much as one
// with a stray '{' does), so the column can fall at the start of the
// token the parser choked on rather than on the character itself —
// which is where the user has to look anyway.
func failingColumn(before, text, msg string) int {
	r := []rune(text)
	for k := len(r) - 1; k >= 0; k-- {
		if yamlFailure(before+string(r[:k])) != msg {
			return k + 1
		}
	}
	return 1
}

var (
	// secretKeys are the keys of the Secret fields, whose values a line
	// shown in an error must not show.
	secretKeys = func() []string {
		var keys []string
		var walk func(t reflect.Type)
		walk = func(t reflect.Type) {
			for _, f := range reflect.VisibleFields(t) {
				name, ok := yamlName(f)
				switch {
				case !ok:
				case f.Type == secretType:
					keys = append(keys, name)
				case f.Type.Kind() == reflect.Struct:
					walk(f.Type)
				}
			}
		}
		walk(reflect.TypeFor[Pipeline]())
		return keys
	}()
	// keyRE finds a key and its colon; its first group is the key.
	keyRE = regexp.MustCompile(`(?:^|[\s{,])([A-Za-z_][A-Za-z0-9_]*)\s*:(?:\s|$)`)
	// userInfoRE finds credentials in a URL or a broker address
	// (user:password@host); its first group is the password.
	userInfoRE = regexp.MustCompile(`[^\s:/@,\[\]{}"']+:([^\s@/,\[\]{}"']+)@`)
)

// maskSecrets returns line, the line of a file that failed to parse,
// after the lines above it, with every character of what may be a secret
// replaced by *, so that the caret under it still lines up: the value of
// a Secret field (password: …, to the end of the line) and the password
// of credentials in an address (alice:…@kafka). It returns false when the
// whole line may be secret: a line without a key, inside the value of a
// Secret field written over several lines.
func maskSecrets(line string, above []string) (string, bool) {
	r := []rune(line)
	star := func(from, to int) { // byte offsets into line
		from, to = utf8.RuneCountInString(line[:from]), utf8.RuneCountInString(line[:to])
		for i := from; i < to; i++ {
			if r[i] != ' ' && r[i] != '\t' {
				r[i] = '*'
			}
		}
	}
	for _, m := range userInfoRE.FindAllStringSubmatchIndex(line, -1) {
		star(m[2], m[3])
	}
	for _, m := range keyRE.FindAllStringSubmatchIndex(line, -1) {
		if slices.Contains(secretKeys, line[m[2]:m[3]]) {
			star(m[1], len(line))
			break
		}
	}
	if keyRE.MatchString(strings.TrimLeft(line, " -")) {
		return string(r), true
	}
	// A line without a key continues the value of the nearest key above
	// it that is indented less.
	indent := len(line) - len(strings.TrimLeft(line, " "))
	for i := len(above) - 1; i >= 0; i-- {
		a := strings.TrimRight(above[i], "\r\n")
		if strings.TrimSpace(a) == "" {
			continue
		}
		if len(a)-len(strings.TrimLeft(a, " ")) < indent {
			for _, m := range keyRE.FindAllStringSubmatchIndex(a, -1) {
				if slices.Contains(secretKeys, a[m[2]:m[3]]) {
					return "", false
				}
			}
			break
		}
	}
	return string(r), true
}

var envRefRE = regexp.MustCompile(`\$\{[^}]*\}?`)

// syntaxHint returns " (…)" with what usually causes the YAML error msg
// found at column col of the line text, or "" when it knows of nothing.
func syntaxHint(msg, text string, col int) string {
	r := []rune(text)
	at := func(i int) rune { // the rune at 1-based column i, or 0
		if i < 1 || i > len(r) {
			return 0
		}
		return r[i-1]
	}
	// before is the last non-blank rune before the column.
	var before rune
	for i := col - 1; i >= 1; i-- {
		if at(i) != ' ' && at(i) != '\t' {
			before = at(i)
			break
		}
	}
	inFlow := strings.HasPrefix(msg, "did not find expected ',' or ")
	switch {
	case inFlow && unquotedEnvRef(text) != "":
		return " (inside [ ] or { }, a ${VAR} reference must be quoted: write \"" + unquotedEnvRef(text) + "\")"
	case (inFlow || msg == "did not find expected key") && (strings.ContainsRune(`"'`, before) || strings.ContainsRune(`"'`, at(col))):
		return " (a quoted value ends at its closing quote: to use quotes inside a value, quote the whole value with the other kind of quotes, or write it as a block scalar after |)"
	case msg == "found unknown escape character":
		return ` (in double quotes, \ starts an escape: write \\ for a backslash, or use single quotes or a block scalar after | for a regular expression)`
	case msg == "mapping values are not allowed in this context" && strings.Contains(string(r[:max(col-1, 0)]), ": "):
		return ` (": " inside a value starts a mapping: quote the value, or write it as a block scalar after |)`
	case msg == "mapping values are not allowed in this context":
		return " (is this line indented deeper than the field above it?)"
	case (msg == "did not find expected key" || msg == "did not find expected '-' indicator") && before == 0:
		return " (is this line indented like the fields it belongs with?)"
	case strings.HasPrefix(msg, "found character that cannot start any token") && at(col) == '\t':
		return " (YAML indents with spaces, not tabs)"
	case strings.HasPrefix(msg, "found character that cannot start any token") && strings.ContainsRune("@`%", at(col)):
		return " (a value cannot start with " + string(at(col)) + ": quote it)"
	}
	return ""
}

// unquotedEnvRef returns the first ${VAR} reference in text that is not
// directly in quotes, or "".
func unquotedEnvRef(text string) string {
	for _, m := range envRefRE.FindAllStringIndex(text, -1) {
		if m[0] > 0 && (text[m[0]-1] == '"' || text[m[0]-1] == '\'') {
			continue
		}
		return text[m[0]:m[1]]
	}
	return ""
}
