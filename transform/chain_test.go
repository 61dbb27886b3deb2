package transform_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/sharerelay/sharerelay/transform"
)

// split fans a record out into itself and a clone marked "copy".
var split = transform.Func(func(_ context.Context, r *transform.Record) ([]*transform.Record, error) {
	c := r.Clone()
	c.Value = []byte(`{"copy":true}`)
	return []*transform.Record{r, c}, nil
})

// explode panics on values containing "boom".
var explode = transform.Func(func(_ context.Context, r *transform.Record) ([]*transform.Record, error) {
	if strings.Contains(string(r.Value), "boom") {
		panic("kaboom")
	}
	return []*transform.Record{r}, nil
})

func TestChain(t *testing.T) {
	set := mustStep(t, transform.Spec{Type: "set", Field: "seen", Value: true})
	dropCopies := mustStep(t, transform.Spec{Type: "filter", When: &transform.Condition{Field: "copy", Exists: ptr(true)}})
	tag := mustStep(t, transform.Spec{Type: "header", Header: "via", Value: "relay"})

	tests := []struct {
		name  string
		chain *transform.Chain
		in    string
		want  []string
		err   *wantErr
	}{
		{name: "a fan-out feeds every record to the next step",
			chain: transform.NewChain().Add("split", split).Add("set", set),
			in:    `{"a":1}`, want: []string{`{"a":1,"seen":true}`, `{"copy":true,"seen":true}`}},
		{name: "a filter after a fan-out ends only its branch",
			chain: transform.NewChain().Add("split", split).Add("drop", dropCopies).Add("set", set),
			in:    `{"a":1}`, want: []string{`{"a":1,"seen":true}`}},
		{name: "a filter that drops every branch ends the chain",
			chain: transform.NewChain().Add("drop", mustStep(t, transform.Spec{Type: "filter", When: &transform.Condition{Field: "a", Exists: ptr(true)}})).Add("set", set),
			in:    `{"a":1}`, want: nil},
		{name: "a panicking step becomes a permanent panic error naming the step",
			chain: transform.NewChain().Add("0:set", set).Add("1:explode", explode).Add("2:header", tag),
			in:    `{"v":"boom"}`, err: &wantErr{kind: transform.KindPermanent, class: "panic", step: "1:explode"}},
		{name: "a panic in one branch of a fan-out fails the record",
			chain: transform.NewChain().Add("split", transform.Func(func(ctx context.Context, r *transform.Record) ([]*transform.Record, error) {
				c := r.Clone()
				c.Value = []byte(`{"v":"boom"}`)
				return []*transform.Record{r, c}, nil
			})).Add("explode", explode),
			in: `{"v":"fine"}`, err: &wantErr{kind: transform.KindPermanent, class: "panic", step: "explode"}},
		{name: "an unclassified error is retryable with class error and names the step",
			chain: transform.NewChain().Add("oops", transform.Func(func(context.Context, *transform.Record) ([]*transform.Record, error) {
				return nil, errors.New("oops")
			})),
			in: `{}`, err: &wantErr{kind: transform.KindRetry, class: "error", step: "oops"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, err := tt.chain.Apply(bg, rec(tt.in))
			checkErr(t, err, tt.err)
			if tt.err != nil {
				if out != nil {
					t.Fatalf("got records with an error: %q", values(out))
				}
				return
			}
			if got := values(out); !slices.Equal(got, tt.want) {
				t.Fatalf("values:\n got %q\nwant %q", got, tt.want)
			}
		})
	}
}

func TestChainPanicDoesNotAffectTheNextRecord(t *testing.T) {
	c := transform.NewChain().
		Add("0:set", mustStep(t, transform.Spec{Type: "set", Field: "seen", Value: true})).
		Add("1:explode", explode).
		Add("2:header", mustStep(t, transform.Spec{Type: "header", Header: "via", Value: "relay"}))

	_, err := c.Apply(bg, rec(`{"v":"boom"}`))
	checkErr(t, err, &wantErr{kind: transform.KindPermanent, class: "panic", step: "1:explode"})
	if msg := err.Error(); !strings.Contains(msg, "transform 1:explode: panic: kaboom") {
		t.Fatalf("message %q does not name the step and the panic", msg)
	}

	out, err := c.Apply(bg, rec(`{"v":"fine"}`))
	if err != nil {
		t.Fatalf("next record: %v", err)
	}
	if len(out) != 1 || string(out[0].Value) != `{"seen":true,"v":"fine"}` || len(out[0].Headers) != 1 {
		t.Fatalf("next record: got %q with headers %v", values(out), out[0].Headers)
	}
}

