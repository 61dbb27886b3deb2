package transform_test

import (
	"context"
	"errors"
	"math"
	"slices"
	"testing"
	"time"

	"github.com/sharerelay/sharerelay/transform"
)

func fe(path, msg string) transform.FieldError { return transform.FieldError{Path: path, Msg: msg} }

const knownTypes = "copy, delay, fail, filter, header, key, map, remove, rename, route, set, split"

func TestValidate(t *testing.T) {
	type C = transform.Condition
	type S = transform.Spec
	tests := []struct {
		name string
		spec S
		want []transform.FieldError
	}{
		{name: "a valid set passes", spec: S{Type: "set", Field: "a.b", Value: map[string]any{"x": 1}}},
		{name: "a valid set without value passes", spec: S{Type: "set", Field: "a"}},
		{name: "a valid rename passes", spec: S{Type: "rename", Field: "a", To: "b", When: &C{Field: "a", Exists: ptr(true)}}},
		{name: "a valid remove passes", spec: S{Type: "remove", Field: "a", Name: "strip"}},
		{name: "a valid header passes", spec: S{Type: "header", Header: "h", Value: 3}},
		{name: "a valid header with an empty string passes", spec: S{Type: "header", Header: "h", Value: ""}},
		{name: "a valid filter passes", spec: S{Type: "filter", Action: "keep", When: &C{Header: "h", In: []string{"a"}}}},
		{name: "a valid route passes", spec: S{Type: "route", Field: "c", Routes: map[string]string{"a": "t"}, Default: "d"}},
		{name: "a valid fail passes", spec: S{Type: "fail", Kind: "permanent", Reason: "r", When: &C{Field: "id", Modulo: 500}}},
		{name: "a valid delay passes", spec: S{Type: "delay", Duration: time.Second, When: &C{MinDeliveryCount: 2, MaxDeliveryCount: 3}}},

		{name: "a missing type lists the known types",
			spec: S{},
			want: []transform.FieldError{fe("type", "required: one of "+knownTypes)}},
		{name: "an unknown type lists the known types and still checks when",
			spec: S{Type: "sett", Field: "a", When: &C{Modulo: -1}},
			want: []transform.FieldError{
				fe("type", `unknown type "sett"; expected one of `+knownTypes),
				fe("when", "equals, in, exists and modulo need a field or header to test"),
				fe("when.modulo", "must be > 0, got -1"),
			}},
		{name: "set without field reports it required",
			spec: S{Type: "set", Value: 1},
			want: []transform.FieldError{fe("field", "required: a dotted path into the JSON value, e.g. order.id")}},
		{name: "set reports fields it does not use",
			spec: S{Type: "set", Field: "a", To: "b", Header: "h", Routes: map[string]string{}, Duration: time.Second},
			want: []transform.FieldError{
				fe("to", "not used by type set"),
				fe("header", "not used by type set"),
				fe("routes", "not used by type set"),
				fe("duration", "not used by type set"),
			}},
		{name: "set reports a value JSON cannot encode",
			spec: S{Type: "set", Field: "a", Value: math.NaN()},
			want: []transform.FieldError{fe("value", "cannot be encoded as JSON: json: unsupported value: NaN")}},
		{name: "set reports a dotted path with an empty segment",
			spec: S{Type: "set", Field: "a..b"},
			want: []transform.FieldError{fe("field", `invalid dotted path "a..b": empty segment; expected e.g. order.id`)}},
		{name: "rename reports both paths required",
			spec: S{Type: "rename"},
			want: []transform.FieldError{
				fe("field", "required: a dotted path into the JSON value, e.g. order.id"),
				fe("to", "required: the dotted path to move the field to"),
			}},
		{name: "rename to the same path is reported",
			spec: S{Type: "rename", Field: "a", To: "a"},
			want: []transform.FieldError{fe("to", "must differ from field")}},
		{name: "header reports name and value required",
			spec: S{Type: "header"},
			want: []transform.FieldError{
				fe("header", "required: the header name"),
				fe("value", "required: the header value (string, number or bool), or expr"),
			}},
		{name: "header reports a value that is not a scalar",
			spec: S{Type: "header", Header: "h", Value: []any{1}},
			want: []transform.FieldError{fe("value", "must be a string, number or bool, got a list")}},
		{name: "filter reports when required and a bad action",
			spec: S{Type: "filter", Action: "delete"},
			want: []transform.FieldError{
				fe("when", "required: a condition selecting the records"),
				fe("action", `must be drop or keep, got "delete"`),
			}},
		{name: "route reports empty routes as missing",
			spec: S{Type: "route", Field: "c", Routes: map[string]string{}},
			want: []transform.FieldError{fe("routes", "required: at least one value: topic entry")}},
		{name: "fail reports a bad kind",
			spec: S{Type: "fail", Kind: "later", When: &C{MaxDeliveryCount: 1}},
			want: []transform.FieldError{fe("kind", `must be retry or permanent, got "later"`)}},
		{name: "delay reports a zero duration as missing",
			spec: S{Type: "delay"},
			want: []transform.FieldError{fe("duration", "required: a duration > 0, e.g. 100ms")}},
		{name: "delay reports a negative duration",
			spec: S{Type: "delay", Duration: -time.Second},
			want: []transform.FieldError{fe("duration", "must be > 0, got -1s")}},

		{name: "a condition with both field and header is reported",
			spec: S{Type: "filter", When: &C{Field: "a", Header: "b", Exists: ptr(true)}},
			want: []transform.FieldError{fe("when.header", "cannot be combined with field; set only one of them")}},
		{name: "a condition with value tests but no field or header is reported",
			spec: S{Type: "filter", When: &C{Equals: ptr("x"), MaxDeliveryCount: 1}},
			want: []transform.FieldError{fe("when", "equals, in, exists and modulo need a field or header to test")}},
		{name: "a condition field without a test is reported",
			spec: S{Type: "filter", When: &C{Field: "a", MaxDeliveryCount: 1}},
			want: []transform.FieldError{fe("when.field", "has no test; add equals, in, exists or modulo")}},
		{name: "an empty condition is reported",
			spec: S{Type: "filter", When: &C{}},
			want: []transform.FieldError{fe("when", "empty condition; set a field or header with a test, an expr, or max/min_delivery_count")}},
		{name: "an empty in list is reported",
			spec: S{Type: "filter", When: &C{Header: "h", In: []string{}}},
			want: []transform.FieldError{fe("when.in", "must list at least one value")}},
		{name: "exists false with a value test is reported",
			spec: S{Type: "filter", When: &C{Field: "a", Exists: ptr(false), Equals: ptr("x")}},
			want: []transform.FieldError{fe("when.exists", "false never matches together with equals, in or modulo")}},
		{name: "a remainder without modulo is reported",
			spec: S{Type: "filter", When: &C{Field: "a", Remainder: 2}},
			want: []transform.FieldError{fe("when.remainder", "needs modulo")}},
		{name: "a remainder not below modulo is reported",
			spec: S{Type: "filter", When: &C{Field: "a", Modulo: 7, Remainder: 7}},
			want: []transform.FieldError{fe("when.remainder", "must be less than modulo (7), got 7")}},
		{name: "a negative remainder is reported",
			spec: S{Type: "filter", When: &C{Field: "a", Modulo: 7, Remainder: -1}},
			want: []transform.FieldError{fe("when.remainder", "must be >= 0, got -1")}},
		{name: "negative delivery counts are reported",
			spec: S{Type: "filter", When: &C{MaxDeliveryCount: -1, MinDeliveryCount: -2}},
			want: []transform.FieldError{
				fe("when.max_delivery_count", "must be >= 1, got -1"),
				fe("when.min_delivery_count", "must be >= 1, got -2"),
			}},

		{name: "Validate reports every problem of a bad spec in order",
			spec: S{Type: "rename", Value: 1, Action: "drop", Kind: "x", Duration: -1,
				When: &C{Field: "a", Header: "b", Modulo: -1, Remainder: 3, MaxDeliveryCount: 1, MinDeliveryCount: 2}},
			want: []transform.FieldError{
				fe("field", "required: a dotted path into the JSON value, e.g. order.id"),
				fe("to", "required: the dotted path to move the field to"),
				fe("value", "not used by type rename"),
				fe("action", "not used by type rename"),
				fe("kind", "not used by type rename"),
				fe("duration", "not used by type rename"),
				fe("when.header", "cannot be combined with field; set only one of them"),
				fe("when.modulo", "must be > 0, got -1"),
				fe("when.max_delivery_count", "must be >= min_delivery_count (2), got 1"),
			}},
		{name: "Validate reports value problems after required and unused fields",
			spec: S{Type: "fail", Action: "keep", Kind: "soon", When: &C{Field: "x..y", Modulo: 3, Remainder: 5}},
			want: []transform.FieldError{
				fe("action", "not used by type fail"),
				fe("kind", `must be retry or permanent, got "soon"`),
				fe("when.field", `invalid dotted path "x..y": empty segment; expected e.g. order.id`),
				fe("when.remainder", "must be less than modulo (3), got 5"),
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := tt.spec.Validate()
			if !slices.Equal(got, tt.want) {
				t.Fatalf("Validate:\n got %q\nwant %q", got, tt.want)
			}
			// Deterministic: the same spec gives the same list.
			if again := tt.spec.Validate(); !slices.Equal(again, got) {
				t.Fatalf("second Validate differs: %q", again)
			}
		})
	}
}

