package helm

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	"github.com/santhosh-tekuri/jsonschema/v6"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/yaml"
)

// Files of the relay's repository the tests read.
const (
	shippedAlerts  = "../prometheus/sharerelay-alerts.yaml"
	pipelineSchema = "../../configs/pipeline.schema.json"
)

// pipelinePath is where the relay reads its pipeline in the pod.
const pipelinePath = "/etc/sharerelay/pipeline.yaml"

// securedValues run a pipeline that authenticates with SCRAM and mutual
// TLS, its password and certificates from Secrets, with a longer drain,
// and turn the prometheus-operator objects on.
const securedValues = `
pipeline:
  config: |
    name: orders-to-jobs
    brokers:
      - ${KAFKA_BOOTSTRAP_SERVERS}
    source:
      topics: [orders]
    output:
      topic: jobs
      transaction_timeout: 20s
    dead_letter:
      topic: jobs.dlq
    batch:
      drain_timeout: 30s
    transforms:
      - type: set
        field: status
        value: queued
    tls:
      enabled: true
      ca_file: /etc/kafka/tls/ca.crt
      cert_file: /etc/kafka/tls/tls.crt
      key_file: /etc/kafka/tls/tls.key
    sasl:
      mechanism: SCRAM-SHA-512
      username: ${KAFKA_USERNAME}
      password: ${KAFKA_PASSWORD}
env:
  KAFKA_BOOTSTRAP_SERVERS: kafka.example.com:9093
secretEnv:
  - name: KAFKA_USERNAME
    secretName: kafka-user
    key: username
  - name: KAFKA_PASSWORD
    secretName: kafka-user
    key: password
secretFiles:
  - secretName: kafka-tls
    mountPath: /etc/kafka/tls
serviceMonitor:
  enabled: true
  labels:
    release: kube-prometheus-stack
prometheusRule:
  enabled: true
  labels:
    release: kube-prometheus-stack
`

// mustRender renders the chart with valuesYAML or fails the test.
func mustRender(t *testing.T, valuesYAML string) *manifests {
	t.Helper()
	m, err := render(valuesYAML)
	if err != nil {
		t.Fatalf("rendering the chart: %v", err)
	}
	return m
}

func TestTheDefaultValuesRenderTheObjectsOfOnePipeline(t *testing.T) {
	m := mustRender(t, "")
	want := []string{
		"v1/ConfigMap " + fullname,
		"policy/v1/PodDisruptionBudget " + fullname,
		"v1/Service " + fullname,
		"v1/ServiceAccount " + fullname,
		"apps/v1/StatefulSet " + fullname,
	}
	if !slices.Equal(m.kinds, want) {
		t.Errorf("rendered objects:\n  %s\nwant:\n  %s", strings.Join(m.kinds, "\n  "), strings.Join(want, "\n  "))
	}
	checkInvariants(t, m)
	if grace, bound := *m.statefulSet.Spec.Template.Spec.TerminationGracePeriodSeconds, shutdownBound(t, pipelineOf(t, m)); grace != int64(bound/time.Second)+5 {
		t.Errorf("terminationGracePeriodSeconds = %d, want the shutdown bound of the default pipeline (%s) + 5s", grace, bound)
	}
	for _, s := range []string{fullname + "-0", "rollout status statefulset/" + fullname, "/readyz"} {
		if !strings.Contains(m.notes, s) {
			t.Errorf("NOTES.txt does not mention %q:\n%s", s, m.notes)
		}
	}
}

