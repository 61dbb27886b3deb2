package config_test

import (
	"testing"

	"github.com/sharerelay/sharerelay/config"
)

const exprBase = "name: p\nbrokers: [b:1]\nsource: {topics: [in]}\noutput: {topic: out}\ndead_letter: {topic: dlq}\n"

func TestAnExpressionErrorNamesItsPlaceInTheFileAndShowsTheExpression(t *testing.T) {
	for _, tc := range []struct {
		name, transforms, want string
	}{
		{
			name:       "in a flow mapping, the file column is that of the mistake, the caret under it in the expression",
			transforms: "transforms:\n  - type: filter\n    when: {expr: value.status = \"paid\"}\n",
			want: `p.yml:8:31: transforms[0].when.expr: Syntax error: token recognition error at: '= ' (did you mean "=="? CEL compares with ==; a single = is not an operator)
    value.status = "paid"
                 ^`,
		},
		{
			name:       "in a literal block, the file line is the expression's line that holds the mistake",
			transforms: "transforms:\n  - type: filter\n    when:\n      expr: |\n        value.a > 1 &&\n          value.b and value.c\n",
			want: `p.yml:11:19: transforms[0].when.expr: Syntax error: mismatched input 'and' expecting <EOF> (did you mean "&&"? CEL writes and, or and not as &&, || and !)
      value.b and value.c
              ^`,
		},
		{
			name:       "an expression ending early in a block is reported after its last character",
			transforms: "transforms:\n  - type: set\n    field: x\n    expr: |\n      size(\n        value.items\n\n  - type: remove\n    field: y\n",
			want: `p.yml:11:20: transforms[0].expr: Syntax error: missing ')' at '<EOF>' (the ( at line 1, column 5 is never closed)
      value.items
                 ^`,
		},
		{
			name:       "an expression read from the environment is not shown",
			transforms: "transforms:\n  - type: filter\n    when: {expr: \"${RELAY_TEST_EXPR}\"}\n",
			want:       `p.yml:8:23: transforms[0].when.expr: Syntax error: token recognition error at: '= ' (did you mean "=="? CEL compares with ==; a single = is not an operator)`,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			env := func(name string) (string, bool) {
				if name == "RELAY_TEST_EXPR" {
					return `key = "a"`, true
				}
				return "", false
			}
			_, err := config.Parse("p.yml", []byte(exprBase+tc.transforms), env)
			if err == nil || err.Error() != tc.want {
				t.Errorf("got\n%v\nwant\n%s", err, tc.want)
			}
		})
	}
}
