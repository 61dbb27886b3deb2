package format

import (
	"cmp"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"math/big"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/hamba/avro/v2"

	"github.com/sharerelay/sharerelay/transform"
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

// decodeAvro decodes b (the Avro binary encoding, WITHOUT any Confluent
// header) written with writer into the value tree. When reader is not
// nil, Avro schema resolution applies (see resolveAvro, which this calls
// each time); writer may also be what resolveAvro returned, with reader
// nil, which is how a caller decoding many records avoids resolving for
// each.
//
// The tree holds nil, bool, int64 (int and long), float64 (double, and
// float widened exactly: a float shows as its double value, 0.1 as
// 0.10000000149011612), string (string, enum symbols, uuid), []byte
// (bytes and fixed, never sharing memory with b), json.Number (decimal,
// with exactly scale decimal places: "12.30"), time.Time in UTC (date at
// midnight, timestamp-*, and local-timestamp-* read as a UTC wall clock),
// transform.Duration (time-millis and time-micros, from midnight),
// map[string]any (a record, with every field of the reader's record; a
// map) and []any (an array). A union is the value of the branch the data
// took; any other logical type is its underlying type's value.
//
// A failure is a *DataError with the path of the value that failed: bytes
// that end too soon, bytes left over after the value, a union branch or
// enum symbol that does not exist, an incompatible reader.
func decodeAvro(writer, reader avro.Schema, b []byte) (any, error) {
	if reader != nil {
		if _, ok := writer.(*avroResolved); ok {
			return nil, errors.New("decodeAvro: writer is already resolved; pass a nil reader")
		}
		r, err := resolveAvro(reader, writer)
		if err != nil {
			return nil, err
		}
		writer = r
	}
	var plan *avroPlan
	r, w := writer, writer
	if rs, ok := writer.(*avroResolved); ok {
		plan, r, w = rs.plan, rs.reader, rs.writer
	}
	d := avroDecoders.Get().(*avroDecoder)
	d.r.Reset(b)
	d.b, d.plan = b, plan
	v, err := d.value(r, w)
	d.release()
	if err != nil {
		// Read again, counting bytes, for the error to say where.
		src := &avroSource{b: b}
		d := avroDecoder{r: avro.NewReader(src, 4096), b: b, src: src, plan: plan}
		v, err = d.value(r, w)
	}
	return v, err
}

// avroDecoder reads one value from b with hamba's avro.Reader, which
// reads the parts of Avro's encoding (varints, floats, bytes, block
// headers); the decoder walks the schemas and builds the value tree.
//
// The Reader does not tell how far into b it is, which an error's
// message says and which the guards against lengths and counts the data
// cannot hold need. So a value is read twice when it fails: first from b
// itself, as fast as the Reader goes, with the guards held to the length
// of all of b (a length or count is refused only if b cannot hold it; one
// that the bytes left cannot hold runs into the end of the data); then,
// for the error, from an avroSource that hands the Reader no byte before
// it reads it, so that the bytes handed over are the bytes read
// (src.off) and the guards and messages are exact. The first reading
// never accepts what the second refuses: its guards refuse at least what
// the second's do, and everything else is the same reading of the same
// bytes.
type avroDecoder struct {
	r       *avro.Reader
	b       []byte
	src     *avroSource // nil in the first reading
	plan    *avroPlan   // nil when reading as written
	depth   int         // records open
	scratch []byte      // bytes read only to be converted: strings, decimals
}

// avroDecoders and avroWriters keep decoders (with their Reader) and
// hamba's Writers for reuse, as hamba's own Unmarshal and Marshal keep
// their Readers and Writers. A Writer's bytes are copied out of it; one
// whose buffer (or a decoder whose scratch) grew past avroMaxKept is not
// kept.
var (
	avroDecoders = sync.Pool{New: func() any { return &avroDecoder{r: avro.NewReader(nil, 0)} }}
	avroWriters  = sync.Pool{New: func() any { return avro.NewWriter(nil, 512) }}
)

const avroMaxKept = 64 << 10

// release returns a decoder of the first reading to avroDecoders.
func (d *avroDecoder) release() {
	d.r.Reset(nil)
	d.r.Error = nil
	d.b, d.plan, d.depth = nil, nil, 0
	if cap(d.scratch) <= avroMaxKept {
		avroDecoders.Put(d)
	}
}

// avroSource is an io.Reader of b that gives the avro.Reader reading it
// no byte before the Reader reads it: one byte per call, or the next
// fixed bytes the decoder is about to read in one piece (a float, a
// string's bytes after its length). So the Reader holds no byte it has
// not read (but after a Peek, and after a varint's 10th byte that is not
// its last, when it looks at the 11th before it fails): off is where the
// Reader is.
type avroSource struct {
	b     []byte
	off   int
	fixed int // bytes the decoder is about to read in one piece
}

// Read gives the Reader one byte, or up to the fixed bytes to come.
func (s *avroSource) Read(p []byte) (int, error) {
	if s.off == len(s.b) {
		return 0, io.EOF
	}
	n := copy(p[:min(len(p), max(s.fixed, 1))], s.b[s.off:])
	s.off += n
	s.fixed = max(s.fixed-n, 0)
	return n, nil
}

// fixed tells the second reading's avroSource that the Reader is about
// to read n bytes in one piece; 0 when it has.
func (d *avroDecoder) fixed(n int) {
	if d.src != nil {
		d.src.fixed = n
	}
}

// pos is how many bytes of b have been read; 0 in the first reading,
// whose errors are not shown.
func (d *avroDecoder) pos() int {
	if d.src == nil {
		return 0
	}
	return d.src.off
}

// left is how many bytes of b are left to read; in the first reading,
// all of b.
func (d *avroDecoder) left() int64 {
	return int64(len(d.b) - d.pos())
}

// value reads the whole of b as a value written with w, read as r.
func (d *avroDecoder) value(r, w avro.Schema) (any, error) {
	v, err := d.read(r, w)
	if err != nil {
		return nil, err
	}
	if d.r.Peek(); d.r.Error == nil { // the Peek is the first byte after the value
		return nil, dataErr("", "trailing data: the value ends at byte %d of %d", d.pos()-1, len(d.b))
	}
	return v, nil
}

// read reads a value written with w as r: r is w itself when no
// resolution applies, and where the two are the same schema.
func (d *avroDecoder) read(r, w avro.Schema) (any, error) {
	r, w = avroDeref(r), avroDeref(w)
	if wu, ok := w.(*avro.UnionSchema); ok {
		wb, err := d.branch(wu)
		if err != nil {
			return nil, err
		}
		if r == w {
			r = wb
		}
		return d.read(r, wb)
	}
	if ru, ok := r.(*avro.UnionSchema); ok {
		rb, ok := d.plan.branch(ru, w)
		if !ok {
			return nil, avroMismatch(r, w)
		}
		return d.read(rb, w)
	}
	switch wt := w.(type) {
	case *avro.NullSchema:
		return nil, nil
	case *avro.PrimitiveSchema:
		rt, ok := r.(*avro.PrimitiveSchema)
		if !ok {
			return nil, avroMismatch(r, w)
		}
		return d.primitive(rt, wt)
	case *avro.FixedSchema:
		rt, ok := r.(*avro.FixedSchema)
		if !ok {
			return nil, avroMismatch(r, w)
		}
		return d.content(rt.Logical(), int64(wt.Size()), "a fixed")
	case *avro.EnumSchema:
		return d.enum(r, wt)
	case *avro.ArraySchema:
		rt, ok := r.(*avro.ArraySchema)
		if !ok {
			return nil, avroMismatch(r, w)
		}
		return d.array(rt.Items(), wt.Items())
	case *avro.MapSchema:
		rt, ok := r.(*avro.MapSchema)
		if !ok {
			return nil, avroMismatch(r, w)
		}
		return d.mapValues(rt.Values(), wt.Values())
	case *avro.RecordSchema:
		rt, ok := r.(*avro.RecordSchema)
		if !ok {
			return nil, avroMismatch(r, w)
		}
		return d.record(rt, wt)
	}
	return nil, dataErr("", "avro schema type %s is not supported", w.Type())
}

// branch reads a union's index and returns the branch it names.
func (d *avroDecoder) branch(u *avro.UnionSchema) (avro.Schema, error) {
	at := d.pos()
	i, err := d.long("a union index")
	if err != nil {
		return nil, err
	}
	types := u.Types()
	if i < 0 || i >= int64(len(types)) {
		return nil, dataErr("", "union index %d at byte %d is out of range: union %s has %d branches",
			i, at, avroName(u), len(types))
	}
	return avroDeref(types[i]), nil
}

// primitive reads a value written as w's type, converted to r's (the
// promotions of resolution) and to r's logical type.
func (d *avroDecoder) primitive(r, w *avro.PrimitiveSchema) (any, error) {
	switch w.Type() {
	case avro.Null:
		return nil, nil
	case avro.Boolean:
		at := d.pos()
		v := d.r.ReadBool()
		if err := d.r.Error; err != nil {
			if avroEOF(err) || at >= len(d.b) {
				return nil, d.truncated("a boolean")
			}
			return nil, dataErr("", "byte %d is %#x, not a boolean", at, d.b[at])
		}
		return v, nil
	case avro.Int, avro.Long:
		// An int is read as a long and checked: hamba's ReadInt drops
		// the bits of a fifth byte beyond 32 without a word.
		at := d.pos()
		v, err := d.long(avroWhat(w.Type()))
		if err != nil {
			return nil, err
		}
		if w.Type() == avro.Int && (v < math.MinInt32 || v > math.MaxInt32) {
			return nil, dataErr("", "int at byte %d is %d, out of an int's range", at, v)
		}
		switch r.Type() {
		case avro.Float:
			return float64(float32(v)), nil
		case avro.Double:
			return float64(v), nil
		}
		return avroFromLong(r.Logical(), v)
	case avro.Float:
		d.fixed(4)
		v := d.r.ReadFloat()
		if d.fixed(0); d.r.Error != nil {
			return nil, d.truncated("a float")
		}
		return float64(v), nil
	case avro.Double:
		d.fixed(8)
		v := d.r.ReadDouble()
		if d.fixed(0); d.r.Error != nil {
			return nil, d.truncated("a double")
		}
		return v, nil
	case avro.String, avro.Bytes:
		what := avroWhat(w.Type())
		n, err := d.length(what)
		if err != nil {
			return nil, err
		}
		if r.Type() == avro.String {
			raw, err := d.scratchBytes(n, what)
			if err != nil {
				return nil, err
			}
			return string(raw), nil
		}
		return d.content(r.Logical(), n, what)
	}
	return nil, dataErr("", "avro type %s is not supported", w.Type())
}

// enum reads a writer's enum symbol; read as another enum r, a symbol r
// lacks is r's default.
func (d *avroDecoder) enum(r avro.Schema, w *avro.EnumSchema) (any, error) {
	at := d.pos()
	i, err := d.long("an enum index")
	if err != nil {
		return nil, err
	}
	symbols := w.Symbols()
	if i < 0 || i >= int64(len(symbols)) {
		return nil, dataErr("", "enum index %d at byte %d is out of range: %s has %d symbols",
			i, at, w.FullName(), len(symbols))
	}
	sym := symbols[i]
	if r == avro.Schema(w) {
		return sym, nil
	}
	rt, ok := r.(*avro.EnumSchema)
	if !ok {
		return nil, avroMismatch(r, w)
	}
	switch {
	case slices.Contains(rt.Symbols(), sym):
		return sym, nil
	case rt.HasDefault():
		return rt.Default(), nil
	}
	return nil, dataErr("", "symbol %s of writer enum %s is not in reader enum %s, which has no default",
		sym, w.FullName(), rt.FullName())
}

// record reads the writer's fields in order, into the reader's record.
func (d *avroDecoder) record(r, w *avro.RecordSchema) (any, error) {
	if d.depth++; d.depth > avroMaxDepth {
		return nil, dataErr("", "records nest more than %d deep", avroMaxDepth)
	}
	defer func() { d.depth-- }()
	if r == w {
		fields := w.Fields()
		m := make(map[string]any, len(fields))
		for _, f := range fields {
			v, err := d.read(f.Type(), f.Type())
			if err != nil {
				return nil, under(f.Name(), err)
			}
			m[f.Name()] = v
		}
		return m, nil
	}
	p, ok := d.plan.record(r, w)
	if !ok {
		return nil, avroMismatch(r, w)
	}
	rfields := r.Fields()
	m := make(map[string]any, len(rfields))
	for i, wf := range w.Fields() {
		j := p.fields[i]
		if j < 0 {
			if err := d.skip(wf.Type()); err != nil {
				return nil, under(wf.Name(), err)
			}
			continue
		}
		rf := rfields[j]
		v, err := d.read(rf.Type(), wf.Type())
		if err != nil {
			return nil, under(rf.Name(), err)
		}
		m[rf.Name()] = v
	}
	for _, j := range p.defaults {
		rf := rfields[j]
		v, err := avroDefault(rf.Type(), rf.Default())
		if err != nil {
			return nil, under(rf.Name(), err)
		}
		m[rf.Name()] = v
	}
	return m, nil
}

// array reads an array's blocks.
func (d *avroDecoder) array(r, w avro.Schema) (any, error) {
	out := []any{}
	for {
		n, _, err := d.block(w)
		if err != nil {
			return nil, err
		}
		if n == 0 {
			return out, nil
		}
		out = slices.Grow(out, int(n))
		for range n {
			v, err := d.read(r, w)
			if err != nil {
				return nil, under(elem(len(out)), err)
			}
			out = append(out, v)
		}
	}
}

// mapValues reads a map's blocks.
func (d *avroDecoder) mapValues(r, w avro.Schema) (any, error) {
	out := map[string]any{}
	for {
		n, _, err := d.block(nil)
		if err != nil {
			return nil, err
		}
		if n == 0 {
			return out, nil
		}
		for range n {
			k, err := d.length("a map key")
			if err != nil {
				return nil, err
			}
			raw, err := d.scratchBytes(k, "a map key")
			if err != nil {
				return nil, err
			}
			key := string(raw)
			v, err := d.read(r, w)
			if err != nil {
				return nil, under(key, err)
			}
			out[key] = v
		}
	}
}

// block reads the header of an array's or a map's block and returns its
// count of items (0 ends the array or map) and its size in bytes, which a
// writer may give (a negative count is followed by it) or not (0, as
// hamba's ReadBlockHeader returns it and its skipping takes it). items
// is the array's item schema, nil for a map (whose entries take at least
// a byte, their key's length). A count the remaining bytes cannot hold
// is an error, before anything is allocated or looped over for it.
func (d *avroDecoder) block(items avro.Schema) (n, size int64, err error) {
	at := d.pos()
	n, size = d.r.ReadBlockHeader()
	if n < 0 { // a count of math.MinInt64, which negated stays negative
		return 0, 0, dataErr("", "block count at byte %d is out of range", at)
	}
	if err := d.r.Error; err != nil {
		switch {
		case n == 0: // the count failed
			return 0, 0, d.longErr(err, "a block count", at)
		case avroEOF(err):
			return 0, 0, d.truncated("a block size")
		}
		return 0, 0, dataErr("", "the block at byte %d has a size longer than a long's 10 bytes", at)
	}
	// Items that can take no bytes may be more than the bytes left, up to
	// avroMaxEmptyItems; in the first reading, which does not know the
	// bytes left, more than that are refused whatever b holds.
	over := n > d.left()
	if items != nil && avroEmpty(items, 0) {
		over = n > avroMaxEmptyItems && (over || d.src == nil)
	}
	if over {
		what := "items"
		if items == nil {
			what = "entries"
		}
		return 0, 0, dataErr("", "block at byte %d claims %d %s, more than the data can hold", at, n, what)
	}
	return n, size, nil
}

// skip reads past a value of w, for a writer field the reader lacks.
func (d *avroDecoder) skip(w avro.Schema) error {
	switch wt := avroDeref(w).(type) {
	case *avro.NullSchema:
		return nil
	case *avro.PrimitiveSchema:
		switch wt.Type() {
		case avro.Boolean:
			d.r.SkipBool()
			if d.r.Error != nil {
				return d.truncated("a boolean")
			}
		case avro.Int, avro.Long:
			// Read, not skipped: hamba's SkipLong and SkipInt stop after
			// 10 and 5 bytes without an error, in the middle of a varint.
			_, err := d.long(avroWhat(wt.Type()))
			return err
		case avro.Float:
			return d.skipBytes(4, "a float")
		case avro.Double:
			return d.skipBytes(8, "a double")
		case avro.String, avro.Bytes:
			// The length is read, not skipped with SkipString or
			// SkipBytes, which take a negative length for an empty value.
			what := avroWhat(wt.Type())
			n, err := d.length(what)
			if err != nil {
				return err
			}
			return d.skipBytes(n, what)
		}
		return nil
	case *avro.FixedSchema:
		return d.skipBytes(int64(wt.Size()), "a fixed")
	case *avro.EnumSchema:
		_, err := d.long("an enum index")
		return err
	case *avro.UnionSchema:
		b, err := d.branch(wt)
		if err != nil {
			return err
		}
		return d.skip(b)
	case *avro.RecordSchema:
		if d.depth++; d.depth > avroMaxDepth {
			return dataErr("", "records nest more than %d deep", avroMaxDepth)
		}
		defer func() { d.depth-- }()
		for _, f := range wt.Fields() {
			if err := d.skip(f.Type()); err != nil {
				return under(f.Name(), err)
			}
		}
		return nil
	case *avro.ArraySchema:
		return d.skipBlocks(wt.Items(), wt.Items())
	case *avro.MapSchema:
		return d.skipBlocks(nil, wt.Values())
	}
	return dataErr("", "avro schema type %s is not supported", w.Type())
}

// skipBlocks reads past an array's blocks (items its item schema) or a
// map's (items nil), by their size when the writer gave it.
func (d *avroDecoder) skipBlocks(items, values avro.Schema) error {
	for {
		n, size, err := d.block(items)
		if err != nil || n == 0 {
			return err
		}
		if size > 0 {
			if err := d.skipBytes(size, "a block"); err != nil {
				return err
			}
			continue
		}
		for range n {
			if items == nil {
				k, err := d.length("a map key")
				if err != nil {
					return err
				}
				if err := d.skipBytes(k, "a map key"); err != nil {
					return err
				}
			}
			if err := d.skip(values); err != nil {
				return err
			}
		}
	}
}

// long reads a long (or an int, written the same way); what names the
// value for an error.
func (d *avroDecoder) long(what string) (int64, error) {
	at := d.pos()
	v := d.r.ReadLong()
	if err := d.r.Error; err != nil {
		return 0, d.longErr(err, what, at)
	}
	return v, nil
}

// longErr is the error of a long at byte at that the Reader failed to
// read: the data ended, or its 10th byte was not its last (the Reader
// looks at the 11th before it fails, so the position is counted from at).
func (d *avroDecoder) longErr(err error, what string, at int) error {
	if avroEOF(err) {
		return d.truncated(what)
	}
	return dataErr("", "%s ending at byte %d is longer than a long's 10 bytes", what, at+10)
}

// length reads the length of a string, a bytes value or a map key,
// refusing one that is negative or that the bytes left cannot hold; the
// bytes are then read with the Reader's Read (content, scratchBytes).
//
// hamba's ReadBytes and ReadString are not used: they allocate for the
// length the data claims before reading a byte of it (up to
// Config.MaxByteSliceSize, 1 MiB by default, refusing any longer value),
// and what they return is cut from a slab shared with the values read
// after it, with room to grow: an append to one writes over the next.
func (d *avroDecoder) length(what string) (int64, error) {
	at := d.pos()
	n, err := d.long(what)
	if err != nil {
		return 0, err
	}
	if n < 0 {
		return 0, dataErr("", "%s at byte %d has a negative length, %d", what, at, n)
	}
	if n > d.left() {
		return 0, d.truncated(what)
	}
	return n, nil
}

// content reads the n bytes of a bytes value or a fixed as its value in
// the tree: a decimal's json.Number, or the bytes, in a slice of their
// own that shares memory with nothing.
func (d *avroDecoder) content(ls avro.LogicalSchema, n int64, what string) (any, error) {
	if dec, ok := ls.(*avro.DecimalLogicalSchema); ok {
		raw, err := d.scratchBytes(n, what)
		if err != nil {
			return nil, err
		}
		return json.Number(avroDecimalText(raw, dec.Scale())), nil
	}
	if n > d.left() {
		return nil, d.truncated(what)
	}
	raw := make([]byte, n)
	d.fixed(int(n))
	d.r.Read(raw)
	if d.fixed(0); d.r.Error != nil {
		return nil, d.truncated(what)
	}
	return raw, nil
}

// scratchBytes reads n bytes into the decoder's scratch buffer, for what
// is converted at once (a string, a decimal); the result is overwritten
// by the next call.
func (d *avroDecoder) scratchBytes(n int64, what string) ([]byte, error) {
	if n > d.left() {
		return nil, d.truncated(what)
	}
	d.scratch = slices.Grow(d.scratch[:0], int(n))[:n]
	d.fixed(int(n))
	d.r.Read(d.scratch)
	if d.fixed(0); d.r.Error != nil {
		return nil, d.truncated(what)
	}
	return d.scratch, nil
}

// skipBytes reads past n bytes.
func (d *avroDecoder) skipBytes(n int64, what string) error {
	if n > d.left() {
		return d.truncated(what)
	}
	d.fixed(int(n))
	d.r.SkipNBytes(int(n))
	if d.fixed(0); d.r.Error != nil {
		return d.truncated(what)
	}
	return nil
}

// avroEOF reports whether the Reader's error is the end of the data:
// io.EOF where a value would start, io.ErrUnexpectedEOF in its middle,
// either wrapped ("reading long: EOF").
func avroEOF(err error) bool {
	return errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF)
}

