package format

// The Protobuf codec: .proto text compiled to descriptors, the Confluent
// message indexes resolved to a message, and the message's binary encoding
// turned into the value tree and back. The wire format is read and
// written here with protowire, walking the message's descriptors
// straight to and from the tree (see doc.go for the mapping), with no
// dynamicpb message in between: building one for every record cost more
// than the tree. What is read and written is what proto.Unmarshal and
// proto.MarshalOptions{Deterministic: true} make of the same message;
// protobuf_differential_test.go holds the two side by side.

import (
	"cmp"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"math/big"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/bufbuild/protocompile"
	"github.com/bufbuild/protocompile/reporter"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protodesc"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"
	"google.golang.org/protobuf/types/descriptorpb"

	"github.com/sharerelay/sharerelay/transform"
)

// standardProtos resolves the files protoc ships (google/protobuf/*.proto)
// to the descriptors linked into this binary, and nothing else.
var standardProtos = protocompile.WithStandardImports(protocompile.ResolverFunc(
	func(string) (protocompile.SearchResult, error) {
		return protocompile.SearchResult{}, protoregistry.NotFound
	}))

// compileProto compiles the .proto file named name whose text, and the text
// of every file it imports, are in files (name -> text). Imports of the
// standard google/protobuf/*.proto files always resolve to the standard
// descriptors, even when files also holds a text for them (registries
// sometimes store them as references): a google.protobuf.Timestamp field
// then points at the one Timestamp descriptor, and a text that differs from
// the standard cannot change what the well-known types mean. Every error
// in every file is reported, each with its file, line and column.
func compileProto(name string, files map[string]string) (protoreflect.FileDescriptor, error) {
	var (
		mu   sync.Mutex // the compiler reports from several goroutines
		errs []error
	)
	c := protocompile.Compiler{
		Resolver: protocompile.ResolverFunc(func(path string) (protocompile.SearchResult, error) {
			if r, err := standardProtos.FindFileByPath(path); err == nil {
				return r, nil
			}
			src, ok := files[path]
			if !ok {
				return protocompile.SearchResult{}, fmt.Errorf("no file %s among the schema and its references", path)
			}
			if fdp := protoDescriptorText(src); fdp != nil {
				fdp.Name = proto.String(path)
				return protocompile.SearchResult{Proto: fdp}, nil
			}
			return protocompile.SearchResult{Source: strings.NewReader(src)}, nil
		}),
		Reporter: reporter.NewReporter(func(err reporter.ErrorWithPos) error {
			mu.Lock()
			defer mu.Unlock()
			errs = append(errs, err)
			return nil // go on, to report every error at once
		}, nil),
	}
	// Compiling is CPU work on texts already in memory: nothing to cancel.
	out, err := c.Compile(context.Background(), name)
	mu.Lock()
	defer mu.Unlock()
	if len(errs) > 0 {
		return nil, fmt.Errorf("compiling %s: %w", name, errors.Join(errs...))
	}
	if err != nil {
		return nil, fmt.Errorf("compiling %s: %w", name, err)
	}
	fd, err := protoRebuild(out[0], new(protoregistry.Files))
	if err != nil {
		return nil, fmt.Errorf("compiling %s: %w", name, err)
	}
	return fd, nil
}

// protoDescriptorText returns the file descriptor a schema text holds as
// base64 (a serialized FileDescriptorProto), or nil for .proto text.
// Confluent's serializers register Protobuf schemas so; Confluent's
// registry turns them into .proto text, other registries (Apicurio) keep
// and serve them as they came. .proto text is never valid base64 (it has
// spaces, braces and semicolons).
func protoDescriptorText(s string) *descriptorpb.FileDescriptorProto {
	b, err := base64.StdEncoding.DecodeString(strings.TrimSpace(s))
	if err != nil || len(b) == 0 {
		return nil
	}
	fdp := new(descriptorpb.FileDescriptorProto)
	if proto.Unmarshal(b, fdp) != nil {
		return nil
	}
	for _, m := range fdp.GetMessageType() {
		protoDefaultJSONNames(m)
	}
	return fdp
}

// protoDefaultJSONNames gives every field of m (and of its nested
// messages) without a json_name its default one. protoc leaves json_name
// out of the descriptors it writes into generated code, and Confluent's
// Python serializer registers those; protocompile reads a json_name left
// out as a custom name "" shared by every field, and refuses the message.
func protoDefaultJSONNames(m *descriptorpb.DescriptorProto) {
	for _, f := range m.GetField() {
		if f.JsonName == nil {
			f.JsonName = proto.String(protoJSONName(f.GetName()))
		}
	}
	for _, n := range m.GetNestedType() {
		protoDefaultJSONNames(n)
	}
}

// protoJSONName is a field's default JSON name, as protoc and
// protocompile derive it: the name without underscores, each letter after
// one upper-cased ("order_id" is "orderId").
func protoJSONName(name string) string {
	var b strings.Builder
	upper := false
	for _, r := range name {
		switch {
		case r == '_':
			upper = true
			continue
		case upper:
			r = unicode.ToUpper(r)
		}
		upper = false
		b.WriteRune(r)
	}
	return b.String()
}

// protoRebuild returns fd, and the files it imports, as protodesc builds
// them, registered in reg; the standard files stay the descriptors linked
// into the binary. protocompile's own descriptors work out some answers
// (a field's presence, from the editions features) on every call, which
// decoding and encoding ask for every field of every record; protodesc's
// work them out once.
func protoRebuild(fd protoreflect.FileDescriptor, reg *protoregistry.Files) (protoreflect.FileDescriptor, error) {
	if done, err := reg.FindFileByPath(fd.Path()); err == nil {
		return done, nil
	}
	imports := fd.Imports()
	for i := range imports.Len() {
		if _, err := protoRebuild(imports.Get(i).FileDescriptor, reg); err != nil {
			return nil, err
		}
	}
	out := fd
	if std, err := standardProtos.FindFileByPath(fd.Path()); err == nil && std.Desc != nil {
		out = std.Desc
	} else if out, err = protodesc.NewFile(protodesc.ToFileDescriptorProto(fd), reg); err != nil {
		return nil, fmt.Errorf("rebuilding %s: %w", fd.Path(), err)
	}
	if err := reg.RegisterFile(out); err != nil {
		return nil, fmt.Errorf("rebuilding %s: %w", fd.Path(), err)
	}
	return out, nil
}

// protoMessageAt returns the message of fd the Confluent message indexes
// point at: indexes [i, j, k] is fd.Messages().Get(i).Messages().Get(j)...;
// an empty slice or [0] is the first message. Indexes that point at no
// message are a *DataError: the record names a message its schema does
// not have.
func protoMessageAt(fd protoreflect.FileDescriptor, indexes []int) (protoreflect.MessageDescriptor, error) {
	if len(indexes) == 0 {
		indexes = []int{0}
	}
	var md protoreflect.MessageDescriptor
	msgs := fd.Messages()
	for _, i := range indexes {
		if i < 0 || i >= msgs.Len() {
			return nil, dataErr("", "message indexes %v point at no message of %s", indexes, fd.Path())
		}
		md = msgs.Get(i)
		msgs = md.Messages()
	}
	return md, nil
}

// protoIndexes returns the message indexes of md within its file, the
// inverse of protoMessageAt: [0] for the file's first message.
func protoIndexes(md protoreflect.MessageDescriptor) []int {
	n := 0
	for d := protoreflect.Descriptor(md); ; d = d.Parent() {
		if _, ok := d.(protoreflect.MessageDescriptor); !ok {
			break
		}
		n++
	}
	out := make([]int, n)
	for d := protoreflect.Descriptor(md); n > 0; d = d.Parent() {
		n--
		out[n] = d.Index()
	}
	return out
}

// protoMessageNamed finds a message of fd by its full name ("pkg.Order" or
// "pkg.Order.Line"; a leading dot is allowed), for a schema file whose
// message the pipeline names. Messages of the files fd imports are not
// searched: a record's message is one its own schema declares.
func protoMessageNamed(fd protoreflect.FileDescriptor, fullName string) (protoreflect.MessageDescriptor, error) {
	want := protoreflect.FullName(strings.TrimPrefix(fullName, "."))
	var (
		found protoreflect.MessageDescriptor
		names []string
	)
	var walk func(protoreflect.MessageDescriptors)
	walk = func(msgs protoreflect.MessageDescriptors) {
		for i := 0; i < msgs.Len() && found == nil; i++ {
			md := msgs.Get(i)
			if md.IsMapEntry() {
				continue
			}
			if md.FullName() == want {
				found = md
				return
			}
			names = append(names, string(md.FullName()))
			walk(md.Messages())
		}
	}
	walk(fd.Messages())
	if found != nil {
		return found, nil
	}
	if len(names) == 0 {
		return nil, fmt.Errorf("%s has no message %s: it declares no message", fd.Path(), fullName)
	}
	const most = 10
	list := strings.Join(names[:min(len(names), most)], ", ")
	if len(names) > most {
		list += fmt.Sprintf(" and %d more", len(names)-most)
	}
	return nil, fmt.Errorf("%s has no message %s; it has %s", fd.Path(), fullName, list)
}

// The well-known types the tree holds as something other than a message
// map. Any and Empty are not here: they are ordinary messages in the tree.
const (
	wktTimestamp = "google.protobuf.Timestamp"
	wktDuration  = "google.protobuf.Duration"
	wktStruct    = "google.protobuf.Struct"
	wktValue     = "google.protobuf.Value"
	wktList      = "google.protobuf.ListValue"
	wktFieldMask = "google.protobuf.FieldMask"
)

// protoIsWrapper reports whether name is one of wrappers.proto's messages,
// whose field 1 is the value they wrap.
func protoIsWrapper(name protoreflect.FullName) bool {
	switch name {
	case "google.protobuf.DoubleValue", "google.protobuf.FloatValue",
		"google.protobuf.Int64Value", "google.protobuf.UInt64Value",
		"google.protobuf.Int32Value", "google.protobuf.UInt32Value",
		"google.protobuf.BoolValue", "google.protobuf.StringValue",
		"google.protobuf.BytesValue":
		return true
	}
	return false
}

