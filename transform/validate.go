package transform

import (
	"fmt"
	"maps"
	"slices"
	"strings"
)

// specField is one optional field of Spec, as a bit.
type specField uint16

const (
	sfField specField = 1 << iota
	sfTo
	sfValue
	sfExpr
	sfHeader
	sfWhen
	sfAction
	sfRoutes
	sfDefault
	sfTopics
	sfCases
	sfKind
	sfReason
	sfDuration
)

// specFields lists Spec's optional fields in declaration order, which is
// the order Validate reports them in.
var specFields = []struct {
	f        specField
	name     string
	required string // message when required and missing
}{
	{sfField, "field", "required: a dotted path into the JSON value, e.g. order.id"},
	{sfTo, "to", "required: the dotted path to move the field to"},
	{sfValue, "value", "required: the header value (string, number or bool)"},
	{sfExpr, "expr", "required: a CEL expression"},
	{sfHeader, "header", "required: the header name"},
	{sfWhen, "when", "required: a condition selecting the records"},
	{sfAction, "action", "required: an action"},
	{sfRoutes, "routes", "required: at least one value: topic entry"},
	{sfDefault, "default", "required: a topic"},
	{sfTopics, "topics", "required: at least one topic"},
	{sfCases, "cases", "required: at least one case"},
	{sfKind, "kind", "required: retry or permanent"},
	{sfReason, "reason", "required: a message"},
	{sfDuration, "duration", "required: a duration > 0, e.g. 100ms"},
}

// typeRule says which fields a built-in type requires and which it uses.
type typeRule struct {
	required, uses specField
}

// builtinRules are the field rules of the built-in types. Every built-in
// accepts When. route has three forms (field with routes, expr with
// topics, cases), so what it requires is checked by routeForm.
var builtinRules = map[string]typeRule{
	"set":    {required: sfField, uses: sfField | sfValue | sfExpr | sfWhen},
	"map":    {required: sfExpr, uses: sfExpr | sfWhen},
	"rename": {required: sfField | sfTo, uses: sfField | sfTo | sfWhen},
	"remove": {required: sfField, uses: sfField | sfWhen},
	"header": {required: sfHeader, uses: sfHeader | sfValue | sfExpr | sfAction | sfWhen},
	"key":    {uses: sfField | sfExpr | sfAction | sfWhen},
	"filter": {required: sfWhen, uses: sfWhen | sfAction},
	"route":  {uses: sfField | sfExpr | sfRoutes | sfDefault | sfTopics | sfCases | sfWhen},
	"split":  {required: sfField, uses: sfField | sfTo | sfWhen},
	"copy":   {required: sfTopics, uses: sfTopics | sfWhen},
	"fail":   {required: sfWhen, uses: sfWhen | sfKind | sfReason},
	"delay":  {required: sfDuration, uses: sfDuration | sfWhen},
}

// isSet reports whether f is set in s. For Routes, Topics and Cases, an
// empty map or list counts as unset (they need at least one entry); a
// negative Duration counts as set (and is reported as invalid).
func (s *Spec) isSet(f specField) bool {
	switch f {
	case sfField:
		return s.Field != ""
	case sfTo:
		return s.To != ""
	case sfValue:
		return s.Value != nil
	case sfExpr:
		return s.Expr != ""
	case sfHeader:
		return s.Header != ""
	case sfWhen:
		return s.When != nil
	case sfAction:
		return s.Action != ""
	case sfRoutes:
		return len(s.Routes) > 0
	case sfDefault:
		return s.Default != ""
	case sfTopics:
		return len(s.Topics) > 0
	case sfCases:
		return len(s.Cases) > 0
	case sfKind:
		return s.Kind != ""
	case sfReason:
		return s.Reason != ""
	case sfDuration:
		return s.Duration != 0
	}
	return false
}

// Validate reports every problem in s (it does not stop at the first),
// with paths relative to the spec ("type", "field", "when.modulo"), in
// this order:
//
//  1. type: missing or unknown (the message lists the known types, sorted);
//  2. required fields that are missing, in Spec field order;
//  3. fields set that the type does not use, in Spec field order;
//  4. invalid values of the used fields, in Spec field order (a malformed
//     dotted path, rename to the same path, a set value encoding/json
//     cannot encode, set with both value and expr, an expression that
//     does not compile or type-check (with its Line and Col), a header
//     value that is not a string/number/bool, action not drop/keep, a
//     route mixing its forms, a duplicated topic, a case without exactly
//     one of topic and topics, kind not retry/permanent, duration < 0);
//  5. the When condition.
//
// The known types are the keys of Registry. A type added to Registry that
// is not a built-in gets only its When checked: its constructor is
// responsible for the rest.
//
// Note that with YAML's omitempty decoding, Value nil cannot be told from
// "value: null": set treats it as JSON null, header reports it missing.
func (s Spec) Validate() []FieldError { return s.ValidateWith(Options{}) }

