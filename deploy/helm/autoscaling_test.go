package helm

import (
	"strings"
	"testing"
	"time"

	kedav1alpha1 "github.com/kedacore/keda/v2/apis/keda/v1alpha1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	"k8s.io/apimachinery/pkg/api/resource"
)

// prometheusAddr is the Prometheus KEDA queries in the tests.
const prometheusAddr = "http://prometheus-operated.monitoring.svc:9090"

// autoscalingValues turns on the autoscaler kind ("keda" or "hpa") with
// the chart's defaults, and the lines of more (indented under
// autoscaling:, or under the autoscaler's own key when they start with
// four spaces) on top.
func autoscalingValues(kind, more string) string {
	own, shared := "", ""
	for _, l := range strings.SplitAfter(more, "\n") {
		if strings.HasPrefix(l, "    ") {
			own += l
		} else {
			shared += l
		}
	}
	v := "\nautoscaling:\n" + shared + "  " + kind + ":\n    enabled: true\n" + own
	if kind == "keda" {
		v += "    serverAddress: " + prometheusAddr + "\n"
	}
	return v
}

func TestKEDAScalesTheStatefulSetOnItsPipelinesLag(t *testing.T) {
	m := mustRender(t, securedValues+autoscalingValues("keda", ""))
	checkInvariants(t, m)
	if len(m.scaledObjects) != 1 || len(m.hpas) != 0 {
		t.Fatalf("%d ScaledObjects and %d HPAs, want the ScaledObject alone: KEDA makes its own HPA", len(m.scaledObjects), len(m.hpas))
	}
	so := m.scaledObjects[0]
	if ref := so.Spec.ScaleTargetRef; ref == nil || ref.Kind != "StatefulSet" || ref.APIVersion != "apps/v1" || ref.Name != m.statefulSet.Name {
		t.Errorf("scaleTargetRef %+v, want the StatefulSet %s", ref, m.statefulSet.Name)
	}
	// KEDA's own checks, as its admission webhook runs them.
	if err := kedav1alpha1.ValidateTriggers(so.Spec.Triggers); err != nil {
		t.Error(err)
	}
	if err := kedav1alpha1.CheckReplicaCountBoundsAreValid(so); err != nil {
		t.Error(err)
	}
	for _, c := range []struct {
		what      string
		got, want any
	}{
		{"minReplicaCount", deref(so.Spec.MinReplicaCount), int32(2)},
		{"maxReplicaCount", deref(so.Spec.MaxReplicaCount), int32(10)},
		{"pollingInterval", deref(so.Spec.PollingInterval), int32(30)},
		{"cooldownPeriod", deref(so.Spec.CooldownPeriod), int32(300)},
		{"the number of triggers", len(so.Spec.Triggers), 1},
	} {
		if c.got != c.want {
			t.Errorf("%s = %v, want %v", c.what, c.got, c.want)
		}
	}
	tr := so.Spec.Triggers[0]
	if tr.Type != "prometheus" || tr.MetricType != autoscalingv2.AverageValueMetricType {
		t.Errorf("trigger type %q, metricType %q; want prometheus, AverageValue (the threshold is a lag per instance)", tr.Type, tr.MetricType)
	}
	want := map[string]string{
		"serverAddress":       prometheusAddr,
		"query":               `sum(max by (topic, partition) (sharerelay_share_group_lag{pipeline="orders-to-jobs"}))`,
		"threshold":           "1000",
		"activationThreshold": "0",
		"ignoreNullValues":    "false",
	}
	for k, v := range want {
		if tr.Metadata[k] != v {
			t.Errorf("trigger metadata %s = %q, want %q", k, tr.Metadata[k], v)
		}
	}
	if len(tr.Metadata) != len(want) {
		t.Errorf("trigger metadata %v, want %v", tr.Metadata, want)
	}
	if bad := unscopedSelectors(tr.Metadata["query"], "orders-to-jobs"); len(bad) > 0 {
		t.Errorf("the query reads other pipelines' lag: %s", strings.Join(bad, ", "))
	}
	hpa := so.Spec.Advanced
	if hpa == nil || hpa.HorizontalPodAutoscalerConfig == nil || hpa.HorizontalPodAutoscalerConfig.Behavior == nil {
		t.Fatal("no advanced.horizontalPodAutoscalerConfig.behavior: KEDA's HPA would scale in at its default pace")
	}
	checkBehavior(t, hpa.HorizontalPodAutoscalerConfig.Behavior)
	if m.statefulSet.Spec.Replicas != nil {
		t.Errorf("the StatefulSet sets replicas %d, which every helm upgrade would reset under the autoscaler", *m.statefulSet.Spec.Replicas)
	}
	for _, s := range []string{"Autoscaling is on", "ScaledObject " + fullname, "between 2 and 10"} {
		if !strings.Contains(m.notes, s) {
			t.Errorf("NOTES.txt does not mention %q:\n%s", s, m.notes)
		}
	}
}

