package format

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"math"
	"strconv"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/structpb"
	"google.golang.org/protobuf/types/known/timestamppb"
	"pgregory.net/rapid"

	"github.com/sharerelay/sharerelay/transform"
)

// The codec reads and writes the wire format itself; the oracle
// (protobuf_oracle_test.go) is the protobuf library reading and writing
// the same messages through dynamicpb. On many generated messages of the
// test schemas the two must agree: the same bytes for a tree, the same
// tree for bytes, and the same error, or both an error of the bytes.
//
// Not generated, because the two differ on purpose: text that is not
// UTF-8 in an editions string that requires UTF-8 or in a
// google.protobuf.Value (the codec names the field; proto.Marshal said
// only "writing <message>", see TestEncodeProtoUTF8), and two texts of
// one integer map key ("1" and "01"), which the oracle writes in Go's map
// order.

// protoDiffProto2 and protoDiffEditions add to the test schemas what they
// lack: proto2 packed and unpacked repeats, negative enum values,
// defaults, a required field in a nested message, a oneof of a message, a
// repeated group, a map of messages and the largest field number; an
// editions message with delimited (group-encoded) messages, expanded
// repeats, a legacy required field and a string without UTF-8 checks.
const (
	protoDiffProto2 = `syntax = "proto2";
package diff;
enum E { A = 1; B = 2; NEG = -3; }
enum M { M0 = 0; M1 = 1; }
message Inner {
  required int32 n = 1;
  optional string s = 2;
  optional Inner next = 3;
}
message P2 {
  optional int32 i32 = 1;
  optional sint32 s32 = 2;
  optional sfixed64 sf64 = 3;
  optional float f = 4;
  optional double d = 5;
  optional bytes by = 6 [default = "xyz"];
  optional string s = 7 [default = "hi"];
  repeated int64 packed = 8 [packed = true];
  repeated sint32 unpacked = 9;
  repeated E es = 10;
  optional E e = 11 [default = B];
  optional Inner inner = 12;
  repeated Inner inners = 13;
  map<string, Inner> by_name = 14;
  map<int64, M> codes = 15;
  oneof choice {
    Inner ci = 16;
    int32 cn = 17;
    string cs = 18;
  }
  repeated group Item = 19 {
    optional int32 q = 20;
    optional string label = 21;
  }
  optional bool flag = 22;
  optional uint64 big = 536870911;
}
`
	protoDiffEditions = `edition = "2023";
package diffed;
enum Kind { KIND_UNSPECIFIED = 0; ONE = 1; }
message Ed {
  string verified = 1;
  string loose = 2 [features.utf8_validation = NONE];
  int32 implicit = 3 [features.field_presence = IMPLICIT];
  repeated int32 expanded = 4 [features.repeated_field_encoding = EXPANDED];
  repeated fixed32 packed = 5;
  Ed child = 6 [features.message_encoding = DELIMITED];
  repeated Ed children = 7 [features.message_encoding = DELIMITED];
  int32 req = 8 [features.field_presence = LEGACY_REQUIRED];
  map<string, Kind> kinds = 9;
  Kind kind = 10;
}
`
)

// protoDiffMessages are the messages the differential tests write and
// read: every message of the test schemas with something of its own, and
// well-known types as the message itself.
func protoDiffMessages(t *testing.T) []protoreflect.MessageDescriptor {
	files := protoFiles(t)
	files["diff.proto"] = protoDiffProto2
	files["diffed.proto"] = protoDiffEditions
	msg := func(file, name string) protoreflect.MessageDescriptor {
		fd, err := compileProto(file, files)
		if err != nil {
			t.Fatal(err)
		}
		md, err := protoMessageNamed(fd, name)
		if err != nil {
			t.Fatal(err)
		}
		return md
	}
	return []protoreflect.MessageDescriptor{
		msg("shop/order.proto", "shop.Order"),
		msg("shop/order.proto", "shop.Line"),
		msg("shop/order.proto", "shop.Category"),
		msg("legacy.proto", "legacy.Ticket"),
		msg("editions.proto", "ed.Paint"),
		msg("bench/order.proto", "bench.Order"),
		msg("diff.proto", "diff.P2"),
		msg("diffed.proto", "diffed.Ed"),
		(&timestamppb.Timestamp{}).ProtoReflect().Descriptor(),
		(&durationpb.Duration{}).ProtoReflect().Descriptor(),
		(&structpb.Struct{}).ProtoReflect().Descriptor(),
		(&structpb.Value{}).ProtoReflect().Descriptor(),
	}
}

