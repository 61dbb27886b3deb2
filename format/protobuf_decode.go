package format

import (
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/sharerelay/sharerelay/transform"
)

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