// The ranges timestamp.proto and duration.proto allow.
const (
	protoMinTimestampSecs = -62135596800 // 0001-01-01T00:00:00Z
	protoMaxTimestampSecs = 253402300799 // 9999-12-31T23:59:59Z
	protoMaxDurationSecs  = 315576000000 // 10,000 years
)

// protoMaxDepth is how deeply messages may nest in a value decoded or
// encoded, as protobuf's Java and C++ readers allow by default (Go's
// allow 10,000). It keeps a cyclic tree a step builds from exhausting the
// stack, and a record this relay writes readable by those consumers.
const protoMaxDepth = 100

// decodeProto decodes b (protobuf binary, without the Confluent header and
// message indexes) as a message of md into the value tree, normally a
// map[string]any. Bytes that are not such a message, a required field
// missing, or a Timestamp or Duration out of its type's range are a
// *DataError. Fields b holds that md does not declare (written with a
// newer schema), or holds with another wire type than md's, are skipped:
// the tree has no place for them, so encoding the tree again drops them.
//
// The bytes are read with protowire, walking md, straight into the tree:
// the tree of what proto.Unmarshal would make of them, without the
// message in between. As proto.Unmarshal does, it takes a repeated scalar
// packed or not, merges a singular message written more than once, keeps
// the member of a oneof written last, and counts a map entry as a message
// nested. Every byte is read before a value is judged: bytes that do not
// read are the error even after a value out of range.
func decodeProto(md protoreflect.MessageDescriptor, b []byte) (any, error) {
	d := protoDecoders.Get().(*protoDecoder)
	d.src = b
	v, err := d.message(md, b, protoMaxDepth)
	bad := d.bad
	d.release()
	if err != nil {
		return nil, dataErr("", "not a %s message: %v", md.FullName(), err)
	}
	if bad {
		if err := protoFindBad(md, v); err != nil {
			return nil, err
		}
	}
	return v, nil
}

// protoDecoders keeps decoders, and the room their slots took, between
// records.
var protoDecoders = sync.Pool{New: func() any { return new(protoDecoder) }}

// protoShareText is the longest record whose strings share one copy of
// its bytes (protoDecoder.text); a longer one's strings are copied each,
// so that a few strings do not keep a large record's bytes alive.
const protoShareText = 64 << 10

// protoDecoder reads one record's bytes into the tree.
type protoDecoder struct {
	src []byte
	// text is src as a string, made when the first string is read: the
	// tree's strings are slices of it, one allocation rather than one a
	// string.
	text string
	// slots holds the fields read of the messages being read, a stack: a
	// message's are slots[base:base+Fields().Len()], by field index.
	slots []protoSlot
	// bad is set when a value did not convert (kept in the tree as a
	// *protoBad) or a required field was missing: decodeProto then finds
	// the first such, once every byte is read.
	bad bool
}

// protoSlot is what has been read of one field of a message.
type protoSlot struct {
	set   bool   // a singular field was read, and no other member of its oneof since
	parts int32  // the occurrences of a singular message merged in raw
	count int32  // the occurrences of a repeated or map field, counted ahead for its capacity
	v     any    // a singular scalar's tree value; a map field's map[string]any
	raw   []byte // a singular message's bytes, read when its message ends
	list  []any  // a repeated field's elements
}

// protoBad stands, in a tree being decoded, for a value that did not
// convert, until protoFindBad reports it.
type protoBad struct{ err error }

// protoOtherType is what the readers return in place of a length for a
// field written with another wire type than its kind's: proto.Unmarshal
// keeps such a field as an unknown one, and so it is skipped.
const protoOtherType = -1 << 20

// protoNoElements and protoNoBytes are the tree's empty list and empty
// bytes, shared: with no room in them, a step cannot change them in place.
var (
	protoNoElements any = []any{}
	protoNoBytes    any = []byte{}
)

// errProtoDepth is the error of messages nested deeper than protoMaxDepth.
var errProtoDepth = fmt.Errorf("messages nest more than %d deep", protoMaxDepth)

func (d *protoDecoder) release() {
	if cap(d.slots) > 1024 {
		d.slots = nil
	}
	d.src, d.text, d.bad = nil, "", false
	protoDecoders.Put(d)
}

// message reads b as a message of md. limit is how many messages may
// still nest, this one included, as proto.UnmarshalOptions.RecursionLimit
// counts them. An error is the bytes': a value that does not convert is
// kept as a *protoBad.
func (d *protoDecoder) message(md protoreflect.MessageDescriptor, b []byte, limit int) (any, error) {
	if limit--; limit < 0 {
		return nil, errProtoDepth
	}
	switch name := md.FullName(); name {
	case wktTimestamp, wktDuration:
		secs, nanos, err := protoSecsNanos(md, b)
		if err != nil {
			return nil, err
		}
		var v any
		if name == wktTimestamp {
			v, err = protoFromTimestamp(secs, int64(nanos))
		} else {
			v, err = protoFromDuration(secs, int64(nanos))
		}
		if err != nil {
			d.bad = true
			return &protoBad{err}, nil
		}
		return v, nil
	}
	fields := md.Fields()
	base := len(d.slots)
	if n := base + fields.Len(); n <= cap(d.slots) {
		d.slots = d.slots[:n] // cleared when last used
	} else {
		d.slots = append(d.slots, make([]protoSlot, fields.Len())...)
	}
	err := d.fields(md, fields, b, base, limit)
	var v any
	if err == nil {
		v, err = d.tree(md, fields, base, limit)
	}
	clear(d.slots[base:])
	d.slots = d.slots[:base]
	return v, err
}

// fields reads b, the fields of a message of md, into its slots.
func (d *protoDecoder) fields(md protoreflect.MessageDescriptor, fields protoreflect.FieldDescriptors, b []byte, base, limit int) error {
	counted := false
	for len(b) > 0 {
		num, typ, n, err := protoConsumeTag(md, b)
		if err != nil {
			return err
		}
		fd := protoFieldByNumber(fields, num)
		if fd != nil && !counted && (fd.IsList() || fd.IsMap()) {
			counted = true
			d.countAhead(fields, b, base)
		}
		b = b[n:]
		n = protoOtherType
		if fd != nil {
			if n, err = d.field(fd, typ, b, base, limit); err != nil {
				return err
			}
		}
		if n == protoOtherType {
			if n = protowire.ConsumeFieldValue(num, typ, b); n < 0 {
				return fmt.Errorf("%s field %d: %s", md.FullName(), num, protoWireText(n))
			}
		}
		b = b[n:]
	}
	return nil
}

// countAhead counts the occurrences of the repeated and map fields in b,
// the rest of a message, so that their lists and maps are made once, at
// their size. Bytes it cannot read end the count: reading them reports
// it.
func (d *protoDecoder) countAhead(fields protoreflect.FieldDescriptors, b []byte, base int) {
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return
		}
		b = b[n:]
		if n = protowire.ConsumeFieldValue(num, typ, b); n < 0 {
			return
		}
		b = b[n:]
		if fd := protoFieldByNumber(fields, num); fd != nil && (fd.IsList() || fd.IsMap()) {
			d.slots[base+fd.Index()].count++
		}
	}
}

// field reads one occurrence of field fd, written with wire type typ,
// from b into its slot, and returns the length of its value
// (protoOtherType for another wire type than fd's).
func (d *protoDecoder) field(fd protoreflect.FieldDescriptor, typ protowire.Type, b []byte, base, limit int) (int, error) {
	i := base + fd.Index()
	switch {
	case fd.IsMap():
		return d.mapEntry(fd, typ, b, i, limit)
	case fd.IsList():
		return d.element(fd, typ, b, i, limit)
	}
	if k := fd.Kind(); k == protoreflect.MessageKind || k == protoreflect.GroupKind {
		v, n := protoConsumeMessage(fd, typ, b)
		if n < 0 {
			return protoReadErr(fd, n)
		}
		if err := d.setOneof(fd, base, limit); err != nil {
			return 0, err
		}
		raw, parts, err := d.merge(fd.Message(), d.slots[i].raw, d.slots[i].parts, v, limit)
		if err != nil {
			return 0, err
		}
		s := &d.slots[i]
		s.set, s.raw, s.parts = true, raw, parts
		return n, nil
	}
	u, v, n := protoReadScalar(fd.Kind(), typ, b)
	if n < 0 {
		return protoReadErr(fd, n)
	}
	x, err := d.scalar(fd, fd.Kind(), u, v)
	if err != nil {
		return 0, err
	}
	if err := d.setOneof(fd, base, limit); err != nil {
		return 0, err
	}
	s := &d.slots[i]
	s.set, s.v = true, x
	return n, nil
}

// element reads one occurrence of the repeated field fd into slot i: an
// element, or a packed run of them.
func (d *protoDecoder) element(fd protoreflect.FieldDescriptor, typ protowire.Type, b []byte, i, limit int) (int, error) {
	k := fd.Kind()
	if k == protoreflect.MessageKind || k == protoreflect.GroupKind {
		v, n := protoConsumeMessage(fd, typ, b)
		if n < 0 {
			return protoReadErr(fd, n)
		}
		x, err := d.message(fd.Message(), v, limit)
		if err != nil {
			return 0, err
		}
		d.appendTo(i, x)
		return n, nil
	}
	if typ == protowire.BytesType && protoPackable(k) {
		v, n := protowire.ConsumeBytes(b)
		if n < 0 {
			return protoReadErr(fd, n)
		}
		s := &d.slots[i]
		if s.list == nil {
			s.list = make([]any, 0, protoPackedLen(k, v)+int(max(s.count-1, 0)))
		}
		wt := protoWireTypes[k]
		for len(v) > 0 {
			u, _, m := protoReadScalar(k, wt, v)
			if m < 0 {
				return protoReadErr(fd, m)
			}
			v = v[m:]
			x, _ := d.scalar(fd, k, u, nil) // numbers: no error
			s.list = append(s.list, x)
		}
		return n, nil
	}
	u, v, n := protoReadScalar(k, typ, b)
	if n < 0 {
		return protoReadErr(fd, n)
	}
	x, err := d.scalar(fd, k, u, v)
	if err != nil {
		return 0, err
	}
	d.appendTo(i, x)
	return n, nil
}

