package helm

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"

	kedav1alpha1 "github.com/kedacore/keda/v2/apis/keda/v1alpha1"
	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	"helm.sh/helm/v4/pkg/chart/common"
	chartutil "helm.sh/helm/v4/pkg/chart/common/util"
	chart "helm.sh/helm/v4/pkg/chart/v2"
	"helm.sh/helm/v4/pkg/chart/v2/loader"
	"helm.sh/helm/v4/pkg/engine"
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"
)

// The release every test installs: its objects are named
// orders-sharerelay, its pods orders-sharerelay-0, -1, ...
const (
	chartDir  = "sharerelay"
	release   = "orders"
	namespace = "relays"
	fullname  = "orders-sharerelay"
)

// manifests is what one helm install of the chart would create, each
// object decoded into its type.
type manifests struct {
	statefulSet     *appsv1.StatefulSet
	configMaps      []*corev1.ConfigMap
	services        []*corev1.Service
	serviceAccounts []*corev1.ServiceAccount
	pdbs            []*policyv1.PodDisruptionBudget
	serviceMonitors []*monitoringv1.ServiceMonitor
	prometheusRules []*monitoringv1.PrometheusRule
	// deployments is the live audit's, when audit.enabled.
	deployments   []*appsv1.Deployment
	hpas          []*autoscalingv2.HorizontalPodAutoscaler
	scaledObjects []*kedav1alpha1.ScaledObject
	// kinds lists every object as apiVersion/kind name, in file order.
	kinds []string
	// notes is NOTES.txt, which helm install prints.
	notes string
	// values are the values the templates saw: the chart's defaults
	// with the test's on top.
	values common.Values
}

// render renders the chart as helm install would with valuesYAML on top
// of the chart's values.yaml (values.schema.json checked, a missing value
// an error as with helm lint --strict), and decodes every object strictly:
// an unknown field, a kind with no type here, or a Secret is an error.
func render(valuesYAML string) (*manifests, error) {
	ch, err := loader.Load(chartDir)
	if err != nil {
		return nil, fmt.Errorf("loading the chart: %w", err)
	}
	files, vals, err := renderChart(ch, valuesYAML)
	if err != nil {
		return nil, err
	}
	m := &manifests{values: vals["Values"].(common.Values)}
	for _, name := range slices.Sorted(maps.Keys(files)) {
		if strings.HasSuffix(name, "/NOTES.txt") {
			m.notes = files[name]
			continue
		}
		if err := m.decode(name, files[name]); err != nil {
			return nil, err
		}
	}
	return m, nil
}

// renderChart renders ch as helm install would with valuesYAML on top of
// its values, and returns every file and the values the templates saw.
func renderChart(ch *chart.Chart, valuesYAML string) (map[string]string, common.Values, error) {
	var overrides map[string]any
	if err := yaml.Unmarshal([]byte(valuesYAML), &overrides); err != nil {
		return nil, nil, fmt.Errorf("the test's values: %w", err)
	}
	opts := common.ReleaseOptions{Name: release, Namespace: namespace, Revision: 1, IsInstall: true}
	vals, err := chartutil.ToRenderValuesWithSchemaValidation(ch, overrides, opts, nil, false)
	if err != nil {
		return nil, nil, err
	}
	files, err := engine.Engine{Strict: true}.RenderWithContext(context.Background(), ch, vals)
	if err != nil {
		return nil, nil, err
	}
	return files, vals, nil
}

// renderText renders text as if it were one more template of the chart,
// with valuesYAML on top of the chart's values: a way to call the chart's
// named templates (include) with arguments no values file can give.
func renderText(valuesYAML, text string) (string, error) {
	ch, err := loader.Load(chartDir)
	if err != nil {
		return "", fmt.Errorf("loading the chart: %w", err)
	}
	const name = "templates/zz-test.yaml"
	ch.Templates = append(ch.Templates, &common.File{Name: name, Data: []byte(text)})
	files, _, err := renderChart(ch, valuesYAML)
	if err != nil {
		return "", err
	}
	return files[ch.Name()+"/"+name], nil
}

// decode adds the objects of one rendered file to m.
func (m *manifests) decode(file, text string) error {
	r := utilyaml.NewYAMLReader(bufio.NewReader(strings.NewReader(text)))
	for {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("%s: %w", file, err)
		}
		var generic map[string]any
		if err := yaml.Unmarshal(doc, &generic); err != nil {
			return fmt.Errorf("%s: not YAML: %w\n%s", file, err, doc)
		}
		if generic == nil {
			continue // only comments, or a template that rendered nothing
		}
		var tm metav1.TypeMeta
		if err := yaml.Unmarshal(doc, &tm); err != nil {
			return fmt.Errorf("%s: %w", file, err)
		}
		kind := tm.APIVersion + "/" + tm.Kind
		var obj metav1.Object
		switch kind {
		case "apps/v1/StatefulSet":
			if m.statefulSet != nil {
				return fmt.Errorf("%s: a second StatefulSet", file)
			}
			m.statefulSet = new(appsv1.StatefulSet)
			obj = m.statefulSet
		case "v1/ConfigMap":
			obj = appendNew(&m.configMaps)
		case "v1/Service":
			obj = appendNew(&m.services)
		case "v1/ServiceAccount":
			obj = appendNew(&m.serviceAccounts)
		case "policy/v1/PodDisruptionBudget":
			obj = appendNew(&m.pdbs)
		case "monitoring.coreos.com/v1/ServiceMonitor":
			obj = appendNew(&m.serviceMonitors)
		case "monitoring.coreos.com/v1/PrometheusRule":
			obj = appendNew(&m.prometheusRules)
		case "apps/v1/Deployment":
			obj = appendNew(&m.deployments)
		case "autoscaling/v2/HorizontalPodAutoscaler":
			obj = appendNew(&m.hpas)
		case "keda.sh/v1alpha1/ScaledObject":
			obj = appendNew(&m.scaledObjects)
		case "v1/Secret":
			return fmt.Errorf("%s: renders a Secret: the chart must reference Secrets, never write one", file)
		default:
			return fmt.Errorf("%s: renders %s, which the tests have no type for", file, kind)
		}
		// Strict: an unknown field (a typo, a field at the wrong level)
		// or a duplicated one is an error, as kubectl's strict field
		// validation would make it.
		if err := yaml.UnmarshalStrict(doc, obj); err != nil {
			return fmt.Errorf("%s: %s: %w", file, kind, err)
		}
		if obj.GetNamespace() != namespace {
			return fmt.Errorf("%s: %s %s is in namespace %q, not the release's %q", file, kind, obj.GetName(), obj.GetNamespace(), namespace)
		}
		m.kinds = append(m.kinds, kind+" "+obj.GetName())
	}
}

// appendNew appends a new object to *list and returns it.
func appendNew[T any, PT interface {
	*T
	metav1.Object
}](list *[]PT) PT {
	p := PT(new(T))
	*list = append(*list, p)
	return p
}
