package deploy

import (
	"fmt"
	"slices"
	"strings"
	"testing"
)

// The metric names of a PromQL expression are read with this small
// scanner rather than Prometheus's own parser: promql/parser resolves from
// the module proxy, but requiring it moves versions the relay itself
// builds with (golang.org/x/exp, genproto, go-isatty) for the sake of a
// test. The scanner knows enough of the grammar to tell a metric from a
// function, a keyword, a label or a duration, and rejects unbalanced
// brackets and selectors without a metric name.

// selector is one metric named in an expression.
type selector struct {
	name string
	// aggregation is the innermost aggregation operator around it ("max",
	// "sum", ...), or "" when there is none.
	aggregation string
}

// parsedExpr is what the scanner reads from one expression.
type parsedExpr struct {
	selectors []selector
	// matchers holds, for each selector, its label matchers as written
	// ({a="b"}), or "" when it has none.
	matchers []string
	// byLabels are the labels named in every by (...) clause: the labels
	// an alert's $labels can hold when its expression aggregates.
	byLabels []string
}

// names returns the distinct metric names, sorted.
func (p parsedExpr) names() []string {
	var out []string
	for _, s := range p.selectors {
		out = append(out, s.name)
	}
	slices.Sort(out)
	return slices.Compact(out)
}

var (
	aggregators = set("sum", "min", "max", "avg", "group", "stddev", "stdvar", "count",
		"count_values", "bottomk", "topk", "quantile", "limitk", "limit_ratio")
	keywords = set("and", "or", "unless", "atan2", "bool", "offset", "inf", "nan")
	grouping = set("by", "without", "on", "ignoring", "group_left", "group_right")
)

func set(words ...string) map[string]bool {
	m := map[string]bool{}
	for _, w := range words {
		m[w] = true
	}
	return m
}

type tokKind int

const (
	tIdent tokKind = iota
	tNumber
	tString
	tSelector // {...}
	tRange    // [...]
	tLParen
	tRParen
	tOther
)

type token struct {
	kind tokKind
	text string
}

// lex splits expr into tokens. Label matchers ({...}), ranges and
// subqueries ([...]) become one token each; Grafana variables ($name,
// ${name}) count as numbers.
func lex(expr string) ([]token, error) {
	var out []token
	for i := 0; i < len(expr); {
		c := expr[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			i++
		case c == '#':
			for i < len(expr) && expr[i] != '\n' {
				i++
			}
		case c == '"' || c == '\'' || c == '`':
			j, err := skipString(expr, i)
			if err != nil {
				return nil, err
			}
			out = append(out, token{tString, expr[i:j]})
			i = j
		case c == '{' || c == '[':
			closing := byte('}')
			if c == '[' {
				closing = ']'
			}
			j := i + 1
			for ; j < len(expr) && expr[j] != closing; j++ {
				if q := expr[j]; q == '"' || q == '\'' || q == '`' {
					k, err := skipString(expr, j)
					if err != nil {
						return nil, err
					}
					j = k - 1
				}
			}
			if j == len(expr) {
				return nil, fmt.Errorf("%q at offset %d is never closed", c, i)
			}
			kind := tSelector
			if c == '[' {
				kind = tRange
			}
			out = append(out, token{kind, expr[i : j+1]})
			i = j + 1
		case c == '}' || c == ']':
			return nil, fmt.Errorf("%q at offset %d closes nothing", c, i)
		case c == '(':
			out = append(out, token{tLParen, "("})
			i++
		case c == ')':
			out = append(out, token{tRParen, ")"})
			i++
		case c >= '0' && c <= '9' || c == '.' && i+1 < len(expr) && expr[i+1] >= '0' && expr[i+1] <= '9':
			j := i
			for j < len(expr) && (isIdentByte(expr[j]) || expr[j] == '.') {
				j++
			}
			out = append(out, token{tNumber, expr[i:j]})
			i = j
		case c == '$':
			j := i + 1
			if j < len(expr) && expr[j] == '{' {
				for j < len(expr) && expr[j] != '}' {
					j++
				}
				j++
			} else {
				for j < len(expr) && isIdentByte(expr[j]) {
					j++
				}
			}
			out = append(out, token{tNumber, expr[i:min(j, len(expr))]})
			i = j
		case isIdentByte(c) || c == ':':
			j := i
			for j < len(expr) && (isIdentByte(expr[j]) || expr[j] == ':') {
				j++
			}
			out = append(out, token{tIdent, expr[i:j]})
			i = j
		default:
			out = append(out, token{tOther, string(c)})
			i++
		}
	}
	return out, nil
}

