package format

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/big"
	"os"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hamba/avro/v2"

	"github.com/sharerelay/sharerelay/transform"
)

// avroNative writes the bytes the tests decode: hamba's encoder, from Go
// structs, a path that shares no code with encodeAvro. It writes a
// block's count without its size in bytes, as encodeAvro (and Java) do,
// so that encodeAvro's output can be compared byte for byte.
var avroNative = avro.Config{DisableBlockSizeHeader: true}.Freeze()

// avroParsed parses a schema (with refs) or fails the test.
func avroParsed(t testing.TB, text string, refs ...string) avro.Schema {
	t.Helper()
	s, err := parseAvro(text, refs)
	if err != nil {
		t.Fatalf("parseAvro: %v", err)
	}
	return s
}

// avroBox is a record of one field, v: the native Go value of one Avro
// type, for hamba to write.
type avroBox[T any] struct {
	V T `avro:"v"`
}

// avroBoxSchema is the schema of a record test.Box whose field v is typ.
func avroBoxSchema(typ string) string {
	return `{"type":"record","name":"Box","namespace":"test","fields":[{"name":"v","type":` + typ + `}]}`
}

// avroNativeBytes writes native with hamba.
func avroNativeBytes(t testing.TB, s avro.Schema, native any) []byte {
	t.Helper()
	b, err := avroNative.Marshal(s, native)
	if err != nil {
		t.Fatalf("hamba cannot write %#v: %v", native, err)
	}
	return b
}

// avroDiff lists where got differs from want, types included: int64 is
// not int, []any{} is not nil; times are equal instants in UTC.
func avroDiff(path string, got, want any) []string {
	switch w := want.(type) {
	case map[string]any:
		g, ok := got.(map[string]any)
		if !ok {
			return []string{fmt.Sprintf("%s: got %T %v, want a map", path, got, got)}
		}
		keys := make([]string, 0, len(g)+len(w))
		for k := range g {
			keys = append(keys, k)
		}
		for k := range w {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		var out []string
		for _, k := range slices.Compact(keys) {
			gv, gok := g[k]
			wv, wok := w[k]
			switch {
			case !gok:
				out = append(out, fmt.Sprintf("%s: missing", join(path, k)))
			case !wok:
				out = append(out, fmt.Sprintf("%s: unexpected %T %v", join(path, k), gv, gv))
			default:
				out = append(out, avroDiff(join(path, k), gv, wv)...)
			}
		}
		return out
	case []any:
		g, ok := got.([]any)
		if !ok || g == nil {
			return []string{fmt.Sprintf("%s: got %T %v, want a non-nil []any", path, got, got)}
		}
		if len(g) != len(w) {
			return []string{fmt.Sprintf("%s: got %d items, want %d", path, len(g), len(w))}
		}
		var out []string
		for i := range w {
			out = append(out, avroDiff(join(path, elem(i)), g[i], w[i])...)
		}
		return out
	case time.Time:
		g, ok := got.(time.Time)
		if !ok || !g.Equal(w) || g.Location() != time.UTC {
			return []string{fmt.Sprintf("%s: got %T %v, want %v in UTC", path, got, got, w)}
		}
		return nil
	}
	if !reflect.DeepEqual(got, want) {
		return []string{fmt.Sprintf("%s: got %T %#v, want %T %#v", path, got, got, want, want)}
	}
	return nil
}

// avroCheckTree fails the test where got differs from want.
func avroCheckTree(t testing.TB, got, want any) {
	t.Helper()
	for _, d := range avroDiff("", got, want) {
		t.Error(d)
	}
}

// avroDataError returns err as a *DataError or fails the test.
func avroDataError(t testing.TB, err error) *DataError {
	t.Helper()
	var de *DataError
	if !errors.As(err, &de) {
		t.Fatalf("error %v (%T) is not a *DataError", err, err)
	}
	return de
}

func TestDecodeAvroRoundTripsEveryType(t *testing.T) {
	fixedDecimal := `{"type":"fixed","name":"Money","size":8,"logicalType":"decimal","precision":12,"scale":2}`
	cases := []struct {
		name   string
		typ    string // the schema of the box's field v
		native any    // what hamba writes
		want   any    // the tree of v
	}{
		{"null decodes to nil", `"null"`, avroBox[*int]{}, nil},
		{"a boolean decodes to bool", `"boolean"`, avroBox[bool]{true}, true},
		{"an int decodes to int64", `"int"`, avroBox[int32]{-42}, int64(-42)},
		{"the smallest int decodes to int64", `"int"`, avroBox[int32]{math.MinInt32}, int64(math.MinInt32)},
		{"a long decodes to int64", `"long"`, avroBox[int64]{math.MaxInt64}, int64(math.MaxInt64)},
		{"a float decodes to its exact double value", `"float"`, avroBox[float32]{0.1}, float64(float32(0.1))},
		{"a double decodes to float64", `"double"`, avroBox[float64]{-2.5e-300}, -2.5e-300},
		{"a string decodes to string", `"string"`, avroBox[string]{"héllo"}, "héllo"},
		{"an empty string decodes to the empty string", `"string"`, avroBox[string]{""}, ""},
		{"bytes decode to []byte", `"bytes"`, avroBox[[]byte]{[]byte{0, 1, 255}}, []byte{0, 1, 255}},
		{"empty bytes decode to empty non-nil bytes", `"bytes"`, avroBox[[]byte]{[]byte{}}, []byte{}},
		{"an enum decodes to its symbol", `{"type":"enum","name":"Color","symbols":["RED","GREEN","BLUE"]}`,
			avroBox[string]{"GREEN"}, "GREEN"},
		{"a fixed decodes to its bytes", `{"type":"fixed","name":"Hash","size":4}`,
			avroBox[[4]byte]{[4]byte{0xde, 0xad, 0xbe, 0xef}}, []byte{0xde, 0xad, 0xbe, 0xef}},
		{"a uuid decodes to its text", `{"type":"string","logicalType":"uuid"}`,
			avroBox[string]{"0b5e3a8e-6f1c-4d2a-9b7e-3c2d1e0f9a8b"}, "0b5e3a8e-6f1c-4d2a-9b7e-3c2d1e0f9a8b"},
		{"a decimal on bytes decodes to its text with scale decimal places",
			`{"type":"bytes","logicalType":"decimal","precision":10,"scale":2}`,
			avroBox[*big.Rat]{big.NewRat(1230, 100)}, json.Number("12.30")},
		{"a negative decimal on bytes keeps its leading zero",
			`{"type":"bytes","logicalType":"decimal","precision":10,"scale":2}`,
			avroBox[*big.Rat]{big.NewRat(-5, 100)}, json.Number("-0.05")},
		{"a zero decimal on bytes shows its scale",
			`{"type":"bytes","logicalType":"decimal","precision":10,"scale":2}`,
			avroBox[*big.Rat]{new(big.Rat)}, json.Number("0.00")},
		{"a decimal of scale 0 has no point",
			`{"type":"bytes","logicalType":"decimal","precision":5,"scale":0}`,
			avroBox[*big.Rat]{big.NewRat(7, 1)}, json.Number("7")},
		{"a decimal of more than 8 bytes decodes exactly",
			`{"type":"bytes","logicalType":"decimal","precision":38,"scale":4}`,
			avroBox[*big.Rat]{avroRat("-1234567890123456789012345678.9012")}, json.Number("-1234567890123456789012345678.9012")},
		{"a decimal on fixed decodes to its text", fixedDecimal,
			avroBox[*big.Rat]{big.NewRat(1230, 100)}, json.Number("12.30")},
		{"a negative decimal on fixed decodes to its text", fixedDecimal,
			avroBox[*big.Rat]{big.NewRat(-5, 100)}, json.Number("-0.05")},
		{"a zero decimal on fixed decodes to its text", fixedDecimal,
			avroBox[*big.Rat]{new(big.Rat)}, json.Number("0.00")},
		{"a decimal of scale 0 on fixed decodes to its text",
			`{"type":"fixed","name":"Count","size":4,"logicalType":"decimal","precision":9,"scale":0}`,
			avroBox[*big.Rat]{big.NewRat(-7, 1)}, json.Number("-7")},
		{"a date decodes to midnight UTC", `{"type":"int","logicalType":"date"}`,
			avroBox[time.Time]{time.Date(2024, 2, 29, 0, 0, 0, 0, time.UTC)}, time.Date(2024, 2, 29, 0, 0, 0, 0, time.UTC)},
		{"a date before 1970 decodes to midnight UTC", `{"type":"int","logicalType":"date"}`,
			avroBox[time.Time]{time.Date(1969, 7, 20, 0, 0, 0, 0, time.UTC)}, time.Date(1969, 7, 20, 0, 0, 0, 0, time.UTC)},
		{"a time-millis decodes to the Duration since midnight", `{"type":"int","logicalType":"time-millis"}`,
			avroBox[time.Duration]{13*time.Hour + 45*time.Minute + 30123*time.Millisecond},
			transform.Duration(13*time.Hour + 45*time.Minute + 30123*time.Millisecond)},
		{"a time-micros decodes to the Duration since midnight", `{"type":"long","logicalType":"time-micros"}`,
			avroBox[time.Duration]{24*time.Hour - time.Microsecond}, transform.Duration(24*time.Hour - time.Microsecond)},
		{"a timestamp-millis decodes to a UTC time", `{"type":"long","logicalType":"timestamp-millis"}`,
			avroBox[time.Time]{time.Date(2024, 3, 31, 1, 30, 0, 123e6, time.UTC)}, time.Date(2024, 3, 31, 1, 30, 0, 123e6, time.UTC)},
		{"a timestamp-millis before 1970 decodes to a UTC time", `{"type":"long","logicalType":"timestamp-millis"}`,
			avroBox[time.Time]{time.Date(1969, 12, 31, 23, 59, 59, 999e6, time.UTC)}, time.Date(1969, 12, 31, 23, 59, 59, 999e6, time.UTC)},
		{"a timestamp-micros decodes to a UTC time", `{"type":"long","logicalType":"timestamp-micros"}`,
			avroBox[time.Time]{time.Date(2024, 3, 31, 1, 30, 0, 123456e3, time.UTC)}, time.Date(2024, 3, 31, 1, 30, 0, 123456e3, time.UTC)},
		// hamba would write a local timestamp through the process's time
		// zone: it writes the raw number here, from an int64.
		{"a local-timestamp-millis decodes to its wall clock in UTC", `{"type":"long","logicalType":"local-timestamp-millis"}`,
			avroBox[int64]{time.Date(2024, 3, 31, 2, 30, 0, 5e6, time.UTC).UnixMilli()}, time.Date(2024, 3, 31, 2, 30, 0, 5e6, time.UTC)},
		{"a local-timestamp-micros decodes to its wall clock in UTC", `{"type":"long","logicalType":"local-timestamp-micros"}`,
			avroBox[int64]{time.Date(2024, 10, 27, 2, 30, 0, 5e3, time.UTC).UnixMicro()}, time.Date(2024, 10, 27, 2, 30, 0, 5e3, time.UTC)},
		{"a duration on fixed(12), another logical type, decodes to its bytes",
			`{"type":"fixed","name":"Span","size":12,"logicalType":"duration"}`,
			avroBox[[12]byte]{[12]byte{1, 0, 0, 0, 2, 0, 0, 0, 3, 0, 0, 0}}, []byte{1, 0, 0, 0, 2, 0, 0, 0, 3, 0, 0, 0}},
		{"a logical type hamba does not know decodes as its type", `{"type":"long","logicalType":"timestamp-nanos"}`,
			avroBox[int64]{1700000000123456789}, int64(1700000000123456789)},
		{"nested records decode to nested maps",
			`{"type":"record","name":"Customer","fields":[{"name":"name","type":"string"},
			  {"name":"address","type":{"type":"record","name":"Address","fields":[{"name":"city","type":"string"},{"name":"zip","type":"string"}]}}]}`,
			avroBox[avroNativeCustomer]{avroNativeCustomer{"Ada", avroNativeCity{"London", "NW1"}}},
			map[string]any{"name": "Ada", "address": map[string]any{"city": "London", "zip": "NW1"}}},
		{"an array of records decodes to []any of maps",
			`{"type":"array","items":{"type":"record","name":"Address","fields":[{"name":"city","type":"string"},{"name":"zip","type":"string"}]}}`,
			avroBox[[]avroNativeCity]{[]avroNativeCity{{"London", "NW1"}, {"Paris", "75001"}}},
			[]any{map[string]any{"city": "London", "zip": "NW1"}, map[string]any{"city": "Paris", "zip": "75001"}}},
		{"an empty array decodes to an empty []any", `{"type":"array","items":"long"}`, avroBox[[]int64]{}, []any{}},
		{"an empty map decodes to an empty map", `{"type":"map","values":"long"}`, avroBox[map[string]int64]{}, map[string]any{}},
		{"a map of unions decodes a string branch to its string", `{"type":"map","values":["null","string","long"]}`,
			avroBox[map[string]any]{map[string]any{"gift": "yes"}}, map[string]any{"gift": "yes"}},
		{"a map of unions decodes a long branch to its int64", `{"type":"map","values":["null","string","long"]}`,
			avroBox[map[string]any]{map[string]any{"count": int64(3)}}, map[string]any{"count": int64(3)}},
		{"a map of unions decodes a null branch to nil", `{"type":"map","values":["null","string","long"]}`,
			avroBox[map[string]any]{map[string]any{"none": nil}}, map[string]any{"none": nil}},
		{"a union of two records decodes to the record of the branch written",
			`[{"type":"record","name":"Card","fields":[{"name":"last4","type":"string"}]},
			  {"type":"record","name":"Transfer","fields":[{"name":"iban","type":"string"}]}]`,
			avroBox[map[string]any]{map[string]any{"test.Transfer": map[string]any{"iban": "GB82WEST12345698765432"}}},
			map[string]any{"iban": "GB82WEST12345698765432"}},
		{"a nullable record that is null decodes to nil",
			`["null",{"type":"record","name":"Address","fields":[{"name":"city","type":"string"},{"name":"zip","type":"string"}]}]`,
			avroBox[*avroNativeCity]{}, nil},
		{"a nullable record that is set decodes to its map",
			`["null",{"type":"record","name":"Address","fields":[{"name":"city","type":"string"},{"name":"zip","type":"string"}]}]`,
			avroBox[*avroNativeCity]{&avroNativeCity{"Oslo", "0150"}}, map[string]any{"city": "Oslo", "zip": "0150"}},
		{"a nullable timestamp that is set decodes to its time", `["null",{"type":"long","logicalType":"timestamp-millis"}]`,
			avroBox[*time.Time]{avroPtr(time.Date(2020, 1, 2, 3, 4, 5, 6e6, time.UTC))}, time.Date(2020, 1, 2, 3, 4, 5, 6e6, time.UTC)},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := avroParsed(t, avroBoxSchema(c.typ))
			b := avroNativeBytes(t, s, c.native)
			got, err := decodeAvro(s, nil, b)
			if err != nil {
				t.Fatalf("decodeAvro(% x): %v", b, err)
			}
			avroCheckTree(t, got, map[string]any{"v": c.want})
			again, err := encodeAvro(s, got)
			if err != nil {
				t.Fatalf("encodeAvro(%#v): %v", got, err)
			}
			if !bytes.Equal(again, b) {
				t.Errorf("encodeAvro(decodeAvro(b)) = % x, want b = % x", again, b)
			}
		})
	}
}

