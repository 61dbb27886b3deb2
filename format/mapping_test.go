package format

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"math/big"
	"os"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hamba/avro/v2"
	"github.com/twmb/franz-go/pkg/sr"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/dynamicpb"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/emptypb"
	"google.golang.org/protobuf/types/known/fieldmaskpb"
	"google.golang.org/protobuf/types/known/structpb"
	"google.golang.org/protobuf/types/known/timestamppb"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/sharerelay/sharerelay/config"
	"github.com/sharerelay/sharerelay/transform"
)

// The table "How values look to the steps" in docs/formats.md says, for
// each type of each format, what a step sees of a value of that type: its
// CEL type and expressions that hold, its text where a path's condition
// compares it, and what a step may write back. mappingCases is that table
// as tests, one case a row. A case writes a record holding a value of its
// type with a library that shares no code with the relay (hamba's encoder
// of Go values, dynamicpb with proto.Marshal, JSON text), runs it through
// a chain built with the relay's own codecs, and reads what the chain
// wrote back with the same independent library.
//
// TestTheFormatsTableAndItsTestsHaveTheSameRows keeps the two in step: a
// row without a case, a case without a row, or a cell that does not show
// the example its case tests fails it.

// The headings of the tables in docs/formats.md, one a format.
const (
	mappingAvro  = "Avro"
	mappingProto = "Protobuf"
	mappingJSON  = "JSON Schema"
)

// mappingCase is one row of the table.
type mappingCase struct {
	format string // the heading of the row's table
	row    string // the row's first cell, as the table writes it
	// typ is the field's type: an Avro schema; the declarations of
	// message Row of a .proto file, TYPE standing for each of types; a
	// JSON Schema.
	typ   string
	types []string // Protobuf: the types a row stands for, each tested
	field string   // the field that holds the value: its name and path
	// in is the value the independent writer writes: the field's value
	// as hamba takes it (Avro), the message's fields (Protobuf: see
	// mappingProtoFields), the whole value's JSON text (JSON Schema).
	in any
	// celType is the CEL type of value.<field> ("" for a field that is
	// absent); cel are conditions on the value that hold.
	celType string
	cel     []string
	// text is the field's text, which equals and in compare ("" for a
	// field that is absent); also are more paths and their texts.
	text string
	also [][2]string
	// write is the CEL expression a set step stores at field, and want
	// what the independent reader reads after: the field's value as
	// hamba reads it (Avro), the message in protojson (Protobuf), the
	// field's JSON (JSON Schema).
	write string
	want  any
	// fails are set steps that fail the record: a CEL expression that is
	// an error, or a write the output's format refuses.
	fails []mappingFail
}

// mappingFail is a set step that fails: expr stored at field fails the
// record with an error that says msg.
type mappingFail struct{ field, expr, msg string }

// The Go values a Protobuf case's fields take besides scalars, lists
// ([]any) and proto.Messages (the well-known types): an enum's number, a
// map's entries, a message of the .proto's own by its fields.
type (
	mappingEnum int32
	mappingMap  map[any]any
	mappingMsg  map[string]any
)