func TestBuild(t *testing.T) {
	t.Run("build reports the problems of every spec with transforms[i] paths", func(t *testing.T) {
		_, err := transform.Build([]transform.Spec{
			{Type: "set", Field: "a"},
			{Type: "nope"},
			{Type: "filter", When: &transform.Condition{Field: "a", Modulo: 2, Remainder: 2}},
		})
		var ve *transform.ValidationError
		if !errors.As(err, &ve) {
			t.Fatalf("error %v is not a *ValidationError", err)
		}
		want := []transform.FieldError{
			fe("transforms[1].type", `unknown type "nope"; expected one of `+knownTypes),
			fe("transforms[2].when.remainder", "must be less than modulo (2), got 2"),
		}
		if !slices.Equal(ve.Errors, want) {
			t.Fatalf("errors:\n got %q\nwant %q", ve.Errors, want)
		}
		wantMsg := `invalid transforms (2 problems): transforms[1].type: unknown type "nope"; expected one of ` + knownTypes +
			`; transforms[2].when.remainder: must be less than modulo (2), got 2`
		if err.Error() != wantMsg {
			t.Fatalf("message:\n got %s\nwant %s", err, wantMsg)
		}
	})

	failWhen := &transform.Condition{Field: "id", Exists: ptr(true)}
	tests := []struct {
		name  string
		specs []transform.Spec
		want  string
	}{
		{name: "build names steps by 0-based index and type",
			specs: []transform.Spec{{Type: "set", Field: "x", Value: 1}, {Type: "fail", When: failWhen}},
			want:  "1:fail"},
		{name: "build names steps by their name when set",
			specs: []transform.Spec{{Type: "set", Field: "x", Value: 1}, {Type: "fail", Name: "reject-ids", When: failWhen}},
			want:  "reject-ids"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := mustBuild(t, tt.specs...)
			if c.Len() != len(tt.specs) {
				t.Fatalf("Len = %d, want %d", c.Len(), len(tt.specs))
			}
			_, err := c.Apply(bg, rec(`{"id":1}`))
			checkErr(t, err, &wantErr{kind: transform.KindRetry, class: "fail", step: tt.want})
		})
	}

	t.Run("build of no specs passes records through", func(t *testing.T) {
		c := mustBuild(t)
		r := rec(`x`)
		out, err := c.Apply(bg, r)
		if err != nil || len(out) != 1 || out[0] != r {
			t.Fatalf("got %v, %v", out, err)
		}
	})

	t.Run("a type added to Registry is known to Validate and Build", func(t *testing.T) {
		transform.Registry["upper"] = func(transform.Spec, transform.Options) (transform.Transform, error) {
			return transform.Func(func(_ context.Context, r *transform.Record) ([]*transform.Record, error) {
				r.Value = []byte("UP")
				return []*transform.Record{r}, nil
			}), nil
		}
		defer delete(transform.Registry, "upper")
		if errs := (transform.Spec{Type: "upper", Field: "whatever"}).Validate(); errs != nil {
			t.Fatalf("Validate: %q", errs)
		}
		out, err := mustBuild(t, transform.Spec{Type: "upper"}).Apply(bg, rec(`x`))
		if err != nil || string(out[0].Value) != "UP" {
			t.Fatalf("got %q, %v", values(out), err)
		}
	})
}
