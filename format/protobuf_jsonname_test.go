package format

import (
	"encoding/base64"
	"testing"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protodesc"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/descriptorpb"
)

// protoc writes no json_name into the descriptors of generated code, and
// Confluent's Python serializer registers those, base64, as they are: such
// a schema and its references compile, every field with its default JSON
// name, and a custom json_name is kept.
func TestAProtoDescriptorWithoutJSONNamesAsProtocWritesItCompiles(t *testing.T) {
	text, err := compileProto("shop/order.proto", map[string]string{
		"shop/common.proto": readProtoFile(t, "testdata/protobuf/shop/common.proto"),
		"shop/order.proto":  readProtoFile(t, "testdata/protobuf/shop/order.proto"),
	})
	if err != nil {
		t.Fatal(err)
	}
	// encoded is fd as protoc writes it for generated code: no json_name,
	// but for the fields named in custom, which get that one.
	encoded := func(fd protoreflect.FileDescriptor, custom map[string]string) string {
		fdp := protodesc.ToFileDescriptorProto(fd)
		var strip func(m *descriptorpb.DescriptorProto)
		strip = func(m *descriptorpb.DescriptorProto) {
			for _, f := range m.GetField() {
				f.JsonName = nil
				if n, ok := custom[m.GetName()+"."+f.GetName()]; ok {
					f.JsonName = proto.String(n)
				}
			}
			for _, n := range m.GetNestedType() {
				strip(n)
			}
		}
		for _, m := range fdp.GetMessageType() {
			strip(m)
		}
		b, err := proto.Marshal(fdp)
		if err != nil {
			t.Fatal(err)
		}
		return base64.StdEncoding.EncodeToString(b)
	}
	var common protoreflect.FileDescriptor
	for i := range text.Imports().Len() {
		if imp := text.Imports().Get(i); imp.Path() == "shop/common.proto" {
			common = imp.FileDescriptor
		}
	}
	if common == nil {
		t.Fatal("shop/order.proto does not import shop/common.proto")
	}
	fd, err := compileProto("main.proto", map[string]string{
		"shop/common.proto": encoded(common, nil),
		"main.proto":        encoded(text, map[string]string{"Order.gift": "isGift"}),
	})
	if err != nil {
		t.Fatal(err)
	}
	order := fd.Messages().ByName("Order")
	for field, want := range map[protoreflect.Name]string{"qty_total": "qtyTotal", "big_delta": "bigDelta", "id": "id", "gift": "isGift"} {
		if got := order.Fields().ByName(field).JSONName(); got != want {
			t.Errorf("Order.%s: JSON name %q, want %q", field, got, want)
		}
	}
	units := order.Fields().ByName("prices").MapValue().Message().Fields().ByName("units")
	if got := units.JSONName(); got != "units" {
		t.Errorf("Money.units: JSON name %q, want units", got)
	}
}
