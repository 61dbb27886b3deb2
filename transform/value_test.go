package transform_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/sharerelay/sharerelay/transform"
)

// countingDecoder is JSON that counts its decodes.
type countingDecoder struct{ n int }

func (d *countingDecoder) Decode(ctx context.Context, b []byte) (any, error) {
	d.n++
	return transform.JSON.Decode(ctx, b)
}

// oneFormat reads values with dec and writes every topic's with enc;
// keys as text.
type oneFormat struct {
	dec transform.Decoder
	enc transform.Encoder
}

func (f oneFormat) Source(string) (transform.Decoder, transform.Decoder) {
	return f.dec, transform.Text
}
func (f oneFormat) Output(string) (transform.Encoder, transform.Encoder) {
	return f.enc, transform.Text
}

// countingEncoder is JSON that counts its encodes and never keeps bytes.
type countingEncoder struct{ n int }

func (e *countingEncoder) Encode(ctx context.Context, v any, from transform.Origin) ([]byte, error) {
	e.n++
	return transform.JSON.Encode(ctx, v, from)
}
func (e *countingEncoder) Keep(context.Context, transform.Origin) (bool, error) { return false, nil }

func TestAValueIsDecodedOnceForAllStepsAndEncodedOnceAtTheEnd(t *testing.T) {
	dec, enc := &countingDecoder{}, &countingEncoder{}
	c, err := transform.BuildWith([]transform.Spec{
		{Type: "set", Field: "b", Value: 2},
		{Type: "rename", Field: "a", To: "c"},
		{Type: "filter", Action: "keep", When: &transform.Condition{Expr: "value.b == 2"}},
		{Type: "remove", Field: "b"},
	}, transform.Options{Formats: oneFormat{dec, enc}})
	if err != nil {
		t.Fatal(err)
	}
	outs, err := c.Apply(context.Background(), rec(`{"a":1}`))
	if err != nil {
		t.Fatal(err)
	}
	if got := string(outs[0].Value); got != `{"c":1}` {
		t.Fatalf("value %s", got)
	}
	if dec.n != 1 || enc.n != 1 {
		t.Fatalf("%d decodes and %d encodes, want 1 of each", dec.n, enc.n)
	}
}

func TestAValueNoStepReadsIsNeitherDecodedNorEncoded(t *testing.T) {
	dec, enc := &countingDecoder{}, &countingEncoder{}
	keep := keepingEncoder{enc}
	c, err := transform.BuildWith([]transform.Spec{{Type: "header", Header: "h", Value: "v"}}, transform.Options{Formats: oneFormat{dec, keep}})
	if err != nil {
		t.Fatal(err)
	}
	in := `not json at all`
	outs, err := c.Apply(context.Background(), rec(in))
	if err != nil || string(outs[0].Value) != in {
		t.Fatalf("%v, %d outputs", err, len(outs))
	}
	if dec.n != 0 || enc.n != 0 {
		t.Fatalf("%d decodes and %d encodes of a value no step read", dec.n, enc.n)
	}
}

// keepingEncoder keeps every value it is offered unchanged.
type keepingEncoder struct{ *countingEncoder }

func (keepingEncoder) Keep(context.Context, transform.Origin) (bool, error) { return true, nil }