func TestASecuredPipelineRendersWithItsSecretsReferencedAndMonitoringOn(t *testing.T) {
	m := mustRender(t, securedValues)
	want := []string{
		"v1/ConfigMap " + fullname,
		"policy/v1/PodDisruptionBudget " + fullname,
		"monitoring.coreos.com/v1/PrometheusRule " + fullname,
		"v1/Service " + fullname,
		"v1/ServiceAccount " + fullname,
		"monitoring.coreos.com/v1/ServiceMonitor " + fullname,
		"apps/v1/StatefulSet " + fullname,
	}
	if !slices.Equal(m.kinds, want) {
		t.Errorf("rendered objects:\n  %s\nwant:\n  %s", strings.Join(m.kinds, "\n  "), strings.Join(want, "\n  "))
	}
	checkInvariants(t, m)
	if grace := *m.statefulSet.Spec.Template.Spec.TerminationGracePeriodSeconds; grace != 30+20+10+5 {
		t.Errorf("terminationGracePeriodSeconds = %d, want 65: a drain of 30s and a transaction timeout of 20s, + 10s, + 5s", grace)
	}
	pod := m.statefulSet.Spec.Template.Spec
	relay := pod.Containers[0]
	for _, s := range []struct{ env, key string }{{"KAFKA_USERNAME", "username"}, {"KAFKA_PASSWORD", "password"}} {
		v := envVar(relay, s.env)
		if v == nil || v.ValueFrom == nil || v.ValueFrom.SecretKeyRef == nil {
			t.Errorf("env %s is %+v, want it from the Secret kafka-user", s.env, v)
			continue
		}
		if ref := v.ValueFrom.SecretKeyRef; ref.Name != "kafka-user" || ref.Key != s.key {
			t.Errorf("env %s comes from Secret %s key %s, want kafka-user key %s", s.env, ref.Name, ref.Key, s.key)
		}
	}
	mount := volumeMount(relay, "/etc/kafka/tls")
	if mount == nil {
		t.Fatalf("nothing is mounted at /etc/kafka/tls, where the pipeline's certificates are: %+v", relay.VolumeMounts)
	}
	vol := volume(pod, mount.Name)
	if vol == nil || vol.Secret == nil || vol.Secret.SecretName != "kafka-tls" {
		t.Fatalf("/etc/kafka/tls is the volume %+v, want the Secret kafka-tls", vol)
	}
	if mode := vol.Secret.DefaultMode; mode == nil || *mode != 0o440 {
		t.Errorf("the Secret kafka-tls is mounted with mode %s, want 0440: the key readable by the relay's group alone", show(mode))
	}
	if g := pod.SecurityContext.FSGroup; g == nil || *g != *pod.SecurityContext.RunAsGroup {
		t.Errorf("fsGroup %s is not the relay's group %s: it could not read the Secret's files", show(g), show(pod.SecurityContext.RunAsGroup))
	}
	if env := envVar(relay, "KAFKA_BOOTSTRAP_SERVERS"); env == nil || env.Value != "kafka.example.com:9093" {
		t.Errorf("env KAFKA_BOOTSTRAP_SERVERS is %+v, want the value from env", env)
	}
	if len(m.serviceMonitors) == 1 && m.serviceMonitors[0].Labels["release"] != "kube-prometheus-stack" {
		t.Errorf("the ServiceMonitor's labels %v lack serviceMonitor.labels", m.serviceMonitors[0].Labels)
	}
	if len(m.prometheusRules) == 1 && m.prometheusRules[0].Labels["release"] != "kube-prometheus-stack" {
		t.Errorf("the PrometheusRule's labels %v lack prometheusRule.labels", m.prometheusRules[0].Labels)
	}
}

