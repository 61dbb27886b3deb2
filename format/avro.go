package format

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"

	"github.com/hamba/avro/v2"
)

// The Avro codec: Avro's binary encoding (without the Confluent header,
// which the caller strips and adds) to and from the value tree.
//
// hamba/avro parses the schemas and judges a reader against a writer, and
// its avro.Reader and avro.Writer read and write the encoding's parts
// (varints, floats, bytes and strings, block headers). The values are
// read and written here, by walking the schema, because hamba's generic
// path (Unmarshal, Marshal) does not fit a relay: it reads and writes
// local-timestamp-* through the process's time zone (the same bytes
// decode to different values on hosts in different zones); its Unmarshal
// reports empty input, or input cut at a value's boundary, as success;
// it writes a map's entries in Go's random order and drops a decimal's
// digits beyond the scale without a word; and its errors name no path.
//
// What is written is what Java's Avro writes: an array or a map in one
// block with a positive count, decimals in the fewest bytes of two's
// complement; map entries are sorted by key, so that a value always
// encodes to the same bytes.

// parseAvro parses an Avro schema text. refs are the texts of the schemas
// it references (Confluent schema references: named types defined in
// other subjects), in an order where each comes after those it
// references; their named types become available to text. Errors name
// what is wrong: where the JSON is broken, or hamba's reason (an unknown
// type, a default that does not fit its field, a duplicate name).
//
// Each call parses into a cache of its own, never hamba's global one, so
// that one subject's named types cannot leak into another's schema.
func parseAvro(text string, refs []string) (avro.Schema, error) {
	cache := &avro.SchemaCache{}
	for i, ref := range refs {
		if _, err := avroParse(ref, cache); err != nil {
			return nil, fmt.Errorf("avro schema reference %d of %d: %w", i+1, len(refs), err)
		}
	}
	s, err := avroParse(text, cache)
	if err != nil {
		return nil, fmt.Errorf("avro schema: %w", err)
	}
	return s, nil
}

// avroParse parses one schema text into cache. The JSON is checked first:
// hamba takes text that is not JSON for the name of a type, and would
// report a missing brace as "unknown type" followed by the whole schema.
func avroParse(text string, cache *avro.SchemaCache) (avro.Schema, error) {
	var js any
	if err := json.Unmarshal([]byte(text), &js); err != nil {
		var se *json.SyntaxError
		if errors.As(err, &se) {
			return nil, fmt.Errorf("invalid JSON at byte %d: %v", se.Offset, err)
		}
		return nil, fmt.Errorf("invalid JSON: %w", err)
	}
	s, err := avro.ParseWithCache(text, "", cache)
	if err != nil {
		return nil, errors.New(strings.TrimPrefix(err.Error(), "avro: "))
	}
	return s, nil
}

// resolveAvro resolves the reader schema against the writer schema that
// data was written with (Avro schema resolution). decodeAvro(r, nil, b),
// with r what resolveAvro returns, reads b (written with writer) as
// reader: fields the writer lacks take the reader's defaults, fields the
// reader lacks are skipped, int, long and float widen, string and bytes
// convert, a writer's enum symbol the reader lacks reads as the reader's
// default, and each writer union branch is read by the first reader
// branch that can read it.
//
// hamba's SchemaCompatibility judges the pair (Compatible, the check its
// Resolve starts with) and picks the reader branch of each writer
// branch. The plan decodeAvro follows is resolveAvro's own, by the rules
// of hamba's Resolve, which is not called: its resolved schema keeps
// which writer fields to skip and which types were widened in unexported
// fields, for hamba's decoder only; it overflows the stack (a fatal
// error, which no recover catches) on a recursive record; and it fails
// on a pair Compatible accepts, a writer union of int and long read as a
// double. Resolving costs far more than a decode: decode many records by
// resolving once per writer schema and keeping the result, as
// decodeAvro(writer, reader, b) resolves on every call. The result
// answers avro.Schema's methods, and encodeAvro and avroShape take it,
// as the reader.
//
// An incompatible pair is a *DataError naming both schemas' full names
// and hamba's reason: data written with writer cannot be read as reader,
// whatever it holds.
func resolveAvro(reader, writer avro.Schema) (avro.Schema, error) {
	if r, ok := reader.(*avroResolved); ok {
		reader = r.reader
	}
	if r, ok := writer.(*avroResolved); ok {
		writer = r.writer
	}
	compat := avro.NewSchemaCompatibility()
	if err := compat.Compatible(reader, writer); err != nil {
		return nil, avroIncompatible(reader, writer, err)
	}
	plan := &avroPlan{
		records:  map[avroPair]*avroRecordPlan{},
		branches: map[avroPair]avro.Schema{},
	}
	if err := plan.compile(compat, reader, writer); err != nil {
		return nil, avroIncompatible(reader, writer, err)
	}
	return &avroResolved{Schema: reader, reader: reader, writer: writer, plan: plan}, nil
}

