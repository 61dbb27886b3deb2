package transform

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"cel.dev/cel-go/common/types"
	"cel.dev/cel-go/common/types/ref"
)

// Registry maps a Spec's Type to the constructor of that built-in. It is an
// explicit map (nothing registers itself), so what is compiled in is what
// you see. Build looks types up here and Validate lists its keys as the
// known types. Adding an entry makes a type known to Validate and Build,
// but Validate checks only the When of a type it has no built-in rules for.
//
// Every built-in constructor validates its spec (as Spec.Validate does)
// and returns a *ValidationError if it is invalid.
//
// The built-ins that work on the JSON value (set, rename, remove, route, and
// any step whose When tests a Field) decode it with json.Decoder.UseNumber,
// so numbers — including integers beyond 64 bits such as
// 12345678901234567890 — are kept exactly as written. A value that is not
// a single JSON object is a permanent error of class "json". When a step
// changes the value it is re-encoded compactly with encoding/json: object
// keys come out sorted (the input order is not kept), whitespace is
// dropped, "<", ">" and "&" are not escaped, and invalid UTF-8 is replaced
// by U+FFFD. A step that leaves the value alone (When does not match, or
// the field to rename/remove is missing) returns the original bytes.
//
// Dotted paths split on every "." — a key that itself contains a dot
// cannot be addressed.
//
// A constructor gets the Options that Build was given (the expressions'
// cost limit).
var Registry = map[string]func(Spec, Options) (Transform, error){
	"set":    newSet,
	"map":    newMap,
	"rename": newRename,
	"remove": newRemove,
	"header": newHeader,
	"key":    newKey,
	"filter": newFilter,
	"route":  newRoute,
	"split":  newSplit,
	"copy":   newCopy,
	"fail":   newFail,
	"delay":  newDelay,
}

// dropping are the built-ins that can turn a record into no record at
// all: filter, and split of an empty array.
var dropping = map[string]bool{"filter": true, "split": true}

// MayDrop reports whether a chain of these steps can leave a source record
// with no output (and no dead letter): such a pipeline is exactly-once as
// "at most one output set per source record", which is how relay verify
// must judge it.
func MayDrop(specs []Spec) bool {
	return slices.ContainsFunc(specs, func(s Spec) bool { return dropping[s.Type] })
}

// checkSpec validates s as a spec of type typ and compiles its When.
func checkSpec(s Spec, typ string, o Options) (*matcher, error) {
	if s.Type != typ {
		return nil, &ValidationError{Errors: []FieldError{{Path: "type", Msg: fmt.Sprintf("must be %s, got %q", typ, s.Type)}}}
	}
	if errs := validateBuiltin(s, builtinRules[typ], o); len(errs) > 0 {
		return nil, &ValidationError{Errors: errs}
	}
	return compileCondition(s.When, "when", o)
}

func one(r *Record) []*Record { return []*Record{r} }

// setT sets a field to a fixed JSON value or to an expression's result,
// creating intermediate objects.
type setT struct {
	when  *matcher
	field string
	value any      // a value tree, copied for each record
	expr  *program // instead of value
}

// newSet builds "set": Field (dotted path) is set to Value, any YAML value
// encoded as JSON (a missing value is null), or to the result of Expr
// converted to JSON (see toJSON). A missing or null intermediate becomes
// an object; any other non-object intermediate is a permanent "json"
// error (nothing is overwritten).
func newSet(s Spec, o Options) (Transform, error) {
	when, err := checkSpec(s, "set", o)
	if err != nil {
		return nil, err
	}
	t := &setT{when: when, field: s.Field}
	if s.Expr != "" {
		if t.expr, err = newProgram("expr", s.Expr, resultAny, o); err != nil {
			return nil, err
		}
		return t, nil
	}
	if t.value, err = specValueTree(s.Value); err != nil {
		return nil, err
	}
	return t, nil
}

func (t *setT) Apply(ctx context.Context, r *Record) ([]*Record, error) {
	if ok, err := t.when.match(ctx, r); err != nil || !ok {
		return passIf(r, err)
	}
	obj, err := r.object(ctx)
	if err != nil {
		return nil, err
	}
	var v any
	if t.expr != nil {
		// Evaluated before the value changes; the result is a fresh
		// value, never a part of obj.
		if v, err = t.expr.evalValue(ctx, r); err != nil {
			return nil, err
		}
	} else {
		// A copy: later steps may change the record's tree in place,
		// and workers share t.
		v = cloneTree(t.value)
	}
	if err := setPath(obj, t.field, v); err != nil {
		return nil, err
	}
	r.setValue(obj)
	return one(r), nil
}

