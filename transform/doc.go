// Package transform holds the per-record processing steps of a pipeline.
//
// A Transform takes one record and returns zero or more records (zero means
// the record is filtered out), or an error that tells the relay what to do
// with the source record:
//
//   - a retryable error (Retry, or any error not marked otherwise) makes the
//     relay RELEASE the record so the broker delivers it again, until the
//     pipeline's last allowed attempt, when it goes to the dead-letter topic;
//   - a permanent error (Permanent) sends the record to the dead-letter topic
//     at once — the relay's equivalent of a share-group REJECT, except that
//     nothing is ever dropped silently.
//
// A panic inside a transform is recovered by Chain and treated as a permanent
// error for that record only.
//
// Transforms are built from Specs (the YAML form) by Build; the set of
// built-in types is the explicit Registry map, so what is compiled in is
// what you see.
//
// # Built-in types
//
//   - set: set Field (a dotted path, intermediate objects created) to Value,
//     or to the result of the expression Expr.
//   - map: replace the value by the result of the expression Expr (bytes
//     as they are, anything else as JSON).
//   - rename: move Field to To; a missing Field leaves the record unchanged.
//   - remove: delete Field; a missing Field leaves the record unchanged.
//   - header: append header Header (Action "append", the default), or
//     replace every header of that name ("set"), with Value (string,
//     number or bool) as text or the result of Expr; or remove them
//     ("remove").
//   - key: set the output's key to the value of Field or the result of
//     Expr, or remove it (Action "remove").
//   - filter: drop records matching When (Action "drop", the default) or
//     not matching it (Action "keep").
//   - route: set the output Topic from Routes[text of Field]; or from the
//     expression Expr, which returns a topic or a list of topics (one
//     record each) — "", null or [] for no route — and may only return
//     topics listed in Topics; or from
//     the first of Cases whose expression is true. A record no route
//     matches goes to Default if set, else keeps its topic.
//   - split: one record per element of the JSON array at Field; the
//     element becomes the value, or with To is set at To in a copy of the
//     value without Field.
//   - copy: the record, then one copy of it for each of Topics.
//   - fail: records matching When fail with class "fail", retryable (Kind
//     "retry", the default) or permanent (Kind "permanent").
//   - delay: sleep Duration, honouring cancellation.
//
// All but filter and fail take an optional When; a record that does not
// match it passes through unchanged. A When may hold an Expr, alone or
// with the other tests. See Condition.Match for what a
// condition tests and Registry for how JSON values are decoded and
// re-encoded (numbers are kept exactly as written; object keys come out
// sorted).
//
// # Expressions
//
// Expressions are CEL (https://cel.dev): the standard library, the
// strings, math and encoders extensions, and optional values
// (value.?order.?id.orValue(0)). They are compiled and type-checked when
// the chain is built (and by Spec.Validate), and evaluated with a cost
// limit (Options.CostLimit) so that no expression can stall a worker. A
// compile error is a FieldError at the line and column of the mistake,
// with the expression's line and a caret under it (FieldError.Snippet)
// and a hint for the usual mistakes: = for ==, and/or/not for &&/||/!,
// a string quoted wrongly, a name that is not one of the variables. The
// variables are:
//
//	value           dyn                  the value decoded (see value.go): JSON by default
//	value_bytes     bytes                the value as it is (as JSON once a step changed it)
//	key             string               the key as text (dyn, its decoded value, with Options.StructuredKeys)
//	key_bytes       bytes                the key as it is (its text once a step changed it)
//	headers         map(string, string)  the headers; for a repeated name, the last
//	topic           string               the source record's topic
//	partition       int                  its partition
//	offset          int                  its offset
//	delivery_count  int                  its delivery count (1 on the first delivery)
//	timestamp       google.protobuf.Timestamp  its timestamp
//
// Variables are bound lazily: an expression that does not use value never
// parses it, so conditions on the key, headers or source work on values
// that are not JSON. When an expression does use value and it is not
// JSON, the record fails with a permanent "json" error, as with the other
// steps.
//
// JSON numbers are doubles, as in CEL's own JSON mapping, whether written
// 5 or 5.0 (integers beyond 2^53, which a double cannot hold exactly, are
// ints or uints). Comparisons mix types freely (value.qty == 5, value.qty
// > 2 hold for 5.0), but arithmetic does not: write value.qty + 1.0, or
// int(value.qty) + 1, and int(value.id) % 7. A missing field or header is
// an error (value.missing, headers.missing): test it with
// has(value.missing) or "missing" in headers, or read it with
// value.?missing.orValue(default).
//
// An expression that fails when evaluated — a missing field, a type
// mismatch, the cost limit — fails the record with a permanent error of
// class "cel", whose message names the expression ("when.expr",
// "cases[1].expr"); the relay dead-letters it with the step's name.
//
// Results stored in JSON (set, map) are converted as follows: null, bool,
// int, uint, double (not NaN or infinite), string, list and map with
// string keys as themselves; bytes as base64 text, a timestamp as RFC
// 3339 text, a duration as Go duration text ("1m30s").
//
// # Fan-out
//
// split, copy and a route to several topics return more than one record;
// every later step runs on each of them. The relay numbers the records
// one source record becomes (headers sharerelay.source.index and
// sharerelay.source.count), so that tools can tell a fan-out from a
// duplicate.
//
// # Validation and naming
//
// Spec.Validate reports every problem of a spec, not just the first; Build
// validates all specs before building any, reports problems with paths
// "transforms[i].<field>" (i is 0-based), and names each step Spec.Name or
// "<i>:<type>" with the same 0-based index (e.g. "0:set").
package transform