// avroRat parses a decimal text into a big.Rat or panics.
func avroRat(s string) *big.Rat {
	r, ok := new(big.Rat).SetString(s)
	if !ok {
		panic(s)
	}
	return r
}

// avroPtr returns a pointer to v.
func avroPtr[T any](v T) *T { return &v }

// avroNativeCity is an Address record, as Go code would write it.
type avroNativeCity struct {
	City string `avro:"city"`
	Zip  string `avro:"zip"`
}

// avroNativeCustomer is a Customer record, as Go code would write it.
type avroNativeCustomer struct {
	Name    string         `avro:"name"`
	Address avroNativeCity `avro:"address"`
}

// avroOrderSchema is an order of a few fields of common types: the record
// of the encoding tests and the benchmarks.
const avroOrderSchema = `{"type":"record","name":"Order","namespace":"com.acme","fields":[
  {"name":"id","type":{"type":"string","logicalType":"uuid"}},
  {"name":"customer","type":"string"},
  {"name":"created","type":{"type":"long","logicalType":"timestamp-millis"}},
  {"name":"status","type":{"type":"enum","name":"Status","symbols":["NEW","PAID","SHIPPED"]}},
  {"name":"currency","type":"string","default":"EUR"},
  {"name":"total","type":{"type":"bytes","logicalType":"decimal","precision":10,"scale":2}},
  {"name":"items","type":{"type":"array","items":{"type":"record","name":"Item","fields":[
    {"name":"sku","type":"string"},
    {"name":"qty","type":"int"},
    {"name":"price","type":{"type":"bytes","logicalType":"decimal","precision":10,"scale":2}}]}}},
  {"name":"shipping","type":["null",{"type":"record","name":"Address","fields":[
    {"name":"street","type":"string"},{"name":"city","type":"string"},
    {"name":"zip","type":"string"},{"name":"country","type":"string"}]}],"default":null},
  {"name":"hash","type":{"type":"fixed","name":"Hash","size":4}},
  {"name":"attrs","type":{"type":"map","values":["null","string","long"]},"default":{}},
  {"name":"payment","type":[
    {"type":"record","name":"Card","fields":[{"name":"last4","type":"string"}]},
    {"type":"record","name":"Transfer","fields":[{"name":"iban","type":"string"},{"name":"ref","type":["null","string"],"default":null}]}]}
]}`

