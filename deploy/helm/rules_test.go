package helm

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	"sigs.k8s.io/yaml"
)

// update rewrites the files generated from the chart (the shipped alerts,
// the golden files under testdata/) instead of comparing them.
var update = flag.Bool("update", false, "rewrite the files generated from the chart instead of comparing them")

// unscopedRules renders the chart's rules with its default thresholds and
// no pipeline: the body of deploy/prometheus/sharerelay-alerts.yaml.
const unscopedRules = `{{ include "sharerelay.alertRules" (dict "alerts" .Values.prometheusRule.alerts "pipeline" "") }}`

// relaySelector matches a selector of a relay or auditor metric in a
// PromQL expression (every one is named sharerelay_*, which deploy's tests
// hold the relay to) or of up, with its matchers if it has any.
var relaySelector = regexp.MustCompile(`\b(sharerelay_[a-zA-Z0-9_:]*|up)\b(\{[^}]*\})?`)

// unscopedSelectors returns the selectors of expr that do not match
// pipeline="<pipeline>": the relay's and auditor's series carry that
// label, so each of their selectors must match it; up has no pipeline
// label and is scoped by a join that takes it from one that has.
func unscopedSelectors(expr, pipeline string) []string {
	matcher := regexp.MustCompile(`[{,]\s*pipeline=` + regexp.QuoteMeta(fmt.Sprintf("%q", pipeline)) + `\s*[,}]`)
	var out []string
	for _, m := range relaySelector.FindAllStringSubmatch(expr, -1) {
		name, matchers := m[1], m[2]
		if name == "up" {
			if !strings.Contains(expr, "group_left (pipeline)") {
				out = append(out, m[0]+" (joined to no series of the pipeline)")
			}
			continue
		}
		if !matcher.MatchString(matchers) {
			out = append(out, m[0])
		}
	}
	return out
}

// unscope removes the matchers of pipeline from spec's expressions, as
// the chart would have rendered them with no pipeline.
func unscope(spec monitoringv1.PrometheusRuleSpec, pipeline string) monitoringv1.PrometheusRuleSpec {
	var out monitoringv1.PrometheusRuleSpec
	b, _ := json.Marshal(spec)
	_ = json.Unmarshal(b, &out)
	m := fmt.Sprintf("pipeline=%q", pipeline)
	for i := range out.Groups {
		for j := range out.Groups[i].Rules {
			r := &out.Groups[i].Rules[j]
			e := strings.ReplaceAll(r.Expr.String(), "{"+m+"}", "")
			r.Expr.StrVal = strings.ReplaceAll(e, m+", ", "")
		}
	}
	return out
}

func TestUnscopedSelectorsFindsEveryMetricWithoutThePipelinesMatcher(t *testing.T) {
	for _, c := range []struct {
		name, expr string
		want       []string
	}{
		{
			name: "a selector matching the pipeline alone, or among other matchers, is scoped",
			expr: `sum(rate(sharerelay_a_total{pipeline="orders"}[5m])) / sum(rate(sharerelay_b_total{outcome="x", pipeline="orders"}[5m]))`,
		},
		{
			name: "a bare metric is not",
			expr: `sum(rate(sharerelay_a_total[5m])) > 0`,
			want: []string{"sharerelay_a_total"},
		},
		{
			name: "nor one with other matchers only",
			expr: `sharerelay_a_total{outcome="aborted"} > 0`,
			want: []string{`sharerelay_a_total{outcome="aborted"}`},
		},
		{
			name: "nor one matching another pipeline, or a name that only starts alike",
			expr: `sharerelay_a{pipeline="orders-2"} + sharerelay_b{pipelines="orders"}`,
			want: []string{`sharerelay_a{pipeline="orders-2"}`, `sharerelay_b{pipelines="orders"}`},
		},
		{
			name: "up alone is not scoped",
			expr: `up == 0`,
			want: []string{"up (joined to no series of the pipeline)"},
		},
		{
			name: "up joined to a scoped series is",
			expr: `(up == 0) * on (job, instance) group_left (pipeline) group by (job, instance, pipeline) (sharerelay_ready{pipeline="orders"})`,
		},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := unscopedSelectors(c.expr, "orders"); !slices.Equal(got, c.want) {
				t.Errorf("unscopedSelectors = %q, want %q", got, c.want)
			}
		})
	}
}

