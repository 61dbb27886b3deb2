package transform_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sharerelay/sharerelay/transform"
)

func TestBuiltins(t *testing.T) {
	permJSON := &wantErr{kind: transform.KindPermanent, class: "json"}
	withTopic := func(r *transform.Record, topic string) *transform.Record { r.Topic = topic; return r }
	withHeader := func(r *transform.Record, k, v string) *transform.Record {
		r.Headers = append(r.Headers, transform.Header{Key: k, Value: []byte(v)})
		return r
	}

	tests := []struct {
		name    string
		spec    transform.Spec
		in      *transform.Record
		want    []string // output values, exactly; nil = filtered out
		topic   string   // expected Topic of the output
		headers []string // expected headers of the output as "k=v", if not nil
		err     *wantErr
	}{
		// set
		{name: "set adds a top-level field",
			spec: transform.Spec{Type: "set", Field: "b", Value: 2},
			in:   rec(`{"a":1}`), want: []string{`{"a":1,"b":2}`}},
		{name: "set creates intermediate objects",
			spec: transform.Spec{Type: "set", Field: "order.meta.source", Value: "web"},
			in:   rec(`{}`), want: []string{`{"order":{"meta":{"source":"web"}}}`}},
		{name: "set descends into existing objects",
			spec: transform.Spec{Type: "set", Field: "order.meta.source", Value: "web"},
			in:   rec(`{"order":{"id":1,"meta":{"x":true}}}`), want: []string{`{"order":{"id":1,"meta":{"source":"web","x":true}}}`}},
		{name: "set replaces an existing field",
			spec: transform.Spec{Type: "set", Field: "a", Value: "new"},
			in:   rec(`{"a":{"deep":[1,2]}}`), want: []string{`{"a":"new"}`}},
		{name: "set replaces a null intermediate with an object",
			spec: transform.Spec{Type: "set", Field: "a.b", Value: 1},
			in:   rec(`{"a":null}`), want: []string{`{"a":{"b":1}}`}},
		{name: "set through a scalar intermediate is a permanent json error",
			spec: transform.Spec{Type: "set", Field: "a.b.c", Value: 1},
			in:   rec(`{"a":{"b":5}}`), err: permJSON},
		{name: "set writes a YAML map as a JSON object",
			spec: transform.Spec{Type: "set", Field: "meta", Value: map[string]any{"tags": []any{"a", true, 1.5}, "n": map[string]any{"k": nil}}},
			in:   rec(`{}`), want: []string{`{"meta":{"n":{"k":null},"tags":["a",true,1.5]}}`}},
		{name: "set writes a YAML map with non-string keys using the keys' text",
			spec: transform.Spec{Type: "set", Field: "m", Value: map[any]any{1: "one", true: []any{map[any]any{"x": 2}}}},
			in:   rec(`{}`), want: []string{`{"m":{"1":"one","true":[{"x":2}]}}`}},
		{name: "set without a value writes null",
			spec: transform.Spec{Type: "set", Field: "a"},
			in:   rec(`{"a":1}`), want: []string{`{"a":null}`}},
		{name: "set keeps big integers and numbers as written",
			spec: transform.Spec{Type: "set", Field: "x", Value: 1},
			in:   rec(`{"id": 12345678901234567890, "price": 1.50, "e": 1e400}`),
			want: []string{`{"e":1e400,"id":12345678901234567890,"price":1.50,"x":1}`}},
		{name: "set writes a big unsigned YAML integer exactly",
			spec: transform.Spec{Type: "set", Field: "id", Value: uint64(12345678901234567890)},
			in:   rec(`{}`), want: []string{`{"id":12345678901234567890}`}},
		{name: "set does not escape HTML characters",
			spec: transform.Spec{Type: "set", Field: "s", Value: "<a & b>"},
			in:   rec(`{"t":"x<y"}`), want: []string{`{"s":"<a & b>","t":"x<y"}`}},
		{name: "set on a value that is not JSON is a permanent json error",
			spec: transform.Spec{Type: "set", Field: "a", Value: 1},
			in:   rec(`not json`), err: permJSON},
		{name: "set on a JSON array is a permanent json error",
			spec: transform.Spec{Type: "set", Field: "a", Value: 1},
			in:   rec(`[1,2]`), err: permJSON},
		{name: "set on an empty value is a permanent json error",
			spec: transform.Spec{Type: "set", Field: "a", Value: 1},
			in:   rec(``), err: permJSON},
		{name: "set on an object followed by more data is a permanent json error",
			spec: transform.Spec{Type: "set", Field: "a", Value: 1},
			in:   rec(`{"a":1} {"b":2}`), err: permJSON},
		{name: "set applies to records matching when",
			spec: transform.Spec{Type: "set", Field: "vip", Value: true, When: &transform.Condition{Field: "tier", Equals: ptr("gold")}},
			in:   rec(`{"tier":"gold"}`), want: []string{`{"tier":"gold","vip":true}`}},
		{name: "set leaves records not matching when byte for byte",
			spec: transform.Spec{Type: "set", Field: "vip", Value: true, When: &transform.Condition{Field: "tier", Equals: ptr("gold")}},
			in:   rec(`{ "tier": "silver", "a": 1 }`), want: []string{`{ "tier": "silver", "a": 1 }`}},

		// rename
		{name: "rename moves a nested field and keeps the emptied parent",
			spec: transform.Spec{Type: "rename", Field: "a.b", To: "x.y"},
			in:   rec(`{"a":{"b":1},"c":2}`), want: []string{`{"a":{},"c":2,"x":{"y":1}}`}},
		{name: "rename of a missing field leaves the record byte for byte",
			spec: transform.Spec{Type: "rename", Field: "nope", To: "x"},
			in:   rec(`{ "b": 1, "a": 2 }`), want: []string{`{ "b": 1, "a": 2 }`}},
		{name: "rename overwrites the target",
			spec: transform.Spec{Type: "rename", Field: "a", To: "b"},
			in:   rec(`{"a":1,"b":2}`), want: []string{`{"b":1}`}},
		{name: "rename keeps a big integer exactly",
			spec: transform.Spec{Type: "rename", Field: "id", To: "order.id"},
			in:   rec(`{"id":12345678901234567890}`), want: []string{`{"order":{"id":12345678901234567890}}`}},
		{name: "rename to a path through a scalar is a permanent json error",
			spec: transform.Spec{Type: "rename", Field: "a", To: "b.c"},
			in:   rec(`{"a":1,"b":"x"}`), err: permJSON},
		{name: "rename skips records not matching when",
			spec: transform.Spec{Type: "rename", Field: "a", To: "b", When: &transform.Condition{Header: "v", Equals: ptr("2")}},
			in:   withHeader(rec(`{"a":1}`), "v", "1"), want: []string{`{"a":1}`}},
		{name: "rename on a value that is not JSON is a permanent json error",
			spec: transform.Spec{Type: "rename", Field: "a", To: "b"},
			in:   rec(`"just a string"`), err: permJSON},

		// remove
		{name: "remove deletes a nested field",
			spec: transform.Spec{Type: "remove", Field: "user.password"},
			in:   rec(`{"user":{"name":"ann","password":"x"}}`), want: []string{`{"user":{"name":"ann"}}`}},
		{name: "remove of a missing field leaves the record byte for byte",
			spec: transform.Spec{Type: "remove", Field: "user.password"},
			in:   rec(`{"user": {"name": "ann"}}`), want: []string{`{"user": {"name": "ann"}}`}},
		{name: "remove through a scalar leaves the record unchanged",
			spec: transform.Spec{Type: "remove", Field: "a.b"},
			in:   rec(`{"a":1}`), want: []string{`{"a":1}`}},
		{name: "remove skips records not matching when",
			spec: transform.Spec{Type: "remove", Field: "a", When: &transform.Condition{Field: "keep", Exists: ptr(false)}},
			in:   rec(`{"a":1,"keep":true}`), want: []string{`{"a":1,"keep":true}`}},

		// header
		{name: "header appends a string header",
			spec: transform.Spec{Type: "header", Header: "source", Value: "relay"},
			in:   rec(`{}`), want: []string{`{}`}, headers: []string{"source=relay"}},
		{name: "header appends after an existing header of the same name",
			spec: transform.Spec{Type: "header", Header: "v", Value: "2"},
			in:   withHeader(rec(`{}`), "v", "1"), want: []string{`{}`}, headers: []string{"v=1", "v=2"}},
		{name: "header stores an integer as text",
			spec: transform.Spec{Type: "header", Header: "n", Value: 42},
			in:   rec(`{}`), want: []string{`{}`}, headers: []string{"n=42"}},
		{name: "header stores a float as JSON writes it",
			spec: transform.Spec{Type: "header", Header: "n", Value: 1e6},
			in:   rec(`{}`), want: []string{`{}`}, headers: []string{"n=1000000"}},
		{name: "header stores a bool as text",
			spec: transform.Spec{Type: "header", Header: "b", Value: false},
			in:   rec(`{}`), want: []string{`{}`}, headers: []string{"b=false"}},
		{name: "header works on a value that is not JSON",
			spec: transform.Spec{Type: "header", Header: "h", Value: "x"},
			in:   rec(`\x00binary`), want: []string{`\x00binary`}, headers: []string{"h=x"}},
		{name: "header skips records not matching when",
			spec: transform.Spec{Type: "header", Header: "h", Value: "x", When: &transform.Condition{Header: "h", Exists: ptr(false)}},
			in:   withHeader(rec(`{}`), "h", "old"), want: []string{`{}`}, headers: []string{"h=old"}},

		// filter
		{name: "filter drops matching records by default",
			spec: transform.Spec{Type: "filter", When: &transform.Condition{Field: "type", Equals: ptr("test")}},
			in:   rec(`{"type":"test"}`), want: nil},
		{name: "filter passes records that do not match",
			spec: transform.Spec{Type: "filter", When: &transform.Condition{Field: "type", Equals: ptr("test")}},
			in:   rec(`{"type":"real"}`), want: []string{`{"type":"real"}`}},
		{name: "filter with keep drops records that do not match",
			spec: transform.Spec{Type: "filter", Action: "keep", When: &transform.Condition{Field: "type", In: []string{"a", "b"}}},
			in:   rec(`{"type":"c"}`), want: nil},
		{name: "filter with keep passes matching records",
			spec: transform.Spec{Type: "filter", Action: "keep", When: &transform.Condition{Field: "type", In: []string{"a", "b"}}},
			in:   rec(`{"type":"b"}`), want: []string{`{"type":"b"}`}},
		{name: "filter with a field condition on a value that is not JSON is a permanent json error",
			spec: transform.Spec{Type: "filter", When: &transform.Condition{Field: "type", Equals: ptr("test")}},
			in:   rec(`type=test`), err: permJSON},
		{name: "filter on a header works on a value that is not JSON",
			spec: transform.Spec{Type: "filter", When: &transform.Condition{Header: "skip", Exists: ptr(true)}},
			in:   withHeader(rec(`raw`), "skip", ""), want: nil},

		// route
		{name: "route sets the topic from the routes table",
			spec: transform.Spec{Type: "route", Field: "order.country", Routes: map[string]string{"FR": "orders-fr", "DE": "orders-de"}},
			in:   rec(`{"order":{"country":"DE"}}`), want: []string{`{"order":{"country":"DE"}}`}, topic: "orders-de"},
		{name: "route uses the default for a value not in routes",
			spec: transform.Spec{Type: "route", Field: "c", Routes: map[string]string{"FR": "fr"}, Default: "other"},
			in:   withTopic(rec(`{"c":"IT"}`), "orig"), want: []string{`{"c":"IT"}`}, topic: "other"},
		{name: "route uses the default for a missing field",
			spec: transform.Spec{Type: "route", Field: "c", Routes: map[string]string{"FR": "fr"}, Default: "other"},
			in:   rec(`{}`), want: []string{`{}`}, topic: "other"},
		{name: "route leaves the topic unchanged without a default",
			spec: transform.Spec{Type: "route", Field: "c", Routes: map[string]string{"FR": "fr"}},
			in:   withTopic(rec(`{"c":"IT"}`), "orig"), want: []string{`{"c":"IT"}`}, topic: "orig"},
		{name: "route matches a number by its text",
			spec: transform.Spec{Type: "route", Field: "prio", Routes: map[string]string{"1": "urgent", "1.0": "odd"}},
			in:   rec(`{"prio":1}`), want: []string{`{"prio":1}`}, topic: "urgent"},
		{name: "route matches a bool by its text",
			spec: transform.Spec{Type: "route", Field: "test", Routes: map[string]string{"true": "sandbox"}},
			in:   rec(`{"test":true}`), want: []string{`{"test":true}`}, topic: "sandbox"},
		{name: "route skips records not matching when",
			spec: transform.Spec{Type: "route", Field: "c", Routes: map[string]string{"FR": "fr"}, When: &transform.Condition{Field: "c", Equals: ptr("DE")}},
			in:   rec(`{"c":"FR"}`), want: []string{`{"c":"FR"}`}, topic: ""},
		{name: "route on a value that is not JSON is a permanent json error",
			spec: transform.Spec{Type: "route", Field: "c", Routes: map[string]string{"FR": "fr"}},
			in:   rec(`c=FR`), err: permJSON},

		// fail
		{name: "fail retries matching records by default",
			spec: transform.Spec{Type: "fail", When: &transform.Condition{Field: "bad", Exists: ptr(true)}},
			in:   rec(`{"bad":1}`), err: &wantErr{kind: transform.KindRetry, class: "fail"}},
		{name: "fail with kind permanent dead-letters matching records",
			spec: transform.Spec{Type: "fail", Kind: "permanent", Reason: "poison", When: &transform.Condition{Field: "bad", Exists: ptr(true)}},
			in:   rec(`{"bad":1}`), err: &wantErr{kind: transform.KindPermanent, class: "fail"}},
		{name: "fail passes records that do not match",
			spec: transform.Spec{Type: "fail", When: &transform.Condition{Field: "bad", Exists: ptr(true)}},
			in:   rec(`{"good":1}`), want: []string{`{"good":1}`}},

		// delay
		{name: "delay returns the record unchanged",
			spec: transform.Spec{Type: "delay", Duration: time.Millisecond},
			in:   rec(`not even json`), want: []string{`not even json`}},
		{name: "delay skips records not matching when",
			spec: transform.Spec{Type: "delay", Duration: time.Hour, When: &transform.Condition{Field: "slow", Equals: ptr("true")}},
			in:   rec(`{"slow":false}`), want: []string{`{"slow":false}`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := mustBuild(t, tt.spec)
			out, err := c.Apply(bg, tt.in)
			checkErr(t, err, tt.err)
			if tt.err != nil {
				return
			}
			if got := values(out); !slices.Equal(got, tt.want) {
				t.Fatalf("values:\n got %q\nwant %q", got, tt.want)
			}
			if len(out) == 0 {
				return
			}
			if out[0].Topic != tt.topic {
				t.Errorf("topic = %q, want %q", out[0].Topic, tt.topic)
			}
			if tt.headers != nil {
				var got []string
				for _, h := range out[0].Headers {
					got = append(got, h.Key+"="+string(h.Value))
				}
				if !slices.Equal(got, tt.headers) {
					t.Errorf("headers = %q, want %q", got, tt.headers)
				}
			}
			if out[0].Source != tt.in.Source {
				t.Errorf("source changed: %+v", out[0].Source)
			}
		})
	}
}

