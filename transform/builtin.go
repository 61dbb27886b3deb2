package transform

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"time"
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
var Registry = map[string]func(Spec) (Transform, error){
	"set":    newSet,
	"rename": newRename,
	"remove": newRemove,
	"header": newHeader,
	"filter": newFilter,
	"route":  newRoute,
	"fail":   newFail,
	"delay":  newDelay,
}

func checkSpec(s Spec, typ string) error {
	if s.Type != typ {
		return &ValidationError{Errors: []FieldError{{Path: "type", Msg: fmt.Sprintf("must be %s, got %q", typ, s.Type)}}}
	}
	if errs := validateBuiltin(s, builtinRules[typ]); len(errs) > 0 {
		return &ValidationError{Errors: errs}
	}
	return nil
}

func one(r *Record) []*Record { return []*Record{r} }

// reencode stores obj as r's new value.
func reencode(r *Record, obj map[string]any) ([]*Record, error) {
	b, err := encodeJSON(obj)
	if err != nil { // cannot happen for a decoded value; never retry it
		return nil, Permanent("json", fmt.Errorf("encoding value: %w", err))
	}
	r.Value = b
	return one(r), nil
}

// setT sets a field to a fixed JSON value, creating intermediate objects.
type setT struct {
	when  *Condition
	field string
	value json.RawMessage
}

// newSet builds "set": Field (dotted path) is set to Value, any YAML value
// encoded as JSON (a missing value is null). A missing or null intermediate
// becomes an object; any other non-object intermediate is a permanent
// "json" error (nothing is overwritten).
func newSet(s Spec) (Transform, error) {
	if err := checkSpec(s, "set"); err != nil {
		return nil, err
	}
	v, err := specValueJSON(s.Value)
	if err != nil {
		return nil, err
	}
	return &setT{when: s.When.clone(), field: s.Field, value: v}, nil
}

func (t *setT) Apply(_ context.Context, r *Record) ([]*Record, error) {
	var d jsonDoc
	if ok, err := t.when.match(r, &d); err != nil || !ok {
		return passIf(r, err)
	}
	obj, err := d.get(r)
	if err != nil {
		return nil, err
	}
	// The shared RawMessage is only read (by the encoder), so concurrent
	// use is safe.
	if err := setPath(obj, t.field, t.value); err != nil {
		return nil, err
	}
	return reencode(r, obj)
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
	when     *Condition
	from, to string
}

// newRename builds "rename": Field moves to To (overwriting To if it
// exists, creating its intermediate objects as set does). A missing Field
// leaves the record unchanged; emptied parent objects are kept.
func newRename(s Spec) (Transform, error) {
	if err := checkSpec(s, "rename"); err != nil {
		return nil, err
	}
	return &renameT{when: s.When.clone(), from: s.Field, to: s.To}, nil
}

func (t *renameT) Apply(_ context.Context, r *Record) ([]*Record, error) {
	var d jsonDoc
	if ok, err := t.when.match(r, &d); err != nil || !ok {
		return passIf(r, err)
	}
	obj, err := d.get(r)
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
	return reencode(r, obj)
}

// removeT deletes a field.
type removeT struct {
	when  *Condition
	field string
}

// newRemove builds "remove": Field is deleted; a missing Field leaves the
// record unchanged.
func newRemove(s Spec) (Transform, error) {
	if err := checkSpec(s, "remove"); err != nil {
		return nil, err
	}
	return &removeT{when: s.When.clone(), field: s.Field}, nil
}

func (t *removeT) Apply(_ context.Context, r *Record) ([]*Record, error) {
	var d jsonDoc
	if ok, err := t.when.match(r, &d); err != nil || !ok {
		return passIf(r, err)
	}
	obj, err := d.get(r)
	if err != nil {
		return nil, err
	}
	if _, ok := deletePath(obj, t.field); !ok {
		return one(r), nil
	}
	return reencode(r, obj)
}

// headerT appends a header.
type headerT struct {
	when  *Condition
	key   string
	value string
}

