package format

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protodesc"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/dynamicpb"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/structpb"
	"google.golang.org/protobuf/types/known/timestamppb"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/sharerelay/sharerelay/transform"
)

// protoFiles reads testdata/protobuf into name -> text, the names
// relative to it as imports name them ("shop/common.proto").
func protoFiles(t testing.TB) map[string]string {
	t.Helper()
	const root = "testdata/protobuf"
	files := map[string]string{}
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(root, path)
		files[filepath.ToSlash(rel)] = string(b)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

// compiledProto compiles the test file name.
func compiledProto(t testing.TB, name string) protoreflect.FileDescriptor {
	t.Helper()
	fd, err := compileProto(name, protoFiles(t))
	if err != nil {
		t.Fatal(err)
	}
	return fd
}

// protoMsg is the message fullName of the test file name.
func protoMsg(t testing.TB, name, fullName string) protoreflect.MessageDescriptor {
	t.Helper()
	md, err := protoMessageNamed(compiledProto(t, name), fullName)
	if err != nil {
		t.Fatal(err)
	}
	return md
}

// protoField is md's field called name.
func protoField(t testing.TB, md protoreflect.MessageDescriptor, name string) protoreflect.FieldDescriptor {
	t.Helper()
	fd := md.Fields().ByName(protoreflect.Name(name))
	if fd == nil {
		t.Fatalf("%s has no field %s", md.FullName(), name)
	}
	return fd
}

func TestCompileProto(t *testing.T) {
	t.Run("a file importing a second file and the well-known types compiles", func(t *testing.T) {
		fd := compiledProto(t, "shop/order.proto")
		order := fd.Messages().ByName("Order")
		if order == nil {
			t.Fatal("no message Order")
		}
		checks := []struct {
			field string
			what  string
			got   bool
		}{
			{"status", "an enum of common.proto", protoField(t, order, "status").Enum().FullName() == "shop.Status"},
			{"channel", "a nested enum", protoField(t, order, "channel").Enum().FullName() == "shop.Order.Channel"},
			{"lines", "repeated shop.Line", protoField(t, order, "lines").IsList() && protoField(t, order, "lines").Message().FullName() == "shop.Line"},
			{"prices", "a map with string keys of common.proto's Money", protoField(t, order, "prices").IsMap() &&
				protoField(t, order, "prices").MapKey().Kind() == protoreflect.StringKind &&
				protoField(t, order, "prices").MapValue().Message().FullName() == "shop.Money"},
			{"slots", "a map with int32 keys", protoField(t, order, "slots").MapKey().Kind() == protoreflect.Int32Kind},
			{"flags", "a map with bool keys", protoField(t, order, "flags").MapKey().Kind() == protoreflect.BoolKind},
			{"note", "proto3 optional", protoField(t, order, "note").HasPresence() && protoField(t, order, "note").ContainingOneof().IsSynthetic()},
			{"card", "a member of oneof payment", protoField(t, order, "card").ContainingOneof().Name() == "payment" &&
				protoField(t, order, "card").Message().FullName() == "shop.Payment.Card"},
			{"created_at", "the standard Timestamp", protoField(t, order, "created_at").Message() == (&timestamppb.Timestamp{}).ProtoReflect().Descriptor()},
			{"ttl", "the standard Duration", protoField(t, order, "ttl").Message() == (&durationpb.Duration{}).ProtoReflect().Descriptor()},
			{"w_int64", "the standard Int64Value", protoField(t, order, "w_int64").Message() == (&wrapperspb.Int64Value{}).ProtoReflect().Descriptor()},
			{"attrs", "the standard Struct", protoField(t, order, "attrs").Message() == (&structpb.Struct{}).ProtoReflect().Descriptor()},
			{"nothing", "google.protobuf.Empty", protoField(t, order, "nothing").Message().FullName() == "google.protobuf.Empty"},
			{"mask", "google.protobuf.FieldMask", protoField(t, order, "mask").Message().FullName() == "google.protobuf.FieldMask"},
			{"any", "google.protobuf.Any", protoField(t, order, "any").Message().FullName() == "google.protobuf.Any"},
		}
		for _, c := range checks {
			if !c.got {
				t.Errorf("field %s is not %s", c.field, c.what)
			}
		}
		if md := fd.Messages().ByName("Line").Messages().ByName("Discount"); md == nil {
			t.Error("no nested message Line.Discount")
		}
	})

	t.Run("a registry's own text of a standard file does not replace the standard descriptor", func(t *testing.T) {
		files := protoFiles(t)
		// A text that differs, and even one that does not parse, is not read.
		files["google/protobuf/timestamp.proto"] = `syntax = "proto3"; package google.protobuf; message Timestamp { string bogus = 1; }`
		files["google/protobuf/duration.proto"] = `not a .proto file at all`
		fd, err := compileProto("shop/order.proto", files)
		if err != nil {
			t.Fatal(err)
		}
		got := fd.Messages().ByName("Order").Fields().ByName("created_at").Message()
		if got != (&timestamppb.Timestamp{}).ProtoReflect().Descriptor() {
			t.Errorf("created_at is %v with fields %v, not the standard Timestamp", got.FullName(), got.Fields())
		}
	})

	t.Run("a proto2 file compiles with a closed enum, a required field and a default", func(t *testing.T) {
		fd := compiledProto(t, "legacy.proto")
		ticket := fd.Messages().ByName("Ticket")
		if !protoField(t, ticket, "level").Enum().IsClosed() {
			t.Error("enum Level is open")
		}
		if c := protoField(t, ticket, "id").Cardinality(); c != protoreflect.Required {
			t.Errorf("id is %v, want required", c)
		}
		if d := protoField(t, ticket, "count").Default().Int(); d != 7 {
			t.Errorf("count defaults to %d, want 7", d)
		}
	})

	t.Run("a file using custom options of another file compiles, and its messages encode", func(t *testing.T) {
		fd := compiledProto(t, "annotated.proto")
		md := fd.Messages().ByName("Payment")
		if opts := protoField(t, md, "id").Options(); proto.Size(opts) == 0 {
			t.Error("the field's custom option is lost")
		}
		b, err := encodeProto(md, map[string]any{"id": "p-1", "cents": int64(250)})
		if err != nil {
			t.Fatal(err)
		}
		got, err := decodeProto(md, b)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range protoDiff("", got, map[string]any{"id": "p-1", "cents": int64(250)}) {
			t.Error(d)
		}
	})

	t.Run("an editions file compiles with its features", func(t *testing.T) {
		md := compiledProto(t, "editions.proto").Messages().ByName("Paint")
		if !protoField(t, md, "color").Enum().IsClosed() {
			t.Error("enum Color is open")
		}
		if !protoField(t, md, "name").HasPresence() || protoField(t, md, "coats").HasPresence() {
			t.Error("name should have presence and coats not")
		}
	})

	common := protoFiles(t)["shop/common.proto"]
	errCases := []struct {
		name  string
		file  string
		files map[string]string
		want  string
	}{
		{
			name:  "a syntax error names the file, line and column",
			file:  "bad.proto",
			files: map[string]string{"bad.proto": "syntax = \"proto3\";\nmessage A {\n  int32 a = 1\n}\n"},
			want:  "compiling bad.proto: bad.proto:4:1: syntax error: expecting ';'",
		},
		{
			name:  "a missing import names the importing file and line",
			file:  "shop/order.proto",
			files: map[string]string{"shop/order.proto": protoFiles(t)["shop/order.proto"]},
			want:  "compiling shop/order.proto: shop/order.proto:17:8: no file shop/common.proto among the schema and its references",
		},
		{
			name:  "every error of a file is reported, each with its line",
			file:  "bad.proto",
			files: map[string]string{"bad.proto": "syntax = \"proto3\";\nmessage A {\n  Foo a = 1;\n  Bar b = 2;\n}\n"},
			want:  "compiling bad.proto: bad.proto:3:3: field A.a: unknown type Foo\nbad.proto:4:3: field A.b: unknown type Bar",
		},
		{
			name: "an error in an imported file names that file",
			file: "top.proto",
			files: map[string]string{
				"top.proto":         "syntax = \"proto3\";\nimport \"shop/common.proto\";\nmessage T { shop.Money m = 1; }\n",
				"shop/common.proto": strings.Replace(common, "int64 units = 2;", "int64 units = 2", 1),
			},
			want: "compiling top.proto: shop/common.proto:16:3: syntax error: expecting ';'",
		},
		{
			name:  "a schema name without a text is an error",
			file:  "none.proto",
			files: map[string]string{},
			want:  "compiling none.proto: no file none.proto among the schema and its references",
		},
	}
	for _, c := range errCases {
		t.Run(c.name, func(t *testing.T) {
			fd, err := compileProto(c.file, c.files)
			if err == nil {
				t.Fatalf("compiled %s", fd.Path())
			}
			if err.Error() != c.want {
				t.Errorf("error\n%s\nwant\n%s", err, c.want)
			}
		})
	}
}

func TestProtoMessageAt(t *testing.T) {
	fd := compiledProto(t, "shop/order.proto")
	for _, c := range []struct {
		name    string
		indexes []int
		want    protoreflect.FullName
		inverse []int
	}{
		{"no indexes are the first message", nil, "shop.Order", []int{0}},
		{"[0] is the first message", []int{0}, "shop.Order", []int{0}},
		{"[1] is the second message", []int{1}, "shop.Line", []int{1}},
		{"[1,0] is the second message's first nested message", []int{1, 0}, "shop.Line.Discount", []int{1, 0}},
		{"[2,1,0] is nested twice", []int{2, 1, 0}, "shop.Payment.Bank.Branch", []int{2, 1, 0}},
		{"[3] is the last message", []int{3}, "shop.Category", []int{3}},
	} {
		t.Run(c.name, func(t *testing.T) {
			md, err := protoMessageAt(fd, c.indexes)
			if err != nil {
				t.Fatal(err)
			}
			if md.FullName() != c.want {
				t.Fatalf("got %s, want %s", md.FullName(), c.want)
			}
			if got := protoIndexes(md); !reflect.DeepEqual(got, c.inverse) {
				t.Errorf("protoIndexes gives %v, want %v", got, c.inverse)
			}
		})
	}

	for _, c := range []struct {
		name    string
		indexes []int
	}{
		{"a top-level index past the last message", []int{4}},
		{"a nested index past the last nested message", []int{2, 2}},
		{"an index nested in a message with no nested messages", []int{3, 0}},
		{"an index one level too deep", []int{2, 1, 0, 0}},
		{"a negative index", []int{-1}},
	} {
		t.Run(c.name+" is a DataError", func(t *testing.T) {
			md, err := protoMessageAt(fd, c.indexes)
			var de *DataError
			if !errors.As(err, &de) {
				t.Fatalf("got %v, %v; want a DataError", md, err)
			}
			want := fmt.Sprintf("message indexes %v point at no message of shop/order.proto", c.indexes)
			if de.Path != "" || de.Msg != want {
				t.Errorf("got %q at %q, want %q", de.Msg, de.Path, want)
			}
		})
	}

	t.Run("every message of the file round-trips through its indexes", func(t *testing.T) {
		var walk func(protoreflect.MessageDescriptors)
		n := 0
		walk = func(msgs protoreflect.MessageDescriptors) {
			for i := range msgs.Len() {
				md := msgs.Get(i)
				got, err := protoMessageAt(fd, protoIndexes(md))
				if err != nil || got != md {
					t.Errorf("%s: indexes %v give %v, %v", md.FullName(), protoIndexes(md), got, err)
				}
				n++
				walk(md.Messages())
			}
		}
		walk(fd.Messages())
		if n < 10 {
			t.Errorf("walked %d messages only", n)
		}
	})

	t.Run("a file without messages has no message at [0]", func(t *testing.T) {
		empty, err := compileProto("e.proto", map[string]string{"e.proto": `syntax = "proto3"; package e;`})
		if err != nil {
			t.Fatal(err)
		}
		var de *DataError
		if _, err := protoMessageAt(empty, nil); !errors.As(err, &de) {
			t.Errorf("got %v, want a DataError", err)
		}
	})
}

func TestProtoMessageNamed(t *testing.T) {
	fd := compiledProto(t, "shop/order.proto")
	for _, name := range []string{"shop.Order", "shop.Line.Discount", ".shop.Payment.Bank.Branch"} {
		md, err := protoMessageNamed(fd, name)
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		if want := strings.TrimPrefix(name, "."); string(md.FullName()) != want {
			t.Errorf("%s gives %s", name, md.FullName())
		}
	}
	_, err := protoMessageNamed(fd, "shop.Money")
	want := "shop/order.proto has no message shop.Money; it has shop.Order, shop.Line, shop.Line.Discount, " +
		"shop.Payment, shop.Payment.Card, shop.Payment.Bank, shop.Payment.Bank.Branch, shop.Category"
	if err == nil || err.Error() != want {
		t.Errorf("a message of an imported file: got %v, want %s", err, want)
	}
}

// protoFromJSON is the message md the protojson text s describes, built by the
// protobuf library alone so that it checks the codec independently.
func protoFromJSON(t testing.TB, md protoreflect.MessageDescriptor, s string) *dynamicpb.Message {
	t.Helper()
	m := dynamicpb.NewMessage(md)
	if err := protojson.Unmarshal([]byte(s), m); err != nil {
		t.Fatalf("protojson: %v", err)
	}
	return m
}

// protoMarshal is the deterministic binary encoding of m.
func protoMarshal(t testing.TB, m proto.Message) []byte {
	t.Helper()
	b, err := proto.MarshalOptions{Deterministic: true}.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// protoSet sets field name of m to v, a Go value or a generated message.
func protoSet(t testing.TB, m *dynamicpb.Message, name string, v any) {
	t.Helper()
	fd := protoField(t, m.Descriptor(), name)
	if pm, ok := v.(proto.Message); ok {
		m.Set(fd, protoreflect.ValueOfMessage(pm.ProtoReflect()))
		return
	}
	m.Set(fd, protoreflect.ValueOf(v))
}

// protoDiff lists where got differs from want, types included.
func protoDiff(path string, got, want any) []string {
	if gt, wt := fmt.Sprintf("%T", got), fmt.Sprintf("%T", want); gt != wt {
		return []string{fmt.Sprintf("%s: got %s %#v, want %s %#v", path, gt, got, wt, want)}
	}
	var out []string
	switch w := want.(type) {
	case map[string]any:
		g := got.(map[string]any)
		keys := map[string]bool{}
		for k := range g {
			keys[k] = true
		}
		for k := range w {
			keys[k] = true
		}
		sorted := make([]string, 0, len(keys))
		for k := range keys {
			sorted = append(sorted, k)
		}
		sort.Strings(sorted)
		for _, k := range sorted {
			gv, gok := g[k]
			wv, wok := w[k]
			switch {
			case !wok:
				out = append(out, fmt.Sprintf("%s: unexpected %T %#v", join(path, k), gv, gv))
			case !gok:
				out = append(out, fmt.Sprintf("%s: missing, want %T %#v", join(path, k), wv, wv))
			default:
				out = append(out, protoDiff(join(path, k), gv, wv)...)
			}
		}
	case []any:
		g := got.([]any)
		if len(g) != len(w) {
			return []string{fmt.Sprintf("%s: %d elements, want %d: %#v", path, len(g), len(w), g)}
		}
		for i := range w {
			out = append(out, protoDiff(join(path, elem(i)), g[i], w[i])...)
		}
	case []byte:
		if g := got.([]byte); !bytes.Equal(g, w) || g == nil {
			out = append(out, fmt.Sprintf("%s: got %#v, want %#v", path, g, w))
		}
	case time.Time:
		if g := got.(time.Time); !g.Equal(w) || g.Location() != time.UTC {
			out = append(out, fmt.Sprintf("%s: got %v, want %v in UTC", path, g, w))
		}
	case float64:
		if g := got.(float64); g != w && !(math.IsNaN(g) && math.IsNaN(w)) {
			out = append(out, fmt.Sprintf("%s: got %v, want %v", path, g, w))
		}
	default:
		if got != want {
			out = append(out, fmt.Sprintf("%s: got %#v, want %#v", path, got, want))
		}
	}
	return out
}

// protoOrderDefaults is the tree of an empty shop.Order: every field without
// presence at its default, none with presence.
func protoOrderDefaults() map[string]any {
	return map[string]any{
		"id": "", "qty_total": int64(0), "customer": int64(0), "delta": int64(0), "big_delta": int64(0),
		"sf32": int64(0), "sf64": int64(0), "u32": uint64(0), "u64": uint64(0), "f32": uint64(0), "f64": uint64(0),
		"total": 0.0, "weight": 0.0, "gift": false, "token": []byte{},
		"channel": "CHANNEL_UNSPECIFIED", "status": "STATUS_UNSPECIFIED",
		"lines": []any{}, "prices": map[string]any{}, "slots": map[string]any{}, "flags": map[string]any{},
		"counts": map[string]any{}, "tags": []any{}, "history": []any{}, "stamps": []any{},
		"zones": map[string]any{}, "bins": map[string]any{},
	}
}

// protoWith is base with the entries of more added.
func protoWith(base map[string]any, more map[string]any) map[string]any {
	for k, v := range more {
		base[k] = v
	}
	return base
}

// protoFullOrderJSON sets every field of shop.Order but iban (card is set in
// its oneof).
const protoFullOrderJSON = `{
	"id": "o-1", "qty_total": 3, "customer": "-42", "delta": -5, "big_delta": "-9000000000",
	"sf32": -7, "sf64": "-8", "u32": 4000000000, "u64": "18446744073709551615", "f32": 9, "f64": "10",
	"total": 12.5, "weight": 1.25, "gift": true, "token": "AAEC/w==",
	"channel": "WEB", "status": "PAID",
	"lines": [
		{"sku": "A-1", "qty": 2, "price": {"currency": "EUR", "units": "3", "nanos": 500000000}, "discount": {"percent": 10, "code": "TEN"}},
		{"sku": "B-2", "qty": 1}
	],
	"prices": {"EUR": {"currency": "EUR", "units": "7"}, "USD": {}},
	"slots": {"-1": "early", "3": "late"},
	"flags": {"true": "yes", "false": "no"},
	"counts": {"18446744073709551615": "-1"},
	"note": "ring twice", "priority": 0,
	"card": {"last4": "4242", "exp_month": 12},
	"paid": {"currency": "EUR", "units": "10"},
	"tags": ["a", "b"], "history": ["PAID", "SHIPPED"],
	"created_at": "2024-05-01T12:30:45.123456789Z",
	"ttl": "-90.5s",
	"w_double": 1.5, "w_float": 2.5, "w_int64": "-3", "w_uint64": "4", "w_int32": -5, "w_uint32": 6,
	"w_bool": false, "w_string": "", "w_bytes": "AQ==",
	"attrs": {"n": 1, "s": "x", "b": true, "z": null, "l": [1, "two", null], "o": {"k": "v"}},
	"extra": {"deep": [{"x": 1}]},
	"list": [1, "a", null, false],
	"nothing": {},
	"mask": "a.b,c",
	"any": {"@type": "type.googleapis.com/google.protobuf.Duration", "value": "1s"},
	"stamps": ["1970-01-01T00:00:00Z", "2000-01-01T00:00:00.5Z"],
	"zones": {"-9223372036854775808": "far west", "7": "east"},
	"bins": {"4294967295": "2024-05-01T00:00:00Z"}
}`

func protoMoney(currency string, units int64, nanos int64) map[string]any {
	return map[string]any{"currency": currency, "units": units, "nanos": nanos}
}

// protoFullOrderTree is the tree of protoFullOrderJSON.
func protoFullOrderTree(t testing.TB) map[string]any {
	anyValue, err := proto.Marshal(durationpb.New(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	return map[string]any{
		"id": "o-1", "qty_total": int64(3), "customer": int64(-42), "delta": int64(-5), "big_delta": int64(-9000000000),
		"sf32": int64(-7), "sf64": int64(-8), "u32": uint64(4000000000), "u64": uint64(math.MaxUint64),
		"f32": uint64(9), "f64": uint64(10),
		"total": 12.5, "weight": 1.25, "gift": true, "token": []byte{0, 1, 2, 255},
		"channel": "WEB", "status": "PAID",
		"lines": []any{
			map[string]any{"sku": "A-1", "qty": int64(2), "price": protoMoney("EUR", 3, 500000000),
				"discount": map[string]any{"percent": int64(10), "code": "TEN"}},
			map[string]any{"sku": "B-2", "qty": int64(1)},
		},
		"prices":   map[string]any{"EUR": protoMoney("EUR", 7, 0), "USD": protoMoney("", 0, 0)},
		"slots":    map[string]any{"-1": "early", "3": "late"},
		"flags":    map[string]any{"true": "yes", "false": "no"},
		"counts":   map[string]any{"18446744073709551615": int64(-1)},
		"note":     "ring twice",
		"priority": int64(0),
		"card":     map[string]any{"last4": "4242", "exp_month": uint64(12)},
		"paid":     protoMoney("EUR", 10, 0),
		"tags":     []any{"a", "b"},
		"history":  []any{"PAID", "SHIPPED"},

		"created_at": time.Date(2024, 5, 1, 12, 30, 45, 123456789, time.UTC),
		"ttl":        transform.Duration(-90500 * time.Millisecond),
		"w_double":   1.5, "w_float": 2.5, "w_int64": int64(-3), "w_uint64": uint64(4),
		"w_int32": int64(-5), "w_uint32": uint64(6), "w_bool": false, "w_string": "", "w_bytes": []byte{1},
		"attrs": map[string]any{"n": 1.0, "s": "x", "b": true, "z": nil,
			"l": []any{1.0, "two", nil}, "o": map[string]any{"k": "v"}},
		"extra":   map[string]any{"deep": []any{map[string]any{"x": 1.0}}},
		"list":    []any{1.0, "a", nil, false},
		"nothing": map[string]any{},
		"mask":    []any{"a.b", "c"},
		"any":     map[string]any{"type_url": "type.googleapis.com/google.protobuf.Duration", "value": anyValue},
		"stamps":  []any{time.Unix(0, 0).UTC(), time.Date(2000, 1, 1, 0, 0, 0, 5e8, time.UTC)},
		"zones":   map[string]any{"-9223372036854775808": "far west", "7": "east"},
		"bins":    map[string]any{"4294967295": time.Date(2024, 5, 1, 0, 0, 0, 0, time.UTC)},
	}
}

// protoDecodeCase is a message built by the protobuf library and the tree
// decodeProto must make of its bytes.
type protoDecodeCase struct {
	name string
	md   protoreflect.MessageDescriptor
	msg  proto.Message
	want any
}

func protoDecodeCases(t testing.TB) []protoDecodeCase {
	order := protoMsg(t, "shop/order.proto", "shop.Order")
	ticket := protoMsg(t, "legacy.proto", "legacy.Ticket")
	category := protoMsg(t, "shop/order.proto", "shop.Category")

	openEnum := dynamicpb.NewMessage(order)
	protoSet(t, openEnum, "channel", protoreflect.EnumNumber(7))
	protoSet(t, openEnum, "status", protoreflect.EnumNumber(-3))
	history := openEnum.Mutable(protoField(t, order, "history")).List()
	history.Append(protoreflect.ValueOfEnum(1))
	history.Append(protoreflect.ValueOfEnum(42))

	zeroOneof := dynamicpb.NewMessage(order)
	protoSet(t, zeroOneof, "iban", "")

	wrappers := dynamicpb.NewMessage(order)
	protoSet(t, wrappers, "w_int64", wrapperspb.Int64(0))
	protoSet(t, wrappers, "w_string", wrapperspb.String("x"))
	protoSet(t, wrappers, "extra", structpb.NewStringValue("just text"))
	protoSet(t, wrappers, "created_at", timestamppb.New(time.Date(1, 1, 1, 0, 0, 0, 0, time.UTC)))
	protoSet(t, wrappers, "ttl", durationpb.New(time.Duration(math.MaxInt64)))

	ticketSet := dynamicpb.NewMessage(ticket)
	protoSet(t, ticketSet, "id", "t-2")
	protoSet(t, ticketSet, "level", protoreflect.EnumNumber(2))
	protoSet(t, ticketSet, "count", int32(7))

	// Category nested in itself: 100 messages, as deep as a record may go.
	deep := dynamicpb.NewMessage(category)
	protoSet(t, deep, "name", "99")
	deepTree := map[string]any{"name": "99"}
	for i := 98; i >= 0; i-- {
		parent := dynamicpb.NewMessage(category)
		protoSet(t, parent, "name", fmt.Sprint(i))
		protoSet(t, parent, "parent", deep)
		deep, deepTree = parent, map[string]any{"name": fmt.Sprint(i), "parent": deepTree}
	}

	paint := protoMsg(t, "editions.proto", "ed.Paint")

	return []protoDecodeCase{
		{
			name: "an editions message holds fields with explicit presence when set, implicit ones always",
			md:   paint, msg: protoFromJSON(t, paint, `{"color": "BLUE", "mix": [1, 2]}`),
			want: map[string]any{"color": "BLUE", "coats": int64(0), "mix": []any{int64(1), int64(2)}},
		},
		{
			name: "every field of an order, with every scalar kind, map and well-known type",
			md:   order, msg: protoFromJSON(t, order, protoFullOrderJSON), want: protoFullOrderTree(t),
		},
		{
			name: "an empty order has its implicit fields at their defaults and no field with presence",
			md:   order, msg: dynamicpb.NewMessage(order), want: protoOrderDefaults(),
		},
		{
			name: "an open enum's number without a name is an int64",
			md:   order, msg: openEnum,
			want: protoWith(protoOrderDefaults(), map[string]any{"channel": int64(7), "status": int64(-3), "history": []any{"PAID", int64(42)}}),
		},
		{
			name: "a oneof member set to its zero value is present, the other member absent",
			md:   order, msg: zeroOneof,
			want: protoWith(protoOrderDefaults(), map[string]any{"iban": ""}),
		},
		{
			name: "a wrapper of a zero is present, a Value of text is the text, extremes of Timestamp and Duration hold",
			md:   order, msg: wrappers,
			want: protoWith(protoOrderDefaults(), map[string]any{
				"w_int64": int64(0), "w_string": "x", "extra": "just text",
				"created_at": time.Date(1, 1, 1, 0, 0, 0, 0, time.UTC),
				"ttl":        transform.Duration(math.MaxInt64),
			}),
		},
		{
			name: "a proto2 message omits optional fields unset, even one with a default",
			md:   ticket, msg: protoFromJSON(t, ticket, `{"id": "t-1"}`),
			want: map[string]any{"id": "t-1", "codes": []any{}},
		},
		{
			name: "a proto2 message holds optional fields set, even to their default",
			md:   ticket, msg: ticketSet,
			want: map[string]any{"id": "t-2", "level": "HIGH", "count": int64(7), "codes": []any{}},
		},
		{
			name: "a proto2 group is a message under the group's field name",
			md:   ticket, msg: protoFromJSON(t, ticket, `{"id": "t-3", "codes": [4, 5], "extra": {"note": "grouped"}}`),
			want: map[string]any{"id": "t-3", "codes": []any{int64(4), int64(5)}, "extra": map[string]any{"note": "grouped"}},
		},
		{
			name: "a message nested 100 deep decodes",
			md:   category, msg: deep,
			want: deepTree,
		},
		{
			name: "a well-known type as the message is its tree value",
			md:   (&timestamppb.Timestamp{}).ProtoReflect().Descriptor(),
			msg:  timestamppb.New(time.Date(2024, 2, 29, 23, 59, 59, 1, time.FixedZone("X", 3600))),
			want: time.Date(2024, 2, 29, 22, 59, 59, 1, time.UTC),
		},
	}
}

func TestDecodeProto(t *testing.T) {
	for _, c := range protoDecodeCases(t) {
		t.Run(c.name, func(t *testing.T) {
			got, err := decodeProto(c.md, protoMarshal(t, c.msg))
			if err != nil {
				t.Fatal(err)
			}
			for _, d := range protoDiff("", got, c.want) {
				t.Error(d)
			}
		})
	}

	t.Run("bytes in the tree do not share memory with the input", func(t *testing.T) {
		order := protoMsg(t, "shop/order.proto", "shop.Order")
		b := protoMarshal(t, protoFromJSON(t, order, `{"token": "AQID", "w_bytes": "BAU=", "any": {"@type": "type.googleapis.com/google.protobuf.Duration", "value": "1s"}}`))
		got, err := decodeProto(order, b)
		if err != nil {
			t.Fatal(err)
		}
		for i := range b {
			b[i] = 0xee
		}
		tree := got.(map[string]any)
		if !bytes.Equal(tree["token"].([]byte), []byte{1, 2, 3}) || !bytes.Equal(tree["w_bytes"].([]byte), []byte{4, 5}) ||
			!bytes.Equal(tree["any"].(map[string]any)["value"].([]byte), []byte{8, 1}) {
			t.Errorf("the tree changed with the input: %v", tree)
		}
	})
}

func TestDecodeProtoErrors(t *testing.T) {
	order := protoMsg(t, "shop/order.proto", "shop.Order")
	ticket := protoMsg(t, "legacy.proto", "legacy.Ticket")
	category := protoMsg(t, "shop/order.proto", "shop.Category")

	orderWith := func(name string, v any) []byte {
		m := dynamicpb.NewMessage(order)
		protoSet(t, m, name, v)
		return protoMarshal(t, m)
	}
	noID := dynamicpb.NewMessage(ticket)
	protoSet(t, noID, "level", protoreflect.EnumNumber(1))
	levelOnly, err := proto.MarshalOptions{AllowPartial: true}.Marshal(noID)
	if err != nil {
		t.Fatal(err)
	}

	tooDeep := func() []byte {
		m := dynamicpb.NewMessage(category)
		for range 100 {
			parent := dynamicpb.NewMessage(category)
			protoSet(t, parent, "parent", m)
			m = parent
		}
		return protoMarshal(t, m)
	}()
	stamps := dynamicpb.NewMessage(order)
	l := stamps.Mutable(protoField(t, order, "stamps")).List()
	l.Append(protoreflect.ValueOfMessage(timestamppb.New(time.Unix(0, 0)).ProtoReflect()))
	l.Append(protoreflect.ValueOfMessage((&timestamppb.Timestamp{Nanos: -1}).ProtoReflect()))
	bins := dynamicpb.NewMessage(order)
	mp := bins.Mutable(protoField(t, order, "bins")).Map()
	for k, ts := range map[uint32]*timestamppb.Timestamp{3: {Seconds: -1 << 40}, 4: {}, 5: {Nanos: 2e9}} {
		mp.Set(protoreflect.ValueOfUint32(k).MapKey(), protoreflect.ValueOfMessage(ts.ProtoReflect()))
	}

	for _, c := range []struct {
		name      string
		md        protoreflect.MessageDescriptor
		b         []byte
		path      string
		msgPrefix string // the protobuf library's own text follows, which it varies on purpose
		msg       string
	}{
		{
			name: "bytes cut short", md: order, b: []byte{0x0a, 0x05, 'a'},
			msgPrefix: "not a shop.Order message: ",
		},
		{
			name: "a field number zero", md: order, b: []byte{0x00, 0x01},
			msgPrefix: "not a shop.Order message: ",
		},
		{
			name: "a proto3 string that is not UTF-8", md: order, b: []byte{0x0a, 0x01, 0xff},
			msgPrefix: "not a shop.Order message: ",
		},
		{
			name: "a proto2 message without its required field", md: ticket, b: levelOnly,
			path: "id", msg: "required field of legacy.Ticket is missing",
		},
		{
			name: "messages nested more than 100 deep", md: category, b: tooDeep,
			msgPrefix: "not a shop.Category message: ",
		},
		{
			name: "a timestamp after 9999", md: order, b: orderWith("created_at", &timestamppb.Timestamp{Seconds: protoMaxTimestampSecs + 1}),
			path: "created_at", msg: "timestamp of 253402300800 s and 0 ns is out of range (0001-01-01 to 9999-12-31)",
		},
		{
			name: "a timestamp with negative nanos in a repeated field", md: order, b: protoMarshal(t, stamps),
			path: "stamps[1]", msg: "timestamp of 0 s and -1 ns is out of range (0001-01-01 to 9999-12-31)",
		},
		{
			name: "timestamps out of range in a map, the smallest key's reported", md: order, b: protoMarshal(t, bins),
			path: "bins.3", msg: "timestamp of -1099511627776 s and 0 ns is out of range (0001-01-01 to 9999-12-31)",
		},
		{
			name: "a duration whose seconds and nanos differ in sign", md: order, b: orderWith("ttl", &durationpb.Duration{Seconds: 1, Nanos: -1}),
			path: "ttl", msg: "duration of 1 s and -1 ns is not a valid google.protobuf.Duration",
		},
		{
			name: "a duration longer than a time.Duration", md: order, b: orderWith("ttl", &durationpb.Duration{Seconds: 300 * 365 * 86400}),
			path: "ttl", msg: "duration of 9460800000 s is longer than the relay holds (about 292 years)",
		},
		{
			name: "a duration a nanosecond longer than a time.Duration", md: order,
			b:    orderWith("ttl", &durationpb.Duration{Seconds: math.MaxInt64 / int64(time.Second), Nanos: int32(math.MaxInt64%int64(time.Second) + 1)}),
			path: "ttl", msg: "duration of 9223372036 s is longer than the relay holds (about 292 years)",
		},
	} {
		t.Run(c.name+" is a DataError", func(t *testing.T) {
			got, err := decodeProto(c.md, c.b)
			var de *DataError
			if !errors.As(err, &de) {
				t.Fatalf("got %v, %v; want a DataError", got, err)
			}
			if de.Path != c.path {
				t.Errorf("path %q, want %q", de.Path, c.path)
			}
			if c.msgPrefix != "" && !strings.HasPrefix(de.Msg, c.msgPrefix) || c.msg != "" && de.Msg != c.msg {
				t.Errorf("message %q, want %q%q", de.Msg, c.msgPrefix, c.msg)
			}
		})
	}
}

func TestEncodeProtoRoundTrip(t *testing.T) {
	for _, c := range protoDecodeCases(t) {
		t.Run("encoding the tree gives back the bytes of "+c.name, func(t *testing.T) {
			want := protoMarshal(t, c.msg)
			tree, err := decodeProto(c.md, want)
			if err != nil {
				t.Fatal(err)
			}
			got, err := encodeProto(c.md, tree)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("got  %x\nwant %x", got, want)
			}
		})
	}
}

func TestEncodeProto(t *testing.T) {
	order := protoMsg(t, "shop/order.proto", "shop.Order")
	ticket := protoMsg(t, "legacy.proto", "legacy.Ticket")
	when := time.Date(2024, 5, 1, 12, 30, 45, 500000000, time.UTC)
	anyValue, err := proto.Marshal(durationpb.New(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		md   protoreflect.MessageDescriptor
		tree map[string]any
		json string // the message, as protojson reads it
	}{
		{
			name: "integer fields take Go integers, integral floats and integral json.Numbers",
			md:   order,
			tree: map[string]any{
				"qty_total": int(3), "customer": json.Number("-42"), "delta": float64(-5), "big_delta": json.Number("-9e9"),
				"sf32": int32(-7), "sf64": uint64(8), "u32": json.Number("4000000000"), "u64": uint64(math.MaxUint64),
				"f32": float64(9), "f64": json.Number("10.0"), "w_int64": json.Number("-9223372036854775808"),
				"w_uint32": uint8(6),
			},
			json: `{"qty_total": 3, "customer": "-42", "delta": -5, "big_delta": "-9000000000", "sf32": -7, "sf64": "8",
				"u32": 4000000000, "u64": "18446744073709551615", "f32": 9, "f64": "10", "w_int64": "-9223372036854775808",
				"w_uint32": 6}`,
		},
		{
			name: "float fields take integers and json.Numbers",
			md:   order,
			tree: map[string]any{"total": int64(12), "weight": json.Number("1.25"), "w_double": uint64(3), "w_float": json.Number("-2")},
			json: `{"total": 12, "weight": 1.25, "w_double": 3, "w_float": -2}`,
		},
		{
			name: "bytes fields take standard base64 text",
			md:   order,
			tree: map[string]any{"token": "AAEC/w==", "w_bytes": "AQ=="},
			json: `{"token": "AAEC/w==", "w_bytes": "AQ=="}`,
		},
		{
			name: "an enum takes a name or a number, and an open enum a number it has no name for",
			md:   order,
			tree: map[string]any{"channel": int64(2), "status": json.Number("1"), "history": []any{float64(2), "PAID", int64(9)}},
			json: `{"channel": "STORE", "status": "PAID", "history": ["SHIPPED", "PAID", 9]}`,
		},
		{
			name: "a timestamp takes RFC 3339 text in any offset, a duration Go's text",
			md:   order,
			tree: map[string]any{"created_at": "2024-05-01T14:30:45.5+02:00", "ttl": "-1h30m", "stamps": []any{when, "1970-01-01T00:00:00Z"}},
			json: `{"created_at": "2024-05-01T12:30:45.500Z", "ttl": "-5400s", "stamps": ["2024-05-01T12:30:45.500Z", "1970-01-01T00:00:00Z"]}`,
		},
		{
			name: "a duration takes a time.Duration",
			md:   order,
			tree: map[string]any{"ttl": 1500 * time.Millisecond},
			json: `{"ttl": "1.5s"}`,
		},
		{
			name: "Struct and Value take numbers of any type and write times, durations and bytes as JSON does",
			md:   order,
			tree: map[string]any{
				"attrs": map[string]any{"i": int64(1), "u": uint64(2), "j": json.Number("2.5"), "t": when,
					"d": transform.Duration(time.Minute), "b": []byte{1}, "n": nil, "l": []any{int(3), nil}},
				"extra": []any{"x", map[string]any{}},
				"list":  []any{map[string]any{"a": false}},
			},
			json: `{"attrs": {"i": 1, "u": 2, "j": 2.5, "t": "2024-05-01T12:30:45.5Z", "d": "1m0s", "b": "AQ==", "n": null, "l": [3, null]},
				"extra": ["x", {}], "list": [{"a": false}]}`,
		},
		{
			name: "a nil field is left unset, whatever its type",
			md:   order,
			tree: map[string]any{"id": nil, "note": nil, "card": nil, "iban": nil, "paid": nil, "tags": nil, "prices": nil,
				"w_int64": nil, "created_at": nil, "channel": nil},
			json: `{}`,
		},
		{
			// As it decodes, and as protojson reads null: an unset Value
			// is no key in the tree.
			name: "a nil google.protobuf.Value field holds null",
			md:   order,
			tree: map[string]any{"extra": nil},
			json: `{"extra": null}`,
		},
		{
			name: "map keys parse back to their types",
			md:   order,
			tree: map[string]any{
				"slots":  map[string]any{"-1": "a", "2147483647": "b"},
				"flags":  map[string]any{"true": "y", "false": "n"},
				"counts": map[string]any{"18446744073709551615": int64(1)},
			},
			json: `{"slots": {"-1": "a", "2147483647": "b"}, "flags": {"true": "y", "false": "n"}, "counts": {"18446744073709551615": "1"}}`,
		},
		{
			name: "Any is an ordinary message, Empty an empty one, FieldMask a list of paths",
			md:   order,
			tree: map[string]any{
				"any":     map[string]any{"type_url": "type.googleapis.com/google.protobuf.Duration", "value": anyValue},
				"nothing": map[string]any{},
				"mask":    []any{"a.b", "c"},
			},
			json: `{"any": {"@type": "type.googleapis.com/google.protobuf.Duration", "value": "1s"}, "nothing": {}, "mask": "a.b,c"}`,
		},
		{
			name: "a closed enum takes a number it has a name for",
			md:   ticket,
			tree: map[string]any{"id": "t", "level": int64(2)},
			json: `{"id": "t", "level": "HIGH"}`,
		},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := encodeProto(c.md, c.tree)
			if err != nil {
				t.Fatal(err)
			}
			if want := protoMarshal(t, protoFromJSON(t, c.md, c.json)); !bytes.Equal(got, want) {
				t.Errorf("got  %x\nwant %x", got, want)
			}
		})
	}

	t.Run("equal trees give equal bytes, map entries in key order", func(t *testing.T) {
		tree := map[string]any{"prices": map[string]any{}, "attrs": map[string]any{}}
		for i := range 50 {
			k := fmt.Sprintf("k%02d", i)
			tree["prices"].(map[string]any)[k] = map[string]any{"units": int64(i)}
			tree["attrs"].(map[string]any)[k] = int64(i)
		}
		first, err := encodeProto(order, tree)
		if err != nil {
			t.Fatal(err)
		}
		for range 20 {
			if again, _ := encodeProto(order, tree); !bytes.Equal(again, first) {
				t.Fatal("two encodings of one tree differ")
			}
		}
	})

	t.Run("the tree encoded is left as it was", func(t *testing.T) {
		tree := protoFullOrderTree(t)
		if _, err := encodeProto(order, tree); err != nil {
			t.Fatal(err)
		}
		for _, d := range protoDiff("", tree, protoFullOrderTree(t)) {
			t.Error(d)
		}
	})
}

func TestEncodeProtoErrors(t *testing.T) {
	order := protoMsg(t, "shop/order.proto", "shop.Order")
	ticket := protoMsg(t, "legacy.proto", "legacy.Ticket")
	category := protoMsg(t, "shop/order.proto", "shop.Category")

	cyclic := map[string]any{"name": "loop"}
	cyclic["parent"] = cyclic

	for _, c := range []struct {
		name string
		md   protoreflect.MessageDescriptor
		tree any
		path string
		msg  string
	}{
		{
			name: "a field the message does not have", md: order, tree: map[string]any{"id": "o", "colour": "red"},
			path: "colour", msg: `field "colour" is not in message shop.Order`,
		},
		{
			name: "a field a nested message does not have", md: order,
			tree: map[string]any{"lines": []any{map[string]any{"sku": "a"}, map[string]any{"colour": "red"}}},
			path: "lines[1].colour", msg: `field "colour" is not in message shop.Line`,
		},
		{
			name: "text for an integer in a repeated message", md: order,
			tree: map[string]any{"lines": []any{map[string]any{}, map[string]any{}, map[string]any{"qty": "3"}}},
			path: "lines[2].qty", msg: "int32 takes an integer, not a string",
		},
		{
			name: "an integer for a string", md: order, tree: map[string]any{"id": int64(5)},
			path: "id", msg: "string takes a string, not an integer",
		},
		{
			name: "text for a bool", md: order, tree: map[string]any{"gift": "yes"},
			path: "gift", msg: "bool takes true or false, not a string",
		},
		{
			name: "an int32 overflowing", md: order, tree: map[string]any{"qty_total": int64(3000000000)},
			path: "qty_total", msg: "3000000000 is out of range for int32 (-2147483648 to 2147483647)",
		},
		{
			name: "a sint32 underflowing as a json.Number", md: order, tree: map[string]any{"delta": json.Number("-2147483649")},
			path: "delta", msg: "-2147483649 is out of range for sint32 (-2147483648 to 2147483647)",
		},
		{
			name: "an int64 too big as a float", md: order, tree: map[string]any{"customer": 1e19},
			path: "customer", msg: "1e+19 is out of range for int64 (-9223372036854775808 to 9223372036854775807)",
		},
		{
			name: "an int64 too big as a json.Number", md: order, tree: map[string]any{"sf64": json.Number("9223372036854775808")},
			path: "sf64", msg: "9223372036854775808 is out of range for sfixed64 (-9223372036854775808 to 9223372036854775807)",
		},
		{
			name: "a float with a fraction for an integer", md: order, tree: map[string]any{"customer": 2.5},
			path: "customer", msg: "int64 takes an integer, not 2.5",
		},
		{
			name: "a json.Number with a fraction for an integer", md: order, tree: map[string]any{"customer": json.Number("2.5")},
			path: "customer", msg: "int64 takes an integer, not 2.5",
		},
		{
			name: "a json.Number that is no number", md: order, tree: map[string]any{"customer": json.Number("12abc")},
			path: "customer", msg: `int64 takes an integer; "12abc" is not a number`,
		},
		{
			name: "a negative number for a uint32", md: order, tree: map[string]any{"u32": int64(-1)},
			path: "u32", msg: "-1 is out of range for uint32 (0 to 4294967295)",
		},
		{
			name: "a negative json.Number for a uint64", md: order, tree: map[string]any{"u64": json.Number("-1")},
			path: "u64", msg: "-1 is out of range for uint64 (0 to 18446744073709551615)",
		},
		{
			name: "a fixed32 overflowing", md: order, tree: map[string]any{"f32": uint64(1 << 32)},
			path: "f32", msg: "4294967296 is out of range for fixed32 (0 to 4294967295)",
		},
		{
			name: "a wrapper of uint32 with a negative number", md: order, tree: map[string]any{"w_uint32": int64(-1)},
			path: "w_uint32", msg: "-1 is out of range for uint32 (0 to 4294967295)",
		},
		{
			name: "text for a wrapper of int32", md: order, tree: map[string]any{"w_int32": "7"},
			path: "w_int32", msg: "int32 takes an integer, not a string",
		},
		{
			name: "a float overflowing", md: order, tree: map[string]any{"weight": 1e300},
			path: "weight", msg: "1e+300 is out of range for float",
		},
		{
			name: "text for a double", md: order, tree: map[string]any{"total": "12.5"},
			path: "total", msg: "double takes a number, not a string",
		},
		{
			name: "an enum name the enum lacks", md: order, tree: map[string]any{"channel": "FAX"},
			path: "channel", msg: `enum shop.Order.Channel has no value "FAX"`,
		},
		{
			name: "a bool for an enum", md: order, tree: map[string]any{"history": []any{"PAID", true}},
			path: "history[1]", msg: "enum shop.Status takes a value name or number, not a bool",
		},
		{
			name: "an enum number beyond int32", md: order, tree: map[string]any{"channel": int64(1 << 40)},
			path: "channel", msg: "1099511627776 is out of range for enum (-2147483648 to 2147483647)",
		},
		{
			name: "a number a closed enum lacks", md: ticket, tree: map[string]any{"id": "t", "level": int64(7)},
			path: "level", msg: "closed enum legacy.Level has no value 7",
		},
		{
			name: "a number a closed enum of an editions file lacks", md: protoMsg(t, "editions.proto", "ed.Paint"),
			tree: map[string]any{"color": int64(3)},
			path: "color", msg: "closed enum ed.Color has no value 3",
		},
		{
			name: "a proto2 required field missing", md: ticket, tree: map[string]any{"level": "LOW"},
			path: "id", msg: "required field of legacy.Ticket is missing",
		},
		{
			name: "two members of a oneof", md: order, tree: map[string]any{"iban": "DE00", "card": map[string]any{"last4": "4242"}},
			path: "card", msg: "oneof payment takes one field; iban and card are both set",
		},
		{
			name: "two members of a oneof, one of the wrong type", md: order, tree: map[string]any{"iban": "DE00", "card": "4242"},
			path: "card", msg: "oneof payment takes one field; iban and card are both set",
		},
		{
			name: "a map key that is not an int32", md: order, tree: map[string]any{"slots": map[string]any{"1": "a", "x": "b"}},
			path: "slots.x", msg: `map key "x" is not a decimal int32`,
		},
		{
			name: "a map key beyond int32", md: order, tree: map[string]any{"slots": map[string]any{"3000000000": "b"}},
			path: "slots.3000000000", msg: "map key 3000000000 is out of range for int32",
		},
		{
			name: "a negative map key for a uint64", md: order, tree: map[string]any{"counts": map[string]any{"-1": int64(1)}},
			path: "counts.-1", msg: `map key "-1" is not a decimal uint64`,
		},
		{
			name: "a map key that is not a sint64", md: order, tree: map[string]any{"zones": map[string]any{"east": "x"}},
			path: "zones.east", msg: `map key "east" is not a decimal sint64`,
		},
		{
			name: "a map key beyond fixed32", md: order, tree: map[string]any{"bins": map[string]any{"4294967296": "2024-05-01T00:00:00Z"}},
			path: "bins.4294967296", msg: "map key 4294967296 is out of range for fixed32",
		},
		{
			name: "a map key that is not a bool", md: order, tree: map[string]any{"flags": map[string]any{"yes": "a"}},
			path: "flags.yes", msg: `map key "yes" is not a bool (true or false)`,
		},
		{
			name: "a map key bool in Go's other spellings", md: order, tree: map[string]any{"flags": map[string]any{"1": "a"}},
			path: "flags.1", msg: `map key "1" is not a bool (true or false)`,
		},
		{
			name: "a wrong value in a map of messages", md: order, tree: map[string]any{"prices": map[string]any{"EUR": map[string]any{"units": "x"}}},
			path: "prices.EUR.units", msg: "int64 takes an integer, not a string",
		},
		{
			name: "timestamp text that is not RFC 3339", md: order, tree: map[string]any{"created_at": "yesterday"},
			path: "created_at", msg: `timestamp takes a time or RFC 3339 text such as 2024-05-01T12:00:00Z, not "yesterday"`,
		},
		{
			name: "a timestamp after 9999", md: order, tree: map[string]any{"stamps": []any{time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)}},
			path: "stamps[0]", msg: "timestamp 10000-01-01T00:00:00Z is out of range (0001-01-01 to 9999-12-31)",
		},
		{
			name: "a number for a timestamp", md: order, tree: map[string]any{"created_at": int64(5)},
			path: "created_at", msg: "timestamp takes a time or RFC 3339 text, not an integer",
		},
		{
			name: "duration text Go does not read", md: order, tree: map[string]any{"ttl": "soon"},
			path: "ttl", msg: `duration takes a duration or Go duration text such as 1h30m, not "soon"`,
		},
		{
			name: "a list for the message", md: order, tree: []any{},
			path: "", msg: "message shop.Order takes an object, not a list",
		},
		{
			name: "text for a nested message", md: order, tree: map[string]any{"paid": "10 EUR"},
			path: "paid", msg: "message shop.Money takes an object, not a string",
		},
		{
			name: "text for a repeated field", md: order, tree: map[string]any{"tags": "a"},
			path: "tags", msg: "repeated field takes a list, not a string",
		},
		{
			name: "a null element of a repeated message", md: order, tree: map[string]any{"lines": []any{nil}},
			path: "lines[0]", msg: "message shop.Line takes an object, not null",
		},
		{
			name: "a list for a map", md: order, tree: map[string]any{"prices": []any{}},
			path: "prices", msg: "map field takes an object, not a list",
		},
		{
			name: "text that is not base64 for bytes", md: order, tree: map[string]any{"token": "not base64!"},
			path: "token", msg: "bytes takes bytes or standard base64 text; the text is not base64: illegal base64 data at input byte 3",
		},
		{
			name: "a bool for bytes", md: order, tree: map[string]any{"token": true},
			path: "token", msg: "bytes takes bytes or base64 text, not a bool",
		},
		{
			name: "text that is not UTF-8 for a proto3 string", md: order, tree: map[string]any{"tags": []any{"ok", "\xff"}},
			path: "tags[1]", msg: "string is not valid UTF-8",
		},
		{
			name: "a Go value JSON has no kind for in a Struct", md: order, tree: map[string]any{"attrs": map[string]any{"k": struct{}{}}},
			path: "attrs.k", msg: "google.protobuf.Value takes a JSON value, not a Go struct {}",
		},
		{
			name: "text for a Struct", md: order, tree: map[string]any{"attrs": "x"},
			path: "attrs", msg: "google.protobuf.Struct takes an object, not a string",
		},
		{
			name: "an object for a ListValue", md: order, tree: map[string]any{"list": map[string]any{}},
			path: "list", msg: "google.protobuf.ListValue takes a list, not an object",
		},
		{
			name: "a number in a FieldMask", md: order, tree: map[string]any{"mask": []any{"a", int64(1)}},
			path: "mask[1]", msg: "string takes a string, not an integer",
		},
		{
			name: "a field in an Empty", md: order, tree: map[string]any{"nothing": map[string]any{"x": int64(1)}},
			path: "nothing.x", msg: `field "x" is not in message google.protobuf.Empty`,
		},
		{
			name: "a tree that holds itself", md: category, tree: cyclic,
			path: strings.TrimSuffix(strings.Repeat("parent.", protoMaxDepth), "."), msg: "messages nest more than 100 deep",
		},
	} {
		t.Run(c.name+" is a DataError naming the field", func(t *testing.T) {
			b, err := encodeProto(c.md, c.tree)
			var de *DataError
			if !errors.As(err, &de) {
				t.Fatalf("got %x, %v; want a DataError", b, err)
			}
			if de.Path != c.path || de.Msg != c.msg {
				t.Errorf("got %q: %q\nwant %q: %q", de.Path, de.Msg, c.path, c.msg)
			}
		})
	}

	t.Run("of several faults the one at the smallest key is reported, whatever the map order", func(t *testing.T) {
		tree := map[string]any{
			"zz": int64(1), "lines": []any{map[string]any{"qty": "x"}}, "id": int64(5), "aa": true,
			"prices": map[string]any{"b": "x", "a": "y", "c": "z"},
		}
		for range 50 {
			_, err := encodeProto(order, tree)
			if err == nil || err.Error() != `aa: field "aa" is not in message shop.Order` {
				t.Fatalf("got %v", err)
			}
		}
		delete(tree, "aa")
		delete(tree, "id")
		delete(tree, "lines")
		for range 50 {
			_, err := encodeProto(order, tree)
			if err == nil || err.Error() != "prices.a: message shop.Money takes an object, not a string" {
				t.Fatalf("got %v", err)
			}
		}
	})
}

func TestProtoCodecConcurrently(t *testing.T) {
	// Descriptors are shared by every record of a topic; decoding and
	// encoding must not write to them (run with -race).
	md, tree, b := protoBenchOrder(t)
	done := make(chan error)
	for range 4 {
		go func() {
			var err error
			for range 50 {
				if _, err = decodeProto(md, b); err != nil {
					break
				}
				if _, err = encodeProto(md, tree); err != nil {
					break
				}
			}
			done <- err
		}()
	}
	for range 4 {
		if err := <-done; err != nil {
			t.Error(err)
		}
	}
}

func TestProtoShape(t *testing.T) {
	order := protoShape(protoMsg(t, "shop/order.proto", "shop.Order"))
	leaf := &Shape{}
	money := &Shape{Fields: map[string]*Shape{"currency": leaf, "units": leaf, "nanos": leaf}}
	for _, c := range []struct {
		path string
		want *Shape
	}{
		{"id", leaf},
		{"channel", leaf},
		{"note", leaf},
		{"paid", money},
		{"card", &Shape{Fields: map[string]*Shape{"last4": leaf, "exp_month": leaf}}},
		{"lines", leaf}, // dotted paths do not go through lists
		{"prices", &Shape{Open: true}},
		{"slots", &Shape{Open: true}},
		{"bins", &Shape{Open: true}},
		{"attrs", &Shape{Open: true}},
		{"extra", &Shape{Open: true}},
		{"list", leaf},
		{"created_at", leaf},
		{"ttl", leaf},
		{"w_int64", leaf},
		{"mask", leaf},
		{"nothing", &Shape{Fields: map[string]*Shape{}}},
		{"any", &Shape{Fields: map[string]*Shape{"type_url": leaf, "value": leaf}}},
	} {
		if got := order.Fields[c.path]; !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s: got %+v, want %+v", c.path, got, c.want)
		}
	}
	if got, want := len(order.Fields), protoMsg(t, "shop/order.proto", "shop.Order").Fields().Len(); got != want {
		t.Errorf("Order has %d fields in its shape, want %d", got, want)
	}
	if order.Open {
		t.Error("Order is open")
	}

	line := protoShape(protoMsg(t, "shop/order.proto", "shop.Line"))
	if got := line.Fields["discount"].Fields["percent"]; !reflect.DeepEqual(got, leaf) {
		t.Errorf("line.discount.percent: got %+v", got)
	}

	category := protoShape(protoMsg(t, "shop/order.proto", "shop.Category"))
	if category.Fields["parent"] != category {
		t.Error("Category's parent is not Category's own shape")
	}
}

