package format

import (
	"bytes"
	"errors"
	"math"
	"testing"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/known/structpb"
)

// The wire format's rules the codec follows as the protobuf library does,
// each on bytes written out by hand. protobuf_differential_test.go checks
// the same against the library on generated messages.

// protoWire appends field num's tag of wire type typ and, for a varint,
// fixed or length-delimited value, v.
func protoWire(b []byte, num protowire.Number, typ protowire.Type, v any) []byte {
	b = protowire.AppendTag(b, num, typ)
	switch x := v.(type) {
	case uint64:
		if typ == protowire.Fixed64Type {
			return protowire.AppendFixed64(b, x)
		}
		return protowire.AppendVarint(b, x)
	case uint32:
		return protowire.AppendFixed32(b, x)
	case string:
		return protowire.AppendString(b, x)
	case []byte:
		return protowire.AppendBytes(b, x)
	}
	return b
}

func TestDecodeProtoWire(t *testing.T) {
	order := protoMsg(t, "shop/order.proto", "shop.Order")
	ticket := protoMsg(t, "legacy.proto", "legacy.Ticket")
	paint := protoMsg(t, "editions.proto", "ed.Paint")
	const (
		varint = protowire.VarintType
		fixed  = protowire.Fixed32Type
		delim  = protowire.BytesType
	)
	packed := func(ns ...uint64) []byte {
		var b []byte
		for _, n := range ns {
			b = protowire.AppendVarint(b, n)
		}
		return b
	}
	money := func(fields ...[]byte) []byte { return bytes.Join(fields, nil) }
	entry := func(fields ...[]byte) []byte { return bytes.Join(fields, nil) }
	paintDefaults := func(mix ...any) map[string]any {
		return map[string]any{"coats": int64(0), "mix": append([]any{}, mix...)}
	}

	for _, c := range []struct {
		name string
		md   protoreflect.MessageDescriptor
		b    []byte
		want any
	}{
		{
			name: "a repeated scalar packed, then unpacked, then packed again decodes to every element in order",
			md:   paint,
			b:    protoWire(protoWire(protoWire(nil, 4, delim, packed(1, 2)), 4, varint, uint64(3)), 4, delim, packed(4)),
			want: paintDefaults(int64(1), int64(2), int64(3), int64(4)),
		},
		{
			name: "a proto2 repeated scalar, unpacked by default, decodes written packed",
			md:   ticket,
			b:    protoWire(protoWire(nil, 1, delim, "t"), 4, delim, packed(4, 5)),
			want: map[string]any{"id": "t", "codes": []any{int64(4), int64(5)}},
		},
		{
			name: "a scalar written twice keeps the later value",
			md:   paint,
			b:    protoWire(protoWire(nil, 3, varint, uint64(2)), 3, varint, uint64(5)),
			want: map[string]any{"coats": int64(5), "mix": []any{}},
		},
		{
			name: "a singular message written twice is the two merged",
			md:   order,
			b: protoWire(protoWire(nil, 27, delim, money(protoWire(nil, 1, delim, "EUR"), protoWire(nil, 2, varint, uint64(3)))),
				27, delim, money(protoWire(nil, 2, varint, uint64(10)))),
			want: protoWith(protoOrderDefaults(), map[string]any{"paid": protoMoney("EUR", 10, 0)}),
		},
		{
			name: "of two members of a oneof the one written last is set",
			md:   order,
			b:    protoWire(protoWire(nil, 26, delim, protoWire(nil, 1, delim, "4242")), 25, delim, "DE00"),
			want: protoWith(protoOrderDefaults(), map[string]any{"iban": "DE00"}),
		},
		{
			name: "a oneof's message member written again after another member starts afresh",
			md:   order,
			b: protoWire(protoWire(protoWire(nil, 26, delim, protoWire(nil, 1, delim, "4242")), 25, delim, "DE00"),
				26, delim, protoWire(nil, 2, varint, uint64(12))),
			want: protoWith(protoOrderDefaults(), map[string]any{"card": map[string]any{"last4": "", "exp_month": uint64(12)}}),
		},
		{
			name: "a field written with another wire type than its own is skipped",
			md:   order,
			b:    protoWire(protoWire(nil, 1, varint, uint64(7)), 2, fixed, uint32(9)),
			want: protoOrderDefaults(),
		},
		{
			name: "fields the schema does not declare are skipped, groups among them",
			md:   order,
			b: protoWire(protoWire(protoWire(protoWire(nil, 99, varint, uint64(1)), 100, protowire.StartGroupType, nil),
				101, delim, "x"), 100, protowire.EndGroupType, nil),
			want: protoOrderDefaults(),
		},
		{
			name: "a map entry without key or value holds the key's and the value's defaults",
			md:   order,
			b:    protoWire(protoWire(nil, 19, delim, entry()), 20, delim, entry(protoWire(nil, 2, delim, "x"))),
			want: protoWith(protoOrderDefaults(), map[string]any{
				"prices": map[string]any{"": protoMoney("", 0, 0)},
				"slots":  map[string]any{"0": "x"},
			}),
		},
		{
			name: "a key written twice in a map keeps the later entry",
			md:   order,
			b: protoWire(protoWire(nil, 20, delim, entry(protoWire(nil, 1, varint, uint64(3)), protoWire(nil, 2, delim, "a"))),
				20, delim, entry(protoWire(nil, 1, varint, uint64(3)), protoWire(nil, 2, delim, "b"))),
			want: protoWith(protoOrderDefaults(), map[string]any{"slots": map[string]any{"3": "b"}}),
		},
		{
			// proto.Unmarshal into dynamicpb panicked on these bytes (its
			// reflective path took the second key for a value); generated
			// code keeps the first key, as here.
			name: "a map entry that writes its key again with another wire type keeps the first key",
			md:   order,
			b: protoWire(nil, 20, delim, entry(protoWire(nil, 1, varint, uint64(3)), protoWire(nil, 1, fixed, uint32(4)),
				protoWire(nil, 2, delim, "a"))),
			want: protoWith(protoOrderDefaults(), map[string]any{"slots": map[string]any{"3": "a"}}),
		},
		{
			name: "a closed enum's number without a name is kept as an int64, as the library kept it",
			md:   ticket,
			b:    protoWire(protoWire(nil, 1, delim, "t"), 2, varint, uint64(9)),
			want: map[string]any{"id": "t", "level": int64(9), "codes": []any{}},
		},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := decodeProto(c.md, c.b)
			if err != nil {
				t.Fatal(err)
			}
			for _, d := range protoDiff("", got, c.want) {
				t.Error(d)
			}
		})
	}

	t.Run("generated code reads a map entry that writes its key again as the codec does", func(t *testing.T) {
		st := (&structpb.Struct{}).ProtoReflect().Descriptor()
		b := protoWire(nil, 1, delim, entry(protoWire(nil, 1, delim, "k"), protoWire(nil, 1, varint, uint64(5))))
		var s structpb.Struct
		if err := proto.Unmarshal(b, &s); err != nil || len(s.Fields) != 1 || s.Fields["k"].GetKind() != nil {
			t.Fatalf("generated code: %v, %v", s.Fields, err)
		}
		got, err := decodeProto(st, b)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range protoDiff("", got, map[string]any{"k": nil}) {
			t.Error(d)
		}
	})

	t.Run("bytes that do not read are the error even after a value out of range", func(t *testing.T) {
		// The timestamp is read, and is out of range, before the bytes cut short.
		b := protoWire(protoWire(nil, 30, delim, protoWire(nil, 2, varint, uint64(2e9))), 1, delim, "")
		b = append(b, 0x0a, 0x05) // id, 5 bytes long, and nothing
		_, err := decodeProto(order, b)
		var de *DataError
		if !errors.As(err, &de) || de.Path != "" || de.Msg != "not a shop.Order message: shop.Order.id: cut short" {
			t.Errorf("got %v", err)
		}
	})
}

