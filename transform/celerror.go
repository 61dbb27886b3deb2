package transform

import (
	"fmt"
	"regexp"
	"slices"
	"strings"

	"cel.dev/cel-go/common"

	"github.com/sharerelay/sharerelay/internal/caret"
	"github.com/sharerelay/sharerelay/internal/didyoumean"
)

// This file turns CEL's compile errors into what a user of a pipeline
// file can act on: the parser's message without its list of expected
// tokens, at the column of the mistake, with the expression's line and a
// caret under that column, and a hint for the usual mistakes — SQL's or
// Python's operators (=, and, or, not), strings quoted wrongly, a name
// that is not one of the record's variables.
//
// CEL accepts strings in single and in double quotes alike, so the quote
// style is never the mistake; what goes wrong is a string that is not
// closed, closed by the other kind of quote, cut short by a quote inside
// it, typographic quotes pasted from a document, backticks, or a
// backslash that CEL reads as an escape. (The quoting of the expression
// in YAML is the YAML loader's business: a syntax error there comes first
// and carries its own hint.)

// variables are the names an expression may use, for "did you mean".
var variables = []string{varValue, varValueBytes, varKey, varKeyBytes, varHeaders,
	varTopic, varPartition, varOffset, varDeliveryCount, varTimestamp}

// expectingRE matches the set of tokens ANTLR lists after "expecting"
// when there are several: noise to a reader, who gets a hint instead.
var expectingRE = regexp.MustCompile(` expecting \{.*\}$`)

// undeclaredRE matches a check error about a name CEL does not know;
// the first group is the name, the second CEL's own suggestion, if any.
var undeclaredRE = regexp.MustCompile(`^undeclared reference to '([^']*)'(?: \(in container '[^']*'\))?( \(did you mean '[^']*'\?\))?$`)

// celIssues turns the errors CEL reports for src into exprErrors. Of
// syntax errors only the first is kept: the parser's later ones are
// mostly its attempts to resynchronise after it, and mislead.
func celIssues(src string, errs []*common.Error) []exprError {
	x := newExprText(src)
	var out []exprError
	for _, e := range errs {
		syntax := strings.HasPrefix(e.Message, "Syntax error:")
		if syntax && len(out) > 0 {
			continue
		}
		ee := x.explain(e.Location.Line(), e.Location.Column(), e.Message)
		if syntax {
			return []exprError{ee}
		}
		out = append(out, ee)
	}
	return out
}

// exprText is an expression's text, scanned once for what the hints need:
// where its string literals are, and its lines.
type exprText struct {
	src   []rune
	lines []string
	// inString[i] is true for each rune of a string literal, its quotes
	// included; closing[i] for the quote that closes one.
	inString, closing []bool
}

// newExprText scans src for its string literals as CEL's lexer reads
// them: in single, double or triple quotes, escapes skipped but in a raw
// (r-prefixed) string; a string a line ends before its quote closes ends
// with the line.
func newExprText(src string) *exprText {
	x := &exprText{src: []rune(src), lines: strings.Split(src, "\n")}
	x.inString = make([]bool, len(x.src))
	x.closing = make([]bool, len(x.src))
	for i := 0; i < len(x.src); i++ {
		q := x.src[i]
		if q != '"' && q != '\'' {
			continue
		}
		triple := i+2 < len(x.src) && x.src[i+1] == q && x.src[i+2] == q
		raw := i > 0 && (x.src[i-1] == 'r' || x.src[i-1] == 'R')
		x.inString[i] = true
		j := i + 1
		if triple {
			x.inString[i+1], x.inString[i+2] = true, true
			j = i + 3
		}
		for ; j < len(x.src); j++ {
			x.inString[j] = true
			if x.src[j] == '\\' && !raw && j+1 < len(x.src) {
				j++
				x.inString[j] = true
				continue
			}
			if !triple && x.src[j] == '\n' {
				break // not closed on its line: CEL's error, not a string
			}
			if x.src[j] == q && (!triple || j+2 < len(x.src) && x.src[j+1] == q && x.src[j+2] == q) {
				if triple {
					x.inString[j+1], x.inString[j+2] = true, true
					j += 2
				}
				x.closing[j] = true
				break
			}
		}
		i = j
	}
	return x
}

