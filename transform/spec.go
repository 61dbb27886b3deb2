package transform

import "time"

// Spec is the YAML form of one step of a pipeline's transform chain. Type
// selects the built-in (see Registry); each type uses only some of the other
// fields, and Validate reports a field set for a type that does not use it.
type Spec struct {
	// Type is the name of the built-in transform: set, rename, remove,
	// header, filter, route, fail, delay.
	Type string `yaml:"type" json:"type"`
	// Name optionally names the step in errors and dead-letter headers;
	// default "<index>:<type>".
	Name string `yaml:"name,omitempty" json:"name,omitempty"`

	// Field is a dotted path into the record's JSON value ("order.id").
	// Used by set, rename, remove, route.
	Field string `yaml:"field,omitempty" json:"field,omitempty"`
	// To is the new dotted path for rename.
	To string `yaml:"to,omitempty" json:"to,omitempty"`
	// Value is the JSON value for set (any YAML scalar, list or map) or the
	// string value for header.
	Value any `yaml:"value,omitempty" json:"value,omitempty"`
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
	// Default is the topic for values not in Routes; empty keeps the
	// pipeline's default output topic.
	Default string `yaml:"default,omitempty" json:"default,omitempty"`

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

// Condition selects records. Every predicate that is set must hold (AND).
// Exactly one of Field or Header names what is tested, unless only
// MaxDeliveryCount / MinDeliveryCount are set.
type Condition struct {
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
type FieldError struct {
	Path string
	Msg  string
}

func (e FieldError) Error() string { return e.Path + ": " + e.Msg }