// mapT replaces the value by an expression's result.
type mapT struct {
	when *matcher
	expr *program
}

// newMap builds "map": the record's value becomes the result of Expr.
// Bytes are written as they are (so a map can produce values that are not
// JSON); any other result is encoded as JSON (see toJSON; a string
// becomes a JSON string).
func newMap(s Spec, o Options) (Transform, error) {
	when, err := checkSpec(s, "map", o)
	if err != nil {
		return nil, err
	}
	p, err := newProgram("expr", s.Expr, resultAny, o)
	if err != nil {
		return nil, err
	}
	return &mapT{when: when, expr: p}, nil
}

func (t *mapT) Apply(ctx context.Context, r *Record) ([]*Record, error) {
	if ok, err := t.when.match(ctx, r); err != nil || !ok {
		return passIf(r, err)
	}
	v, err := t.expr.eval(ctx, r)
	if err != nil {
		return nil, err
	}
	if b, ok := v.(types.Bytes); ok {
		r.setValueBytes(bytes.Clone(b))
		return one(r), nil
	}
	x, err := toValue(v)
	if err != nil {
		return nil, Permanent("cel", fmt.Errorf("expr: %w", err))
	}
	r.setValue(x)
	return one(r), nil
}

// passIf returns r unchanged when err is nil (the condition did not
// match), or err.
func passIf(r *Record, err error) ([]*Record, error) {
	if err != nil {
		return nil, err
	}
	return one(r), nil
}

// renameT moves a field to another path.
type renameT struct {
	when     *matcher
	from, to string
}

// newRename builds "rename": Field moves to To (overwriting To if it
// exists, creating its intermediate objects as set does). A missing Field
// leaves the record unchanged; emptied parent objects are kept.
func newRename(s Spec, o Options) (Transform, error) {
	when, err := checkSpec(s, "rename", o)
	if err != nil {
		return nil, err
	}
	return &renameT{when: when, from: s.Field, to: s.To}, nil
}

func (t *renameT) Apply(ctx context.Context, r *Record) ([]*Record, error) {
	if ok, err := t.when.match(ctx, r); err != nil || !ok {
		return passIf(r, err)
	}
	obj, err := r.object(ctx)
	if err != nil {
		return nil, err
	}
	v, ok := deletePath(obj, t.from)
	if !ok {
		return one(r), nil
	}
	if err := setPath(obj, t.to, v); err != nil {
		return nil, err
	}
	r.setValue(obj)
	return one(r), nil
}

// removeT deletes a field.
type removeT struct {
	when  *matcher
	field string
}

// newRemove builds "remove": Field is deleted; a missing Field leaves the
// record unchanged.
func newRemove(s Spec, o Options) (Transform, error) {
	when, err := checkSpec(s, "remove", o)
	if err != nil {
		return nil, err
	}
	return &removeT{when: when, field: s.Field}, nil
}

func (t *removeT) Apply(ctx context.Context, r *Record) ([]*Record, error) {
	if ok, err := t.when.match(ctx, r); err != nil || !ok {
		return passIf(r, err)
	}
	obj, err := r.object(ctx)
	if err != nil {
		return nil, err
	}
	if _, ok := deletePath(obj, t.field); !ok {
		return one(r), nil
	}
	r.setValue(obj)
	return one(r), nil
}

// headerT appends, sets or removes a header.
type headerT struct {
	when   *matcher
	key    string
	action string
	value  string
	expr   *program // instead of value
}

// newHeader builds "header": with action append (the default) it adds
// header Header, keeping any of that name (keys may repeat, and
// Record.Header returns the last one, i.e. this one); with set it
// replaces every header of that name by this one; with remove it removes
// every header of that name. The value is Value as text (a string as is,
// a bool as true/false, a number as JSON writes it), or the result of
// Expr: a string or bytes as they are, a number or bool as its text.
func newHeader(s Spec, o Options) (Transform, error) {
	when, err := checkSpec(s, "header", o)
	if err != nil {
		return nil, err
	}
	v, _ := headerValueText(s.Value)
	t := &headerT{when: when, key: s.Header, action: s.Action, value: v}
	if t.action == "" {
		t.action = HeaderAppend
	}
	if s.Expr != "" {
		if t.expr, err = newProgram("expr", s.Expr, resultHeader, o); err != nil {
			return nil, err
		}
	}
	return t, nil
}