// checkInvariants checks what the chart promises whatever its values.
func checkInvariants(t *testing.T, m *manifests) {
	t.Helper()
	sts := m.statefulSet
	if sts == nil {
		t.Fatal("no StatefulSet rendered")
	}
	pod := sts.Spec.Template.Spec
	if len(pod.Containers) != 1 || len(pod.InitContainers) != 0 {
		t.Fatalf("the pod has containers %d and init containers %d, want the relay alone", len(pod.Containers), len(pod.InitContainers))
	}
	relay := pod.Containers[0]
	port := int32(m.values["metrics"].(map[string]any)["port"].(float64))

	t.Run("the instance name is the pod name, from the downward API", func(t *testing.T) {
		v := envVar(relay, "RELAY_INSTANCE")
		if v == nil || v.ValueFrom == nil || v.ValueFrom.FieldRef == nil || v.ValueFrom.FieldRef.FieldPath != "metadata.name" || v.Value != "" {
			t.Errorf("env RELAY_INSTANCE is %+v, want valueFrom.fieldRef.fieldPath metadata.name", v)
		}
		if n := countEnv(relay, "RELAY_INSTANCE"); n != 1 {
			t.Errorf("env RELAY_INSTANCE is set %d times, want once", n)
		}
		for _, a := range relay.Args {
			if strings.HasPrefix(strings.TrimLeft(a, "-"), "instance") {
				t.Errorf("argument %q overrides the instance name the environment gives", a)
			}
		}
		if len(relay.Command) != 0 {
			t.Errorf("command %q replaces the image's entry point, the relay", relay.Command)
		}
	})

	t.Run("the relay runs the pipeline file the ConfigMap holds", func(t *testing.T) {
		if len(relay.Args) == 0 || relay.Args[0] != "run" || !slices.Contains(relay.Args, pipelinePath) {
			t.Errorf("args %q do not run %s", relay.Args, pipelinePath)
		}
		mount := volumeMount(relay, filepath.Dir(pipelinePath))
		if mount == nil {
			t.Fatalf("nothing is mounted at %s", filepath.Dir(pipelinePath))
		}
		vol := volume(pod, mount.Name)
		if vol == nil || vol.ConfigMap == nil {
			t.Fatalf("%s is the volume %+v, want a ConfigMap", mount.MountPath, vol)
		}
		if len(m.configMaps) != 1 || vol.ConfigMap.Name != m.configMaps[0].Name {
			t.Fatalf("the pipeline volume names ConfigMap %q; rendered: %d ConfigMaps", vol.ConfigMap.Name, len(m.configMaps))
		}
		if want := []corev1.KeyToPath{{Key: "pipeline.yaml", Path: filepath.Base(pipelinePath)}}; !reflect.DeepEqual(vol.ConfigMap.Items, want) {
			t.Errorf("the ConfigMap volume's items are %+v, want %+v", vol.ConfigMap.Items, want)
		}
		want := m.values["pipeline"].(map[string]any)["config"].(string)
		if got := m.configMaps[0].Data["pipeline.yaml"]; got != want {
			t.Errorf("the ConfigMap's pipeline.yaml is\n%s\nwant pipeline.config:\n%s", got, want)
		}
		if sts.Spec.Template.Annotations["checksum/pipeline"] == "" {
			t.Error("the pod template has no checksum/pipeline annotation: a changed pipeline would not restart the pods")
		}
	})

	t.Run("the pipeline file is one the relay's schema accepts", func(t *testing.T) {
		if err := validatePipeline(pipelineOf(t, m)); err != nil {
			t.Error(err)
		}
	})

	t.Run("liveness and readiness probes reach /healthz and /readyz where the relay listens", func(t *testing.T) {
		cp := containerPort(relay, "metrics")
		if cp == nil || cp.ContainerPort != port {
			t.Fatalf("container port metrics is %+v, want %d", cp, port)
		}
		if v := envVar(relay, "RELAY_METRICS_ADDR"); v == nil || v.Value != fmt.Sprintf(":%d", port) {
			t.Errorf("env RELAY_METRICS_ADDR is %+v, want :%d (every interface: the kubelet probes the pod's address)", v, port)
		}
		for _, p := range []struct {
			name  string
			probe *corev1.Probe
			path  string
		}{{"liveness", relay.LivenessProbe, "/healthz"}, {"readiness", relay.ReadinessProbe, "/readyz"}} {
			if p.probe == nil || p.probe.HTTPGet == nil {
				t.Errorf("%s probe %+v is not an HTTP GET", p.name, p.probe)
				continue
			}
			get := p.probe.HTTPGet
			if get.Path != p.path {
				t.Errorf("%s probe path %q, want %s", p.name, get.Path, p.path)
			}
			if get.Port != intstr.FromString("metrics") && get.Port != intstr.FromInt32(port) {
				t.Errorf("%s probe port %s, want the metrics port (%d)", p.name, get.Port.String(), port)
			}
		}
	})

	t.Run("the grace period is at least the relay's shutdown bound", func(t *testing.T) {
		bound := shutdownBound(t, pipelineOf(t, m))
		grace := pod.TerminationGracePeriodSeconds
		if grace == nil || time.Duration(*grace)*time.Second < bound {
			t.Errorf("terminationGracePeriodSeconds = %s, below the shutdown bound %s of the pipeline", show(grace), bound)
		}
	})

	t.Run("the relay runs as non-root on a read-only root filesystem with no capability", func(t *testing.T) {
		psc, sc := pod.SecurityContext, relay.SecurityContext
		if psc == nil || sc == nil {
			t.Fatalf("security contexts: pod %+v, container %+v", psc, sc)
		}
		if psc.RunAsNonRoot == nil || !*psc.RunAsNonRoot || sc.RunAsNonRoot == nil || !*sc.RunAsNonRoot {
			t.Errorf("runAsNonRoot: pod %s, container %s; want true", show(psc.RunAsNonRoot), show(sc.RunAsNonRoot))
		}
		if psc.RunAsUser == nil || *psc.RunAsUser == 0 || sc.RunAsUser != nil && *sc.RunAsUser == 0 {
			t.Errorf("runAsUser: pod %s, container %s; want a user that is not root", show(psc.RunAsUser), show(sc.RunAsUser))
		}
		if sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem {
			t.Errorf("readOnlyRootFilesystem = %s, want true", show(sc.ReadOnlyRootFilesystem))
		}
		if sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation {
			t.Errorf("allowPrivilegeEscalation = %s, want false", show(sc.AllowPrivilegeEscalation))
		}
		if sc.Privileged != nil && *sc.Privileged {
			t.Error("the container is privileged")
		}
		if sc.Capabilities == nil || !slices.Equal(sc.Capabilities.Drop, []corev1.Capability{"ALL"}) || len(sc.Capabilities.Add) != 0 {
			t.Errorf("capabilities %+v, want drop [ALL] and none added", sc.Capabilities)
		}
		seccomp := psc.SeccompProfile
		if sc.SeccompProfile != nil {
			seccomp = sc.SeccompProfile
		}
		if seccomp == nil || seccomp.Type != corev1.SeccompProfileTypeRuntimeDefault {
			t.Errorf("seccomp profile %+v, want RuntimeDefault", seccomp)
		}
		// The relay writes no file, so nothing needs to be writable.
		for _, vm := range relay.VolumeMounts {
			if !vm.ReadOnly {
				t.Errorf("volume %s is mounted writable at %s", vm.Name, vm.MountPath)
			}
		}
		if pod.AutomountServiceAccountToken == nil || *pod.AutomountServiceAccountToken {
			t.Error("the pod mounts a Kubernetes API token it has no use for")
		}
	})

	t.Run("the selectors of the StatefulSet, the Service and the PodDisruptionBudget match the pods and nothing else", func(t *testing.T) {
		podLabels := labels.Set(sts.Spec.Template.Labels)
		if podLabels["app.kubernetes.io/instance"] != release {
			t.Fatalf("the pods' labels %v do not name the release", podLabels)
		}
		check := func(what string, sel *metav1.LabelSelector) {
			t.Helper()
			s, err := metav1.LabelSelectorAsSelector(sel)
			if err != nil {
				t.Errorf("%s: %v", what, err)
				return
			}
			if s.Empty() || !s.Matches(podLabels) {
				t.Errorf("%s selects %q, which does not match the pods' labels %v", what, s, podLabels)
			}
			if s.Matches(labels.Set{"app.kubernetes.io/name": "sharerelay", "app.kubernetes.io/instance": "another"}) {
				t.Errorf("%s selects %q, which matches another release's pods", what, s)
			}
		}
		check("the StatefulSet", sts.Spec.Selector)
		if len(m.pdbs) != 1 {
			t.Fatalf("%d PodDisruptionBudgets, want 1", len(m.pdbs))
		}
		check("the PodDisruptionBudget", m.pdbs[0].Spec.Selector)
		if m.pdbs[0].Spec.MaxUnavailable == nil && m.pdbs[0].Spec.MinAvailable == nil {
			t.Error("the PodDisruptionBudget sets neither maxUnavailable nor minAvailable")
		}
		svc := serviceNamed(t, m, fullname)
		check("the Service", &metav1.LabelSelector{MatchLabels: svc.Spec.Selector})
		if sts.Spec.ServiceName != svc.Name || svc.Spec.ClusterIP != corev1.ClusterIPNone {
			t.Errorf("serviceName %q, Service %s with clusterIP %q: want the headless Service governing the StatefulSet", sts.Spec.ServiceName, svc.Name, svc.Spec.ClusterIP)
		}
		if len(svc.Spec.Ports) != 1 || svc.Spec.Ports[0].Name != "metrics" || svc.Spec.Ports[0].TargetPort != intstr.FromString("metrics") {
			t.Errorf("the Service's ports %+v, want the pods' metrics port", svc.Spec.Ports)
		}
		if pod.ServiceAccountName != "" && len(m.serviceAccounts) == 1 && pod.ServiceAccountName != m.serviceAccounts[0].Name {
			t.Errorf("the pods run as %q, not the ServiceAccount %s the chart makes", pod.ServiceAccountName, m.serviceAccounts[0].Name)
		}
	})

	t.Run("secrets are referenced and never written into an object, and the environment holds only what the chart sets", func(t *testing.T) {
		secretEnv, _ := m.values["secretEnv"].([]any)
		for _, e := range secretEnv {
			name := e.(map[string]any)["name"].(string)
			if n := countEnv(relay, name); n != 1 {
				t.Errorf("env %s is set %d times, want once, from its Secret", name, n)
			}
			if v := envVar(relay, name); v == nil || v.Value != "" || v.ValueFrom == nil || v.ValueFrom.SecretKeyRef == nil {
				t.Errorf("env %s is %+v, want valueFrom.secretKeyRef", name, v)
			}
		}
		for _, v := range relay.Env {
			if looksSecret(v.Name) && v.ValueFrom == nil {
				t.Errorf("env %s has a value written in the StatefulSet, want it from a Secret", v.Name)
			}
		}
		if len(relay.EnvFrom) != 0 {
			t.Errorf("envFrom %+v: every variable should be named", relay.EnvFrom)
		}
		if pod.EnableServiceLinks == nil || *pod.EnableServiceLinks {
			t.Error("enableServiceLinks is not false: every Service of the namespace adds variables the pipeline could interpolate by mistake")
		}
	})

	if len(m.serviceMonitors) > 0 {
		t.Run("the ServiceMonitor scrapes /metrics of every pod and labels it with the instance name", func(t *testing.T) {
			sm := m.serviceMonitors[slices.IndexFunc(m.serviceMonitors, func(s *monitoringv1.ServiceMonitor) bool { return s.Name == fullname })]
			svc := serviceNamed(t, m, fullname)
			s, err := metav1.LabelSelectorAsSelector(&sm.Spec.Selector)
			if err != nil || s.Empty() || !s.Matches(labels.Set(svc.Labels)) {
				t.Errorf("the ServiceMonitor selects %v (%v), which does not match the Service's labels %v", s, err, svc.Labels)
			}
			if len(sm.Spec.Endpoints) != 1 {
				t.Fatalf("%d endpoints, want 1", len(sm.Spec.Endpoints))
			}
			ep := sm.Spec.Endpoints[0]
			if ep.Port != svc.Spec.Ports[0].Name || ep.Path != "/metrics" {
				t.Errorf("the endpoint scrapes port %q path %q, want %s /metrics", ep.Port, ep.Path, svc.Spec.Ports[0].Name)
			}
			instance := slices.IndexFunc(ep.RelabelConfigs, func(r monitoringv1.RelabelConfig) bool {
				return r.TargetLabel == "instance" && slices.Equal(r.SourceLabels, []monitoringv1.LabelName{"__meta_kubernetes_pod_name"})
			})
			if instance < 0 {
				t.Errorf("relabelings %+v do not set instance from the pod name: the alerts would name the pod's address, the logs its name", ep.RelabelConfigs)
			}
		})
	}

	if len(m.prometheusRules) > 0 {
		t.Run("the PrometheusRule carries every shipped alert, each expression scoped to the release's pipeline", func(t *testing.T) {
			got := m.prometheusRules[0].Spec
			if names, want := alertNames(got), alertNames(shippedRules(t)); !slices.Equal(names, want) {
				t.Errorf("the PrometheusRule's alerts are\n  %s\nwant those of %s:\n  %s", strings.Join(names, "\n  "), shippedAlerts, strings.Join(want, "\n  "))
			}
			pipeline := m.values["pipeline"].(map[string]any)["name"].(string)
			if pipeline == "" {
				var p struct{ Name string }
				if err := yaml.Unmarshal([]byte(pipelineOf(t, m)), &p); err != nil {
					t.Fatal(err)
				}
				pipeline = p.Name
			}
			checkRulesScoped(t, got, pipeline)
		})
	}
}