// avroWhat names a value of a primitive type in messages (without
// building a string: it is called for every value read).
func avroWhat(t avro.Type) string {
	switch t {
	case avro.Int:
		return "an int"
	case avro.Long:
		return "a long"
	case avro.String:
		return "a string"
	case avro.Bytes:
		return "a bytes value"
	}
	return "a value"
}

// truncated is the error of data that ends before what is complete.
func (d *avroDecoder) truncated(what string) error {
	return dataErr("", "the data (%d bytes) ends in the middle of %s", len(d.b), what)
}

// branch returns the reader branch that reads w, as compiled.
func (p *avroPlan) branch(r *avro.UnionSchema, w avro.Schema) (avro.Schema, bool) {
	if p == nil {
		return nil, false
	}
	b, ok := p.branches[avroPair{r, w}]
	return b, ok
}

// record returns the plan for reading w as r, as compiled.
func (p *avroPlan) record(r, w *avro.RecordSchema) (*avroRecordPlan, bool) {
	if p == nil {
		return nil, false
	}
	rp, ok := p.records[avroPair{r, w}]
	return rp, ok
}

// avroMismatch is the error of a reader schema the plan has no way to
// read the writer's data with: a pair hamba accepted that the plan
// cannot follow.
func avroMismatch(r, w avro.Schema) error {
	return dataErr("", "avro reader schema %s cannot read writer's %s", avroName(r), avroName(w))
}