// protoBenchOrder is an order of about 200 bytes: bench.Order, a message of
// ordinary size, rather than the test's shop.Order of every kind.
func protoBenchOrder(t testing.TB) (protoreflect.MessageDescriptor, map[string]any, []byte) {
	md := protoMsg(t, "bench/order.proto", "bench.Order")
	tree := map[string]any{
		"id": "ord-2024-000123", "customer_id": int64(981234), "status": "PAID",
		"lines": []any{
			map[string]any{"sku": "SKU-10001", "qty": int64(2), "price": protoMoney("EUR", 49, 950000000)},
			map[string]any{"sku": "SKU-10002", "qty": int64(1), "price": protoMoney("EUR", 19, 990000000)},
			map[string]any{"sku": "SKU-10003", "qty": int64(3), "price": protoMoney("EUR", 9, 990000000)},
		},
		"total":      protoMoney("EUR", 149, 850000000),
		"created_at": time.Date(2024, 5, 1, 12, 30, 45, 0, time.UTC),
		"labels":     map[string]any{"channel": "web", "region": "eu-west-1", "tier": "gold"},
		"note":       "leave the parcel at the door",
	}
	b, err := encodeProto(md, tree)
	if err != nil {
		t.Fatal(err)
	}
	return md, tree, b
}