// checkRuleScoped checks that every expression of rule reads the
// pipeline's series only.
func checkRulesScoped(t *testing.T, spec monitoringv1.PrometheusRuleSpec, pipeline string) {
	t.Helper()
	n := 0
	for _, g := range spec.Groups {
		for _, r := range g.Rules {
			n++
			if bad := unscopedSelectors(r.Expr.String(), pipeline); len(bad) > 0 {
				t.Errorf("group %s, alert %s: selectors not scoped to pipeline %q: %s", g.Name, r.Alert, pipeline, strings.Join(bad, ", "))
			}
		}
	}
	if n == 0 {
		t.Error("the PrometheusRule has no rule")
	}
}

func TestTheShippedAlertsAreTheChartsRulesForEveryPipeline(t *testing.T) {
	body, err := renderText("", unscopedRules)
	if err != nil {
		t.Fatal(err)
	}
	body = strings.TrimSpace(body) + "\n"
	raw, err := os.ReadFile(shippedAlerts)
	if err != nil {
		t.Fatal(err)
	}
	// The file's opening comments are its own; the rest is the chart's.
	lines := strings.SplitAfter(string(raw), "\n")
	header := ""
	for _, l := range lines {
		if !strings.HasPrefix(l, "#") {
			break
		}
		header += l
	}
	want := header + body
	if *update {
		if err := os.WriteFile(shippedAlerts, []byte(want), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	if string(raw) != want {
		t.Errorf("deploy/%s is not the chart's rules (templates/_alerts.tpl) with the default thresholds and no pipeline: edit the template, then run\n\tcd deploy/helm && go test -run %s -update", strings.TrimPrefix(shippedAlerts, "../"), t.Name())
	}
}

func TestThePrometheusRuleIsTheShippedAlertsScopedToTheReleasesPipeline(t *testing.T) {
	m := mustRender(t, securedValues)
	if len(m.prometheusRules) != 1 {
		t.Fatalf("%d PrometheusRules, want 1", len(m.prometheusRules))
	}
	got := m.prometheusRules[0].Spec
	checkRulesScoped(t, got, "orders-to-jobs")
	shipped := shippedRules(t)
	if u := unscope(got, "orders-to-jobs"); !reflect.DeepEqual(u, shipped) {
		g, _ := json.MarshalIndent(u, "", " ")
		w, _ := json.MarshalIndent(shipped, "", " ")
		t.Errorf("the PrometheusRule's spec, its pipeline matchers removed, differs from %s:\n%s\nwant:\n%s", shippedAlerts, g, w)
	}
}

func TestThePrometheusRulesThresholdsAreValues(t *testing.T) {
	m := mustRender(t, securedValues+`
  alerts:
    shareGroupLagRising: {records: 250000, for: 30m}
    workerPaused: {for: 5m}
    instanceNotReady: {for: 10m}
    pipelineNotReady: {for: 5m}
    pipelineDown: {for: 5m}
    instanceDown: {for: 5m}
    transactionsAborting: {ratio: 0.1, for: 15m}
    deadLetterRateHigh: {ratio: 0.2, for: 1h}
    lockBudgetNearlySpent: {ratio: 0.9, for: 10m}
    unsettledClaims: {for: 15m}
    retiredIdHangingTransaction: {for: 2m}
    auditLagGrowing: {seconds: 1800, for: 5m}
`)
	rules := map[string]monitoringv1.Rule{}
	for _, g := range m.prometheusRules[0].Spec.Groups {
		for _, r := range g.Rules {
			rules[r.Alert] = r
		}
	}
	for _, c := range []struct {
		alert, expr, for_, text string
	}{
		{"SharerelayShareGroupLagRising", ") > 250000\n", "30m", "above 250000 and has been rising for 30m"},
		{"SharerelayDeadLetterRateHigh", "\n> 0.2\n", "1h", "The threshold (20%)"},
		{"SharerelayLockBudgetNearlySpent", "[10m]))) > 0.9", "10m", ""},
		{"SharerelayAuditLagGrowing", ") > 1800\n", "5m", ""},
	} {
		r := rules[c.alert]
		if !strings.Contains(r.Expr.String(), c.expr) {
			t.Errorf("%s: expr\n%s\nlacks %q", c.alert, r.Expr.String(), c.expr)
		}
		if r.For == nil || string(*r.For) != c.for_ {
			t.Errorf("%s: for %s, want %s", c.alert, show(r.For), c.for_)
		}
		if text := r.Annotations["summary"] + " " + r.Annotations["description"]; !strings.Contains(text, c.text) {
			t.Errorf("%s: the annotations do not say %q:\n%s", c.alert, c.text, text)
		}
	}
	t.Run("a threshold of the wrong kind, or a misspelled one, fails the install", func(t *testing.T) {
		for _, v := range []string{
			"prometheusRule:\n  alerts:\n    deadLetterRateHigh: {ratio: 5, for: 10m}\n",
			"prometheusRule:\n  alerts:\n    deadLetterRateHigh: {ratio: 0.05, for: 10 minutes}\n",
			"prometheusRule:\n  alerts:\n    deadLetterRateHigh: {rate: 0.05, for: 10m}\n",
		} {
			if _, err := render(v); err == nil {
				t.Errorf("render(%q) succeeded", v)
			}
		}
	})
}

func TestThePrometheusRuleNeedsThePipelinesName(t *testing.T) {
	for _, c := range []struct{ name, values, wantErr, wantPipeline string }{
		{
			name:    "an existing ConfigMap, which the chart cannot read, without pipeline.name",
			values:  "pipeline:\n  existingConfigMap: my-pipeline\nprometheusRule:\n  enabled: true\n",
			wantErr: "pipeline.name: the chart cannot read the pipeline's name",
		},
		{
			name:         "an existing ConfigMap with pipeline.name",
			values:       "pipeline:\n  existingConfigMap: my-pipeline\n  name: payments\nprometheusRule:\n  enabled: true\n",
			wantPipeline: "payments",
		},
		{
			name:    "a pipeline.name that is not the name of pipeline.config",
			values:  "pipeline:\n  name: payments\nprometheusRule:\n  enabled: true\n",
			wantErr: `pipeline.name "payments" is not the name pipeline.config gives, "orders-to-jobs"`,
		},
		{
			name:         "a name written as a variable the chart sets in env",
			values:       "pipeline:\n  config: |\n    name: ${PIPELINE}\n    metrics: {listen: \"${RELAY_METRICS_ADDR}\"}\nenv:\n  PIPELINE: refunds\nprometheusRule:\n  enabled: true\n",
			wantPipeline: "refunds",
		},
	} {
		t.Run(c.name, func(t *testing.T) {
			m, err := render(c.values)
			if c.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), c.wantErr) {
					t.Fatalf("render: %v, want an error containing %q", err, c.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			checkRulesScoped(t, m.prometheusRules[0].Spec, c.wantPipeline)
		})
	}
}

// goldenQueries is what the chart renders for the deploy package's and
// the rule tests' own checks, which cannot render the chart (Helm is not
// in their modules): the secured release's rule file, and its
// autoscalers' query, metric and selector.
const (
	goldenRules      = "testdata/orders-alerts.yaml"
	goldenAutoscaler = "testdata/orders-autoscaling.yaml"
)

// checkGolden compares got with the file at path, or writes it with -update.
func checkGolden(t *testing.T, path string, got []byte) {
	t.Helper()
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("deploy/helm/%s is not what the chart renders now: run\n\tcd deploy/helm && go test -run %s -update", path, t.Name())
	}
}

// goldenHeader opens each golden file.
const goldenHeader = "# Generated by deploy/helm's tests from the chart (release orders, pipeline\n# orders-to-jobs): do not edit; go test -run TestTheGoldenFilesAreWhatTheChartRenders -update.\n"

func TestTheGoldenFilesAreWhatTheChartRenders(t *testing.T) {
	m := mustRender(t, securedValues+autoscalingValues("keda", ""))
	spec, err := yaml.Marshal(m.prometheusRules[0].Spec)
	if err != nil {
		t.Fatal(err)
	}
	checkGolden(t, goldenRules, append([]byte(goldenHeader+"# The PrometheusRule's spec: a Prometheus rule file.\n"), spec...))

	h := mustRender(t, securedValues+autoscalingValues("hpa", "")).hpas[0].Spec.Metrics[0].External.Metric
	queries, err := yaml.Marshal(map[string]any{
		"pipeline":  "orders-to-jobs",
		"kedaQuery": m.scaledObjects[0].Spec.Triggers[0].Metadata["query"],
		"hpaMetric": map[string]any{"name": h.Name, "matchLabels": h.Selector.MatchLabels},
	})
	if err != nil {
		t.Fatal(err)
	}
	checkGolden(t, goldenAutoscaler, append([]byte(goldenHeader+"# The KEDA trigger's query, and the HPA's External metric.\n"), queries...))
}