// avroIncompatible is the DataError of a reader that cannot read what
// writer writes.
func avroIncompatible(reader, writer avro.Schema, err error) error {
	return dataErr("", "avro reader schema %s cannot read data written with writer schema %s: %s",
		avroName(reader), avroName(writer), strings.TrimPrefix(err.Error(), "avro: "))
}

// avroResolved is what resolveAvro returns: a reader and a writer schema
// and the plan for reading the writer's data as the reader. It answers
// avro.Schema's methods as the reader.
type avroResolved struct {
	avro.Schema
	reader, writer avro.Schema
	plan           *avroPlan
}

// avroPair is a reader schema and a writer schema, dereferenced.
type avroPair struct{ r, w avro.Schema }

// avroPlan is how a resolved writer's data is read, for the parts of the
// schemas where reader and writer differ (where they are the same schema
// the data is read as written). It is built once and only read after.
type avroPlan struct {
	// records: for each pair of a reader record and a writer record, which
	// reader field each writer field fills.
	records map[avroPair]*avroRecordPlan
	// branches: for each pair of a reader union and a writer schema that
	// is not a union (or one branch of a writer union), the reader branch
	// that reads it.
	branches map[avroPair]avro.Schema
}

// avroRecordPlan is the reading of one writer record as one reader record.
type avroRecordPlan struct {
	// fields holds, for each writer field in order, the index of the
	// reader field it fills, or -1 if the reader does not have it (its
	// data is skipped).
	fields []int
	// defaults are the indexes of the reader fields the writer does not
	// have: they take their defaults.
	defaults []int
}

// compile adds to p the plan for reading w's data as r. The pair is
// known compatible (hamba said so); an error here is a pair hamba
// accepted that the plan cannot follow.
func (p *avroPlan) compile(c *avro.SchemaCompatibility, r, w avro.Schema) error {
	r, w = avroDeref(r), avroDeref(w)
	if r == w {
		return nil
	}
	if wu, ok := w.(*avro.UnionSchema); ok {
		for _, wb := range wu.Types() {
			if err := p.compile(c, r, wb); err != nil {
				return err
			}
		}
		return nil
	}
	if ru, ok := r.(*avro.UnionSchema); ok {
		key := avroPair{ru, w}
		if _, done := p.branches[key]; done {
			return nil
		}
		for _, rb := range ru.Types() {
			if c.Compatible(rb, w) == nil {
				rb = avroDeref(rb)
				p.branches[key] = rb
				return p.compile(c, rb, w)
			}
		}
		return fmt.Errorf("no branch of reader union %s reads writer's %s", avroName(ru), avroName(w))
	}
	switch wt := w.(type) {
	case *avro.RecordSchema:
		rt, ok := r.(*avro.RecordSchema)
		if !ok {
			return fmt.Errorf("reader %s cannot read writer's record %s", avroName(r), wt.FullName())
		}
		key := avroPair{rt, wt}
		if _, done := p.records[key]; done {
			return nil
		}
		rp := &avroRecordPlan{fields: make([]int, len(wt.Fields()))}
		p.records[key] = rp
		used := make([]bool, len(rt.Fields()))
		for i, wf := range wt.Fields() {
			j := slices.IndexFunc(rt.Fields(), func(rf *avro.Field) bool {
				return rf.Name() == wf.Name() || slices.Contains(rf.Aliases(), wf.Name())
			})
			rp.fields[i] = j
			if j < 0 {
				continue
			}
			used[j] = true
			if err := p.compile(c, rt.Fields()[j].Type(), wf.Type()); err != nil {
				return err
			}
		}
		for j, rf := range rt.Fields() {
			if used[j] {
				continue
			}
			if !rf.HasDefault() {
				return fmt.Errorf("reader field %s.%s is not in the writer's record and has no default", rt.FullName(), rf.Name())
			}
			rp.defaults = append(rp.defaults, j)
		}
	case *avro.ArraySchema:
		if ra, ok := r.(*avro.ArraySchema); ok {
			return p.compile(c, ra.Items(), wt.Items())
		}
	case *avro.MapSchema:
		if rm, ok := r.(*avro.MapSchema); ok {
			return p.compile(c, rm.Values(), wt.Values())
		}
	}
	return nil
}

