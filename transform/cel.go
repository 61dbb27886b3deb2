package transform

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"sync"
	"time"

	"cel.dev/cel-go/cel"
	"cel.dev/cel-go/common/types"
	"cel.dev/cel-go/common/types/ref"
	"cel.dev/cel-go/common/types/traits"
	"cel.dev/cel-go/ext"
	"cel.dev/cel-go/interpreter"
)

// This file holds the CEL (Common Expression Language, cel.dev) side of
// the transforms: the environment every expression is checked against, the
// per-record variables, and the conversion of results back to JSON.

// Cost limits of an expression's evaluation, in CEL's cost units (about
// one per operation, per list element visited, per byte compared).
const (
	// DefaultCostLimit bounds one evaluation of one expression for one
	// record. Typical expressions cost under 100; a pathological one (a
	// comprehension nested in another over a large array) stops after
	// about 7 ms on a 2-core machine (BenchmarkCostLimitWorstCase). Transforms
	// run before a batch's transaction begins and the batch's locks are
	// renewed meanwhile, so even a batch of such records (batch.max_records,
	// 2,000 by default) spends its time, not its deliveries.
	DefaultCostLimit = 100_000
	// MaxCostLimit is the largest cost limit accepted: about 0.7 s of
	// evaluation per expression per record.
	MaxCostLimit = 10_000_000
)

// Options configures how Build builds a chain. The zero value uses the
// defaults.
type Options struct {
	// CostLimit bounds the runtime cost of one evaluation of an
	// expression; an evaluation that exceeds it stops and the record is
	// dead-lettered (permanent error of class "cel"). 0 means
	// DefaultCostLimit.
	CostLimit uint64
}

func (o Options) costLimit() uint64 {
	if o.CostLimit == 0 {
		return DefaultCostLimit
	}
	return o.CostLimit
}

// The variables of an expression. They are bound lazily: an expression
// that does not mention value never parses the record's value, so
// expressions over key, headers and the source coordinates work on values
// of any format.
const (
	varValue         = "value"
	varValueBytes    = "value_bytes"
	varKey           = "key"
	varKeyBytes      = "key_bytes"
	varHeaders       = "headers"
	varTopic         = "topic"
	varPartition     = "partition"
	varOffset        = "offset"
	varDeliveryCount = "delivery_count"
	varTimestamp     = "timestamp"
)

// celEnv is the environment every expression is compiled in: CEL's
// standard library, the strings, math and encoders extensions, optional
// values (value.?field.orValue(x)), and the record's variables.
var celEnv = sync.OnceValues(func() (*cel.Env, error) {
	return cel.NewEnv(
		cel.Variable(varValue, cel.DynType),
		cel.Variable(varValueBytes, cel.BytesType),
		cel.Variable(varKey, cel.StringType),
		cel.Variable(varKeyBytes, cel.BytesType),
		cel.Variable(varHeaders, cel.MapType(cel.StringType, cel.StringType)),
		cel.Variable(varTopic, cel.StringType),
		cel.Variable(varPartition, cel.IntType),
		cel.Variable(varOffset, cel.IntType),
		cel.Variable(varDeliveryCount, cel.IntType),
		cel.Variable(varTimestamp, cel.TimestampType),
		ext.Strings(),
		ext.Math(),
		ext.Encoders(),
		cel.OptionalTypes(),
	)
})

// resultKind is what an expression must produce.
type resultKind int

const (
	resultAny   resultKind = iota // set, map: any value that has a JSON form
	resultBool                    // conditions and route cases
	resultTopic                   // route: a topic, a list of topics, "" or null
)

func (k resultKind) String() string {
	switch k {
	case resultBool:
		return "a bool"
	case resultTopic:
		return "a topic name (string), a list of them, or null"
	}
	return "a value"
}

// program is a compiled, type-checked expression.
type program struct {
	path      string // "expr", "when.expr", "cases[1].expr": for errors
	prg       cel.Program
	costLimit uint64
}

