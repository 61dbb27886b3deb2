package format

import (
	"encoding/json"
	"errors"
	"io"
	"math"
	"math/big"
	"reflect"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/hamba/avro/v2"

	"github.com/sharerelay/sharerelay/transform"
)

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
