package format

// The codec as it was before it read and wrote the wire format itself:
// proto.Unmarshal into a dynamicpb message and a walk of it with
// protoreflect, and a dynamicpb message built from the tree and written by
// proto.MarshalOptions{Deterministic: true}. Kept as the oracle of
// protobuf_differential_test.go: what the protobuf library makes of the
// same bytes and trees. The conversions of single values (protoToScalar,
// protoToMapKey, protoFromTimestamp and the like) are shared with the
// codec: the oracle checks the walk and the wire, not those.

import (
	"encoding/base64"
	"strconv"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/dynamicpb"

	"github.com/sharerelay/sharerelay/transform"
)

// oracleDecodeProto decodes b (protobuf binary, without the Confluent header and
// message indexes) as a message of md into the value tree, normally a
// map[string]any. Bytes that are not such a message, a required field
// missing, or a Timestamp or Duration out of its type's range are a
// *DataError. Fields b holds that md does not declare (written with a
// newer schema) are skipped: the tree has no place for them, so encoding
// the tree again drops them.
func oracleDecodeProto(md protoreflect.MessageDescriptor, b []byte) (any, error) {
	m := dynamicpb.NewMessage(md)
	// Required fields are checked by oracleFromMessage, which can say where.
	opts := proto.UnmarshalOptions{RecursionLimit: protoMaxDepth, AllowPartial: true}
	if err := opts.Unmarshal(b, m); err != nil {
		return nil, dataErr("", "not a %s message: %v", md.FullName(), err)
	}
	return oracleFromMessage(m)
}

// oracleFromMessage is the tree of a message: a well-known type as its value,
// any other message as a map of its fields by .proto name, holding the
// fields without presence always and those with presence when set.
func oracleFromMessage(m protoreflect.Message) (any, error) {
	md := m.Descriptor()
	fields := md.Fields()
	switch name := md.FullName(); {
	case name == wktTimestamp:
		return protoFromTimestamp(m.Get(fields.ByNumber(1)).Int(), m.Get(fields.ByNumber(2)).Int())
	case name == wktDuration:
		return protoFromDuration(m.Get(fields.ByNumber(1)).Int(), m.Get(fields.ByNumber(2)).Int())
	case name == wktValue:
		fd := m.WhichOneof(md.Oneofs().Get(0))
		if fd == nil || fd.Number() == 1 { // kind unset, or null_value
			return nil, nil
		}
		return oracleFromSingular(fd, m.Get(fd))
	case name == wktStruct || name == wktList || name == wktFieldMask || protoIsWrapper(name):
		fd := fields.ByNumber(1)
		return oracleFromField(fd, m.Get(fd))
	}
	out := make(map[string]any, fields.Len())
	for i := range fields.Len() {
		fd := fields.Get(i)
		if fd.HasPresence() && !m.Has(fd) {
			if fd.Cardinality() == protoreflect.Required {
				return nil, dataErr(string(fd.Name()), "required field of %s is missing", md.FullName())
			}
			continue
		}
		v, err := oracleFromField(fd, m.Get(fd))
		if err != nil {
			return nil, under(string(fd.Name()), err)
		}
		out[string(fd.Name())] = v
	}
	return out, nil
}

// oracleFromField is the tree of field fd's value v: []any for a repeated
// field, map[string]any by the keys' text for a map.
func oracleFromField(fd protoreflect.FieldDescriptor, v protoreflect.Value) (any, error) {
	switch {
	case fd.IsList():
		l := v.List()
		out := make([]any, l.Len())
		for i := range out {
			x, err := oracleFromSingular(fd, l.Get(i))
			if err != nil {
				return nil, under(elem(i), err)
			}
			out[i] = x
		}
		return out, nil
	case fd.IsMap():
		mp := v.Map()
		vfd := fd.MapValue()
		out := make(map[string]any, mp.Len())
		var bad protoFirstErr
		mp.Range(func(k protoreflect.MapKey, v protoreflect.Value) bool {
			key := oracleMapKeyText(k)
			x, err := oracleFromSingular(vfd, v)
			if err != nil {
				bad.keep(key, under(key, err))
			}
			out[key] = x
			return true
		})
		if bad.err != nil {
			return nil, bad.err
		}
		return out, nil
	}
	return oracleFromSingular(fd, v)
}