// ValidateWith is Validate for a chain built with o: expressions are
// checked against the variables o gives them (key as text, or as a value
// with Options.StructuredKeys).
func (s Spec) ValidateWith(o Options) []FieldError {
	var errs []FieldError
	add := func(path, msg string, args ...any) {
		errs = append(errs, FieldError{Path: path, Msg: fmt.Sprintf(msg, args...)})
	}

	rule, builtin := builtinRules[s.Type]
	_, registered := Registry[s.Type]
	switch {
	case s.Type == "":
		add("type", "required: one of %s", knownTypes())
	case !registered:
		add("type", "unknown type %q; expected one of %s", s.Type, knownTypes())
	}
	if !builtin || !registered {
		return append(errs, s.When.validate("when", o)...)
	}
	errs = append(errs, validateBuiltin(s, rule, o)...)
	return errs
}

// validateBuiltin is Validate for a built-in type, steps 2 to 5. The
// built-in constructors use it directly (not Validate, which reads
// Registry: that would be an initialization cycle).
func validateBuiltin(s Spec, rule typeRule, o Options) []FieldError {
	errs := presenceErrors(s, rule)
	errs = append(errs, valueErrors(s, rule, o)...)
	if rule.uses&sfWhen != 0 {
		errs = append(errs, s.When.validate("when", o)...)
	}
	return errs
}

// presenceErrors is Validate's steps 2 and 3 for a built-in type: the
// required fields missing (then, for route, its forms mixed) and the
// fields set that the type does not use.
func presenceErrors(s Spec, rule typeRule) []FieldError {
	var errs []FieldError
	add := func(path, msg string, args ...any) {
		errs = append(errs, FieldError{Path: path, Msg: fmt.Sprintf(msg, args...)})
	}

	for _, f := range specFields {
		if rule.required&f.f != 0 && !s.isSet(f.f) {
			if f.f == sfDuration && s.Duration < 0 {
				continue // set but invalid: valueErrors reports it
			}
			add(f.name, "%s", f.required)
		}
	}
	switch s.Type {
	case "route":
		errs = append(errs, routeForm(s)...)
	case "header":
		errs = append(errs, headerForm(s)...)
	case "key":
		errs = append(errs, keyForm(s)...)
	}
	for _, f := range specFields {
		if rule.uses&f.f == 0 && (s.isSet(f.f) || f.f == sfRoutes && s.Routes != nil ||
			f.f == sfTopics && s.Topics != nil || f.f == sfCases && s.Cases != nil) {
			add(f.name, "not used by type %s", s.Type)
		}
	}
	return errs
}

// valueErrors is Validate's step 4 for a built-in type: the invalid values
// of the fields it uses, in Spec field order.
func valueErrors(s Spec, rule typeRule, o Options) []FieldError {
	var errs []FieldError
	add := func(path, msg string, args ...any) {
		errs = append(errs, FieldError{Path: path, Msg: fmt.Sprintf(msg, args...)})
	}

	uses := func(f specField) bool { return rule.uses&f != 0 }
	if uses(sfField) && s.Field != "" {
		if msg := checkPath(s.Field); msg != "" {
			add("field", "%s", msg)
		}
	}
	if uses(sfTo) && s.To != "" {
		if msg := checkPath(s.To); msg != "" {
			add("to", "%s", msg)
		} else if s.To == s.Field && s.Type == "rename" {
			add("to", "must differ from field")
		}
	}
	if uses(sfValue) {
		errs = append(errs, valueFieldErrors(s)...)
	}
	if uses(sfExpr) && s.Expr != "" {
		result := resultAny
		switch s.Type {
		case "route":
			result = resultTopic
		case "header":
			result = resultHeader
		}
		errs = append(errs, checkExpr("expr", s.Expr, result, o)...)
	}
	if uses(sfAction) && s.Action != "" && !slices.Contains(actions[s.Type], s.Action) {
		add("action", "must be %s, got %q", orList(actions[s.Type]), s.Action)
	}
	if uses(sfTopics) {
		errs = append(errs, duplicateTopics("topics", s.Topics)...)
	}
	if uses(sfCases) {
		errs = append(errs, caseErrors(s.Cases, o)...)
	}
	if uses(sfKind) && s.Kind != "" && s.Kind != "retry" && s.Kind != "permanent" {
		add("kind", "must be retry or permanent, got %q", s.Kind)
	}
	if uses(sfDuration) && s.Duration < 0 {
		add("duration", "must be > 0, got %s", s.Duration)
	}
	return errs
}

