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
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
	"sync"
	"unicode"

	"github.com/bufbuild/protocompile"
	"github.com/bufbuild/protocompile/reporter"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protodesc"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"
	"google.golang.org/protobuf/types/descriptorpb"
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