// offset returns the index in src of line (1-based) and col (0-based),
// as CEL reports them; len(src) past the end.
func (x *exprText) offset(line, col int) int {
	off := 0
	for i := 0; i < line-1 && i < len(x.lines); i++ {
		off += len([]rune(x.lines[i])) + 1
	}
	return min(off+col, len(x.src))
}

// position returns the 1-based line and column of index off in src.
func (x *exprText) position(off int) (line, col int) {
	line, col = 1, 1
	for _, r := range x.src[:off] {
		if r == '\n' {
			line, col = line+1, 1
		} else {
			col++
		}
	}
	return line, col
}

// at returns the rune at index i, or 0 outside src.
func (x *exprText) at(i int) rune {
	if i < 0 || i >= len(x.src) {
		return 0
	}
	return x.src[i]
}

// wordAt returns the identifier starting at index i, if one does.
func (x *exprText) wordAt(i int) string {
	j := i
	for j < len(x.src) && isIdentRune(x.src[j], j == i) {
		j++
	}
	return string(x.src[i:j])
}

// wordBefore returns the identifier that ends, blanks aside, just before
// index i, and its start.
func (x *exprText) wordBefore(i int) (string, int) {
	j := i
	for j > 0 && (x.src[j-1] == ' ' || x.src[j-1] == '\t' || x.src[j-1] == '\n') {
		j--
	}
	end := j
	for j > 0 && isIdentRune(x.src[j-1], false) {
		j--
	}
	if j == end || !isIdentRune(x.src[j], true) || (j > 0 && x.src[j-1] == '.') {
		return "", 0
	}
	return string(x.src[j:end]), j
}

func isIdentRune(r rune, first bool) bool {
	return r == '_' || 'a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || !first && '0' <= r && r <= '9'
}

// lastContent returns the index just past the last non-blank rune.
func (x *exprText) lastContent() int {
	i := len(x.src)
	for i > 0 && strings.ContainsRune(" \t\r\n", x.src[i-1]) {
		i--
	}
	return i
}

// brackets looks at the brackets outside strings: unclosed is the index
// of the first one opened and never closed, stray that of the first
// closing one that closes nothing; -1 when there is none.
func (x *exprText) brackets() (unclosed, stray int) {
	var open []int
	stray = -1
	for i, r := range x.src {
		if x.inString[i] {
			continue
		}
		switch r {
		case '(', '[', '{':
			open = append(open, i)
		case ')', ']', '}':
			if len(open) == 0 {
				if stray < 0 {
					stray = i
				}
				continue
			}
			open = open[:len(open)-1]
		}
	}
	if len(open) == 0 {
		return -1, stray
	}
	return open[0], stray
}

// operators maps the words other languages use for CEL's logical
// operators.
var operators = map[string]string{"and": "&&", "or": "||", "not": "!"}

const operatorWords = "CEL writes and, or and not as &&, || and !"

// explain returns the error CEL reports with msg at line (1-based) and
// col (0-based) of the expression, as the user reads it.
func (x *exprText) explain(line, col int, msg string) exprError {
	off := x.offset(line, col)
	if end := x.lastContent(); off >= end {
		off = end // at the end: just after the last character, not on a blank line below
	}
	// A list of expected tokens that holds IDENTIFIER is the parser's way
	// of saying a value (an operand) was expected.
	wantsValue := strings.Contains(expectingRE.FindString(msg), "IDENTIFIER")
	msg = expectingRE.ReplaceAllString(msg, "")
	hint := ""
	if strings.HasPrefix(msg, "Syntax error:") {
		hint, off = x.syntaxHint(msg, off, wantsValue)
	} else if m := undeclaredRE.FindStringSubmatch(msg); m != nil && m[2] == "" {
		hint = x.undeclaredHint(m[1], off)
	}
	if hint != "" {
		msg += " (" + hint + ")"
	}
	l, c := x.position(off)
	return exprError{line: l, col: c, msg: msg, snippet: caret.Under(x.lines[l-1], c)}
}