// valueFieldErrors checks the value of a set step (JSON-encodable, not
// with expr) or a header step (a string, number or bool).
func valueFieldErrors(s Spec) []FieldError {
	var errs []FieldError
	add := func(path, msg string, args ...any) {
		errs = append(errs, FieldError{Path: path, Msg: fmt.Sprintf(msg, args...)})
	}
	switch s.Type {
	case "set":
		if _, err := specValueTree(s.Value); err != nil {
			add("value", "cannot be encoded as JSON: %v", err)
		}
		if s.Value != nil && s.Expr != "" {
			add("value", "cannot be combined with expr; set only one of them")
		}
	case "header":
		if _, ok := headerValueText(s.Value); !ok && s.Value != nil {
			add("value", "must be a string, number or bool, got %s", describe(s.Value))
		}
	}
	return errs
}

// caseErrors checks a route step's cases: each with an expression that
// compiles to a bool, exactly one of topic and topics, and no topic twice.
func caseErrors(cases []RouteCase, o Options) []FieldError {
	var errs []FieldError
	add := func(path, msg string, args ...any) {
		errs = append(errs, FieldError{Path: path, Msg: fmt.Sprintf(msg, args...)})
	}
	for i, c := range cases {
		p := fmt.Sprintf("cases[%d]", i)
		if c.Expr == "" {
			add(p+".expr", "required: a CEL expression that is true for the records this case routes")
		} else {
			errs = append(errs, checkExpr(p+".expr", c.Expr, resultBool, o)...)
		}
		switch {
		case c.Topic == "" && len(c.Topics) == 0:
			add(p+".topic", "required: the topic (or topics) for the records this case routes")
		case c.Topic != "" && len(c.Topics) > 0:
			add(p+".topics", "cannot be combined with topic; set only one of them")
		}
		errs = append(errs, duplicateTopics(p+".topics", c.Topics)...)
	}
	return errs
}

// actions are the actions of the types that take one; the first is the
// default.
var actions = map[string][]string{
	"filter": {"drop", "keep"},
	"header": {HeaderAppend, HeaderSet, HeaderRemove},
	"key":    {KeyRemove},
}

// The actions of a header step, and of a key step.
const (
	HeaderAppend = "append" // add the header, keeping any of that name (the default)
	HeaderSet    = "set"    // replace every header of that name by this one
	HeaderRemove = "remove" // remove every header of that name
	KeyRemove    = "remove" // the output has no key
)

// orList is "a, b or c".
func orList(xs []string) string {
	if len(xs) < 2 {
		return strings.Join(xs, "")
	}
	return strings.Join(xs[:len(xs)-1], ", ") + " or " + xs[len(xs)-1]
}

// headerForm checks a header step: a value or an expression to append or
// set, neither to remove.
func headerForm(s Spec) []FieldError {
	var errs []FieldError
	add := func(path, msg string) { errs = append(errs, FieldError{Path: path, Msg: msg}) }
	switch {
	case s.Action == HeaderRemove && s.Value != nil:
		add("value", "not used with action remove")
	case s.Action == HeaderRemove && s.Expr != "":
		add("expr", "not used with action remove")
	case s.Action == HeaderRemove:
	case s.Value == nil && s.Expr == "":
		add("value", "required: the header value (string, number or bool), or expr")
	case s.Value != nil && s.Expr != "":
		add("expr", "cannot be combined with value; set only one of them")
	}
	return errs
}

// keyForm checks a key step: exactly one of field, expr and action
// remove.
func keyForm(s Spec) []FieldError {
	switch n := btoi(s.Field != "") + btoi(s.Expr != "") + btoi(s.Action != ""); {
	case n == 0:
		return []FieldError{{Msg: "required: field (the key becomes that field's value), expr (the expression's result), or action: remove (no key)"}}
	case n > 1:
		path := "expr"
		if s.Expr == "" {
			path = "action"
		}
		return []FieldError{{Path: path, Msg: "set only one of field, expr and action"}}
	}
	return nil
}