// avroOrderTree is an order as decodeAvro returns it.
func avroOrderTree() map[string]any {
	item := func(sku string, qty int64, price string) map[string]any {
		return map[string]any{"sku": sku, "qty": qty, "price": json.Number(price)}
	}
	return map[string]any{
		"id":       "0b5e3a8e-6f1c-4d2a-9b7e-3c2d1e0f9a8b",
		"customer": "Ada Lovelace",
		"created":  time.Date(2024, 3, 31, 1, 30, 0, 123e6, time.UTC),
		"status":   "PAID",
		"currency": "EUR",
		"total":    json.Number("61.47"),
		"items": []any{
			item("BK-0001", 1, "12.30"),
			item("BK-0002", 2, "19.99"),
			item("BK-0003", 1, "9.19"),
		},
		"shipping": map[string]any{"street": "12 Crescent Road", "city": "London", "zip": "NW1 4", "country": "GB"},
		"hash":     []byte{0xde, 0xad, 0xbe, 0xef},
		"attrs":    map[string]any{"gift": "yes"},
		"payment":  map[string]any{"iban": "GB82WEST12345698765432", "ref": nil},
	}
}

// avroNativeItem is an Item record, as Go code would write it.
type avroNativeItem struct {
	SKU   string   `avro:"sku"`
	Qty   int32    `avro:"qty"`
	Price *big.Rat `avro:"price"`
}

// avroNativeAddress is an Address record, as Go code would write it.
type avroNativeAddress struct {
	Street  string `avro:"street"`
	City    string `avro:"city"`
	Zip     string `avro:"zip"`
	Country string `avro:"country"`
}

// avroNativeOrder is an Order, as Go code would write it.
type avroNativeOrder struct {
	ID       string             `avro:"id"`
	Customer string             `avro:"customer"`
	Created  time.Time          `avro:"created"`
	Status   string             `avro:"status"`
	Currency string             `avro:"currency"`
	Total    *big.Rat           `avro:"total"`
	Items    []avroNativeItem   `avro:"items"`
	Shipping *avroNativeAddress `avro:"shipping"`
	Hash     [4]byte            `avro:"hash"`
	Attrs    map[string]any     `avro:"attrs"`
	Payment  map[string]any     `avro:"payment"` // a union branch by name, as hamba takes it
}

// avroOrderBytes is avroOrderTree written by hamba from Go structs.
func avroOrderBytes(t testing.TB, s avro.Schema) []byte {
	return avroNativeBytes(t, s, avroNativeOrder{
		ID:       "0b5e3a8e-6f1c-4d2a-9b7e-3c2d1e0f9a8b",
		Customer: "Ada Lovelace",
		Created:  time.Date(2024, 3, 31, 1, 30, 0, 123e6, time.UTC),
		Status:   "PAID",
		Currency: "EUR",
		Total:    big.NewRat(6147, 100),
		Items: []avroNativeItem{
			{"BK-0001", 1, big.NewRat(1230, 100)},
			{"BK-0002", 2, big.NewRat(1999, 100)},
			{"BK-0003", 1, big.NewRat(919, 100)},
		},
		Shipping: &avroNativeAddress{"12 Crescent Road", "London", "NW1 4", "GB"},
		Hash:     [4]byte{0xde, 0xad, 0xbe, 0xef},
		Attrs:    map[string]any{"gift": "yes"},
		Payment:  map[string]any{"com.acme.Transfer": map[string]any{"iban": "GB82WEST12345698765432", "ref": nil}},
	})
}

func TestDecodeAvroReadsAnOrderWrittenByHambaAndEncodesItBack(t *testing.T) {
	s := avroParsed(t, avroOrderSchema)
	b := avroOrderBytes(t, s)
	got, err := decodeAvro(s, nil, b)
	if err != nil {
		t.Fatal(err)
	}
	avroCheckTree(t, got, avroOrderTree())
	again, err := encodeAvro(s, got)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(again, b) {
		t.Errorf("encodeAvro(decodeAvro(b)) = % x\nwant b = % x", again, b)
	}
}

func TestDecodeAvroReadsBlocksWithTheirSizeInBytes(t *testing.T) {
	// hamba's default writes each block's count negated, then its size.
	s := avroParsed(t, avroOrderSchema)
	order := avroNativeOrder{Total: new(big.Rat), Created: time.Unix(0, 0).UTC(), Status: "NEW",
		Items: []avroNativeItem{{"A", 1, new(big.Rat)}, {"B", 2, new(big.Rat)}},
		Attrs: map[string]any{"k": int64(1)}, Payment: map[string]any{"com.acme.Card": map[string]any{"last4": "4242"}}}
	b, err := avro.Marshal(s, order)
	if err != nil {
		t.Fatal(err)
	}
	got, err := decodeAvro(s, nil, b)
	if err != nil {
		t.Fatal(err)
	}
	tree := got.(map[string]any)
	avroCheckTree(t, tree["items"], []any{
		map[string]any{"sku": "A", "qty": int64(1), "price": json.Number("0.00")},
		map[string]any{"sku": "B", "qty": int64(2), "price": json.Number("0.00")},
	})
	avroCheckTree(t, tree["attrs"], map[string]any{"k": int64(1)})
}

func TestDecodeAvroReturnsBytesThatDoNotShareTheInput(t *testing.T) {
	s := avroParsed(t, avroBoxSchema(`{"type":"record","name":"Two","fields":[{"name":"a","type":"bytes"},{"name":"b","type":"string"}]}`))
	b := []byte{0x04, 'h', 'i', 0x04, 'y', 'o'}
	got, err := decodeAvro(s, nil, b)
	if err != nil {
		t.Fatal(err)
	}
	two := got.(map[string]any)["v"].(map[string]any)
	raw := two["a"].([]byte)
	if cap(raw) != len(raw) {
		t.Errorf("decoded bytes have room to grow (cap %d, len %d): an append could write over other values", cap(raw), len(raw))
	}
	for i := range b {
		b[i] = 'X'
	}
	if string(raw) != "hi" || two["b"] != "yo" {
		t.Errorf("after the input changed, the value holds %q and %q, want \"hi\" and \"yo\"", raw, two["b"])
	}
}

func TestEncodeAvroTakesDefaultsForMissingFields(t *testing.T) {
	s := avroParsed(t, avroDefaultsSchema)
	b, err := encodeAvro(s, map[string]any{"id": "a"})
	if err != nil {
		t.Fatal(err)
	}
	native := avroNativeBytes(t, s, avroNativeDefaults{
		ID: "a", N: 7, L: -1, F: 0.5, D: 2.25, B: true, S: "x", Raw: []byte{1, 255}, E: "B", Fx: [2]byte{0, 1},
		Dec: big.NewRat(1234, 100), TS: time.Unix(1, 0).UTC(), Day: time.Date(1970, 1, 2, 0, 0, 0, 0, time.UTC),
		First: avroPtr("z"), Arr: []int64{1, 2}, M: map[string]int32{"k": 1}, Rec: avroNativeP{1, 9},
	})
	if !bytes.Equal(b, native) {
		t.Errorf("encodeAvro with defaults = % x\nhamba with the defaults set = % x", b, native)
	}
	got, err := decodeAvro(s, nil, b)
	if err != nil {
		t.Fatal(err)
	}
	avroCheckTree(t, got, avroDefaultsTree())
}

// avroDefaultsSchema has a field with a default of every kind.
const avroDefaultsSchema = `{"type":"record","name":"D","namespace":"test","fields":[
  {"name":"id","type":"string"},
  {"name":"n","type":"int","default":7},
  {"name":"l","type":"long","default":-1},
  {"name":"f","type":"float","default":0.5},
  {"name":"d","type":"double","default":2.25},
  {"name":"b","type":"boolean","default":true},
  {"name":"s","type":"string","default":"x"},
  {"name":"raw","type":"bytes","default":"\u0001\u00ff"},
  {"name":"e","type":{"type":"enum","name":"E","symbols":["A","B"]},"default":"B"},
  {"name":"fx","type":{"type":"fixed","name":"F","size":2},"default":"\u0000\u0001"},
  {"name":"dec","type":{"type":"bytes","logicalType":"decimal","precision":6,"scale":2},"default":"\u0004\u00d2"},
  {"name":"ts","type":{"type":"long","logicalType":"timestamp-millis"},"default":1000},
  {"name":"day","type":{"type":"int","logicalType":"date"},"default":1},
  {"name":"opt","type":["null","string"],"default":null},
  {"name":"first","type":["string","null"],"default":"z"},
  {"name":"arr","type":{"type":"array","items":"long"},"default":[1,2]},
  {"name":"m","type":{"type":"map","values":"int"},"default":{"k":1}},
  {"name":"rec","type":{"type":"record","name":"P","fields":[{"name":"x","type":"int"},{"name":"y","type":"int","default":9}]},"default":{"x":1}}
]}`