// mappingCases are the rows of the tables, in their order.
var mappingCases = []mappingCase{
	// Avro
	{
		format: mappingAvro, row: "`null`", typ: `"null"`, field: "nothing", in: nil,
		celType: "null_type", cel: []string{`value.nothing == null`},
		text: "null", write: `null`, want: nil,
	},
	{
		format: mappingAvro, row: "`boolean`", typ: `"boolean"`, field: "paid", in: true,
		celType: "bool", cel: []string{`value.paid`},
		text: "true", write: `!value.paid`, want: false,
	},
	{
		format: mappingAvro, row: "`int`", typ: `"int"`, field: "qty", in: 3,
		celType: "int", cel: []string{`value.qty + 1 == 4`, `value.qty > 2.5`},
		text: "3", write: `value.qty * 2`, want: 6,
		fails: []mappingFail{{"qty", `value.qty * 1000000000`, "out of range for int"}, {"qty", `value.qty + 1.0`, "no such overload"}},
	},
	{
		format: mappingAvro, row: "`long`", typ: `"long"`, field: "id", in: int64(9007199254740993),
		celType: "int", cel: []string{`value.id == 9007199254740993`},
		text: "9007199254740993", write: `value.id + 1`, want: int64(9007199254740994),
	},
	{
		format: mappingAvro, row: "`float`", typ: `"float"`, field: "ratio", in: float32(0.1),
		celType: "double", cel: []string{`value.ratio == 0.10000000149011612`, `math.round(value.ratio * 100.0) == 10.0`},
		text: "0.10000000149011612", write: `value.ratio * 2.0`, want: float32(0.2),
	},
	{
		format: mappingAvro, row: "`double`", typ: `"double"`, field: "price", in: 12.5,
		celType: "double", cel: []string{`value.price > 10.0`, `value.price > 10`},
		text: "12.5", write: `value.price * 2.0`, want: 25.0,
	},
	{
		format: mappingAvro, row: "`bytes`", typ: `"bytes"`, field: "sig", in: []byte{1, 2, 3},
		celType: "bytes", cel: []string{`value.sig == b"\x01\x02\x03"`},
		text: "AQID", write: `value.sig + b"\x04"`, want: []byte{1, 2, 3, 4},
		fails: []mappingFail{{"sig", `"hello"`, "is not base64"}},
	},
	{
		format: mappingAvro, row: "`string`", typ: `"string"`, field: "customer", in: "Ada",
		celType: "string", cel: []string{`value.customer.startsWith("A")`},
		text: "Ada", write: `value.customer.upperAscii()`, want: "ADA",
	},
	{
		format: mappingAvro, row: "`record`", field: "customer",
		typ:     `{"type":"record","name":"Customer","fields":[{"name":"name","type":"string"},{"name":"tier","type":"int"}]}`,
		in:      map[string]any{"name": "Ada", "tier": 2},
		celType: "map", cel: []string{`value.customer.name == "Ada"`},
		text: `{"name":"Ada","tier":2}`, also: [][2]string{{"customer.name", "Ada"}},
		write: `{"name": "Bo", "tier": 3}`, want: map[string]any{"name": "Bo", "tier": 3},
		fails: []mappingFail{{"customer.vip", `true`, `field "vip" is not in record`}},
	},
	{
		format: mappingAvro, row: "`enum`", field: "status",
		typ: `{"type":"enum","name":"Status","symbols":["NEW","PAID","SHIPPED"]}`, in: "PAID",
		celType: "string", cel: []string{`value.status == "PAID"`},
		text: "PAID", write: `"SHIPPED"`, want: "SHIPPED",
		fails: []mappingFail{{"status", `"LOST"`, "is not a symbol of enum"}},
	},
	{
		format: mappingAvro, row: "`array`", typ: `{"type":"array","items":"string"}`, field: "tags",
		in:      []any{"a", "b"},
		celType: "list", cel: []string{`"a" in value.tags`, `value.tags[1] == "b"`},
		text: `["a","b"]`, write: `value.tags + ["c"]`, want: []any{"a", "b", "c"},
	},
	{
		format: mappingAvro, row: "`map`", typ: `{"type":"map","values":"long"}`, field: "stock",
		in:      map[string]any{"a": int64(3)},
		celType: "map", cel: []string{`value.stock["a"] == 3`},
		text: `{"a":3}`, also: [][2]string{{"stock.a", "3"}},
		write: `{"a": 4, "b": 1}`, want: map[string]any{"a": int64(4), "b": int64(1)},
	},
	{
		format: mappingAvro, row: "union `[\"null\", T]` holding null", typ: `["null","string"]`, field: "coupon",
		in:      nil,
		celType: "null_type", cel: []string{`has(value.coupon)`, `value.coupon == null`},
		text: "null", write: `"SAVE10"`, want: "SAVE10",
	},
	{
		format: mappingAvro, row: "union `[\"null\", T]` holding a T", typ: `["null","string"]`, field: "coupon",
		in:      "SAVE10",
		celType: "string", cel: []string{`value.coupon == "SAVE10"`},
		text: "SAVE10", write: `null`, want: nil,
	},
	{
		format: mappingAvro, row: "union of several types", typ: `["null","string","long"]`, field: "ref",
		in:      map[string]any{"long": int64(42)},
		celType: "int", cel: []string{`value.ref == 42`},
		text: "42", write: `"A-" + string(value.ref)`, want: "A-42",
	},
	{
		format: mappingAvro, row: "`fixed`", typ: `{"type":"fixed","name":"Hash","size":4}`, field: "hash",
		in:      [4]byte{1, 2, 3, 4},
		celType: "bytes", cel: []string{`size(value.hash) == 4`},
		text: "AQIDBA==", write: `b"\x05\x06\x07\x08"`, want: [4]byte{5, 6, 7, 8},
		fails: []mappingFail{{"hash", `b"\x05"`, "takes 4 bytes, got 1"}},
	},
	{
		format: mappingAvro, row: "`decimal` on `bytes`", field: "amount",
		typ:     `{"type":"bytes","logicalType":"decimal","precision":10,"scale":2}`,
		in:      big.NewRat(1230, 100),
		celType: "double", cel: []string{`value.amount > 10.0`, `value.amount == 12.3`},
		text: "12.30", write: `math.round(value.amount * 110.0) / 100.0`, want: big.NewRat(1353, 100),
		fails: []mappingFail{{"amount", `value.amount * 1.1`, "13.530000000000001 has 15 decimal places; decimal(10,2) takes 2"}},
	},
	{
		format: mappingAvro, row: "`decimal` on `fixed`", field: "amount",
		typ:     `{"type":"fixed","name":"Amount","size":8,"logicalType":"decimal","precision":18,"scale":4}`,
		in:      big.NewRat(-35, 10),
		celType: "double", cel: []string{`value.amount < 0.0`},
		text: "-3.5000", write: `"1234.5678"`, want: big.NewRat(12345678, 10000),
	},
	{
		format: mappingAvro, row: "`uuid`", typ: `{"type":"string","logicalType":"uuid"}`, field: "id",
		in:      "6f1c0e1e-8a4b-4c8e-9a64-3f1b2c3d4e5f",
		celType: "string", cel: []string{`value.id.startsWith("6f1c")`},
		text:  "6f1c0e1e-8a4b-4c8e-9a64-3f1b2c3d4e5f",
		write: `"00000000-0000-0000-0000-000000000001"`, want: "00000000-0000-0000-0000-000000000001",
		fails: []mappingFail{{"id", `"not-a-uuid"`, "is not a uuid"}},
	},
	{
		format: mappingAvro, row: "`date`", typ: `{"type":"int","logicalType":"date"}`, field: "day",
		in:      time.Date(2024, 5, 1, 0, 0, 0, 0, time.UTC),
		celType: "timestamp", cel: []string{`value.day == timestamp("2024-05-01T00:00:00Z")`},
		text: "2024-05-01T00:00:00Z", write: `value.day + duration("24h")`, want: time.Date(2024, 5, 2, 0, 0, 0, 0, time.UTC),
		fails: []mappingFail{{"day", `value.day + duration("1h")`, "has a time of day"}},
	},
	{
		format: mappingAvro, row: "`time-millis`", typ: `{"type":"int","logicalType":"time-millis"}`, field: "opens",
		in:      9*time.Hour + 30*time.Minute,
		celType: "duration", cel: []string{`value.opens == duration("9h30m")`},
		text: "9h30m0s", write: `value.opens + duration("1h")`, want: 10*time.Hour + 30*time.Minute,
		fails: []mappingFail{{"opens", `value.opens + duration("15h")`, "is not a time of day"}},
	},
	{
		format: mappingAvro, row: "`time-micros`", typ: `{"type":"long","logicalType":"time-micros"}`, field: "opens",
		in:      9*time.Hour + 30*time.Minute + time.Microsecond,
		celType: "duration", cel: []string{`value.opens > duration("9h")`},
		text: "9h30m0.000001s", write: `duration("23h59m59.999999s")`, want: 24*time.Hour - time.Microsecond,
	},
	{
		format: mappingAvro, row: "`timestamp-millis`", typ: `{"type":"long","logicalType":"timestamp-millis"}`, field: "placed",
		in:      time.Date(2024, 5, 1, 12, 0, 0, 123e6, time.UTC),
		celType: "timestamp", cel: []string{`value.placed < timestamp("2025-01-01T00:00:00Z")`, `value.placed.getHours() == 12`},
		text: "2024-05-01T12:00:00.123Z", write: `value.placed + duration("1h")`, want: time.Date(2024, 5, 1, 13, 0, 0, 123e6, time.UTC),
	},
	{
		format: mappingAvro, row: "`timestamp-micros`", typ: `{"type":"long","logicalType":"timestamp-micros"}`, field: "placed",
		in:      time.Date(2024, 5, 1, 12, 0, 0, 123456e3, time.UTC),
		celType: "timestamp", cel: []string{`value.placed > timestamp("2024-05-01T12:00:00Z")`},
		text: "2024-05-01T12:00:00.123456Z", write: `value.placed + duration("1500ns")`, want: time.Date(2024, 5, 1, 12, 0, 0, 123457e3, time.UTC),
	},
	{
		// Written as the long itself, the wall clock's milliseconds: hamba
		// would write a time.Time's wall clock in the process's zone.
		format: mappingAvro, row: "`local-timestamp-millis`", typ: `{"type":"long","logicalType":"local-timestamp-millis"}`, field: "local",
		in:      time.Date(2024, 5, 1, 12, 0, 0, 0, time.UTC).UnixMilli(),
		celType: "timestamp", cel: []string{`value.local == timestamp("2024-05-01T12:00:00Z")`},
		text: "2024-05-01T12:00:00Z", write: `value.local + duration("1h")`, want: time.Date(2024, 5, 1, 13, 0, 0, 0, time.Local),
	},
	{
		format: mappingAvro, row: "`local-timestamp-micros`", typ: `{"type":"long","logicalType":"local-timestamp-micros"}`, field: "local",
		in:      time.Date(2024, 5, 1, 12, 0, 0, 1e3, time.UTC).UnixMicro(),
		celType: "timestamp", cel: []string{`value.local > timestamp("2024-05-01T12:00:00Z")`},
		text: "2024-05-01T12:00:00.000001Z", write: `value.local + duration("1h")`, want: time.Date(2024, 5, 1, 13, 0, 0, 1e3, time.Local),
	},
	{
		format: mappingAvro, row: "`duration` (`fixed` of 12)", typ: `{"type":"fixed","name":"Period","size":12,"logicalType":"duration"}`, field: "period",
		in:      avro.LogicalDuration{Months: 1, Days: 2, Milliseconds: 3},
		celType: "bytes", cel: []string{`size(value.period) == 12`},
		text: "AQAAAAIAAAADAAAA", write: `"AAAAAAcAAAAAAAAA"`, want: avro.LogicalDuration{Days: 7},
	},

	// Protobuf
	{
		format: mappingProto, row: "`double`", typ: "double price = 1;", field: "price", in: mappingMsg{"price": 12.5},
		celType: "double", cel: []string{`value.price > 10.0`},
		text: "12.5", write: `value.price * 2.0`, want: `{"price":25}`,
	},
	{
		format: mappingProto, row: "`float`", typ: "float ratio = 1;", field: "ratio", in: mappingMsg{"ratio": float32(0.1)},
		celType: "double", cel: []string{`value.ratio == 0.10000000149011612`},
		text: "0.10000000149011612", write: `0.25`, want: `{"ratio":0.25}`,
	},
	{
		format: mappingProto, row: "`int32`, `sint32`, `sfixed32`", types: []string{"int32", "sint32", "sfixed32"},
		typ: "TYPE qty = 1;", field: "qty", in: mappingMsg{"qty": int32(3)},
		celType: "int", cel: []string{`value.qty + 1 == 4`},
		text: "3", write: `value.qty * 2`, want: `{"qty":6}`,
		fails: []mappingFail{{"qty", `value.qty * 1000000000`, "out of range"}},
	},
	{
		format: mappingProto, row: "`int64`, `sint64`, `sfixed64`", types: []string{"int64", "sint64", "sfixed64"},
		typ: "TYPE id = 1;", field: "id", in: mappingMsg{"id": int64(9007199254740993)},
		celType: "int", cel: []string{`value.id == 9007199254740993`},
		text: "9007199254740993", write: `value.id + 1`, want: `{"id":"9007199254740994"}`,
	},
	{
		format: mappingProto, row: "`uint32`, `fixed32`", types: []string{"uint32", "fixed32"},
		typ: "TYPE count = 1;", field: "count", in: mappingMsg{"count": uint32(7)},
		celType: "uint", cel: []string{`value.count == 7u`, `value.count > 5`},
		text: "7", write: `value.count + 1u`, want: `{"count":8}`,
		fails: []mappingFail{{"count", `value.count + 1`, "no such overload"}},
	},
	{
		format: mappingProto, row: "`uint64`, `fixed64`", types: []string{"uint64", "fixed64"},
		typ: "TYPE big = 1;", field: "big", in: mappingMsg{"big": uint64(18446744073709551615)},
		celType: "uint", cel: []string{`value.big == 18446744073709551615u`},
		text: "18446744073709551615", write: `value.big - 1u`, want: `{"big":"18446744073709551614"}`,
	},
	{
		format: mappingProto, row: "`bool`", typ: "bool paid = 1;", field: "paid", in: mappingMsg{},
		celType: "bool", cel: []string{`!value.paid`},
		text: "false", write: `true`, want: `{"paid":true}`,
	},
	{
		format: mappingProto, row: "`string`", typ: "string customer = 1;", field: "customer", in: mappingMsg{"customer": "Ada"},
		celType: "string", cel: []string{`value.customer == "Ada"`},
		text: "Ada", write: `value.customer + " Lovelace"`, want: `{"customer":"Ada Lovelace"}`,
	},
	{
		format: mappingProto, row: "`bytes`", typ: "bytes sig = 1;", field: "sig", in: mappingMsg{"sig": []byte{1, 2, 3}},
		celType: "bytes", cel: []string{`value.sig == b"\x01\x02\x03"`},
		text: "AQID", write: `"AQIDBA=="`, want: `{"sig":"AQIDBA=="}`,
	},
	{
		format: mappingProto, row: "`enum`", typ: "Status status = 1; enum Status { NEW = 0; PAID = 1; SHIPPED = 2; }",
		field: "status", in: mappingMsg{"status": mappingEnum(1)},
		celType: "string", cel: []string{`value.status == "PAID"`},
		text: "PAID", write: `"SHIPPED"`, want: `{"status":"SHIPPED"}`,
		fails: []mappingFail{{"status", `"LOST"`, `has no value "LOST"`}},
	},
	{
		format: mappingProto, row: "`enum`, a number it has no name for", typ: "Status status = 1; enum Status { NEW = 0; PAID = 1; SHIPPED = 2; }",
		field: "status", in: mappingMsg{"status": mappingEnum(7)},
		celType: "int", cel: []string{`value.status == 7`},
		text: "7", write: `value.status + 1`, want: `{"status":8}`,
	},
	{
		format: mappingProto, row: "message", typ: "Customer customer = 1; message Customer { string name = 1; int32 tier = 2; }",
		field: "customer", in: mappingMsg{"customer": mappingMsg{"name": "Ada", "tier": int32(2)}},
		celType: "map", cel: []string{`value.customer.name == "Ada"`},
		text: `{"name":"Ada","tier":2}`, also: [][2]string{{"customer.name", "Ada"}},
		write: `{"name": "Bo", "tier": 3}`, want: `{"customer":{"name":"Bo","tier":3}}`,
		fails: []mappingFail{{"customer.vip", `true`, `field "vip" is not in message`}},
	},
	{
		format: mappingProto, row: "a field with presence, unset", typ: "optional string coupon = 1;",
		field: "coupon", in: mappingMsg{},
		celType: "", cel: []string{`!has(value.coupon)`, `value.?coupon.orValue("none") == "none"`},
		text: "", write: `"SAVE10"`, want: `{"coupon":"SAVE10"}`,
		fails: []mappingFail{{"coupon", `value.coupon`, "no such key"}},
	},
	{
		format: mappingProto, row: "a proto3 field without presence, unset", typ: "int32 qty = 1;",
		field: "qty", in: mappingMsg{},
		celType: "int", cel: []string{`has(value.qty)`, `value.qty == 0`},
		text: "0", write: `5`, want: `{"qty":5}`,
	},
	{
		format: mappingProto, row: "`repeated`", typ: "repeated string tags = 1;", field: "tags",
		in:      mappingMsg{"tags": []any{"a", "b"}},
		celType: "list", cel: []string{`"a" in value.tags`},
		text: `["a","b"]`, write: `value.tags + ["c"]`, want: `{"tags":["a","b","c"]}`,
	},
	{
		format: mappingProto, row: "`map` with `string` keys", typ: "map<string, int32> stock = 1;", field: "stock",
		in:      mappingMsg{"stock": mappingMap{"a": int32(3)}},
		celType: "map", cel: []string{`value.stock["a"] == 3`},
		text: `{"a":3}`, also: [][2]string{{"stock.a", "3"}},
		write: `{"a": 4, "b": 1}`, want: `{"stock":{"a":4,"b":1}}`,
	},
	{
		format: mappingProto, row: "`map` with integer keys", types: []string{"int32", "int64", "uint32", "sint64", "fixed64"},
		typ: "map<TYPE, string> names = 1;", field: "names",
		in:      mappingMsg{"names": mappingMap{7: "seven"}},
		celType: "map", cel: []string{`value.names["7"] == "seven"`},
		text: `{"7":"seven"}`, also: [][2]string{{"names.7", "seven"}},
		write: `{"8": "eight"}`, want: `{"names":{"8":"eight"}}`,
		fails: []mappingFail{{"names", `{"x": "ex"}`, `map key "x" is not a decimal`}, {"names", `value.names[7]`, "no such key"}},
	},
	{
		format: mappingProto, row: "`map` with `bool` keys", typ: "map<bool, string> flags = 1;", field: "flags",
		in:      mappingMsg{"flags": mappingMap{true: "yes"}},
		celType: "map", cel: []string{`value.flags["true"] == "yes"`},
		text: `{"true":"yes"}`, also: [][2]string{{"flags.true", "yes"}},
		write: `{"false": "no"}`, want: `{"flags":{"false":"no"}}`,
	},
	{
		format: mappingProto, row: "`oneof`", typ: "oneof payment { string card = 1; string iban = 2; }", field: "card",
		in:      mappingMsg{"card": "4111"},
		celType: "string", cel: []string{`has(value.card) && !has(value.iban)`},
		text: "4111", write: `value.card + "-1"`, want: `{"card":"4111-1"}`,
		fails: []mappingFail{{"iban", `"DE89"`, "oneof payment takes one field; card and iban are both set"}},
	},
	{
		format: mappingProto, row: "`google.protobuf.Timestamp`", typ: "google.protobuf.Timestamp placed = 1;", field: "placed",
		in:      mappingMsg{"placed": timestamppb.New(time.Date(2024, 5, 1, 12, 0, 0, 123456789, time.UTC))},
		celType: "timestamp", cel: []string{`value.placed < timestamp("2025-01-01T00:00:00Z")`},
		text: "2024-05-01T12:00:00.123456789Z", write: `value.placed + duration("1h")`,
		want: `{"placed":"2024-05-01T13:00:00.123456789Z"}`,
	},
	{
		format: mappingProto, row: "`google.protobuf.Duration`", typ: "google.protobuf.Duration ttl = 1;", field: "ttl",
		in:      mappingMsg{"ttl": durationpb.New(90 * time.Minute)},
		celType: "duration", cel: []string{`value.ttl > duration("1h")`},
		text: "1h30m0s", write: `value.ttl + duration("30m")`, want: `{"ttl":"7200s"}`,
	},
	{
		format: mappingProto, row: "wrappers (`google.protobuf.Int64Value`, …)", typ: "google.protobuf.Int64Value limit = 1;", field: "limit",
		in:      mappingMsg{"limit": wrapperspb.Int64(5)},
		celType: "int", cel: []string{`value.limit == 5`},
		text: "5", write: `value.limit + 1`, want: `{"limit":"6"}`,
	},
	{
		format: mappingProto, row: "`google.protobuf.Struct`", typ: "google.protobuf.Struct meta = 1;", field: "meta",
		in:      mappingMsg{"meta": mappingStruct(map[string]any{"source": "web", "n": 3})},
		celType: "map", cel: []string{`value.meta.source == "web"`, `value.meta.n == 3.0`},
		text: `{"n":3,"source":"web"}`, also: [][2]string{{"meta.source", "web"}},
		write: `{"source": "app", "n": 4}`, want: `{"meta":{"n":4,"source":"app"}}`,
	},
	{
		format: mappingProto, row: "`google.protobuf.Value`", typ: "google.protobuf.Value extra = 1;", field: "extra",
		in:      mappingMsg{"extra": structpb.NewNumberValue(2.5)},
		celType: "double", cel: []string{`value.extra == 2.5`},
		text: "2.5", write: `"two"`, want: `{"extra":"two"}`,
	},
	{
		format: mappingProto, row: "`google.protobuf.Value` holding null", typ: "google.protobuf.Value extra = 1;", field: "extra",
		in:      mappingMsg{"extra": structpb.NewNullValue()},
		celType: "null_type", cel: []string{`has(value.extra)`, `value.extra == null`},
		text: "null", write: `null`, want: `{"extra":null}`,
	},
	{
		format: mappingProto, row: "`google.protobuf.ListValue`", typ: "google.protobuf.ListValue items = 1;", field: "items",
		in:      mappingMsg{"items": mappingList([]any{"a", 1})},
		celType: "list", cel: []string{`value.items[1] == 1.0`},
		text: `["a",1]`, write: `value.items + [true]`, want: `{"items":["a",1,true]}`,
	},
	{
		format: mappingProto, row: "`google.protobuf.Empty`", typ: "google.protobuf.Empty ping = 1;", field: "ping",
		in:      mappingMsg{"ping": &emptypb.Empty{}},
		celType: "map", cel: []string{`value.ping == {}`},
		text: "{}", write: `{}`, want: `{"ping":{}}`,
	},
	{
		format: mappingProto, row: "`google.protobuf.FieldMask`", typ: "google.protobuf.FieldMask mask = 1;", field: "mask",
		in:      mappingMsg{"mask": &fieldmaskpb.FieldMask{Paths: []string{"name", "price"}}},
		celType: "list", cel: []string{`"price" in value.mask`},
		text: `["name","price"]`, write: `value.mask + ["qty"]`, want: `{"mask":"name,price,qty"}`,
	},
	{
		format: mappingProto, row: "`google.protobuf.Any`", typ: "google.protobuf.Any detail = 1;", field: "detail",
		in:      mappingMsg{"detail": mappingAny(wrapperspb.String("hi"))},
		celType: "map", cel: []string{`value.detail.type_url.endsWith("/google.protobuf.StringValue")`},
		text:  `{"type_url":"type.googleapis.com/google.protobuf.StringValue","value":"CgJoaQ=="}`,
		also:  [][2]string{{"detail.value", "CgJoaQ=="}},
		write: `{"type_url": value.detail.type_url, "value": b"\x0a\x03bye"}`,
		want:  `{"detail":{"@type":"type.googleapis.com/google.protobuf.StringValue","value":"bye"}}`,
	},

	// JSON Schema
	{
		format: mappingJSON, row: "`number`", typ: `{"type":"number"}`, field: "amount", in: `{"amount":12.30}`,
		celType: "double", cel: []string{`value.amount > 10.0`},
		text: "12.30", write: `value.amount * 2.0`, want: `24.6`,
	},
	{
		format: mappingJSON, row: "`integer`", typ: `{"type":"integer"}`, field: "qty", in: `{"qty":5}`,
		celType: "double", cel: []string{`value.qty + 1.0 == 6.0`, `int(value.qty) == 5`},
		text: "5", write: `int(value.qty) * 2`, want: `10`,
		fails: []mappingFail{{"qty", `value.qty / 2.0`, "does not fit the JSON schema"}, {"qty", `value.qty + 1`, "no such overload"}},
	},
	{
		format: mappingJSON, row: "an integer beyond 2^53", typ: `{"type":"integer"}`, field: "id", in: `{"id":9007199254740993}`,
		celType: "int", cel: []string{`value.id == 9007199254740993`},
		text: "9007199254740993", write: `value.id + 1`, want: `9007199254740994`,
	},
	{
		format: mappingJSON, row: "`string`", typ: `{"type":"string"}`, field: "customer", in: `{"customer":"Ada"}`,
		celType: "string", cel: []string{`value.customer == "Ada"`},
		text: "Ada", write: `value.customer + " Lovelace"`, want: `"Ada Lovelace"`,
	},
	{
		format: mappingJSON, row: "`string` with a `format` (`date-time`, …)", typ: `{"type":"string","format":"date-time"}`,
		field: "placed", in: `{"placed":"2024-05-01T12:00:00Z"}`,
		celType: "string", cel: []string{`timestamp(value.placed) < timestamp("2025-01-01T00:00:00Z")`},
		text: "2024-05-01T12:00:00Z", write: `timestamp(value.placed) + duration("1h")`, want: `"2024-05-01T13:00:00Z"`,
	},
	{
		format: mappingJSON, row: "`boolean`", typ: `{"type":"boolean"}`, field: "paid", in: `{"paid":true}`,
		celType: "bool", cel: []string{`value.paid`},
		text: "true", write: `!value.paid`, want: `false`,
	},
	{
		format: mappingJSON, row: "`null`", typ: `{"type":["string","null"]}`, field: "note", in: `{"note":null}`,
		celType: "null_type", cel: []string{`has(value.note)`, `value.note == null`},
		text: "null", write: `"gift"`, want: `"gift"`,
	},
	{
		format: mappingJSON, row: "`object`", field: "customer",
		typ:     `{"type":"object","properties":{"name":{"type":"string"},"tier":{"type":"integer"}},"additionalProperties":false}`,
		in:      `{"customer":{"name":"Ada","tier":2}}`,
		celType: "map", cel: []string{`value.customer.name == "Ada"`},
		text: `{"name":"Ada","tier":2}`, also: [][2]string{{"customer.name", "Ada"}},
		write: `{"name": "Bo", "tier": 3}`, want: `{"name":"Bo","tier":3}`,
	},
	{
		format: mappingJSON, row: "`array`", typ: `{"type":"array","items":{"type":"string"}}`, field: "tags", in: `{"tags":["a","b"]}`,
		celType: "list", cel: []string{`"a" in value.tags`},
		text: `["a","b"]`, write: `value.tags + ["c"]`, want: `["a","b","c"]`,
	},
}