func TestAnHPAScalesTheStatefulSetOnItsPipelinesLagThroughAnExternalMetric(t *testing.T) {
	m := mustRender(t, securedValues+autoscalingValues("hpa", "  minReplicas: 3\n  maxReplicas: 12\n  targetLagPerReplica: 5000\n"))
	checkInvariants(t, m)
	if len(m.hpas) != 1 || len(m.scaledObjects) != 0 {
		t.Fatalf("%d HPAs and %d ScaledObjects, want the HPA alone", len(m.hpas), len(m.scaledObjects))
	}
	spec := m.hpas[0].Spec
	if ref := spec.ScaleTargetRef; ref.Kind != "StatefulSet" || ref.APIVersion != "apps/v1" || ref.Name != m.statefulSet.Name {
		t.Errorf("scaleTargetRef %+v, want the StatefulSet %s", ref, m.statefulSet.Name)
	}
	if deref(spec.MinReplicas) != 3 || spec.MaxReplicas != 12 {
		t.Errorf("replicas %d to %d, want 3 to 12", deref(spec.MinReplicas), spec.MaxReplicas)
	}
	if len(spec.Metrics) != 1 || spec.Metrics[0].Type != autoscalingv2.ExternalMetricSourceType || spec.Metrics[0].External == nil {
		t.Fatalf("metrics %+v, want one External metric", spec.Metrics)
	}
	ext := spec.Metrics[0].External
	if ext.Metric.Name != "sharerelay_share_group_lag" {
		t.Errorf("metric %q, want sharerelay_share_group_lag", ext.Metric.Name)
	}
	// The relay labels its lag with pipeline, topic and partition; only
	// pipeline names the release's share of it.
	if sel := ext.Metric.Selector; sel == nil || len(sel.MatchExpressions) != 0 || len(sel.MatchLabels) != 1 || sel.MatchLabels["pipeline"] != "orders-to-jobs" {
		t.Errorf("metric selector %+v, want matchLabels pipeline: orders-to-jobs alone", sel)
	}
	if tg := ext.Target; tg.Type != autoscalingv2.AverageValueMetricType || tg.AverageValue == nil || tg.AverageValue.Cmp(resource.MustParse("5000")) != 0 {
		t.Errorf("target %+v, want an averageValue of 5000 records an instance", tg)
	}
	checkBehavior(t, spec.Behavior)
	if m.statefulSet.Spec.Replicas != nil {
		t.Errorf("the StatefulSet sets replicas %d, which every helm upgrade would reset under the autoscaler", *m.statefulSet.Spec.Replicas)
	}
	if !strings.Contains(m.notes, "HorizontalPodAutoscaler "+fullname) {
		t.Errorf("NOTES.txt does not name the HPA:\n%s", m.notes)
	}
}

// checkBehavior checks the chart's default scaling behavior.
func checkBehavior(t *testing.T, b *autoscalingv2.HorizontalPodAutoscalerBehavior) {
	t.Helper()
	if b == nil || b.ScaleUp == nil || b.ScaleDown == nil {
		t.Fatalf("behavior %+v, want scaleUp and scaleDown", b)
	}
	if w := deref(b.ScaleDown.StabilizationWindowSeconds); w != 300 {
		t.Errorf("scaleDown.stabilizationWindowSeconds %d, want 300", w)
	}
	if p := b.ScaleDown.Policies; len(p) != 1 || p[0] != (autoscalingv2.HPAScalingPolicy{Type: autoscalingv2.PodsScalingPolicy, Value: 1, PeriodSeconds: 60}) {
		t.Errorf("scaleDown.policies %+v, want one pod a minute", p)
	}
	if p := b.ScaleUp.Policies; len(p) != 1 || p[0] != (autoscalingv2.HPAScalingPolicy{Type: autoscalingv2.PodsScalingPolicy, Value: 2, PeriodSeconds: 60}) {
		t.Errorf("scaleUp.policies %+v, want two pods a minute", p)
	}
}

func TestAtScaleInAPodsGraceCoversItsDrain(t *testing.T) {
	// securedValues drain for 30s with a transaction timeout of 20s:
	// the shutdown bound is 60s, the grace period 65s.
	const drain, bound, grace = 30 * time.Second, 60 * time.Second, 65
	plain := mustRender(t, securedValues)
	for _, kind := range []string{"keda", "hpa"} {
		t.Run(kind, func(t *testing.T) {
			m := mustRender(t, securedValues+autoscalingValues(kind, ""))
			pod := m.statefulSet.Spec.Template.Spec
			// A pod removed at scale-in is stopped as any other, with the
			// pod template's grace period: the same as without autoscaling.
			got := *pod.TerminationGracePeriodSeconds
			if got != *plain.statefulSet.Spec.Template.Spec.TerminationGracePeriodSeconds || got != grace {
				t.Errorf("terminationGracePeriodSeconds %d, want %d, as without autoscaling", got, grace)
			}
			if b := shutdownBound(t, pipelineOf(t, m)); b != bound || time.Duration(got)*time.Second < b || b < drain {
				t.Errorf("the grace period %ds does not cover the shutdown bound %s, batch.drain_timeout %s + output.transaction_timeout + 10s", got, b, drain)
			}
			var window, cooldown int32
			switch kind {
			case "keda":
				so := m.scaledObjects[0].Spec
				window = deref(so.Advanced.HorizontalPodAutoscalerConfig.Behavior.ScaleDown.StabilizationWindowSeconds)
				cooldown = deref(so.CooldownPeriod)
			case "hpa":
				window = deref(m.hpas[0].Spec.Behavior.ScaleDown.StabilizationWindowSeconds)
				cooldown = window
			}
			if int64(window) < got || int64(cooldown) < got {
				t.Errorf("scale-down window %ds, cooldown %ds: shorter than the drain budget %ds", window, cooldown, got)
			}
		})
	}
}

