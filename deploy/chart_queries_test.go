package deploy

import (
	"fmt"
	"slices"
	"strings"
	"testing"
)

// The chart's tests (deploy/helm, a module of its own) write what the
// chart renders for a release of pipeline chartPipeline into this file,
// and fail when it is stale: its queries are checked here, with the
// scanner the dashboard's and the shipped rules' queries go through, and
// against the metrics the relay really exports.
const (
	chartRulesFile = "helm/testdata/orders-alerts.yaml"
	chartPipeline  = "orders-to-jobs"
)

// unscoped returns the selectors of q that do not match the pipeline
// label to pipeline: every series of the relay and its auditor carries
// it; up, which does not, must be joined on by a series that does.
func unscoped(q query, pipeline string) []string {
	var out []string
	want := fmt.Sprintf("pipeline=%q", pipeline)
	for i, s := range q.expr.selectors {
		if scrapeSeries[s.name] {
			if !strings.Contains(q.text, "group_left (pipeline)") {
				out = append(out, s.name+" (joined to no series of the pipeline)")
			}
			continue
		}
		m := strings.Trim(q.expr.matchers[i], "{}")
		if !slices.ContainsFunc(strings.Split(m, ","), func(x string) bool { return strings.TrimSpace(x) == want }) {
			out = append(out, s.name+q.expr.matchers[i])
		}
	}
	return out
}

func TestUnscopedFindsASelectorWithoutThePipeline(t *testing.T) {
	for expr, want := range map[string][]string{
		`sum(rate(sharerelay_a{pipeline="p"}[5m])) / sum(rate(sharerelay_b{x="y", pipeline="p"}[5m]))`: nil,
		`sum(rate(sharerelay_a[5m]))`:                      {"sharerelay_a"},
		`sharerelay_a{pipeline="q"} + sharerelay_b{x="y"}`: {`sharerelay_a{pipeline="q"}`, `sharerelay_b{x="y"}`},
		`up == 0`: {"up (joined to no series of the pipeline)"},
	} {
		e, err := parsePromQL(expr)
		if err != nil {
			t.Fatal(err)
		}
		if got := unscoped(query{expr: e, text: expr}, "p"); !slices.Equal(got, want) {
			t.Errorf("unscoped(%s) = %q, want %q", expr, got, want)
		}
	}
}

func TestTheChartsRulesReadTheRelaysMetricsOfItsPipelineOnly(t *testing.T) {
	bySeries, _ := exported(t)
	n := 0
	for _, g := range readRuleFile(t, chartRulesFile).Groups {
		for _, r := range g.Rules {
			n++
			where := fmt.Sprintf("%s: alert %s", chartRulesFile, r.Alert)
			e, err := parsePromQL(r.Expr)
			if err != nil {
				t.Errorf("%s: %v", where, err)
				continue
			}
			for _, name := range e.names() {
				if _, ok := bySeries[name]; !ok && !scrapeSeries[name] {
					t.Errorf("%s: %s is not a series the relay or its auditor exports", where, name)
				}
			}
			if bad := unscoped(query{where: where, expr: e, text: r.Expr}, chartPipeline); len(bad) > 0 {
				t.Errorf("%s: reads other pipelines' series: %s", where, strings.Join(bad, ", "))
			}
		}
	}
	if shipped := len(ruleQueries(t)); n != shipped {
		t.Errorf("%s has %d rules, %s %d", chartRulesFile, n, alertsFile, shipped)
	}
}
