package transform_test

import (
	"testing"

	"github.com/sharerelay/sharerelay/transform"
)

func TestConditionMatch(t *testing.T) {
	hdr := func(r *transform.Record, kv ...string) *transform.Record {
		for i := 0; i < len(kv); i += 2 {
			r.Headers = append(r.Headers, transform.Header{Key: kv[i], Value: []byte(kv[i+1])})
		}
		return r
	}
	type C = transform.Condition
	tests := []struct {
		name string
		cond *C
		in   *transform.Record
		want bool
		err  *wantErr
	}{
		{name: "a nil condition matches every record", cond: nil, in: rec(`garbage`), want: true},
		{name: "equals compares a string without quotes", cond: &C{Field: "s", Equals: ptr("abc")}, in: rec(`{"s":"abc"}`), want: true},
		{name: "equals does not match a different string", cond: &C{Field: "s", Equals: ptr("abc")}, in: rec(`{"s":"abd"}`), want: false},
		{name: "equals compares a number as written", cond: &C{Field: "n", Equals: ptr("1.0")}, in: rec(`{"n":1.0}`), want: true},
		{name: "equals does not treat 1.0 as 1", cond: &C{Field: "n", Equals: ptr("1")}, in: rec(`{"n":1.0}`), want: false},
		{name: "equals compares a big integer exactly", cond: &C{Field: "id", Equals: ptr("12345678901234567890")}, in: rec(`{"id":12345678901234567890}`), want: true},
		{name: "equals matches true", cond: &C{Field: "b", Equals: ptr("true")}, in: rec(`{"b":true}`), want: true},
		{name: "equals matches null", cond: &C{Field: "x", Equals: ptr("null")}, in: rec(`{"x":null}`), want: true},
		{name: "equals compares an object as compact JSON with sorted keys", cond: &C{Field: "o", Equals: ptr(`{"a":1,"b":[2]}`)}, in: rec(`{"o":{ "b":[2], "a":1 }}`), want: true},
		{name: "equals follows a dotted path", cond: &C{Field: "a.b.c", Equals: ptr("x")}, in: rec(`{"a":{"b":{"c":"x"}}}`), want: true},
		{name: "equals fails on a missing field", cond: &C{Field: "a", Equals: ptr("")}, in: rec(`{}`), want: false},
		{name: "a path through a scalar counts as missing", cond: &C{Field: "a.b", Exists: ptr(false)}, in: rec(`{"a":"str"}`), want: true},
		{name: "in matches one of the values", cond: &C{Field: "c", In: []string{"FR", "DE"}}, in: rec(`{"c":"DE"}`), want: true},
		{name: "in does not match other values", cond: &C{Field: "c", In: []string{"FR", "DE"}}, in: rec(`{"c":"IT"}`), want: false},
		{name: "exists true matches a present field", cond: &C{Field: "a", Exists: ptr(true)}, in: rec(`{"a":0}`), want: true},
		{name: "exists true matches a null field", cond: &C{Field: "a", Exists: ptr(true)}, in: rec(`{"a":null}`), want: true},
		{name: "exists true does not match a missing field", cond: &C{Field: "a", Exists: ptr(true)}, in: rec(`{}`), want: false},
		{name: "exists false matches a missing field", cond: &C{Field: "a", Exists: ptr(false)}, in: rec(`{}`), want: true},
		{name: "modulo matches an integer with remainder zero", cond: &C{Field: "id", Modulo: 500}, in: rec(`{"id":1500}`), want: true},
		{name: "modulo does not match another remainder", cond: &C{Field: "id", Modulo: 500}, in: rec(`{"id":1501}`), want: false},
		{name: "modulo with remainder matches", cond: &C{Field: "id", Modulo: 7, Remainder: 3}, in: rec(`{"id":10}`), want: true},
		{name: "modulo of a negative integer is Euclidean", cond: &C{Field: "id", Modulo: 7, Remainder: 6}, in: rec(`{"id":-1}`), want: true},
		{name: "modulo works on integers beyond 64 bits", cond: &C{Field: "id", Modulo: 500, Remainder: 390}, in: rec(`{"id":12345678901234567890}`), want: true},
		{name: "modulo works on negative integers beyond 64 bits", cond: &C{Field: "id", Modulo: 500, Remainder: 110}, in: rec(`{"id":-12345678901234567890}`), want: true},
		{name: "a modulo near the int64 limit is computed exactly", cond: &C{Field: "id", Modulo: 1 << 62, Remainder: 5}, in: rec(`{"id":4611686018427387909}`), want: true},
		{name: "a modulo near the int64 limit is Euclidean for negative integers", cond: &C{Field: "id", Modulo: 1 << 62, Remainder: 1<<62 - 5}, in: rec(`{"id":-4611686018427387909}`), want: true},
		{name: "a modulo near the int64 limit works on integers beyond 64 bits", cond: &C{Field: "id", Modulo: 1 << 62, Remainder: 1}, in: rec(`{"id":18446744073709551617}`), want: true},
		{name: "modulo accepts a string of digits", cond: &C{Field: "id", Modulo: 7}, in: rec(`{"id":"14"}`), want: true},
		{name: "modulo does not match a fraction", cond: &C{Field: "id", Modulo: 7}, in: rec(`{"id":14.0}`), want: false},
		{name: "modulo does not match an exponent", cond: &C{Field: "id", Modulo: 7}, in: rec(`{"id":1.4e1}`), want: false},
		{name: "modulo does not match a bool", cond: &C{Field: "id", Modulo: 1}, in: rec(`{"id":true}`), want: false},
		{name: "modulo does not match a missing field", cond: &C{Field: "id", Modulo: 1}, in: rec(`{}`), want: false},
		{name: "header equals compares the last header of that name", cond: &C{Header: "v", Equals: ptr("2")}, in: hdr(rec(`raw`), "v", "1", "v", "2"), want: true},
		{name: "header exists false matches a missing header", cond: &C{Header: "v", Exists: ptr(false)}, in: hdr(rec(`raw`), "w", "1"), want: true},
		{name: "header modulo parses the header text", cond: &C{Header: "n", Modulo: 2, Remainder: 1}, in: hdr(rec(`raw`), "n", "41"), want: true},
		{name: "header modulo does not match non-digits", cond: &C{Header: "n", Modulo: 2}, in: hdr(rec(`raw`), "n", "+4"), want: false},
		{name: "max delivery count matches up to the limit", cond: &C{MaxDeliveryCount: 2}, in: recN(`raw`, 2), want: true},
		{name: "max delivery count does not match beyond the limit", cond: &C{MaxDeliveryCount: 2}, in: recN(`raw`, 3), want: false},
		{name: "min delivery count matches from the limit", cond: &C{MinDeliveryCount: 3}, in: recN(`raw`, 3), want: true},
		{name: "min delivery count does not match below the limit", cond: &C{MinDeliveryCount: 3}, in: recN(`raw`, 2), want: false},
		{name: "all predicates must hold", cond: &C{Field: "id", Equals: ptr("14"), Modulo: 5}, in: rec(`{"id":14}`), want: false},
		{name: "all predicates holding match", cond: &C{Field: "id", In: []string{"14", "15"}, Modulo: 7, MaxDeliveryCount: 1}, in: rec(`{"id":14}`), want: true},
		{name: "a field condition on a value that is not JSON is a permanent json error",
			cond: &C{Field: "id", Equals: ptr("1")}, in: rec(`id=1`), err: &wantErr{kind: transform.KindPermanent, class: "json"}},
		{name: "a field condition on a value that is not JSON errs whatever the delivery count",
			cond: &C{Field: "id", Exists: ptr(true), MaxDeliveryCount: 1}, in: recN(`id=1`, 5), err: &wantErr{kind: transform.KindPermanent, class: "json"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := tt.cond.Match(tt.in)
			checkErr(t, err, tt.err)
			if tt.err == nil && got != tt.want {
				t.Fatalf("Match = %v, want %v", got, tt.want)
			}
		})
	}
}
