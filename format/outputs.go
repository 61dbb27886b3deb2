package format

import (
	"context"
	"fmt"

	"github.com/twmb/franz-go/pkg/sr"

	"github.com/sharerelay/sharerelay/config"
)

// OutputSchema is the value or the key of a topic a pipeline writes in a
// registry format, and the schema it is written with: what relay check
// asks the registry about, as the relay's encoder would ask it, without
// registering anything.
type OutputSchema struct {
	// Topic is the topic written; Which is "value" or "key"; Format is
	// config.FormatAvro, FormatProtobuf or FormatJSONSchema.
	Topic, Which, Format string
	// Path is where the schema is set in the pipeline file:
	// "output.value_schema", "output.routes.audit.key_schema".
	Path string
	// Schema is the schema configured; IsZero when each record is
	// written with its own writer schema.
	Schema *config.Schema
	// Subject is the subject the relay looks the schema up (or registers
	// it) under, named as the encoder names it; "" for a schema given by
	// id, or none.
	Subject string

	file *schemaFile
}

// OutputSchemas returns the values and keys of the topics p writes (but
// the dead-letter topic, whose records keep the source's bytes) that are
// written in a registry format, by topic, the value before the key. It
// compiles the schema files they name, as New does, and fails as New
// does when one does not compile.
func OutputSchemas(p *config.Pipeline) ([]OutputSchema, error) {
	var out []OutputSchema
	for _, topic := range p.OutputTopics() {
		if topic == p.DeadLetter.Topic {
			continue
		}
		f, path := p.OutputFormats(topic)
		for _, side := range []struct {
			which, format string
			schema        *config.Schema
		}{{"value", f.ValueFormat, f.ValueSchema}, {"key", f.KeyFormat, f.KeySchema}} {
			if !config.RegistryFormat(side.format) {
				continue
			}
			o := OutputSchema{Topic: topic, Which: side.which, Format: side.format, Path: path + "." + side.which + "_schema", Schema: side.schema}
			s := side.schema
			if !s.IsZero() && s.File != "" {
				sf, err := LoadSchemaFile(p.SchemaPath(s.File), side.format)
				if err != nil {
					return nil, err
				}
				o.file = sf
			}
			if !s.IsZero() && s.ID == 0 {
				o.Subject = subjectName(s, topic, side.which, o.file)
			}
			out = append(out, o)
		}
	}
	return out, nil
}

// FileSchema returns the registry schema of the output's schema file —
// its text, its type and, for Protobuf, the references to the files it
// imports, each looked up (never registered) under its own subject in
// reg —, as the relay looks it up under Subject. The output must name a
// file (Schema.File).
func (o OutputSchema) FileSchema(ctx context.Context, reg *Registry) (sr.Schema, error) {
	if o.file == nil {
		return sr.Schema{}, fmt.Errorf("%s names no schema file", o.Path)
	}
	refs, err := o.file.register(ctx, reg, false)
	if err != nil {
		return sr.Schema{}, err
	}
	return sr.Schema{Schema: o.file.text, Type: schemaType(o.Format), References: refs}, nil
}
