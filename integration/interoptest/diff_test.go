package interoptest

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestDiffComparesCanonicalValues(t *testing.T) {
	for _, tc := range []struct {
		name      string
		want, got string
		diff      string // a substring of the difference; "" for equal
	}{
		{"objects are equal whatever the key order", `{"a":1,"b":[1,"x"]}`, `{"b":[1,"x"],"a":1}`, ""},
		{"an integral float equals the integer", `{"w":3}`, `{"w":3.0}`, ""},
		{"integers beyond 2^53 compare exactly", `{"id":9223372036854775807}`, `{"id":9223372036854775806}`, "$.id: want 9223372036854775807, got 9223372036854775806"},
		{"a decimal's text is not a number", `{"amount":"1.50"}`, `{"amount":"1.5"}`, `$.amount: want "1.50", got "1.5"`},
		{"null differs from a missing field", `{"coupon":null}`, `{}`, "$.coupon: missing, want null"},
		{"an extra field is named", `{}`, `{"x":1}`, "$.x: unexpected 1"},
		{"arrays of another length are shown whole", `{"l":[1,2]}`, `{"l":[1]}`, "$.l: 1 items, want 2"},
		{"a nested difference has its path", `{"lines":[{"p":"1.00"},{"p":"2.00"}]}`, `{"lines":[{"p":"1.00"},{"p":"2.50"}]}`, `$.lines[1].p: want "2.00", got "2.50"`},
		{"a type change is a difference", `{"ref":5}`, `{"ref":"5"}`, `$.ref: want 5, got "5"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := Diff(json.RawMessage(tc.want), json.RawMessage(tc.got))
			if tc.diff == "" && d != "" || tc.diff != "" && !strings.Contains(d, tc.diff) {
				t.Fatalf("Diff(%s, %s) = %q; want %q", tc.want, tc.got, d, tc.diff)
			}
		})
	}
}