func TestAutoscalingValuesThatWouldScaleInFasterThanAPodDrainsFailTheInstall(t *testing.T) {
	for _, c := range []struct{ name, values, wantErr string }{
		{
			name:    "KEDA and an HPA together",
			values:  securedValues + "\nautoscaling:\n  keda: {enabled: true, serverAddress: " + prometheusAddr + "}\n  hpa: {enabled: true}\n",
			wantErr: "autoscaling.keda.enabled and autoscaling.hpa.enabled are both true",
		},
		{
			name:    "a KEDA cooldown shorter than the grace period",
			values:  securedValues + autoscalingValues("keda", "    cooldownPeriod: 60\n"),
			wantErr: "autoscaling.keda.cooldownPeriod 60 is shorter than the pods' drain budget, terminationGracePeriodSeconds 65",
		},
		{
			name:    "a scale-down window shorter than the grace period, with KEDA",
			values:  securedValues + autoscalingValues("keda", "  scaleDown: {stabilizationWindowSeconds: 64}\n"),
			wantErr: "autoscaling.scaleDown.stabilizationWindowSeconds 64 is shorter than the pods' drain budget, terminationGracePeriodSeconds 65",
		},
		{
			name:    "a scale-down window shorter than the grace period, with an HPA",
			values:  securedValues + autoscalingValues("hpa", "  scaleDown: {stabilizationWindowSeconds: 30}\n"),
			wantErr: "autoscaling.scaleDown.stabilizationWindowSeconds 30 is shorter",
		},
		{
			name:    "a window shorter than a grace period set by hand",
			values:  autoscalingValues("hpa", "  scaleDown: {stabilizationWindowSeconds: 300}\n") + "terminationGracePeriodSeconds: 400\n",
			wantErr: "terminationGracePeriodSeconds 400",
		},
		{
			name:    "no replica, which the relay's own lag could never scale up from",
			values:  autoscalingValues("hpa", "  minReplicas: 0\n"),
			wantErr: "minReplicas",
		},
		{
			name:    "fewer replicas at most than at least",
			values:  autoscalingValues("hpa", "  minReplicas: 4\n  maxReplicas: 3\n"),
			wantErr: "autoscaling.minReplicas 4 is above autoscaling.maxReplicas 3",
		},
		{
			name:    "KEDA without a Prometheus to ask",
			values:  "autoscaling:\n  keda: {enabled: true}\n",
			wantErr: "autoscaling.keda.serverAddress",
		},
		{
			name:    "an existing ConfigMap without pipeline.name, which the query needs",
			values:  "pipeline: {existingConfigMap: p}\n" + autoscalingValues("hpa", ""),
			wantErr: "pipeline.name",
		},
		{
			name:    "a scaling policy of an unknown type",
			values:  autoscalingValues("hpa", "  scaleUp: {policies: [{type: Replicas, value: 1, periodSeconds: 60}]}\n"),
			wantErr: "type",
		},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := render(c.values)
			if err == nil || !strings.Contains(err.Error(), c.wantErr) {
				t.Errorf("render: %v, want an error containing %q", err, c.wantErr)
			}
		})
	}
	t.Run("a cooldown and window of exactly the grace period pass", func(t *testing.T) {
		if _, err := render(securedValues + autoscalingValues("keda", "  scaleDown: {stabilizationWindowSeconds: 65}\n    cooldownPeriod: 65\n")); err != nil {
			t.Error(err)
		}
	})
}

func TestWithoutAutoscalingTheStatefulSetKeepsItsReplicas(t *testing.T) {
	m := mustRender(t, "replicas: 3\n")
	if r := m.statefulSet.Spec.Replicas; r == nil || *r != 3 {
		t.Errorf("replicas %s, want 3", show(r))
	}
	if len(m.hpas)+len(m.scaledObjects) != 0 {
		t.Errorf("%d HPAs and %d ScaledObjects rendered with autoscaling off", len(m.hpas), len(m.scaledObjects))
	}
	if strings.Contains(m.notes, "Autoscaling") {
		t.Errorf("NOTES.txt speaks of autoscaling, which is off:\n%s", m.notes)
	}
}

// deref returns what p points to, or T's zero value.
func deref[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}