// appendTo appends x to the list of slot i.
func (d *protoDecoder) appendTo(i int, x any) {
	s := &d.slots[i]
	if s.list == nil {
		s.list = make([]any, 0, int(max(s.count, 1)))
	}
	s.list = append(s.list, x)
}

// mapEntry reads one entry of the map field fd into the map of slot i; a
// key read twice keeps the later entry.
func (d *protoDecoder) mapEntry(fd protoreflect.FieldDescriptor, typ protowire.Type, b []byte, i, limit int) (int, error) {
	// An entry is a message nested, whatever its wire type, as
	// proto.Unmarshal counts it.
	if limit--; limit < 0 {
		return 0, errProtoDepth
	}
	if typ != protowire.BytesType {
		return protoOtherType, nil
	}
	b, n := protowire.ConsumeBytes(b)
	if n < 0 {
		return protoReadErr(fd, n)
	}
	entry, kfd, vfd := fd.Message(), fd.MapKey(), fd.MapValue()
	kk, vk, vmd := kfd.Kind(), vfd.Kind(), vfd.Message()
	var (
		key     string
		haveKey bool
		val     any
		raw     []byte
		parts   int32
	)
	for len(b) > 0 {
		num, t, m, err := protoConsumeTag(entry, b)
		if err != nil {
			return 0, err
		}
		b = b[m:]
		m = protoOtherType
		switch {
		case num == 1:
			u, v, mk := protoReadScalar(kk, t, b)
			if mk < 0 && mk != protoOtherType {
				return protoReadErr(kfd, mk)
			}
			if m = mk; m >= 0 {
				if key, err = d.keyText(kfd, kk, u, v); err != nil {
					return 0, err
				}
				haveKey = true
			}
		case num == 2 && vmd != nil:
			v, mv := protoConsumeMessage(vfd, t, b)
			if mv < 0 && mv != protoOtherType {
				return protoReadErr(vfd, mv)
			}
			if m = mv; m >= 0 {
				if raw, parts, err = d.merge(vmd, raw, parts, v, limit); err != nil {
					return 0, err
				}
			}
		case num == 2:
			u, v, mv := protoReadScalar(vk, t, b)
			if mv < 0 && mv != protoOtherType {
				return protoReadErr(vfd, mv)
			}
			if m = mv; m >= 0 {
				if val, err = d.scalar(vfd, vk, u, v); err != nil {
					return 0, err
				}
			}
		}
		if m == protoOtherType {
			if m = protowire.ConsumeFieldValue(num, t, b); m < 0 {
				return 0, fmt.Errorf("%s field %d: %s", entry.FullName(), num, protoWireText(m))
			}
		}
		b = b[m:]
	}
	if !haveKey {
		key = protoKeyDefault(kk)
	}
	var err error
	switch {
	case vmd != nil && parts == 0:
		// No value: the message empty. No bytes, so nothing nests in it.
		val, err = d.message(vmd, nil, 1)
	case vmd != nil:
		val, err = d.message(vmd, raw, limit)
	case val == nil:
		val = protoDefault(vfd)
	}
	if err != nil {
		return 0, err
	}
	s := &d.slots[i]
	if s.v == nil {
		s.v = make(map[string]any, int(max(s.count, 1)))
	}
	s.v.(map[string]any)[key] = val
	return n, nil
}

// setOneof clears the other members of fd's oneof, as reading a member
// does: the member read last is the one set. A member's message bytes are
// read before they go, for their errors, as proto.Unmarshal reads them.
func (d *protoDecoder) setOneof(fd protoreflect.FieldDescriptor, base, limit int) error {
	od := fd.ContainingOneof()
	if od == nil || od.IsSynthetic() {
		return nil
	}
	members := od.Fields()
	for j := range members.Len() {
		f := members.Get(j)
		i := base + f.Index()
		if f.Number() == fd.Number() || !d.slots[i].set {
			continue
		}
		if d.slots[i].parts == 1 {
			if err := d.check(f.Message(), d.slots[i].raw, limit); err != nil {
				return err
			}
		}
		d.slots[i] = protoSlot{}
	}
	return nil
}

// merge adds v, one more occurrence of a singular message of md, to raw,
// the parts read so far: a message written twice is the two merged, and
// reading their bytes one after the other merges them. Each part is read
// alone for its errors first, as proto.Unmarshal reads each: bytes wrong
// alone may read as right when others follow.
func (d *protoDecoder) merge(md protoreflect.MessageDescriptor, raw []byte, parts int32, v []byte, limit int) ([]byte, int32, error) {
	if parts == 0 {
		return v, 1, nil
	}
	if parts == 1 {
		if err := d.check(md, raw, limit); err != nil {
			return nil, 0, err
		}
	}
	if err := d.check(md, v, limit); err != nil {
		return nil, 0, err
	}
	// raw may be the record's bytes: append to a copy.
	return append(raw[:len(raw):len(raw)], v...), parts + 1, nil
}

// check reads b as a message of md for its bytes' errors alone.
func (d *protoDecoder) check(md protoreflect.MessageDescriptor, b []byte, limit int) error {
	bad := d.bad
	_, err := d.message(md, b, limit)
	d.bad = bad
	return err
}

// tree is the tree of the message md whose fields are read into
// slots[base:]: a well-known type as its value, any other message as a
// map of its fields by .proto name, holding the fields without presence
// always and those with presence when read.
func (d *protoDecoder) tree(md protoreflect.MessageDescriptor, fields protoreflect.FieldDescriptors, base, limit int) (any, error) {
	n := fields.Len()
	switch name := md.FullName(); {
	case name == wktValue:
		for i := range n {
			if !d.slots[base+i].set {
				continue
			}
			if fd := fields.Get(i); fd.Number() != 1 { // not null_value
				return d.value(fd, base+i, limit)
			}
			break
		}
		return nil, nil
	case name == wktStruct || name == wktList || name == wktFieldMask || protoIsWrapper(name):
		fd := fields.ByNumber(1)
		return d.value(fd, base+fd.Index(), limit)
	}
	size := 0
	for i := range n {
		if d.slots[base+i].set || !fields.Get(i).HasPresence() {
			size++
		}
	}
	out := make(map[string]any, size)
	for i := range n {
		fd := fields.Get(i)
		if !d.slots[base+i].set && fd.HasPresence() {
			if fd.Cardinality() == protoreflect.Required {
				d.bad = true
			}
			continue
		}
		v, err := d.value(fd, base+i, limit)
		if err != nil {
			return nil, err
		}
		out[string(fd.Name())] = v
	}
	return out, nil
}

// value is the tree of field fd read into slot i, its default when it was
// not read.
func (d *protoDecoder) value(fd protoreflect.FieldDescriptor, i, limit int) (any, error) {
	s := &d.slots[i]
	switch {
	case fd.IsList():
		if s.list == nil {
			return protoNoElements, nil
		}
		return s.list, nil
	case fd.IsMap():
		if s.v == nil {
			return map[string]any{}, nil
		}
		return s.v, nil
	case !s.set:
		return protoDefault(fd), nil
	case s.parts > 0:
		return d.message(fd.Message(), s.raw, limit)
	}
	return s.v, nil
}

// scalar is the tree value of a value of fd, of scalar or enum kind k:
// u a number's bits, v a string's or bytes' bytes. Text that is not UTF-8
// where fd requires it is an error of the bytes, as for proto.Unmarshal.
func (d *protoDecoder) scalar(fd protoreflect.FieldDescriptor, k protoreflect.Kind, u uint64, v []byte) (any, error) {
	switch k {
	case protoreflect.BoolKind:
		return u != 0, nil
	case protoreflect.EnumKind:
		return protoEnumTree(fd.Enum(), protoreflect.EnumNumber(int32(u))), nil
	case protoreflect.Int32Kind, protoreflect.Sfixed32Kind:
		return int64(int32(u)), nil
	case protoreflect.Sint32Kind:
		return int64(int32(protowire.DecodeZigZag(u & math.MaxUint32))), nil
	case protoreflect.Int64Kind, protoreflect.Sfixed64Kind:
		return int64(u), nil
	case protoreflect.Sint64Kind:
		return protowire.DecodeZigZag(u), nil
	case protoreflect.Uint32Kind, protoreflect.Fixed32Kind:
		return uint64(uint32(u)), nil
	case protoreflect.Uint64Kind, protoreflect.Fixed64Kind:
		return u, nil
	case protoreflect.FloatKind:
		return float64(math.Float32frombits(uint32(u))), nil
	case protoreflect.DoubleKind:
		return math.Float64frombits(u), nil
	case protoreflect.StringKind:
		if protoEnforceUTF8(fd) && !utf8.Valid(v) {
			return nil, fmt.Errorf("%s: string is not valid UTF-8", fd.FullName())
		}
		return d.str(v), nil
	case protoreflect.BytesKind:
		// A copy, never nil: the tree is the step's to change, and JSON
		// writes an empty []byte as "" where it writes a nil one as null.
		return append([]byte{}, v...), nil
	}
	return nil, fmt.Errorf("%s: field kind %v is not supported", fd.FullName(), k)
}