func TestTheGracePeriodFollowsThePipelinesShutdownBound(t *testing.T) {
	// pipeline returns the default pipeline with extra lines in its
	// output and batch sections.
	pipeline := func(output, batch string) string {
		return fmt.Sprintf(`name: p
brokers: ["${KAFKA_BOOTSTRAP_SERVERS}"]
source: {topics: [in]}
output:
  topic: out
%s
batch:
  max_records: 10
%s
`, output, batch)
	}
	values := func(p, extra string) string {
		return fmt.Sprintf("pipeline:\n  config: |\n%s%s\n", indent(p, "    "), extra)
	}
	for _, c := range []struct {
		name      string
		values    string
		wantGrace int64
		wantErr   string
	}{
		{
			name:      "a pipeline that leaves both timeouts out gets the default bound, 25s, plus 5s",
			values:    values(pipeline("", ""), ""),
			wantGrace: 30,
		},
		{
			name:      "minutes and mixed units are read as Go durations",
			values:    values(pipeline("  transaction_timeout: 1m30s", "  drain_timeout: 1m"), ""),
			wantGrace: 90 + 60 + 10 + 5,
		},
		{
			name:      "a drain of 0 is no drain, not the default",
			values:    values(pipeline("", "  drain_timeout: 0"), ""),
			wantGrace: 0 + 10 + 10 + 5,
		},
		{
			name:      "a fraction of a second rounds the bound up",
			values:    values(pipeline("  transaction_timeout: 1500ms", "  drain_timeout: 0s"), ""),
			wantGrace: 12 + 5,
		},
		{
			name:      "a variable with a default the chart does not set is read as its default",
			values:    values(pipeline("", "  drain_timeout: ${DRAIN:-45s}"), ""),
			wantGrace: 45 + 10 + 10 + 5,
		},
		{
			name:      "a variable the chart sets in env is read as its value",
			values:    values(pipeline("", "  drain_timeout: ${DRAIN:-45s}"), "env:\n  KAFKA_BOOTSTRAP_SERVERS: k:9092\n  DRAIN: 2m\n"),
			wantGrace: 120 + 10 + 10 + 5,
		},
		{
			name:    "a variable the chart cannot know asks for the grace period",
			values:  values(pipeline("", "  drain_timeout: ${DRAIN}"), "secretEnv: [{name: DRAIN, secretName: s, key: k}]\n"),
			wantErr: "terminationGracePeriodSeconds: the chart cannot read",
		},
		{
			name:      "which may then be set by hand",
			values:    values(pipeline("", "  drain_timeout: ${DRAIN}"), "secretEnv: [{name: DRAIN, secretName: s, key: k}]\nterminationGracePeriodSeconds: 300\n"),
			wantGrace: 300,
		},
		{
			name:      "a grace period above the bound is kept",
			values:    "terminationGracePeriodSeconds: 120\n",
			wantGrace: 120,
		},
		{
			name:    "a grace period below the bound fails the install",
			values:  "terminationGracePeriodSeconds: 20\n",
			wantErr: "terminationGracePeriodSeconds 20 is below the pipeline's shutdown bound of 25s",
		},
		{
			name:      "a pipeline from an existing ConfigMap, which the chart cannot read, gets the default bound's 30s",
			values:    "pipeline:\n  existingConfigMap: my-pipeline\n",
			wantGrace: 30,
		},
		{
			name:      "nor can it hold a grace period set for one against that file's bound",
			values:    "pipeline:\n  existingConfigMap: my-pipeline\nterminationGracePeriodSeconds: 20\n",
			wantGrace: 20,
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
				t.Fatalf("render: %v", err)
			}
			if got := *m.statefulSet.Spec.Template.Spec.TerminationGracePeriodSeconds; got != c.wantGrace {
				t.Errorf("terminationGracePeriodSeconds = %d, want %d", got, c.wantGrace)
			}
		})
	}
}

