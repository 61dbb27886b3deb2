package transform

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"time"
)

// The value a step sees.
//
// A record's value and key are bytes on the wire; a step that reads them
// (a field path, an expression's value or key, a condition on a field)
// sees them decoded, as a tree of these Go types:
//
//	nil                  null
//	bool                 a boolean
//	json.Number          a JSON number, exactly as written; a decimal
//	int64                an integer of a format that has them (Avro int
//	                     and long, Protobuf's signed integers)
//	uint64               Protobuf's unsigned integers
//	float64              a float or double
//	string               a string, an enum symbol, a uuid
//	[]byte               bytes, fixed
//	time.Time            a timestamp or a date, in UTC
//	Duration             a time of day or a span of time
//	map[string]any       an object, a record, a message, a map
//	[]any                an array, a repeated field
//
// How each format's types become these, and how CEL and dotted paths see
// them, is in docs/formats.md; JSON decodes to nil, bool, json.Number,
// string, map[string]any and []any only. The tree is decoded once, when a
// step first reads it, and shared by the steps after; a step that changes
// it changes the tree, and the chain writes it back in the output's format
// when it ends (Chain.Apply). A value no step changed keeps its bytes.

// Duration is a time of day (Avro's time-millis and time-micros, from
// midnight) or a span of time (Protobuf's google.protobuf.Duration) in a
// value. It is a type of its own so that JSON writes it as Go's duration
// text ("1h30m0s"), as for a CEL duration, rather than as nanoseconds.
type Duration time.Duration

// MarshalJSON writes d as its text, e.g. "1h30m0s".
func (d Duration) MarshalJSON() ([]byte, error) {
	return []byte(`"` + time.Duration(d).String() + `"`), nil
}

// String returns d as Go's duration text.
func (d Duration) String() string { return time.Duration(d).String() }

// Decoder reads a record's value or key bytes as a value tree. A failure
// is classified (Permanent for bytes that do not decode, Hold for a
// cause outside the record).
type Decoder interface {
	Decode(ctx context.Context, b []byte) (any, error)
}

// Origin is where a value or key came from: the bytes the source record
// had and the decoder that reads them. An encoder that writes with the
// source's own schema reads it from there.
type Origin struct {
	Decoder Decoder
	Bytes   []byte
}

// Validator is a Decoder that checks what it reads (JSON Schema values
// against their schema): the chain reads every record's value with it,
// even one no step reads, so that an invalid value is never passed
// through unchecked.
type Validator interface {
	Decoder
	Validates() bool
}

// Encoder writes a value tree as a record's value or key bytes.
type Encoder interface {
	// Encode writes v, which came from from (changed by a step, or read
	// in another format than the output's).
	Encode(ctx context.Context, v any, from Origin) ([]byte, error)
	// Keep reports whether the bytes of from, which no step changed, are
	// written as they are: no decode, no encode. Pass-through costs
	// nothing when the output's format and schema are the source's.
	Keep(ctx context.Context, from Origin) (bool, error)
}

// Formats says how a pipeline reads the values and keys of its source
// topics and writes those of its output topics (package format). Without
// Formats a chain reads values as JSON and keys as text (JSON and Text)
// and writes them the same way.
type Formats interface {
	// Source returns the decoders of topic's values and keys.
	Source(topic string) (value, key Decoder)
	// Output returns the encoders of topic's values and keys; topic ""
	// is the pipeline's output topic.
	Output(topic string) (value, key Encoder)
}

// content states: what a content's tree and bytes hold.
const (
	stBytes   uint8 = iota // only the bytes: not decoded yet
	stDecoded              // the tree is the bytes decoded
	stChanged              // the tree is the truth: a step changed it
	stLiteral              // bytes a step set (map to bytes): written as they are
)

// content is a record's value or key: its bytes and, once a step has
// read it, its tree.
type content struct {
	dec   Decoder
	tree  any
	err   error // the decode's failure, kept so that a record fails once
	state uint8
}

// value returns r's value as a tree, decoding it on first use with the
// source's decoder (JSON without one). Bytes a map step set are decoded as
// JSON.
func (r *Record) value(ctx context.Context) (any, error) {
	return r.val.get(ctx, r.Value, JSON)
}

// object returns r's value as an object (map), for the steps that work on
// fields.
func (r *Record) object(ctx context.Context) (map[string]any, error) {
	x, err := r.value(ctx)
	if err != nil {
		return nil, notObject(err)
	}
	obj, ok := x.(map[string]any)
	if !ok {
		return nil, notObject(fmt.Errorf("got %s", jsonKind(x)))
	}
	return obj, nil
}

// setValue makes v the record's value.
func (r *Record) setValue(v any) { r.val.set(v) }

// setValueBytes makes b the record's value, written as it is unless a
// later step changes it.
func (r *Record) setValueBytes(b []byte) {
	r.Value = b
	r.val = content{dec: r.val.dec, state: stLiteral}
}

// keyValue returns r's key as a tree: with the default (text) decoder
// the key's text, or nil for a null key.
func (r *Record) keyValue(ctx context.Context) (any, error) {
	return r.key.get(ctx, r.Key, Text)
}

// setKey makes v the record's key (nil: no key).
func (r *Record) setKey(v any) { r.key.set(v) }

func (c *content) get(ctx context.Context, b []byte, def Decoder) (any, error) {
	if c.state == stBytes || c.state == stLiteral {
		if c.err != nil {
			return nil, c.err
		}
		dec := c.dec
		if dec == nil || c.state == stLiteral {
			dec = def
		}
		x, err := dec.Decode(ctx, b)
		if err != nil {
			if Classify(err).Kind != KindHold {
				c.err = err
			}
			return nil, err
		}
		c.tree, c.state = x, stDecoded
	}
	return c.tree, nil
}