// avroEmpty reports whether a value of s can take no bytes at all (null,
// a record of such values, a fixed of size 0): when it does not, every
// value of s takes at least a byte. depth bounds the walk of records in
// records; past it, s counts as one that can take no bytes.
func avroEmpty(s avro.Schema, depth int) bool {
	if depth > 32 {
		return true
	}
	switch t := avroDeref(s).(type) {
	case *avro.NullSchema:
		return true
	case *avro.FixedSchema:
		return t.Size() == 0
	case *avro.RecordSchema:
		for _, f := range t.Fields() {
			if !avroEmpty(f.Type(), depth+1) {
				return false
			}
		}
		return true
	}
	return false
}

// avroFromLong is an int's or a long's value in the tree: its logical
// type's, or the int64.
func avroFromLong(ls avro.LogicalSchema, v int64) (any, error) {
	if ls == nil {
		return v, nil
	}
	switch ls.Type() {
	case avro.Date:
		return time.Unix(v*86400, 0).UTC(), nil
	case avro.TimeMillis:
		return transform.Duration(v * int64(time.Millisecond)), nil
	case avro.TimeMicros:
		if v > math.MaxInt64/1000 || v < math.MinInt64/1000 {
			return nil, dataErr("", "time-micros %d is out of range", v)
		}
		return transform.Duration(v * int64(time.Microsecond)), nil
	case avro.TimestampMillis, avro.LocalTimestampMillis:
		return time.UnixMilli(v).UTC(), nil
	case avro.TimestampMicros, avro.LocalTimestampMicros:
		return time.UnixMicro(v).UTC(), nil
	}
	return v, nil
}

