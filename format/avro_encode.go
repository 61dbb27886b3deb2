package format

import (
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/big"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/hamba/avro/v2"

	"github.com/sharerelay/sharerelay/transform"
)

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