func TestProtoCodecAgreesWithTheProtobufLibrary(t *testing.T) {
	messages := protoDiffMessages(t)

	t.Run("a tree encodes to the library's bytes, or to its error", func(t *testing.T) {
		rapid.Check(t, func(rt *rapid.T) {
			g := &protoGen{t: rt, bad: rapid.IntRange(0, 2).Draw(rt, "faults") == 0}
			for _, md := range messages {
				protoSameEncoding(rt, md, g.tree(md, 0))
			}
		})
	})

	t.Run("bytes decode to the library's tree, or both are refused", func(t *testing.T) {
		rapid.Check(t, func(rt *rapid.T) {
			g := &protoGen{t: rt, bad: rapid.IntRange(0, 2).Draw(rt, "faults") == 0}
			for _, md := range messages {
				protoSameDecoding(rt, md, g.bytes(md))
			}
		})
	})

	t.Run("messages nested near the limit decode and encode as the library's", func(t *testing.T) {
		var category, order protoreflect.MessageDescriptor
		for _, md := range messages {
			switch md.FullName() {
			case "shop.Category":
				category = md
			case "shop.Order":
				order = md
			}
		}
		rapid.Check(t, func(rt *rapid.T) {
			g := &protoGen{t: rt}
			n := rapid.IntRange(95, 105).Draw(rt, "depth")
			tree, wire := g.chain(n)
			protoSameEncoding(rt, category, tree)
			protoSameDecoding(rt, category, wire)
			// A Value holding Structs: each level a Value, a Struct and a
			// map entry, which the library counts as messages too.
			v := g.deepValueWire(rapid.IntRange(28, 36).Draw(rt, "values"))
			protoSameDecoding(rt, order, protowire.AppendBytes(protowire.AppendTag(nil, 51, protowire.BytesType), v))
		})
	})
}

// protoSameEncoding fails t unless encodeProto and the oracle write the
// same bytes for tree, or the same error.
func protoSameEncoding(t *rapid.T, md protoreflect.MessageDescriptor, tree any) {
	want, wantErr := oracleEncodeProto(md, tree)
	got, err := encodeProto(md, tree)
	switch {
	case (err == nil) != (wantErr == nil):
		t.Fatalf("%s: encoding %#v\ngot  %x, %v\nwant %x, %v", md.FullName(), tree, got, err, want, wantErr)
	case err != nil:
		if err.Error() != wantErr.Error() {
			t.Fatalf("%s: encoding %#v\ngot error  %v\nwant error %v", md.FullName(), tree, err, wantErr)
		}
	case !bytes.Equal(got, want):
		t.Fatalf("%s: encoding %#v\ngot  %x\nwant %x", md.FullName(), tree, got, want)
	}
}