// avroFromBytes is a bytes' or a fixed's value in the tree: a decimal's
// json.Number, or a copy of raw.
func avroFromBytes(ls avro.LogicalSchema, raw []byte) (any, error) {
	if dec, ok := ls.(*avro.DecimalLogicalSchema); ok {
		return json.Number(avroDecimalText(raw, dec.Scale())), nil
	}
	out := make([]byte, len(raw))
	copy(out, raw)
	return out, nil
}

// avroDecimalText is the decimal whose unscaled value is raw (big-endian
// two's complement) with scale decimal places, written with exactly
// scale digits after the point.
func avroDecimalText(raw []byte, scale int) string {
	var buf [48]byte
	digits := buf[:0]
	neg := len(raw) > 0 && raw[0]&0x80 != 0
	if len(raw) <= 8 {
		var u uint64
		for _, c := range raw {
			u = u<<8 | uint64(c)
		}
		if neg {
			u |= ^uint64(0) << (8 * len(raw)) // sign-extend to 64 bits
			u = -u                            // the magnitude, right for MinInt64 too
		}
		digits = strconv.AppendUint(digits, u, 10)
	} else {
		n := new(big.Int).SetBytes(raw)
		if neg {
			n.Sub(n, new(big.Int).Lsh(big.NewInt(1), uint(8*len(raw))))
			n.Neg(n)
		}
		digits = n.Append(digits, 10)
	}
	out := make([]byte, 0, len(digits)+scale+3)
	if neg {
		out = append(out, '-')
	}
	if pad := scale + 1 - len(digits); pad > 0 { // 5 at scale 2 is 0.05
		for range pad {
			out = append(out, '0')
		}
	}
	whole := len(out) + len(digits) - scale
	out = append(out, digits...)
	if scale > 0 {
		out = slices.Insert(out, whole, '.')
	}
	return string(out)
}

// avroDefault is a field's default, as hamba holds it (Field.Default: int
// for an int, float32 for a float, [n]byte for a fixed, the first
// branch's value for a union, a record with every field filled), as a
// value of the tree.
func avroDefault(s avro.Schema, def any) (any, error) {
	switch t := avroDeref(s).(type) {
	case *avro.NullSchema:
		return nil, nil
	case *avro.UnionSchema:
		return avroDefault(t.Types()[0], def)
	case *avro.PrimitiveSchema:
		switch t.Type() {
		case avro.Null:
			return nil, nil
		case avro.Boolean:
			if b, ok := def.(bool); ok {
				return b, nil
			}
		case avro.Int, avro.Long:
			var v int64
			switch x := def.(type) {
			case int:
				v = int64(x)
			case int32:
				v = int64(x)
			case int64:
				v = x
			case float64:
				v = int64(x)
			default:
				return nil, avroBadDefault(s, def)
			}
			return avroFromLong(t.Logical(), v)
		case avro.Float:
			switch x := def.(type) {
			case float32:
				return float64(x), nil
			case float64:
				return float64(float32(x)), nil
			}
		case avro.Double:
			if f, ok := def.(float64); ok {
				return f, nil
			}
		case avro.String:
			if str, ok := def.(string); ok {
				return str, nil
			}
		case avro.Bytes:
			switch x := def.(type) {
			case []byte:
				return avroFromBytes(t.Logical(), x)
			case string:
				return avroFromBytes(t.Logical(), []byte(x))
			}
		}
	case *avro.FixedSchema:
		rv := reflect.ValueOf(def)
		if rv.Kind() == reflect.Array && rv.Type().Elem().Kind() == reflect.Uint8 {
			raw := make([]byte, rv.Len())
			reflect.Copy(reflect.ValueOf(raw), rv)
			return avroFromBytes(t.Logical(), raw)
		}
	case *avro.EnumSchema:
		if str, ok := def.(string); ok {
			return str, nil
		}
	case *avro.ArraySchema:
		if a, ok := def.([]any); ok {
			out := make([]any, len(a))
			for i, x := range a {
				v, err := avroDefault(t.Items(), x)
				if err != nil {
					return nil, under(elem(i), err)
				}
				out[i] = v
			}
			return out, nil
		}
	case *avro.MapSchema:
		if m, ok := def.(map[string]any); ok {
			out := make(map[string]any, len(m))
			for k, x := range m {
				v, err := avroDefault(t.Values(), x)
				if err != nil {
					return nil, under(k, err)
				}
				out[k] = v
			}
			return out, nil
		}
	case *avro.RecordSchema:
		if m, ok := def.(map[string]any); ok {
			out := make(map[string]any, len(t.Fields()))
			for _, f := range t.Fields() {
				x, ok := m[f.Name()]
				if !ok {
					if !f.HasDefault() {
						return nil, dataErr(f.Name(), "the default of record %s has no value for the field", t.FullName())
					}
					x = f.Default()
				}
				v, err := avroDefault(f.Type(), x)
				if err != nil {
					return nil, under(f.Name(), err)
				}
				out[f.Name()] = v
			}
			return out, nil
		}
	}
	return nil, avroBadDefault(s, def)
}

// avroBadDefault is the error of a default that is not what hamba holds
// for its schema.
func avroBadDefault(s avro.Schema, def any) error {
	return dataErr("", "default %v (%T) does not fit %s", def, def, avroName(s))
}

// encodeAvro encodes the value tree v with schema s (no header). It takes
// the types decodeAvro returns, and values that convert without loss:
//
//   - int and long: any Go integer in range (an int is 32 bits), an
//     integral float64 or json.Number; never a string.
//   - float and double: float64, float32, a Go integer the type holds
//     exactly, json.Number (a float keeps the nearest float32).
//   - bytes and fixed: []byte, or a string of standard base64, as JSON
//     writes bytes; a fixed takes exactly its size.
//   - enum: a string that is one of its symbols.
//   - uuid: a string in the 8-4-4-4-12 hex form.
//   - decimal: json.Number, float64 (its shortest text), a Go integer, or
//     a string holding a number as JSON writes it; one with more decimal
//     places than the scale (after its trailing zeros: 12.300 fits a
//     scale of 2) or more integer digits than precision minus scale is
//     refused.
//   - date: a time.Time at exactly midnight UTC, "2006-01-02", or RFC 3339
//     text at midnight UTC.
//   - timestamp-* and local-timestamp-*: time.Time or RFC 3339 text,
//     truncated to the type's unit as Java's Avro does. A local timestamp
//     is written as the UTC wall clock of the time, as decodeAvro reads it.
//   - time-millis and time-micros: transform.Duration, time.Duration or
//     Go's duration text ("13h45m0s") in [0, 24h), truncated to the unit.
//   - record: map[string]any; a missing field takes its default, and is
//     an error if it has none; a key the record has no field for is an
//     error (a value is never dropped silently).
//   - map: map[string]any, written sorted by key; array: []any.
//   - union: nil is the null branch. Any other value takes the first
//     branch whose type decodes to the value's Go type (a string to a
//     string, an enum that has the symbol or a valid uuid; an int64 to an
//     int or long; a map to a map or to a record that has every key and
//     whose fields without a default are all there), else the first
//     branch it converts to (an int64 to a double, RFC 3339 text to a
//     timestamp). A union of null and one other type reports the other
//     type's error, any other union lists its branches.
//
// A value that does not fit is a *DataError whose Path names it:
// `items[2].price: 12.345 has 3 decimal places; decimal(10,2) takes 2`.
func encodeAvro(s avro.Schema, v any) ([]byte, error) {
	if r, ok := s.(*avroResolved); ok {
		s = r.reader
	}
	e := avroEncoder{w: avroWriter()}
	defer e.release()
	if err := e.write(s, v); err != nil {
		return nil, err
	}
	return slices.Clone(e.w.Buffer()), nil
}

