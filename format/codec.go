package format

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/hamba/avro/v2"
	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/twmb/franz-go/pkg/sr"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/sharerelay/sharerelay/config"
	"github.com/sharerelay/sharerelay/transform"
)

// wire reads and writes the Confluent wire format's header: a zero byte,
// the schema id (4 bytes, big-endian) and, for Protobuf, the message
// indexes.
var wire sr.ConfluentHeader

// maxIndexes bounds the message indexes a record may carry: nesting
// deeper than this is no schema anyone writes.
const maxIndexes = 64

// compiled is a registry schema made ready to read and write with, by
// id; exactly one of its schemas is set, by its type.
type compiled struct {
	id    int
	typ   sr.SchemaType
	avro  avro.Schema
	proto protoreflect.FileDescriptor
	json  *jsonschema.Schema
}

// compiled returns schema id compiled, with what it references fetched.
// Kept for good: an id is one schema for ever.
func (r *Registry) compiled(ctx context.Context, id int) (*compiled, error) {
	return cached(ctx, r, r.comp, id, 0, false, func(ctx context.Context) (*compiled, error) {
		s, err := r.SchemaByID(ctx, id)
		if err != nil {
			return nil, err
		}
		c, err := r.compile(ctx, s)
		if err != nil {
			return nil, fmt.Errorf("schema id %d: %w", id, err)
		}
		c.id = id
		return c, nil
	})
}

// compile compiles s, fetching the schemas it references.
func (r *Registry) compile(ctx context.Context, s sr.Schema) (*compiled, error) {
	refs, err := r.references(ctx, s.References, map[string]bool{})
	if err != nil {
		return nil, err
	}
	return compileSchema(s.Type, s.Schema, refs)
}

// reference is a referenced schema's name (as the referring schema
// names it: an Avro type's full name, a .proto import path, a JSON
// Schema $ref) and text.
type reference struct{ name, text string }

// references fetches refs and, depth first, what they reference, each
// after those it needs; seen guards against a cycle.
func (r *Registry) references(ctx context.Context, refs []sr.SchemaReference, seen map[string]bool) ([]reference, error) {
	var out []reference
	for _, ref := range refs {
		key := fmt.Sprintf("%s\x00%d", ref.Subject, ref.Version)
		if seen[key] {
			continue
		}
		seen[key] = true
		ss, err := r.SchemaByVersion(ctx, ref.Subject, ref.Version)
		if err != nil {
			return nil, fmt.Errorf("reference %s: %w", ref.Name, err)
		}
		deeper, err := r.references(ctx, ss.References, seen)
		if err != nil {
			return nil, err
		}
		out = append(out, deeper...)
		out = append(out, reference{name: ref.Name, text: ss.Schema.Schema})
	}
	return out, nil
}

// compileSchema compiles the text of a schema of type typ with its
// references.
func compileSchema(typ sr.SchemaType, text string, refs []reference) (*compiled, error) {
	c := &compiled{typ: typ}
	var err error
	switch typ {
	case sr.TypeAvro:
		texts := make([]string, len(refs))
		for i, r := range refs {
			texts[i] = r.text
		}
		c.avro, err = parseAvro(text, texts)
	case sr.TypeProtobuf:
		files := map[string]string{}
		for _, r := range refs {
			files[r.name] = r.text
		}
		name := "schema.proto"
		for files[name] != "" {
			name = "_" + name
		}
		files[name] = text
		c.proto, err = compileProto(name, files)
	case sr.TypeJSON:
		m := map[string]string{}
		for _, r := range refs {
			m[r.name] = r.text
		}
		c.json, err = compileJSONSchema(text, m)
	default:
		err = fmt.Errorf("schema type %s is not one the relay reads", typ)
	}
	if err != nil {
		return nil, err
	}
	return c, nil
}

// schemaType is the registry's type of format f.
func schemaType(f string) sr.SchemaType {
	switch f {
	case config.FormatProtobuf:
		return sr.TypeProtobuf
	case config.FormatJSONSchema:
		return sr.TypeJSON
	}
	return sr.TypeAvro
}