// avroDefaultsTree is a test.D that holds its defaults, and "a" for id.
func avroDefaultsTree() map[string]any {
	return map[string]any{
		"id": "a", "n": int64(7), "l": int64(-1), "f": 0.5, "d": 2.25, "b": true, "s": "x",
		"raw": []byte{1, 255}, "e": "B", "fx": []byte{0, 1}, "dec": json.Number("12.34"),
		"ts": time.Unix(1, 0).UTC(), "day": time.Date(1970, 1, 2, 0, 0, 0, 0, time.UTC),
		"opt": nil, "first": "z", "arr": []any{int64(1), int64(2)}, "m": map[string]any{"k": int64(1)},
		"rec": map[string]any{"x": int64(1), "y": int64(9)},
	}
}

// avroNativeP is a test.P record, as Go code would write it.
type avroNativeP struct {
	X int32 `avro:"x"`
	Y int32 `avro:"y"`
}

// avroNativeDefaults is a test.D, as Go code would write it.
type avroNativeDefaults struct {
	ID    string           `avro:"id"`
	N     int32            `avro:"n"`
	L     int64            `avro:"l"`
	F     float32          `avro:"f"`
	D     float64          `avro:"d"`
	B     bool             `avro:"b"`
	S     string           `avro:"s"`
	Raw   []byte           `avro:"raw"`
	E     string           `avro:"e"`
	Fx    [2]byte          `avro:"fx"`
	Dec   *big.Rat         `avro:"dec"`
	TS    time.Time        `avro:"ts"`
	Day   time.Time        `avro:"day"`
	Opt   *string          `avro:"opt"`
	First *string          `avro:"first"`
	Arr   []int64          `avro:"arr"`
	M     map[string]int32 `avro:"m"`
	Rec   avroNativeP      `avro:"rec"`
}

func TestEncodeAvroRefusesWhatDoesNotFitWithItsPath(t *testing.T) {
	cases := []struct {
		name   string
		change func(o map[string]any)
		path   string
		msg    string
	}{
		{"a record missing a field without a default names the field",
			func(o map[string]any) { delete(avroItem(o, 1), "qty") },
			"items[1]", "missing field qty (no default)"},
		{"a key the record has no field for is refused, not dropped",
			func(o map[string]any) { avroItem(o, 0)["colour"] = "red" },
			"items[0]", `field "colour" is not in record com.acme.Item`},
		{"a string for an int is refused, never parsed",
			func(o map[string]any) { avroItem(o, 0)["qty"] = "2" },
			"items[0].qty", `want int, got string "2"`},
		{"an integer beyond 32 bits overflows an int",
			func(o map[string]any) { avroItem(o, 0)["qty"] = int64(3000000000) },
			"items[0].qty", "3000000000 is out of range for int"},
		{"a fraction for an int is refused",
			func(o map[string]any) { avroItem(o, 0)["qty"] = 2.5 },
			"items[0].qty", "2.5 is not an integer"},
		{"a price with more decimal places than the scale is refused",
			func(o map[string]any) { avroItem(o, 2)["price"] = 12.345 },
			"items[2].price", "12.345 has 3 decimal places; decimal(10,2) takes 2"},
		{"a decimal's trailing zeros do not count as places, its other digits do",
			func(o map[string]any) { avroItem(o, 2)["price"] = json.Number("12.3450") },
			"items[2].price", "12.3450 has 3 decimal places; decimal(10,2) takes 2"},
		{"a total with more digits than the precision is refused",
			func(o map[string]any) { o["total"] = json.Number("123456789") },
			"total", "123456789 has 9 integer digits; decimal(10,2) takes 8"},
		{"a decimal that is not a number is refused",
			func(o map[string]any) { o["total"] = "twelve" },
			"total", `"twelve" is not a number for decimal(10,2)`},
		{"an enum value that is not a symbol lists the symbols",
			func(o map[string]any) { o["status"] = "PURPLE" },
			"status", `"PURPLE" is not a symbol of enum com.acme.Status (NEW, PAID, SHIPPED)`},
		{"an enum value that is not a string is refused",
			func(o map[string]any) { o["status"] = int64(1) },
			"status", "want enum com.acme.Status, got int64 1"},
		{"a fixed of the wrong size is refused",
			func(o map[string]any) { o["hash"] = []byte{1, 2, 3} },
			"hash", "fixed com.acme.Hash takes 4 bytes, got 3"},
		{"text for a fixed that is not base64 is refused",
			func(o map[string]any) { o["hash"] = "!!" },
			"hash", `"!!" is not base64 text for com.acme.Hash`},
		{"a value no branch of a union takes lists the branches",
			func(o map[string]any) { o["payment"] = "cash" },
			"payment", `no branch of union [com.acme.Card, com.acme.Transfer] takes string "cash"`},
		{"a map no record branch of a union fits lists the branches",
			func(o map[string]any) { o["payment"] = map[string]any{"iban": "GB82", "bic": "WEST"} },
			"payment", "no branch of union [com.acme.Card, com.acme.Transfer] takes an object"},
		{"null for a union without null is refused",
			func(o map[string]any) { o["payment"] = nil },
			"payment", "union [com.acme.Card, com.acme.Transfer] does not take null"},
		{"an error inside a union's record branch has the field's path",
			func(o map[string]any) { o["payment"] = map[string]any{"iban": int64(1)} },
			"payment.iban", "want string, got int64 1"},
		{"a map value no union branch takes is named by its key",
			func(o map[string]any) { o["attrs"] = map[string]any{"gift": "yes", "wrap": true} },
			"attrs.wrap", "no branch of union [null, string, long] takes bool true"},
		{"a union of null and one type reports that type's error",
			func(o map[string]any) { o["shipping"].(map[string]any)["street"] = 12 },
			"shipping.street", "want string, got int 12"},
		{"a record that is not a map is refused",
			func(o map[string]any) { o["shipping"] = "nowhere" },
			"shipping", `want record com.acme.Address, got string "nowhere"`},
		{"an array that is not a []any is refused",
			func(o map[string]any) { o["items"] = []string{"BK-0001"} },
			"items", "want array, got a []string"},
		{"a map that is not a map[string]any is refused",
			func(o map[string]any) { o["attrs"] = map[string]string{"gift": "yes"} },
			"attrs", "want map, got a map[string]string"},
		{"a uuid that is not a uuid is refused",
			func(o map[string]any) { o["id"] = "order-1" },
			"id", `"order-1" is not a uuid`},
		{"a timestamp that is not RFC 3339 is refused",
			func(o map[string]any) { o["created"] = "yesterday" },
			"created", `"yesterday" is not an RFC 3339 time`},
		{"a timestamp that is not a time is refused",
			func(o map[string]any) { o["created"] = int64(1700000000000) },
			"created", "want timestamp-millis, got int64 1700000000000"},
	}
	s := avroParsed(t, avroOrderSchema)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			o := avroOrderTree()
			c.change(o)
			b, err := encodeAvro(s, o)
			if err == nil {
				t.Fatalf("encodeAvro succeeded with % x, want an error at %s", b, c.path)
			}
			de := avroDataError(t, err)
			if de.Path != c.path || de.Msg != c.msg {
				t.Errorf("error at %q: %s\nwant at %q: %s", de.Path, de.Msg, c.path, c.msg)
			}
		})
	}
}

// avroItem is item i of an order tree.
func avroItem(o map[string]any, i int) map[string]any {
	return o["items"].([]any)[i].(map[string]any)
}