// keyText is a map key of field fd, of kind k, as the tree's map keys it:
// its text.
func (d *protoDecoder) keyText(fd protoreflect.FieldDescriptor, k protoreflect.Kind, u uint64, v []byte) (string, error) {
	switch k {
	case protoreflect.StringKind:
		if protoEnforceUTF8(fd) && !utf8.Valid(v) {
			return "", fmt.Errorf("%s: string is not valid UTF-8", fd.FullName())
		}
		return d.str(v), nil
	case protoreflect.BoolKind:
		return strconv.FormatBool(u != 0), nil
	case protoreflect.Int32Kind, protoreflect.Sfixed32Kind:
		return strconv.FormatInt(int64(int32(u)), 10), nil
	case protoreflect.Sint32Kind:
		return strconv.FormatInt(int64(int32(protowire.DecodeZigZag(u&math.MaxUint32))), 10), nil
	case protoreflect.Int64Kind, protoreflect.Sfixed64Kind:
		return strconv.FormatInt(int64(u), 10), nil
	case protoreflect.Sint64Kind:
		return strconv.FormatInt(protowire.DecodeZigZag(u), 10), nil
	case protoreflect.Uint32Kind, protoreflect.Fixed32Kind:
		return strconv.FormatUint(uint64(uint32(u)), 10), nil
	}
	return strconv.FormatUint(u, 10), nil
}

// protoKeyDefault is the text of a map key of kind k an entry leaves out.
func protoKeyDefault(k protoreflect.Kind) string {
	switch k {
	case protoreflect.StringKind:
		return ""
	case protoreflect.BoolKind:
		return "false"
	}
	return "0"
}

// str is the string of v: a slice of text when v is a slice of the
// record's bytes (a message merged from several is not), else a copy.
func (d *protoDecoder) str(v []byte) string {
	if len(v) == 0 {
		return ""
	}
	if d.text == "" && len(d.src) <= protoShareText {
		d.text = string(d.src)
	}
	if d.text != "" {
		// v is a slice of src when it ends where src's room ends, as far,
		// and starts at the byte of src at that offset.
		off := cap(d.src) - cap(v)
		if off >= 0 && off+len(v) <= len(d.src) && &d.src[off] == &v[0] {
			return d.text[off : off+len(v)]
		}
	}
	return string(v)
}

// protoDefault is the tree value of the scalar or enum field fd unset: its
// default.
func protoDefault(fd protoreflect.FieldDescriptor) any {
	def := fd.Default()
	switch fd.Kind() {
	case protoreflect.BoolKind:
		return def.Bool()
	case protoreflect.EnumKind:
		return protoEnumTree(fd.Enum(), def.Enum())
	case protoreflect.Int32Kind, protoreflect.Sint32Kind, protoreflect.Sfixed32Kind,
		protoreflect.Int64Kind, protoreflect.Sint64Kind, protoreflect.Sfixed64Kind:
		return def.Int()
	case protoreflect.Uint32Kind, protoreflect.Fixed32Kind,
		protoreflect.Uint64Kind, protoreflect.Fixed64Kind:
		return def.Uint()
	case protoreflect.FloatKind, protoreflect.DoubleKind:
		return def.Float()
	case protoreflect.StringKind:
		return def.String()
	case protoreflect.BytesKind:
		if len(def.Bytes()) == 0 {
			return protoNoBytes
		}
		return append([]byte{}, def.Bytes()...)
	}
	return nil
}

// protoEnumTree is enum ed's value n in the tree: its name, or the number
// (an open enum's the schema has no name for, or a closed one's read
// anyway, as proto.Unmarshal into dynamicpb keeps it) as int64.
func protoEnumTree(ed protoreflect.EnumDescriptor, n protoreflect.EnumNumber) any {
	if ev := ed.Values().ByNumber(n); ev != nil {
		return string(ev.Name())
	}
	return int64(n)
}

// protoFindBad is the error of the first value of v, the tree of a
// message of md, that did not convert (a *protoBad) or is a required
// field missing, in the order of md's fields, depth first, the smallest
// key's of a map; nil when there is none.
func protoFindBad(md protoreflect.MessageDescriptor, v any) error {
	if b, ok := v.(*protoBad); ok {
		return b.err
	}
	obj, ok := v.(map[string]any)
	if name := md.FullName(); !ok || name == wktStruct || name == wktValue {
		return nil // nothing in a Struct or Value fails to convert
	}
	fields := md.Fields()
	for i := range fields.Len() {
		fd := fields.Get(i)
		name := string(fd.Name())
		x, ok := obj[name]
		if !ok {
			if fd.Cardinality() == protoreflect.Required {
				return dataErr(name, "required field of %s is missing", md.FullName())
			}
			continue
		}
		var err error
		switch {
		case fd.IsMap():
			vmd := fd.MapValue().Message()
			if vmd == nil {
				continue
			}
			var first protoFirstErr
			for k, e := range x.(map[string]any) {
				if err := protoFindBad(vmd, e); err != nil {
					first.keep(k, under(k, err))
				}
			}
			err = first.err
		case fd.Message() == nil:
			continue
		case fd.IsList():
			for j, e := range x.([]any) {
				if err = protoFindBad(fd.Message(), e); err != nil {
					err = under(elem(j), err)
					break
				}
			}
		default:
			err = protoFindBad(fd.Message(), x)
		}
		if err != nil {
			return under(name, err)
		}
	}
	return nil
}

// protoSecsNanos reads b as a google.protobuf.Timestamp or Duration: its
// seconds (field 1, int64) and nanos (field 2, int32).
func protoSecsNanos(md protoreflect.MessageDescriptor, b []byte) (secs int64, nanos int32, err error) {
	for len(b) > 0 {
		num, typ, n, err := protoConsumeTag(md, b)
		if err != nil {
			return 0, 0, err
		}
		b = b[n:]
		if typ == protowire.VarintType && (num == 1 || num == 2) {
			var u uint64
			if u, n = protowire.ConsumeVarint(b); num == 1 {
				secs = int64(u)
			} else {
				nanos = int32(u)
			}
		} else {
			n = protowire.ConsumeFieldValue(num, typ, b)
		}
		if n < 0 {
			return 0, 0, fmt.Errorf("%s field %d: %s", md.FullName(), num, protoWireText(n))
		}
		b = b[n:]
	}
	return secs, nanos, nil
}

// protoConsumeTag reads the tag of a field of md at the start of b.
func protoConsumeTag(md protoreflect.MessageDescriptor, b []byte) (protowire.Number, protowire.Type, int, error) {
	num, typ, n := protowire.ConsumeTag(b)
	if n < 0 {
		return 0, 0, 0, fmt.Errorf("%s: a field's tag: %s", md.FullName(), protoWireText(n))
	}
	if num > protowire.MaxValidNumber {
		return 0, 0, 0, fmt.Errorf("%s: field number %d is out of range", md.FullName(), num)
	}
	return num, typ, n, nil
}

// protoConsumeMessage reads the bytes of one value of the message or group
// field fd written with wire type typ: a group's without its end.
func protoConsumeMessage(fd protoreflect.FieldDescriptor, typ protowire.Type, b []byte) ([]byte, int) {
	if fd.Kind() == protoreflect.GroupKind {
		if typ != protowire.StartGroupType {
			return nil, protoOtherType
		}
		return protowire.ConsumeGroup(fd.Number(), b)
	}
	if typ != protowire.BytesType {
		return nil, protoOtherType
	}
	return protowire.ConsumeBytes(b)
}

// protoReadScalar reads one value of scalar or enum kind k written with
// wire type typ: u a number's bits, v a string's or bytes' bytes, n its
// length, protoOtherType for another wire type than k's, or protowire's
// error code.
func protoReadScalar(k protoreflect.Kind, typ protowire.Type, b []byte) (u uint64, v []byte, n int) {
	if int(k) >= len(protoWireTypes) || typ != protoWireTypes[k] || k == protoreflect.MessageKind {
		return 0, nil, protoOtherType
	}
	switch typ {
	case protowire.VarintType:
		u, n = protowire.ConsumeVarint(b)
	case protowire.Fixed32Type:
		var x uint32
		x, n = protowire.ConsumeFixed32(b)
		u = uint64(x)
	case protowire.Fixed64Type:
		u, n = protowire.ConsumeFixed64(b)
	case protowire.BytesType:
		v, n = protowire.ConsumeBytes(b)
	default:
		n = protoOtherType
	}
	return u, v, n
}

// protoReadErr is what a reader returns for n, a length below zero:
// protoOtherType as it is, protowire's error code as the error of field
// fd's bytes.
func protoReadErr(fd protoreflect.FieldDescriptor, n int) (int, error) {
	if n == protoOtherType {
		return n, nil
	}
	return 0, fmt.Errorf("%s: %s", fd.FullName(), protoWireText(n))
}

// protoWireText says what protowire's error code n means.
func protoWireText(n int) string {
	err := protowire.ParseError(n)
	if errors.Is(err, io.ErrUnexpectedEOF) {
		return "cut short"
	}
	// protowire's own texts begin "proto:", and a space it varies on
	// purpose.
	return strings.TrimSpace(strings.TrimPrefix(err.Error(), "proto:"))
}

// protoWireTypes is the wire type of each scalar kind, and of messages and
// groups.
var protoWireTypes = [...]protowire.Type{
	protoreflect.BoolKind:     protowire.VarintType,
	protoreflect.EnumKind:     protowire.VarintType,
	protoreflect.Int32Kind:    protowire.VarintType,
	protoreflect.Sint32Kind:   protowire.VarintType,
	protoreflect.Uint32Kind:   protowire.VarintType,
	protoreflect.Int64Kind:    protowire.VarintType,
	protoreflect.Sint64Kind:   protowire.VarintType,
	protoreflect.Uint64Kind:   protowire.VarintType,
	protoreflect.Sfixed32Kind: protowire.Fixed32Type,
	protoreflect.Fixed32Kind:  protowire.Fixed32Type,
	protoreflect.FloatKind:    protowire.Fixed32Type,
	protoreflect.Sfixed64Kind: protowire.Fixed64Type,
	protoreflect.Fixed64Kind:  protowire.Fixed64Type,
	protoreflect.DoubleKind:   protowire.Fixed64Type,
	protoreflect.StringKind:   protowire.BytesType,
	protoreflect.BytesKind:    protowire.BytesType,
	protoreflect.MessageKind:  protowire.BytesType,
	protoreflect.GroupKind:    protowire.StartGroupType,
}

