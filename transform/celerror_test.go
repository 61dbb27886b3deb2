package transform_test

import (
	"testing"

	"github.com/sharerelay/sharerelay/transform"
)

// TestExpressionErrorsPointAtTheMistakeAndHintAtTheFix checks, for each
// usual mistake in an expression, the one error reported: the parser's
// message without its list of expected tokens, the hint, the line and
// column of the mistake, and the caret drawn under that column.
func TestExpressionErrorsPointAtTheMistakeAndHintAtTheFix(t *testing.T) {
	const operators = "CEL writes and, or and not as &&, || and !"
	for _, tc := range []struct {
		name, expr, msg string
		line, col       int
		snippet         string
	}{
		{
			name: "a single = is taken for ==, and the parser's second error is dropped",
			expr: `value.status = "paid"`,
			msg:  `Syntax error: token recognition error at: '= ' (did you mean "=="? CEL compares with ==; a single = is not an operator)`,
			line: 1, col: 14,
			snippet: "value.status = \"paid\"\n             ^",
		},
		{
			name: "=> is taken for >=",
			expr: `value.n => 2`,
			msg:  `Syntax error: token recognition error at: '=>' (did you mean ">="? "=>" is not an operator)`,
			line: 1, col: 9,
			snippet: "value.n => 2\n        ^",
		},
		{
			name: "a single & is taken for &&",
			expr: `value.a == 1 & value.b == 2`,
			msg:  `Syntax error: token recognition error at: '& ' (did you mean "&&"? CEL's logical operators are && and ||)`,
			line: 1, col: 14,
			snippet: "value.a == 1 & value.b == 2\n             ^",
		},
		{
			name: "and is taken for &&",
			expr: `value.a == 1 and value.b == 2`,
			msg:  `Syntax error: mismatched input 'and' expecting <EOF> (did you mean "&&"? ` + operators + `)`,
			line: 1, col: 14,
			snippet: "value.a == 1 and value.b == 2\n             ^",
		},
		{
			name: "OR in capitals is taken for ||",
			expr: `value.a == 1 OR value.b == 2`,
			msg:  `Syntax error: mismatched input 'OR' expecting <EOF> (did you mean "||"? ` + operators + `)`,
			line: 1, col: 14,
			snippet: "value.a == 1 OR value.b == 2\n             ^",
		},
		{
			name: "not before an operand is taken for !, with the caret under not",
			expr: `not has(value.x)`,
			msg:  `Syntax error: mismatched input 'has' expecting <EOF> (did you mean "!"? ` + operators + `)`,
			line: 1, col: 1,
			snippet: "not has(value.x)\n^",
		},
		{
			name: "not called like a function is taken for !",
			expr: `not(has(value.x))`,
			msg:  `undeclared reference to 'not' (did you mean "!"? ` + operators + `)`,
			line: 1, col: 4,
			snippet: "not(has(value.x))\n   ^",
		},
		{
			name: "a string never closed is reported at its opening quote",
			expr: `value.s == 'paid`,
			msg:  `Syntax error: token recognition error at: ''paid' (this string is never closed: add a ' at its end)`,
			line: 1, col: 12,
			snippet: "value.s == 'paid\n           ^",
		},
		{
			name: "a string closed by the other kind of quote is told that CEL takes either, but not mixed",
			expr: `value.s == "paid'`,
			msg:  `Syntax error: token recognition error at: '"paid'' (a string opened with " must be closed with ": CEL takes either kind of quotes, but not mixed)`,
			line: 1, col: 12,
			snippet: "value.s == \"paid'\n           ^",
		},
		{
			name: "a quote inside a string of the same quotes is shown to end it",
			expr: `value.s == 'it's'`,
			msg:  `Syntax error: extraneous input 's' expecting <EOF> (the ' before this ends the string: inside a string, write \', or quote the string with the other kind of quotes)`,
			line: 1, col: 16,
			snippet: "value.s == 'it's'\n               ^",
		},
		{
			name: "typographic quotes are named as such",
			expr: `value.s == “paid”`,
			msg:  `Syntax error: token recognition error at: '“' (“ is a typographic quote: CEL strings take straight quotes, ' or ")`,
			line: 1, col: 12,
			snippet: "value.s == “paid”\n           ^",
		},
		{
			name: "backticks are not quotes",
			expr: "value.s == `paid`",
			msg:  "Syntax error: mismatched input '`paid`' (CEL strings are quoted with ' or \", not backticks)",
			line: 1, col: 12,
			snippet: "value.s == `paid`\n           ^",
		},
		{
			name: "a backslash escape CEL does not know suggests a raw string",
			expr: `value.s.matches("^\d+$")`,
			msg:  `Syntax error: token recognition error at: '"^\d' (\d is not an escape CEL knows: write \\ for a backslash, or use a raw string, r"…")`,
			line: 1, col: 17,
			snippet: "value.s.matches(\"^\\d+$\")\n                ^",
		},
		{
			name: "a name close to no variable is suggested as a field of the value or as text",
			expr: `statsu == "paid"`,
			msg:  `undeclared reference to 'statsu' (the record's variables are value, value_bytes, key, key_bytes, headers, topic, partition, offset, delivery_count, timestamp; a field of the JSON value is value.statsu, and text is quoted, "statsu")`,
			line: 1, col: 1,
			snippet: "statsu == \"paid\"\n^",
		},
		{
			name: "an unquoted word compared with a field gets the same hint",
			expr: `value.status == paid`,
			msg:  `undeclared reference to 'paid' (the record's variables are value, value_bytes, key, key_bytes, headers, topic, partition, offset, delivery_count, timestamp; a field of the JSON value is value.paid, and text is quoted, "paid")`,
			line: 1, col: 17,
			snippet: "value.status == paid\n                ^",
		},
		{
			name: "a misspelt variable keeps CEL's own suggestion and nothing more",
			expr: `heders.region == "eu"`,
			msg:  `undeclared reference to 'heders' (did you mean 'headers'?)`,
			line: 1, col: 1,
			snippet: "heders.region == \"eu\"\n^",
		},
		{
			name: "a misspelt function keeps CEL's suggestion and gets no variable hint",
			expr: `value.s.startswith("a")`,
			msg:  `undeclared reference to 'startswith' (did you mean 'startsWith'?)`,
			line: 1, col: 19,
			snippet: "value.s.startswith(\"a\")\n                  ^",
		},
		{
			name: "an unknown method gets no variable hint",
			expr: `value.s.lenght() > 1`,
			msg:  `undeclared reference to 'lenght'`,
			line: 1, col: 15,
			snippet: "value.s.lenght() > 1\n              ^",
		},
		{
			name: "a bracket never closed is named with its column, and the caret is at the end",
			expr: `has(value.x) && (value.y == 1`,
			msg:  `Syntax error: missing ')' at '<EOF>' (the ( at column 17 is never closed)`,
			line: 1, col: 30,
			snippet: "has(value.x) && (value.y == 1\n                             ^",
		},
		{
			name: "a bracket that closes nothing is named",
			expr: `value.x == 1)`,
			msg:  `Syntax error: extraneous input ')' expecting <EOF> (this ) closes nothing)`,
			line: 1, col: 13,
			snippet: "value.x == 1)\n            ^",
		},
		{
			name: "an operator at the end wants a value, and the list of expected tokens is cut",
			expr: `value.x == 1 &&`,
			msg:  `Syntax error: mismatched input '<EOF>' (the expression ends where a value is expected)`,
			line: 1, col: 16,
			snippet: "value.x == 1 &&\n               ^",
		},
		{
			name: "two operands without an operator are told the first is complete",
			expr: `value.x == 1 value.y`,
			msg:  `Syntax error: mismatched input 'value' expecting <EOF> (the expression before this is complete: is an operator missing?)`,
			line: 1, col: 14,
			snippet: "value.x == 1 value.y\n             ^",
		},
		{
			name: "a mistake on the second line of an expression is shown on that line",
			expr: "value.a > 1 &&\n  value.b = 2",
			msg:  `Syntax error: token recognition error at: '= ' (did you mean "=="? CEL compares with ==; a single = is not an operator)`,
			line: 2, col: 11,
			snippet: "  value.b = 2\n          ^",
		},
		{
			name: "an expression of several lines ending early is reported after its last character, not on the blank line below",
			expr: "value.a +\n  size(value.b\n",
			msg:  `Syntax error: missing ')' at '<EOF>' (the ( at line 2, column 7 is never closed)`,
			line: 2, col: 15,
			snippet: "  size(value.b\n              ^",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			errs := transform.Spec{Type: "filter", When: &transform.Condition{Expr: tc.expr}}.Validate()
			if len(errs) != 1 {
				t.Fatalf("Validate: %d errors %+v, want 1", len(errs), errs)
			}
			got := errs[0]
			if got.Path != "when.expr" || got.Msg != tc.msg || got.Line != tc.line || got.Col != tc.col {
				t.Errorf("got  %s at %d:%d\nwant when.expr: %s at %d:%d", got, got.Line, got.Col, tc.msg, tc.line, tc.col)
			}
			if got.Snippet != tc.snippet {
				t.Errorf("snippet:\n%s\nwant:\n%s", got.Snippet, tc.snippet)
			}
		})
	}
}