// side names a value or key and where its format is set, for the errors
// of its codec.
type side struct {
	format string // config.FormatAvro, ...
	which  string // "value" or "key"
	step   string // "source.value_format", "output.routes.audit.key_format"
}

// recordErr is a failure of the record's own: dead-lettered, with the
// format as its class.
func (s side) recordErr(err error) error {
	e := transform.Classify(transform.Permanent(s.format, fmt.Errorf("%s: %w", s.which, err)))
	e.Step, e.Converter = s.step, s.which
	return e
}

// fail sorts err: the registry out of reach (or a schema the pipeline
// names not there yet) holds the record; anything else is the record's.
func (s side) fail(err error) error {
	if errors.Is(err, ErrUnavailable) || errors.Is(err, ErrNotFound) || errors.Is(err, ErrRefused) || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		reason := "schema registry unavailable"
		if !errors.Is(err, ErrUnavailable) {
			reason = "schema not registered" // the error says which, and why
		}
		e := transform.Classify(transform.Hold("schema-registry", reason, fmt.Errorf("%s: %w", s.which, err)))
		e.Step, e.Converter = s.step, s.which
		return e
	}
	return s.recordErr(err)
}

// decoder reads a registry format: the writer schema from each record's
// id, and optionally a reader schema of the pipeline's.
type decoder struct {
	side
	reg *Registry
	// readers, when set: the Avro reader schema values resolve to, the
	// Protobuf file whose message of the writer's name decodes them, the
	// JSON Schema values are validated against (validate).
	readerAvro  avro.Schema
	readerProto protoreflect.FileDescriptor
	readerJSON  *jsonschema.Schema
	validate    bool
	// resolved keeps, by writer id, the writer schema resolved to
	// readerAvro.
	resolved sync.Map
}

// Validates reports whether d checks the values it reads (json_schema
// with validate): the chain then reads every record with it.
func (d *decoder) Validates() bool { return d.validate }

// Decode reads b: no bytes (a tombstone, a null key) are null.
func (d *decoder) Decode(ctx context.Context, b []byte) (any, error) {
	if len(b) == 0 {
		return nil, nil
	}
	id, payload, err := wire.DecodeID(b)
	if err != nil {
		return nil, d.recordErr(fmt.Errorf("not in the Confluent wire format (a zero byte, then the schema id): %w", err))
	}
	c, err := d.reg.compiled(ctx, id)
	if err != nil {
		return nil, d.fail(err)
	}
	if c.typ != schemaType(d.format) {
		return nil, d.recordErr(fmt.Errorf("schema id %d is a %s schema, not %s", id, typeName(c.typ), d.format))
	}
	v, err := d.decode(c, payload)
	if err != nil {
		return nil, d.recordErr(fmt.Errorf("schema id %d: %w", id, err))
	}
	return v, nil
}

func (d *decoder) decode(c *compiled, payload []byte) (any, error) {
	switch c.typ {
	case sr.TypeAvro:
		s := c.avro
		if d.readerAvro != nil {
			r, ok := d.resolved.Load(c.id)
			if !ok {
				// A pair that does not resolve never will: kept too.
				rs, err := resolveAvro(d.readerAvro, c.avro)
				r, _ = d.resolved.LoadOrStore(c.id, resolution{rs, err})
			}
			res := r.(resolution)
			if res.err != nil {
				return nil, res.err
			}
			s = res.schema
		}
		return decodeAvro(s, nil, payload)
	case sr.TypeProtobuf:
		idx, rest, err := wire.DecodeIndex(payload, maxIndexes)
		if err != nil {
			return nil, &DataError{Msg: "bad message indexes: " + err.Error()}
		}
		md, err := protoMessageAt(c.proto, idx)
		if err != nil {
			return nil, err
		}
		if d.readerProto != nil {
			if md, err = protoMessageNamed(d.readerProto, string(md.FullName())); err != nil {
				return nil, err
			}
		}
		return decodeProto(md, rest)
	default:
		if d.validate {
			s := c.json
			if d.readerJSON != nil {
				s = d.readerJSON
			}
			if err := validateJSON(s, payload); err != nil {
				return nil, err
			}
		}
		v, err := transform.JSON.Decode(context.Background(), payload)
		if err != nil {
			return nil, &DataError{Msg: "not JSON: " + errors.Unwrap(err).Error()}
		}
		return v, nil
	}
}