func TestFailReason(t *testing.T) {
	tests := []struct {
		name   string
		reason string
		want   string
	}{
		{name: "fail reports its reason", reason: "poison order", want: "poison order"},
		{name: "fail without a reason reports the default", reason: "", want: transform.DefaultFailReason},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tr, err := transform.Registry["fail"](transform.Spec{Type: "fail", Reason: tt.reason, When: &transform.Condition{MaxDeliveryCount: 5}}, transform.Options{})
			if err != nil {
				t.Fatal(err)
			}
			_, err = tr.Apply(bg, rec(`{}`))
			e := transform.Classify(err)
			if e == nil || e.Err.Error() != tt.want {
				t.Fatalf("error = %v, want reason %q", err, tt.want)
			}
		})
	}
}

func TestDelayCancellation(t *testing.T) {
	canceled, cancel := context.WithCancel(bg)
	cancel()
	short, cancelShort := context.WithTimeout(bg, 20*time.Millisecond)
	defer cancelShort()

	tests := []struct {
		name string
		ctx  context.Context
		want error
	}{
		{name: "delay with an already canceled context is retryable", ctx: canceled, want: context.Canceled},
		{name: "delay interrupted by a deadline is retryable", ctx: short, want: context.DeadlineExceeded},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := mustBuild(t, transform.Spec{Type: "delay", Duration: time.Hour})
			start := time.Now()
			out, err := c.Apply(tt.ctx, rec(`{}`))
			if time.Since(start) > 10*time.Second {
				t.Fatal("delay did not honour the context")
			}
			if out != nil {
				t.Fatalf("got records %q", values(out))
			}
			checkErr(t, err, &wantErr{kind: transform.KindRetry, class: "delay", step: "0:delay"})
			if !errors.Is(err, tt.want) {
				t.Fatalf("error %v does not wrap %v", err, tt.want)
			}
		})
	}
}

