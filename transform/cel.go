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
	// Formats reads the source records' values and keys and writes the
	// outputs' (package format); nil: values are JSON, keys text.
	Formats Formats
	// StructuredKeys: the source's keys decode to values (a key format
	// such as avro or json), so expressions see key as a value (dyn)
	// rather than as text (string).
	StructuredKeys bool
	// Timestamp chooses the outputs' timestamps: "" or TimestampSource
	// (the source record's), TimestampNow (the time of writing), or a CEL
	// expression giving a timestamp.
	Timestamp string
}

// The output timestamps Options.Timestamp names without an expression.
const (
	TimestampSource = "source"
	TimestampNow    = "now"
)

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
// values (value.?field.orValue(x)), and the record's variables; key is
// text, or a value (dyn) for a chain whose source keys are structured
// (Options.StructuredKeys).
func celEnv(structuredKeys bool) (*cel.Env, error) {
	if structuredKeys {
		return celEnvDynKey()
	}
	return celEnvTextKey()
}

var (
	celEnvTextKey = sync.OnceValues(func() (*cel.Env, error) { return newCELEnv(cel.StringType) })
	celEnvDynKey  = sync.OnceValues(func() (*cel.Env, error) { return newCELEnv(cel.DynType) })
)

func newCELEnv(keyType *cel.Type) (*cel.Env, error) {
	return cel.NewEnv(
		cel.Variable(varValue, cel.DynType),
		cel.Variable(varValueBytes, cel.BytesType),
		cel.Variable(varKey, keyType),
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
}

// resultKind is what an expression must produce.
type resultKind int

const (
	resultAny    resultKind = iota // set, map: any value that has a JSON form
	resultBool                     // conditions and route cases
	resultTopic                    // route: a topic, a list of topics, "" or null
	resultTime                     // output.timestamp: a timestamp, or null
	resultHeader                   // header: a string, bytes, number or bool
)

func (k resultKind) String() string {
	switch k {
	case resultBool:
		return "a bool"
	case resultTopic:
		return "a topic name (string), a list of them, or null"
	case resultTime:
		return "a timestamp, or null"
	case resultHeader:
		return "a string, bytes, a number or a bool"
	}
	return "a value"
}

// program is a compiled, type-checked expression.
type program struct {
	path      string // "expr", "when.expr", "cases[1].expr": for errors
	prg       cel.Program
	costLimit uint64
	// structuredKeys: key is the key's value rather than its text.
	structuredKeys bool
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
func compileExpr(src string, result resultKind, o Options) (*cel.Ast, []exprError) {
	env, err := celEnv(o.StructuredKeys)
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
	case resultTime:
		return t.Kind() == types.TimestampKind || t.Kind() == types.NullTypeKind
	case resultHeader:
		switch t.Kind() {
		case types.StringKind, types.BytesKind, types.IntKind, types.UintKind, types.DoubleKind, types.BoolKind:
			return true
		}
		return false
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
func checkExpr(path, src string, result resultKind, o Options) []FieldError {
	_, errs := compileExpr(src, result, o)
	out := make([]FieldError, len(errs))
	for i, e := range errs {
		out[i] = FieldError{Path: path, Msg: e.msg, Line: e.line, Col: e.col, Snippet: e.snippet}
	}
	return out
}

// newProgram compiles src for evaluation. Spec validation has checked it
// already; an error here reports it again rather than panicking.
func newProgram(path, src string, result resultKind, o Options) (*program, error) {
	ast, errs := compileExpr(src, result, o)
	if len(errs) > 0 {
		fe := make([]FieldError, len(errs))
		for i, e := range errs {
			fe[i] = FieldError{Path: path, Msg: e.msg, Line: e.line, Col: e.col, Snippet: e.snippet}
		}
		return nil, &ValidationError{Errors: fe}
	}
	env, _ := celEnv(o.StructuredKeys)
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
	return &program{path: path, prg: prg, costLimit: limit, structuredKeys: o.StructuredKeys}, nil
}

// eval evaluates p against r. Errors are classified: a value or key that
// does not decode, when the expression needs it, fails as its decoder
// says (a permanent "json" error for a value that is not JSON, as for the
// other steps); any other evaluation error — a missing field, a wrong
// type, the cost limit — is a permanent "cel" error; an interrupted
// evaluation (ctx ended) is retryable.
func (p *program) eval(ctx context.Context, r *Record) (ref.Val, error) {
	vars := &celVars{ctx: ctx, r: r, structuredKeys: p.structuredKeys}
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
func (p *program) evalBool(ctx context.Context, r *Record) (bool, error) {
	v, err := p.eval(ctx, r)
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
func (p *program) evalTopics(ctx context.Context, r *Record) (topics []string, ok bool, err error) {
	v, err := p.eval(ctx, r)
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

// evalValue evaluates an expression whose result is stored in a value
// tree, converted as toValue does.
func (p *program) evalValue(ctx context.Context, r *Record) (any, error) {
	v, err := p.eval(ctx, r)
	if err != nil {
		return nil, err
	}
	x, err := toValue(v)
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
	ctx            context.Context
	r              *Record
	structuredKeys bool
	value          ref.Val
	key            ref.Val
	headers        ref.Val
	valueErr       error // why value or key could not be bound: it does not decode
}

// ResolveName implements interpreter.Activation.
func (a *celVars) ResolveName(name string) (any, bool) {
	r := a.r
	switch name {
	case varValue:
		if a.value == nil {
			x, err := r.value(a.ctx)
			if err != nil {
				a.valueErr = err
				a.value = types.NewErr("%v", err)
			} else {
				a.value = jsonAdapter{}.NativeToValue(x)
			}
		}
		return a.value, true
	case varValueBytes:
		return types.Bytes(r.val.bytesNow(r.Value, false)), true
	case varKey:
		if a.key == nil {
			a.key = a.keyVal()
		}
		return a.key, true
	case varKeyBytes:
		return types.Bytes(r.key.bytesNow(r.Key, true)), true
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

// keyVal binds key: the key's text (a null key is ""), or with
// structured keys its value.
func (a *celVars) keyVal() ref.Val {
	r := a.r
	if !a.structuredKeys {
		if !r.key.changed() {
			return types.String(r.Key)
		}
		if r.key.tree == nil {
			return types.String("")
		}
		return types.String(valueText(r.key.tree))
	}
	x, err := r.keyValue(a.ctx)
	if err != nil {
		a.valueErr = err
		return types.NewErr("%v", err)
	}
	return jsonAdapter{}.NativeToValue(x)
}

// Parent implements interpreter.Activation.
func (a *celVars) Parent() interpreter.Activation { return nil }

// jsonAdapter presents a value tree to CEL without copying it.
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
	case Duration:
		return types.Duration{Duration: time.Duration(x)}
	case time.Time:
		return types.Timestamp{Time: x}
	}
	return types.DefaultTypeAdapter.NativeToValue(v)
}

// toValue converts a CEL value to a value tree: null, bool, int64,
// uint64, float64, string, []byte, time.Time (UTC), Duration, lists and
// maps with string keys. A double that is NaN or infinite, a map key that
// is not a string, and any other type are errors.
func toValue(v ref.Val) (any, error) {
	switch x := v.(type) {
	case types.Null:
		return nil, nil
	case types.Bool:
		return bool(x), nil
	case types.Int:
		return int64(x), nil
	case types.Uint:
		return uint64(x), nil
	case types.Double:
		f := float64(x)
		if math.IsNaN(f) || math.IsInf(f, 0) {
			return nil, fmt.Errorf("%v has no JSON form", f)
		}
		return f, nil
	case types.String:
		return string(x), nil
	case types.Bytes:
		return []byte(x), nil
	case types.Timestamp:
		return x.Time.UTC(), nil
	case types.Duration:
		return Duration(x.Duration), nil
	case traits.Lister:
		n, _ := x.Size().(types.Int)
		out := make([]any, 0, int(n))
		for i := types.Int(0); i < n; i++ {
			e, err := toValue(x.Get(i))
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
				return nil, fmt.Errorf("map key %v is %s; keys are strings", k, typeName(k))
			}
			e, err := toValue(x.Get(k))
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
	return nil, fmt.Errorf("a %s has no value form", typeName(v))
}