// resolution is a writer schema resolved to the reader's, or why it does
// not resolve.
type resolution struct {
	schema avro.Schema
	err    error
}

// typeName is how messages name a schema type.
func typeName(t sr.SchemaType) string {
	switch t {
	case sr.TypeProtobuf:
		return "protobuf"
	case sr.TypeJSON:
		return "json_schema"
	}
	return "avro"
}

// target is the schema an output is written with: its id and header, and
// the compiled schema.
type target struct {
	header []byte // the wire header: zero, id, and for Protobuf the indexes
	avro   avro.Schema
	md     protoreflect.MessageDescriptor
	json   *jsonschema.Schema
}

// encoder writes a registry format with the output's schema, or, with
// none configured, with each record's own writer schema.
type encoder struct {
	side
	reg   *Registry
	topic string
	sch   *config.Schema // nil: the record's own schema
	file  *schemaFile    // sch's file, compiled when the relay started
	// targets keeps the targets by id (and Protobuf message).
	targets sync.Map
}

// Encode writes v with the output's schema. A null value is no bytes (a
// tombstone).
func (e *encoder) Encode(ctx context.Context, v any, from transform.Origin) ([]byte, error) {
	if v == nil {
		return nil, nil
	}
	t, err := e.target(ctx, from)
	if err != nil {
		return nil, err
	}
	var payload []byte
	switch {
	case t.avro != nil:
		payload, err = encodeAvro(t.avro, v)
	case t.md != nil:
		payload, err = encodeProto(t.md, v)
	default:
		if payload, err = transform.JSON.Encode(ctx, v, transform.Origin{}); err == nil {
			err = validateJSON(t.json, payload)
		}
	}
	if err != nil {
		return nil, e.recordErr(err)
	}
	out := make([]byte, 0, len(t.header)+len(payload))
	return append(append(out, t.header...), payload...), nil
}

// Keep keeps bytes read in the same format from the same registry when
// the output writes with the record's own schema, or when they carry the
// output schema's id (and message).
func (e *encoder) Keep(ctx context.Context, from transform.Origin) (bool, error) {
	d, ok := from.Decoder.(*decoder)
	if !ok || d.format != e.format || d.reg != e.reg {
		return false, nil
	}
	if len(from.Bytes) == 0 || e.sch == nil {
		return true, nil
	}
	t, err := e.target(ctx, from)
	if err != nil {
		return false, err
	}
	return bytes.HasPrefix(from.Bytes, t.header), nil
}

// target returns the schema to write with.
func (e *encoder) target(ctx context.Context, from transform.Origin) (*target, error) {
	if e.sch == nil {
		return e.sourceTarget(ctx, from)
	}
	id, err := e.resolve(ctx)
	if err != nil {
		return nil, e.fail(err)
	}
	if t, ok := e.targets.Load(id); ok {
		return t.(*target), nil
	}
	var c *compiled
	if e.file != nil {
		c = e.file.compiled
	} else if c, err = e.reg.compiled(ctx, id); err != nil {
		return nil, e.fail(err)
	}
	if c.typ != schemaType(e.format) {
		return nil, e.fail(fmt.Errorf("%w: schema id %d is a %s schema, not %s", ErrRefused, id, typeName(c.typ), e.format))
	}
	t := &target{avro: c.avro, json: c.json}
	var idx []int
	if c.proto != nil {
		md, err := e.message(c)
		if err != nil {
			return nil, e.fail(fmt.Errorf("%w: %w", ErrRefused, err))
		}
		t.md, idx = md, protoIndexes(md)
	}
	if t.header, err = wire.AppendEncode(nil, id, idx); err != nil {
		return nil, e.fail(err)
	}
	v, _ := e.targets.LoadOrStore(id, t)
	return v.(*target), nil
}