func TestProtoBenchOrderSize(t *testing.T) {
	_, _, b := protoBenchOrder(t)
	if len(b) < 180 || len(b) > 240 {
		t.Errorf("the benchmark's order is %d bytes, want about 200", len(b))
	}
}

func BenchmarkProtoDecode(b *testing.B) {
	md, _, data := protoBenchOrder(b)
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := decodeProto(md, data); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkProtoEncode(b *testing.B) {
	md, tree, data := protoBenchOrder(b)
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := encodeProto(md, tree); err != nil {
			b.Fatal(err)
		}
	}
}

// Confluent's serializers register a schema as its serialized
// FileDescriptorProto in base64; a registry that keeps it so serves it
// so, and its references too.
func TestAProtoSchemaRegisteredAsABase64DescriptorCompiles(t *testing.T) {
	files := map[string]string{
		"shop/common.proto": readProtoFile(t, "testdata/protobuf/shop/common.proto"),
		"shop/order.proto":  readProtoFile(t, "testdata/protobuf/shop/order.proto"),
	}
	text, err := compileProto("shop/order.proto", files)
	if err != nil {
		t.Fatal(err)
	}
	encoded := func(fd protoreflect.FileDescriptor) string {
		b, err := proto.Marshal(protodesc.ToFileDescriptorProto(fd))
		if err != nil {
			t.Fatal(err)
		}
		return base64.StdEncoding.EncodeToString(b)
	}
	common := text.Imports()
	var commonFD protoreflect.FileDescriptor
	for i := range common.Len() {
		if common.Get(i).Path() == "shop/common.proto" {
			commonFD = common.Get(i).FileDescriptor
		}
	}
	if commonFD == nil {
		t.Fatal("shop/order.proto does not import shop/common.proto")
	}
	for name, files := range map[string]map[string]string{
		"both as descriptors":           {"shop/common.proto": encoded(commonFD), "main.proto": encoded(text)},
		"a descriptor importing a text": {"shop/common.proto": files["shop/common.proto"], "main.proto": encoded(text)},
	} {
		t.Run(name, func(t *testing.T) {
			fd, err := compileProto("main.proto", files)
			if err != nil {
				t.Fatal(err)
			}
			if got, want := fd.Messages().Len(), text.Messages().Len(); got != want || fd.Messages().Get(0).FullName() != text.Messages().Get(0).FullName() {
				t.Fatalf("%d messages, first %s; want %d, %s", got, fd.Messages().Get(0).FullName(), want, text.Messages().Get(0).FullName())
			}
		})
	}
}

func readProtoFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
