package transform

import (
	"fmt"
	"maps"
	"slices"
	"time"
)

// Spec is the YAML form of one step of a pipeline's transform chain. Type
// selects the built-in (see Registry); each type uses only some of the other
// fields, and Validate reports a field set for a type that does not use it.
type Spec struct {
	// Type is the name of the built-in transform: set, map, rename,
	// remove, header, filter, route, split, copy, fail, delay.
	Type string `yaml:"type" json:"type"`
	// Name optionally names the step in errors and dead-letter headers;
	// default "<index>:<type>".
	Name string `yaml:"name,omitempty" json:"name,omitempty"`

	// Field is a dotted path into the record's JSON value ("order.id").
	// Used by set, rename, remove, route, split.
	Field string `yaml:"field,omitempty" json:"field,omitempty"`
	// To is the new dotted path for rename; for split, where each element
	// goes in a copy of the record's value (without To, each element
	// becomes the whole value).
	To string `yaml:"to,omitempty" json:"to,omitempty"`
	// Value is the JSON value for set (any YAML scalar, list or map) or the
	// string value for header.
	Value any `yaml:"value,omitempty" json:"value,omitempty"`
	// Expr is a CEL expression over the record (see the package doc for
	// its variables): for set, the value stored at Field (instead of
	// Value); for map, the record's new value; for route, the topic to
	// send the record to, or a list of topics (one record each); "", null
	// or an empty list choose no route.
	Expr string `yaml:"expr,omitempty" json:"expr,omitempty"`
	// Header is the header name for header.
	Header string `yaml:"header,omitempty" json:"header,omitempty"`

	// When restricts the step to records matching the condition. For
	// filter it is the condition itself (required); for fail it says which
	// records fail (required); for the others it is optional and a record
	// that does not match passes through unchanged.
	When *Condition `yaml:"when,omitempty" json:"when,omitempty"`
	// Action is what filter does with matching records: "drop" (default)
	// or "keep" (drop every record that does not match).
	Action string `yaml:"action,omitempty" json:"action,omitempty"`

	// Routes maps a field's value (as text) to an output topic, for route.
	Routes map[string]string `yaml:"routes,omitempty" json:"routes,omitempty"`
	// Default is the topic for records no route matches (a value not in
	// Routes, no case true, an Expr choosing no route); empty leaves the
	// record's topic as it is.
	Default string `yaml:"default,omitempty" json:"default,omitempty"`
	// Topics, for route with Expr, lists every topic the expression may
	// return: any other result dead-letters the record, so the topics a
	// pipeline writes are known before it runs. For copy, the topics the
	// record is copied to.
	Topics []string `yaml:"topics,omitempty" json:"topics,omitempty"`
	// Cases, for route, are tried in order: the first whose Expr is true
	// sends the record to its topic or topics.
	Cases []RouteCase `yaml:"cases,omitempty" json:"cases,omitempty"`

	// Kind is how fail fails: "retry" (release, dead letter on the last
	// attempt) or "permanent" (dead letter at once).
	Kind string `yaml:"kind,omitempty" json:"kind,omitempty"`
	// Reason is the error message fail reports (and the dead-letter
	// header carries).
	Reason string `yaml:"reason,omitempty" json:"reason,omitempty"`

	// Duration is how long delay sleeps (honouring cancellation): a way to
	// model slow work in tests and demos.
	Duration time.Duration `yaml:"duration,omitempty" json:"duration,omitempty"`
}

// RouteCase is one case of a route step: records for which Expr (a CEL
// bool expression) is true go to Topic, or to every one of Topics (one
// record each). Set exactly one of Topic and Topics.
type RouteCase struct {
	Expr   string   `yaml:"expr" json:"expr"`
	Topic  string   `yaml:"topic,omitempty" json:"topic,omitempty"`
	Topics []string `yaml:"topics,omitempty" json:"topics,omitempty"`
}

// Condition selects records. Every predicate that is set must hold (AND).
// Exactly one of Field or Header names what is tested, unless only Expr
// and MaxDeliveryCount / MinDeliveryCount are set.
type Condition struct {
	// Expr is a CEL expression that must be true (see the package doc
	// for its variables). An expression that does not use value does not
	// parse the record's value.
	Expr string `yaml:"expr,omitempty" json:"expr,omitempty"`
	// Field is a dotted path into the JSON value.
	Field string `yaml:"field,omitempty" json:"field,omitempty"`
	// Header is a header name.
	Header string `yaml:"header,omitempty" json:"header,omitempty"`

	// Equals holds when the value's text equals it (a JSON string without
	// quotes, a number as written, true/false/null).
	Equals *string `yaml:"equals,omitempty" json:"equals,omitempty"`
	// In holds when the value's text is one of these.
	In []string `yaml:"in,omitempty" json:"in,omitempty"`
	// Exists holds when the field/header is present (true) or absent
	// (false).
	Exists *bool `yaml:"exists,omitempty" json:"exists,omitempty"`
	// Modulo and Remainder: the value is an integer n with
	// n % Modulo == Remainder. Modulo must be > 0 when set.
	Modulo    int64 `yaml:"modulo,omitempty" json:"modulo,omitempty"`
	Remainder int64 `yaml:"remainder,omitempty" json:"remainder,omitempty"`

	// MaxDeliveryCount holds when the record's delivery count is at most
	// this (0 = not tested). MinDeliveryCount likewise, at least.
	MaxDeliveryCount int32 `yaml:"max_delivery_count,omitempty" json:"max_delivery_count,omitempty"`
	MinDeliveryCount int32 `yaml:"min_delivery_count,omitempty" json:"min_delivery_count,omitempty"`
}

// FieldError is one problem in a Spec, with Path relative to the spec
// ("field", "when.modulo"). The config package turns Path into file:line.
// Line and Col, when not 0, locate the problem within the value's text
// (1-based): where an expression fails to parse or type-check.
type FieldError struct {
	Path      string
	Msg       string
	Line, Col int
	// Snippet, for an error in an expression, is the line of the
	// expression at Line and, below it, a caret under Col; "" for other
	// errors. Error leaves it out: config shows it under the message.
	Snippet string
}

// Error returns "path: message", without the line and column, which the
// config package turns into file:line:col.
func (e FieldError) Error() string { return e.Path + ": " + e.Msg }

// Target is a topic a step may send records to, with its path in the
// spec ("routes.eu", "topics[1]", "cases[0].topic").
type Target struct {
	Path, Topic string
}

// Targets lists every topic s may send records to — the values of Routes
// (by sorted key), Default, Topics, and the topics of Cases — in that
// order, so that the topics a pipeline writes are known before it runs.
// An unset Default or case Topic is left out; an empty name in a map or
// list is kept (and is invalid).
func (s Spec) Targets() []Target {
	var ts []Target
	add := func(path, topic string) { ts = append(ts, Target{Path: path, Topic: topic}) }
	for _, k := range slices.Sorted(maps.Keys(s.Routes)) {
		add("routes."+k, s.Routes[k])
	}
	if s.Default != "" {
		add("default", s.Default)
	}
	for i, t := range s.Topics {
		add(fmt.Sprintf("topics[%d]", i), t)
	}
	for i, c := range s.Cases {
		if c.Topic != "" {
			add(fmt.Sprintf("cases[%d].topic", i), c.Topic)
		}
		for j, t := range c.Topics {
			add(fmt.Sprintf("cases[%d].topics[%d]", i, j), t)
		}
	}
	return ts
}
