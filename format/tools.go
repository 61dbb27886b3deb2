package format

import (
	"context"
	"fmt"

	"github.com/twmb/franz-go/pkg/sr"

	"github.com/sharerelay/sharerelay/config"
	"github.com/sharerelay/sharerelay/transform"
)

// Writer returns an encoder that writes values in format f as a
// producer's serializer does: registered under subject in reg, with the
// schema file at path (resolved already). relay test writes its cases'
// source records with it. For json, string and bytes, path and subject
// are unused.
func Writer(reg *Registry, f, path, subject string) (transform.Encoder, error) {
	if c, ok := plain(f); ok {
		return c, nil
	}
	if path == "" {
		return nil, fmt.Errorf("%s values need a schema file to be written with", f)
	}
	file, err := LoadSchemaFile(path, f)
	if err != nil {
		return nil, err
	}
	return &encoder{side: side{format: f, which: "value", step: path}, reg: reg,
		sch: &config.Schema{File: path, Subject: subject, AutoRegister: true}, file: file}, nil
}

// Reader returns a decoder of format f that reads each record's schema
// from reg: relay test reads its outputs back with it, relay dlq inspect
// its dead letters.
func Reader(reg *Registry, f, which string) transform.Decoder {
	if c, ok := plain(f); ok {
		return c
	}
	return &decoder{side: side{format: f, which: which, step: which}, reg: reg}
}

// Seed registers the schema file at path (format f) under subject with
// the given id, in a registry held in memory (NewMemoryRegistry): relay
// test stands in a pipeline's registry this way for an output whose
// schema the pipeline names by id or by subject.
func (r *Registry) Seed(ctx context.Context, subject string, id int, path, f string) error {
	m, ok := r.store.(*memStore)
	if !ok {
		return fmt.Errorf("seeding schemas is for a registry in memory")
	}
	file, err := LoadSchemaFile(path, f)
	if err != nil {
		return err
	}
	refs, err := file.register(ctx, r, true)
	if err != nil {
		return err
	}
	s := sr.Schema{Schema: file.text, Type: schemaType(f), References: refs}
	if id == 0 {
		_, err = r.Register(ctx, subject, s)
		return err
	}
	return m.registerWithID(subject, id, s)
}

// registerWithID registers s under subject with id.
func (m *memStore) registerWithID(subject string, id int, s sr.Schema) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if old, ok := m.byID[id]; ok && schemaKey(old) != schemaKey(s) {
		return fmt.Errorf("schema id %d is taken by another schema", id)
	}
	m.byID[id] = s
	m.ids[schemaKey(s)] = id
	m.subjects[subject] = append(m.subjects[subject], sr.SubjectSchema{Subject: subject, Version: len(m.subjects[subject]) + 1, ID: id, Schema: s})
	return nil
}

// StandIn registers in reg, a registry held in memory, the schemas p's
// outputs are written with, as p's registry would hold them: each schema
// file p names, under its subject; and for an output p names by subject,
// version or id, the file standIn gives for its topic and side ("value"
// or "key"; "" when none is given, an error then). relay test runs
// offline this way.
func StandIn(ctx context.Context, reg *Registry, p *config.Pipeline, standIn func(topic, which string) string) error {
	topics := append([]string{p.Output.Topic}, p.OutputTopics()...)
	for _, topic := range topics {
		if topic == p.DeadLetter.Topic {
			continue
		}
		f, path := p.OutputFormats(topic)
		for _, o := range []struct {
			which, format string
			s             *config.Schema
		}{{"value", f.ValueFormat, f.ValueSchema}, {"key", f.KeyFormat, f.KeySchema}} {
			if !config.RegistryFormat(o.format) || o.s.IsZero() {
				continue
			}
			file := ""
			if o.s.File != "" {
				file = p.SchemaPath(o.s.File)
			} else if file = standIn(topic, o.which); file == "" {
				return fmt.Errorf("%s.%s_schema names the schema by subject or id: give its file for topic %s (schemas.%s.%s)", path, o.which, topic, topic, o.which)
			}
			var sf *schemaFile
			if o.s.File != "" {
				var err error
				if sf, err = LoadSchemaFile(file, o.format); err != nil {
					return err
				}
			}
			subject := subjectName(o.s, topic, o.which, sf)
			if subject == "" && o.s.ID == 0 {
				return fmt.Errorf("%s.%s_schema: no subject to stand in for", path, o.which)
			}
			if err := reg.Seed(ctx, subject, o.s.ID, file, o.format); err != nil {
				return fmt.Errorf("%s.%s_schema: %w", path, o.which, err)
			}
		}
	}
	return nil
}