func TestEveryRowOfTheFormatsTableHoldsForItsType(t *testing.T) {
	for _, c := range mappingCases {
		t.Run(c.format+"/"+strings.ReplaceAll(c.row, "`", ""), func(t *testing.T) {
			if c.format != mappingProto || len(c.types) == 0 {
				c.check(t, c.typ)
				return
			}
			for _, typ := range c.types {
				t.Run(typ, func(t *testing.T) { c.check(t, strings.ReplaceAll(c.typ, "TYPE", typ)) })
			}
		})
	}
}

// mappingIO is a case's record as its independent writer wrote it, and
// its independent reader.
type mappingIO struct {
	format  string // config.FormatAvro, ...
	schema  sr.Schema
	indexes []int  // the Protobuf message indexes
	payload []byte // the encoded value, without the Confluent header
	// read is what the independent reader reads in payload: the value
	// at the case's field (Avro, JSON), or the message (Protobuf).
	read func(t *testing.T, payload []byte) any
}

// check runs case c with its field of type typ.
func (c mappingCase) check(t *testing.T, typ string) {
	ctx := context.Background()
	var rw mappingIO
	switch c.format {
	case mappingAvro:
		rw = c.avroIO(t, typ)
	case mappingProto:
		rw = c.protoIO(t, typ)
	default:
		rw = c.jsonIO(t, typ)
	}
	reg := NewMemoryRegistry()
	ss, err := reg.Register(ctx, "in-value", rw.schema)
	if err != nil {
		t.Fatal(err)
	}
	in, err := wire.AppendEncode(nil, ss.ID, rw.indexes)
	if err != nil {
		t.Fatal(err)
	}
	in = append(in, rw.payload...)
	formats := mappingFormats{
		dec: &decoder{side: side{rw.format, "value", "source.value_format"}, reg: reg},
		// No output schema: the value is written with its source's.
		enc: &encoder{side: side{rw.format, "value", "output.value_format"}, reg: reg, topic: "out"},
	}
	run := func(specs ...transform.Spec) ([]*transform.Record, error) {
		t.Helper()
		chain, err := transform.BuildWith(specs, transform.Options{Formats: formats})
		if err != nil {
			t.Fatalf("building the chain: %v", err)
		}
		return chain.Apply(ctx, &transform.Record{Value: bytes.Clone(in), Source: transform.Source{Topic: "in", DeliveryCount: 1}})
	}

	// The steps of the row: every condition must keep the record, then
	// set writes.
	keep := func(w transform.Condition) transform.Spec {
		return transform.Spec{Type: "filter", Action: "keep", When: &w}
	}
	var filters []transform.Spec
	for _, e := range c.cel {
		filters = append(filters, keep(transform.Condition{Expr: e}))
	}
	if c.celType == "" {
		absent := false
		filters = append(filters,
			keep(transform.Condition{Expr: "!has(" + mappingCEL(c.field) + ")"}),
			keep(transform.Condition{Field: c.field, Exists: &absent}))
	} else {
		filters = append(filters,
			keep(transform.Condition{Expr: fmt.Sprintf("type(%s) == %s", mappingCEL(c.field), mappingCELTypes[c.celType])}),
			keep(transform.Condition{Field: c.field, Equals: &c.text}))
	}
	for _, a := range c.also {
		filters = append(filters, keep(transform.Condition{Field: a[0], Equals: &a[1]}))
	}
	set := transform.Spec{Type: "set", Field: c.field, Expr: c.write}

	out, err := run(append(filters, set)...)
	if err != nil {
		t.Fatalf("the chain fails: %v", err)
	}
	if len(out) != 1 {
		// Which condition dropped it?
		tree, err := formats.dec.Decode(ctx, in)
		t.Errorf("the chain wrote %d records, want 1; the value decodes to %#v (error %v)", len(out), tree, err)
		for _, f := range filters {
			if out, err := run(f); err != nil || len(out) != 1 {
				t.Errorf("this condition does not hold: %s (error %v)", mappingDescribe(f.When), err)
			}
		}
		t.FailNow()
	}
	_, payload, err := wire.DecodeID(out[0].Value)
	if err != nil {
		t.Fatal(err)
	}
	if rw.indexes != nil {
		if _, payload, err = wire.DecodeIndex(payload, maxIndexes); err != nil {
			t.Fatal(err)
		}
	}
	if got := rw.read(t, payload); !mappingEqual(got, c.want) {
		t.Errorf("after set %s to %s, the independent reader reads %#v, want %#v", c.field, c.write, got, c.want)
	}

	for _, f := range c.fails {
		out, err := run(transform.Spec{Type: "set", Field: f.field, Expr: f.expr})
		switch {
		case err == nil:
			t.Errorf("set %s to %s: the chain wrote %d records, want it to fail", f.field, f.expr, len(out))
		case transform.Classify(err).Kind != transform.KindPermanent:
			t.Errorf("set %s to %s fails with %v, not a permanent error: the record would not be dead-lettered", f.field, f.expr, err)
		case !strings.Contains(err.Error(), f.msg):
			t.Errorf("set %s to %s fails with %q, want it to say %q", f.field, f.expr, err, f.msg)
		}
	}
}