// protoSameDecoding fails t unless decodeProto and the oracle read the
// same tree from b, or both refuse it: for the same value out of range
// or required field missing, or both for bytes that do not read (whose
// texts differ: the library's varies on purpose). The trees read must
// then encode alike too.
func protoSameDecoding(t *rapid.T, md protoreflect.MessageDescriptor, b []byte) {
	want, wantErr := protoOracleDecode(md, b)
	got, err := decodeProto(md, b)
	if errors.Is(wantErr, errProtoOraclePanicked) {
		return // and decodeProto did not panic
	}
	switch {
	case (err == nil) != (wantErr == nil):
		t.Fatalf("%s: decoding %x\ngot  %#v, %v\nwant %#v, %v", md.FullName(), b, got, err, want, wantErr)
	case err != nil:
		var gde, wde *DataError
		if !errors.As(err, &gde) || !errors.As(wantErr, &wde) {
			t.Fatalf("%s: decoding %x: got %v, want %v; both should be DataErrors", md.FullName(), b, err, wantErr)
		}
		wire := func(de *DataError) bool {
			return de.Path == "" && strings.HasPrefix(de.Msg, "not a "+string(md.FullName())+" message: ")
		}
		if wire(gde) != wire(wde) || !wire(wde) && *gde != *wde {
			t.Fatalf("%s: decoding %x\ngot error  %v\nwant error %v", md.FullName(), b, err, wantErr)
		}
		return
	}
	if d := protoDiff("", got, want); len(d) > 0 {
		t.Fatalf("%s: decoding %x:\n%s", md.FullName(), b, strings.Join(d, "\n"))
	}
	protoSameEncoding(t, md, got)
}

// errProtoOraclePanicked is oracleDecodeProto's panic: proto.Unmarshal
// into dynamicpb panics for a map entry whose key is written again with
// another wire type (see TestDecodeProtoWire).
var errProtoOraclePanicked = errors.New("the oracle panicked")

// protoOracleDecode is oracleDecodeProto, its panic an error.
func protoOracleDecode(md protoreflect.MessageDescriptor, b []byte) (v any, err error) {
	defer func() {
		if recover() != nil {
			v, err = nil, errProtoOraclePanicked
		}
	}()
	return oracleDecodeProto(md, b)
}

// protoGenDepth is how deeply generated trees and bytes nest messages,
// but for the chains made to reach the limit.
const protoGenDepth = 3

// protoGen generates trees and bytes for messages.
type protoGen struct {
	t *rapid.T
	// bad: now and then a value that does not fit (a tree) or bytes that
	// do not read (bytes).
	bad bool
}

// chance is true p times in a hundred.
func (g *protoGen) chance(p int, label string) bool {
	return rapid.IntRange(0, 99).Draw(g.t, label) < p
}

// fault is true now and then, when g makes faults.
func (g *protoGen) fault(label string) bool {
	return g.bad && g.chance(6, label)
}

// tree is a tree for a message of md, nested depth deep.
func (g *protoGen) tree(md protoreflect.MessageDescriptor, depth int) any {
	fields := md.Fields()
	switch name := md.FullName(); {
	case name == wktTimestamp:
		return g.timestamp()
	case name == wktDuration:
		return g.duration()
	case name == wktValue:
		return g.json(depth)
	case name == wktStruct:
		if g.fault("struct") {
			return "not an object"
		}
		return g.jsonObject(depth)
	case name == wktList:
		if g.fault("list") {
			return map[string]any{}
		}
		return g.jsonList(depth)
	case name == wktFieldMask:
		paths := []any{}
		for range rapid.IntRange(0, 2).Draw(g.t, "paths") {
			paths = append(paths, rapid.StringMatching(`[a-z]{1,3}(\.[a-z]{1,3})?`).Draw(g.t, "path"))
		}
		return paths
	case protoIsWrapper(name):
		return g.scalar(fields.ByNumber(1))
	}
	if g.fault("not an object") {
		return []any{}
	}
	obj := map[string]any{}
	oneofs := map[protoreflect.FullName]bool{}
	for i := range fields.Len() {
		fd := fields.Get(i)
		od := fd.ContainingOneof()
		inOneof := od != nil && !od.IsSynthetic()
		if inOneof && oneofs[od.FullName()] && !g.fault("two members") {
			continue
		}
		set := rapid.Bool().Draw(g.t, "set")
		if fd.Cardinality() == protoreflect.Required {
			set = !g.fault("required missing")
		}
		if !set || (depth >= protoGenDepth && fd.Message() != nil && fd.Cardinality() != protoreflect.Required) {
			continue
		}
		if inOneof {
			oneofs[od.FullName()] = true
		}
		obj[string(fd.Name())] = g.field(fd, depth)
	}
	if g.fault("unknown field") {
		obj["no_such_field"] = int64(1)
	}
	return obj
}

