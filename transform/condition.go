package transform

import (
	"context"
	"fmt"
	"slices"
)

// Match reports whether r satisfies every predicate set in c. A nil
// Condition matches every record.
//
// What is tested:
//
//   - Field: the value at the dotted path in r.Value, which must be a JSON
//     object. If it is not, Match returns a permanent error of class "json",
//     whatever the other predicates say (so the outcome never depends on
//     the delivery count). A path through a non-object counts as absent; a
//     JSON null counts as present, with text "null".
//   - Header: the last header with that name (see Record.Header).
//   - Expr: a CEL expression that must evaluate to true. It is evaluated
//     last, and only when every other predicate holds. An evaluation error
//     is a permanent error of class "cel" (class "json" when it needs the
//     value and the value is not JSON).
//
// Equals and In compare the value's text: a JSON string without quotes, a
// number exactly as written (1.0 is not 1), true/false/null, and an object
// or array as its compact JSON with sorted keys; a header's bytes as they
// are. An absent field or header fails Equals, In and Modulo.
//
// Modulo/Remainder hold when the text is a base-10 integer n (optional
// '-', digits only: a JSON number without fraction or exponent, a JSON
// string of such digits, or a header's text), of any size, and
// n mod Modulo == Remainder, with a Euclidean mod (so -1 mod 7 == 6).
// Any other value (1.5, 1e3, "abc", true) does not match — it is not an
// error.
//
// MaxDeliveryCount / MinDeliveryCount test r.Source.DeliveryCount.
//
// Match assumes c is valid (see Spec.Validate); on an invalid condition it
// does not panic: Field wins over Header, and value predicates without
// either are ignored; an Expr that does not compile is an error. Match
// compiles Expr on every call: the built transforms compile it once.
func (c *Condition) Match(r *Record) (bool, error) {
	m, err := compileCondition(c, "when", Options{})
	if err != nil {
		return false, err
	}
	return m.match(context.Background(), r)
}

// matcher is a Condition with its expression compiled. A nil matcher
// matches every record.
type matcher struct {
	c    *Condition
	expr *program
}

// compileCondition compiles c (a deep copy, so that a built transform
// does not change if the Spec it came from is modified later). prefix is
// the condition's path in its spec, for errors.
func compileCondition(c *Condition, prefix string, o Options) (*matcher, error) {
	if c == nil {
		return nil, nil
	}
	m := &matcher{c: c.clone()}
	if c.Expr != "" {
		p, err := newProgram(prefix+".expr", c.Expr, resultBool, o)
		if err != nil {
			return nil, err
		}
		m.expr = p
	}
	return m, nil
}

// match is Match with the condition compiled.
func (m *matcher) match(ctx context.Context, r *Record) (bool, error) {
	if m == nil {
		return true, nil
	}
	ok, err := m.c.match(ctx, r)
	if err != nil || !ok || m.expr == nil {
		return ok, err
	}
	return m.expr.evalBool(ctx, r)
}

// match tests every predicate but Expr.
func (c *Condition) match(ctx context.Context, r *Record) (bool, error) {
	var (
		text    string
		present bool
	)
	switch {
	case c.Field != "":
		obj, err := r.object(ctx)
		if err != nil {
			return false, err
		}
		var v any
		v, present = lookup(obj, c.Field)
		if present && c.needsText() {
			text = valueText(v)
		}
	case c.Header != "":
		var b []byte
		b, present = r.Header(c.Header)
		if present && c.needsText() {
			text = string(b)
		}
	}

	dc := r.Source.DeliveryCount
	if c.MaxDeliveryCount > 0 && dc > c.MaxDeliveryCount {
		return false, nil
	}
	if c.MinDeliveryCount > 0 && dc < c.MinDeliveryCount {
		return false, nil
	}
	if c.Field == "" && c.Header == "" {
		return true, nil
	}
	if c.Exists != nil && *c.Exists != present {
		return false, nil
	}
	if !present {
		return !c.needsText(), nil
	}
	if c.Equals != nil && text != *c.Equals {
		return false, nil
	}
	if c.In != nil && !slices.Contains(c.In, text) {
		return false, nil
	}
	if c.Modulo != 0 && !modMatches(text, c.Modulo, c.Remainder) {
		return false, nil
	}
	return true, nil
}