// mappingDescribe says what a case's condition tests.
func mappingDescribe(w *transform.Condition) string {
	switch {
	case w.Expr != "":
		return w.Expr
	case w.Equals != nil:
		return fmt.Sprintf("field %s equals %q", w.Field, *w.Equals)
	case w.Exists != nil:
		return fmt.Sprintf("field %s exists: %v", w.Field, *w.Exists)
	}
	return fmt.Sprintf("%+v", *w)
}

// mappingFormats reads and writes values with one codec, keys as text.
type mappingFormats struct {
	dec transform.Decoder
	enc transform.Encoder
}

func (f mappingFormats) Source(string) (value, key transform.Decoder) { return f.dec, transform.Text }
func (f mappingFormats) Output(string) (value, key transform.Encoder) { return f.enc, transform.Text }

// mappingCELTypes are the CEL type names the table writes, as CEL
// expressions name the types.
var mappingCELTypes = map[string]string{
	"null_type": "null_type", "bool": "bool", "int": "int", "uint": "uint", "double": "double",
	"string": "string", "bytes": "bytes", "list": "list", "map": "map",
	"timestamp": "google.protobuf.Timestamp", "duration": "google.protobuf.Duration",
}

// mappingIdent is a path segment CEL can select as a field.
var mappingIdent = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// mappingCEL is the CEL expression of the value at a dotted path.
func mappingCEL(path string) string {
	out := "value"
	for seg := range strings.SplitSeq(path, ".") {
		if mappingIdent.MatchString(seg) {
			out += "." + seg
		} else {
			out += fmt.Sprintf("[%q]", seg)
		}
	}
	return out
}