// field is a tree value for field fd of a message nested depth deep.
func (g *protoGen) field(fd protoreflect.FieldDescriptor, depth int) any {
	if g.chance(4, "nil") {
		return nil
	}
	switch {
	case fd.IsList():
		if g.fault("not a list") {
			return "not a list"
		}
		xs := []any{}
		for range rapid.IntRange(0, 3).Draw(g.t, "elements") {
			xs = append(xs, g.single(fd, depth))
		}
		return xs
	case fd.IsMap():
		if g.fault("not a map") {
			return []any{}
		}
		m := map[string]any{}
		for range rapid.IntRange(0, 3).Draw(g.t, "entries") {
			m[g.key(fd.MapKey())] = g.single(fd.MapValue(), depth)
		}
		return m
	}
	return g.single(fd, depth)
}

// single is one value of fd's type.
func (g *protoGen) single(fd protoreflect.FieldDescriptor, depth int) any {
	if md := fd.Message(); md != nil {
		if g.fault("nil message") {
			return nil
		}
		return g.tree(md, depth+1)
	}
	return g.scalar(fd)
}

// key is the text of a map key of field fd: canonical, so that no two
// texts are one key.
func (g *protoGen) key(fd protoreflect.FieldDescriptor) string {
	if g.fault("bad key") {
		return "x"
	}
	switch fd.Kind() {
	case protoreflect.StringKind:
		return g.text(fd)
	case protoreflect.BoolKind:
		return strconv.FormatBool(rapid.Bool().Draw(g.t, "key"))
	case protoreflect.Int32Kind, protoreflect.Sint32Kind, protoreflect.Sfixed32Kind:
		return strconv.FormatInt(rapid.Int64Range(math.MinInt32, math.MaxInt32).Draw(g.t, "key"), 10)
	case protoreflect.Int64Kind, protoreflect.Sint64Kind, protoreflect.Sfixed64Kind:
		return strconv.FormatInt(rapid.Int64().Draw(g.t, "key"), 10)
	case protoreflect.Uint32Kind, protoreflect.Fixed32Kind:
		return strconv.FormatUint(rapid.Uint64Range(0, math.MaxUint32).Draw(g.t, "key"), 10)
	}
	return strconv.FormatUint(rapid.Uint64().Draw(g.t, "key"), 10)
}

// scalar is a value of fd's scalar or enum kind, in one of the Go types
// the tree may hold for it.
func (g *protoGen) scalar(fd protoreflect.FieldDescriptor) any {
	if g.fault("wrong type") {
		return rapid.SampledFrom([]any{"text", true, []any{}, map[string]any{}, struct{}{}, 2.5, nil}).Draw(g.t, "wrong")
	}
	switch k := fd.Kind(); k {
	case protoreflect.BoolKind:
		return rapid.Bool().Draw(g.t, "bool")
	case protoreflect.EnumKind:
		values := fd.Enum().Values()
		v := values.Get(rapid.IntRange(0, values.Len()-1).Draw(g.t, "enum"))
		switch {
		case g.fault("no such name"):
			return "NO_SUCH_VALUE"
		case g.fault("enum out of range"):
			return int64(1 << 40)
		case !fd.Enum().IsClosed() && g.chance(15, "unnamed"), g.fault("closed unnamed"):
			return rapid.Int64Range(math.MinInt32, math.MaxInt32).Draw(g.t, "number")
		case rapid.Bool().Draw(g.t, "by number"):
			return int64(v.Number())
		}
		return string(v.Name())
	case protoreflect.Int32Kind, protoreflect.Sint32Kind, protoreflect.Sfixed32Kind:
		return g.integer(math.MinInt32, math.MaxInt32)
	case protoreflect.Int64Kind, protoreflect.Sint64Kind, protoreflect.Sfixed64Kind:
		return g.integer(math.MinInt64, math.MaxInt64)
	case protoreflect.Uint32Kind, protoreflect.Fixed32Kind:
		return g.unsigned(math.MaxUint32)
	case protoreflect.Uint64Kind, protoreflect.Fixed64Kind:
		return g.unsigned(math.MaxUint64)
	case protoreflect.FloatKind:
		if g.fault("float overflow") {
			return 1e300
		}
		return rapid.SampledFrom([]any{
			float64(rapid.Float32().Draw(g.t, "float")), 0.0, math.Copysign(0, -1), math.NaN(), math.Inf(-1),
			int64(rapid.IntRange(-1000, 1000).Draw(g.t, "int")), json.Number("1.5"), float32(2.25),
		}).Draw(g.t, "float as")
	case protoreflect.DoubleKind:
		return rapid.SampledFrom([]any{
			rapid.Float64().Draw(g.t, "double"), 0.0, math.Copysign(0, -1), math.NaN(), math.Inf(1),
			rapid.Int64().Draw(g.t, "int"), json.Number("-2.5e3"), uint64(7),
		}).Draw(g.t, "double as")
	case protoreflect.StringKind:
		return g.text(fd)
	case protoreflect.BytesKind:
		b := rapid.SliceOfN(rapid.Byte(), 0, 6).Draw(g.t, "bytes")
		switch {
		case g.fault("not base64"):
			return "not base64!"
		case rapid.Bool().Draw(g.t, "as base64"):
			return base64.StdEncoding.EncodeToString(b)
		}
		return b
	}
	return nil
}