// routeForm checks that a route step uses exactly one of its forms:
// field with routes, expr with topics, or cases.
func routeForm(s Spec) []FieldError {
	byField := s.Field != "" || len(s.Routes) > 0
	byExpr := s.Expr != "" || len(s.Topics) > 0
	byCases := len(s.Cases) > 0
	var errs []FieldError
	add := func(path, msg string) { errs = append(errs, FieldError{Path: path, Msg: msg}) }
	switch n := btoi(byField) + btoi(byExpr) + btoi(byCases); {
	case n == 0:
		add("", "required: field with routes, expr with topics, or cases")
	case n > 1:
		first := "field"
		if !byField {
			first = "expr"
		}
		later := "cases"
		if !byCases {
			later = "expr"
		}
		add(later, "cannot be combined with "+first+": a route uses field with routes, expr with topics, or cases")
	case byField && s.Field == "":
		add("field", "required: the dotted path whose value picks the route, e.g. order.region")
	case byField && len(s.Routes) == 0:
		add("routes", "required: at least one value: topic entry")
	case byExpr && s.Expr == "":
		add("expr", "required: a CEL expression returning the topic, a list of topics, or null")
	case byExpr && len(s.Topics) == 0:
		add("topics", "required: every topic the expression may return")
	}
	return errs
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// duplicateTopics reports a topic listed twice at path.
func duplicateTopics(path string, topics []string) []FieldError {
	var errs []FieldError
	for i, t := range topics {
		if j := slices.Index(topics, t); j < i {
			errs = append(errs, FieldError{Path: fmt.Sprintf("%s[%d]", path, i), Msg: fmt.Sprintf("duplicate topic %q (also %s[%d])", t, path, j)})
		}
	}
	return errs
}

func describe(v any) string {
	switch v.(type) {
	case map[string]any, map[any]any:
		return "a map"
	case []any:
		return "a list"
	}
	return fmt.Sprintf("%T", v)
}

// knownTypes is the sorted, comma-separated list of Registry's keys.
func knownTypes() string {
	return strings.Join(slices.Sorted(maps.Keys(Registry)), ", ")
}

// ValidationError is every problem found in a list of specs. Build returns
// it (use errors.As), with paths prefixed "transforms[i]." where i is the
// 0-based index of the spec; a built-in constructor returns it with paths
// relative to its spec.
type ValidationError struct {
	Errors []FieldError
}

// Error lists every problem in one line, separated by semicolons.
func (e *ValidationError) Error() string {
	var b strings.Builder
	if len(e.Errors) == 1 {
		b.WriteString("invalid transform: ")
	} else {
		fmt.Fprintf(&b, "invalid transforms (%d problems): ", len(e.Errors))
	}
	for i, fe := range e.Errors {
		if i > 0 {
			b.WriteString("; ")
		}
		b.WriteString(fe.Error())
	}
	return b.String()
}

// Build validates specs and builds the chain they describe with the
// default Options; see BuildWith.
func Build(specs []Spec) (*Chain, error) { return BuildWith(specs, Options{}) }

// BuildWith validates specs and builds the chain they describe, in order.
//
// Every spec is validated first and all problems of all specs are returned
// together as a *ValidationError, with paths prefixed "transforms[i]."
// (0-based, like the YAML list it comes from). Each step is built with
// Registry[spec.Type] and named spec.Name, or "<i>:<type>" with the same
// 0-based i (e.g. "0:set", "2:fail"); that name appears in Error.Step.
// An empty specs list gives an empty chain, which passes records through.
func BuildWith(specs []Spec, o Options) (*Chain, error) {
	var errs []FieldError
	for i, s := range specs {
		for _, fe := range s.ValidateWith(o) {
			fe.Path = strings.TrimSuffix(fmt.Sprintf("transforms[%d].%s", i, fe.Path), ".")
			errs = append(errs, fe)
		}
	}
	if len(errs) > 0 {
		return nil, &ValidationError{Errors: errs}
	}
	c := &Chain{formats: o.Formats}
	switch o.Timestamp {
	case "", TimestampSource:
	case TimestampNow:
		c.now = true
	default:
		p, err := newProgram("output.timestamp", o.Timestamp, resultTime, o)
		if err != nil {
			return nil, err
		}
		c.stamp = p
	}
	for i, s := range specs {
		t, err := Registry[s.Type](s, o)
		if err != nil {
			return nil, fmt.Errorf("transforms[%d]: %w", i, err)
		}
		name := s.Name
		if name == "" {
			name = fmt.Sprintf("%d:%s", i, s.Type)
		}
		c.Add(name, t)
	}
	return c, nil
}

// CheckTimestamp reports the problems of expr as the outputs' timestamp
// expression (output.timestamp): it must compile with o's variables and
// give a timestamp or null.
func CheckTimestamp(expr string, o Options) []FieldError {
	return checkExpr("", expr, resultTime, o)
}