func TestEncodeProtoWire(t *testing.T) {
	order := protoMsg(t, "shop/order.proto", "shop.Order")
	ticket := protoMsg(t, "legacy.proto", "legacy.Ticket")
	paint := protoMsg(t, "editions.proto", "ed.Paint")
	var ed protoreflect.MessageDescriptor
	for _, md := range protoDiffMessages(t) {
		if md.FullName() == "diffed.Ed" {
			ed = md
		}
	}
	const (
		varint = protowire.VarintType
		delim  = protowire.BytesType
	)
	for _, c := range []struct {
		name string
		md   protoreflect.MessageDescriptor
		tree map[string]any
		want []byte
	}{
		{
			name: "the members of oneofs are written after every other field, as deterministic proto.Marshal writes them",
			md:   order,
			tree: map[string]any{"paid": map[string]any{}, "iban": "DE", "id": "o"},
			want: protoWire(protoWire(protoWire(nil, 1, delim, "o"), 27, delim, []byte{}), 25, delim, "DE"),
		},
		{
			name: "a proto3 repeated scalar is written packed",
			md:   order,
			tree: map[string]any{"history": []any{"PAID", "SHIPPED"}},
			want: protoWire(nil, 29, delim, []byte{1, 2}),
		},
		{
			name: "a proto2 repeated scalar is written unpacked",
			md:   ticket,
			tree: map[string]any{"id": "t", "codes": []any{int64(4), int64(5)}},
			want: protoWire(protoWire(protoWire(nil, 1, delim, "t"), 4, varint, uint64(4)), 4, varint, uint64(5)),
		},
		{
			name: "an editions repeated scalar is written packed, or expanded where its feature says",
			md:   ed,
			tree: map[string]any{"req": int64(1), "packed": []any{int64(1)}, "expanded": []any{int64(2), int64(3)}},
			want: protoWire(protoWire(protoWire(protoWire(nil, 4, varint, uint64(2)), 4, varint, uint64(3)),
				5, delim, []byte{1, 0, 0, 0}), 8, varint, uint64(1)),
		},
		{
			name: "an editions delimited message is written as a group",
			md:   ed,
			tree: map[string]any{"req": int64(2), "child": map[string]any{"req": int64(1)}},
			want: protoWire(protoWire(protoWire(protoWire(nil, 6, protowire.StartGroupType, nil), 8, varint, uint64(1)),
				6, protowire.EndGroupType, nil), 8, varint, uint64(2)),
		},
		{
			name: "a proto3 optional field and a oneof member at zero are written, an implicit field at zero is not",
			md:   order,
			tree: map[string]any{"priority": int64(0), "qty_total": int64(0), "iban": "", "total": math.Copysign(0, -1)},
			want: protoWire(protoWire(protoWire(nil, 12, protowire.Fixed64Type, uint64(1)<<63), 24, varint, uint64(0)), 25, delim, ""),
		},
		{
			name: "an editions implicit field at zero is not written, an explicit one is",
			md:   paint,
			tree: map[string]any{"coats": int64(0), "name": ""},
			want: protoWire(nil, 1, delim, ""),
		},
		{
			name: "map entries are written in the order of their keys' values, with key and value even at zero",
			md:   order,
			tree: map[string]any{"slots": map[string]any{"10": "b", "2": "", "-1": "a"}},
			want: protoWire(protoWire(protoWire(nil,
				20, delim, protoWire(protoWire(nil, 1, varint, uint64(math.MaxUint64)), 2, delim, "a")),
				20, delim, protoWire(protoWire(nil, 1, varint, uint64(2)), 2, delim, "")),
				20, delim, protoWire(protoWire(nil, 1, varint, uint64(10)), 2, delim, "b")),
		},
		{
			name: "of two texts of one map key the later in text order is written",
			md:   order,
			tree: map[string]any{"slots": map[string]any{"07": "a", "7": "b"}},
			want: protoWire(nil, 20, delim, protoWire(protoWire(nil, 1, varint, uint64(7)), 2, delim, "b")),
		},
		{
			name: "a message longer than 127 bytes has a length of two bytes",
			md:   order,
			tree: map[string]any{"paid": map[string]any{"currency": string(bytes.Repeat([]byte{'x'}, 200))}},
			want: protoWire(nil, 27, delim, protoWire(nil, 1, delim, string(bytes.Repeat([]byte{'x'}, 200)))),
		},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := encodeProto(c.md, c.tree)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, c.want) {
				t.Errorf("got  %x\nwant %x", got, c.want)
			}
		})
	}
}

