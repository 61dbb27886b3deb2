package config_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/sharerelay/sharerelay/config"
)

// TestSyntaxErrorsKeepTheirLineAndColumnAndHintAtTheUsualMistakes checks
// each YAML syntax error a pipeline file commonly has: where it is
// reported (the YAML library gives no column, so the loader finds it),
// the line shown with a caret, and the hint.
func TestSyntaxErrorsKeepTheirLineAndColumnAndHintAtTheUsualMistakes(t *testing.T) {
	for _, tc := range []struct {
		name, file, want string
	}{
		{
			name: "an unquoted ${VAR} in a flow list is reported at the reference, with the quoted form to write",
			file: "name: p\nbrokers: [${KAFKA_BOOTSTRAP_SERVERS:-127.0.0.1:9092}]\n",
			want: `p.yml:2:11: invalid YAML: did not find expected ',' or ']' (inside [ ] or { }, a ${VAR} reference must be quoted: write "${KAFKA_BOOTSTRAP_SERVERS:-127.0.0.1:9092}")
    brokers: [${KAFKA_BOOTSTRAP_SERVERS:-127.0.0.1:9092}]
              ^`,
		},
		{
			name: "the reference named is the unquoted one, not a quoted one before it",
			file: "source:\n  topics: [\"${A}\", ${B}]\n",
			want: `p.yml:2:20: invalid YAML: did not find expected ',' or ']' (inside [ ] or { }, a ${VAR} reference must be quoted: write "${B}")
      topics: ["${A}", ${B}]
                       ^`,
		},
		{
			name: "an unquoted ${VAR} in a flow mapping gets the same hint",
			file: "output: {topic: ${OUT}}\n",
			want: `p.yml:1:17: invalid YAML: did not find expected ',' or '}' (inside [ ] or { }, a ${VAR} reference must be quoted: write "${OUT}")
    output: {topic: ${OUT}}
                    ^`,
		},
		{
			name: "an expression starting with a quoted string is cut at the closing quote",
			file: "transforms:\n  - type: filter\n    when:\n      expr: \"paid\" == value.status\n",
			want: `p.yml:4:20: invalid YAML: did not find expected key (a quoted value ends at its closing quote: to use quotes inside a value, quote the whole value with the other kind of quotes, or write it as a block scalar after |)
          expr: "paid" == value.status
                       ^`,
		},
		{
			name: "quotes of the same kind inside a quoted value end it",
			file: "expr: 'value.s == 'paid''\n",
			want: `p.yml:1:20: invalid YAML: did not find expected key (a quoted value ends at its closing quote: to use quotes inside a value, quote the whole value with the other kind of quotes, or write it as a block scalar after |)
    expr: 'value.s == 'paid''
                       ^`,
		},
		{
			name: "a quoted string followed by more in a flow mapping gets the quoting hint",
			file: "when: {expr: \"a\" == value.b}\n",
			want: `p.yml:1:16: invalid YAML: did not find expected ',' or '}' (a quoted value ends at its closing quote: to use quotes inside a value, quote the whole value with the other kind of quotes, or write it as a block scalar after |)
    when: {expr: "a" == value.b}
                   ^`,
		},
		{
			name: "a backslash escape YAML does not know is reported at the backslash",
			file: "when:\n  expr: \"value.s.matches('\\d+')\"\n",
			want: `p.yml:2:27: invalid YAML: found unknown escape character (in double quotes, \ starts an escape: write \\ for a backslash, or use single quotes or a block scalar after | for a regular expression)
      expr: "value.s.matches('\d+')"
                              ^`,
		},
		{
			name: "a colon and space inside a plain value is reported at the colon",
			file: "expr: value.s == \"a: b\"\n",
			want: `p.yml:1:20: invalid YAML: mapping values are not allowed in this context (": " inside a value starts a mapping: quote the value, or write it as a block scalar after |)
    expr: value.s == "a: b"
                       ^`,
		},
		{
			name: "a field indented deeper than its siblings is reported at the field",
			file: "source:\n  group: g\n   topics: [a]\n",
			want: `p.yml:3:10: invalid YAML: mapping values are not allowed in this context (is this line indented deeper than the field above it?)
       topics: [a]
             ^`,
		},
		{
			name: "a field indented less than its siblings is reported at the field",
			file: "source:\n  topics: [a]\n group: g\n",
			want: `p.yml:3:2: invalid YAML: did not find expected key (is this line indented like the fields it belongs with?)
     group: g
     ^`,
		},
		{
			name: "a tab in the indentation is reported at the tab",
			file: "source:\n\ttopics: [a]\n",
			want: "p.yml:2:1: invalid YAML: found character that cannot start any token (YAML indents with spaces, not tabs)\n    \ttopics: [a]\n    ^",
		},
		{
			name: "a value starting with a character YAML reserves is reported at it",
			file: "name: @p\n",
			want: `p.yml:1:7: invalid YAML: found character that cannot start any token (a value cannot start with @: quote it)
    name: @p
          ^`,
		},
		{
			name: "an unclosed quote is reported at the opening quote, not at the end of the file",
			file: "name: \"p\nworkers: 2\n",
			want: `p.yml:1:7: invalid YAML: found unexpected end of stream
    name: "p
          ^`,
		},
		{
			name: "a line shown for a syntax error hides a password written in it",
			file: "sasl:\n  password: [hunter2]x\n",
			want: `p.yml:2:22: invalid YAML: did not find expected key
      password: **********
                         ^`,
		},
		{
			name: "a line shown for a syntax error hides the password of an address",
			file: "brokers: [alice:hunter2@kafka:9092, ${B}]\n",
			want: `p.yml:1:37: invalid YAML: did not find expected ',' or ']' (inside [ ] or { }, a ${VAR} reference must be quoted: write "${B}")
    brokers: [alice:*******@kafka:9092, ${B}]
                                        ^`,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := config.Parse("p.yml", []byte(tc.file), nil)
			var errs config.Errors
			if !errors.As(err, &errs) || len(errs) != 1 {
				t.Fatalf("Parse: %v, want one error", err)
			}
			if got := err.Error(); got != tc.want {
				t.Errorf("got\n%s\nwant\n%s", got, tc.want)
			}
			if strings.Contains(err.Error(), "hunter2") {
				t.Errorf("the password shows in\n%v", err)
			}
		})
	}
}
