package helm

import (
	"testing"

	"helm.sh/helm/v4/pkg/chart/v2/lint"
	"helm.sh/helm/v4/pkg/chart/v2/lint/support"
	"sigs.k8s.io/yaml"
)

func TestTheChartPassesHelmLintStrict(t *testing.T) {
	for _, c := range []struct{ name, values string }{
		{"the default values", ""},
		{"the secured values", securedValues},
		{"the secured values with the live audit", securedValues + auditValues},
		{"the secured values with KEDA", securedValues + autoscalingValues("keda", "")},
		{"the secured values with an HPA", securedValues + autoscalingValues("hpa", "")},
	} {
		t.Run(c.name, func(t *testing.T) {
			var values map[string]any
			if err := yaml.Unmarshal([]byte(c.values), &values); err != nil {
				t.Fatal(err)
			}
			// helm lint --strict fails on a warning as on an error;
			// information (a chart without an icon) passes.
			for _, msg := range lint.RunAll(chartDir, values, namespace).Messages {
				if msg.Severity >= support.WarningSev {
					t.Error(msg)
				} else {
					t.Log(msg)
				}
			}
		})
	}
}