// protoPackable reports whether a repeated field of kind k may be packed:
// numbers, bools and enums.
func protoPackable(k protoreflect.Kind) bool {
	switch k {
	case protoreflect.StringKind, protoreflect.BytesKind, protoreflect.MessageKind, protoreflect.GroupKind:
		return false
	}
	return true
}

// protoPackedLen is the number of values of kind k packed in v.
func protoPackedLen(k protoreflect.Kind, v []byte) int {
	switch protoWireTypes[k] {
	case protowire.Fixed32Type:
		return len(v) / 4
	case protowire.Fixed64Type:
		return len(v) / 8
	}
	n := 0
	for _, c := range v {
		if c < 0x80 {
			n++
		}
	}
	return n
}

// protoFieldByNumber is the field of fields numbered num, or nil.
func protoFieldByNumber(fields protoreflect.FieldDescriptors, num protowire.Number) protoreflect.FieldDescriptor {
	// Most messages number their fields 1, 2, 3... in order.
	if i := int(num) - 1; i >= 0 && i < fields.Len() {
		if fd := fields.Get(i); fd.Number() == num {
			return fd
		}
	}
	return fields.ByNumber(num)
}

// protoEnforceUTF8 reports whether the string field fd must hold UTF-8, as
// the protobuf library decides: a proto3 string does, a proto2 string
// does not, an editions string as its features say.
func protoEnforceUTF8(fd protoreflect.FieldDescriptor) bool {
	if fd.Syntax() == protoreflect.Editions {
		if f, ok := fd.(interface{ EnforceUTF8() bool }); ok {
			return f.EnforceUTF8()
		}
	}
	return fd.Syntax() == protoreflect.Proto3
}

// protoFromTimestamp is a google.protobuf.Timestamp as a time in UTC; one
// outside timestamp.proto's range (years 1 to 9999, nanos 0 to 999999999)
// is refused, as protojson refuses it.
func protoFromTimestamp(secs, nanos int64) (any, error) {
	if secs < protoMinTimestampSecs || secs > protoMaxTimestampSecs || nanos < 0 || nanos >= 1e9 {
		return nil, dataErr("", "timestamp of %d s and %d ns is out of range (0001-01-01 to 9999-12-31)", secs, nanos)
	}
	return time.Unix(secs, nanos).UTC(), nil
}

// protoFromDuration is a google.protobuf.Duration as a transform.Duration; one
// outside duration.proto's rules, or longer than a time.Duration holds
// (about 292 years), is refused.
func protoFromDuration(secs, nanos int64) (any, error) {
	if secs < -protoMaxDurationSecs || secs > protoMaxDurationSecs || nanos <= -1e9 || nanos >= 1e9 ||
		(secs > 0 && nanos < 0) || (secs < 0 && nanos > 0) {
		return nil, dataErr("", "duration of %d s and %d ns is not a valid google.protobuf.Duration", secs, nanos)
	}
	const maxSecs = math.MaxInt64 / int64(time.Second)
	d := time.Duration(secs) * time.Second
	sum := d + time.Duration(nanos)
	if secs > maxSecs || secs < -maxSecs || (nanos > 0 && sum < d) || (nanos < 0 && sum > d) {
		return nil, dataErr("", "duration of %d s is longer than the relay holds (about 292 years)", secs)
	}
	return transform.Duration(sum), nil
}

// encodeProto encodes the value tree v, a map[string]any for an ordinary
// message, as a message of md. Output is deterministic, the bytes
// proto.MarshalOptions{Deterministic: true} writes for the same message:
// fields by number but the members of oneofs after the others, map
// entries in key order, so equal trees give equal bytes. A value that
// does not fit is a *DataError whose Path names the field; when several
// do not, the one reported is the same whatever the maps' iteration
// order.
//
// The bytes are written with protowire, walking md and the tree, with no
// message in between.
func encodeProto(md protoreflect.MessageDescriptor, v any) ([]byte, error) {
	e := protoEncoders.Get().(*protoEncoder)
	b, err := e.message(e.buf[:0], md, v, 0)
	var out []byte
	if err == nil {
		out = make([]byte, len(b))
		copy(out, b)
	}
	e.release(b)
	return out, err
}

// protoEncoders keeps encoders, and the room they took, between records.
var protoEncoders = sync.Pool{New: func() any { return new(protoEncoder) }}

// protoEncoder writes one tree. Its stacks hold the fields and map entries
// of the messages being written, each message's above its parent's.
type protoEncoder struct {
	buf  []byte
	ents []protoEnt
	keys []protoKey
}

func (e *protoEncoder) release(b []byte) {
	e.buf = b[:0]
	if cap(b) > 1<<20 {
		e.buf = nil
	}
	if cap(e.ents) > 1024 {
		e.ents = nil
	}
	if cap(e.keys) > 1024 {
		e.keys = nil
	}
	protoEncoders.Put(e)
}

// protoEnt is a field of a message being written: its descriptor, its
// value in the tree, and its place in the output. Its key in the tree is
// its name.
type protoEnt struct {
	fd    protoreflect.FieldDescriptor
	x     any
	order uint64
}

// protoOrder is where field fd goes in a message written: by number, but
// the members of oneofs after every other field, oneof by oneof in the
// order the .proto declares them, as proto.MarshalOptions{Deterministic:
// true} writes them (the order of the original Go protobuf library).
func protoOrder(fd protoreflect.FieldDescriptor) uint64 {
	if od := fd.ContainingOneof(); od != nil && !od.IsSynthetic() {
		return 1<<62 | uint64(od.Index())<<32 | uint64(fd.Number())
	}
	return uint64(fd.Number())
}

// protoFirstErr keeps, of the errors at several keys of a map, the one at the
// smallest key, so that the error a value gets does not depend on the
// order Go's maps happen to iterate in.
type protoFirstErr struct {
	key string
	err error
}

func (f *protoFirstErr) keep(key string, err error) {
	if f.err == nil || key < f.key {
		f.key, f.err = key, err
	}
}

// message appends v as a message of md: a well-known type from its tree
// value, any other message from a map of its fields by .proto name, where
// a nil value leaves the field unset (but see protoSets). depth counts
// the messages it is nested in, so that a cyclic tree fails rather than
// exhausting the stack.
func (e *protoEncoder) message(b []byte, md protoreflect.MessageDescriptor, v any, depth int) ([]byte, error) {
	if depth >= protoMaxDepth {
		return b, dataErr("", "messages nest more than %d deep", protoMaxDepth)
	}
	fields := md.Fields()
	switch name := md.FullName(); {
	case name == wktTimestamp:
		secs, nanos, err := protoToTimestamp(v)
		if err != nil {
			return b, err
		}
		return protoAppendSecsNanos(b, secs, nanos), nil
	case name == wktDuration:
		secs, nanos, err := protoToDuration(v)
		if err != nil {
			return b, err
		}
		return protoAppendSecsNanos(b, secs, nanos), nil
	case name == wktValue:
		return e.structValue(b, md, v, depth)
	case name == wktStruct:
		if _, ok := v.(map[string]any); !ok {
			return b, dataErr("", "%s takes an object, not %s", name, protoDescribe(v))
		}
		return e.field(b, fields.ByNumber(1), v, depth)
	case name == wktList || name == wktFieldMask:
		if _, ok := v.([]any); !ok {
			return b, dataErr("", "%s takes a list, not %s", name, protoDescribe(v))
		}
		return e.field(b, fields.ByNumber(1), v, depth)
	case protoIsWrapper(name):
		return e.field(b, fields.ByNumber(1), v, depth)
	}
	obj, ok := v.(map[string]any)
	if !ok {
		return b, dataErr("", "message %s takes an object, not %s", md.FullName(), protoDescribe(v))
	}
	base := len(e.ents)
	var bad protoFirstErr
	for k, x := range obj {
		fd := fields.ByName(protoreflect.Name(k))
		if fd == nil {
			bad.keep(k, dataErr(k, "field %q is not in message %s", k, md.FullName()))
			continue
		}
		if !protoSets(fd, x) {
			continue
		}
		if od := fd.ContainingOneof(); od != nil && !od.IsSynthetic() {
			if err := protoOneofConflict(od, obj); err != nil {
				bad.keep(k, err)
				continue
			}
		}
		e.ents = append(e.ents, protoEnt{fd: fd, x: x, order: protoOrder(fd)})
	}
	slices.SortFunc(e.ents[base:], func(a, b protoEnt) int { return cmp.Compare(a.order, b.order) })
	// Every field is written, or tried, even after one fails: the error
	// reported is the smallest key's.
	for i := base; i < len(e.ents); i++ {
		ent := e.ents[i] // a copy: the fields of nested messages go above
		var err error
		if b, err = e.field(b, ent.fd, ent.x, depth); err != nil {
			key := string(ent.fd.Name())
			bad.keep(key, under(key, err))
		}
	}
	if bad.err == nil {
		bad.err = e.required(md, e.ents[base:])
	}
	clear(e.ents[base:])
	e.ents = e.ents[:base]
	return b, bad.err
}

// required is the error of a required field of md that ents, the fields
// written, lack, or nil.
func (e *protoEncoder) required(md protoreflect.MessageDescriptor, ents []protoEnt) error {
	req := md.RequiredNumbers()
next:
	for i := range req.Len() {
		num := req.Get(i)
		for _, ent := range ents {
			if ent.fd.Number() == num {
				continue next
			}
		}
		return dataErr(string(md.Fields().ByNumber(num).Name()), "required field of %s is missing", md.FullName())
	}
	return nil
}

// protoSets reports whether the tree value x sets field fd of a message:
// any value but nil, and nil too for a singular google.protobuf.Value,
// which then holds null — decoding gives nil for a Value that holds null
// and no key for one unset, and protojson reads null so. A nil for any
// other field leaves it unset.
func protoSets(fd protoreflect.FieldDescriptor, x any) bool {
	if x != nil {
		return true
	}
	return fd.Cardinality() != protoreflect.Repeated && fd.Message() != nil && fd.Message().FullName() == wktValue
}