// integer is a number from lo to hi, in one of the Go types the tree may
// hold an integer in; now and then out of range or not integral.
func (g *protoGen) integer(lo, hi int64) any {
	if g.fault("out of range") {
		if hi == math.MaxInt64 {
			return json.Number("9223372036854775808")
		}
		return hi + 1
	}
	if g.fault("fraction") {
		return 2.5
	}
	n := rapid.Int64Range(lo, hi).Draw(g.t, "integer")
	switch rapid.IntRange(0, 5).Draw(g.t, "integer as") {
	case 0:
		return json.Number(strconv.FormatInt(n, 10))
	case 1:
		if n > -1<<53 && n < 1<<53 {
			return float64(n)
		}
	case 2:
		if n >= 0 {
			return uint64(n)
		}
	case 3:
		return int(n)
	}
	return n
}

// unsigned is a number from 0 to hi, as integer is.
func (g *protoGen) unsigned(hi uint64) any {
	if g.fault("negative") {
		return int64(-1)
	}
	if g.fault("out of range") && hi < math.MaxUint64 {
		return hi + 1
	}
	u := rapid.Uint64Range(0, hi).Draw(g.t, "unsigned")
	switch rapid.IntRange(0, 3).Draw(g.t, "unsigned as") {
	case 0:
		return json.Number(strconv.FormatUint(u, 10))
	case 1:
		if u <= math.MaxInt64 {
			return int64(u)
		}
	case 2:
		if u < 1<<53 {
			return float64(u)
		}
	}
	return u
}

// text is a string for the string field fd: UTF-8 where fd requires it
// (but now and then not, for a proto3 string), any bytes where not.
func (g *protoGen) text(fd protoreflect.FieldDescriptor) string {
	if !protoEnforceUTF8(fd) {
		return string(rapid.SliceOfN(rapid.Byte(), 0, 6).Draw(g.t, "bytes text"))
	}
	if fd.Syntax() == protoreflect.Proto3 && g.fault("not UTF-8") {
		return "a\xff"
	}
	return rapid.StringN(0, 6, -1).Draw(g.t, "text")
}

