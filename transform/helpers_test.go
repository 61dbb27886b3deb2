package transform_test

import (
	"context"
	"errors"
	"testing"

	"github.com/sharerelay/sharerelay/transform"
)

func ptr[T any](v T) *T { return &v }

// rec is a record with a JSON (or any) value, delivered for the first time.
func rec(value string) *transform.Record {
	return &transform.Record{Value: []byte(value), Source: transform.Source{Topic: "in", DeliveryCount: 1}}
}

// recN is rec with the given delivery count.
func recN(value string, deliveryCount int32) *transform.Record {
	r := rec(value)
	r.Source.DeliveryCount = deliveryCount
	return r
}

func mustBuild(t testing.TB, specs ...transform.Spec) *transform.Chain {
	t.Helper()
	c, err := transform.Build(specs)
	if err != nil {
		t.Fatalf("Build: %v", err)
	}
	return c
}

// wantErr describes an expected classified error; the zero value means
// "no error".
type wantErr struct {
	kind  transform.Kind
	class string
	step  string // checked when not empty
}

func checkErr(t *testing.T, err error, want *wantErr) {
	t.Helper()
	if want == nil {
		if err != nil {
			t.Fatalf("unexpected error: %v", err)
		}
		return
	}
	if err == nil {
		t.Fatalf("got no error, want %s error of class %q", want.kind, want.class)
	}
	var e *transform.Error
	if !errors.As(err, &e) {
		t.Fatalf("error %v (%T) is not a *transform.Error", err, err)
	}
	if e.Kind != want.kind || e.Class != want.class {
		t.Fatalf("got %s error of class %q (%v), want %s of class %q", e.Kind, e.Class, err, want.kind, want.class)
	}
	if want.step != "" && e.Step != want.step {
		t.Fatalf("got step %q, want %q", e.Step, want.step)
	}
}

func values(out []*transform.Record) []string {
	var vs []string
	for _, r := range out {
		vs = append(vs, string(r.Value))
	}
	return vs
}

var bg = context.Background()