func TestAFanOutGivesEachRecordATreeOfItsOwn(t *testing.T) {
	c := mustBuild(t,
		// Decoded before the copy: the copy must not share its tree.
		transform.Spec{Type: "filter", Action: "keep", When: &transform.Condition{Expr: `value.n == 1`}},
		transform.Spec{Type: "copy", Topics: []string{"b"}},
		transform.Spec{Type: "set", Field: "x.y", Value: "b", When: &transform.Condition{Expr: `value.n == 1`}},
		transform.Spec{Type: "split", Field: "items", To: "item"},
		transform.Spec{Type: "set", Field: "item.seen", Value: true},
	)
	outs, err := c.Apply(context.Background(), rec(`{"n":1,"items":[{"k":1},{"k":2}]}`))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, o := range outs {
		got = append(got, string(o.Value))
	}
	want := []string{
		`{"item":{"k":1,"seen":true},"n":1,"x":{"y":"b"}}`, `{"item":{"k":2,"seen":true},"n":1,"x":{"y":"b"}}`,
		`{"item":{"k":1,"seen":true},"n":1,"x":{"y":"b"}}`, `{"item":{"k":2,"seen":true},"n":1,"x":{"y":"b"}}`,
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func TestTheKeyStepSetsTheKeyFromAFieldOrAnExpressionOrRemovesIt(t *testing.T) {
	tests := []struct {
		name string
		spec transform.Spec
		key  []byte
		want string // "<nil>" for no key
		err  *wantErr
	}{
		{"a number field becomes its digits", transform.Spec{Type: "key", Field: "id"}, []byte("old"), "42", nil},
		{"a string field becomes itself", transform.Spec{Type: "key", Field: "c.name"}, nil, "ada", nil},
		{"an object becomes its JSON", transform.Spec{Type: "key", Field: "c"}, nil, `{"name":"ada"}`, nil},
		{"an expression's result", transform.Spec{Type: "key", Expr: `value.c.name + "/" + string(int(value.id))`}, nil, "ada/42", nil},
		{"null from an expression is no key", transform.Spec{Type: "key", Expr: `null`}, []byte("old"), "<nil>", nil},
		{"action remove leaves no key", transform.Spec{Type: "key", Action: "remove"}, []byte("old"), "<nil>", nil},
		{"a missing field fails the record", transform.Spec{Type: "key", Field: "nope"}, nil, "", &wantErr{kind: transform.KindPermanent, class: "json"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := mustBuild(t, tt.spec, transform.Spec{Type: "set", Field: "k", Expr: "key"})
			r := rec(`{"id":42,"c":{"name":"ada"}}`)
			r.Key = tt.key
			outs, err := c.Apply(context.Background(), r)
			checkErr(t, err, tt.err)
			if tt.err != nil {
				return
			}
			got := "<nil>"
			if outs[0].Key != nil {
				got = string(outs[0].Key)
			}
			if got != tt.want {
				t.Fatalf("key %q, want %q", got, tt.want)
			}
			// Later steps see the new key as text ("" for none).
			wantSeen := tt.want
			if wantSeen == "<nil>" {
				wantSeen = ""
			}
			if !strings.Contains(string(outs[0].Value), `"k":`+quote(wantSeen)) {
				t.Fatalf("a later step saw key %s", outs[0].Value)
			}
		})
	}
}

func quote(s string) string { return `"` + strings.ReplaceAll(s, `"`, `\"`) + `"` }

func TestTheHeaderStepAppendsSetsAndRemoves(t *testing.T) {
	in := func() *transform.Record {
		r := rec(`{"region":"eu","n":7}`)
		r.Headers = []transform.Header{{Key: "a", Value: []byte("1")}, {Key: "b", Value: []byte("2")}, {Key: "a", Value: []byte("3")}}
		return r
	}
	tests := []struct {
		name string
		spec transform.Spec
		want string
	}{
		{"append keeps the others of that name", transform.Spec{Type: "header", Header: "a", Value: "x"}, "a=1 b=2 a=3 a=x"},
		{"set replaces every header of that name", transform.Spec{Type: "header", Header: "a", Value: "x", Action: "set"}, "b=2 a=x"},
		{"remove removes every header of that name", transform.Spec{Type: "header", Header: "a", Action: "remove"}, "b=2"},
		{"an expression gives the value", transform.Spec{Type: "header", Header: "region", Expr: "value.region", Action: "set"}, "a=1 b=2 a=3 region=eu"},
		{"a number from an expression is its text", transform.Spec{Type: "header", Header: "n", Expr: "int(value.n) * 2"}, "a=1 b=2 a=3 n=14"},
		{"set's expression reads the header it replaces", transform.Spec{Type: "header", Header: "b", Expr: `"#" + headers.b`, Action: "set"}, "a=1 a=3 b=#2"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			outs, err := mustBuild(t, tt.spec).Apply(context.Background(), in())
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, h := range outs[0].Headers {
				got = append(got, h.Key+"="+string(h.Value))
			}
			if strings.Join(got, " ") != tt.want {
				t.Fatalf("headers %v, want %s", got, tt.want)
			}
		})
	}
}

func TestOutputsKeepTheSourceTimestampUnlessTheyAreToldOtherwise(t *testing.T) {
	src := time.Date(2024, 5, 1, 10, 0, 0, 0, time.UTC)
	for _, tt := range []struct {
		stamp string
		want  time.Time
	}{
		{"", src},
		{transform.TimestampSource, src},
		{transform.TimestampNow, time.Time{}},
		{`timestamp(value.at)`, time.Date(2023, 1, 2, 3, 4, 5, 0, time.UTC)},
		{`value.n > 1 ? null : timestamp(value.at)`, time.Time{}},
	} {
		t.Run(tt.stamp, func(t *testing.T) {
			c, err := transform.BuildWith([]transform.Spec{{Type: "copy", Topics: []string{"b"}}}, transform.Options{Timestamp: tt.stamp})
			if err != nil {
				t.Fatal(err)
			}
			r := rec(`{"at":"2023-01-02T03:04:05Z","n":2}`)
			r.Source.Timestamp = src
			outs, err := c.Apply(context.Background(), r)
			if err != nil {
				t.Fatal(err)
			}
			for _, o := range outs {
				if !o.Timestamp.Equal(tt.want) {
					t.Fatalf("timestamp %v, want %v", o.Timestamp, tt.want)
				}
			}
		})
	}
	if errs := transform.CheckTimestamp(`value.at`, transform.Options{}); len(errs) != 0 {
		t.Fatalf("a dyn expression is checked when evaluated, got %v", errs)
	}
	if errs := transform.CheckTimestamp(`"2024"`, transform.Options{}); len(errs) != 1 || !strings.Contains(errs[0].Msg, "timestamp") {
		t.Fatalf("a string is no timestamp: %v", errs)
	}
}

// holdingDecoder fails as a registry out of reach does.
type holdingDecoder struct{}

func (holdingDecoder) Decode(context.Context, []byte) (any, error) {
	return nil, transform.Hold("schema-registry", "schema registry unavailable", errors.New("connection refused"))
}

func TestAFailureOutsideTheRecordHoldsItWhateverItsDeliveries(t *testing.T) {
	c, err := transform.BuildWith([]transform.Spec{{Type: "filter", When: &transform.Condition{Expr: "value.a == 1"}}},
		transform.Options{Formats: oneFormat{holdingDecoder{}, transform.JSON}})
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.Apply(context.Background(), rec(`{}`))
	for _, dc := range []int32{1, 5, 99} {
		d := transform.Decide(err, dc, 3)
		if !d.Hold || d.Release || d.Exhausted || d.Err.Reason != "schema registry unavailable" {
			t.Fatalf("delivery %d: %+v, want a hold", dc, d)
		}
	}
}

func TestAChainWithoutStepsOrFormatsCopiesAsIs(t *testing.T) {
	if ok, now := transform.NewChain().CopiesAsIs(); !ok || now {
		t.Fatalf("an empty chain: copies as is %v, now %v", ok, now)
	}
	c, _ := transform.BuildWith(nil, transform.Options{Timestamp: transform.TimestampNow})
	if ok, now := c.CopiesAsIs(); !ok || !now {
		t.Fatalf("an empty chain writing the time of writing: %v %v", ok, now)
	}
	c, _ = transform.BuildWith(nil, transform.Options{Formats: oneFormat{transform.JSON, transform.JSON}})
	if ok, _ := c.CopiesAsIs(); ok {
		t.Fatal("a chain with formats may change what it writes")
	}
}

// jsonKeys reads and writes values and keys as JSON.
type jsonKeys struct{}

func (jsonKeys) Source(string) (transform.Decoder, transform.Decoder) {
	return transform.JSON, transform.JSON
}
func (jsonKeys) Output(string) (transform.Encoder, transform.Encoder) {
	return transform.JSON, transform.JSON
}

func TestAStructuredKeyIsAValueToExpressionsAndKeySteps(t *testing.T) {
	o := transform.Options{Formats: jsonKeys{}, StructuredKeys: true}
	c, err := transform.BuildWith([]transform.Spec{
		{Type: "filter", Action: "keep", When: &transform.Condition{Expr: `key.region == "eu"`}},
		{Type: "key", Expr: `{"region": key.region, "id": value.id}`},
	}, o)
	if err != nil {
		t.Fatal(err)
	}
	r := rec(`{"id": 7}`)
	r.Key = []byte(`{"region": "eu"}`)
	outs, err := c.Apply(context.Background(), r)
	if err != nil || len(outs) != 1 {
		t.Fatalf("%d outputs, %v", len(outs), err)
	}
	if got := string(outs[0].Key); got != `{"id":7,"region":"eu"}` {
		t.Fatalf("key %s", got)
	}
	// With text keys (the default) the same expression does not compile:
	// key is a string.
	if _, err := transform.Build([]transform.Spec{{Type: "filter", When: &transform.Condition{Expr: `key.region == "eu"`}}}); err == nil {
		t.Fatal("key.region compiled with text keys")
	}
}
