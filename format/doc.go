// Package format reads and writes the values and keys of records in the
// formats Kafka carries: JSON, Avro, Protobuf and JSON Schema in the
// Confluent wire format (a zero byte, the schema's 4-byte id in the
// registry, for Protobuf the message indexes, then the encoded value),
// and plain strings and bytes.
//
// The transforms see values only (transform.Record's value tree); the
// codecs here turn bytes into that tree and back, one file a format:
// avro.go (github.com/hamba/avro/v2), protobuf.go
// (google.golang.org/protobuf with github.com/bufbuild/protocompile for
// .proto text), jsonschema.go (github.com/santhosh-tekuri/jsonschema/v6).
// The schema registry client and its cache are in registry.go
// (github.com/twmb/franz-go/pkg/sr); which codec a topic's values and
// keys take is chosen once, when the relay starts, from the pipeline
// file (set.go).
//
// # Failures
//
// A failure is either the record's or not:
//
//   - bytes that do not decode, a schema id the registry does not know, a
//     value that does not fit the schema it is written with: a DataError,
//     which the relay dead-letters (transform.Permanent, with the field
//     path and the reason);
//   - a registry that cannot be reached, times out, answers with a server
//     error or refuses the relay's credentials: not the record's fault.
//     The relay holds such records (transform.Hold), never dead-letters
//     them and never spends their deliveries, and reports itself not
//     ready with "schema registry unavailable".
//
// # The value tree
//
// Every format decodes to the tree described on transform's value.go and
// encodes from it. Avro: null nil; boolean bool; int and long int64;
// float and double float64; string and enum string; bytes and fixed
// []byte; decimal (on bytes or fixed) json.Number holding the exact
// decimal text with scale digits ("12.30"); date and timestamp-* and
// local-timestamp-* time.Time in UTC; time-millis and time-micros
// transform.Duration from midnight; uuid string; record and map
// map[string]any; array []any; a union the value of its branch.
//
// Protobuf: double and float float64; int32, int64, sint32, sint64,
// sfixed32, sfixed64 int64; uint32, uint64, fixed32, fixed64 uint64;
// bool; string; bytes []byte; an enum its value's name (the number, as
// int64, when the schema has no name for it); a message map[string]any
// by the .proto field names, with every field that has no presence
// (proto3 scalars, repeated, maps) and every field with presence that is
// set; a map map[string]any keyed by the key's text; repeated []any; a
// oneof its set field alone. Well-known types: google.protobuf.Timestamp
// time.Time; Duration transform.Duration; the wrappers (Int64Value and
// the others) their value; Struct map[string]any; Value its JSON value;
// ListValue []any; Empty an empty map.
//
// JSON Schema: the JSON value (json.Number for numbers).
//
// Encoding takes the same types, and the lossless others: an integral
// float64 or json.Number for an integer, an integer for a float, a
// json.Number or a number's text for a decimal (refused when it has more
// decimal places than the scale), RFC 3339 text for a timestamp, Go's
// duration text for a duration, base64 text for bytes (as JSON writes
// bytes), a name or a number for an enum. Null leaves a Protobuf field
// unset, except a google.protobuf.Value, which holds it (as it decodes).
// A field the schema does not have, a required field missing, a value of
// another type, a number out of range: a DataError naming the path.
package format
