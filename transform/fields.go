package transform

import (
	"fmt"
	"strings"

	"cel.dev/cel-go/common/ast"
	celops "cel.dev/cel-go/common/operators"
	"cel.dev/cel-go/common/types"

	"github.com/sharerelay/sharerelay/internal/caret"
)

// FieldRef is a field of the record's value a step names: a dotted path
// ("order.id") at Path in the spec ("field", "when.field", "expr",
// "cases[1].expr"); for a field an expression selects (value.order.id,
// value.?order.id, has(value.order.id)), Line and Col are where it is in
// the expression and Snippet shows them.
type FieldRef struct {
	Path      string
	Field     string
	Line, Col int
	Snippet   string
}

// Reads returns the fields of the value s reads, in spec order: its
// field (but for set, which creates it), the field of its When, and those
// its expressions select. An expression that does not compile names
// none (Validate reports it).
func (s Spec) Reads(o Options) []FieldRef {
	var out []FieldRef
	if s.Field != "" && s.Type != "set" {
		out = append(out, FieldRef{Path: "field", Field: s.Field})
	}
	if s.Expr != "" {
		out = append(out, exprFields("expr", s.Expr, o)...)
	}
	for i, c := range s.Cases {
		out = append(out, exprFields(fmt.Sprintf("cases[%d].expr", i), c.Expr, o)...)
	}
	if w := s.When; w != nil {
		if w.Field != "" {
			out = append(out, FieldRef{Path: "when.field", Field: w.Field})
		}
		if w.Expr != "" {
			out = append(out, exprFields("when.expr", w.Expr, o)...)
		}
	}
	return out
}

// Writes returns the fields s creates in the value (set's field, rename's
// to), and whether it replaces the value's shape altogether (map, split),
// after which nothing can be said of the fields a later step names.
func (s Spec) Writes() (fields []string, replaces bool) {
	switch s.Type {
	case "set":
		return []string{s.Field}, false
	case "rename":
		return []string{s.To}, false
	case "map", "split":
		return nil, true
	}
	return nil, false
}

// exprFields returns the fields of value the expression src selects.
func exprFields(path, src string, o Options) []FieldRef {
	a, errs := compileExpr(src, resultAny, o)
	if len(errs) > 0 || a == nil {
		return nil
	}
	native := a.NativeRep()
	x := newExprText(src)
	var out []FieldRef
	var walk func(e ast.Expr)
	add := func(e ast.Expr, field string) {
		loc := native.SourceInfo().GetStartLocation(e.ID())
		line, col := loc.Line(), loc.Column()+1
		if e.Kind() == ast.SelectKind {
			col++ // a selection is where its dot is: point at the name
		}
		ref := FieldRef{Path: path, Field: field, Line: line, Col: col}
		if line >= 1 && line <= len(x.lines) {
			ref.Snippet = caret.Under(x.lines[line-1], col)
		}
		out = append(out, ref)
	}
	walk = func(e ast.Expr) {
		if e == nil {
			return
		}
		if f, ok := valuePath(e); ok {
			add(e, f)
			return
		}
		switch e.Kind() {
		case ast.SelectKind:
			walk(e.AsSelect().Operand())
		case ast.CallKind:
			c := e.AsCall()
			if c.IsMemberFunction() {
				walk(c.Target())
			}
			for _, arg := range c.Args() {
				walk(arg)
			}
		case ast.ListKind:
			for _, el := range e.AsList().Elements() {
				walk(el)
			}
		case ast.MapKind:
			for _, en := range e.AsMap().Entries() {
				me := en.AsMapEntry()
				walk(me.Key())
				walk(me.Value())
			}
		case ast.StructKind:
			for _, f := range e.AsStruct().Fields() {
				walk(f.AsStructField().Value())
			}
		case ast.ComprehensionKind:
			c := e.AsComprehension()
			walk(c.IterRange())
			walk(c.AccuInit())
			walk(c.LoopCondition())
			walk(c.LoopStep())
			walk(c.Result())
		}
	}
	walk(native.Expr())
	return out
}

// valuePath reports whether e selects a field of value by name — a chain
// of selections (value.a.b), optional selections (value.?a.?b) and
// constant string indexes (value["a"]) — and its dotted path.
func valuePath(e ast.Expr) (string, bool) {
	var segs []string
	for {
		switch e.Kind() {
		case ast.IdentKind:
			if e.AsIdent() != varValue || len(segs) == 0 {
				return "", false
			}
			for i, j := 0, len(segs)-1; i < j; i, j = i+1, j-1 {
				segs[i], segs[j] = segs[j], segs[i]
			}
			return strings.Join(segs, "."), true
		case ast.SelectKind:
			s := e.AsSelect()
			segs = append(segs, s.FieldName())
			e = s.Operand()
		case ast.CallKind:
			c := e.AsCall()
			if (c.FunctionName() != celops.OptSelect && c.FunctionName() != celops.Index) || len(c.Args()) != 2 {
				return "", false
			}
			k := c.Args()[1]
			if k.Kind() != ast.LiteralKind {
				return "", false
			}
			name, ok := k.AsLiteral().(types.String)
			if !ok {
				return "", false
			}
			segs = append(segs, string(name))
			e = c.Args()[0]
		default:
			return "", false
		}
	}
}
