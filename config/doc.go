// Package config loads a relay pipeline from a YAML file.
//
// Loading happens in fixed stages, in the manner of Prometheus and NATS:
//
//  1. The file is parsed into a yaml.Node tree (go.yaml.in/yaml/v3).
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
//     start.
//
// All problems found by stages 2 to 6 are reported together, as an Errors
// value whose lines read
//
//	<file>:<line>:<col>: <path>: <message>
//
// ordered by position, where path is the YAML path of the value
// ("source.topics[0]", "transforms[2].when.modulo"). A missing required
// field is reported at the key of the mapping that should hold it.
//
// A pipeline built in Go rather than loaded can use SetDefaults and
// Validate directly; its errors carry a path but no position.
package config