func TestConstructorsRejectInvalidSpecs(t *testing.T) {
	tests := []struct {
		name string
		typ  string
		spec transform.Spec
		want string
	}{
		{name: "set constructor rejects a spec without field", typ: "set", spec: transform.Spec{Type: "set"}, want: "field: required"},
		{name: "route constructor rejects a spec without routes", typ: "route", spec: transform.Spec{Type: "route", Field: "a"}, want: "routes: required"},
		{name: "constructor rejects a spec of another type", typ: "fail", spec: transform.Spec{Type: "filter", When: &transform.Condition{MaxDeliveryCount: 1}}, want: "type: must be fail"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := transform.Registry[tt.typ](tt.spec, transform.Options{})
			var ve *transform.ValidationError
			if !errors.As(err, &ve) || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error = %v, want a *ValidationError containing %q", err, tt.want)
			}
		})
	}
}

func TestBuiltTransformIgnoresLaterSpecChanges(t *testing.T) {
	spec := transform.Spec{Type: "filter", When: &transform.Condition{Field: "a", In: []string{"x"}}}
	c := mustBuild(t, spec)
	spec.When.In[0] = "y"
	spec.When.Field = "b"
	out, err := c.Apply(bg, rec(`{"a":"x"}`))
	if err != nil || len(out) != 0 {
		t.Fatalf("got %q, %v; want the record dropped by the original condition", values(out), err)
	}
}