// syntaxHint returns a hint for the syntax error msg at index off, and
// where the mistake is (off, or the start of the word at fault).
// wantsValue is true when the parser expected a value there.
func (x *exprText) syntaxHint(msg string, off int, wantsValue bool) (string, int) {
	r, next, prev := x.at(off), x.at(off+1), x.at(off-1)
	switch {
	case r == '=' && next == '>':
		return `did you mean ">="? "=>" is not an operator`, off
	case r == '=' && next != '=':
		return `did you mean "=="? CEL compares with ==; a single = is not an operator`, off
	case (r == '&' || r == '|') && next != r:
		return fmt.Sprintf("did you mean %q? CEL's logical operators are && and ||", string([]rune{r, r})), off
	case r == '\u201c' || r == '\u201d' || r == '\u2018' || r == '\u2019':
		return fmt.Sprintf(`%c is a typographic quote: CEL strings take straight quotes, ' or "`, r), off
	case r == '`':
		return `CEL strings are quoted with ' or ", not backticks`, off
	case (prev == '\'' || prev == '"') && off > 0 && x.closing[off-1] && isIdentRune(r, false):
		return fmt.Sprintf(`the %c before this ends the string: inside a string, write \%c, or quote the string with the other kind of quotes`, prev, prev), off
	case (r == '\'' || r == '"') && strings.Contains(msg, "token recognition error"):
		return x.quoteHint(off), off
	}
	if w := x.wordAt(off); operators[strings.ToLower(w)] != "" {
		return fmt.Sprintf("did you mean %q? %s", operators[strings.ToLower(w)], operatorWords), off
	}
	if w, start := x.wordBefore(off); strings.ToLower(w) == "not" {
		return fmt.Sprintf(`did you mean "!"? %s`, operatorWords), start
	}
	// The parser met the end of the text (atEnd), or text after what it
	// took for a whole expression (pastEnd).
	atEnd := strings.Contains(msg, "input '<EOF>'") || strings.Contains(msg, "at '<EOF>'")
	pastEnd := strings.HasSuffix(msg, "expecting <EOF>")
	unclosed, stray := x.brackets()
	switch {
	case atEnd && unclosed >= 0:
		l, c := x.position(unclosed)
		where := fmt.Sprintf("column %d", c)
		if len(x.lines) > 1 {
			where = fmt.Sprintf("line %d, column %d", l, c)
		}
		return fmt.Sprintf("the %c at %s is never closed", x.src[unclosed], where), off
	case stray == off:
		return fmt.Sprintf("this %c closes nothing", r), off
	case atEnd && wantsValue:
		return "the expression ends where a value is expected", off
	case atEnd:
		return "the expression ends before it is complete", off
	case pastEnd:
		return "the expression before this is complete: is an operator missing?", off
	case wantsValue:
		return "a value is missing here", off
	}
	return "", off
}

// quoteHint explains a string literal starting at index off that CEL
// could not read.
func (x *exprText) quoteHint(off int) string {
	q := x.src[off]
	other := '"'
	if q == '"' {
		other = '\''
	}
	rest := x.src[off+1:]
	if i := slices.Index(rest, '\n'); i >= 0 {
		rest = rest[:i]
	}
	for i, r := range rest {
		if r == '\\' && i+1 < len(rest) && !strings.ContainsRune(`abfnrtv\'"?`+"`xuU01234567", rest[i+1]) {
			return fmt.Sprintf(`\%c is not an escape CEL knows: write \\ for a backslash, or use a raw string, r%c…%c`, rest[i+1], q, q)
		}
	}
	if slices.Contains(rest, other) {
		return fmt.Sprintf("a string opened with %c must be closed with %c: CEL takes either kind of quotes, but not mixed", q, q)
	}
	return fmt.Sprintf("this string is never closed: add a %c at its end", q)
}

// undeclaredHint explains a name CEL does not know, at index off, for
// which CEL had no suggestion.
func (x *exprText) undeclaredHint(name string, off int) string {
	if op := operators[strings.ToLower(name)]; op != "" {
		return fmt.Sprintf("did you mean %q? %s", op, operatorWords)
	}
	if x.at(off) == '(' || x.at(off-1) == '.' {
		return "" // a function or a method: CEL suggests the close ones
	}
	if best, ok := didyoumean.Closest(name, variables); ok {
		return fmt.Sprintf("did you mean %q?", best)
	}
	return fmt.Sprintf("the record's variables are %s; a field of the JSON value is value.%s, and text is quoted, %q",
		strings.Join(variables, ", "), name, name)
}