// Text that is not UTF-8 where readers refuse it is refused at its field.
// proto.Marshal refused it too in an editions string and in a
// google.protobuf.Value, as "writing <message>: proto: ..." with no path,
// after every other fault of the tree; now those read as a proto3
// string's.
func TestEncodeProtoUTF8(t *testing.T) {
	order := protoMsg(t, "shop/order.proto", "shop.Order")
	ticket := protoMsg(t, "legacy.proto", "legacy.Ticket")
	paint := protoMsg(t, "editions.proto", "ed.Paint")
	var ed protoreflect.MessageDescriptor
	for _, md := range protoDiffMessages(t) {
		if md.FullName() == "diffed.Ed" {
			ed = md
		}
	}
	for _, c := range []struct {
		name string
		md   protoreflect.MessageDescriptor
		tree map[string]any
		path string // "" for no error
	}{
		{"an editions string is refused", paint, map[string]any{"name": "a\xff"}, "name"},
		{"a string in a google.protobuf.Value is refused", order, map[string]any{"extra": "a\xff"}, "extra"},
		{"a string in a google.protobuf.Struct is refused", order, map[string]any{"attrs": map[string]any{"k": []any{"a\xff"}}}, "attrs.k[0]"},
		{"a proto2 string is written", ticket, map[string]any{"id": "a\xff"}, ""},
		{"an editions string without UTF-8 checks is written", ed, map[string]any{"req": int64(1), "loose": "a\xff"}, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := encodeProto(c.md, c.tree)
			if c.path == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			var de *DataError
			if !errors.As(err, &de) || de.Path != c.path || de.Msg != "string is not valid UTF-8" {
				t.Errorf("got %v, want %s: string is not valid UTF-8", err, c.path)
			}
		})
	}
}