// message is the Protobuf message of c the output writes: sch.Message,
// or the file's first.
func (e *encoder) message(c *compiled) (protoreflect.MessageDescriptor, error) {
	if e.sch.Message != "" {
		return protoMessageNamed(c.proto, e.sch.Message)
	}
	return protoMessageAt(c.proto, nil)
}

// sourceTarget is the target of a record written with its own writer
// schema: the id (and message indexes) of its source bytes.
func (e *encoder) sourceTarget(ctx context.Context, from transform.Origin) (*target, error) {
	id, rest, err := wire.DecodeID(from.Bytes)
	if err != nil {
		return nil, e.recordErr(fmt.Errorf("written with the source record's schema, but the source %s is not in the Confluent wire format: %w", e.which, err))
	}
	var idx []int
	if e.format == config.FormatProtobuf {
		if idx, _, err = wire.DecodeIndex(rest, maxIndexes); err != nil {
			return nil, e.recordErr(fmt.Errorf("bad message indexes: %w", err))
		}
	}
	key := fmt.Sprint(id, idx)
	if t, ok := e.targets.Load(key); ok {
		return t.(*target), nil
	}
	c, err := e.reg.compiled(ctx, id)
	if err != nil {
		return nil, e.fail(err)
	}
	t := &target{avro: c.avro, json: c.json}
	if c.proto != nil {
		if t.md, err = protoMessageAt(c.proto, idx); err != nil {
			return nil, e.recordErr(err)
		}
	}
	if t.header, err = wire.AppendEncode(nil, id, idx); err != nil {
		return nil, e.recordErr(err)
	}
	v, _ := e.targets.LoadOrStore(key, t)
	return v.(*target), nil
}

// resolve returns the id of the output's schema: by id, by the subject's
// version, or the file's, looked up or registered under the subject.
func (e *encoder) resolve(ctx context.Context) (int, error) {
	s := e.sch
	switch {
	case s.ID != 0:
		return s.ID, nil
	case e.file != nil:
		subject := e.subject()
		refs, err := e.file.register(ctx, e.reg, s.AutoRegister)
		if err != nil {
			return 0, err
		}
		rs := sr.Schema{Schema: e.file.text, Type: schemaType(e.format), References: refs}
		var ss sr.SubjectSchema
		if s.AutoRegister {
			ss, err = e.reg.Register(ctx, subject, rs)
		} else {
			ss, err = e.reg.Lookup(ctx, subject, rs)
			if errors.Is(err, ErrNotFound) {
				err = fmt.Errorf("%w: %s is not registered under subject %s (register it, or set auto_register)", ErrNotFound, s.File, subject)
			}
		}
		return ss.ID, err
	}
	version := latestVersion
	if s.Version != "" && s.Version != config.SchemaLatest {
		fmt.Sscan(s.Version, &version)
	}
	ss, err := e.reg.SchemaByVersion(ctx, e.subject(), version)
	return ss.ID, err
}

// subject is the output schema's subject: sch.Subject, or by its naming.
func (e *encoder) subject() string {
	return subjectName(e.sch, e.topic, e.which, e.file)
}

// subjectName names the subject of schema s of topic's values or keys.
func subjectName(s *config.Schema, topic, which string, f *schemaFile) string {
	if s.Subject != "" {
		return s.Subject
	}
	record := s.Record
	if record == "" && f != nil {
		record = f.record
		if s.Message != "" {
			record = s.Message
		}
	}
	switch s.SubjectNaming {
	case config.NamingRecord:
		return record
	case config.NamingTopicRecord:
		return topic + "-" + record
	}
	return topic + "-" + which
}