// newHeader builds "header": appends header Header with Value as text (a
// string as is, a bool as true/false, a number as JSON writes it). An
// existing header of that name is kept (keys may repeat); Record.Header
// returns the last one, i.e. this one.
func newHeader(s Spec) (Transform, error) {
	if err := checkSpec(s, "header"); err != nil {
		return nil, err
	}
	v, _ := headerValueText(s.Value)
	return &headerT{when: s.When.clone(), key: s.Header, value: v}, nil
}

func (t *headerT) Apply(_ context.Context, r *Record) ([]*Record, error) {
	var d jsonDoc
	if ok, err := t.when.match(r, &d); err != nil || !ok {
		return passIf(r, err)
	}
	// A fresh byte slice per record: records must not share header memory.
	r.Headers = append(r.Headers, Header{Key: t.key, Value: []byte(t.value)})
	return one(r), nil
}

// filterT drops records.
type filterT struct {
	when *Condition
	keep bool
}

// newFilter builds "filter": with Action "drop" (default) records matching
// When are dropped; with "keep" records not matching When are dropped.
func newFilter(s Spec) (Transform, error) {
	if err := checkSpec(s, "filter"); err != nil {
		return nil, err
	}
	return &filterT{when: s.When.clone(), keep: s.Action == "keep"}, nil
}

func (t *filterT) Apply(_ context.Context, r *Record) ([]*Record, error) {
	ok, err := t.when.Match(r)
	if err != nil {
		return nil, err
	}
	if ok != t.keep {
		return nil, nil
	}
	return one(r), nil
}

// routeT chooses the output topic from a field's value.
type routeT struct {
	when       *Condition
	field      string
	routes     map[string]string
	def        string
	hasDefault bool
}

// newRoute builds "route": Topic becomes Routes[text of Field] (text as
// Condition compares it); for a value not in Routes, or a missing Field,
// Topic becomes Default if set, else it is left unchanged. The value must
// be a JSON object.
func newRoute(s Spec) (Transform, error) {
	if err := checkSpec(s, "route"); err != nil {
		return nil, err
	}
	return &routeT{when: s.When.clone(), field: s.Field, routes: maps.Clone(s.Routes), def: s.Default, hasDefault: s.Default != ""}, nil
}

func (t *routeT) Apply(_ context.Context, r *Record) ([]*Record, error) {
	var d jsonDoc
	if ok, err := t.when.match(r, &d); err != nil || !ok {
		return passIf(r, err)
	}
	obj, err := d.get(r)
	if err != nil {
		return nil, err
	}
	if v, ok := lookup(obj, t.field); ok {
		if topic, ok := t.routes[valueText(v)]; ok {
			r.Topic = topic
			return one(r), nil
		}
	}
	if t.hasDefault {
		r.Topic = t.def
	}
	return one(r), nil
}

// failT fails matching records.
type failT struct {
	when      *Condition
	permanent bool
	reason    error
}

// DefaultFailReason is the message of a "fail" step without Reason.
const DefaultFailReason = "failed by rule"

// newFail builds "fail": records matching When fail with class "fail" and
// message Reason (default DefaultFailReason): Kind "retry" (default) is
// Retry, "permanent" is Permanent. Others pass unchanged.
func newFail(s Spec) (Transform, error) {
	if err := checkSpec(s, "fail"); err != nil {
		return nil, err
	}
	reason := s.Reason
	if reason == "" {
		reason = DefaultFailReason
	}
	return &failT{when: s.When.clone(), permanent: s.Kind == "permanent", reason: errors.New(reason)}, nil
}

func (t *failT) Apply(_ context.Context, r *Record) ([]*Record, error) {
	ok, err := t.when.Match(r)
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
	when *Condition
	d    time.Duration
}

// newDelay builds "delay": sleeps Duration for records matching When (all
// records without When) and returns them unchanged. If ctx ends first it
// returns a retryable error of class "delay" wrapping ctx.Err(), so the
// record is released rather than dead-lettered.
func newDelay(s Spec) (Transform, error) {
	if err := checkSpec(s, "delay"); err != nil {
		return nil, err
	}
	return &delayT{when: s.When.clone(), d: s.Duration}, nil
}

func (t *delayT) Apply(ctx context.Context, r *Record) ([]*Record, error) {
	ok, err := t.when.Match(r)
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