// exprError is one problem found compiling an expression, at a 1-based
// line and column within its text.
type exprError struct {
	line, col int
	msg       string
	snippet   string // the line of the expression, and a caret under col
}

// compileExpr parses and type-checks src, and checks that its type can be
// what result asks for. It returns every problem found, with positions in
// src, explained as celIssues explains them.
func compileExpr(src string, result resultKind) (*cel.Ast, []exprError) {
	env, err := celEnv()
	if err != nil { // cannot happen: the declarations are fixed
		return nil, []exprError{{msg: "CEL environment: " + err.Error()}}
	}
	if strings.TrimSpace(src) == "" {
		return nil, []exprError{{msg: "empty expression"}}
	}
	ast, iss := env.Compile(src)
	if iss.Err() != nil {
		return nil, celIssues(src, iss.Errors())
	}
	if t := ast.OutputType(); !typeFits(t, result) {
		return nil, []exprError{{line: 1, col: 1, msg: fmt.Sprintf("must evaluate to %s, but its type is %s", result, t)}}
	}
	return ast, nil
}

// typeFits reports whether an expression of static type t may produce
// what result asks for; dyn may produce anything, and is checked when
// evaluated.
func typeFits(t *cel.Type, result resultKind) bool {
	switch t.Kind() {
	case types.DynKind, types.AnyKind:
		return true
	}
	switch result {
	case resultBool:
		return t.Kind() == types.BoolKind
	case resultTopic:
		switch t.Kind() {
		case types.StringKind, types.NullTypeKind:
			return true
		case types.ListKind:
			p := t.Parameters()
			return len(p) == 1 && (p[0].Kind() == types.StringKind || p[0].Kind() == types.DynKind)
		}
		return false
	}
	return true
}

// checkExpr reports the problems of expression src at path (relative to
// a spec) as FieldErrors.
func checkExpr(path, src string, result resultKind) []FieldError {
	_, errs := compileExpr(src, result)
	out := make([]FieldError, len(errs))
	for i, e := range errs {
		out[i] = FieldError{Path: path, Msg: e.msg, Line: e.line, Col: e.col, Snippet: e.snippet}
	}
	return out
}

// newProgram compiles src for evaluation. Spec validation has checked it
// already; an error here reports it again rather than panicking.
func newProgram(path, src string, result resultKind, o Options) (*program, error) {
	ast, errs := compileExpr(src, result)
	if len(errs) > 0 {
		fe := make([]FieldError, len(errs))
		for i, e := range errs {
			fe[i] = FieldError{Path: path, Msg: e.msg, Line: e.line, Col: e.col, Snippet: e.snippet}
		}
		return nil, &ValidationError{Errors: fe}
	}
	env, _ := celEnv()
	limit := o.costLimit()
	prg, err := env.Program(ast,
		cel.CostLimit(limit),
		// Check for cancellation every 100 iterations of a
		// comprehension, so shutdown interrupts a long evaluation.
		cel.InterruptCheckFrequency(100),
	)
	if err != nil {
		return nil, &ValidationError{Errors: []FieldError{{Path: path, Msg: err.Error()}}}
	}
	return &program{path: path, prg: prg, costLimit: limit}, nil
}

// eval evaluates p against r. d is the step's shared JSON decode of r's
// value. Errors are classified: a value that is not JSON, when the
// expression needs it, is a permanent "json" error (as for the other
// steps); any other evaluation error — a missing field, a wrong type, the
// cost limit — is a permanent "cel" error; an interrupted evaluation
// (ctx ended) is retryable.
func (p *program) eval(ctx context.Context, r *Record, d *jsonDoc) (ref.Val, error) {
	vars := &celVars{r: r, d: d}
	v, _, err := p.prg.ContextEval(ctx, vars)
	if err != nil {
		switch {
		case vars.valueErr != nil:
			return nil, vars.valueErr
		case ctx.Err() != nil:
			return nil, Retry("cel", fmt.Errorf("%s: evaluation interrupted: %w", p.path, ctx.Err()))
		case strings.Contains(err.Error(), "cost limit exceeded"):
			return nil, Permanent("cel", fmt.Errorf("%s: cost limit (%d) exceeded: simplify the expression or raise cel.cost_limit", p.path, p.costLimit))
		}
		return nil, Permanent("cel", fmt.Errorf("%s: %w", p.path, err))
	}
	return v, nil
}