func (t *headerT) Apply(ctx context.Context, r *Record) ([]*Record, error) {
	if ok, err := t.when.match(ctx, r); err != nil || !ok {
		return passIf(r, err)
	}
	// A fresh byte slice per record: records must not share header memory.
	v := []byte(t.value)
	if t.expr != nil && t.action != HeaderRemove {
		// Before the header is removed: the expression may read it.
		x, err := t.expr.eval(ctx, r)
		if err != nil {
			return nil, err
		}
		if v, err = headerBytes(x); err != nil {
			return nil, Permanent("cel", fmt.Errorf("expr: %w", err))
		}
	}
	if t.action == HeaderRemove || t.action == HeaderSet {
		r.Headers = slices.DeleteFunc(r.Headers, func(h Header) bool { return h.Key == t.key })
	}
	if t.action == HeaderRemove {
		return one(r), nil
	}
	r.Headers = append(r.Headers, Header{Key: t.key, Value: v})
	return one(r), nil
}

// headerBytes is an expression's result as a header value: a string or
// bytes as they are, a number or bool as its text.
func headerBytes(v ref.Val) ([]byte, error) {
	switch x := v.(type) {
	case types.String:
		return []byte(x), nil
	case types.Bytes:
		return bytes.Clone(x), nil
	case types.Int, types.Uint, types.Double, types.Bool:
		t, err := toValue(v)
		if err != nil {
			return nil, err
		}
		return []byte(valueText(t)), nil
	}
	return nil, fmt.Errorf("got %s, want a string, bytes, a number or a bool", typeName(v))
}

// keyT sets or removes the key.
type keyT struct {
	when   *matcher
	field  string
	expr   *program
	remove bool
}

// newKey builds "key": the output's key becomes the value of Field (a
// missing field is a permanent "json" error), or the result of Expr, or
// with action remove no key at all. The key is written in the output's
// key format (output.key_format): as text by default, so a number
// becomes its digits and an object its JSON.
func newKey(s Spec, o Options) (Transform, error) {
	when, err := checkSpec(s, "key", o)
	if err != nil {
		return nil, err
	}
	t := &keyT{when: when, field: s.Field, remove: s.Action == KeyRemove}
	if s.Expr != "" {
		if t.expr, err = newProgram("expr", s.Expr, resultAny, o); err != nil {
			return nil, err
		}
	}
	return t, nil
}

func (t *keyT) Apply(ctx context.Context, r *Record) ([]*Record, error) {
	if ok, err := t.when.match(ctx, r); err != nil || !ok {
		return passIf(r, err)
	}
	switch {
	case t.remove:
		r.setKey(nil)
	case t.expr != nil:
		v, err := t.expr.evalValue(ctx, r)
		if err != nil {
			return nil, err
		}
		r.setKey(v)
	default:
		obj, err := r.object(ctx)
		if err != nil {
			return nil, err
		}
		v, ok := lookup(obj, t.field)
		if !ok {
			return nil, Permanent("json", fmt.Errorf("cannot take the key from %s: no such field", t.field))
		}
		r.setKey(cloneTree(v))
	}
	return one(r), nil
}

// filterT drops records.
type filterT struct {
	when *matcher
	keep bool
}

// newFilter builds "filter": with Action "drop" (default) records matching
// When are dropped; with "keep" records not matching When are dropped.
func newFilter(s Spec, o Options) (Transform, error) {
	when, err := checkSpec(s, "filter", o)
	if err != nil {
		return nil, err
	}
	return &filterT{when: when, keep: s.Action == "keep"}, nil
}

func (t *filterT) Apply(ctx context.Context, r *Record) ([]*Record, error) {
	ok, err := t.when.match(ctx, r)
	if err != nil {
		return nil, err
	}
	if ok != t.keep {
		return nil, nil
	}
	return one(r), nil
}

// routeT chooses the output topic: from a field's value, from an
// expression, or from the first true case.
type routeT struct {
	when       *matcher
	field      string
	routes     map[string]string
	expr       *program
	allowed    []string
	cases      []routeCase
	def        string
	hasDefault bool
}

type routeCase struct {
	cond   *program
	topics []string
}