func TestEncodeAvroRefusesScalarsThatDoNotFit(t *testing.T) {
	cases := []struct {
		name string
		typ  string
		v    any
		msg  string
	}{
		{"a date with a time of day is refused", `{"type":"int","logicalType":"date"}`,
			time.Date(2024, 1, 2, 10, 0, 0, 0, time.UTC), "2024-01-02T10:00:00Z has a time of day; a date takes midnight UTC"},
		{"a date at midnight of another zone is refused", `{"type":"int","logicalType":"date"}`,
			"2024-01-02T00:00:00+02:00", "2024-01-01T22:00:00Z has a time of day; a date takes midnight UTC"},
		{"a time of day of 24 hours or more is refused", `{"type":"int","logicalType":"time-millis"}`,
			transform.Duration(25 * time.Hour), "25h0m0s is not a time of day: time-millis takes [0, 24h)"},
		{"a negative time of day is refused", `{"type":"long","logicalType":"time-micros"}`,
			"-1s", "-1s is not a time of day: time-micros takes [0, 24h)"},
		{"a double too large for a float is refused", `"float"`, 1e300, "1e+300 is out of range for float"},
		{"an integer a float cannot hold exactly is refused", `"float"`, int64(16777217), "16777217 cannot be held exactly by a float"},
		{"an integer beyond a long is refused", `"long"`, uint64(math.MaxUint64), "18446744073709551615 is out of range for long"},
		{"a json.Number beyond a long is refused", `"long"`, json.Number("9223372036854775808"), "9223372036854775808 is out of range for long"},
		{"a json.Number with a fraction for a long is refused", `"long"`, json.Number("1.5"), "1.5 is not an integer"},
		{"a number for a string is refused", `"string"`, int64(5), "want string, got int64 5"},
		{"a value for null is refused", `"null"`, int64(1), "want null, got int64 1"},
		{"a string for a boolean is refused", `"boolean"`, "true", `want boolean, got string "true"`},
		{"a timestamp too far from 1970 for micros is refused", `{"type":"long","logicalType":"timestamp-micros"}`,
			time.Date(300000, 1, 1, 0, 0, 0, 0, time.UTC), "300000-01-01T00:00:00Z is out of range for timestamp-micros"},
		{"text for bytes that is not base64 is refused", `"bytes"`, "hello", `"hello" is not base64 text for bytes`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := avroParsed(t, avroBoxSchema(c.typ))
			b, err := encodeAvro(s, map[string]any{"v": c.v})
			if err == nil {
				t.Fatalf("encodeAvro succeeded with % x, want %s", b, c.msg)
			}
			de := avroDataError(t, err)
			if de.Path != "v" || de.Msg != c.msg {
				t.Errorf("error at %q: %s\nwant at \"v\": %s", de.Path, de.Msg, c.msg)
			}
		})
	}
}

func TestEncodeAvroTakesLosslessConversions(t *testing.T) {
	decimal := `{"type":"bytes","logicalType":"decimal","precision":10,"scale":2}`
	cases := []struct {
		name string
		typ  string
		v    any
		want any // the tree decodeAvro returns for v
	}{
		{"an int takes a Go int", `"int"`, 5, int64(5)},
		{"an int takes an int32", `"int"`, int32(-5), int64(-5)},
		{"an int takes a uint64 in range", `"int"`, uint64(5), int64(5)},
		{"an int takes an integral float64", `"int"`, 5.0, int64(5)},
		{"an int takes an integral json.Number", `"int"`, json.Number("42"), int64(42)},
		{"a long takes an integral json.Number in exponent form", `"long"`, json.Number("4.2e1"), int64(42)},
		{"a long takes the largest integral float64 below 2^63", `"long"`, 9223372036854774784.0, int64(9223372036854774784)},
		{"a double takes an int64", `"double"`, int64(1 << 53), float64(1 << 53)},
		{"a double takes a float32", `"double"`, float32(0.5), 0.5},
		{"a double takes a json.Number", `"double"`, json.Number("2.5e-3"), 2.5e-3},
		{"a float takes a float64 at a float's precision", `"float"`, 0.1, float64(float32(0.1))},
		{"bytes take base64 text", `"bytes"`, "AAH/", []byte{0, 1, 255}},
		{"a fixed takes base64 text of its size", `{"type":"fixed","name":"Two","size":2}`, "AAE=", []byte{0, 1}},
		{"a decimal takes a float64's shortest text", decimal, 12.3, json.Number("12.30")},
		{"a decimal takes an integer", decimal, int64(-7), json.Number("-7.00")},
		{"a decimal takes text with trailing zeros beyond its scale", decimal, "12.300", json.Number("12.30")},
		{"a decimal takes a json.Number in exponent form", decimal, json.Number("1.5e1"), json.Number("15.00")},
		{"a decimal takes the most digits its precision allows", decimal, json.Number("-99999999.99"), json.Number("-99999999.99")},
		{"a date takes its text", `{"type":"int","logicalType":"date"}`, "2024-02-29", time.Date(2024, 2, 29, 0, 0, 0, 0, time.UTC)},
		{"a date takes RFC 3339 text at midnight UTC", `{"type":"int","logicalType":"date"}`, "1969-07-20T00:00:00Z",
			time.Date(1969, 7, 20, 0, 0, 0, 0, time.UTC)},
		{"a date takes a time at midnight UTC in another zone", `{"type":"int","logicalType":"date"}`,
			time.Date(2024, 1, 2, 1, 0, 0, 0, time.FixedZone("CET", 3600)), time.Date(2024, 1, 2, 0, 0, 0, 0, time.UTC)},
		{"a timestamp-millis takes RFC 3339 text, truncated to the millisecond", `{"type":"long","logicalType":"timestamp-millis"}`,
			"2024-01-02T03:04:05.123456789+01:00", time.Date(2024, 1, 2, 2, 4, 5, 123e6, time.UTC)},
		{"a timestamp-micros truncates a time to the microsecond", `{"type":"long","logicalType":"timestamp-micros"}`,
			time.Date(2024, 1, 2, 3, 4, 5, 123456789, time.UTC), time.Date(2024, 1, 2, 3, 4, 5, 123456e3, time.UTC)},
		{"a timestamp-millis truncates a time before 1970 toward the past", `{"type":"long","logicalType":"timestamp-millis"}`,
			time.Date(1969, 12, 31, 23, 59, 59, 999500000, time.UTC), time.Date(1969, 12, 31, 23, 59, 59, 999e6, time.UTC)},
		{"a local-timestamp-millis writes a time's UTC wall clock", `{"type":"long","logicalType":"local-timestamp-millis"}`,
			time.Date(2024, 3, 31, 4, 30, 0, 0, time.FixedZone("CEST", 7200)), time.Date(2024, 3, 31, 2, 30, 0, 0, time.UTC)},
		{"a time-millis takes a time.Duration", `{"type":"int","logicalType":"time-millis"}`,
			time.Hour + 1500*time.Microsecond, transform.Duration(time.Hour + time.Millisecond)},
		{"a time-micros takes Go's duration text", `{"type":"long","logicalType":"time-micros"}`,
			"13h45m0.5s", transform.Duration(13*time.Hour + 45*time.Minute + 500*time.Millisecond)},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := avroParsed(t, avroBoxSchema(c.typ))
			b, err := encodeAvro(s, map[string]any{"v": c.v})
			if err != nil {
				t.Fatal(err)
			}
			got, err := decodeAvro(s, nil, b)
			if err != nil {
				t.Fatal(err)
			}
			avroCheckTree(t, got, map[string]any{"v": c.want})
		})
	}
}

func TestEncodeAvroChoosesTheUnionBranchByTheValuesType(t *testing.T) {
	records := `[{"type":"record","name":"Card","fields":[{"name":"last4","type":"string"}]},
	  {"type":"record","name":"Transfer","fields":[{"name":"iban","type":"string"},{"name":"ref","type":["null","string"],"default":null}]}]`
	ts := `{"type":"long","logicalType":"timestamp-millis"}`
	cases := []struct {
		name   string
		union  string
		v      any
		branch int
		want   any
	}{
		{"nil takes the null branch wherever it is", `["string","null"]`, nil, 1, nil},
		{"an int64 takes a long branch before an earlier double branch", `["null","double","long"]`, int64(3), 2, int64(3)},
		{"a float64 takes a double branch before an earlier long branch", `["long","double"]`, 3.0, 1, 3.0},
		{"an integral float64 with no float branch converts to a long", `["string","long"]`, 3.0, 1, int64(3)},
		{"an int64 with no integer branch converts to a double", `["string","double"]`, int64(3), 1, 3.0},
		{"a string takes a string branch before an earlier timestamp branch", `[` + ts + `,"string"]`,
			"2024-01-02T00:00:00Z", 1, "2024-01-02T00:00:00Z"},
		{"RFC 3339 text with no string branch converts to a timestamp", `["boolean",` + ts + `]`,
			"2024-01-02T00:00:00Z", 1, time.Date(2024, 1, 2, 0, 0, 0, 0, time.UTC)},
		{"a symbol takes the enum branch", `[{"type":"enum","name":"Color","symbols":["RED"]},"string"]`, "RED", 0, "RED"},
		{"a string that is not a symbol passes the enum branch by", `[{"type":"enum","name":"Color","symbols":["RED"]},"string"]`,
			"PURPLE", 1, "PURPLE"},
		{"text that is not a uuid passes the uuid branch by", `[{"type":"string","logicalType":"uuid"},"bytes"]`, "AAE=", 1, []byte{0, 1}},
		{"a map takes the first record branch it fits", records, map[string]any{"last4": "4242"}, 0, map[string]any{"last4": "4242"}},
		{"a map takes the record branch that has its keys", records, map[string]any{"iban": "GB82"}, 1,
			map[string]any{"iban": "GB82", "ref": nil}},
		{"a map takes a map branch", `["string",{"type":"map","values":"long"}]`, map[string]any{"a": int64(1)}, 1,
			map[string]any{"a": int64(1)}},
		{"a json.Number takes a decimal branch before an earlier long branch",
			`["long",{"type":"bytes","logicalType":"decimal","precision":4,"scale":2}]`, json.Number("7"), 1, json.Number("7.00")},
		{"a json.Number with no decimal branch converts to a long", `["string","long"]`, json.Number("7"), 1, int64(7)},
		{"a time at midnight takes a date branch", `[{"type":"int","logicalType":"date"},` + ts + `]`,
			time.Date(2024, 1, 2, 0, 0, 0, 0, time.UTC), 0, time.Date(2024, 1, 2, 0, 0, 0, 0, time.UTC)},
		{"a time of day passes a date branch by", `[{"type":"int","logicalType":"date"},` + ts + `]`,
			time.Date(2024, 1, 2, 3, 0, 0, 0, time.UTC), 1, time.Date(2024, 1, 2, 3, 0, 0, 0, time.UTC)},
		{"base64 text with no string branch converts to bytes", `["long","bytes"]`, "AAE=", 1, []byte{0, 1}},
		{"an array takes an array branch", `["string",{"type":"array","items":"long"}]`, []any{int64(1)}, 1, []any{int64(1)}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := avroParsed(t, avroBoxSchema(c.union))
			b, err := encodeAvro(s, map[string]any{"v": c.v})
			if err != nil {
				t.Fatal(err)
			}
			if want := byte(2 * c.branch); len(b) == 0 || b[0] != want {
				t.Errorf("encodeAvro wrote % x, want branch %d (first byte %#x)", b, c.branch, want)
			}
			got, err := decodeAvro(s, nil, b)
			if err != nil {
				t.Fatal(err)
			}
			avroCheckTree(t, got, map[string]any{"v": c.want})
		})
	}
}