// avroWriter is an empty Writer from avroWriters.
func avroWriter() *avro.Writer {
	w := avroWriters.Get().(*avro.Writer)
	w.Reset(nil)
	return w
}

// release returns the encoder's Writers to avroWriters.
func (e *avroEncoder) release() {
	for _, w := range []*avro.Writer{e.w, e.scratch} {
		if w != nil && cap(w.Buffer()) <= avroMaxKept {
			avroWriters.Put(w)
		}
	}
}

// avroEncoder writes a value with hamba's avro.Writer, which writes the
// parts of Avro's encoding (varints, floats, bytes, block headers); the
// encoder walks the schema and converts the value tree's values.
type avroEncoder struct {
	w       *avro.Writer
	scratch *avro.Writer // a union's tries of its branches (see try)
	depth   int          // records open
}

// write appends v as s.
func (e *avroEncoder) write(s avro.Schema, v any) error {
	switch t := avroDeref(s).(type) {
	case *avro.NullSchema:
		if v != nil {
			return avroWant(t, v)
		}
		return nil
	case *avro.UnionSchema:
		return e.union(t, v)
	case *avro.RecordSchema:
		return e.record(t, v)
	case *avro.ArraySchema:
		a, ok := v.([]any)
		if !ok {
			return avroWant(t, v)
		}
		if len(a) > 0 {
			e.w.WriteBlockHeader(int64(len(a)), 0) // no size: a positive count
			for i, x := range a {
				if err := e.write(t.Items(), x); err != nil {
					return under(elem(i), err)
				}
			}
		}
		e.w.WriteBlockHeader(0, 0)
		return nil
	case *avro.MapSchema:
		m, ok := v.(map[string]any)
		if !ok {
			return avroWant(t, v)
		}
		if len(m) > 0 {
			e.w.WriteBlockHeader(int64(len(m)), 0)
			keys := make([]string, 0, len(m))
			for k := range m {
				keys = append(keys, k)
			}
			slices.Sort(keys)
			for _, k := range keys {
				e.w.WriteString(k)
				if err := e.write(t.Values(), m[k]); err != nil {
					return under(k, err)
				}
			}
		}
		e.w.WriteBlockHeader(0, 0)
		return nil
	}
	_, err := e.scalar(s, v)
	return err
}

// Ranks of a value for a union branch: how well the branch takes it.
const (
	avroNatural   = 1 // the Go type decoding the branch gives
	avroConverted = 2 // a value the branch converts without loss
)

// scalar writes v as a schema that is not a record, array, map or union,
// and returns how naturally the schema took it (avroNatural or
// avroConverted). On an error, nothing is written.
func (e *avroEncoder) scalar(s avro.Schema, v any) (int, error) {
	switch t := avroDeref(s).(type) {
	case *avro.NullSchema:
		if v != nil {
			return 0, avroWant(t, v)
		}
		return avroNatural, nil
	case *avro.EnumSchema:
		str, ok := v.(string)
		if !ok {
			return 0, avroWant(t, v)
		}
		i := slices.Index(t.Symbols(), str)
		if i < 0 {
			return 0, dataErr("", "%q is not a symbol of enum %s (%s)", str, t.FullName(), strings.Join(t.Symbols(), ", "))
		}
		e.w.WriteLong(int64(i))
		return avroNatural, nil
	case *avro.FixedSchema:
		if dec, ok := t.Logical().(*avro.DecimalLogicalSchema); ok {
			return e.decimal(t, dec, t.Size(), v)
		}
		raw, rank, err := avroToBytes(t, v)
		if err != nil {
			return 0, err
		}
		if len(raw) != t.Size() {
			return 0, dataErr("", "fixed %s takes %d bytes, got %d", t.FullName(), t.Size(), len(raw))
		}
		e.raw(raw)
		return rank, nil
	case *avro.PrimitiveSchema:
		return e.primitive(t, v)
	}
	return 0, dataErr("", "avro schema type %s is not supported", s.Type())
}

// primitive writes v as a primitive type, with its logical type. An int
// is written as a long is: Avro encodes the two alike.
func (e *avroEncoder) primitive(s *avro.PrimitiveSchema, v any) (int, error) {
	var lt avro.LogicalType
	if ls := s.Logical(); ls != nil {
		lt = ls.Type()
	}
	switch s.Type() {
	case avro.Null:
		if v != nil {
			return 0, avroWant(s, v)
		}
		return avroNatural, nil
	case avro.Boolean:
		b, ok := v.(bool)
		if !ok {
			return 0, avroWant(s, v)
		}
		e.w.WriteBool(b)
		return avroNatural, nil
	case avro.Int, avro.Long:
		switch lt {
		case avro.Date:
			days, rank, err := avroToDate(s, v)
			if err != nil {
				return 0, err
			}
			e.w.WriteLong(days)
			return rank, nil
		case avro.TimeMillis, avro.TimeMicros:
			d, rank, err := avroToTimeOfDay(s, v)
			if err != nil {
				return 0, err
			}
			if lt == avro.TimeMillis {
				e.w.WriteLong(int64(d / time.Millisecond))
			} else {
				e.w.WriteLong(int64(d / time.Microsecond))
			}
			return rank, nil
		case avro.TimestampMillis, avro.TimestampMicros, avro.LocalTimestampMillis, avro.LocalTimestampMicros:
			ts, rank, err := avroToTime(s, v)
			if err != nil {
				return 0, err
			}
			sec := ts.Unix()
			if lt == avro.TimestampMillis || lt == avro.LocalTimestampMillis {
				if sec >= math.MaxInt64/1000 || sec <= math.MinInt64/1000 {
					return 0, dataErr("", "%s is out of range for %s", ts.Format(time.RFC3339Nano), lt)
				}
				e.w.WriteLong(ts.UnixMilli())
			} else {
				if sec >= math.MaxInt64/1000000 || sec <= math.MinInt64/1000000 {
					return 0, dataErr("", "%s is out of range for %s", ts.Format(time.RFC3339Nano), lt)
				}
				e.w.WriteLong(ts.UnixMicro())
			}
			return rank, nil
		}
		i, rank, err := avroToInteger(s, v)
		if err != nil {
			return 0, err
		}
		e.w.WriteLong(i)
		return rank, nil
	case avro.Float, avro.Double:
		f, rank, err := avroToFloat(s, v)
		if err != nil {
			return 0, err
		}
		if s.Type() == avro.Float {
			e.w.WriteFloat(float32(f))
		} else {
			e.w.WriteDouble(f)
		}
		return rank, nil
	case avro.String:
		str, ok := v.(string)
		if !ok {
			return 0, avroWant(s, v)
		}
		if lt == avro.UUID && !avroIsUUID(str) {
			return 0, dataErr("", "%s is not a uuid", avroQuote(str))
		}
		e.w.WriteString(str)
		return avroNatural, nil
	case avro.Bytes:
		if dec, ok := s.Logical().(*avro.DecimalLogicalSchema); ok {
			return e.decimal(s, dec, 0, v)
		}
		raw, rank, err := avroToBytes(s, v)
		if err != nil {
			return 0, err
		}
		e.w.WriteBytes(raw)
		return rank, nil
	}
	return 0, dataErr("", "avro type %s is not supported", s.Type())
}