// oracleFromSingular is the tree of one value of fd's type.
func oracleFromSingular(fd protoreflect.FieldDescriptor, v protoreflect.Value) (any, error) {
	switch fd.Kind() {
	case protoreflect.BoolKind:
		return v.Bool(), nil
	case protoreflect.Int32Kind, protoreflect.Sint32Kind, protoreflect.Sfixed32Kind,
		protoreflect.Int64Kind, protoreflect.Sint64Kind, protoreflect.Sfixed64Kind:
		return v.Int(), nil
	case protoreflect.Uint32Kind, protoreflect.Fixed32Kind,
		protoreflect.Uint64Kind, protoreflect.Fixed64Kind:
		return v.Uint(), nil
	case protoreflect.FloatKind, protoreflect.DoubleKind:
		return v.Float(), nil
	case protoreflect.StringKind:
		return v.String(), nil
	case protoreflect.BytesKind:
		// A copy, never nil: the tree is the step's to change, and JSON
		// writes an empty []byte as "" where it writes a nil one as null.
		return append([]byte{}, v.Bytes()...), nil
	case protoreflect.EnumKind:
		n := v.Enum()
		if ev := fd.Enum().Values().ByNumber(n); ev != nil {
			return string(ev.Name()), nil
		}
		return int64(n), nil // an open enum's number the schema has no name for
	case protoreflect.MessageKind, protoreflect.GroupKind:
		return oracleFromMessage(v.Message())
	}
	return nil, dataErr("", "field kind %v is not supported", fd.Kind())
}

// oracleMapKeyText is a map key as the tree's map keys it.
func oracleMapKeyText(k protoreflect.MapKey) string {
	switch x := k.Interface().(type) {
	case string:
		return x
	case bool:
		return strconv.FormatBool(x)
	case int32:
		return strconv.FormatInt(int64(x), 10)
	case int64:
		return strconv.FormatInt(x, 10)
	case uint32:
		return strconv.FormatUint(uint64(x), 10)
	case uint64:
		return strconv.FormatUint(x, 10)
	}
	return k.String()
}

// oracleEncodeProto encodes the value tree v, a map[string]any for an ordinary
// message, as a message of md. Output is deterministic (map entries in key
// order), so equal trees give equal bytes. A value that does not fit is a
// *DataError whose Path names the field; when several do not, the one
// reported is the same whatever the maps' iteration order.
func oracleEncodeProto(md protoreflect.MessageDescriptor, v any) ([]byte, error) {
	m := dynamicpb.NewMessage(md)
	if err := oracleToMessage(m, v, 0); err != nil {
		return nil, err
	}
	// Required fields are checked by oracleToMessage, which can say where.
	b, err := proto.MarshalOptions{Deterministic: true, AllowPartial: true}.Marshal(m)
	if err != nil {
		return nil, dataErr("", "writing %s: %v", md.FullName(), err)
	}
	return b, nil
}

// oracleToMessage fills the empty message m from v: a well-known type from its
// tree value, any other message from a map of its fields by .proto name,
// where a nil value leaves the field unset (but see protoSets). depth
// counts the messages m is nested in, so that a cyclic tree fails rather
// than exhausting the stack.
func oracleToMessage(m protoreflect.Message, v any, depth int) error {
	if depth >= protoMaxDepth {
		return dataErr("", "messages nest more than %d deep", protoMaxDepth)
	}
	md := m.Descriptor()
	fields := md.Fields()
	switch name := md.FullName(); {
	case name == wktTimestamp:
		return oracleToTimestamp(m, v)
	case name == wktDuration:
		return oracleToDuration(m, v)
	case name == wktValue:
		return oracleToStructValue(m, v, depth)
	case name == wktStruct:
		if _, ok := v.(map[string]any); !ok {
			return dataErr("", "%s takes an object, not %s", name, protoDescribe(v))
		}
		return oracleSetField(m, fields.ByNumber(1), v, depth)
	case name == wktList || name == wktFieldMask:
		if _, ok := v.([]any); !ok {
			return dataErr("", "%s takes a list, not %s", name, protoDescribe(v))
		}
		return oracleSetField(m, fields.ByNumber(1), v, depth)
	case protoIsWrapper(name):
		return oracleSetField(m, fields.ByNumber(1), v, depth)
	}
	obj, ok := v.(map[string]any)
	if !ok {
		return dataErr("", "message %s takes an object, not %s", md.FullName(), protoDescribe(v))
	}
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
		if err := oracleSetField(m, fd, x, depth); err != nil {
			bad.keep(k, under(k, err))
		}
	}
	if bad.err != nil {
		return bad.err
	}
	req := md.RequiredNumbers()
	for i := range req.Len() {
		if fd := fields.ByNumber(req.Get(i)); !m.Has(fd) {
			return dataErr(string(fd.Name()), "required field of %s is missing", md.FullName())
		}
	}
	return nil
}