func isIdentByte(c byte) bool {
	return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

// skipString returns the offset just past the string literal at i.
func skipString(s string, i int) (int, error) {
	q := s[i]
	for j := i + 1; j < len(s); j++ {
		switch {
		case s[j] == '\\' && q != '`':
			j++
		case s[j] == q:
			return j + 1, nil
		}
	}
	return 0, fmt.Errorf("string at offset %d is never closed", i)
}

// parsePromQL reads the metrics an expression selects, the aggregation
// around each, and the labels of its by clauses.
func parsePromQL(expr string) (parsedExpr, error) {
	toks, err := lex(expr)
	if err != nil {
		return parsedExpr{}, err
	}
	var out parsedExpr
	var stack []string // per open parenthesis: the function or aggregator it calls, or ""
	callee := ""       // what the next "(" calls: a function, or an aggregator (its by clause may come first)
	for i := 0; i < len(toks); i++ {
		t := toks[i]
		next := func() token {
			if i+1 < len(toks) {
				return toks[i+1]
			}
			return token{kind: tOther}
		}
		switch t.kind {
		case tLParen:
			name := callee
			callee = ""
			stack = append(stack, name)
		case tRParen:
			if len(stack) == 0 {
				return parsedExpr{}, fmt.Errorf("unbalanced ')' in %q", expr)
			}
			stack = stack[:len(stack)-1]
		case tSelector:
			if i == 0 || toks[i-1].kind != tIdent {
				return parsedExpr{}, fmt.Errorf("selector %s without a metric name: name the metric so it can be checked", t.text)
			}
		case tIdent:
			w := strings.ToLower(t.text)
			switch {
			case grouping[w]:
				if next().kind != tLParen {
					continue // group_left without labels
				}
				j := i + 2
				for ; j < len(toks) && toks[j].kind != tRParen; j++ {
					if toks[j].kind == tIdent && w == "by" {
						out.byLabels = append(out.byLabels, toks[j].text)
					}
				}
				if j == len(toks) {
					return parsedExpr{}, fmt.Errorf("%s ( is never closed in %q", w, expr)
				}
				i = j
			case aggregators[w] && next().kind == tIdent && grouping[strings.ToLower(next().text)]:
				callee = w
			case next().kind == tLParen:
				callee = w
			case keywords[w]:
			default:
				agg := ""
				for k := len(stack) - 1; k >= 0; k-- {
					if aggregators[stack[k]] {
						agg = stack[k]
						break
					}
				}
				out.selectors = append(out.selectors, selector{name: t.text, aggregation: agg})
				m := ""
				if next().kind == tSelector {
					m = next().text
				}
				out.matchers = append(out.matchers, m)
			}
		}
	}
	if len(stack) > 0 {
		return parsedExpr{}, fmt.Errorf("%d unclosed '(' in %q", len(stack), expr)
	}
	slices.Sort(out.byLabels)
	out.byLabels = slices.Compact(out.byLabels)
	return out, nil
}

// labelValuesMetric returns the metric a Grafana label_values(metric,
// label) variable query reads, "" for label_values(label).
func labelValuesMetric(q string) (parsedExpr, bool, error) {
	q = strings.TrimSpace(q)
	if !strings.HasPrefix(q, "label_values(") || !strings.HasSuffix(q, ")") {
		return parsedExpr{}, false, nil
	}
	inner := q[len("label_values(") : len(q)-1]
	comma := strings.LastIndex(inner, ",")
	if comma < 0 {
		return parsedExpr{}, true, nil
	}
	p, err := parsePromQL(inner[:comma])
	return p, true, err
}

func TestParsePromQL(t *testing.T) {
	type sel = selector
	tests := []struct {
		name    string
		expr    string
		want    []selector
		by      []string
		wantErr string
	}{
		{
			name: "a histogram quantile names the bucket series under its aggregation",
			expr: `histogram_quantile(0.99, sum by (pipeline, le) (rate(sharerelay_x_bucket{a="b"}[5m])))`,
			want: []sel{{"sharerelay_x_bucket", "sum"}},
			by:   []string{"le", "pipeline"},
		},
		{
			name: "grouping labels of on, ignoring and group_left are not metrics",
			expr: `a / on (x) group_left (y) b + ignoring (z) c * group_right d`,
			want: []sel{{"a", ""}, {"b", ""}, {"c", ""}, {"d", ""}},
		},
		{
			name: "set operators, comparisons and offsets are not metrics",
			expr: "max(x) > 1000 and deriv(y[15m]) > 0 or z unless z offset 15m",
			want: []sel{{"x", "max"}, {"y", ""}, {"z", ""}, {"z", ""}},
		},
		{
			name: "the innermost aggregation counts, after a trailing by clause too",
			expr: "sum by (t) (max by (t, p) (deriv(lag[15m]))) + sum(lag) by (t)",
			want: []sel{{"lag", "max"}, {"lag", "sum"}},
			by:   []string{"p", "t"},
		},
		{
			name: "Grafana variables and strings holding brackets are skipped",
			expr: `sum(rate(x{p=~"$pipeline", q="}"}[$__rate_interval])) or vector(0)`,
			want: []sel{{"x", "sum"}},
		},
		{
			name: "a comment is skipped",
			expr: "x # not_a_metric\n",
			want: []sel{{"x", ""}},
		},
		{name: "an unclosed parenthesis is an error", expr: "sum(x", wantErr: "unclosed"},
		{name: "an extra parenthesis is an error", expr: "sum(x))", wantErr: "unbalanced"},
		{name: "an unclosed selector is an error", expr: `x{a="b"`, wantErr: "never closed"},
		{name: "a selector without a metric name is an error", expr: `{__name__="x"}`, wantErr: "without a metric name"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parsePromQL(tt.expr)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error = %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got.selectors, tt.want) {
				t.Errorf("selectors = %v, want %v", got.selectors, tt.want)
			}
			if !slices.Equal(got.byLabels, tt.by) {
				t.Errorf("by labels = %q, want %q", got.byLabels, tt.by)
			}
		})
	}
}

func TestParsePromQLKeepsEachSelectorsMatchers(t *testing.T) {
	p, err := parsePromQL(`sum(rate(a{pipeline="p", x=~"}"}[5m])) / b offset 5m + c{}`)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{`{pipeline="p", x=~"}"}`, "", "{}"}; !slices.Equal(p.matchers, want) {
		t.Errorf("matchers = %q, want %q", p.matchers, want)
	}
}

func TestLabelValuesMetric(t *testing.T) {
	p, ok, err := labelValuesMetric(`label_values(sharerelay_ready{pipeline=~"$pipeline"}, instance)`)
	if err != nil || !ok || !slices.Equal(p.names(), []string{"sharerelay_ready"}) {
		t.Errorf("label_values(metric, label) = %v, %v, %v; want sharerelay_ready", p.names(), ok, err)
	}
	if p, ok, _ := labelValuesMetric("label_values(pipeline)"); !ok || len(p.names()) != 0 {
		t.Errorf("label_values(label) = %v, %v; want no metric", p.names(), ok)
	}
}
