package transform_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sharerelay/sharerelay/transform"
)

// full is a record with every variable an expression can read set.
func full(value string) *transform.Record {
	return &transform.Record{
		Key:   []byte("order-42"),
		Value: []byte(value),
		Headers: []transform.Header{
			{Key: "region", Value: []byte("us")},
			{Key: "region", Value: []byte("eu")},
			{Key: "trace", Value: []byte("abc")},
		},
		Source: transform.Source{Topic: "orders", Partition: 2, Offset: 1234, DeliveryCount: 3,
			Timestamp: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)},
	}
}

func TestExpressions(t *testing.T) {
	permCEL := &wantErr{kind: transform.KindPermanent, class: "cel"}
	permJSON := &wantErr{kind: transform.KindPermanent, class: "json"}
	when := func(expr string) *transform.Condition { return &transform.Condition{Expr: expr} }
	keepIf := func(expr string) transform.Spec {
		return transform.Spec{Type: "filter", Action: "keep", When: when(expr)}
	}

	tests := []struct {
		name   string
		spec   transform.Spec
		in     *transform.Record
		want   []string // output values; nil = filtered out
		topics []string // output topics, if not nil
		err    *wantErr
	}{
		// The variables.
		{name: "value is the parsed JSON value",
			spec: keepIf(`value.order.total > 100 && value.order.items.size() == 2`),
			in:   full(`{"order":{"total":150.5,"items":["a","b"]}}`), want: []string{`{"order":{"total":150.5,"items":["a","b"]}}`}},
		{name: "value may be any JSON value, not only an object",
			spec: keepIf(`value == [1, 2]`), in: full(`[1,2]`), want: []string{`[1,2]`}},
		{name: "an integer and a double compare by value",
			spec: keepIf(`value.n == 3.0 && value.d == 3 && value.n < 3.5`), in: full(`{"n":3,"d":3.0}`), want: []string{`{"n":3,"d":3.0}`}},
		{name: "a JSON number is a double whether written as an integer or not",
			spec: keepIf(`value.a * 1.5 == 4.5 && value.b * 1.5 == 4.5 && type(value.a) == double`), in: full(`{"a":3,"b":3.0}`), want: []string{`{"a":3,"b":3.0}`}},
		{name: "an integer beyond 2^53 is an int, exactly",
			spec: keepIf(`value.id == 9007199254740993 && value.id % 7 == 9007199254740993 % 7`), in: full(`{"id":9007199254740993}`), want: []string{`{"id":9007199254740993}`}},
		{name: "int() turns a JSON number into an int for modulo",
			spec: keepIf(`int(value.n) % 7 == 0`), in: full(`{"n":14}`), want: []string{`{"n":14}`}},
		{name: "an integer too large for int is a uint",
			spec: keepIf(`value.id == 18446744073709551615u`), in: full(`{"id":18446744073709551615}`), want: []string{`{"id":18446744073709551615}`}},
		{name: "value_bytes is the raw value",
			spec: keepIf(`value_bytes == b"\x00raw"`), in: full("\x00raw"), want: []string{"\x00raw"}},
		{name: "key is the key as text and key_bytes as bytes",
			spec: keepIf(`key.startsWith("order-") && key_bytes == b"order-42"`), in: full(`x`), want: []string{`x`}},
		{name: "headers holds the last value of a repeated header",
			spec: keepIf(`headers["region"] == "eu" && headers.trace == "abc" && !("missing" in headers)`), in: full(`x`), want: []string{`x`}},
		{name: "the source coordinates are variables",
			spec: keepIf(`topic == "orders" && partition == 2 && offset == 1234 && delivery_count == 3`), in: full(`x`), want: []string{`x`}},
		{name: "timestamp is the record's timestamp",
			spec: keepIf(`timestamp == timestamp("2026-03-01T12:00:00Z") && timestamp.getHours() == 12`), in: full(`x`), want: []string{`x`}},
		{name: "an optional field reads a default when missing",
			spec: keepIf(`value.?priority.orValue("low") == "low"`), in: full(`{}`), want: []string{`{}`}},
		{name: "the strings extension is available",
			spec: keepIf(`key.split("-")[1] == "42" && "AbC".lowerAscii() == "abc"`), in: full(`x`), want: []string{`x`}},

		// Values that are not JSON.
		{name: "a condition on the key does not parse the value",
			spec: transform.Spec{Type: "filter", When: when(`key == "order-42"`)}, in: full("\xff\xfe not json"), want: nil},
		{name: "a condition on headers does not parse the value",
			spec: keepIf(`headers.region == "eu"`), in: full("not json"), want: []string{"not json"}},
		{name: "a condition on the value of a value that is not JSON is a permanent json error",
			spec: keepIf(`value.x == 1`), in: full("not json"), err: permJSON},
		{name: "a value that is not needed because of short-circuiting is not an error",
			spec: keepIf(`headers.region == "eu" || value.x == 1`), in: full("not json"), want: []string{"not json"}},
		{name: "an empty value is not JSON",
			spec: keepIf(`has(value.x)`), in: full(""), err: permJSON},

		// Evaluation errors.
		{name: "a missing field is a permanent cel error",
			spec: keepIf(`value.missing == 1`), in: full(`{}`), err: permCEL},
		{name: "has tests a field without error",
			spec: keepIf(`has(value.missing)`), in: full(`{}`), want: nil},
		{name: "a condition that is not a bool when evaluated is a permanent cel error",
			spec: keepIf(`value.flag`), in: full(`{"flag":"yes"}`), err: permCEL},
		{name: "division by zero is a permanent cel error",
			spec: keepIf(`value.n / 0 == 1`), in: full(`{"n":1}`), err: permCEL},

		// when.expr on the other steps, alone and with the other tests.
		{name: "when.expr selects the records a step changes",
			spec: transform.Spec{Type: "set", Field: "big", Value: true, When: when(`value.total >= 100`)},
			in:   full(`{"total":100}`), want: []string{`{"big":true,"total":100}`}},
		{name: "a record not matching when.expr passes unchanged",
			spec: transform.Spec{Type: "set", Field: "big", Value: true, When: when(`value.total >= 100`)},
			in:   full(`{"total": 99}`), want: []string{`{"total": 99}`}},
		{name: "when.expr is ANDed with the other tests",
			spec: transform.Spec{Type: "fail", Kind: "permanent", When: &transform.Condition{Expr: `key != ""`, MaxDeliveryCount: 1}},
			in:   full(`x`), want: []string{`x`}},
		{name: "when.expr is not evaluated when another test fails",
			spec: transform.Spec{Type: "fail", When: &transform.Condition{Header: "region", Equals: ptr("us"), Expr: `value.x == 1`}},
			in:   full(`not json`), want: []string{`not json`}},

		// set and map.
		{name: "set stores an expression's result",
			spec: transform.Spec{Type: "set", Field: "summary", Expr: `{"key": key, "n": value.items.size(), "total": value.price * 2.0, "eu": headers.region == "eu"}`},
			in:   full(`{"items":[1,2,3],"price":1.25}`), want: []string{`{"items":[1,2,3],"price":1.25,"summary":{"eu":true,"key":"order-42","n":3,"total":2.5}}`}},
		{name: "set writes an integral double as an integer",
			spec: transform.Spec{Type: "set", Field: "cents", Expr: `value.price * 100.0`},
			in:   full(`{"price":12}`), want: []string{`{"cents":1200,"price":12}`}},
		{name: "set copies a part of the value without aliasing it",
			spec: transform.Spec{Type: "set", Field: "a.copy", Expr: `value.a`},
			in:   full(`{"a":{"x":1}}`), want: []string{`{"a":{"copy":{"x":1},"x":1}}`}},
		{name: "set writes a timestamp as RFC 3339 text and bytes as base64",
			spec: transform.Spec{Type: "set", Field: "t", Expr: `[timestamp, b"hi", duration("90s")]`},
			in:   full(`{}`), want: []string{`{"t":["2026-03-01T12:00:00Z","aGk=","1m30s"]}`}},
		{name: "set with an expression needs a JSON object",
			spec: transform.Spec{Type: "set", Field: "k", Expr: `key`}, in: full(`[1]`), err: permJSON},
		{name: "set of a value with no JSON form is a permanent cel error",
			spec: transform.Spec{Type: "set", Field: "k", Expr: `{1: "a"}`}, in: full(`{}`), err: permCEL},
		{name: "map replaces the value by the expression's result",
			spec: transform.Spec{Type: "map", Expr: `{"id": value.order_id, "region": headers.region}`},
			in:   full(`{"order_id":7,"junk":true}`), want: []string{`{"id":7,"region":"eu"}`}},
		{name: "map writes bytes as they are",
			spec: transform.Spec{Type: "map", Expr: `bytes(key.upperAscii())`}, in: full(`x`), want: []string{`ORDER-42`}},
		{name: "map writes a string as a JSON string",
			spec: transform.Spec{Type: "map", Expr: `key`}, in: full(`x`), want: []string{`"order-42"`}},
		{name: "map works on values that are not JSON when it does not use value",
			spec: transform.Spec{Type: "map", Expr: `value_bytes + b"!"`}, in: full(`raw`), want: []string{`raw!`}},

		// route by expression and by cases.
		{name: "route sends the record to the topic an expression returns",
			spec: transform.Spec{Type: "route", Expr: `"orders." + headers.region`, Topics: []string{"orders.eu", "orders.us"}},
			in:   full(`not json`), want: []string{`not json`}, topics: []string{"orders.eu"}},
		{name: "route to a list of topics writes one record to each",
			spec: transform.Spec{Type: "route", Expr: `["a", "b", "a"]`, Topics: []string{"a", "b"}},
			in:   full(`{}`), want: []string{`{}`, `{}`}, topics: []string{"a", "b"}},
		{name: "route to an empty list chooses no route",
			spec: transform.Spec{Type: "route", Expr: `value.targets`, Topics: []string{"a"}, Default: "other"},
			in:   full(`{"targets":[]}`), want: []string{`{"targets":[]}`}, topics: []string{"other"}},
		{name: "route to an empty string chooses no route",
			spec: transform.Spec{Type: "route", Expr: `"region" in headers ? "a" : ""`, Topics: []string{"a"}},
			in:   full(`{}`), want: []string{`{}`}, topics: []string{"a"}},
		{name: "route to an empty string keeps the topic without a default",
			spec: transform.Spec{Type: "route", Expr: `"nope" in headers ? "a" : ""`, Topics: []string{"a"}},
			in:   full(`{}`), want: []string{`{}`}, topics: []string{""}},
		{name: "route with an expression returning null uses the default",
			spec: transform.Spec{Type: "route", Expr: `has(value.t) ? value.t : null`, Topics: []string{"a"}, Default: "other"},
			in:   full(`{}`), want: []string{`{}`}, topics: []string{"other"}},
		{name: "route with an expression returning null and no default keeps the topic",
			spec: transform.Spec{Type: "route", Expr: `null`, Topics: []string{"a"}},
			in:   full(`{}`), want: []string{`{}`}, topics: []string{""}},
		{name: "route to a topic not listed in topics is a permanent route error",
			spec: transform.Spec{Type: "route", Expr: `"orders." + headers.region`, Topics: []string{"orders.us"}},
			in:   full(`{}`), err: &wantErr{kind: transform.KindPermanent, class: "route"}},
		{name: "route to something that is not a topic is a permanent cel error",
			spec: transform.Spec{Type: "route", Expr: `value.t`, Topics: []string{"a"}},
			in:   full(`{"t":1}`), err: permCEL},
		{name: "route by cases takes the first true case",
			spec: transform.Spec{Type: "route", Cases: []transform.RouteCase{
				{Expr: `value.total > 1000`, Topic: "huge"},
				{Expr: `value.total > 100`, Topic: "big"},
				{Expr: `true`, Topic: "never"},
			}},
			in: full(`{"total":500}`), want: []string{`{"total":500}`}, topics: []string{"big"}},
		{name: "route by cases sends to every topic of a case",
			spec: transform.Spec{Type: "route", Cases: []transform.RouteCase{{Expr: `key != ""`, Topics: []string{"a", "b"}}}},
			in:   full(`raw`), want: []string{`raw`, `raw`}, topics: []string{"a", "b"}},
		{name: "route by cases uses the default when no case is true",
			spec: transform.Spec{Type: "route", Cases: []transform.RouteCase{{Expr: `false`, Topic: "a"}}, Default: "rest"},
			in:   full(`{}`), want: []string{`{}`}, topics: []string{"rest"}},

		// split and copy.
		{name: "split makes one record per element, the element as the value",
			spec: transform.Spec{Type: "split", Field: "order.items"},
			in:   full(`{"order":{"items":[{"sku":"a"},"b",3]}}`), want: []string{`{"sku":"a"}`, `"b"`, `3`}},
		{name: "split with to puts each element in a copy of the value",
			spec: transform.Spec{Type: "split", Field: "items", To: "item"},
			in:   full(`{"id":7,"items":[1,2]}`), want: []string{`{"id":7,"item":1}`, `{"id":7,"item":2}`}},
		{name: "split with to equal to field replaces the array by each element",
			spec: transform.Spec{Type: "split", Field: "items", To: "items"},
			in:   full(`{"id":7,"items":["x","y"]}`), want: []string{`{"id":7,"items":"x"}`, `{"id":7,"items":"y"}`}},
		{name: "split of an empty array makes no records",
			spec: transform.Spec{Type: "split", Field: "items"}, in: full(`{"items":[]}`), want: nil},
		{name: "split of a missing field is a permanent json error",
			spec: transform.Spec{Type: "split", Field: "items"}, in: full(`{}`), err: permJSON},
		{name: "split of a field that is not an array is a permanent json error",
			spec: transform.Spec{Type: "split", Field: "items"}, in: full(`{"items":{"a":1}}`), err: permJSON},
		{name: "split skips records not matching when",
			spec: transform.Spec{Type: "split", Field: "items", When: when(`has(value.items)`)}, in: full(`{}`), want: []string{`{}`}},
		{name: "copy writes the record and a copy to each topic",
			spec: transform.Spec{Type: "copy", Topics: []string{"audit", "archive"}},
			in:   full(`raw`), want: []string{`raw`, `raw`, `raw`}, topics: []string{"", "audit", "archive"}},
		{name: "copy skips records not matching when",
			spec: transform.Spec{Type: "copy", Topics: []string{"audit"}, When: when(`headers.region == "us"`)},
			in:   full(`raw`), want: []string{`raw`}, topics: []string{""}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := mustBuild(t, tt.spec)
			in := tt.in
			out, err := c.Apply(bg, in)
			checkErr(t, err, tt.err)
			if tt.err != nil {
				return
			}
			if got := values(out); !slices.Equal(got, tt.want) {
				t.Fatalf("values:\n got %q\nwant %q", got, tt.want)
			}
			if tt.topics != nil {
				var got []string
				for _, o := range out {
					got = append(got, o.Topic)
				}
				if !slices.Equal(got, tt.topics) {
					t.Errorf("topics = %q, want %q", got, tt.topics)
				}
			}
			for i, o := range out {
				if o.Source != full("").Source {
					t.Errorf("output %d: source changed: %+v", i, o.Source)
				}
				for j := range i {
					if o == out[j] {
						t.Errorf("outputs %d and %d are the same record", j, i)
					}
				}
			}
		})
	}
}