func TestAnExistingConfigMapIsMountedInsteadOfOneOfTheChart(t *testing.T) {
	m := mustRender(t, "pipeline:\n  existingConfigMap: my-pipeline\n  existingConfigMapKey: orders.yaml\n")
	if len(m.configMaps) != 0 {
		t.Errorf("%d ConfigMaps rendered, want none", len(m.configMaps))
	}
	pod := m.statefulSet.Spec.Template.Spec
	vol := volume(pod, "pipeline")
	want := &corev1.ConfigMapVolumeSource{
		LocalObjectReference: corev1.LocalObjectReference{Name: "my-pipeline"},
		Items:                []corev1.KeyToPath{{Key: "orders.yaml", Path: "pipeline.yaml"}},
	}
	if vol == nil || !reflect.DeepEqual(vol.ConfigMap, want) {
		t.Errorf("the pipeline volume is %+v, want %+v", vol, want)
	}
	if _, ok := m.statefulSet.Spec.Template.Annotations["checksum/pipeline"]; ok {
		t.Error("a checksum of pipeline.config, which is not used, is on the pod template")
	}
}

func TestValuesTheRelayCannotRunWithFailTheInstall(t *testing.T) {
	for _, c := range []struct{ name, values, wantErr string }{
		{
			name:    "a misspelled value",
			values:  "replica: 3\n",
			wantErr: "replica",
		},
		{
			name:    "metrics.listen on the loopback interface, which the probes cannot reach",
			values:  "pipeline:\n  config: |\n    name: p\n    metrics:\n      listen: 127.0.0.1:9464\n",
			wantErr: `metrics.listen is "127.0.0.1:9464"`,
		},
		{
			name:    "metrics.listen on another port than metrics.port",
			values:  "pipeline:\n  config: |\n    name: p\n    metrics:\n      listen: :9000\n",
			wantErr: `metrics.listen is ":9000"`,
		},
		{
			name:    "metrics.listen empty, which turns health and metrics off",
			values:  "pipeline:\n  config: |\n    name: p\n    metrics:\n      listen: \"\"\n",
			wantErr: `metrics.listen is ""`,
		},
		{
			name:    "a pipeline that is not a YAML mapping",
			values:  "pipeline:\n  config: \"- a list\"\n",
			wantErr: "pipeline.config is not a YAML mapping",
		},
		{
			name:    "an env entry naming the instance, which would give every pod the same name",
			values:  "env:\n  RELAY_INSTANCE: relay\n",
			wantErr: "env.RELAY_INSTANCE: the chart sets RELAY_INSTANCE itself",
		},
		{
			name:    "a Secret mounted over the pipeline",
			values:  "secretFiles: [{secretName: tls, mountPath: /etc/sharerelay/tls}]\n",
			wantErr: "/etc/sharerelay/tls is where the pipeline file is mounted",
		},
		{
			name:    "a secretEnv entry without its key",
			values:  "secretEnv: [{name: KAFKA_PASSWORD, secretName: kafka-user}]\n",
			wantErr: "key",
		},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := render(c.values)
			if err == nil || !strings.Contains(err.Error(), c.wantErr) {
				t.Errorf("render: %v, want an error containing %q", err, c.wantErr)
			}
		})
	}
	t.Run("metrics.listen written as ${RELAY_METRICS_ADDR} with a default, as the shipped pipelines have it", func(t *testing.T) {
		if _, err := render("pipeline:\n  config: |\n    name: p\n    metrics:\n      listen: ${RELAY_METRICS_ADDR:-127.0.0.1:9464}\n"); err != nil {
			t.Error(err)
		}
	})
}

