package deploy

import (
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

// The chart's tests (deploy/helm, a module of its own) write what the
// chart renders for a release of pipeline chartPipeline into these files,
// and fail when they are stale: the queries are checked here, with the
// scanner the dashboard's and the shipped rules' queries go through, and
// against the metrics the relay really exports.
const (
	chartRulesFile       = "helm/testdata/orders-alerts.yaml"
	chartAutoscalingFile = "helm/testdata/orders-autoscaling.yaml"
	chartPipeline        = "orders-to-jobs"
)

// chartAutoscaling is chartAutoscalingFile.
type chartAutoscaling struct {
	Pipeline  string `yaml:"pipeline"`
	KEDAQuery string `yaml:"kedaQuery"`
	HPAMetric struct {
		Name        string            `yaml:"name"`
		MatchLabels map[string]string `yaml:"matchLabels"`
	} `yaml:"hpaMetric"`
}

func readChartAutoscaling(t *testing.T) chartAutoscaling {
	t.Helper()
	b, err := os.ReadFile(chartAutoscalingFile)
	if err != nil {
		t.Fatal(err)
	}
	var a chartAutoscaling
	dec := yaml.NewDecoder(strings.NewReader(string(b)))
	dec.KnownFields(true)
	if err := dec.Decode(&a); err != nil {
		t.Fatalf("%s: %v", chartAutoscalingFile, err)
	}
	if a.Pipeline != chartPipeline {
		t.Fatalf("%s is for pipeline %q, want %q", chartAutoscalingFile, a.Pipeline, chartPipeline)
	}
	return a
}

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

func TestTheChartsAutoscalersReadTheLagOfItsPipeline(t *testing.T) {
	bySeries, _ := exported(t)
	a := readChartAutoscaling(t)
	const lag = "sharerelay_share_group_lag"

	t.Run("KEDA's query: the lag of each partition, the max over instances, of the pipeline alone", func(t *testing.T) {
		e, err := parsePromQL(a.KEDAQuery)
		if err != nil {
			t.Fatalf("%s: kedaQuery: %v", chartAutoscalingFile, err)
		}
		if !slices.Equal(e.names(), []string{lag}) {
			t.Errorf("kedaQuery reads %q, want %s alone", e.names(), lag)
		}
		for _, s := range e.selectors {
			if s.aggregation != "max" {
				t.Errorf("kedaQuery aggregates %s with %q first; every instance reports the same lag: take the max over instances", s.name, s.aggregation)
			}
		}
		if !slices.Equal(e.byLabels, []string{"partition", "topic"}) {
			t.Errorf("kedaQuery takes the max by %q, want by topic and partition (then summed)", e.byLabels)
		}
		if bad := unscoped(query{expr: e, text: a.KEDAQuery}, chartPipeline); len(bad) > 0 {
			t.Errorf("kedaQuery reads other pipelines' lag: %s", strings.Join(bad, ", "))
		}
	})

	t.Run("the HPA's External metric is the lag, selected by labels the relay puts on it", func(t *testing.T) {
		f, ok := bySeries[a.HPAMetric.Name]
		if !ok || f.name != lag {
			t.Fatalf("hpaMetric.name %q, want %s, a series the relay exports", a.HPAMetric.Name, lag)
		}
		for k := range a.HPAMetric.MatchLabels {
			if !slices.Contains(f.labels, k) {
				t.Errorf("hpaMetric selects on %s, which %s does not carry (it has %q)", k, f.name, f.labels)
			}
		}
		if a.HPAMetric.MatchLabels["pipeline"] != chartPipeline {
			t.Errorf("hpaMetric.matchLabels %v, want pipeline: %s", a.HPAMetric.MatchLabels, chartPipeline)
		}
	})
}

func TestLabelNamesReadsAMetricsDescription(t *testing.T) {
	got := labelNames(`Desc{fqName: "x", help: "a {b}", unit: "", constLabels: {pipeline="p",state="pending"}, variableLabels: {topic,c(partition)}}`)
	if want := []string{"pipeline", "state", "topic", "partition"}; !slices.Equal(got, want) {
		t.Errorf("labelNames = %q, want %q", got, want)
	}
}
