package format

// The Protobuf codec: .proto text compiled to descriptors, the Confluent
// message indexes resolved to a message, and the message's binary encoding
// turned into the value tree and back. Wire encoding is left to dynamicpb
// and proto.Marshal/Unmarshal; this file converts between their
// protoreflect values and the tree (see doc.go for the mapping).

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/big"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/bufbuild/protocompile"
	"github.com/bufbuild/protocompile/reporter"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protodesc"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"
	"google.golang.org/protobuf/types/descriptorpb"
	"google.golang.org/protobuf/types/dynamicpb"

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
	return fdp
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
// newer schema) are skipped: the tree has no place for them, so encoding
// the tree again drops them.
func decodeProto(md protoreflect.MessageDescriptor, b []byte) (any, error) {
	m := dynamicpb.NewMessage(md)
	// Required fields are checked by protoFromMessage, which can say where.
	opts := proto.UnmarshalOptions{RecursionLimit: protoMaxDepth, AllowPartial: true}
	if err := opts.Unmarshal(b, m); err != nil {
		return nil, dataErr("", "not a %s message: %v", md.FullName(), err)
	}
	return protoFromMessage(m)
}

// protoFromMessage is the tree of a message: a well-known type as its value,
// any other message as a map of its fields by .proto name, holding the
// fields without presence always and those with presence when set.
func protoFromMessage(m protoreflect.Message) (any, error) {
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
		return protoFromSingular(fd, m.Get(fd))
	case name == wktStruct || name == wktList || name == wktFieldMask || protoIsWrapper(name):
		fd := fields.ByNumber(1)
		return protoFromField(fd, m.Get(fd))
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
		v, err := protoFromField(fd, m.Get(fd))
		if err != nil {
			return nil, under(string(fd.Name()), err)
		}
		out[string(fd.Name())] = v
	}
	return out, nil
}

// protoFromField is the tree of field fd's value v: []any for a repeated
// field, map[string]any by the keys' text for a map.
func protoFromField(fd protoreflect.FieldDescriptor, v protoreflect.Value) (any, error) {
	switch {
	case fd.IsList():
		l := v.List()
		out := make([]any, l.Len())
		for i := range out {
			x, err := protoFromSingular(fd, l.Get(i))
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
			key := protoMapKeyText(k)
			x, err := protoFromSingular(vfd, v)
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
	return protoFromSingular(fd, v)
}

// protoFromSingular is the tree of one value of fd's type.
func protoFromSingular(fd protoreflect.FieldDescriptor, v protoreflect.Value) (any, error) {
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
		return protoFromMessage(v.Message())
	}
	return nil, dataErr("", "field kind %v is not supported", fd.Kind())
}

// protoMapKeyText is a map key as the tree's map keys it.
func protoMapKeyText(k protoreflect.MapKey) string {
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
// message, as a message of md. Output is deterministic (map entries in key
// order), so equal trees give equal bytes. A value that does not fit is a
// *DataError whose Path names the field; when several do not, the one
// reported is the same whatever the maps' iteration order.
func encodeProto(md protoreflect.MessageDescriptor, v any) ([]byte, error) {
	m := dynamicpb.NewMessage(md)
	if err := protoToMessage(m, v, 0); err != nil {
		return nil, err
	}
	// Required fields are checked by protoToMessage, which can say where.
	b, err := proto.MarshalOptions{Deterministic: true, AllowPartial: true}.Marshal(m)
	if err != nil {
		return nil, dataErr("", "writing %s: %v", md.FullName(), err)
	}
	return b, nil
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

// protoToMessage fills the empty message m from v: a well-known type from its
// tree value, any other message from a map of its fields by .proto name,
// where a nil value leaves the field unset. depth counts the messages m
// is nested in, so that a cyclic tree fails rather than exhausting the
// stack.
func protoToMessage(m protoreflect.Message, v any, depth int) error {
	if depth >= protoMaxDepth {
		return dataErr("", "messages nest more than %d deep", protoMaxDepth)
	}
	md := m.Descriptor()
	fields := md.Fields()
	switch name := md.FullName(); {
	case name == wktTimestamp:
		return protoToTimestamp(m, v)
	case name == wktDuration:
		return protoToDuration(m, v)
	case name == wktValue:
		return protoToStructValue(m, v, depth)
	case name == wktStruct:
		if _, ok := v.(map[string]any); !ok {
			return dataErr("", "%s takes an object, not %s", name, protoDescribe(v))
		}
		return protoSetField(m, fields.ByNumber(1), v, depth)
	case name == wktList || name == wktFieldMask:
		if _, ok := v.([]any); !ok {
			return dataErr("", "%s takes a list, not %s", name, protoDescribe(v))
		}
		return protoSetField(m, fields.ByNumber(1), v, depth)
	case protoIsWrapper(name):
		return protoSetField(m, fields.ByNumber(1), v, depth)
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
		if x == nil {
			continue
		}
		if od := fd.ContainingOneof(); od != nil && !od.IsSynthetic() {
			if err := protoOneofConflict(od, obj); err != nil {
				bad.keep(k, err)
				continue
			}
		}
		if err := protoSetField(m, fd, x, depth); err != nil {
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

// protoOneofConflict is the error of obj setting two members of od, or nil.
// It names the first two members set in the order the .proto declares
// them and is at the second, so that every member reports the same error.
func protoOneofConflict(od protoreflect.OneofDescriptor, obj map[string]any) error {
	var first protoreflect.Name
	fields := od.Fields()
	for i := range fields.Len() {
		n := fields.Get(i).Name()
		if obj[string(n)] == nil {
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

// protoSetField sets field fd of m from the tree value x (not nil).
func protoSetField(m protoreflect.Message, fd protoreflect.FieldDescriptor, x any, depth int) error {
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
				err = protoToMessage(v.Message(), e, depth+1)
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
				err = protoToMessage(v.Message(), e, depth+1)
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
		return protoToMessage(m.Mutable(fd).Message(), x, depth+1)
	}
	v, err := protoToScalar(fd, x)
	if err != nil {
		return err
	}
	m.Set(fd, v)
	return nil
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

// protoCheckUTF8 refuses text that is not UTF-8 for a proto3 string, whose
// readers refuse it (proto.Marshal would too, without saying where).
// Proto2 strings may hold any bytes; for an editions file, whose features
// decide, proto.Marshal's error is left to say it.
func protoCheckUTF8(fd protoreflect.FieldDescriptor, s string) error {
	if fd.ParentFile() != nil && fd.ParentFile().Syntax() == protoreflect.Proto3 && !utf8.ValidString(s) {
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

// protoToTimestamp fills a google.protobuf.Timestamp from a time or its RFC
// 3339 text.
func protoToTimestamp(m protoreflect.Message, x any) error {
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

// protoToDuration fills a google.protobuf.Duration from a duration or Go's
// duration text.
func protoToDuration(m protoreflect.Message, x any) error {
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

// protoToStructValue fills a google.protobuf.Value from a JSON-able tree
// value. A time, a duration and bytes become the text encoding/json
// writes for them.
func protoToStructValue(m protoreflect.Message, x any, depth int) error {
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
		return protoToMessage(m.Mutable(fields.ByNumber(5)).Message(), v, depth+1)
	case []any:
		return protoToMessage(m.Mutable(fields.ByNumber(6)).Message(), v, depth+1)
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