// timestamp is a google.protobuf.Timestamp's tree value: a time in any
// zone, or its text.
func (g *protoGen) timestamp() any {
	switch {
	case g.fault("timestamp out of range"):
		return time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)
	case g.fault("timestamp text"):
		return "yesterday"
	case g.fault("timestamp type"):
		return int64(5)
	}
	secs := rapid.Int64Range(protoMinTimestampSecs+86400, protoMaxTimestampSecs-86400).Draw(g.t, "secs")
	zone := time.FixedZone("z", 3600*rapid.IntRange(-12, 12).Draw(g.t, "zone"))
	t := time.Unix(secs, rapid.Int64Range(0, 999999999).Draw(g.t, "nanos")).In(zone)
	if rapid.Bool().Draw(g.t, "as text") {
		return t.Format(time.RFC3339Nano)
	}
	return t
}

// duration is a google.protobuf.Duration's tree value.
func (g *protoGen) duration() any {
	if g.fault("duration text") {
		return "soon"
	}
	d := time.Duration(rapid.Int64().Draw(g.t, "duration"))
	switch rapid.IntRange(0, 2).Draw(g.t, "duration as") {
	case 0:
		return d
	case 1:
		return d.String()
	}
	return transform.Duration(d)
}

// json is a google.protobuf.Value's tree value: JSON's, or a Go value
// JSON writes as one.
func (g *protoGen) json(depth int) any {
	if g.fault("not JSON") {
		return struct{}{}
	}
	switch rapid.IntRange(0, 10).Draw(g.t, "json") {
	case 0:
		return nil
	case 1:
		return rapid.Bool().Draw(g.t, "json bool")
	case 2:
		return rapid.Float64().Draw(g.t, "json number")
	case 3:
		return rapid.Int64().Draw(g.t, "json int")
	case 4:
		return json.Number(strconv.FormatInt(rapid.Int64().Draw(g.t, "json int"), 10))
	case 5:
		return time.Unix(rapid.Int64Range(0, 1<<32).Draw(g.t, "json time"), 0).UTC()
	case 6:
		return rapid.SliceOfN(rapid.Byte(), 0, 4).Draw(g.t, "json bytes")
	case 7:
		if depth < protoGenDepth {
			return g.jsonObject(depth + 1)
		}
	case 8:
		if depth < protoGenDepth {
			return g.jsonList(depth + 1)
		}
	case 9:
		return transform.Duration(rapid.Int64().Draw(g.t, "json duration"))
	}
	return rapid.StringN(0, 6, -1).Draw(g.t, "json text")
}

func (g *protoGen) jsonObject(depth int) map[string]any {
	m := map[string]any{}
	for range rapid.IntRange(0, 3).Draw(g.t, "json keys") {
		m[rapid.StringN(0, 4, -1).Draw(g.t, "json key")] = g.json(depth + 1)
	}
	return m
}

func (g *protoGen) jsonList(depth int) []any {
	xs := []any{}
	for range rapid.IntRange(0, 3).Draw(g.t, "json elements") {
		xs = append(xs, g.json(depth+1))
	}
	return xs
}

// chain is a Category nested n deep, as a tree and as bytes.
func (g *protoGen) chain(n int) (any, []byte) {
	tree := map[string]any{"name": "leaf"}
	wire := protowire.AppendString(protowire.AppendTag(nil, 1, protowire.BytesType), "leaf")
	for range n - 1 {
		tree = map[string]any{"parent": tree}
		wire = protowire.AppendBytes(protowire.AppendTag(nil, 2, protowire.BytesType), wire)
	}
	return tree, wire
}

// deepValueWire is a google.protobuf.Value holding a Struct n deep; the
// innermost Value a bool, an empty list, or a Struct whose entry has no
// value (which the library does not read, nor count as nested).
func (g *protoGen) deepValueWire(n int) []byte {
	entry := func(value []byte) []byte {
		e := protowire.AppendString(protowire.AppendTag(nil, 1, protowire.BytesType), "k")
		if value != nil {
			e = protowire.AppendBytes(protowire.AppendTag(e, 2, protowire.BytesType), value)
		}
		st := protowire.AppendBytes(protowire.AppendTag(nil, 1, protowire.BytesType), e)
		return protowire.AppendBytes(protowire.AppendTag(nil, 5, protowire.BytesType), st)
	}
	var v []byte
	switch rapid.IntRange(0, 2).Draw(g.t, "innermost") {
	case 0:
		v = protowire.AppendVarint(protowire.AppendTag(nil, 4, protowire.VarintType), 1) // bool_value
	case 1:
		v = protowire.AppendBytes(protowire.AppendTag(nil, 6, protowire.BytesType), nil) // list_value
	default:
		v = entry(nil)
	}
	for range n {
		v = entry(v)
	}
	return v
}