// newRoute builds "route", in one of three forms:
//
//   - Field with Routes: Topic becomes Routes[text of Field] (text as
//     Condition compares it). The value must be a JSON object.
//   - Expr with Topics: Expr returns the topic, or a list of topics (one
//     record each, in order, duplicates written once); "", null or an
//     empty list choose no route. A topic not listed in Topics is a
//     permanent error of class "route": the topics a pipeline writes are
//     known when it is loaded.
//   - Cases: the first case whose Expr is true sends the record to its
//     Topic, or to each of its Topics (one record each).
//
// A record that no route matches (a value not in Routes or a missing
// Field, an Expr choosing no route, no case true) goes to Default if set,
// and otherwise keeps its topic.
func newRoute(s Spec, o Options) (Transform, error) {
	when, err := checkSpec(s, "route", o)
	if err != nil {
		return nil, err
	}
	t := &routeT{when: when, field: s.Field, routes: maps.Clone(s.Routes), def: s.Default, hasDefault: s.Default != ""}
	if s.Expr != "" {
		if t.expr, err = newProgram("expr", s.Expr, resultTopic, o); err != nil {
			return nil, err
		}
		t.allowed = slices.Clone(s.Topics)
	}
	for i, c := range s.Cases {
		p, err := newProgram(fmt.Sprintf("cases[%d].expr", i), c.Expr, resultBool, o)
		if err != nil {
			return nil, err
		}
		topics := slices.Clone(c.Topics)
		if c.Topic != "" {
			topics = []string{c.Topic}
		}
		t.cases = append(t.cases, routeCase{cond: p, topics: topics})
	}
	return t, nil
}

func (t *routeT) Apply(ctx context.Context, r *Record) ([]*Record, error) {
	if ok, err := t.when.match(ctx, r); err != nil || !ok {
		return passIf(r, err)
	}
	var (
		topics []string
		found  bool
	)
	switch {
	case t.expr != nil:
		var err error
		if topics, found, err = t.expr.evalTopics(ctx, r); err != nil {
			return nil, err
		}
		for _, topic := range topics {
			if !slices.Contains(t.allowed, topic) {
				return nil, Permanent("route", fmt.Errorf("expr returned topic %q, which is not in topics %v", topic, t.allowed))
			}
		}
	case t.cases != nil:
		for _, c := range t.cases {
			ok, err := c.cond.evalBool(ctx, r)
			if err != nil {
				return nil, err
			}
			if ok {
				topics, found = c.topics, true
				break
			}
		}
	default:
		obj, err := r.object(ctx)
		if err != nil {
			return nil, err
		}
		if v, ok := lookup(obj, t.field); ok {
			var topic string
			if topic, found = t.routes[valueText(v)]; found {
				topics = []string{topic}
			}
		}
	}
	switch {
	case found:
		return toTopics(r, topics), nil
	case t.hasDefault:
		r.Topic = t.def
	}
	return one(r), nil
}

// toTopics sends r to each of topics, in order, once each: r itself to the
// first, a clone to each other one. No topics means no records.
func toTopics(r *Record, topics []string) []*Record {
	out := make([]*Record, 0, len(topics))
	for i, topic := range topics {
		if slices.Index(topics, topic) < i {
			continue // listed twice: written once
		}
		c := r
		if len(out) > 0 {
			c = r.Clone()
		}
		c.Topic = topic
		out = append(out, c)
	}
	return out
}

// MaxSplit is the most records a split step makes of one record; a longer
// array is a permanent error of class "split" rather than a transaction
// too large to commit.
const MaxSplit = 10_000

// splitT makes one record per element of an array.
type splitT struct {
	when  *matcher
	field string
	to    string
}

// newSplit builds "split": the JSON array at Field becomes one record per
// element, in order; each is a copy of the record (key, headers, topic)
// whose value is the element (encoded as JSON, so a string element
// becomes a JSON string) — or, with To, the record's object without Field
// and with the element at To (To may equal Field: the array is replaced by
// one element). An empty array makes no records (the source record is
// acknowledged with no output). A missing Field, or one that is not an
// array, is a permanent "json" error; more than MaxSplit elements a
// permanent "split" error.
func newSplit(s Spec, o Options) (Transform, error) {
	when, err := checkSpec(s, "split", o)
	if err != nil {
		return nil, err
	}
	return &splitT{when: when, field: s.Field, to: s.To}, nil
}

