package transform

import (
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
// string, map[string]any and []any only. A tree a step builds or changes
// is written back in the output's format when the chain ends.

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