// decimal writes v as a decimal: its unscaled value in two's complement,
// in size bytes for a fixed, else as bytes in the fewest bytes.
func (e *avroEncoder) decimal(s avro.Schema, dec *avro.DecimalLogicalSchema, size int, v any) (int, error) {
	text, rank, ok := avroDecimalInput(v)
	if !ok {
		return 0, avroWant(s, v)
	}
	small, large, err := avroUnscaled(text, dec)
	if err != nil {
		return 0, err
	}
	var scratch [8]byte
	raw, negative := scratch[:], small < 0
	if large == nil {
		binary.BigEndian.PutUint64(raw, uint64(small))
		n := 1
		for n < 8 && (small < -(1<<(8*n-1)) || small >= 1<<(8*n-1)) {
			n++
		}
		raw = raw[8-n:]
	} else {
		raw, negative = avroTwosComplement(large), large.Sign() < 0
	}
	switch {
	case size == 0:
		e.w.WriteBytes(raw)
	case len(raw) > size: // not for a precision hamba accepted for the size
		return 0, dataErr("", "%s does not fit the %d bytes of fixed %s", text, size, s.(avro.NamedSchema).FullName())
	default:
		pad := [1]byte{0}
		if negative {
			pad[0] = 0xff
		}
		for range size - len(raw) {
			e.raw(pad[:])
		}
		e.raw(raw)
	}
	return rank, nil
}

// record writes a record's fields in order from a map.
func (e *avroEncoder) record(s *avro.RecordSchema, v any) error {
	m, ok := v.(map[string]any)
	if !ok {
		return avroWant(s, v)
	}
	if e.depth++; e.depth > avroMaxDepth {
		return dataErr("", "records nest more than %d deep", avroMaxDepth)
	}
	defer func() { e.depth-- }()
	present := 0
	for _, f := range s.Fields() {
		x, ok := m[f.Name()]
		if !ok {
			if !f.HasDefault() {
				return dataErr("", "missing field %s (no default)", f.Name())
			}
			if err := e.fieldDefault(f); err != nil {
				return under(f.Name(), err)
			}
			continue
		}
		present++
		if err := e.write(f.Type(), x); err != nil {
			return under(f.Name(), err)
		}
	}
	if present < len(m) {
		var extra []string
		for k := range m {
			if !slices.ContainsFunc(s.Fields(), func(f *avro.Field) bool { return f.Name() == k }) {
				extra = append(extra, k)
			}
		}
		slices.Sort(extra)
		return dataErr("", "field %q is not in record %s", extra[0], s.FullName())
	}
	return nil
}

// fieldDefault writes the default of a field the value does not have. A
// union's default is its first branch's value, written as that branch.
func (e *avroEncoder) fieldDefault(f *avro.Field) error {
	s := avroDeref(f.Type())
	if u, ok := s.(*avro.UnionSchema); ok {
		e.w.WriteLong(0)
		s = avroDeref(u.Types()[0])
	}
	v, err := avroDefault(s, f.Default())
	if err != nil {
		return err
	}
	return e.write(s, v)
}

// union writes the index of the branch v takes (see encodeAvro), then v.
func (e *avroEncoder) union(u *avro.UnionSchema, v any) error {
	types := u.Types()
	if v == nil {
		for i, t := range types {
			if t.Type() == avro.Null {
				e.w.WriteLong(int64(i))
				return nil
			}
		}
		return dataErr("", "union %s does not take null", avroName(u))
	}
	only, others := -1, 0
	for i, t := range types {
		if t.Type() != avro.Null {
			only, others = i, others+1
		}
	}
	if others == 1 {
		e.w.WriteLong(int64(only))
		return e.write(types[only], v)
	}
	converted := -1
	for i, t := range types {
		t = avroDeref(t)
		switch t.(type) {
		case *avro.NullSchema:
			continue
		case *avro.RecordSchema, *avro.MapSchema, *avro.ArraySchema:
			if avroTakes(t, v) {
				e.w.WriteLong(int64(i))
				return e.write(t, v)
			}
			continue
		}
		if !avroMayTake(t, v) {
			continue
		}
		rank, err := e.try(t, v)
		if err == nil && rank == avroNatural {
			e.w.WriteLong(int64(i))
			e.raw(e.scratch.Buffer())
			return nil
		}
		if err == nil && converted < 0 {
			converted = i
		}
	}
	if converted >= 0 {
		e.w.WriteLong(int64(converted))
		_, err := e.scalar(types[converted], v)
		return err
	}
	return dataErr("", "no branch of union %s takes %s", avroName(u), avroDescribe(v))
}

// try writes v as the scalar s to the encoder's scratch Writer, where a
// union tries its branches: the Writer has no way to take back what was
// written to it.
func (e *avroEncoder) try(s avro.Schema, v any) (int, error) {
	if e.scratch == nil {
		e.scratch = avroWriter()
	}
	e.scratch.Reset(nil)
	w := e.w
	e.w = e.scratch
	rank, err := e.scalar(s, v)
	e.w = w
	return rank, err
}

// avroTakes reports whether a union's record, map or array branch takes
// v: an array a []any, a map any map[string]any, a record a map that has
// all its fields without a default and no key it lacks.
func avroTakes(s avro.Schema, v any) bool {
	switch t := s.(type) {
	case *avro.ArraySchema:
		_, ok := v.([]any)
		return ok
	case *avro.MapSchema:
		_, ok := v.(map[string]any)
		return ok
	case *avro.RecordSchema:
		m, ok := v.(map[string]any)
		if !ok {
			return false
		}
		present := 0
		for _, f := range t.Fields() {
			if _, ok := m[f.Name()]; ok {
				present++
			} else if !f.HasDefault() {
				return false
			}
		}
		return present == len(m)
	}
	return false
}

// avroMayTake reports whether a scalar schema takes values of v's Go type
// at all, so that a union tries a branch (and builds its error) only for
// values of a type it converts.
func avroMayTake(s avro.Schema, v any) bool {
	var lt avro.LogicalType
	if ls, ok := s.(avro.LogicalTypeSchema); ok && ls.Logical() != nil {
		lt = ls.Logical().Type()
	}
	_, isInt, _ := avroGoInt(v)
	switch v.(type) {
	case float64, float32, json.Number:
		isInt = true // a number: an integer if integral
	}
	_, isString := v.(string)
	switch {
	case lt == avro.Decimal:
		return isInt || isString
	case lt == avro.Date || lt == avro.TimestampMillis || lt == avro.TimestampMicros ||
		lt == avro.LocalTimestampMillis || lt == avro.LocalTimestampMicros:
		_, ok := v.(time.Time)
		return ok || isString
	case lt == avro.TimeMillis || lt == avro.TimeMicros:
		switch v.(type) {
		case transform.Duration, time.Duration, string:
			return true
		}
		return false
	}
	switch s.Type() {
	case avro.Boolean:
		_, ok := v.(bool)
		return ok
	case avro.Int, avro.Long, avro.Float, avro.Double:
		return isInt
	case avro.String, avro.Enum:
		return isString
	case avro.Bytes, avro.Fixed:
		_, ok := v.([]byte)
		return ok || isString
	}
	return false
}

// raw writes bytes as they are: a fixed's, whose size the schema gives.
func (e *avroEncoder) raw(b []byte) {
	_, _ = e.w.Write(b) // appends to the Writer's buffer; never fails
}