// protoOneofConflict is the error of obj setting two members of od, or nil.
// It names the first two members set in the order the .proto declares
// them and is at the second, so that every member reports the same error.
func protoOneofConflict(od protoreflect.OneofDescriptor, obj map[string]any) error {
	var first protoreflect.Name
	fields := od.Fields()
	for i := range fields.Len() {
		fd := fields.Get(i)
		n := fd.Name()
		if x, ok := obj[string(n)]; !ok || !protoSets(fd, x) {
			continue
		}
		if first == "" {
			first = n
			continue
		}
		return dataErr(string(n), "oneof %s takes one field; %s and %s are both set", od.Name(), first, n)
	}
	return nil
}

// field appends field fd of a message at depth, from the tree value x
// (not nil but for a google.protobuf.Value). A field without presence
// (proto3's implicit scalars) at its zero value, an empty list and an
// empty map write nothing.
func (e *protoEncoder) field(b []byte, fd protoreflect.FieldDescriptor, x any, depth int) ([]byte, error) {
	switch {
	case fd.IsList():
		return e.list(b, fd, x, depth)
	case fd.IsMap():
		return e.mapField(b, fd, x, depth)
	case fd.Message() != nil:
		return e.nested(b, fd, x, depth+1)
	}
	k := fd.Kind()
	v, err := protoToScalar(fd, x)
	if err != nil {
		return b, err
	}
	if !fd.HasPresence() && fd.ContainingOneof() == nil && protoIsZero(k, v) {
		return b, nil
	}
	b = protowire.AppendTag(b, fd.Number(), protoWireTypes[k])
	return protoAppendScalar(b, k, v), nil
}

// nested appends x as one value of the message field fd, a message at
// depth: tag and length, or a group's start and end.
func (e *protoEncoder) nested(b []byte, fd protoreflect.FieldDescriptor, x any, depth int) ([]byte, error) {
	num := fd.Number()
	var err error
	if fd.Kind() == protoreflect.GroupKind {
		b = protowire.AppendTag(b, num, protowire.StartGroupType)
		b, err = e.message(b, fd.Message(), x, depth)
		return protowire.AppendTag(b, num, protowire.EndGroupType), err
	}
	b = protowire.AppendTag(b, num, protowire.BytesType)
	b, at := protoReserve(b)
	b, err = e.message(b, fd.Message(), x, depth)
	return protoFinish(b, at), err
}

// list appends the repeated field fd from the tree's list x: packed when
// fd is, else an element a field.
func (e *protoEncoder) list(b []byte, fd protoreflect.FieldDescriptor, x any, depth int) ([]byte, error) {
	xs, ok := x.([]any)
	if !ok {
		return b, dataErr("", "repeated field takes a list, not %s", protoDescribe(x))
	}
	if len(xs) == 0 {
		return b, nil
	}
	if fd.Message() != nil {
		for i, el := range xs {
			var err error
			if b, err = e.nested(b, fd, el, depth+1); err != nil {
				return b, under(elem(i), err)
			}
		}
		return b, nil
	}
	num, k, packed := fd.Number(), fd.Kind(), fd.IsPacked()
	at := 0
	if packed {
		b = protowire.AppendTag(b, num, protowire.BytesType)
		b, at = protoReserve(b)
	}
	for i, el := range xs {
		v, err := protoToScalar(fd, el)
		if err != nil {
			return b, under(elem(i), err)
		}
		if !packed {
			b = protowire.AppendTag(b, num, protoWireTypes[k])
		}
		b = protoAppendScalar(b, k, v)
	}
	if packed {
		b = protoFinish(b, at)
	}
	return b, nil
}

// protoKey is an entry of a map being written.
type protoKey struct {
	rank uint64 // a bool or integer key, so that keys sort as their type
	str  string // a string key
	text string // the key as the tree has it
	key  protoreflect.Value
	x    any
}

// protoKeyCmp orders map entries as proto.MarshalOptions{Deterministic:
// true} does: false before true, numbers ascending, strings by bytes.
// Two texts of one number ("7" and "07") sort by text.
func protoKeyCmp(a, b protoKey) int {
	if c := cmp.Compare(a.rank, b.rank); c != 0 {
		return c
	}
	if c := strings.Compare(a.str, b.str); c != 0 {
		return c
	}
	return strings.Compare(a.text, b.text)
}

// mapField appends the map field fd from the tree's map x, an entry a
// field, in key order.
func (e *protoEncoder) mapField(b []byte, fd protoreflect.FieldDescriptor, x any, depth int) ([]byte, error) {
	obj, ok := x.(map[string]any)
	if !ok {
		return b, dataErr("", "map field takes an object, not %s", protoDescribe(x))
	}
	kfd, vfd := fd.MapKey(), fd.MapValue()
	kk, vk, vmd := kfd.Kind(), vfd.Kind(), vfd.Message()
	base := len(e.keys)
	var bad protoFirstErr
	for k, el := range obj {
		mk, err := protoToMapKey(kfd, k)
		if err != nil {
			bad.keep(k, under(k, err))
			continue
		}
		key := protoKey{text: k, key: mk.Value(), x: el}
		switch kk {
		case protoreflect.StringKind:
			key.str = mk.String()
		case protoreflect.BoolKind:
			if mk.Bool() {
				key.rank = 1
			}
		case protoreflect.Int32Kind, protoreflect.Sint32Kind, protoreflect.Sfixed32Kind,
			protoreflect.Int64Kind, protoreflect.Sint64Kind, protoreflect.Sfixed64Kind:
			key.rank = uint64(mk.Int()) ^ 1<<63
		default:
			key.rank = mk.Uint()
		}
		e.keys = append(e.keys, key)
	}
	slices.SortFunc(e.keys[base:], protoKeyCmp)
	num := fd.Number()
	for i := base; i < len(e.keys); i++ {
		key := e.keys[i] // a copy: the entries of nested maps go above
		start := len(b)
		b = protowire.AppendTag(b, num, protowire.BytesType)
		var at int
		b, at = protoReserve(b)
		b = protowire.AppendTag(b, 1, protoWireTypes[kk])
		b = protoAppendScalar(b, kk, key.key)
		var err error
		if vmd != nil {
			b = protowire.AppendTag(b, 2, protowire.BytesType)
			var vat int
			b, vat = protoReserve(b)
			b, err = e.message(b, vmd, key.x, depth+1)
			b = protoFinish(b, vat)
		} else {
			var v protoreflect.Value
			if v, err = protoToScalar(vfd, key.x); err == nil {
				b = protowire.AppendTag(b, 2, protoWireTypes[vk])
				b = protoAppendScalar(b, vk, v)
			}
		}
		b = protoFinish(b, at)
		if err != nil {
			bad.keep(key.text, under(key.text, err))
		}
		// Two texts of one key: the later in text order is written, as
		// though the entries were set in that order.
		if next := i + 1; next < len(e.keys) && e.keys[next].rank == key.rank && e.keys[next].str == key.str {
			b = b[:start]
		}
	}
	clear(e.keys[base:])
	e.keys = e.keys[:base]
	return b, bad.err
}

// structValue appends a google.protobuf.Value (md) from a JSON-able tree
// value. A time, a duration and bytes become the text encoding/json
// writes for them.
func (e *protoEncoder) structValue(b []byte, md protoreflect.MessageDescriptor, x any, depth int) ([]byte, error) {
	fields := md.Fields()
	switch v := x.(type) {
	case nil:
		return protowire.AppendVarint(protowire.AppendTag(b, 1, protowire.VarintType), 0), nil // null_value: NULL_VALUE
	case bool:
		return protowire.AppendVarint(protowire.AppendTag(b, 4, protowire.VarintType), protowire.EncodeBool(v)), nil
	case string:
		if err := protoCheckUTF8(fields.ByNumber(3), v); err != nil {
			return b, err
		}
		return protoAppendText(b, v), nil
	case map[string]any:
		return e.nested(b, fields.ByNumber(5), v, depth+1)
	case []any:
		return e.nested(b, fields.ByNumber(6), v, depth+1)
	case time.Time:
		return protoAppendText(b, v.Format(time.RFC3339Nano)), nil
	case transform.Duration:
		return protoAppendText(b, v.String()), nil
	case time.Duration:
		return protoAppendText(b, v.String()), nil
	case []byte:
		return protoAppendText(b, base64.StdEncoding.EncodeToString(v)), nil
	}
	f, err := protoToFloat(x, protoreflect.DoubleKind)
	if err != nil {
		return b, dataErr("", "%s takes a JSON value, not %s", wktValue, protoDescribe(x))
	}
	return protowire.AppendFixed64(protowire.AppendTag(b, 2, protowire.Fixed64Type), math.Float64bits(f)), nil
}

// protoAppendText appends a google.protobuf.Value's string_value s.
func protoAppendText(b []byte, s string) []byte {
	return protowire.AppendString(protowire.AppendTag(b, 3, protowire.BytesType), s)
}

// protoAppendSecsNanos appends a google.protobuf.Timestamp's or Duration's
// fields, each left out at zero.
func protoAppendSecsNanos(b []byte, secs int64, nanos int32) []byte {
	if secs != 0 {
		b = protowire.AppendVarint(protowire.AppendTag(b, 1, protowire.VarintType), uint64(secs))
	}
	if nanos != 0 {
		b = protowire.AppendVarint(protowire.AppendTag(b, 2, protowire.VarintType), uint64(int64(nanos)))
	}
	return b
}

// protoReserve appends room for the length of a value about to be
// written, one byte: most are shorter than 128 bytes. It returns where.
func protoReserve(b []byte) ([]byte, int) {
	return append(b, 0), len(b)
}

// protoFinish writes the length of what follows at, the room protoReserve
// made, moving it along for a length of more than one byte.
func protoFinish(b []byte, at int) []byte {
	n := len(b) - at - 1
	if n < 0x80 {
		b[at] = byte(n)
		return b
	}
	size := protowire.SizeVarint(uint64(n))
	b = append(b, make([]byte, size-1)...)
	copy(b[at+size:], b[at+1:at+1+n])
	protowire.AppendVarint(b[:at], uint64(n))
	return b
}