// needsText reports whether a predicate needs the value's text (and fails
// on an absent value).
func (c *Condition) needsText() bool {
	return c.Equals != nil || c.In != nil || c.Modulo != 0
}

// validate reports every problem in c, with paths under prefix ("when"),
// in this order: field/header choice, missing test, in, exists, modulo,
// remainder, delivery counts, expr. A nil Condition is valid.
func (c *Condition) validate(prefix string, o Options) []FieldError {
	if c == nil {
		return nil
	}
	var errs []FieldError
	add := func(path, msg string, args ...any) {
		if path != "" {
			path = prefix + "." + path
		} else {
			path = prefix
		}
		errs = append(errs, FieldError{Path: path, Msg: fmt.Sprintf(msg, args...)})
	}

	hasTarget := c.Field != "" || c.Header != ""
	hasValueTest := c.Equals != nil || c.In != nil || c.Exists != nil || c.Modulo != 0 || c.Remainder != 0
	hasDeliveryTest := c.MaxDeliveryCount != 0 || c.MinDeliveryCount != 0

	if c.Field != "" && c.Header != "" {
		add("header", "cannot be combined with field; set only one of them")
	}
	if c.Field != "" {
		if msg := checkPath(c.Field); msg != "" {
			add("field", "%s", msg)
		}
	}
	switch {
	case !hasTarget && hasValueTest:
		add("", "equals, in, exists and modulo need a field or header to test")
	case hasTarget && !hasValueTest:
		what := "field"
		if c.Field == "" {
			what = "header"
		}
		add(what, "has no test; add equals, in, exists or modulo")
	case !hasTarget && !hasDeliveryTest && c.Expr == "":
		add("", "empty condition; set a field or header with a test, an expr, or max/min_delivery_count")
	}
	if c.In != nil && len(c.In) == 0 {
		add("in", "must list at least one value")
	}
	if c.Exists != nil && !*c.Exists && c.needsText() {
		add("exists", "false never matches together with equals, in or modulo")
	}
	if c.Modulo < 0 {
		add("modulo", "must be > 0, got %d", c.Modulo)
	}
	switch {
	case c.Remainder != 0 && c.Modulo == 0:
		add("remainder", "needs modulo")
	case c.Remainder < 0:
		add("remainder", "must be >= 0, got %d", c.Remainder)
	case c.Modulo > 0 && c.Remainder >= c.Modulo:
		add("remainder", "must be less than modulo (%d), got %d", c.Modulo, c.Remainder)
	}
	if c.MaxDeliveryCount < 0 {
		add("max_delivery_count", "must be >= 1, got %d", c.MaxDeliveryCount)
	}
	if c.MinDeliveryCount < 0 {
		add("min_delivery_count", "must be >= 1, got %d", c.MinDeliveryCount)
	}
	if c.MaxDeliveryCount > 0 && c.MinDeliveryCount > 0 && c.MaxDeliveryCount < c.MinDeliveryCount {
		add("max_delivery_count", "must be >= min_delivery_count (%d), got %d", c.MinDeliveryCount, c.MaxDeliveryCount)
	}
	if c.Expr != "" {
		errs = append(errs, checkExpr(prefix+".expr", c.Expr, resultBool, o)...)
	}
	return errs
}

// clone returns a deep copy of c, so that a built transform does not
// change if the Spec it came from is modified later.
func (c *Condition) clone() *Condition {
	if c == nil {
		return nil
	}
	cc := *c
	if c.Equals != nil {
		v := *c.Equals
		cc.Equals = &v
	}
	if c.Exists != nil {
		v := *c.Exists
		cc.Exists = &v
	}
	if c.In != nil {
		cc.In = slices.Clone(c.In)
	}
	return &cc
}