// avroToInteger converts v for an int or a long without a time logical
// type.
func avroToInteger(s *avro.PrimitiveSchema, v any) (int64, int, error) {
	i, rank := int64(0), avroNatural
	if n, ok, over := avroGoInt(v); ok {
		if over {
			return 0, 0, avroRange(s, fmt.Sprint(v))
		}
		i = n
	} else {
		switch x := v.(type) {
		case float64, float32:
			f := avroFloat64(x)
			text := strconv.FormatFloat(f, 'g', -1, 64)
			if math.Trunc(f) != f {
				return 0, 0, dataErr("", "%s is not an integer", text)
			}
			if f < -(1<<63) || f >= 1<<63 {
				return 0, 0, avroRange(s, text)
			}
			i, rank = int64(f), avroConverted
		case json.Number:
			n, err := avroIntegerText(s, string(x))
			if err != nil {
				return 0, 0, err
			}
			i, rank = n, avroConverted
		default:
			return 0, 0, avroWant(s, v)
		}
	}
	if s.Type() == avro.Int && (i < math.MinInt32 || i > math.MaxInt32) {
		return 0, 0, avroRange(s, strconv.FormatInt(i, 10))
	}
	return i, rank, nil
}

// avroGoInt is v as an int64 when v is a Go integer (ok), over when it is
// one beyond int64's range.
func avroGoInt(v any) (i int64, ok, over bool) {
	switch x := v.(type) {
	case int64:
		return x, true, false
	case int:
		return int64(x), true, false
	case int32:
		return int64(x), true, false
	case int16:
		return int64(x), true, false
	case int8:
		return int64(x), true, false
	case uint64:
		return int64(x), true, x > math.MaxInt64
	case uint:
		return int64(x), true, uint64(x) > math.MaxInt64
	case uint32:
		return int64(x), true, false
	case uint16:
		return int64(x), true, false
	case uint8:
		return int64(x), true, false
	}
	return 0, false, false
}

// avroIntegerText converts a json.Number that holds an integer.
func avroIntegerText(s *avro.PrimitiveSchema, text string) (int64, error) {
	if !avroIsNumber(text) {
		return 0, dataErr("", "%s is not a number", avroQuote(text))
	}
	if i, err := strconv.ParseInt(text, 10, 64); err == nil {
		return i, nil
	}
	r, ok := new(big.Rat).SetString(text)
	if !ok {
		return 0, dataErr("", "%s is not a number", avroQuote(text))
	}
	if !r.IsInt() {
		return 0, dataErr("", "%s is not an integer", text)
	}
	if !r.Num().IsInt64() {
		return 0, avroRange(s, text)
	}
	return r.Num().Int64(), nil
}

// avroFloat64 is a float64 or a float32 as a float64.
func avroFloat64(v any) float64 {
	if f, ok := v.(float32); ok {
		return float64(f)
	}
	return v.(float64)
}

// avroToFloat converts v for a float or a double. An integer must be one
// the type holds exactly; a float64 is rounded to a float's precision,
// as every Avro writer does, but must not overflow it.
func avroToFloat(s *avro.PrimitiveSchema, v any) (float64, int, error) {
	var (
		f    float64
		rank = avroNatural
	)
	switch x := v.(type) {
	case float64:
		f = x
	case float32:
		f = float64(x)
	case json.Number:
		var err error
		f, err = strconv.ParseFloat(string(x), 64)
		if err != nil || !avroIsNumber(string(x)) {
			if errors.Is(err, strconv.ErrRange) {
				return 0, 0, avroRange(s, string(x))
			}
			return 0, 0, dataErr("", "%s is not a number", avroQuote(string(x)))
		}
		rank = avroConverted
	default:
		i, ok, over := avroGoInt(v)
		if !ok {
			return 0, 0, avroWant(s, v)
		}
		if over || !avroExact(i, s.Type() == avro.Float) {
			return 0, 0, dataErr("", "%v cannot be held exactly by a %s", v, s.Type())
		}
		f, rank = float64(i), avroConverted
	}
	if s.Type() == avro.Float && !math.IsInf(f, 0) && math.IsInf(float64(float32(f)), 0) {
		return 0, 0, avroRange(s, strconv.FormatFloat(f, 'g', -1, 64))
	}
	return f, rank, nil
}

// avroExact reports whether a float (single) or a double holds i exactly.
func avroExact(i int64, single bool) bool {
	if single {
		f := float32(i)
		return f < 1<<63 && f >= -(1<<63) && int64(f) == i
	}
	f := float64(i)
	return f < 1<<63 && int64(f) == i
}

// avroToBytes converts v for bytes or a fixed: []byte, or base64 text.
func avroToBytes(s avro.Schema, v any) ([]byte, int, error) {
	switch x := v.(type) {
	case []byte:
		return x, avroNatural, nil
	case string:
		raw, err := base64.StdEncoding.DecodeString(x)
		if err != nil {
			return nil, 0, dataErr("", "%s is not base64 text for %s", avroQuote(x), avroName(s))
		}
		return raw, avroConverted, nil
	}
	return nil, 0, avroWant(s, v)
}

// avroDecimalInput is the text of a decimal's value: a json.Number's or a
// string's own, a float64's shortest, an integer's.
func avroDecimalInput(v any) (string, int, bool) {
	switch x := v.(type) {
	case json.Number:
		return string(x), avroNatural, true
	case string:
		return x, avroConverted, true
	case float64, float32:
		f := avroFloat64(x)
		if math.IsNaN(f) || math.IsInf(f, 0) {
			return strconv.FormatFloat(f, 'g', -1, 64), avroConverted, true // refused by avroUnscaled
		}
		bits := 64
		if _, ok := x.(float32); ok {
			bits = 32
		}
		return strconv.FormatFloat(f, 'f', -1, bits), avroConverted, true
	case int64, int, int32, int16, int8, uint64, uint, uint32, uint16, uint8:
		return fmt.Sprint(x), avroConverted, true
	}
	return "", 0, false
}

// avroUnscaled is the unscaled value of the decimal number text at dec's
// scale, refused when it has more decimal places than the scale or more
// integer digits than the precision leaves. It is small, or large (not
// nil) when it needs more than 18 digits.
func avroUnscaled(text string, dec *avro.DecimalLogicalSchema) (small int64, large *big.Int, err error) {
	if !avroIsNumber(text) {
		return 0, nil, dataErr("", "%s is not a number for decimal(%d,%d)", avroQuote(text), dec.Precision(), dec.Scale())
	}
	// The value is sign × digits × 10^exp, the digits those of the
	// integer part then the fraction, without leading or trailing zeros.
	mant, expText, _ := strings.Cut(text, "e")
	if expText == "" {
		mant, expText, _ = strings.Cut(text, "E")
	}
	neg := strings.HasPrefix(mant, "-")
	mant = strings.TrimPrefix(mant, "-")
	intPart, frac, _ := strings.Cut(mant, ".")
	exp := -len(frac)
	if expText != "" {
		e, err := strconv.Atoi(expText)
		if err != nil || e > 1<<20 || e < -(1<<20) {
			return 0, nil, dataErr("", "%s is out of range for decimal(%d,%d)", text, dec.Precision(), dec.Scale())
		}
		exp += e
	}
	digit := func(i int) byte {
		if i < len(intPart) {
			return intPart[i]
		}
		return frac[i-len(intPart)]
	}
	lo, hi := 0, len(intPart)+len(frac)
	for lo < hi && digit(lo) == '0' {
		lo++
	}
	for hi > lo && digit(hi-1) == '0' {
		hi--
		exp++
	}
	count := hi - lo
	if count == 0 {
		return 0, nil, nil
	}
	if places := -exp; places > dec.Scale() {
		return 0, nil, dataErr("", "%s has %d decimal places; decimal(%d,%d) takes %d",
			text, places, dec.Precision(), dec.Scale(), dec.Scale())
	}
	if whole, most := count+exp, dec.Precision()-dec.Scale(); whole > most {
		return 0, nil, dataErr("", "%s has %d integer digits; decimal(%d,%d) takes %d",
			text, whole, dec.Precision(), dec.Scale(), most)
	}
	zeros := exp + dec.Scale() // ≥ 0: the places are within the scale
	if count+zeros <= 18 {
		for i := lo; i < hi; i++ {
			small = small*10 + int64(digit(i)-'0')
		}
		for range zeros {
			small *= 10
		}
		if neg {
			small = -small
		}
		return small, nil, nil
	}
	var sb strings.Builder
	for i := lo; i < hi; i++ {
		sb.WriteByte(digit(i))
	}
	sb.WriteString(strings.Repeat("0", zeros))
	large, _ = new(big.Int).SetString(sb.String(), 10)
	if neg {
		large.Neg(large)
	}
	return 0, large, nil
}