// TestBookNestRules runs the demo's failure rules: orders whose id is a
// multiple of 500 are poison (dead-lettered at once); ids that are a
// multiple of 7 fail on their first delivery only, so the redelivery
// passes.
func TestBookNestRules(t *testing.T) {
	c := mustBuild(t,
		transform.Spec{Type: "fail", Name: "poison-orders", Kind: "permanent", Reason: "poison order",
			When: &transform.Condition{Field: "order_id", Modulo: 500}},
		transform.Spec{Type: "fail", Name: "flaky-orders", Reason: "transient failure",
			When: &transform.Condition{Field: "order_id", Modulo: 7, MaxDeliveryCount: 1}},
		transform.Spec{Type: "set", Field: "processed", Value: true},
	)
	poison := &wantErr{kind: transform.KindPermanent, class: "fail", step: "poison-orders"}
	flaky := &wantErr{kind: transform.KindRetry, class: "fail", step: "flaky-orders"}
	tests := []struct {
		name     string
		value    string
		delivery int32
		err      *wantErr
	}{
		{name: "a multiple of 500 is dead-lettered on its first delivery", value: `{"order_id":1000}`, delivery: 1, err: poison},
		{name: "a multiple of 500 is dead-lettered on any delivery", value: `{"order_id":1000}`, delivery: 3, err: poison},
		{name: "a multiple of 500 and 7 is dead-lettered, not retried", value: `{"order_id":3500}`, delivery: 1, err: poison},
		{name: "a big multiple of 500 is dead-lettered", value: `{"order_id":12345678901234567500}`, delivery: 1, err: poison},
		{name: "a multiple of 7 is retried on its first delivery", value: `{"order_id":14}`, delivery: 1, err: flaky},
		{name: "a multiple of 7 passes on its second delivery", value: `{"order_id":14}`, delivery: 2},
		{name: "another order passes", value: `{"order_id":13}`, delivery: 1},
		{name: "an order without an id passes", value: `{"sku":"b-1"}`, delivery: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, err := c.Apply(bg, recN(tt.value, tt.delivery))
			checkErr(t, err, tt.err)
			if tt.err == nil && (len(out) != 1 || !strings.Contains(string(out[0].Value), `"processed":true`)) {
				t.Fatalf("got %q", values(out))
			}
		})
	}
}

func TestRecordClone(t *testing.T) {
	t.Run("clone copies headers, key and value deeply", func(t *testing.T) {
		r := &transform.Record{Key: []byte("k"), Value: []byte("v"), Headers: []transform.Header{{Key: "h", Value: []byte("x")}}}
		c := r.Clone()
		c.Key[0], c.Value[0], c.Headers[0].Value[0] = 'K', 'V', 'X'
		if string(r.Key) != "k" || string(r.Value) != "v" || string(r.Headers[0].Value) != "x" {
			t.Fatalf("original changed: %+v", r)
		}
	})
	t.Run("clone keeps nil headers nil", func(t *testing.T) {
		if c := (&transform.Record{}).Clone(); c.Headers != nil {
			t.Fatalf("headers = %#v", c.Headers)
		}
	})
}

func mustStep(t testing.TB, s transform.Spec) transform.Transform {
	t.Helper()
	tr, err := transform.Registry[s.Type](s, transform.Options{})
	if err != nil {
		t.Fatalf("%s: %v", s.Type, err)
	}
	return tr
}

func TestBuiltChainIsSafeForConcurrentUse(t *testing.T) {
	c := mustBuild(t,
		transform.Spec{Type: "set", Field: "meta", Value: map[string]any{"src": "relay", "tags": []any{"a"}}},
		transform.Spec{Type: "rename", Field: "id", To: "order.id"},
		transform.Spec{Type: "header", Header: "via", Value: "relay"},
		transform.Spec{Type: "route", Field: "order.id", Routes: map[string]string{"1": "one"}, Default: "other"},
		transform.Spec{Type: "filter", When: &transform.Condition{Field: "order.id", Modulo: 3}},
	)
	done := make(chan error, 8)
	for w := range 8 {
		go func() {
			for i := range 200 {
				r := rec(`{"id":` + string(rune('0'+(w+i)%10)) + `}`)
				if _, err := c.Apply(bg, r); err != nil {
					done <- err
					return
				}
			}
			done <- nil
		}()
	}
	for range 8 {
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
}