func TestExpressionErrorsNameTheStepAndTheExpression(t *testing.T) {
	c := mustBuild(t,
		transform.Spec{Type: "set", Field: "a", Value: 1},
		transform.Spec{Type: "route", Name: "by-region", Cases: []transform.RouteCase{
			{Expr: `key == "x"`, Topic: "x"},
			{Expr: `value.region == "eu"`, Topic: "eu"},
		}},
	)
	_, err := c.Apply(bg, rec(`{}`))
	checkErr(t, err, &wantErr{kind: transform.KindPermanent, class: "cel", step: "by-region"})
	if want := "transform by-region: cases[1].expr: no such key: region"; err.Error() != want {
		t.Fatalf("message %q, want %q", err, want)
	}
}

func TestCostLimitStopsAnExpensiveExpression(t *testing.T) {
	items := strings.Repeat("1,", 999) + "1"
	in := func() *transform.Record { return rec(`{"items":[` + items + `]}`) }
	spec := transform.Spec{Type: "filter", When: &transform.Condition{
		Expr: `value.items.all(i, value.items.all(j, value.items.exists(k, k == 2) == false))`}}

	t.Run("the default limit stops it within milliseconds as a permanent cel error", func(t *testing.T) {
		c := mustBuild(t, spec)
		start := time.Now()
		_, err := c.Apply(bg, in())
		checkErr(t, err, &wantErr{kind: transform.KindPermanent, class: "cel", step: "0:filter"})
		if !strings.Contains(err.Error(), fmt.Sprintf("cost limit (%d) exceeded", transform.DefaultCostLimit)) {
			t.Errorf("message %q does not name the limit", err)
		}
		if d := time.Since(start); d > time.Second {
			t.Errorf("took %s", d)
		}
	})
	t.Run("a lower limit applies", func(t *testing.T) {
		c, err := transform.BuildWith([]transform.Spec{{Type: "filter", When: &transform.Condition{Expr: `value.items.size() > 0 && value.items.all(i, i == 1)`}}},
			transform.Options{CostLimit: 50})
		if err != nil {
			t.Fatal(err)
		}
		_, err = c.Apply(bg, in())
		checkErr(t, err, &wantErr{kind: transform.KindPermanent, class: "cel"})
	})
	t.Run("a cheap expression passes under a low limit", func(t *testing.T) {
		c, err := transform.BuildWith([]transform.Spec{{Type: "filter", When: &transform.Condition{Expr: `key == "x"`}}},
			transform.Options{CostLimit: 10})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.Apply(bg, in()); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("a cancelled evaluation is retryable, never dead-lettered", func(t *testing.T) {
		c := mustBuild(t, spec)
		ctx, cancel := context.WithCancel(bg)
		cancel()
		_, err := c.Apply(ctx, in())
		checkErr(t, err, &wantErr{kind: transform.KindRetry, class: "cel"})
	})
}

func TestValidateExpressions(t *testing.T) {
	type S = transform.Spec
	type C = transform.Condition
	pos := func(path, msg string, line, col int) transform.FieldError {
		return transform.FieldError{Path: path, Msg: msg, Line: line, Col: col}
	}
	withSnippet := func(fe transform.FieldError, snippet string) transform.FieldError {
		fe.Snippet = snippet
		return fe
	}
	tests := []struct {
		name string
		spec S
		want []transform.FieldError
	}{
		{name: "an undeclared variable is reported at its column",
			spec: S{Type: "filter", When: &C{Expr: `key == "a" && vaule.x == 1`}},
			want: []transform.FieldError{withSnippet(pos("when.expr", "undeclared reference to 'vaule' (did you mean 'value'?)", 1, 15),
				`key == "a" && vaule.x == 1`+"\n"+`              ^`)}},
		{name: "a syntax error is reported at its line and column",
			spec: S{Type: "set", Field: "x", Expr: "[\n  value.a +\n]"},
			want: []transform.FieldError{withSnippet(pos("expr", "Syntax error: mismatched input ']' (a value is missing here)", 3, 1), "]\n^")}},
		{name: "a type error is reported",
			spec: S{Type: "map", Expr: `key + 1`},
			want: []transform.FieldError{withSnippet(pos("expr", "found no matching overload for '_+_' applied to '(string, int)'", 1, 5), "key + 1\n    ^")}},
		{name: "a condition must be a bool",
			spec: S{Type: "filter", When: &C{Expr: `key`}},
			want: []transform.FieldError{pos("when.expr", "must evaluate to a bool, but its type is string", 1, 1)}},
		{name: "a route expression must be a topic",
			spec: S{Type: "route", Expr: `partition`, Topics: []string{"a"}},
			want: []transform.FieldError{pos("expr", "must evaluate to a topic name (string), a list of them, or null, but its type is int", 1, 1)}},
		{name: "a route case must be a bool and have a topic",
			spec: S{Type: "route", Cases: []transform.RouteCase{{Expr: `"a"`}, {Topic: "b", Topics: []string{"c"}}}},
			want: []transform.FieldError{
				pos("cases[0].expr", "must evaluate to a bool, but its type is string", 1, 1),
				pos("cases[0].topic", "required: the topic (or topics) for the records this case routes", 0, 0),
				pos("cases[1].expr", "required: a CEL expression that is true for the records this case routes", 0, 0),
				pos("cases[1].topics", "cannot be combined with topic; set only one of them", 0, 0),
			}},
		{name: "an empty route names its three forms",
			spec: S{Type: "route"},
			want: []transform.FieldError{pos("", "required: field with routes, expr with topics, or cases", 0, 0)}},
		{name: "a route mixing forms is reported",
			spec: S{Type: "route", Field: "a", Routes: map[string]string{"x": "y"}, Expr: `"y"`, Topics: []string{"y"}},
			want: []transform.FieldError{pos("expr", "cannot be combined with field: a route uses field with routes, expr with topics, or cases", 0, 0)}},
		{name: "a route expression needs its topics",
			spec: S{Type: "route", Expr: `"a"`},
			want: []transform.FieldError{pos("topics", "required: every topic the expression may return", 0, 0)}},
		{name: "set takes a value or an expression, not both",
			spec: S{Type: "set", Field: "a", Value: 1, Expr: `1`},
			want: []transform.FieldError{pos("value", "cannot be combined with expr; set only one of them", 0, 0)}},
		{name: "map needs an expression",
			spec: S{Type: "map"},
			want: []transform.FieldError{pos("expr", "required: a CEL expression", 0, 0)}},
		{name: "an expression of blanks is empty",
			spec: S{Type: "map", Expr: "  "},
			want: []transform.FieldError{pos("expr", "empty expression", 0, 0)}},
		{name: "a header takes a value or an expression, not both",
			spec: S{Type: "header", Header: "h", Value: "v", Expr: `1`},
			want: []transform.FieldError{pos("expr", "cannot be combined with value; set only one of them", 0, 0)}},
		{name: "a header's expression must give a string, bytes, a number or a bool",
			spec: S{Type: "header", Header: "h", Expr: `[1]`},
			want: []transform.FieldError{pos("expr", "must evaluate to a string, bytes, a number or a bool, but its type is list(int)", 1, 1)}},
		{name: "copy lists each topic once",
			spec: S{Type: "copy", Topics: []string{"a", "b", "a"}},
			want: []transform.FieldError{pos("topics[2]", `duplicate topic "a" (also topics[0])`, 0, 0)}},
		{name: "split needs a field",
			spec: S{Type: "split", To: "x"},
			want: []transform.FieldError{pos("field", "required: a dotted path into the JSON value, e.g. order.id", 0, 0)}},
		{name: "a condition of only an expression is valid",
			spec: S{Type: "fail", When: &C{Expr: `delivery_count < 2`}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.spec.Validate(); !slices.Equal(got, tt.want) {
				t.Fatalf("Validate:\n got %+v\nwant %+v", got, tt.want)
			}
		})
	}
}

func TestConditionMatchEvaluatesAnExpression(t *testing.T) {
	c := &transform.Condition{Expr: `headers.x == "1"`}
	r := rec(`not json`)
	r.Headers = []transform.Header{{Key: "x", Value: []byte("1")}}
	if ok, err := c.Match(r); !ok || err != nil {
		t.Fatalf("Match = %v, %v", ok, err)
	}
}

func TestBuiltExpressionsAreSafeForConcurrentUse(t *testing.T) {
	c := mustBuild(t,
		transform.Spec{Type: "set", Field: "n2", Expr: `value.n * 2.0`, When: &transform.Condition{Expr: `int(value.n) % 2 == 0`}},
		transform.Spec{Type: "route", Cases: []transform.RouteCase{{Expr: `has(value.n2)`, Topic: "even"}}, Default: "odd"},
	)
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for g := range 8 {
		wg.Go(func() {
			for i := range 200 {
				n := g*1000 + i
				out, err := c.Apply(bg, rec(fmt.Sprintf(`{"n":%d}`, n)))
				if err != nil {
					errs <- err
					return
				}
				want := "odd"
				if n%2 == 0 {
					want = "even"
				}
				if out[0].Topic != want {
					errs <- fmt.Errorf("n=%d went to %s", n, out[0].Topic)
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

func TestDecide(t *testing.T) {
	retry := transform.Retry("fail", errors.New("jam"))
	perm := transform.Permanent("cel", errors.New("bad"))
	tests := []struct {
		name           string
		err            error
		delivery, max  int32
		release, exhst bool
	}{
		{name: "a retryable failure before the last attempt releases the record", err: retry, delivery: 1, max: 4, release: true},
		{name: "a retryable failure on the last attempt dead-letters it as exhausted", err: retry, delivery: 4, max: 4, exhst: true},
		{name: "a retryable failure past the last attempt dead-letters it as exhausted", err: retry, delivery: 6, max: 4, exhst: true},
		{name: "a permanent failure dead-letters it on its first delivery", err: perm, delivery: 1, max: 4},
		{name: "an unclassified error is retryable", err: errors.New("boom"), delivery: 1, max: 2, release: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := transform.Decide(tt.err, tt.delivery, tt.max)
			if d.Release != tt.release || d.Exhausted != tt.exhst || d.Err == nil {
				t.Fatalf("Decide = %+v, want release %v exhausted %v", d, tt.release, tt.exhst)
			}
		})
	}
}