// avroIsNumber reports whether text is a number as JSON writes it:
// -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
func avroIsNumber(text string) bool {
	i := 0
	if i < len(text) && text[i] == '-' {
		i++
	}
	digits := func() int {
		n := 0
		for i < len(text) && text[i] >= '0' && text[i] <= '9' {
			i++
			n++
		}
		return n
	}
	start := i
	if n := digits(); n == 0 || (n > 1 && text[start] == '0') {
		return false
	}
	if i < len(text) && text[i] == '.' {
		i++
		if digits() == 0 {
			return false
		}
	}
	if i < len(text) && (text[i] == 'e' || text[i] == 'E') {
		i++
		if i < len(text) && (text[i] == '+' || text[i] == '-') {
			i++
		}
		if digits() == 0 {
			return false
		}
	}
	return i == len(text)
}

// avroTwosComplement is n in the fewest bytes of big-endian two's
// complement (one byte for 0), as Java's BigInteger.toByteArray.
func avroTwosComplement(n *big.Int) []byte {
	if n.IsInt64() {
		i := n.Int64()
		size := 1
		for size < 8 && (i < -(1<<(8*size-1)) || i >= 1<<(8*size-1)) {
			size++
		}
		return binary.BigEndian.AppendUint64(nil, uint64(i))[8-size:]
	}
	if n.Sign() > 0 {
		raw := n.Bytes()
		if raw[0]&0x80 != 0 {
			raw = append([]byte{0}, raw...)
		}
		return raw
	}
	// -n - 1 has the bits of n inverted; its byte length plus room for the
	// sign bit is n's.
	m := new(big.Int).Neg(n)
	m.Sub(m, big.NewInt(1))
	size := m.BitLen()/8 + 1
	raw := m.FillBytes(make([]byte, size))
	for i := range raw {
		raw[i] = ^raw[i]
	}
	return raw
}

// avroToDate converts v for a date: the days since 1970-01-01.
func avroToDate(s *avro.PrimitiveSchema, v any) (int64, int, error) {
	var (
		t    time.Time
		rank = avroNatural
	)
	switch x := v.(type) {
	case time.Time:
		t = x
	case string:
		var err error
		if t, err = time.Parse(time.DateOnly, x); err != nil {
			if t, err = time.Parse(time.RFC3339Nano, x); err != nil {
				return 0, 0, dataErr("", "%s is not a date (2006-01-02)", avroQuote(x))
			}
		}
		rank = avroConverted
	default:
		return 0, 0, avroWant(s, v)
	}
	t = t.UTC()
	if t.Hour() != 0 || t.Minute() != 0 || t.Second() != 0 || t.Nanosecond() != 0 {
		return 0, 0, dataErr("", "%s has a time of day; a date takes midnight UTC", t.Format(time.RFC3339Nano))
	}
	days := t.Unix() / 86400
	if days < math.MinInt32 || days > math.MaxInt32 {
		return 0, 0, avroRange(s, t.Format(time.DateOnly))
	}
	return days, rank, nil
}

// avroToTime converts v for a timestamp.
func avroToTime(s *avro.PrimitiveSchema, v any) (time.Time, int, error) {
	switch x := v.(type) {
	case time.Time:
		return x, avroNatural, nil
	case string:
		t, err := time.Parse(time.RFC3339Nano, x)
		if err != nil {
			return time.Time{}, 0, dataErr("", "%s is not an RFC 3339 time", avroQuote(x))
		}
		return t, avroConverted, nil
	}
	return time.Time{}, 0, avroWant(s, v)
}

// avroToTimeOfDay converts v for a time-millis or time-micros.
func avroToTimeOfDay(s *avro.PrimitiveSchema, v any) (time.Duration, int, error) {
	var (
		d    time.Duration
		rank = avroConverted
	)
	switch x := v.(type) {
	case transform.Duration:
		d, rank = time.Duration(x), avroNatural
	case time.Duration:
		d = x
	case string:
		var err error
		if d, err = time.ParseDuration(x); err != nil {
			return 0, 0, dataErr("", "%s is not a duration (13h45m0s)", avroQuote(x))
		}
	default:
		return 0, 0, avroWant(s, v)
	}
	if d < 0 || d >= 24*time.Hour {
		return 0, 0, dataErr("", "%s is not a time of day: %s takes [0, 24h)", d, avroName(s))
	}
	return d, rank, nil
}

// avroIsUUID reports whether s is a uuid's text: 8-4-4-4-12 hex digits.
func avroIsUUID(s string) bool {
	if len(s) != 36 {
		return false
	}
	for i := range len(s) {
		c := s[i]
		switch i {
		case 8, 13, 18, 23:
			if c != '-' {
				return false
			}
		default:
			if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F') {
				return false
			}
		}
	}
	return true
}

// avroWant is the error of a value of the wrong type for s.
func avroWant(s avro.Schema, v any) error {
	want := avroName(s)
	switch t := avroDeref(s).(type) {
	case *avro.RecordSchema:
		want = "record " + t.FullName()
	case *avro.EnumSchema:
		want = "enum " + t.FullName()
	case *avro.FixedSchema:
		if t.Logical() == nil {
			want = fmt.Sprintf("fixed %s (%d bytes)", t.FullName(), t.Size())
		}
	}
	return dataErr("", "want %s, got %s", want, avroDescribe(v))
}

// avroRange is the error of a number out of s's range.
func avroRange(s avro.Schema, text string) error {
	return dataErr("", "%s is out of range for %s", text, avroName(s))
}

// avroName names a schema in messages: a named type's full name, a
// logical type (with a decimal's precision and scale), else the type.
func avroName(s avro.Schema) string {
	switch t := avroDeref(s).(type) {
	case *avroResolved:
		return avroName(t.reader)
	case *avro.UnionSchema:
		names := make([]string, len(t.Types()))
		for i, b := range t.Types() {
			names[i] = avroName(b)
		}
		return "[" + strings.Join(names, ", ") + "]"
	case avro.LogicalTypeSchema:
		if dec, ok := t.Logical().(*avro.DecimalLogicalSchema); ok {
			return fmt.Sprintf("decimal(%d,%d)", dec.Precision(), dec.Scale())
		}
		if n, ok := t.(avro.NamedSchema); ok {
			return n.FullName()
		}
		if ls := t.Logical(); ls != nil {
			return string(ls.Type())
		}
	case avro.NamedSchema:
		return t.FullName()
	}
	return string(s.Type())
}

// avroDescribe describes a value of the tree in messages.
func avroDescribe(v any) string {
	switch x := v.(type) {
	case nil:
		return "null"
	case string:
		return "string " + avroQuote(x)
	case json.Number:
		return "number " + string(x)
	case bool, int64, int, int32, int16, int8, uint64, uint, uint32, uint16, uint8:
		return fmt.Sprintf("%T %v", x, x)
	case float64, float32:
		return fmt.Sprintf("%T %s", x, strconv.FormatFloat(avroFloat64(x), 'g', -1, 64))
	case []byte:
		return fmt.Sprintf("%d bytes", len(x))
	case time.Time:
		return "time " + x.Format(time.RFC3339Nano)
	case transform.Duration, time.Duration:
		return fmt.Sprintf("duration %v", x)
	case map[string]any:
		return "an object"
	case []any:
		return "an array"
	}
	return fmt.Sprintf("a %T", v)
}

// avroQuote quotes a string for a message, cut to its first 64 bytes.
func avroQuote(s string) string {
	if len(s) > 64 {
		return strconv.Quote(s[:64]) + "…"
	}
	return strconv.Quote(s)
}

// avroDeref is the named schema a reference stands for, or s.
func avroDeref(s avro.Schema) avro.Schema {
	if r, ok := s.(*avro.RefSchema); ok {
		return r.Schema()
	}
	return s
}

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