// avroMaxDepth bounds how deeply records nest in a value, so that a
// recursive schema cannot take a crafted message (or a value that holds
// itself) down the stack without end.
const avroMaxDepth = 1000

// avroMaxEmptyItems bounds how many items a block of an array whose
// items can take no bytes (nulls, empty records) may claim when there are
// fewer bytes left: any other block claiming more items than there are
// bytes left is cut short.
const avroMaxEmptyItems = 1 << 20

// avroShape is the Shape of values of s: a record's fields, a map open, a
// union what any of its branches allows (Shape.merge); arrays and other
// types have nil Fields (a path does not go into an array). Every Shape
// is non-nil; a recursive record's shape holds itself.
func avroShape(s avro.Schema) *Shape {
	if r, ok := s.(*avroResolved); ok {
		s = r.reader
	}
	a := avroShaper{
		records: map[*avro.RecordSchema]*Shape{},
		merged:  map[string]*Shape{},
		members: map[*Shape][]*Shape{},
		scalar:  &Shape{},
		open:    &Shape{Open: true},
	}
	sh := a.of(s)
	a.finish()
	return sh
}

// avroShaper builds the shapes of a schema. A union's shape merges its
// branches' as Shape.merge does, but only once the records are all
// shaped, and once for each set of shapes merged: merging the shapes of
// recursive records field by field as Shape.merge does would not end.
type avroShaper struct {
	records map[*avro.RecordSchema]*Shape
	merged  map[string]*Shape   // by the set of shapes merged
	members map[*Shape][]*Shape // a merged shape's set
	todo    []*Shape            // merged shapes whose fields are still to be merged
	scalar  *Shape              // every value that is not a record or map
	open    *Shape              // every map
}

// of is the shape of values of s; a merged shape's fields are filled by
// finish.
func (a *avroShaper) of(s avro.Schema) *Shape {
	switch t := avroDeref(s).(type) {
	case *avro.RecordSchema:
		if sh, ok := a.records[t]; ok {
			return sh
		}
		sh := &Shape{Fields: make(map[string]*Shape, len(t.Fields()))}
		a.records[t] = sh
		for _, f := range t.Fields() {
			sh.Fields[f.Name()] = a.of(f.Type())
		}
		return sh
	case *avro.MapSchema:
		return a.open
	case *avro.UnionSchema:
		var set []*Shape
		for _, b := range t.Types() {
			if b.Type() != avro.Null {
				set = append(set, a.of(b))
			}
		}
		return a.merge(set)
	}
	return a.scalar
}

// merge is the shape that allows what any shape of set allows: the
// shape itself for one, else the merged shape of the set (a merged
// shape in set stands for its own set).
func (a *avroShaper) merge(set []*Shape) *Shape {
	var flat []*Shape
	for _, sh := range set {
		if m, ok := a.members[sh]; ok {
			flat = append(flat, m...)
		} else {
			flat = append(flat, sh)
		}
	}
	key := func(sh *Shape) uintptr { return reflect.ValueOf(sh).Pointer() }
	slices.SortFunc(flat, func(x, y *Shape) int { return cmp.Compare(key(x), key(y)) })
	flat = slices.Compact(flat)
	switch len(flat) {
	case 0:
		return a.scalar
	case 1:
		return flat[0]
	}
	var id strings.Builder
	for _, sh := range flat {
		fmt.Fprintf(&id, "%x,", key(sh))
	}
	if out, ok := a.merged[id.String()]; ok {
		return out
	}
	out := &Shape{}
	a.merged[id.String()] = out
	a.members[out] = flat
	a.todo = append(a.todo, out)
	return out
}

// finish fills the merged shapes: open if any of the set is, with the
// fields of all, a field in several merged in turn.
func (a *avroShaper) finish() {
	for len(a.todo) > 0 {
		out := a.todo[len(a.todo)-1]
		a.todo = a.todo[:len(a.todo)-1]
		byName := map[string][]*Shape{}
		for _, sh := range a.members[out] {
			out.Open = out.Open || sh.Open
			if sh.Fields != nil && out.Fields == nil {
				out.Fields = map[string]*Shape{}
			}
			for k, v := range sh.Fields {
				byName[k] = append(byName[k], v)
			}
		}
		for k, vs := range byName {
			out.Fields[k] = a.merge(vs)
		}
	}
}
