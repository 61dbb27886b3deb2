package format

import (
	"fmt"

	"github.com/sharerelay/sharerelay/config"
	"github.com/sharerelay/sharerelay/transform"
)

// Set is a pipeline's formats: how its source's values and keys are read
// and how each output topic's are written (transform.Formats). It is
// built once, when the relay starts, from the pipeline file; the schema
// files it names are compiled then.
type Set struct {
	srcValue, srcKey transform.Decoder
	outputs          map[string]codecs // by topic; "" is output.topic
}

// codecs are one output topic's encoders.
type codecs struct{ value, key transform.Encoder }

// Registries returns the registries of p: the one its source's schema ids
// are read from, and the one its outputs are written under (the same
// Registry unless source.cluster has a registry of its own). Either is
// nil when p names no registry for that side.
func Registries(p *config.Pipeline) (src, sink *Registry, err error) {
	if p.SchemaRegistry != nil {
		if sink, err = NewRegistry(p.SchemaRegistry); err != nil {
			return nil, nil, fmt.Errorf("schema_registry: %w", err)
		}
	}
	src = sink
	if p.SeparateRegistries() {
		if src, err = NewRegistry(p.Source.Cluster.SchemaRegistry); err != nil {
			return nil, nil, fmt.Errorf("source.cluster.schema_registry: %w", err)
		}
	}
	return src, sink, nil
}

// New returns the formats of p, reading the source's schemas from src and
// writing the outputs' under sink (see Registries). It compiles the
// schema files p names; an error names the file and what is wrong.
func New(p *config.Pipeline, src, sink *Registry) (*Set, error) {
	s := &Set{outputs: map[string]codecs{}}
	var err error
	if s.srcValue, err = newDecoder(p, side{p.Source.ValueFormat, "value", "source.value_format"}, p.Source.ValueSchema, src); err != nil {
		return nil, err
	}
	if s.srcKey, err = newDecoder(p, side{p.Source.KeyFormat, "key", "source.key_format"}, p.Source.KeySchema, src); err != nil {
		return nil, err
	}
	topics := append([]string{""}, p.OutputTopics()...)
	for _, topic := range topics {
		if topic == p.DeadLetter.Topic {
			continue // dead letters keep the source's bytes
		}
		name := topic
		if name == "" {
			name = p.Output.Topic
		}
		f, path := p.OutputFormats(name)
		var c codecs
		if c.value, err = newEncoder(p, side{f.ValueFormat, "value", path + ".value_format"}, name, f.ValueSchema, sink); err != nil {
			return nil, err
		}
		if c.key, err = newEncoder(p, side{f.KeyFormat, "key", path + ".key_format"}, name, f.KeySchema, sink); err != nil {
			return nil, err
		}
		s.outputs[topic] = c
	}
	return s, nil
}

// Source returns the decoders of the source's values and keys (one
// format for every source topic).
func (s *Set) Source(string) (value, key transform.Decoder) { return s.srcValue, s.srcKey }

// Output returns the encoders of topic's values and keys; a topic the
// pipeline does not name takes output.topic's.
func (s *Set) Output(topic string) (value, key transform.Encoder) {
	c, ok := s.outputs[topic]
	if !ok {
		c = s.outputs[""]
	}
	return c.value, c.key
}

// plain returns the codec of a format without a registry.
func plain(f string) (interface {
	transform.Decoder
	transform.Encoder
}, bool) {
	switch f {
	case config.FormatJSON:
		return transform.JSON, true
	case config.FormatString:
		return transform.Text, true
	case config.FormatBytes:
		return transform.Bytes, true
	}
	return nil, false
}