// mappingEqual compares what an independent reader read with what a case
// wants: decimals by value, times as instants.
func mappingEqual(got, want any) bool {
	switch w := want.(type) {
	case *big.Rat:
		g, ok := got.(*big.Rat)
		return ok && g.Cmp(w) == 0
	case time.Time:
		g, ok := got.(time.Time)
		return ok && g.Equal(w)
	case string:
		if g, ok := got.(mappingJSONText); ok {
			return string(g) == mappingCompact(w)
		}
	}
	return reflect.DeepEqual(got, want)
}

// mappingJSONText is JSON an independent reader read, compacted with its
// object keys sorted.
type mappingJSONText string

// mappingCompact is JSON text s compacted, its object keys sorted.
func mappingCompact(s string) string {
	dec := json.NewDecoder(strings.NewReader(s))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return "not JSON: " + s
	}
	b, err := json.Marshal(v)
	if err != nil {
		return "not JSON: " + s
	}
	return string(b)
}

// avroIO writes a record of one field, c.field of type typ, with hamba's
// encoder of Go values, and reads what the chain writes with hamba's
// decoder into Go values.
func (c mappingCase) avroIO(t *testing.T, typ string) mappingIO {
	text := `{"type":"record","name":"Row","namespace":"test","fields":[{"name":"` + c.field + `","type":` + typ + `}]}`
	// A cache of its own: the rows define the same names differently.
	s, err := avro.ParseWithCache(text, "", &avro.SchemaCache{})
	if err != nil {
		t.Fatalf("hamba cannot parse %s: %v", text, err)
	}
	payload, err := avro.Marshal(s, map[string]any{c.field: c.in})
	if err != nil {
		t.Fatalf("hamba cannot write %#v: %v", c.in, err)
	}
	return mappingIO{
		format:  config.FormatAvro,
		schema:  sr.Schema{Schema: text, Type: sr.TypeAvro},
		payload: payload,
		read: func(t *testing.T, b []byte) any {
			var m map[string]any
			if err := avro.Unmarshal(s, b, &m); err != nil {
				t.Fatalf("hamba cannot read what the chain wrote: %v", err)
			}
			return m[c.field]
		},
	}
}