// pipelineOf returns the pipeline file in the rendered ConfigMap.
func pipelineOf(t *testing.T, m *manifests) string {
	t.Helper()
	if len(m.configMaps) != 1 {
		t.Fatalf("%d ConfigMaps rendered, want the pipeline's", len(m.configMaps))
	}
	return m.configMaps[0].Data["pipeline.yaml"]
}

// schema is configs/pipeline.schema.json, decoded as JSON.
type schema struct {
	Properties map[string]struct {
		Properties map[string]struct {
			Default     any    `json:"default"`
			Description string `json:"description"`
		} `json:"properties"`
	} `json:"properties"`
}

// boundAbove matches the shutdown bound as drain_timeout's description in
// the pipeline schema documents it.
var boundAbove = regexp.MustCompile(`The shutdown bound is this \+ output\.transaction_timeout \+ (\d+)s\.`)

// shutdownBound returns how long the relay running pipeline may take to
// stop after SIGTERM: batch.drain_timeout + output.transaction_timeout +
// a constant, with the defaults and the constant read from the pipeline
// schema, so that a change to either there fails these tests.
func shutdownBound(t *testing.T, pipeline string) time.Duration {
	t.Helper()
	raw, err := os.ReadFile(pipelineSchema)
	if err != nil {
		t.Fatal(err)
	}
	var s schema
	if err := json.Unmarshal(raw, &s); err != nil {
		t.Fatalf("%s: %v", pipelineSchema, err)
	}
	drain := s.Properties["batch"].Properties["drain_timeout"]
	txn := s.Properties["output"].Properties["transaction_timeout"]
	match := boundAbove.FindStringSubmatch(drain.Description)
	if match == nil {
		t.Fatalf("%s: batch.drain_timeout's description no longer states the shutdown bound as %q: %q", pipelineSchema, boundAbove, drain.Description)
	}
	extra, _ := time.ParseDuration(match[1] + "s")
	var p map[string]any
	if err := yaml.Unmarshal([]byte(pipeline), &p); err != nil {
		t.Fatalf("the pipeline: %v", err)
	}
	duration := func(section, field string, def any) time.Duration {
		s, _ := p[section].(map[string]any)
		v, ok := s[field]
		if !ok {
			v = def
		}
		d, err := time.ParseDuration(fmt.Sprint(v))
		if err != nil {
			t.Fatalf("%s.%s: %v", section, field, err)
		}
		return d
	}
	return duration("batch", "drain_timeout", drain.Default) + duration("output", "transaction_timeout", txn.Default) + extra
}