// newDecoder returns the decoder of one side of the source.
func newDecoder(p *config.Pipeline, sd side, rs *config.ReadSchema, reg *Registry) (transform.Decoder, error) {
	if c, ok := plain(sd.format); ok {
		return c, nil
	}
	if reg == nil {
		return nil, fmt.Errorf("%s: %s needs a schema registry", sd.step, sd.format)
	}
	d := &decoder{side: sd, reg: reg}
	if rs == nil {
		return d, nil
	}
	d.validate = rs.Validate
	if rs.File != "" {
		f, err := LoadSchemaFile(p.SchemaPath(rs.File), sd.format)
		if err != nil {
			return nil, fmt.Errorf("source.%s_schema.file: %w", sd.which, err)
		}
		d.readerAvro, d.readerProto, d.readerJSON = f.compiled.avro, f.compiled.proto, f.compiled.json
	}
	return d, nil
}

// newEncoder returns the encoder of one side of an output topic.
func newEncoder(p *config.Pipeline, sd side, topic string, s *config.Schema, reg *Registry) (transform.Encoder, error) {
	if c, ok := plain(sd.format); ok {
		return c, nil
	}
	if reg == nil {
		return nil, fmt.Errorf("%s: %s needs a schema registry", sd.step, sd.format)
	}
	e := &encoder{side: sd, reg: reg, topic: topic}
	if s.IsZero() {
		return e, nil
	}
	e.sch = s
	if s.File != "" {
		f, err := LoadSchemaFile(p.SchemaPath(s.File), sd.format)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", sd.step[:len(sd.step)-len("_format")]+"_schema.file", err)
		}
		if f.compiled.proto != nil {
			if _, err := f.message(s.Message); err != nil {
				return nil, fmt.Errorf("%s_schema.message: %w", sd.step[:len(sd.step)-len("_format")], err)
			}
		}
		e.file = f
	}
	return e, nil
}

// SourceShape returns the shape of the source's values by the reader
// schema file p names (source.value_schema.file); nil when it names
// none, or the format has no schema.
func SourceShape(p *config.Pipeline) (*Shape, error) {
	rs := p.Source.ValueSchema
	if rs == nil || rs.File == "" || !config.RegistryFormat(p.Source.ValueFormat) {
		return nil, nil
	}
	f, err := LoadSchemaFile(p.SchemaPath(rs.File), p.Source.ValueFormat)
	if err != nil {
		return nil, err
	}
	return f.shape(""), nil
}

// shape is the Shape of the file's values (of message, for Protobuf).
func (f *schemaFile) shape(message string) *Shape {
	c := f.compiled
	switch {
	case c.avro != nil:
		return avroShape(c.avro)
	case c.proto != nil:
		md, err := f.message(message)
		if err != nil {
			return nil
		}
		return protoShape(md)
	}
	return jsonSchemaShape(c.json)
}

// Needed reports whether p reads or writes anything but the defaults —
// values as JSON and keys as text, passed through unchanged —, so that
// its chain needs a Set. A pipeline that does not keeps the relay's
// cheapest path: a record no step changes is copied without a transform
// record.
func Needed(p *config.Pipeline) bool {
	if p.Source.ValueFormat != config.FormatJSON || p.Source.KeyFormat != config.FormatString ||
		p.Output.ValueFormat != config.FormatJSON || p.Output.KeyFormat != config.FormatString ||
		p.Source.ValueSchema != nil || p.Source.KeySchema != nil || !p.Output.ValueSchema.IsZero() || !p.Output.KeySchema.IsZero() {
		return true
	}
	for topic := range p.Output.Routes {
		if f, _ := p.OutputFormats(topic); f.ValueFormat != config.FormatJSON || f.KeyFormat != config.FormatString {
			return true
		}
	}
	return false
}

// ForPipeline returns the formats p's chain is built with: nil when p
// needs none (Needed), else a Set with p's registries.
func ForPipeline(p *config.Pipeline) (transform.Formats, []*Registry, error) {
	if !Needed(p) {
		return nil, nil, nil
	}
	src, sink, err := Registries(p)
	if err != nil {
		return nil, nil, err
	}
	s, err := New(p, src, sink)
	if err != nil {
		return nil, nil, err
	}
	var regs []*Registry
	for _, r := range []*Registry{sink, src} {
		if r != nil && (len(regs) == 0 || regs[0] != r) {
			regs = append(regs, r)
		}
	}
	return s, regs, nil
}