func TestEncodeAvroWritesAMapSortedByKey(t *testing.T) {
	s := avroParsed(t, avroBoxSchema(`{"type":"map","values":"long"}`))
	for range 5 { // Go's map order changes from one range to the next
		b, err := encodeAvro(s, map[string]any{"v": map[string]any{"b": int64(2), "c": int64(3), "a": int64(1)}})
		if err != nil {
			t.Fatal(err)
		}
		want := []byte{0x06, 0x02, 'a', 0x02, 0x02, 'b', 0x04, 0x02, 'c', 0x06, 0x00}
		if !bytes.Equal(b, want) {
			t.Fatalf("encodeAvro = % x, want % x", b, want)
		}
	}
}

func TestEncodeAvroWritesANegativeDecimalInTheFewestBytes(t *testing.T) {
	// Java's BigInteger.toByteArray writes -128 in one byte; hamba writes
	// it in two (ff 80), which reads the same.
	s := avroParsed(t, avroBoxSchema(`{"type":"bytes","logicalType":"decimal","precision":4,"scale":2}`))
	b, err := encodeAvro(s, map[string]any{"v": json.Number("-1.28")})
	if err != nil {
		t.Fatal(err)
	}
	if want := []byte{0x02, 0x80}; !bytes.Equal(b, want) {
		t.Errorf("encodeAvro(-1.28) = % x, want % x", b, want)
	}
	got, err := decodeAvro(s, nil, avroNativeBytes(t, s, avroBox[*big.Rat]{big.NewRat(-128, 100)}))
	if err != nil {
		t.Fatal(err)
	}
	avroCheckTree(t, got, map[string]any{"v": json.Number("-1.28")})
}

func TestEncodeAvroRefusesRecordsNestedWithoutEnd(t *testing.T) {
	s := avroParsed(t, avroListSchema)
	var v any
	for range avroMaxDepth + 1 {
		v = map[string]any{"value": int64(1), "next": v}
	}
	_, err := encodeAvro(s, v)
	de := avroDataError(t, err)
	if want := "records nest more than 1000 deep"; de.Msg != want {
		t.Errorf("error %q, want %q", de.Msg, want)
	}
}

// avroListSchema is a recursive record: a linked list.
const avroListSchema = `{"type":"record","name":"Node","namespace":"test","fields":[
  {"name":"value","type":"long"},{"name":"next","type":["null","Node"]}]}`

func TestDecodeAvroRefusesDataThatDoesNotDecode(t *testing.T) {
	deep := bytes.Repeat([]byte{0x02, 0x02}, avroMaxDepth+1) // value 1, then the next node
	cases := []struct {
		name string
		typ  string
		b    []byte
		path string
		msg  string
	}{
		{"bytes after the value are refused", `"long"`, []byte{0x02, 0x00}, "", "trailing data: the value ends at byte 1 of 2"},
		{"a union index beyond the branches is refused", `["null","string"]`, []byte{0x04},
			"v", "union index 2 at byte 0 is out of range: union [null, string] has 2 branches"},
		{"a negative union index is refused", `["null","string"]`, []byte{0x01},
			"v", "union index -1 at byte 0 is out of range: union [null, string] has 2 branches"},
		{"an enum index beyond the symbols is refused", `{"type":"enum","name":"Color","symbols":["RED","GREEN"]}`, []byte{0x04},
			"v", "enum index 2 at byte 0 is out of range: test.Color has 2 symbols"},
		{"a boolean byte that is neither 0 nor 1 is refused", `"boolean"`, []byte{0x02}, "v", "byte 0 is 0x2, not a boolean"},
		{"an int beyond 32 bits is refused", `"int"`, []byte{0x80, 0x80, 0x80, 0x80, 0x20},
			"v", "int at byte 0 is 4294967296, out of an int's range"},
		{"a varint longer than a long is refused", `"long"`, bytes.Repeat([]byte{0xff}, 11),
			"v", "a long ending at byte 10 is longer than a long's 10 bytes"},
		{"a string longer than the data is refused", `"string"`, []byte{0x10, 'a'},
			"v", "the data (2 bytes) ends in the middle of a string"},
		{"a negative length is refused", `"bytes"`, []byte{0x01}, "v", "a bytes value at byte 0 has a negative length, -1"},
		{"an array claiming more items than the data holds is refused", `{"type":"array","items":"long"}`, []byte{0xd0, 0x0f, 0x00},
			"v", "block at byte 0 claims 1000 items, more than the data can hold"},
		{"a map claiming more entries than the data holds is refused", `{"type":"map","values":"null"}`, []byte{0x08, 0x00, 0x00},
			"v", "block at byte 0 claims 4 entries, more than the data can hold"},
		{"an error in an array has the item's path", `{"type":"array","items":"boolean"}`, []byte{0x04, 0x01, 0x07, 0x00},
			"v[1]", "byte 2 is 0x7, not a boolean"},
		{"an error in a map has the entry's key", `{"type":"map","values":"boolean"}`, []byte{0x02, 0x02, 'k', 0x07, 0x00},
			"v.k", "byte 3 is 0x7, not a boolean"},
		{"records nested more than 1000 deep are refused", `"test.Node"`, deep,
			"v" + strings.Repeat(".next", avroMaxDepth-1), "records nest more than 1000 deep"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			refs := []string{avroListSchema}
			s := avroParsed(t, avroBoxSchema(c.typ), refs...)
			if c.path == "" { // the box is not part of it
				s = avroParsed(t, c.typ)
			}
			got, err := decodeAvro(s, nil, c.b)
			if err == nil {
				t.Fatalf("decodeAvro(% x) = %#v, want an error", c.b, got)
			}
			de := avroDataError(t, err)
			if de.Path != c.path || de.Msg != c.msg {
				t.Errorf("error at %q: %s\nwant at %q: %s", de.Path, de.Msg, c.path, c.msg)
			}
		})
	}
}

func TestDecodeAvroRefusesEveryCutOfAnOrder(t *testing.T) {
	s := avroParsed(t, avroOrderSchema)
	b := avroOrderBytes(t, s)
	for n := range len(b) {
		got, err := decodeAvro(s, nil, b[:n])
		if err == nil {
			t.Fatalf("decodeAvro of the first %d of %d bytes = %v, want an error", n, len(b), got)
		}
		avroDataError(t, err)
	}
}