// protoIO writes a message Row of the fields decl declares, set to c.in,
// with dynamicpb and proto.Marshal, and reads what the chain writes with
// them, as protojson.
func (c mappingCase) protoIO(t *testing.T, decl string) mappingIO {
	text := `syntax = "proto3";
package test;
import "google/protobuf/any.proto";
import "google/protobuf/duration.proto";
import "google/protobuf/empty.proto";
import "google/protobuf/field_mask.proto";
import "google/protobuf/struct.proto";
import "google/protobuf/timestamp.proto";
import "google/protobuf/wrappers.proto";
message Row { ` + decl + ` }
`
	fd, err := compileProto("row.proto", map[string]string{"row.proto": text})
	if err != nil {
		t.Fatal(err)
	}
	md := fd.Messages().ByName("Row")
	m := dynamicpb.NewMessage(md)
	mappingProtoFields(t, m, c.in.(mappingMsg))
	payload, err := proto.Marshal(m)
	if err != nil {
		t.Fatalf("proto.Marshal: %v", err)
	}
	return mappingIO{
		format:  config.FormatProtobuf,
		schema:  sr.Schema{Schema: text, Type: sr.TypeProtobuf},
		indexes: []int{0},
		payload: payload,
		read: func(t *testing.T, b []byte) any {
			m := dynamicpb.NewMessage(md)
			if err := proto.Unmarshal(b, m); err != nil {
				t.Fatalf("proto.Unmarshal of what the chain wrote: %v", err)
			}
			j, err := protojson.Marshal(m)
			if err != nil {
				t.Fatalf("protojson: %v", err)
			}
			return mappingJSONText(mappingCompact(string(j)))
		},
	}
}