// evalBool evaluates a bool expression.
func (p *program) evalBool(ctx context.Context, r *Record, d *jsonDoc) (bool, error) {
	v, err := p.eval(ctx, r, d)
	if err != nil {
		return false, err
	}
	b, ok := v.(types.Bool)
	if !ok {
		return false, Permanent("cel", fmt.Errorf("%s: got %s, want a bool", p.path, typeName(v)))
	}
	return bool(b), nil
}

// evalTopics evaluates a route expression: a topic or a list of topics;
// "", null and an empty list choose no topic (ok false).
func (p *program) evalTopics(ctx context.Context, r *Record, d *jsonDoc) (topics []string, ok bool, err error) {
	v, err := p.eval(ctx, r, d)
	if err != nil {
		return nil, false, err
	}
	switch x := v.(type) {
	case types.Null:
		return nil, false, nil
	case types.String:
		if x == "" {
			return nil, false, nil
		}
		return []string{string(x)}, true, nil
	case traits.Lister:
		n, _ := x.Size().(types.Int)
		for i := types.Int(0); i < n; i++ {
			s, isStr := x.Get(i).(types.String)
			if !isStr {
				return nil, false, Permanent("cel", fmt.Errorf("%s: element %d is %s, want a topic name (string)", p.path, i, typeName(x.Get(i))))
			}
			topics = append(topics, string(s))
		}
		return topics, len(topics) > 0, nil
	}
	return nil, false, Permanent("cel", fmt.Errorf("%s: got %s, want a topic name (string), a list of them, or null", p.path, typeName(v)))
}

// evalJSON evaluates an expression whose result is stored in a JSON
// value, converted as toJSON does.
func (p *program) evalJSON(ctx context.Context, r *Record, d *jsonDoc) (any, error) {
	v, err := p.eval(ctx, r, d)
	if err != nil {
		return nil, err
	}
	x, err := toJSON(v)
	if err != nil {
		return nil, Permanent("cel", fmt.Errorf("%s: %w", p.path, err))
	}
	return x, nil
}

func typeName(v ref.Val) string {
	if v == nil {
		return "nothing"
	}
	return v.Type().TypeName()
}

// celVars binds an expression's variables to one record, each computed
// the first time the expression asks for it.
type celVars struct {
	r        *Record
	d        *jsonDoc
	value    ref.Val
	headers  ref.Val
	valueErr error // why value could not be bound: the value is not JSON
}

// ResolveName implements interpreter.Activation.
func (a *celVars) ResolveName(name string) (any, bool) {
	r := a.r
	switch name {
	case varValue:
		if a.value == nil {
			x, err := a.d.value(r)
			if err != nil {
				a.valueErr = err
				a.value = types.NewErr("%v", err)
			} else {
				a.value = jsonAdapter{}.NativeToValue(x)
			}
		}
		return a.value, true
	case varValueBytes:
		return types.Bytes(r.Value), true
	case varKey:
		return types.String(r.Key), true
	case varKeyBytes:
		return types.Bytes(r.Key), true
	case varHeaders:
		if a.headers == nil {
			m := make(map[string]string, len(r.Headers))
			for _, h := range r.Headers { // later ones win, as in Record.Header
				m[h.Key] = string(h.Value)
			}
			a.headers = types.DefaultTypeAdapter.NativeToValue(m)
		}
		return a.headers, true
	case varTopic:
		return types.String(r.Source.Topic), true
	case varPartition:
		return types.Int(r.Source.Partition), true
	case varOffset:
		return types.Int(r.Source.Offset), true
	case varDeliveryCount:
		return types.Int(r.Source.DeliveryCount), true
	case varTimestamp:
		return types.Timestamp{Time: r.Source.Timestamp}, true
	}
	return nil, false
}