func TestDecodeAvroResolvesTheWritersDataAsTheReader(t *testing.T) {
	const status = `{"type":"enum","name":"Status","symbols":["NEW","PAID","REFUNDED"]}`
	cases := []struct {
		name           string
		writer, reader string // the types of the box's field v
		v              any    // written with writer
		want           any    // read as reader
	}{
		{"an int widens to a long", `"int"`, `"long"`, int64(-7), int64(-7)},
		{"an int widens to a double", `"int"`, `"double"`, int64(7), 7.0},
		{"a long widens to a float", `"long"`, `"float"`, int64(1<<24 + 1), float64(float32(1<<24 + 1))},
		{"a float widens to a double exactly", `"float"`, `"double"`, 0.1, float64(float32(0.1))},
		{"a string reads as bytes", `"string"`, `"bytes"`, "hi", []byte("hi")},
		{"bytes read as a string", `"bytes"`, `"string"`, []byte("hi"), "hi"},
		{"a long reads with the reader's logical type", `"long"`, `{"type":"long","logicalType":"timestamp-millis"}`,
			int64(1000), time.Unix(1, 0).UTC()},
		{"a symbol the reader has reads as itself", status,
			`{"type":"enum","name":"Status","symbols":["NEW","PAID","UNKNOWN"],"default":"UNKNOWN"}`, "PAID", "PAID"},
		{"a symbol the reader lacks reads as the reader's default", status,
			`{"type":"enum","name":"Status","symbols":["NEW","PAID","UNKNOWN"],"default":"UNKNOWN"}`, "REFUNDED", "UNKNOWN"},
		{"a value reads into a reader union", `"int"`, `["null","string","long"]`, int64(5), int64(5)},
		{"a writer union's branch reads as the reader's matching branch", `["null","int"]`, `["null","long"]`, int64(5), int64(5)},
		{"a writer union's null reads as the reader's null", `["null","int"]`, `["long","null"]`, nil, nil},
		{"a writer union reads as a reader type every branch widens to", `["int","long"]`, `"double"`, int64(5), 5.0},
		{"records in an array resolve", `{"type":"array","items":{"type":"record","name":"R","fields":[{"name":"a","type":"int"},{"name":"gone","type":"string"}]}}`,
			`{"type":"array","items":{"type":"record","name":"R","fields":[{"name":"a","type":"long"},{"name":"b","type":"string","default":"x"}]}}`,
			[]any{map[string]any{"a": int64(1), "gone": "y"}}, []any{map[string]any{"a": int64(1), "b": "x"}}},
		{"records in a map resolve", `{"type":"map","values":{"type":"record","name":"R","fields":[{"name":"a","type":"int"}]}}`,
			`{"type":"map","values":{"type":"record","name":"R","fields":[{"name":"a","type":"float"}]}}`,
			map[string]any{"k": map[string]any{"a": int64(2)}}, map[string]any{"k": map[string]any{"a": 2.0}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			w := avroParsed(t, avroBoxSchema(c.writer))
			r := avroParsed(t, avroBoxSchema(c.reader))
			b, err := encodeAvro(w, map[string]any{"v": c.v})
			if err != nil {
				t.Fatal(err)
			}
			got, err := decodeAvro(w, r, b)
			if err != nil {
				t.Fatal(err)
			}
			avroCheckTree(t, got, map[string]any{"v": c.want})
		})
	}
}

func TestDecodeAvroResolvesAddedDroppedAndRenamedFields(t *testing.T) {
	writer := avroParsed(t, `{"type":"record","name":"Order","namespace":"com.acme","fields":[
	  {"name":"id","type":"string"},
	  {"name":"legacy","type":{"type":"array","items":{"type":"map","values":["null",{"type":"record","name":"Old","fields":[{"name":"x","type":"bytes"}]}]}}},
	  {"name":"qty","type":"int"},
	  {"name":"extra","type":["null","string",{"type":"fixed","name":"F","size":3}]},
	  {"name":"notes","type":{"type":"map","values":"string"}},
	  {"name":"cust","type":"string"}]}`)
	reader := avroParsed(t, `{"type":"record","name":"Order","namespace":"com.acme","fields":[
	  {"name":"customer","type":"string","aliases":["cust"]},
	  {"name":"qty","type":"long"},
	  {"name":"id","type":"string"},
	  {"name":"region","type":"string","default":"eu"},
	  {"name":"tags","type":{"type":"array","items":"string"},"default":["new"]}]}`)
	v := map[string]any{
		"id":     "o-1",
		"legacy": []any{map[string]any{"a": map[string]any{"x": []byte{1}}, "b": nil}, map[string]any{"c": nil}, map[string]any{}},
		"qty":    int64(3),
		"extra":  []byte{1, 2, 3},
		"notes":  map[string]any{"k": "v"},
		"cust":   "Ada",
	}
	want := map[string]any{"id": "o-1", "qty": int64(3), "customer": "Ada", "region": "eu", "tags": []any{"new"}}
	// Written by encodeAvro (blocks with counts only) and by hamba (blocks
	// with their size, which a dropped field's blocks are skipped by).
	hamba, err := avro.Marshal(writer, map[string]any{
		"id":     "o-1",
		"legacy": []any{map[string]any{"a": map[string]any{"com.acme.Old": map[string]any{"x": []byte{1}}}, "b": nil}, map[string]any{"c": nil}, map[string]any{}},
		"qty":    3,
		"extra":  map[string]any{"com.acme.F": [3]byte{1, 2, 3}},
		"notes":  map[string]any{"k": "v"},
		"cust":   "Ada",
	})
	if err != nil {
		t.Fatal(err)
	}
	ours, err := encodeAvro(writer, v)
	if err != nil {
		t.Fatal(err)
	}
	for name, b := range map[string][]byte{"encodeAvro": ours, "hamba": hamba} {
		t.Run("written by "+name, func(t *testing.T) {
			got, err := decodeAvro(writer, reader, b)
			if err != nil {
				t.Fatal(err)
			}
			avroCheckTree(t, got, want)
		})
	}
}

func TestDecodeAvroResolvesARecursiveRecord(t *testing.T) {
	writer := avroParsed(t, avroListSchema)
	reader := avroParsed(t, `{"type":"record","name":"Node","namespace":"test","fields":[
	  {"name":"value","type":"double"},{"name":"next","type":["null","Node"]},{"name":"seen","type":"boolean","default":false}]}`)
	list := map[string]any{"value": int64(1), "next": map[string]any{"value": int64(2), "next": nil}}
	b, err := encodeAvro(writer, list)
	if err != nil {
		t.Fatal(err)
	}
	got, err := decodeAvro(writer, reader, b)
	if err != nil {
		t.Fatal(err)
	}
	avroCheckTree(t, got, map[string]any{"value": 1.0, "seen": false,
		"next": map[string]any{"value": 2.0, "seen": false, "next": nil}})
}

func TestDecodeAvroGivesAFieldTheReaderAddsItsDefault(t *testing.T) {
	writer := avroParsed(t, `{"type":"record","name":"D","namespace":"test","fields":[{"name":"id","type":"string"}]}`)
	reader := avroParsed(t, avroDefaultsSchema)
	b, err := encodeAvro(writer, map[string]any{"id": "a"})
	if err != nil {
		t.Fatal(err)
	}
	got, err := decodeAvro(writer, reader, b)
	if err != nil {
		t.Fatal(err)
	}
	avroCheckTree(t, got, avroDefaultsTree())
	// The defaults are fresh for each record: a step changing one record's
	// value cannot change the next one's.
	got.(map[string]any)["arr"].([]any)[0] = "changed"
	again, err := decodeAvro(writer, reader, b)
	if err != nil {
		t.Fatal(err)
	}
	avroCheckTree(t, again, avroDefaultsTree())
}

func TestResolveAvroOnceDecodesAsResolvingEachTime(t *testing.T) {
	writer := avroParsed(t, avroOrderSchema)
	reader := avroParsed(t, strings.Replace(avroOrderSchema, `{"name":"customer","type":"string"},`,
		`{"name":"customer","type":"string"},{"name":"channel","type":"string","default":"web"},`, 1))
	b := avroOrderBytes(t, writer)
	resolved, err := resolveAvro(reader, writer)
	if err != nil {
		t.Fatal(err)
	}
	once, err := decodeAvro(resolved, nil, b)
	if err != nil {
		t.Fatal(err)
	}
	each, err := decodeAvro(writer, reader, b)
	if err != nil {
		t.Fatal(err)
	}
	want := avroOrderTree()
	want["channel"] = "web"
	avroCheckTree(t, once, want)
	avroCheckTree(t, each, want)

	if _, err := decodeAvro(resolved, reader, b); err == nil {
		t.Error("decodeAvro of a resolved schema with a reader succeeded, want an error")
	}
	if _, ok := avroShape(resolved).Fields["channel"]; !ok {
		t.Error("the shape of a resolved schema lacks the reader's field channel")
	}
	enc, err := encodeAvro(resolved, want)
	if err != nil {
		t.Fatalf("encodeAvro with a resolved schema, as its reader: %v", err)
	}
	if back, err := decodeAvro(reader, nil, enc); err != nil {
		t.Error(err)
	} else {
		avroCheckTree(t, back, want)
	}
}