// bytes is the bytes of a message of md: a tree's as the library writes
// it, or fields written one by one; then, now and then, more fields
// after (a message merged, a oneof's other member, a list's packed run),
// or the bytes cut, changed or lengthened.
func (g *protoGen) bytes(md protoreflect.MessageDescriptor) []byte {
	var b []byte
	if rapid.Bool().Draw(g.t, "from a tree") {
		good := &protoGen{t: g.t}
		var err error
		if b, err = oracleEncodeProto(md, good.tree(md, 0)); err != nil {
			b = nil
		}
	}
	if b == nil || rapid.Bool().Draw(g.t, "more fields") {
		b = append(b, g.wire(md, 0)...)
	}
	if g.bad && len(b) > 0 {
		switch rapid.IntRange(0, 3).Draw(g.t, "damage") {
		case 0:
			b = b[:rapid.IntRange(0, len(b)-1).Draw(g.t, "cut at")]
		case 1:
			i := rapid.IntRange(0, len(b)-1).Draw(g.t, "change at")
			b[i] ^= byte(rapid.IntRange(1, 255).Draw(g.t, "change by"))
		case 2:
			i := rapid.IntRange(0, len(b)).Draw(g.t, "insert at")
			b = append(b[:i], append([]byte{rapid.Byte().Draw(g.t, "insert")}, b[i:]...)...)
		}
	}
	return b
}

// wire is fields of md written one by one, nested depth deep.
func (g *protoGen) wire(md protoreflect.MessageDescriptor, depth int) []byte {
	var b []byte
	fields := md.Fields()
	for range rapid.IntRange(0, 5).Draw(g.t, "fields") {
		if fields.Len() == 0 || g.chance(8, "unknown") {
			b = g.unknown(b, protowire.Number(rapid.IntRange(100, 200).Draw(g.t, "unknown number")), depth)
			continue
		}
		fd := fields.Get(rapid.IntRange(0, fields.Len()-1).Draw(g.t, "field"))
		if g.chance(5, "wrong wire type") {
			b = g.unknown(b, fd.Number(), depth)
			continue
		}
		b = g.wireField(b, fd, depth)
	}
	return b
}

// unknown appends a field numbered num of any wire type.
func (g *protoGen) unknown(b []byte, num protowire.Number, depth int) []byte {
	switch rapid.IntRange(0, 4).Draw(g.t, "wire type") {
	case 0:
		return protowire.AppendVarint(protowire.AppendTag(b, num, protowire.VarintType), rapid.Uint64().Draw(g.t, "varint"))
	case 1:
		return protowire.AppendFixed32(protowire.AppendTag(b, num, protowire.Fixed32Type), rapid.Uint32().Draw(g.t, "fixed32"))
	case 2:
		return protowire.AppendFixed64(protowire.AppendTag(b, num, protowire.Fixed64Type), rapid.Uint64().Draw(g.t, "fixed64"))
	case 3:
		return protowire.AppendBytes(protowire.AppendTag(b, num, protowire.BytesType), rapid.SliceOfN(rapid.Byte(), 0, 6).Draw(g.t, "bytes"))
	}
	b = protowire.AppendTag(b, num, protowire.StartGroupType)
	if depth < protoGenDepth {
		b = g.unknown(b, num+1, depth+1)
	}
	return protowire.AppendTag(b, num, protowire.EndGroupType)
}