func TestMayDropNamesTheStepsThatCanLeaveARecordWithoutOutput(t *testing.T) {
	for _, tc := range []struct {
		types []string
		want  bool
	}{
		{nil, false},
		{[]string{"set", "route", "copy", "fail"}, false},
		{[]string{"set", "filter"}, true},
		{[]string{"split", "copy"}, true},
	} {
		var specs []transform.Spec
		for _, typ := range tc.types {
			specs = append(specs, transform.Spec{Type: typ})
		}
		if got := transform.MayDrop(specs); got != tc.want {
			t.Errorf("transform.MayDrop(%v) = %v, want %v", tc.types, got, tc.want)
		}
	}
	// Every built-in that can return no record is listed: each type is
	// run on a record for which it could drop, and must either keep a
	// record or be named by MayDrop.
	for typ, spec := range map[string]transform.Spec{
		"filter": {Type: "filter", When: &transform.Condition{Expr: "true"}},
		"split":  {Type: "split", Field: "lines"},
		"route":  {Type: "route", Expr: `value.lines.map(x, "t")`, Topics: []string{"t"}},
		"copy":   {Type: "copy", Topics: []string{"t"}},
		"set":    {Type: "set", Field: "x", Value: 1},
	} {
		tr, err := transform.Build([]transform.Spec{spec})
		if err != nil {
			t.Fatalf("%s: %v", typ, err)
		}
		out, err := tr.Apply(context.Background(), &transform.Record{Topic: "out", Value: []byte(`{"lines":[]}`)})
		if err == nil && len(out) == 0 && !transform.MayDrop([]transform.Spec{spec}) {
			t.Errorf("%s made no record of one, but MayDrop does not name it", typ)
		}
	}
}