// protoIsZero reports whether v, a value of kind k, is its kind's zero, as
// a field without presence leaves it out: -0.0 is not.
func protoIsZero(k protoreflect.Kind, v protoreflect.Value) bool {
	switch k {
	case protoreflect.BoolKind:
		return !v.Bool()
	case protoreflect.EnumKind:
		return v.Enum() == 0
	case protoreflect.Int32Kind, protoreflect.Sint32Kind, protoreflect.Sfixed32Kind,
		protoreflect.Int64Kind, protoreflect.Sint64Kind, protoreflect.Sfixed64Kind:
		return v.Int() == 0
	case protoreflect.Uint32Kind, protoreflect.Fixed32Kind,
		protoreflect.Uint64Kind, protoreflect.Fixed64Kind:
		return v.Uint() == 0
	case protoreflect.FloatKind, protoreflect.DoubleKind:
		return v.Float() == 0 && !math.Signbit(v.Float())
	case protoreflect.StringKind:
		return v.String() == ""
	case protoreflect.BytesKind:
		return len(v.Bytes()) == 0
	}
	return false
}

// protoAppendScalar appends v, a value of scalar or enum kind k, as k's
// wire encoding writes it.
func protoAppendScalar(b []byte, k protoreflect.Kind, v protoreflect.Value) []byte {
	switch k {
	case protoreflect.BoolKind:
		return protowire.AppendVarint(b, protowire.EncodeBool(v.Bool()))
	case protoreflect.EnumKind:
		return protowire.AppendVarint(b, uint64(v.Enum()))
	case protoreflect.Int32Kind:
		return protowire.AppendVarint(b, uint64(int32(v.Int())))
	case protoreflect.Sint32Kind:
		return protowire.AppendVarint(b, protowire.EncodeZigZag(int64(int32(v.Int()))))
	case protoreflect.Uint32Kind:
		return protowire.AppendVarint(b, uint64(uint32(v.Uint())))
	case protoreflect.Int64Kind:
		return protowire.AppendVarint(b, uint64(v.Int()))
	case protoreflect.Sint64Kind:
		return protowire.AppendVarint(b, protowire.EncodeZigZag(v.Int()))
	case protoreflect.Uint64Kind:
		return protowire.AppendVarint(b, v.Uint())
	case protoreflect.Sfixed32Kind:
		return protowire.AppendFixed32(b, uint32(v.Int()))
	case protoreflect.Fixed32Kind:
		return protowire.AppendFixed32(b, uint32(v.Uint()))
	case protoreflect.FloatKind:
		return protowire.AppendFixed32(b, math.Float32bits(float32(v.Float())))
	case protoreflect.Sfixed64Kind:
		return protowire.AppendFixed64(b, uint64(v.Int()))
	case protoreflect.Fixed64Kind:
		return protowire.AppendFixed64(b, v.Uint())
	case protoreflect.DoubleKind:
		return protowire.AppendFixed64(b, math.Float64bits(v.Float()))
	case protoreflect.StringKind:
		return protowire.AppendString(b, v.String())
	case protoreflect.BytesKind:
		return protowire.AppendBytes(b, v.Bytes())
	}
	return b
}

// protoToMapKey parses the tree's text of a map key back to fd's type.
func protoToMapKey(fd protoreflect.FieldDescriptor, k string) (protoreflect.MapKey, error) {
	var v protoreflect.Value
	switch fd.Kind() {
	case protoreflect.StringKind:
		if err := protoCheckUTF8(fd, k); err != nil {
			return protoreflect.MapKey{}, err
		}
		v = protoreflect.ValueOfString(k)
	case protoreflect.BoolKind:
		b, err := strconv.ParseBool(k)
		if err != nil || (k != "true" && k != "false") {
			return protoreflect.MapKey{}, dataErr("", "map key %q is not a bool (true or false)", k)
		}
		v = protoreflect.ValueOfBool(b)
	case protoreflect.Int32Kind, protoreflect.Sint32Kind, protoreflect.Sfixed32Kind:
		n, err := strconv.ParseInt(k, 10, 32)
		if err != nil {
			return protoreflect.MapKey{}, protoBadKey(k, fd, err)
		}
		v = protoreflect.ValueOfInt32(int32(n))
	case protoreflect.Int64Kind, protoreflect.Sint64Kind, protoreflect.Sfixed64Kind:
		n, err := strconv.ParseInt(k, 10, 64)
		if err != nil {
			return protoreflect.MapKey{}, protoBadKey(k, fd, err)
		}
		v = protoreflect.ValueOfInt64(n)
	case protoreflect.Uint32Kind, protoreflect.Fixed32Kind:
		n, err := strconv.ParseUint(k, 10, 32)
		if err != nil {
			return protoreflect.MapKey{}, protoBadKey(k, fd, err)
		}
		v = protoreflect.ValueOfUint32(uint32(n))
	case protoreflect.Uint64Kind, protoreflect.Fixed64Kind:
		n, err := strconv.ParseUint(k, 10, 64)
		if err != nil {
			return protoreflect.MapKey{}, protoBadKey(k, fd, err)
		}
		v = protoreflect.ValueOfUint64(n)
	default:
		return protoreflect.MapKey{}, dataErr("", "map key kind %v is not supported", fd.Kind())
	}
	return v.MapKey(), nil
}

// protoBadKey is the error of a map key that does not parse as fd's integer
// kind.
func protoBadKey(k string, fd protoreflect.FieldDescriptor, err error) error {
	if errors.Is(err, strconv.ErrRange) {
		return dataErr("", "map key %s is out of range for %v", k, fd.Kind())
	}
	return dataErr("", "map key %q is not a decimal %v", k, fd.Kind())
}

// protoToScalar converts the tree value x to a value of fd's scalar or enum
// kind.
func protoToScalar(fd protoreflect.FieldDescriptor, x any) (protoreflect.Value, error) {
	switch k := fd.Kind(); k {
	case protoreflect.Int32Kind, protoreflect.Sint32Kind, protoreflect.Sfixed32Kind:
		n, err := protoToInt(x, k, math.MinInt32, math.MaxInt32)
		return protoreflect.ValueOfInt32(int32(n)), err
	case protoreflect.Int64Kind, protoreflect.Sint64Kind, protoreflect.Sfixed64Kind:
		n, err := protoToInt(x, k, math.MinInt64, math.MaxInt64)
		return protoreflect.ValueOfInt64(n), err
	case protoreflect.Uint32Kind, protoreflect.Fixed32Kind:
		n, err := protoToUint(x, k, math.MaxUint32)
		return protoreflect.ValueOfUint32(uint32(n)), err
	case protoreflect.Uint64Kind, protoreflect.Fixed64Kind:
		n, err := protoToUint(x, k, math.MaxUint64)
		return protoreflect.ValueOfUint64(n), err
	case protoreflect.DoubleKind:
		f, err := protoToFloat(x, k)
		return protoreflect.ValueOfFloat64(f), err
	case protoreflect.FloatKind:
		f, err := protoToFloat(x, k)
		if err == nil && !math.IsInf(f, 0) && math.Abs(f) > math.MaxFloat32 {
			err = dataErr("", "%v is out of range for float", f)
		}
		return protoreflect.ValueOfFloat32(float32(f)), err
	case protoreflect.BoolKind:
		b, ok := x.(bool)
		if !ok {
			return protoreflect.Value{}, dataErr("", "bool takes true or false, not %s", protoDescribe(x))
		}
		return protoreflect.ValueOfBool(b), nil
	case protoreflect.StringKind:
		s, ok := x.(string)
		if !ok {
			return protoreflect.Value{}, dataErr("", "string takes a string, not %s", protoDescribe(x))
		}
		return protoreflect.ValueOfString(s), protoCheckUTF8(fd, s)
	case protoreflect.BytesKind:
		switch b := x.(type) {
		case []byte:
			return protoreflect.ValueOfBytes(b), nil
		case string:
			// JSON writes bytes as standard base64 text, as Go's
			// encoding/json does; a tree read from JSON holds them so.
			d, err := base64.StdEncoding.DecodeString(b)
			if err != nil {
				return protoreflect.Value{}, dataErr("", "bytes takes bytes or standard base64 text; the text is not base64: %v", err)
			}
			return protoreflect.ValueOfBytes(d), nil
		}
		return protoreflect.Value{}, dataErr("", "bytes takes bytes or base64 text, not %s", protoDescribe(x))
	case protoreflect.EnumKind:
		return protoToEnum(fd.Enum(), x)
	}
	return protoreflect.Value{}, dataErr("", "field kind %v is not supported", fd.Kind())
}

// protoCheckUTF8 refuses text that is not UTF-8 for a string field whose
// readers refuse it: a proto3 string, and an editions string unless its
// features say otherwise (protoEnforceUTF8). Proto2 strings may hold any
// bytes.
func protoCheckUTF8(fd protoreflect.FieldDescriptor, s string) error {
	if protoEnforceUTF8(fd) && !utf8.ValidString(s) {
		return dataErr("", "string is not valid UTF-8")
	}
	return nil
}

// protoToEnum converts a value name or number to a value of enum ed. A number
// the enum has no name for is kept for an open (proto3) enum, as a reader
// keeps it, and refused for a closed (proto2) one, whose readers would
// drop it into unknown fields.
func protoToEnum(ed protoreflect.EnumDescriptor, x any) (protoreflect.Value, error) {
	if s, ok := x.(string); ok {
		ev := ed.Values().ByName(protoreflect.Name(s))
		if ev == nil {
			return protoreflect.Value{}, dataErr("", "enum %s has no value %q", ed.FullName(), s)
		}
		return protoreflect.ValueOfEnum(ev.Number()), nil
	}
	if !protoIsNumber(x) {
		return protoreflect.Value{}, dataErr("", "enum %s takes a value name or number, not %s", ed.FullName(), protoDescribe(x))
	}
	n, err := protoToInt(x, protoreflect.EnumKind, math.MinInt32, math.MaxInt32)
	if err != nil {
		return protoreflect.Value{}, err
	}
	num := protoreflect.EnumNumber(n)
	if ed.IsClosed() && ed.Values().ByNumber(num) == nil {
		return protoreflect.Value{}, dataErr("", "closed enum %s has no value %d", ed.FullName(), n)
	}
	return protoreflect.ValueOfEnum(num), nil
}