// wireField appends one occurrence of field fd: for a repeated scalar,
// one element or a packed run.
func (g *protoGen) wireField(b []byte, fd protoreflect.FieldDescriptor, depth int) []byte {
	num, k := fd.Number(), fd.Kind()
	switch {
	case fd.IsMap():
		return protowire.AppendBytes(protowire.AppendTag(b, num, protowire.BytesType), g.entry(fd, depth))
	case k == protoreflect.GroupKind:
		b = protowire.AppendTag(b, num, protowire.StartGroupType)
		b = append(b, g.wireMessage(fd.Message(), depth+1)...)
		return protowire.AppendTag(b, num, protowire.EndGroupType)
	case k == protoreflect.MessageKind:
		return protowire.AppendBytes(protowire.AppendTag(b, num, protowire.BytesType), g.wireMessage(fd.Message(), depth+1))
	case fd.IsList() && protoPackable(k) && rapid.Bool().Draw(g.t, "packed"):
		var run []byte
		for range rapid.IntRange(0, 3).Draw(g.t, "packed elements") {
			run = g.wireScalar(run, fd)
		}
		return protowire.AppendBytes(protowire.AppendTag(b, num, protowire.BytesType), run)
	}
	return g.wireScalar(protowire.AppendTag(b, num, protoWireTypes[k]), fd)
}

// wireMessage is the bytes of a message of md nested depth deep: a
// Timestamp's or Duration's mostly in range.
func (g *protoGen) wireMessage(md protoreflect.MessageDescriptor, depth int) []byte {
	if depth > protoGenDepth {
		return nil
	}
	if name := md.FullName(); (name == wktTimestamp || name == wktDuration) && rapid.Bool().Draw(g.t, "in range") {
		var b []byte
		if secs := rapid.Int64Range(0, 1<<34).Draw(g.t, "secs"); secs != 0 {
			b = protowire.AppendVarint(protowire.AppendTag(b, 1, protowire.VarintType), uint64(secs))
		}
		if nanos := rapid.Int64Range(0, 999999999).Draw(g.t, "nanos"); nanos != 0 {
			b = protowire.AppendVarint(protowire.AppendTag(b, 2, protowire.VarintType), uint64(nanos))
		}
		return b
	}
	return g.wire(md, depth)
}

// entry is the bytes of a map entry of fd: key and value in either order,
// either left out, a value written twice, an unknown field among them.
func (g *protoGen) entry(fd protoreflect.FieldDescriptor, depth int) []byte {
	var b []byte
	for range rapid.IntRange(0, 3).Draw(g.t, "entry fields") {
		switch rapid.IntRange(0, 6).Draw(g.t, "entry field") {
		case 0, 1, 2:
			b = g.wireField(b, fd.MapKey(), depth)
		case 3, 4, 5:
			b = g.wireField(b, fd.MapValue(), depth)
		default:
			b = g.unknown(b, 3, depth)
		}
	}
	return b
}

// wireScalar appends one value of the scalar or enum field fd, without
// its tag.
func (g *protoGen) wireScalar(b []byte, fd protoreflect.FieldDescriptor) []byte {
	switch protoWireTypes[fd.Kind()] {
	case protowire.Fixed32Type:
		return protowire.AppendFixed32(b, rapid.Uint32().Draw(g.t, "fixed32"))
	case protowire.Fixed64Type:
		return protowire.AppendFixed64(b, rapid.Uint64().Draw(g.t, "fixed64"))
	case protowire.BytesType:
		v := rapid.SliceOfN(rapid.Byte(), 0, 6).Draw(g.t, "bytes")
		if fd.Kind() == protoreflect.StringKind && !g.fault("not UTF-8") {
			v = []byte(rapid.StringN(0, 6, -1).Draw(g.t, "text"))
		}
		return protowire.AppendBytes(b, v)
	}
	if fd.Kind() == protoreflect.EnumKind && rapid.Bool().Draw(g.t, "a value of the enum") {
		values := fd.Enum().Values()
		n := values.Get(rapid.IntRange(0, values.Len()-1).Draw(g.t, "enum")).Number()
		return protowire.AppendVarint(b, uint64(n))
	}
	return protowire.AppendVarint(b, rapid.Uint64().Draw(g.t, "varint"))
}
