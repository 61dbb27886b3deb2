package pipetest

import (
	"context"
	"fmt"
	"maps"
	"slices"

	"github.com/sharerelay/sharerelay/config"
	"github.com/sharerelay/sharerelay/format"
	"github.com/sharerelay/sharerelay/transform"
)

// env is what a suite runs in: the pipeline, its chain, and for a
// pipeline with formats the registry held in memory its schemas are in,
// the writers of the cases' inputs and the readers of their outputs.
type env struct {
	p     *config.Pipeline
	chain *transform.Chain
	reg   *format.Registry // nil without formats
	// writers write the inputs' values and keys, by source topic.
	writers map[string][2]transform.Encoder
}

// newEnv builds the chain of p for suite s: with p's formats, under a
// registry held in memory where s's schema files (and p's own) stand in
// for p's registry.
func newEnv(ctx context.Context, p *config.Pipeline, s *Suite) (*env, error) {
	if !format.Needed(p) {
		chain, err := p.Chain()
		if err != nil {
			return nil, err
		}
		return &env{p: p, chain: chain}, nil
	}
	reg := format.NewMemoryRegistry()
	standIn := func(topic, which string) string {
		f := s.Schemas[topic].Value
		if which == "key" {
			f = s.Schemas[topic].Key
		}
		if f == "" {
			return ""
		}
		return p.SchemaPath(f)
	}
	if err := format.StandIn(ctx, reg, p, standIn); err != nil {
		return nil, err
	}
	set, err := format.New(p, reg, reg)
	if err != nil {
		return nil, err
	}
	chain, err := p.ChainWith(set)
	if err != nil {
		return nil, err
	}
	e := &env{p: p, chain: chain, reg: reg, writers: map[string][2]transform.Encoder{}}
	for _, topic := range p.Source.Topics {
		var w [2]transform.Encoder
		for i, side := range []struct {
			which, format string
			rs            *config.ReadSchema
		}{{"value", p.Source.ValueFormat, p.Source.ValueSchema}, {"key", p.Source.KeyFormat, p.Source.KeySchema}} {
			file := standIn(topic, side.which)
			if file == "" && side.rs != nil && side.rs.File != "" {
				file = p.SchemaPath(side.rs.File)
			}
			if config.RegistryFormat(side.format) && file == "" {
				// Only a case that gives a value (or key) needs it.
				continue
			}
			if w[i], err = format.Writer(reg, side.format, file, topic+"-"+side.which); err != nil {
				return nil, fmt.Errorf("schemas.%s.%s: %w", topic, side.which, err)
			}
		}
		e.writers[topic] = w
	}
	return e, nil
}

// record builds the source record of in, its value and key written in
// the source's formats.
func (e *env) record(ctx context.Context, in Input) (*transform.Record, error) {
	p := e.p
	r := &transform.Record{
		Topic: p.Output.Topic,
		Source: transform.Source{
			Topic: in.Topic, Partition: in.Partition, Offset: in.Offset,
			DeliveryCount: max(in.DeliveryCount, 1), Timestamp: in.Timestamp,
		},
	}
	if r.Source.Topic == "" && len(p.Source.Topics) > 0 {
		r.Source.Topic = p.Source.Topics[0]
	}
	var err error
	if r.Value, err = e.write(ctx, r.Source.Topic, 0, in.Value); err != nil {
		return nil, fmt.Errorf("value: %w", err)
	}
	if r.Key, err = e.write(ctx, r.Source.Topic, 1, in.Key); err != nil {
		return nil, fmt.Errorf("key: %w", err)
	}
	for _, k := range slices.Sorted(maps.Keys(in.Headers)) {
		r.Headers = append(r.Headers, transform.Header{Key: k, Value: []byte(in.Headers[k])})
	}
	return r, nil
}

// write writes v, an input's value (side 0) or key (side 1), as the
// source topic's records carry it.
func (e *env) write(ctx context.Context, topic string, side int, v any) ([]byte, error) {
	f := e.p.Source.ValueFormat
	if side == 1 {
		f = e.p.Source.KeyFormat
	}
	if v == nil {
		return nil, nil
	}
	if !config.RegistryFormat(f) {
		return valueBytes(v)
	}
	w := e.writers[topic][side]
	if w == nil {
		which := "value"
		if side == 1 {
			which = "key"
		}
		return nil, fmt.Errorf("the source's %s_format is %s: give the schema the cases' %ss are written with (schemas.%s.%s in the test file, or source.%s_schema.file)", which, f, which, topic, which, which)
	}
	return w.Encode(ctx, normalize(v), transform.Origin{})
}

// read returns an output's value (side 0) or key (side 1) as the JSON
// text of what it decodes to in its topic's format, for formats that
// need a registry; other formats' bytes are returned as they are.
func (e *env) read(ctx context.Context, topic string, side int, b []byte) ([]byte, error) {
	if e.reg == nil || b == nil {
		return b, nil
	}
	f, _ := e.p.OutputFormats(topic)
	fm, which := f.ValueFormat, "value"
	if side == 1 {
		fm, which = f.KeyFormat, "key"
	}
	if !config.RegistryFormat(fm) {
		return b, nil
	}
	v, err := format.Reader(e.reg, fm, which).Decode(ctx, b)
	if err != nil {
		return nil, err
	}
	return transform.JSON.Encode(ctx, v, transform.Origin{})
}