// validatePipeline checks pipeline against configs/pipeline.schema.json,
// the schema editors and relay validate's users see: a field the relay
// does not know, or a value of the wrong kind, is an error.
func validatePipeline(pipeline string) error {
	f, err := os.Open(pipelineSchema)
	if err != nil {
		return err
	}
	defer f.Close()
	doc, err := jsonschema.UnmarshalJSON(f)
	if err != nil {
		return fmt.Errorf("%s: %w", pipelineSchema, err)
	}
	c := jsonschema.NewCompiler()
	if err := c.AddResource("pipeline.schema.json", doc); err != nil {
		return err
	}
	sch, err := c.Compile("pipeline.schema.json")
	if err != nil {
		return fmt.Errorf("%s: %w", pipelineSchema, err)
	}
	j, err := yaml.YAMLToJSON([]byte(pipeline))
	if err != nil {
		return err
	}
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(j))
	if err != nil {
		return err
	}
	if err := sch.Validate(inst); err != nil {
		return fmt.Errorf("the pipeline does not match %s: %w", pipelineSchema, err)
	}
	return nil
}

// shippedRules returns deploy/prometheus/sharerelay-alerts.yaml decoded
// strictly as a PrometheusRule's spec, which has the same shape.
func shippedRules(t *testing.T) monitoringv1.PrometheusRuleSpec {
	t.Helper()
	raw, err := os.ReadFile(shippedAlerts)
	if err != nil {
		t.Fatal(err)
	}
	var spec monitoringv1.PrometheusRuleSpec
	if err := yaml.UnmarshalStrict(raw, &spec); err != nil {
		t.Fatalf("%s: %v", shippedAlerts, err)
	}
	if len(alertNames(spec)) == 0 {
		t.Fatalf("%s has no alert", shippedAlerts)
	}
	return spec
}

