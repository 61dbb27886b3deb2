// Package config loads a relay pipeline from a YAML file.
//
// Loading happens in fixed stages, in the manner of Prometheus and NATS:
//
//  1. The file is parsed into a yaml.Node tree (go.yaml.in/yaml/v3). A
//     syntax error is reported alone, at its line and column (which the
//     loader finds, the library giving neither reliably), with the line
//     and a caret under the column, and a hint for the usual mistakes: an
//     unquoted ${VAR} inside [ ] or { }, text after a closing quote, a
//     backslash escape in double quotes, ": " in a plain value, a tab or
//     a line indented wrongly.
//  2. Every scalar value — never a key — is interpolated from the
//     environment: ${VAR} is the variable's value and an error if it is
//     unset; ${VAR:-default} is the default when VAR is unset or empty;
//     $${ is a literal ${. A plain (unquoted) scalar is typed after
//     interpolation, so "workers: ${WORKERS:-4}" is the integer 4.
//  3. The tree is walked against the Pipeline struct's yaml tags: an
//     unknown or duplicated key, or a value of the wrong kind ("workers:
//     four", "poll_timeout: 10"), is an error with its line and column.
//     Values of type any (a set transform's value) accept anything.
//  4. The tree is decoded into a Pipeline.
//  5. A brokers entry holding several comma-separated brokers (the usual
//     form of $KAFKA_BOOTSTRAP_SERVERS) is split into one entry each.
//     Defaults fill in every field the file leaves out (see SetDefaults).
//     A field written explicitly keeps its value, so "workers: 0" is
//     reported rather than silently becoming 1.
//  6. One validation pass checks every field and every transform step,
//     compiling and type-checking the steps' CEL expressions. An error in
//     an expression is reported at its line and column within the file
//     (in a literal or folded block too), not only at the expression's
//     start, with the expression's line and a caret under the column. It
//     reads the files the pipeline names (TLS certificates and
//     keys, an OAUTHBEARER token file), so that a missing or unreadable
//     one is reported with the rest, but never dials a broker.
//
// All problems found by stages 2 to 6 are reported together, as an Errors
// value whose lines read
//
//	<file>:<line>:<col>: <path>: <message>
//
// (an error with a caret adds two lines, indented) ordered by position, where path is the YAML path of the value
// ("source.topics[0]", "transforms[2].when.modulo"). A missing required
// field is reported at the key of the mapping that should hold it.
//
// The same pass finds warnings: settings that work but weaken the pipeline
// (PLAIN or OAUTHBEARER without TLS, certificates not verified, TLS
// settings ignored because TLS is off). They are positioned like errors and
// returned in Pipeline.Warnings of a valid pipeline, for the caller to
// print.
//
// Secrets stay out of sight. An error about a value read from the
// environment names the reference instead of the value ("brokers[0]: the
// value of ${KAFKA_BOOTSTRAP_SERVERS} is not host:port"); credentials
// embedded in a value written in the file are masked ("[redacted]@host:9092");
// and the values of Secret fields (sasl.password, sasl.client_secret) never
// appear in an error, a warning, a log line (Pipeline.LogValue) or a
// marshalled pipeline.
//
// A pipeline built in Go rather than loaded can use SetDefaults and
// Validate directly; its errors carry a path but no position.
//
// Other YAML files of the relay — a pipeline's test files — are read as
// strictly, with the same positions and "did you mean", by DecodeStrict.
package config
