package format

import (
	"cmp"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/big"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/sharerelay/sharerelay/transform"
)

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