// mappingProtoFields sets m's fields to the values of fields.
func mappingProtoFields(t *testing.T, m protoreflect.Message, fields mappingMsg) {
	t.Helper()
	for name, v := range fields {
		fd := m.Descriptor().Fields().ByName(protoreflect.Name(name))
		if fd == nil {
			t.Fatalf("%s has no field %s", m.Descriptor().FullName(), name)
		}
		switch {
		case fd.IsList():
			l := m.Mutable(fd).List()
			for _, e := range v.([]any) {
				l.Append(protoreflect.ValueOf(e))
			}
		case fd.IsMap():
			mp := m.Mutable(fd).Map()
			for k, e := range v.(mappingMap) {
				key := mappingProtoScalar(t, fd.MapKey(), k)
				mp.Set(key.MapKey(), mappingProtoScalar(t, fd.MapValue(), e))
			}
		case fd.Message() != nil:
			if sub, ok := v.(mappingMsg); ok {
				mappingProtoFields(t, m.Mutable(fd).Message(), sub)
				continue
			}
			m.Set(fd, protoreflect.ValueOfMessage(v.(proto.Message).ProtoReflect()))
		default:
			m.Set(fd, mappingProtoScalar(t, fd, v))
		}
	}
}

// mappingProtoScalar is v as a value of fd's scalar kind: an untyped Go
// int converted to the kind's integer type.
func mappingProtoScalar(t *testing.T, fd protoreflect.FieldDescriptor, v any) protoreflect.Value {
	t.Helper()
	if e, ok := v.(mappingEnum); ok {
		return protoreflect.ValueOfEnum(protoreflect.EnumNumber(e))
	}
	if n, ok := v.(int); ok {
		switch fd.Kind() {
		case protoreflect.Int32Kind, protoreflect.Sint32Kind, protoreflect.Sfixed32Kind:
			return protoreflect.ValueOfInt32(int32(n))
		case protoreflect.Int64Kind, protoreflect.Sint64Kind, protoreflect.Sfixed64Kind:
			return protoreflect.ValueOfInt64(int64(n))
		case protoreflect.Uint32Kind, protoreflect.Fixed32Kind:
			return protoreflect.ValueOfUint32(uint32(n))
		case protoreflect.Uint64Kind, protoreflect.Fixed64Kind:
			return protoreflect.ValueOfUint64(uint64(n))
		}
		t.Fatalf("an int for a %v", fd.Kind())
	}
	return protoreflect.ValueOf(v)
}

