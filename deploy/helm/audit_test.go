package helm

import (
	"slices"
	"strings"
	"testing"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// auditValues turn the live audit on beside the secured pipeline.
const auditValues = "\naudit:\n  enabled: true\n"

func TestTheLiveAuditRunsBesideThePipelineAndIsScraped(t *testing.T) {
	m := mustRender(t, securedValues+auditValues)
	checkInvariants(t, m)
	want := []string{
		"v1/ConfigMap " + fullname,
		"policy/v1/PodDisruptionBudget " + fullname,
		"monitoring.coreos.com/v1/PrometheusRule " + fullname,
		"v1/Service " + fullname,
		"v1/ServiceAccount " + fullname,
		"monitoring.coreos.com/v1/ServiceMonitor " + fullname,
		"apps/v1/StatefulSet " + fullname,
		"apps/v1/Deployment " + fullname + "-audit",
		"v1/Service " + fullname + "-audit",
		"monitoring.coreos.com/v1/ServiceMonitor " + fullname + "-audit",
	}
	if got := slices.Sorted(slices.Values(m.kinds)); !slices.Equal(got, slices.Sorted(slices.Values(want))) {
		t.Errorf("rendered objects:\n  %s\nwant:\n  %s", strings.Join(m.kinds, "\n  "), strings.Join(want, "\n  "))
	}
	if len(m.deployments) != 1 {
		t.Fatalf("%d Deployments, want the audit's", len(m.deployments))
	}
	d := m.deployments[0]
	checkAudit(t, m, d)
}

// checkAudit checks the audit's Deployment, Service and ServiceMonitor.
func checkAudit(t *testing.T, m *manifests, d *appsv1.Deployment) {
	t.Helper()
	if r := d.Spec.Replicas; r == nil || *r != 1 {
		t.Errorf("replicas %s, want 1: a second auditor would write the same checkpoint", show(r))
	}
	if d.Spec.Strategy.Type != appsv1.RecreateDeploymentStrategyType {
		t.Errorf("strategy %q, want Recreate: a rolling update runs two auditors at once", d.Spec.Strategy.Type)
	}
	pod := d.Spec.Template.Spec
	if len(pod.Containers) != 1 {
		t.Fatalf("%d containers, want the auditor", len(pod.Containers))
	}
	audit := pod.Containers[0]
	relayPod := m.statefulSet.Spec.Template.Spec
	relay := relayPod.Containers[0]

	t.Run("the auditor runs relay audit on the relays' image, pipeline file and variables", func(t *testing.T) {
		if audit.Image != relay.Image || len(audit.Command) != 0 {
			t.Errorf("image %q command %q, want the relay's image %q and its entry point", audit.Image, audit.Command, relay.Image)
		}
		if len(audit.Args) == 0 || audit.Args[0] != "audit" || !slices.Contains(audit.Args, pipelinePath) || !slices.Contains(audit.Args, "--listen=:9465") {
			t.Errorf("args %q, want audit --listen=:9465 ... %s", audit.Args, pipelinePath)
		}
		for _, e := range relay.Env {
			if e.Name == "RELAY_INSTANCE" || e.Name == "RELAY_METRICS_ADDR" {
				continue
			}
			if a := envVar(audit, e.Name); a == nil || a.Value != e.Value || !equalJSON(a.ValueFrom, e.ValueFrom) {
				t.Errorf("env %s is %+v in the auditor, %+v in the relay: the pipeline would not read the same", e.Name, a, e)
			}
		}
		if v := envVar(audit, "RELAY_METRICS_ADDR"); v == nil || v.Value != ":9465" {
			t.Errorf("env RELAY_METRICS_ADDR %+v, want :9465: the pipeline file may name it, and it must be set to load", v)
		}
		if !equalJSON(audit.VolumeMounts, relay.VolumeMounts) || !equalJSON(pod.Volumes, relayPod.Volumes) {
			t.Errorf("the auditor mounts %+v of %+v; the relay %+v of %+v", audit.VolumeMounts, pod.Volumes, relay.VolumeMounts, relayPod.Volumes)
		}
	})

	t.Run("its probes reach /healthz and /readyz on its port", func(t *testing.T) {
		cp := containerPort(audit, "metrics")
		if cp == nil || cp.ContainerPort != 9465 {
			t.Fatalf("container port metrics %+v, want 9465", cp)
		}
		for _, p := range []struct {
			probe *corev1.Probe
			path  string
		}{{audit.LivenessProbe, "/healthz"}, {audit.ReadinessProbe, "/readyz"}} {
			if p.probe == nil || p.probe.HTTPGet == nil || p.probe.HTTPGet.Path != p.path || p.probe.HTTPGet.Port != intstr.FromString("metrics") {
				t.Errorf("probe %+v, want GET %s on port metrics", p.probe, p.path)
			}
		}
		if audit.Resources.Requests.Memory().IsZero() || audit.Resources.Limits.Memory().IsZero() {
			t.Errorf("resources %+v, want a memory request and limit", audit.Resources)
		}
	})

	t.Run("it runs as the relays do: non-root, read-only, no capability, no token", func(t *testing.T) {
		if !equalJSON(pod.SecurityContext, relayPod.SecurityContext) || !equalJSON(audit.SecurityContext, relay.SecurityContext) {
			t.Errorf("security contexts: pod %+v, container %+v; the relay's %+v, %+v", pod.SecurityContext, audit.SecurityContext, relayPod.SecurityContext, relay.SecurityContext)
		}
		if pod.AutomountServiceAccountToken == nil || *pod.AutomountServiceAccountToken || pod.EnableServiceLinks == nil || *pod.EnableServiceLinks {
			t.Error("the auditor's pod mounts an API token or takes the namespace's Service variables")
		}
	})

	t.Run("its pod is no instance of the pipeline, and its Service selects it alone", func(t *testing.T) {
		auditPod := labels.Set(d.Spec.Template.Labels)
		relayLabels := labels.Set(m.statefulSet.Spec.Template.Labels)
		for what, sel := range map[string]*metav1.LabelSelector{
			"the StatefulSet":         m.statefulSet.Spec.Selector,
			"the PodDisruptionBudget": m.pdbs[0].Spec.Selector,
			"the relays' Service":     {MatchLabels: serviceNamed(t, m, fullname).Spec.Selector},
			"the audit's Deployment":  d.Spec.Selector,
			"the audit's Service":     {MatchLabels: serviceNamed(t, m, fullname+"-audit").Spec.Selector},
		} {
			s, err := metav1.LabelSelectorAsSelector(sel)
			if err != nil {
				t.Fatal(err)
			}
			audit := strings.HasPrefix(what, "the audit's")
			if s.Matches(auditPod) != audit || s.Matches(relayLabels) == audit {
				t.Errorf("%s selects %q: the auditor's pod %v (want %t), the relays' %v (want %t)", what, s, auditPod, audit, relayLabels, !audit)
			}
		}
	})

	if len(m.serviceMonitors) > 0 {
		t.Run("a ServiceMonitor of its own scrapes it, the instance label its pod name", func(t *testing.T) {
			var sm *monitoringv1.ServiceMonitor
			for _, s := range m.serviceMonitors {
				if s.Name == fullname+"-audit" {
					sm = s
				}
			}
			if sm == nil {
				t.Fatalf("no ServiceMonitor %s-audit", fullname)
			}
			svc := serviceNamed(t, m, fullname+"-audit")
			s, err := metav1.LabelSelectorAsSelector(&sm.Spec.Selector)
			if err != nil || !s.Matches(labels.Set(svc.Labels)) || s.Matches(labels.Set(serviceNamed(t, m, fullname).Labels)) {
				t.Errorf("the audit's ServiceMonitor selects %v (%v): want its Service %v and not the relays' %v", s, err, svc.Labels, serviceNamed(t, m, fullname).Labels)
			}
			if len(sm.Spec.Endpoints) != 1 || sm.Spec.Endpoints[0].Port != "metrics" || sm.Spec.Endpoints[0].Path != "/metrics" {
				t.Errorf("endpoints %+v, want port metrics, /metrics", sm.Spec.Endpoints)
			}
			if sm.Labels["release"] != "kube-prometheus-stack" {
				t.Errorf("labels %v lack serviceMonitor.labels", sm.Labels)
			}
		})
	}
}

func TestTheAuditsOptionsReachItsArguments(t *testing.T) {
	m := mustRender(t, "audit:\n  enabled: true\n  port: 9500\n  fromEnd: true\n  checkpointTopic: orders.audit.v2\n")
	args := m.deployments[0].Spec.Template.Spec.Containers[0].Args
	for _, a := range []string{"--listen=:9500", "--from-end", "--checkpoint-topic=orders.audit.v2"} {
		if !slices.Contains(args, a) {
			t.Errorf("args %q lack %s", args, a)
		}
	}
	if !strings.Contains(m.notes, fullname+"-audit") {
		t.Errorf("NOTES.txt does not name the audit:\n%s", m.notes)
	}
	if _, err := render("audit:\n  enabled: true\n  port: 9464\n"); err == nil || !strings.Contains(err.Error(), "audit.port 9464 is metrics.port") {
		t.Errorf("render with the audit on the relay's port: %v", err)
	}
}

func TestTheAuditIsOffByDefault(t *testing.T) {
	m := mustRender(t, "")
	if len(m.deployments) != 0 {
		t.Errorf("%d Deployments rendered by default", len(m.deployments))
	}
}