// Parent implements interpreter.Activation.
func (a *celVars) Parent() interpreter.Activation { return nil }

// jsonAdapter presents a decoded JSON value to CEL without copying it.
//
// Numbers, which the decoder keeps as written (json.Number), are doubles,
// as in CEL's own mapping of JSON (google.protobuf.Value): so the type of
// a field does not depend on whether its writer wrote 5 or 5.0, and
// value.price * 1.2 works for both. The exception is an integer too large
// for a double to hold exactly (beyond 2^53): it is an int, or a uint past
// int's range, so that a large id is not silently changed; past uint's
// range it is a double after all.
type jsonAdapter struct{}

// maxExactInt is the largest magnitude up to which every integer is a
// double exactly.
const maxExactInt = 1 << 53

func (jsonAdapter) NativeToValue(v any) ref.Val {
	switch x := v.(type) {
	case json.Number:
		s := string(x)
		if i, err := strconv.ParseInt(s, 10, 64); err == nil && (i > maxExactInt || i < -maxExactInt) {
			return types.Int(i)
		}
		if u, err := strconv.ParseUint(s, 10, 64); err == nil && u > maxExactInt {
			return types.Uint(u)
		}
		f, err := strconv.ParseFloat(s, 64)
		if err != nil && !errors.Is(err, strconv.ErrRange) {
			return types.NewErr("invalid JSON number %q", s)
		}
		return types.Double(f)
	case map[string]any:
		return types.NewStringInterfaceMap(jsonAdapter{}, x)
	case []any:
		return types.NewDynamicList(jsonAdapter{}, x)
	}
	return types.DefaultTypeAdapter.NativeToValue(v)
}

// toJSON converts a CEL value to what encodeJSON writes: null, bool,
// numbers, strings, lists, and maps with string keys. A timestamp becomes
// its RFC 3339 text and a duration its Go text ("1m30s"); bytes become
// base64 text, as in protobuf's JSON mapping. A double that is NaN or
// infinite, a map key that is not a string, and any other type are errors.
func toJSON(v ref.Val) (any, error) {
	switch x := v.(type) {
	case types.Null:
		return nil, nil
	case types.Bool:
		return bool(x), nil
	case types.Int:
		return json.Number(strconv.FormatInt(int64(x), 10)), nil
	case types.Uint:
		return json.Number(strconv.FormatUint(uint64(x), 10)), nil
	case types.Double:
		f := float64(x)
		if math.IsNaN(f) || math.IsInf(f, 0) {
			return nil, fmt.Errorf("%v has no JSON form", f)
		}
		return f, nil
	case types.String:
		return string(x), nil
	case types.Bytes:
		b, err := json.Marshal([]byte(x))
		if err != nil {
			return nil, err
		}
		var s string
		_ = json.Unmarshal(b, &s)
		return s, nil
	case types.Timestamp:
		return x.Time.UTC().Format(time.RFC3339Nano), nil
	case types.Duration:
		return x.Duration.String(), nil
	case traits.Lister:
		n, _ := x.Size().(types.Int)
		out := make([]any, 0, int(n))
		for i := types.Int(0); i < n; i++ {
			e, err := toJSON(x.Get(i))
			if err != nil {
				return nil, fmt.Errorf("[%d]: %w", i, err)
			}
			out = append(out, e)
		}
		return out, nil
	case traits.Mapper:
		out := make(map[string]any)
		it := x.Iterator()
		for it.HasNext() == types.True {
			k := it.Next()
			ks, ok := k.(types.String)
			if !ok {
				return nil, fmt.Errorf("map key %v is %s; JSON keys are strings", k, typeName(k))
			}
			e, err := toJSON(x.Get(k))
			if err != nil {
				return nil, fmt.Errorf(".%s: %w", ks, err)
			}
			out[string(ks)] = e
		}
		return out, nil
	case *types.Err:
		return nil, x
	}
	if v == nil {
		return nil, errors.New("no value")
	}
	return nil, fmt.Errorf("a %s has no JSON form", typeName(v))
}