func (c *content) set(v any) {
	c.tree, c.err, c.state = v, nil, stChanged
}

// changed reports whether a step changed the content (its bytes are
// stale).
func (c *content) changed() bool { return c.state == stChanged }

// clone returns a copy of c that shares no mutable memory with it.
func (c content) clone() content {
	if c.state == stDecoded || c.state == stChanged {
		c.tree = cloneTree(c.tree)
	}
	return c
}

// bytesNow returns the content's bytes as they stand: b while no step
// changed it, else the new tree's text for a key (valueText) or JSON for
// a value (what value_bytes and key_bytes show).
func (c *content) bytesNow(b []byte, key bool) []byte {
	if c.state != stChanged {
		return b
	}
	if key {
		if c.tree == nil {
			return nil
		}
		return []byte(valueText(c.tree))
	}
	out, err := encodeJSON(c.tree)
	if err != nil {
		return nil
	}
	return out
}

// cloneTree returns a deep copy of a value tree: maps, slices and bytes
// are copied, the immutable rest shared.
func cloneTree(v any) any {
	switch x := v.(type) {
	case map[string]any:
		m := make(map[string]any, len(x))
		for k, e := range x {
			m[k] = cloneTree(e)
		}
		return m
	case []any:
		s := make([]any, len(x))
		for i, e := range x {
			s[i] = cloneTree(e)
		}
		return s
	case []byte:
		return bytes.Clone(x)
	}
	return v
}

// The codecs of the formats a chain knows without package format: JSON
// values, text and bytes.
var (
	// JSON reads and writes a value as one JSON value (numbers kept as
	// written, json.Number). Unchanged JSON passes through.
	JSON = jsonCodec{}
	// Text reads and writes a value or key as text: a string, or null for
	// no bytes (a null key). A tree that is not a string is written as its
	// text (a number as written, an object as JSON).
	Text = textCodec{}
	// Bytes reads and writes a value or key as bytes; a string is written
	// as its UTF-8 bytes.
	Bytes = bytesCodec{}
)

type jsonCodec struct{}

// Decode decodes b as exactly one JSON value.
func (jsonCodec) Decode(_ context.Context, b []byte) (any, error) { return decodeJSON(b) }

// Encode writes v as compact JSON (keys sorted, no HTML escaping).
func (jsonCodec) Encode(_ context.Context, v any, _ Origin) ([]byte, error) {
	b, err := encodeJSON(v)
	if err != nil {
		return nil, Permanent("json", fmt.Errorf("encoding the value as JSON: %w", err))
	}
	return b, nil
}

// Keep keeps bytes JSON read.
func (jsonCodec) Keep(_ context.Context, from Origin) (bool, error) {
	return from.Decoder == Decoder(JSON), nil
}

type textCodec struct{}

// Decode returns b as a string, nil for no bytes.
func (textCodec) Decode(_ context.Context, b []byte) (any, error) {
	if b == nil {
		return nil, nil
	}
	return string(b), nil
}

// Encode writes a string as it is, nil as no bytes, bytes as they are,
// anything else as its text (valueText).
func (textCodec) Encode(_ context.Context, v any, _ Origin) ([]byte, error) {
	switch x := v.(type) {
	case nil:
		return nil, nil
	case string:
		return []byte(x), nil
	case []byte:
		return x, nil
	}
	return []byte(valueText(v)), nil
}

// Keep keeps bytes read as text or as bytes.
func (textCodec) Keep(_ context.Context, from Origin) (bool, error) {
	return from.Decoder == Decoder(Text) || from.Decoder == Decoder(Bytes), nil
}

type bytesCodec struct{}

// Decode returns b itself (nil for no bytes).
func (bytesCodec) Decode(_ context.Context, b []byte) (any, error) {
	if b == nil {
		return nil, nil
	}
	return b, nil
}

// Encode writes bytes as they are, a string as its UTF-8 bytes, nil as
// no bytes; anything else is the record's fault.
func (bytesCodec) Encode(_ context.Context, v any, _ Origin) ([]byte, error) {
	switch x := v.(type) {
	case nil:
		return nil, nil
	case []byte:
		return x, nil
	case string:
		return []byte(x), nil
	}
	return nil, Permanent("bytes", fmt.Errorf("the value is %s; the bytes format takes bytes or a string", jsonKind(v)))
}

// Keep keeps bytes read as bytes or as text.
func (bytesCodec) Keep(_ context.Context, from Origin) (bool, error) {
	return from.Decoder == Decoder(Bytes) || from.Decoder == Decoder(Text), nil
}

// valueText is the text Condition and route compare and a text key is
// written as: a string without quotes, a number as written, true, false
// or null, bytes as base64, a time in RFC 3339, a duration as Go's text,
// and objects and arrays as their compact JSON encoding (keys sorted).
func valueText(v any) string {
	switch v := v.(type) {
	case string:
		return v
	case json.Number:
		return string(v)
	case bool:
		return strconv.FormatBool(v)
	case nil:
		return "null"
	case int64:
		return strconv.FormatInt(v, 10)
	case uint64:
		return strconv.FormatUint(v, 10)
	case time.Time:
		return v.UTC().Format(time.RFC3339Nano)
	case Duration:
		return v.String()
	}
	b, err := encodeJSON(v)
	if err != nil {
		return ""
	}
	if s := string(b); len(s) >= 2 && s[0] == '"' {
		// bytes (base64) and floats written as JSON strings: unquoted
		var t string
		if json.Unmarshal(b, &t) == nil {
			return t
		}
	}
	return string(b)
}