// protoInteger is an integer of either sign up to 64 bits of magnitude.
type protoInteger struct {
	neg bool
	abs uint64
	big bool // beyond 64 bits of magnitude
}

// protoToInteger reads an integer from the tree value x: a Go integer, an
// integral float64 or float32, or an integral json.Number. kind names
// the field's kind in errors.
func protoToInteger(x any, kind protoreflect.Kind) (protoInteger, error) {
	fromInt := func(n int64) protoInteger {
		if n < 0 {
			return protoInteger{neg: true, abs: uint64(-(n + 1)) + 1}
		}
		return protoInteger{abs: uint64(n)}
	}
	switch n := x.(type) {
	case int64:
		return fromInt(n), nil
	case int:
		return fromInt(int64(n)), nil
	case int32:
		return fromInt(int64(n)), nil
	case int16:
		return fromInt(int64(n)), nil
	case int8:
		return fromInt(int64(n)), nil
	case uint64:
		return protoInteger{abs: n}, nil
	case uint:
		return protoInteger{abs: uint64(n)}, nil
	case uint32:
		return protoInteger{abs: uint64(n)}, nil
	case uint16:
		return protoInteger{abs: uint64(n)}, nil
	case uint8:
		return protoInteger{abs: uint64(n)}, nil
	case float32:
		return protoFloatInteger(float64(n), kind)
	case float64:
		return protoFloatInteger(n, kind)
	case json.Number:
		s := string(n)
		if i, err := strconv.ParseInt(s, 10, 64); err == nil {
			return fromInt(i), nil
		}
		if u, err := strconv.ParseUint(s, 10, 64); err == nil {
			return protoInteger{abs: u}, nil
		}
		// "5.0", "1e3", or a number too big for 64 bits: exactly, with
		// no float rounding in between.
		r, ok := new(big.Rat).SetString(s)
		if !ok {
			return protoInteger{}, dataErr("", "%v takes an integer; %q is not a number", kind, s)
		}
		if !r.IsInt() {
			return protoInteger{}, dataErr("", "%v takes an integer, not %s", kind, s)
		}
		num := r.Num()
		out := protoInteger{neg: num.Sign() < 0}
		num.Abs(num)
		if !num.IsUint64() {
			return protoInteger{neg: out.neg, big: true}, nil
		}
		out.abs = num.Uint64()
		return out, nil
	}
	return protoInteger{}, dataErr("", "%v takes an integer, not %s", kind, protoDescribe(x))
}

// protoFloatInteger reads an integer from a float that must be integral.
func protoFloatInteger(f float64, kind protoreflect.Kind) (protoInteger, error) {
	if math.IsNaN(f) || math.IsInf(f, 0) || f != math.Trunc(f) {
		return protoInteger{}, dataErr("", "%v takes an integer, not %v", kind, f)
	}
	const two64 = 1 << 64
	a := math.Abs(f)
	if a >= two64 {
		return protoInteger{neg: f < 0, big: true}, nil
	}
	return protoInteger{neg: f < 0, abs: uint64(a)}, nil
}

// protoToInt reads an integer from x within lo to hi.
func protoToInt(x any, kind protoreflect.Kind, lo, hi int64) (int64, error) {
	n, err := protoToInteger(x, kind)
	if err != nil {
		return 0, err
	}
	if n.big || (n.neg && n.abs > uint64(-(lo+1))+1) || (!n.neg && n.abs > uint64(hi)) {
		return 0, dataErr("", "%v is out of range for %v (%d to %d)", x, kind, lo, hi)
	}
	if n.neg {
		return -int64(n.abs-1) - 1, nil
	}
	return int64(n.abs), nil
}

// protoToUint reads a non-negative integer from x up to hi.
func protoToUint(x any, kind protoreflect.Kind, hi uint64) (uint64, error) {
	n, err := protoToInteger(x, kind)
	if err != nil {
		return 0, err
	}
	if n.big || (n.neg && n.abs != 0) || n.abs > hi {
		return 0, dataErr("", "%v is out of range for %v (0 to %d)", x, kind, hi)
	}
	return n.abs, nil
}

// protoToFloat reads a number from x: a float, a Go integer (rounded to the
// nearest float64 beyond 2^53) or a json.Number.
func protoToFloat(x any, kind protoreflect.Kind) (float64, error) {
	switch n := x.(type) {
	case float64:
		return n, nil
	case float32:
		return float64(n), nil
	case json.Number:
		f, err := strconv.ParseFloat(string(n), 64)
		if err != nil {
			if errors.Is(err, strconv.ErrRange) {
				return 0, dataErr("", "%s is out of range for %v", n, kind)
			}
			return 0, dataErr("", "%v takes a number; %q is not a number", kind, string(n))
		}
		return f, nil
	case int64:
		return float64(n), nil
	case int:
		return float64(n), nil
	case int32:
		return float64(n), nil
	case int16:
		return float64(n), nil
	case int8:
		return float64(n), nil
	case uint64:
		return float64(n), nil
	case uint:
		return float64(n), nil
	case uint32:
		return float64(n), nil
	case uint16:
		return float64(n), nil
	case uint8:
		return float64(n), nil
	}
	return 0, dataErr("", "%v takes a number, not %s", kind, protoDescribe(x))
}

// protoIsNumber reports whether x is a number of the tree (or a Go integer).
func protoIsNumber(x any) bool {
	switch x.(type) {
	case int, int8, int16, int32, int64, uint, uint8, uint16, uint32, uint64, float32, float64, json.Number:
		return true
	}
	return false
}

// protoDescribe names the type of a tree value for an error, without its
// content: records may carry what the dead-letter topic should not.
func protoDescribe(x any) string {
	switch x.(type) {
	case nil:
		return "null"
	case bool:
		return "a bool"
	case string:
		return "a string"
	case []byte:
		return "bytes"
	case int, int8, int16, int32, int64, uint, uint8, uint16, uint32, uint64:
		return "an integer"
	case float32, float64, json.Number:
		return "a number"
	case map[string]any:
		return "an object"
	case []any:
		return "a list"
	case time.Time:
		return "a timestamp"
	case transform.Duration, time.Duration:
		return "a duration"
	}
	return fmt.Sprintf("a Go %T", x)
}

// protoToTimestamp reads a google.protobuf.Timestamp's seconds and nanos
// from a time or its RFC 3339 text.
func protoToTimestamp(x any) (secs int64, nanos int32, err error) {
	var t time.Time
	switch v := x.(type) {
	case time.Time:
		t = v
	case string:
		if t, err = time.Parse(time.RFC3339Nano, v); err != nil {
			return 0, 0, dataErr("", "timestamp takes a time or RFC 3339 text such as 2024-05-01T12:00:00Z, not %s", protoQuote(v))
		}
	default:
		return 0, 0, dataErr("", "timestamp takes a time or RFC 3339 text, not %s", protoDescribe(x))
	}
	secs = t.Unix()
	if secs < protoMinTimestampSecs || secs > protoMaxTimestampSecs {
		return 0, 0, dataErr("", "timestamp %s is out of range (0001-01-01 to 9999-12-31)", t.UTC().Format(time.RFC3339Nano))
	}
	return secs, int32(t.Nanosecond()), nil
}

// protoToDuration reads a google.protobuf.Duration's seconds and nanos
// from a duration or Go's duration text.
func protoToDuration(x any) (secs int64, nanos int32, err error) {
	var d time.Duration
	switch v := x.(type) {
	case transform.Duration:
		d = time.Duration(v)
	case time.Duration:
		d = v
	case string:
		if d, err = time.ParseDuration(v); err != nil {
			return 0, 0, dataErr("", "duration takes a duration or Go duration text such as 1h30m, not %s", protoQuote(v))
		}
	default:
		return 0, 0, dataErr("", "duration takes a duration or Go duration text, not %s", protoDescribe(x))
	}
	// Go's / and % truncate toward zero: seconds and nanos share a sign,
	// as duration.proto requires.
	return int64(d / time.Second), int32(d % time.Second), nil
}

// protoQuote quotes s for an error, cut to a length a log line bears.
func protoQuote(s string) string {
	const most = 40
	if len(s) > most {
		return strconv.Quote(s[:most]) + "..."
	}
	return strconv.Quote(s)
}

// protoShape is the Shape of the values of md, for checking the dotted
// paths a pipeline names: a message's fields by .proto name, maps,
// google.protobuf.Struct and Value open (any key may follow), and the
// rest (scalars, repeated fields, which dotted paths do not go through,
// and the well-known types the tree holds as scalars or lists) with nil
// Fields. A recursive message gives a shape that points back at itself.
func protoShape(md protoreflect.MessageDescriptor) *Shape {
	return protoMessageShape(md, map[protoreflect.FullName]*Shape{})
}

func protoMessageShape(md protoreflect.MessageDescriptor, seen map[protoreflect.FullName]*Shape) *Shape {
	switch name := md.FullName(); {
	case name == wktStruct || name == wktValue:
		return &Shape{Open: true}
	case name == wktTimestamp || name == wktDuration || name == wktList || name == wktFieldMask || protoIsWrapper(name):
		return &Shape{}
	}
	if s, ok := seen[md.FullName()]; ok {
		return s
	}
	fields := md.Fields()
	s := &Shape{Fields: make(map[string]*Shape, fields.Len())}
	seen[md.FullName()] = s
	for i := range fields.Len() {
		fd := fields.Get(i)
		var sub *Shape
		switch {
		case fd.IsMap():
			sub = &Shape{Open: true}
		case fd.IsList() || fd.Message() == nil:
			sub = &Shape{}
		default:
			sub = protoMessageShape(fd.Message(), seen)
		}
		s.Fields[string(fd.Name())] = sub
	}
	return s
}