// alertNames returns the alerts of spec, in order.
func alertNames(spec monitoringv1.PrometheusRuleSpec) []string {
	var names []string
	for _, g := range spec.Groups {
		for _, r := range g.Rules {
			if r.Alert != "" {
				names = append(names, r.Alert)
			}
		}
	}
	return names
}

// looksSecret tells whether an environment variable's name says it holds
// a secret.
func looksSecret(name string) bool {
	n := strings.ToUpper(name)
	for _, s := range []string{"PASSWORD", "SECRET", "TOKEN", "CREDENTIAL", "PRIVATE_KEY"} {
		if strings.Contains(n, s) {
			return true
		}
	}
	return false
}

func envVar(c corev1.Container, name string) *corev1.EnvVar {
	for i := range c.Env {
		if c.Env[i].Name == name {
			return &c.Env[i]
		}
	}
	return nil
}

func countEnv(c corev1.Container, name string) int {
	n := 0
	for _, e := range c.Env {
		if e.Name == name {
			n++
		}
	}
	return n
}

func containerPort(c corev1.Container, name string) *corev1.ContainerPort {
	for i := range c.Ports {
		if c.Ports[i].Name == name {
			return &c.Ports[i]
		}
	}
	return nil
}

func volumeMount(c corev1.Container, path string) *corev1.VolumeMount {
	for i := range c.VolumeMounts {
		if c.VolumeMounts[i].MountPath == path {
			return &c.VolumeMounts[i]
		}
	}
	return nil
}

// serviceNamed returns the rendered Service name, or fails the test.
func serviceNamed(t *testing.T, m *manifests, name string) *corev1.Service {
	t.Helper()
	for _, s := range m.services {
		if s.Name == name {
			return s
		}
	}
	t.Fatalf("no Service %s", name)
	return nil
}

func volume(pod corev1.PodSpec, name string) *corev1.Volume {
	for i := range pod.Volumes {
		if pod.Volumes[i].Name == name {
			return &pod.Volumes[i]
		}
	}
	return nil
}

// equalJSON tells whether a and b encode to the same JSON.
func equalJSON(a, b any) bool {
	x, errA := json.Marshal(a)
	y, errB := json.Marshal(b)
	return errA == nil && errB == nil && bytes.Equal(x, y)
}

// show prints what p points to, or "unset".
func show[T any](p *T) string {
	if p == nil {
		return "unset"
	}
	return fmt.Sprint(*p)
}

// indent prefixes every line of s.
func indent(s, prefix string) string {
	lines := strings.SplitAfter(s, "\n")
	for i, l := range lines {
		if l != "" {
			lines[i] = prefix + l
		}
	}
	return strings.Join(lines, "")
}