// oracleSetField sets field fd of m from the tree value x (not nil).
func oracleSetField(m protoreflect.Message, fd protoreflect.FieldDescriptor, x any, depth int) error {
	switch {
	case fd.IsList():
		xs, ok := x.([]any)
		if !ok {
			return dataErr("", "repeated field takes a list, not %s", protoDescribe(x))
		}
		l := m.Mutable(fd).List()
		for i, e := range xs {
			var v protoreflect.Value
			var err error
			if fd.Message() != nil {
				v = l.NewElement()
				err = oracleToMessage(v.Message(), e, depth+1)
			} else {
				v, err = protoToScalar(fd, e)
			}
			if err != nil {
				return under(elem(i), err)
			}
			l.Append(v)
		}
		return nil
	case fd.IsMap():
		obj, ok := x.(map[string]any)
		if !ok {
			return dataErr("", "map field takes an object, not %s", protoDescribe(x))
		}
		mp := m.Mutable(fd).Map()
		kfd, vfd := fd.MapKey(), fd.MapValue()
		var bad protoFirstErr
		for k, e := range obj {
			key, err := protoToMapKey(kfd, k)
			if err != nil {
				bad.keep(k, under(k, err))
				continue
			}
			var v protoreflect.Value
			if vfd.Message() != nil {
				v = mp.NewValue()
				err = oracleToMessage(v.Message(), e, depth+1)
			} else {
				v, err = protoToScalar(vfd, e)
			}
			if err != nil {
				bad.keep(k, under(k, err))
				continue
			}
			mp.Set(key, v)
		}
		return bad.err
	case fd.Message() != nil:
		return oracleToMessage(m.Mutable(fd).Message(), x, depth+1)
	}
	v, err := protoToScalar(fd, x)
	if err != nil {
		return err
	}
	m.Set(fd, v)
	return nil
}

// oracleToTimestamp fills a google.protobuf.Timestamp from a time or its RFC
// 3339 text.
func oracleToTimestamp(m protoreflect.Message, x any) error {
	var t time.Time
	switch v := x.(type) {
	case time.Time:
		t = v
	case string:
		var err error
		if t, err = time.Parse(time.RFC3339Nano, v); err != nil {
			return dataErr("", "timestamp takes a time or RFC 3339 text such as 2024-05-01T12:00:00Z, not %s", protoQuote(v))
		}
	default:
		return dataErr("", "timestamp takes a time or RFC 3339 text, not %s", protoDescribe(x))
	}
	secs := t.Unix()
	if secs < protoMinTimestampSecs || secs > protoMaxTimestampSecs {
		return dataErr("", "timestamp %s is out of range (0001-01-01 to 9999-12-31)", t.UTC().Format(time.RFC3339Nano))
	}
	fields := m.Descriptor().Fields()
	m.Set(fields.ByNumber(1), protoreflect.ValueOfInt64(secs))
	m.Set(fields.ByNumber(2), protoreflect.ValueOfInt32(int32(t.Nanosecond())))
	return nil
}

// oracleToDuration fills a google.protobuf.Duration from a duration or Go's
// duration text.
func oracleToDuration(m protoreflect.Message, x any) error {
	var d time.Duration
	switch v := x.(type) {
	case transform.Duration:
		d = time.Duration(v)
	case time.Duration:
		d = v
	case string:
		var err error
		if d, err = time.ParseDuration(v); err != nil {
			return dataErr("", "duration takes a duration or Go duration text such as 1h30m, not %s", protoQuote(v))
		}
	default:
		return dataErr("", "duration takes a duration or Go duration text, not %s", protoDescribe(x))
	}
	fields := m.Descriptor().Fields()
	// Go's / and % truncate toward zero: seconds and nanos share a sign,
	// as duration.proto requires.
	m.Set(fields.ByNumber(1), protoreflect.ValueOfInt64(int64(d/time.Second)))
	m.Set(fields.ByNumber(2), protoreflect.ValueOfInt32(int32(d%time.Second)))
	return nil
}

// oracleToStructValue fills a google.protobuf.Value from a JSON-able tree
// value. A time, a duration and bytes become the text encoding/json
// writes for them.
func oracleToStructValue(m protoreflect.Message, x any, depth int) error {
	fields := m.Descriptor().Fields()
	set := func(num protoreflect.FieldNumber, v protoreflect.Value) error {
		m.Set(fields.ByNumber(num), v)
		return nil
	}
	switch v := x.(type) {
	case nil:
		return set(1, protoreflect.ValueOfEnum(0)) // null_value: NULL_VALUE
	case bool:
		return set(4, protoreflect.ValueOfBool(v))
	case string:
		return set(3, protoreflect.ValueOfString(v))
	case map[string]any:
		return oracleToMessage(m.Mutable(fields.ByNumber(5)).Message(), v, depth+1)
	case []any:
		return oracleToMessage(m.Mutable(fields.ByNumber(6)).Message(), v, depth+1)
	case time.Time:
		return set(3, protoreflect.ValueOfString(v.Format(time.RFC3339Nano)))
	case transform.Duration:
		return set(3, protoreflect.ValueOfString(v.String()))
	case time.Duration:
		return set(3, protoreflect.ValueOfString(v.String()))
	case []byte:
		return set(3, protoreflect.ValueOfString(base64.StdEncoding.EncodeToString(v)))
	}
	f, err := protoToFloat(x, protoreflect.DoubleKind)
	if err != nil {
		return dataErr("", "%s takes a JSON value, not %s", wktValue, protoDescribe(x))
	}
	return set(2, protoreflect.ValueOfFloat64(f))
}
