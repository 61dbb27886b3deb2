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
//   - set: set Field (a dotted path, intermediate objects created) to Value.
//   - rename: move Field to To; a missing Field leaves the record unchanged.
//   - remove: delete Field; a missing Field leaves the record unchanged.
//   - header: append header Header with Value (string, number or bool) as
//     text.
//   - filter: drop records matching When (Action "drop", the default) or
//     not matching it (Action "keep").
//   - route: set the output Topic from Routes[text of Field], else Default
//     if set, else leave it.
//   - fail: records matching When fail with class "fail", retryable (Kind
//     "retry", the default) or permanent (Kind "permanent").
//   - delay: sleep Duration, honouring cancellation.
//
// All but filter and fail take an optional When; a record that does not
// match it passes through unchanged. See Condition.Match for what a
// condition tests and Registry for how JSON values are decoded and
// re-encoded (numbers are kept exactly as written; object keys come out
// sorted).
//
// # Validation and naming
//
// Spec.Validate reports every problem of a spec, not just the first; Build
// validates all specs before building any, reports problems with paths
// "transforms[i].<field>" (i is 0-based), and names each step Spec.Name or
// "<i>:<type>" with the same 0-based index (e.g. "0:set").
package transform