func TestResolveAvroRefusesAnIncompatiblePairNamingBoth(t *testing.T) {
	cases := []struct {
		name           string
		writer, reader string
		reason         string
	}{
		{"a reader field the writer lacks that has no default",
			`{"type":"record","name":"Order","namespace":"com.acme","fields":[{"name":"id","type":"string"}]}`,
			`{"type":"record","name":"Order","namespace":"com.acme.v2","fields":[{"name":"id","type":"string"},{"name":"region","type":"string"}]}`,
			"region"},
		{"records of different names",
			`{"type":"record","name":"Order","namespace":"com.acme","fields":[]}`,
			`{"type":"record","name":"Invoice","namespace":"com.acme","fields":[]}`,
			"names do not match"},
		{"a writer symbol the reader lacks, without a reader default",
			`{"type":"record","name":"Order","namespace":"com.acme","fields":[{"name":"s","type":{"type":"enum","name":"S","symbols":["A","B"]}}]}`,
			`{"type":"record","name":"Order","namespace":"com.acme.v2","fields":[{"name":"s","type":{"type":"enum","name":"S","symbols":["A"]}}]}`,
			"missing symbol B"},
		{"a string read as a long",
			`{"type":"record","name":"Order","namespace":"com.acme","fields":[{"name":"id","type":"string"}]}`,
			`{"type":"record","name":"Order","namespace":"com.acme.v2","fields":[{"name":"id","type":"long"}]}`,
			"not compatible"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			w, r := avroParsed(t, c.writer), avroParsed(t, c.reader)
			_, err := resolveAvro(r, w)
			if err == nil {
				t.Fatal("resolveAvro succeeded, want an error")
			}
			de := avroDataError(t, err)
			for _, part := range []string{
				"avro reader schema " + r.(avro.NamedSchema).FullName(),
				"writer schema " + w.(avro.NamedSchema).FullName(),
				c.reason,
			} {
				if !strings.Contains(de.Msg, part) {
					t.Errorf("error %q does not say %q", de.Msg, part)
				}
			}
			if _, err := decodeAvro(w, r, []byte{0}); err == nil {
				t.Error("decodeAvro with the pair succeeded, want an error")
			} else {
				avroDataError(t, err)
			}
		})
	}
}

func TestParseAvroMakesTheTypesOfReferencesAvailable(t *testing.T) {
	money := `{"type":"record","name":"Money","namespace":"com.acme","fields":[
	  {"name":"amount","type":{"type":"bytes","logicalType":"decimal","precision":10,"scale":2}},{"name":"currency","type":"string"}]}`
	line := `{"type":"record","name":"Line","namespace":"com.acme","fields":[{"name":"sku","type":"string"},{"name":"price","type":"com.acme.Money"}]}`
	order := `{"type":"record","name":"Order","namespace":"com.acme","fields":[
	  {"name":"lines","type":{"type":"array","items":"com.acme.Line"}},{"name":"total","type":"Money"}]}`
	s := avroParsed(t, order, money, line)
	v := map[string]any{
		"lines": []any{map[string]any{"sku": "A", "price": map[string]any{"amount": json.Number("1.50"), "currency": "EUR"}}},
		"total": map[string]any{"amount": json.Number("1.50"), "currency": "EUR"},
	}
	b, err := encodeAvro(s, v)
	if err != nil {
		t.Fatal(err)
	}
	got, err := decodeAvro(s, nil, b)
	if err != nil {
		t.Fatal(err)
	}
	avroCheckTree(t, got, v)
	if _, err := parseAvro(order, []string{money}); err == nil || !strings.Contains(err.Error(), "unknown type: com.acme.Line") {
		t.Errorf("parseAvro without the ref defining com.acme.Line: %v, want an unknown type error naming it", err)
	}
	// A parse's named types stay in that parse.
	if _, err := parseAvro(line, nil); err == nil || !strings.Contains(err.Error(), "com.acme.Money") {
		t.Errorf("parseAvro of a schema referencing a type another parse defined: %v, want an error naming it", err)
	}
}

func TestParseAvroSaysWhatIsWrong(t *testing.T) {
	cases := []struct {
		name string
		text string
		refs []string
		want string // the start of the error
	}{
		{"text that is not JSON says where", `{"type":"record",}`, nil, "avro schema: invalid JSON at byte 18: "},
		{"empty text is not a schema", ``, nil, "avro schema: invalid JSON at byte 0: "},
		{"an unknown type is named", `{"type":"record","name":"R","fields":[{"name":"a","type":"Nope"}]}`, nil,
			"avro schema: unknown type: Nope"},
		{"a default that does not fit its field is refused", `{"type":"record","name":"R","fields":[{"name":"a","type":"int","default":"x"}]}`, nil,
			"avro schema: invalid default for field a"},
		{"a duplicate field is refused", `{"type":"record","name":"R","fields":[{"name":"a","type":"int"},{"name":"a","type":"long"}]}`, nil,
			`avro schema: duplicate field name "a"`},
		{"a broken reference is named by its position", `"string"`, []string{`"int"`, `{"type":`}, "avro schema reference 2 of 2: invalid JSON"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s, err := parseAvro(c.text, c.refs)
			if err == nil {
				t.Fatalf("parseAvro = %v, want an error", s)
			}
			if !strings.HasPrefix(err.Error(), c.want) {
				t.Errorf("error %q, want it to start %q", err, c.want)
			}
		})
	}
}

func TestParseAvroReadsASchemaFromAFile(t *testing.T) {
	text, err := os.ReadFile("testdata/avro/shape.avsc")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := parseAvro(string(text), nil); err != nil {
		t.Fatal(err)
	}
}

func TestAvroShapeFollowsRecordsMapsUnionsAndArrays(t *testing.T) {
	text, err := os.ReadFile("testdata/avro/shape.avsc")
	if err != nil {
		t.Fatal(err)
	}
	sh := avroShape(avroParsed(t, string(text)))
	fields := func(sh *Shape) []string {
		var out []string
		for k := range sh.Fields {
			out = append(out, k)
		}
		slices.Sort(out)
		return out
	}
	checks := []struct {
		name   string
		got    *Shape
		fields []string
		open   bool
	}{
		{"a record has its fields", sh, []string{"attrs", "customer", "id", "items", "next", "payment"}, false},
		{"a scalar has no fields", sh.Fields["id"], nil, false},
		{"a nested record has its fields", sh.Fields["customer"], []string{"address", "name"}, false},
		{"a record nested twice has its fields", sh.Fields["customer"].Fields["address"], []string{"city"}, false},
		{"a map is open", sh.Fields["attrs"], nil, true},
		{"a union has the fields of all its records", sh.Fields["payment"], []string{"iban", "last4"}, false},
		{"an array has no fields", sh.Fields["items"], nil, false},
	}
	for _, c := range checks {
		t.Run(c.name, func(t *testing.T) {
			if c.got == nil {
				t.Fatal("shape is nil")
			}
			if got := fields(c.got); !slices.Equal(got, c.fields) || c.got.Open != c.open {
				t.Errorf("fields %v, open %v; want %v, %v", got, c.got.Open, c.fields, c.open)
			}
		})
	}
	t.Run("a recursive record's shape refers to itself", func(t *testing.T) {
		if sh.Fields["next"] != sh {
			t.Errorf("next's shape is not the order's")
		}
	})
}

func TestAvroShapeMergesUnionsOfRecursiveRecords(t *testing.T) {
	s := avroParsed(t, `{"type":"record","name":"Top","fields":[{"name":"node","type":[
	  {"type":"record","name":"A","fields":[{"name":"a","type":"int"},{"name":"next","type":["null","A"]}]},
	  {"type":"record","name":"B","fields":[{"name":"b","type":"int"},{"name":"next","type":["null","A","B"]}]}]}]}`)
	node := avroShape(s).Fields["node"]
	for _, path := range [][]string{{"a"}, {"b"}, {"next", "next", "a"}, {"next", "b"}} {
		sh := node
		for _, f := range path {
			if sh = sh.Fields[f]; sh == nil {
				t.Fatalf("node.%s is not in the shape", strings.Join(path, "."))
			}
		}
	}
}

// avroBenchOrder is the order of the benchmarks: about 200 bytes.
func avroBenchOrder() map[string]any {
	o := avroOrderTree()
	o["attrs"] = map[string]any{"gift": "yes", "source": "mobile-app", "visits": int64(12)}
	return o
}

func BenchmarkAvroDecode(b *testing.B) {
	s := avroParsed(b, avroOrderSchema)
	data, err := encodeAvro(s, avroBenchOrder())
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := decodeAvro(s, nil, data); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkAvroEncode(b *testing.B) {
	s := avroParsed(b, avroOrderSchema)
	v := avroBenchOrder()
	data, err := encodeAvro(s, v)
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := encodeAvro(s, v); err != nil {
			b.Fatal(err)
		}
	}
}