// mappingStruct, mappingList and mappingAny build well-known messages,
// failing on what cannot happen for the values the cases pass.
func mappingStruct(m map[string]any) *structpb.Struct {
	s, err := structpb.NewStruct(m)
	if err != nil {
		panic(err)
	}
	return s
}

func mappingList(l []any) *structpb.ListValue {
	v, err := structpb.NewList(l)
	if err != nil {
		panic(err)
	}
	return v
}

func mappingAny(m proto.Message) *anypb.Any {
	a, err := anypb.New(m)
	if err != nil {
		panic(err)
	}
	return a
}

// jsonIO writes c.in, a JSON object whose field c.field is of JSON Schema
// typ, as it is, and reads what the chain writes with encoding/json.
func (c mappingCase) jsonIO(t *testing.T, typ string) mappingIO {
	text := `{"type":"object","properties":{"` + c.field + `":` + typ + `},"required":["` + c.field + `"],"additionalProperties":false}`
	return mappingIO{
		format:  config.FormatJSONSchema,
		schema:  sr.Schema{Schema: text, Type: sr.TypeJSON},
		payload: []byte(c.in.(string)),
		read: func(t *testing.T, b []byte) any {
			var m map[string]json.RawMessage
			if err := json.Unmarshal(b, &m); err != nil {
				t.Fatalf("what the chain wrote is not a JSON object: %v: %s", err, b)
			}
			return mappingJSONText(mappingCompact(string(m[c.field])))
		},
	}
}

// The table in docs/formats.md: the section's heading, and the columns
// the cases check.
const (
	mappingDoc     = "../docs/formats.md"
	mappingSection = "## How values look to the steps"
	mappingColCEL  = "in CEL"
	mappingColPath = "in a path"
	mappingColBack = "written back"
)

// mappingDocRow is one row of the table: its cells by column heading.
type mappingDocRow map[string]string

// mappingDocRows reads the tables of the section, by the heading of each
// table and the first cell of each row.
func mappingDocRows(t *testing.T) map[[2]string]mappingDocRow {
	t.Helper()
	b, err := os.ReadFile(mappingDoc)
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(b), "\n"+mappingSection+"\n")
	if !ok {
		t.Fatalf("%s has no section %q", mappingDoc, mappingSection)
	}
	if i := strings.Index(section, "\n## "); i >= 0 {
		section = section[:i]
	}
	rows := map[[2]string]mappingDocRow{}
	var heading string
	var cols []string
	for line := range strings.SplitSeq(section, "\n") {
		switch {
		case strings.HasPrefix(line, "### "):
			heading, cols = strings.TrimPrefix(line, "### "), nil
		case !strings.HasPrefix(line, "|"):
			cols = nil
		case cols == nil:
			cols = mappingCells(line)
		case strings.HasPrefix(line, "|---") || strings.HasPrefix(line, "| ---"):
		default:
			cells := mappingCells(line)
			if len(cells) != len(cols) {
				t.Fatalf("%s, table %s: row %q has %d cells, the table %d", mappingDoc, heading, cells[0], len(cells), len(cols))
			}
			row := mappingDocRow{}
			for i, c := range cols {
				row[c] = cells[i]
			}
			key := [2]string{heading, cells[0]}
			if _, dup := rows[key]; dup {
				t.Errorf("%s, table %s: two rows %s", mappingDoc, heading, cells[0])
			}
			rows[key] = row
		}
	}
	return rows
}

// mappingCells splits a table's line into its cells, trimmed. A cell
// cannot hold a |: the table has none.
func mappingCells(line string) []string {
	cells := strings.Split(strings.Trim(strings.TrimSpace(line), "|"), "|")
	for i, c := range cells {
		cells[i] = strings.TrimSpace(c)
	}
	return cells
}

func TestTheFormatsTableAndItsTestsHaveTheSameRows(t *testing.T) {
	rows := mappingDocRows(t)
	if len(rows) == 0 {
		t.Fatalf("%s: no table rows under %q", mappingDoc, mappingSection)
	}
	tested := map[[2]string]bool{}
	for _, c := range mappingCases {
		key := [2]string{c.format, c.row}
		tested[key] = true
		row, ok := rows[key]
		if !ok {
			t.Errorf("%s, table %s, has no row %s", mappingDoc, c.format, c.row)
			continue
		}
		shows := func(col, example string) {
			if !strings.Contains(row[col], "`"+example+"`") {
				t.Errorf("%s, table %s, row %s: column %q does not show `%s`, which its test checks", mappingDoc, c.format, c.row, col, example)
			}
		}
		if c.celType == "" {
			if !strings.HasPrefix(row[mappingColCEL], "absent") || !strings.Contains(row[mappingColPath], "absent") {
				t.Errorf("%s, table %s, row %s: the field is absent, which columns %q and %q do not say", mappingDoc, c.format, c.row, mappingColCEL, mappingColPath)
			}
		} else {
			shows(mappingColCEL, c.celType)
			shows(mappingColPath, c.text)
		}
		for _, e := range c.cel {
			shows(mappingColCEL, e)
		}
		for _, a := range c.also {
			shows(mappingColPath, a[0])
			shows(mappingColPath, a[1])
		}
		shows(mappingColBack, c.write)
		for _, f := range c.fails {
			if !slices.ContainsFunc(slices.Collect(maps.Values(row)), func(cell string) bool { return strings.Contains(cell, "`"+f.expr+"`") }) {
				t.Errorf("%s, table %s, row %s: no column shows `%s`, which its test checks fails", mappingDoc, c.format, c.row, f.expr)
			}
		}
	}
	var untested []string
	for key := range rows {
		if !tested[key] {
			untested = append(untested, key[0]+": "+key[1])
		}
	}
	slices.Sort(untested)
	for _, r := range untested {
		t.Errorf("%s has a row no test checks: %s", mappingDoc, r)
	}
}