func (t *splitT) Apply(ctx context.Context, r *Record) ([]*Record, error) {
	if ok, err := t.when.match(ctx, r); err != nil || !ok {
		return passIf(r, err)
	}
	obj, err := r.object(ctx)
	if err != nil {
		return nil, err
	}
	v, ok := lookup(obj, t.field)
	if !ok {
		return nil, Permanent("json", fmt.Errorf("cannot split %s: no such field", t.field))
	}
	elems, ok := v.([]any)
	if !ok {
		return nil, Permanent("json", fmt.Errorf("cannot split %s: it is %s, not an array", t.field, jsonKind(v)))
	}
	if len(elems) > MaxSplit {
		return nil, Permanent("split", fmt.Errorf("cannot split %s: %d elements, more than %d", t.field, len(elems), MaxSplit))
	}
	if t.to != "" {
		deletePath(obj, t.field)
	}
	out := make([]*Record, 0, len(elems))
	for i, e := range elems {
		x := e
		if t.to != "" {
			// Each record gets an object of its own: later steps may
			// change one without the others.
			o := obj
			if i < len(elems)-1 {
				o = cloneTree(obj).(map[string]any)
			}
			if err := setPath(o, t.to, e); err != nil {
				return nil, err
			}
			x = o
		}
		c := r
		if i < len(elems)-1 {
			c = r.Clone() // the last element reuses r
		}
		c.setValue(x)
		out = append(out, c)
	}
	return out, nil
}

// copyT writes a record to more topics.
type copyT struct {
	when   *matcher
	topics []string
}

// newCopy builds "copy": the record goes on unchanged, followed by one
// copy for each of Topics, in order (a copy to the record's own topic is
// a second record there).
func newCopy(s Spec, o Options) (Transform, error) {
	when, err := checkSpec(s, "copy", o)
	if err != nil {
		return nil, err
	}
	return &copyT{when: when, topics: slices.Clone(s.Topics)}, nil
}

func (t *copyT) Apply(ctx context.Context, r *Record) ([]*Record, error) {
	if ok, err := t.when.match(ctx, r); err != nil || !ok {
		return passIf(r, err)
	}
	out := make([]*Record, 0, 1+len(t.topics))
	out = append(out, r)
	for _, topic := range t.topics {
		c := r.Clone()
		c.Topic = topic
		out = append(out, c)
	}
	return out, nil
}

// failT fails matching records.
type failT struct {
	when      *matcher
	permanent bool
	reason    error
}

// DefaultFailReason is the message of a "fail" step without Reason.
const DefaultFailReason = "failed by rule"

// newFail builds "fail": records matching When fail with class "fail" and
// message Reason (default DefaultFailReason): Kind "retry" (default) is
// Retry, "permanent" is Permanent. Others pass unchanged.
func newFail(s Spec, o Options) (Transform, error) {
	when, err := checkSpec(s, "fail", o)
	if err != nil {
		return nil, err
	}
	reason := s.Reason
	if reason == "" {
		reason = DefaultFailReason
	}
	return &failT{when: when, permanent: s.Kind == "permanent", reason: errors.New(reason)}, nil
}

func (t *failT) Apply(ctx context.Context, r *Record) ([]*Record, error) {
	ok, err := t.when.match(ctx, r)
	if err != nil {
		return nil, err
	}
	if !ok {
		return one(r), nil
	}
	if t.permanent {
		return nil, Permanent("fail", t.reason)
	}
	return nil, Retry("fail", t.reason)
}

// delayT sleeps.
type delayT struct {
	when *matcher
	d    time.Duration
}

// newDelay builds "delay": sleeps Duration for records matching When (all
// records without When) and returns them unchanged. If ctx ends first it
// returns a retryable error of class "delay" wrapping ctx.Err(), so the
// record is released rather than dead-lettered.
func newDelay(s Spec, o Options) (Transform, error) {
	when, err := checkSpec(s, "delay", o)
	if err != nil {
		return nil, err
	}
	return &delayT{when: when, d: s.Duration}, nil
}

func (t *delayT) Apply(ctx context.Context, r *Record) ([]*Record, error) {
	ok, err := t.when.match(ctx, r)
	if err != nil || !ok {
		return passIf(r, err)
	}
	if err := ctx.Err(); err != nil {
		return nil, Retry("delay", fmt.Errorf("delay interrupted: %w", err))
	}
	timer := time.NewTimer(t.d)
	defer timer.Stop()
	select {
	case <-timer.C:
		return one(r), nil
	case <-ctx.Done():
		return nil, Retry("delay", fmt.Errorf("delay interrupted: %w", ctx.Err()))
	}
}
