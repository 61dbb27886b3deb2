{{/*
The release's full name: the StatefulSet's, and so the prefix of every pod
name and instance name. At most 52 characters, so that a pod's
controller-revision-hash label (name + "-" + 10 characters) fits in 63.
*/}}
{{- define "sharerelay.fullname" -}}
{{- if contains .Chart.Name .Release.Name -}}
{{- .Release.Name | trunc 52 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 52 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{/* The labels that select the release's pods; they never change. */}}
{{- define "sharerelay.selectorLabels" -}}
app.kubernetes.io/name: {{ .Chart.Name }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{/* The labels of every object. */}}
{{- define "sharerelay.labels" -}}
{{ include "sharerelay.selectorLabels" . }}
app.kubernetes.io/version: {{ .Values.image.tag | default .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
{{- end -}}

{{- define "sharerelay.serviceAccountName" -}}
{{- if .Values.serviceAccount.create -}}
{{- .Values.serviceAccount.name | default (include "sharerelay.fullname" .) -}}
{{- else -}}
{{- .Values.serviceAccount.name | default "default" -}}
{{- end -}}
{{- end -}}

{{/*
sharerelay.value: a scalar of pipeline.config as the relay will read it,
given (list value root). A whole ${VAR} or ${VAR:-default} reference is
resolved against the chart's env values, else its default; it is "" when
the chart cannot know it (a variable from secretEnv or without default).
*/}}
{{- define "sharerelay.value" -}}
{{- $v := toString (index . 0) -}}
{{- $root := index . 1 -}}
{{- $ref := regexFindAll "^\\$\\{([A-Za-z_][A-Za-z0-9_]*)(:-(.*))?\\}$" $v 1 -}}
{{- if not $ref -}}
{{- $v -}}
{{- else -}}
{{- $name := regexReplaceAll "^\\$\\{([A-Za-z_][A-Za-z0-9_]*).*$" $v "${1}" -}}
{{- if hasKey $root.Values.env $name -}}
{{- toString (get $root.Values.env $name) -}}
{{- else if contains ":-" $v -}}
{{- regexReplaceAll "^\\$\\{[A-Za-z_][A-Za-z0-9_]*:-(.*)\\}$" $v "${1}" -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{/*
sharerelay.seconds: a Go duration as the pipeline writes one ("500ms",
"10s", "1m30s", 0), given (list value root), in seconds; "" when it cannot
be read here.
*/}}
{{- define "sharerelay.seconds" -}}
{{- $d := include "sharerelay.value" . -}}
{{- $units := dict "h" 3600.0 "m" 60.0 "s" 1.0 "ms" 0.001 "us" 0.000001 "µs" 0.000001 "ns" 0.000000001 -}}
{{- $number := "[0-9]*\\.?[0-9]+" -}}
{{- $part := printf "%s(ns|us|µs|ms|h|m|s)" $number -}}
{{- if eq $d "0" -}}
0
{{- else if regexMatch (printf "^(%s)+$" $part) $d -}}
{{- $total := 0.0 -}}
{{- range regexFindAll $part $d -1 -}}
{{- $n := regexFind (printf "^%s" $number) . | float64 -}}
{{- $total = addf $total (mulf $n (get $units (trimPrefix (regexFind (printf "^%s" $number) .) .))) -}}
{{- end -}}
{{- $total -}}
{{- end -}}
{{- end -}}

{{/*
sharerelay.shutdownBound: in whole seconds, how long the relay may take to
stop after SIGTERM: batch.drain_timeout + output.transaction_timeout +
10s, as the relay documents it (configs/pipeline.schema.json, under
drain_timeout); "" when pipeline.config writes a duration the chart cannot
read. The bound of an existingConfigMap, which the chart cannot read, is
that of the defaults. The defaults are the relay's
(config.DefaultDrainTimeout, config.DefaultTransactionTimeout); the
chart's tests check them and the 10s against the pipeline schema.
*/}}
{{- define "sharerelay.shutdownBound" -}}
{{- $p := dict -}}
{{- if not .Values.pipeline.existingConfigMap -}}
{{- $p = include "sharerelay.pipeline" . | fromYaml -}}
{{- end -}}
{{- $batch := get $p "batch" | default dict -}}
{{- $output := get $p "output" | default dict -}}
{{- $drain := include "sharerelay.seconds" (list (ternary (get $batch "drain_timeout") "5s" (hasKey $batch "drain_timeout")) .) -}}
{{- $txn := include "sharerelay.seconds" (list (ternary (get $output "transaction_timeout") "10s" (hasKey $output "transaction_timeout")) .) -}}
{{- if and $drain $txn -}}
{{- addf $drain $txn 10 | ceil | int -}}
{{- end -}}
{{- end -}}

{{/*
sharerelay.pipeline: pipeline.config, checked to be a YAML mapping whose
metrics.listen, if written, is where the probes look: left out, the relay
listens on $RELAY_METRICS_ADDR, which the chart sets.
*/}}
{{- define "sharerelay.pipeline" -}}
{{- $p := fromYaml .Values.pipeline.config -}}
{{- if hasKey $p "Error" -}}
{{- fail (printf "pipeline.config is not a YAML mapping: %s" (get $p "Error")) -}}
{{- end -}}
{{- $metrics := get $p "metrics" | default dict -}}
{{- if hasKey $metrics "listen" -}}
{{- $listen := get $metrics "listen" | default "" | toString -}}
{{- $port := .Values.metrics.port | int -}}
{{- $here := list (printf ":%d" $port) (printf "0.0.0.0:%d" $port) (printf "[::]:%d" $port) -}}
{{- if not (or (eq $listen "${RELAY_METRICS_ADDR}") (hasPrefix "${RELAY_METRICS_ADDR:-" $listen) (has $listen $here)) -}}
{{- fail (printf "pipeline.config's metrics.listen is %q, where the probes cannot reach /healthz and /readyz: leave it out, or write ${RELAY_METRICS_ADDR} (the chart sets it to :%d)" $listen $port) -}}
{{- end -}}
{{- end -}}
{{- .Values.pipeline.config -}}
{{- end -}}

{{/*
sharerelay.gracePeriod: terminationGracePeriodSeconds: the value set,
which must not be below the shutdown bound of pipeline.config, or that
bound + 5s.
*/}}
{{- define "sharerelay.gracePeriod" -}}
{{- $bound := include "sharerelay.shutdownBound" . -}}
{{- $set := index .Values "terminationGracePeriodSeconds" -}}
{{- if not (kindIs "invalid" $set) -}}
{{- if and $bound (not .Values.pipeline.existingConfigMap) (lt (int $set) (int $bound)) -}}
{{- fail (printf "terminationGracePeriodSeconds %d is below the pipeline's shutdown bound of %ss (batch.drain_timeout + output.transaction_timeout + 10s): the relay would be killed while it stops" (int $set) $bound) -}}
{{- end -}}
{{- int $set -}}
{{- else if $bound -}}
{{- add (int $bound) 5 -}}
{{- else -}}
{{- fail "terminationGracePeriodSeconds: the chart cannot read pipeline.config's batch.drain_timeout or output.transaction_timeout (a variable from a Secret?): set it to at least their sum + 10s" -}}
{{- end -}}
{{- end -}}

{{/*
sharerelay.pipelineName: the pipeline's name, the value of the label
pipeline on every series the relay and its auditor export, which scopes the
PrometheusRule and the autoscalers' query to this release: pipeline.name,
else the name pipeline.config gives. It fails when neither is known (an
existingConfigMap, a name from a Secret) or when the two differ: a wrong
name would leave the alerts silent and the autoscaler blind.
*/}}
{{- define "sharerelay.pipelineName" -}}
{{- $set := .Values.pipeline.name -}}
{{- $file := "" -}}
{{- if not .Values.pipeline.existingConfigMap -}}
{{- $p := include "sharerelay.pipeline" . | fromYaml -}}
{{- if hasKey $p "name" -}}
{{- $file = include "sharerelay.value" (list (get $p "name") .) -}}
{{- end -}}
{{- end -}}
{{- if and $set $file (ne $set $file) -}}
{{- fail (printf "pipeline.name %q is not the name pipeline.config gives, %q: the alerts and the autoscaler would watch another pipeline's metrics" $set $file) -}}
{{- end -}}
{{- $name := $set | default $file -}}
{{- if not $name -}}
{{- fail "pipeline.name: the chart cannot read the pipeline's name from pipeline.config (an existingConfigMap, or a name from a Secret), and the PrometheusRule and the autoscaler select the relay's metrics by it: set pipeline.name to the name: of the pipeline file" -}}
{{- end -}}
{{- $name -}}
{{- end -}}

{{/*
The auditor's labels: a name of its own, so that the StatefulSet's, the
Service's and the PodDisruptionBudget's selectors (name and instance, which
cannot change on an existing StatefulSet) never take the auditor's pod for
an instance of the pipeline.
*/}}
{{- define "sharerelay.auditSelectorLabels" -}}
app.kubernetes.io/name: {{ .Chart.Name }}-audit
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "sharerelay.auditLabels" -}}
{{ include "sharerelay.auditSelectorLabels" . }}
app.kubernetes.io/component: audit
app.kubernetes.io/version: {{ .Values.image.tag | default .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
{{- end -}}

{{/*
sharerelay.pipelineEnv: the variables pipeline.config interpolates, from
env and secretEnv, as container env entries; the relay's pods and the
auditor's read the same file with the same variables.
*/}}
{{- define "sharerelay.pipelineEnv" -}}
{{- range $name, $value := .Values.env }}
- name: {{ $name }}
  value: {{ toString $value | quote }}
{{- end }}
{{- range .Values.secretEnv }}
- name: {{ .name }}
  valueFrom:
    secretKeyRef:
      name: {{ .secretName }}
      key: {{ .key }}
{{- end }}
{{- end -}}

{{/* sharerelay.pipelineMounts: the pipeline file and secretFiles, read-only. */}}
{{- define "sharerelay.pipelineMounts" -}}
- name: pipeline
  mountPath: /etc/sharerelay
  readOnly: true
{{- range $i, $f := .Values.secretFiles }}
- name: secret-{{ $i }}
  mountPath: {{ $f.mountPath }}
  readOnly: true
{{- end }}
{{- end -}}

{{/* sharerelay.pipelineVolumes: the volumes of sharerelay.pipelineMounts. */}}
{{- define "sharerelay.pipelineVolumes" -}}
- name: pipeline
  configMap:
    name: {{ .Values.pipeline.existingConfigMap | default (include "sharerelay.fullname" .) }}
    items:
      - key: {{ ternary .Values.pipeline.existingConfigMapKey "pipeline.yaml" (ne .Values.pipeline.existingConfigMap "") }}
        path: pipeline.yaml
{{- range $i, $f := .Values.secretFiles }}
- name: secret-{{ $i }}
  secret:
    secretName: {{ $f.secretName }}
    defaultMode: 0440
{{- end }}
{{- end -}}

{{/*
sharerelay.autoscaling: "true" when an autoscaler owns the StatefulSet's
replicas, after checking the autoscaling values: one autoscaler at most,
minReplicas at most maxReplicas, and no scale-in faster than a pod drains.
A pod removed at scale-in stops as any other, within
terminationGracePeriodSeconds (the relay's shutdown bound, + 5s unless
set): the scale-down window, and KEDA's cooldownPeriod, must be at least
that, so that one removal has drained before the next is decided.
*/}}
{{- define "sharerelay.autoscaling" -}}
{{- $as := .Values.autoscaling -}}
{{- if and $as.keda.enabled $as.hpa.enabled -}}
{{- fail "autoscaling.keda.enabled and autoscaling.hpa.enabled are both true: KEDA makes an HPA of its own, and two autoscalers would fight over the StatefulSet's replicas; turn one off" -}}
{{- end -}}
{{- if or $as.keda.enabled $as.hpa.enabled -}}
{{- if gt (int $as.minReplicas) (int $as.maxReplicas) -}}
{{- fail (printf "autoscaling.minReplicas %d is above autoscaling.maxReplicas %d" (int $as.minReplicas) (int $as.maxReplicas)) -}}
{{- end -}}
{{- $grace := include "sharerelay.gracePeriod" . | int -}}
{{- $window := int $as.scaleDown.stabilizationWindowSeconds -}}
{{- if lt $window $grace -}}
{{- fail (printf "autoscaling.scaleDown.stabilizationWindowSeconds %d is shorter than the pods' drain budget, terminationGracePeriodSeconds %d (batch.drain_timeout + output.transaction_timeout + 10s, + 5s unless set): the autoscaler would remove the next instance while the last one still drains; raise it to at least %d" $window $grace $grace) -}}
{{- end -}}
{{- if $as.keda.enabled -}}
{{- $cooldown := int $as.keda.cooldownPeriod -}}
{{- if lt $cooldown $grace -}}
{{- fail (printf "autoscaling.keda.cooldownPeriod %d is shorter than the pods' drain budget, terminationGracePeriodSeconds %d (batch.drain_timeout + output.transaction_timeout + 10s, + 5s unless set); raise it to at least %d" $cooldown $grace $grace) -}}
{{- end -}}
{{- if not $as.keda.serverAddress -}}
{{- fail "autoscaling.keda.serverAddress: KEDA needs the address of the Prometheus that scrapes the relays (e.g. http://prometheus-operated.monitoring.svc:9090)" -}}
{{- end -}}
{{- end -}}
true
{{- end -}}
{{- end -}}

{{/*
sharerelay.lagQuery: the share group's lag of the release's pipeline, in
records: each partition's max over the instances (every instance reports
the broker's same value), summed over the partitions.
*/}}
{{- define "sharerelay.lagQuery" -}}
sum(max by (topic, partition) (sharerelay_share_group_lag{pipeline={{ include "sharerelay.pipelineName" . | quote }}}))
{{- end -}}

{{/*
sharerelay.behavior: the HPA behavior of autoscaling.scaleUp and scaleDown,
for the HPA and for the one KEDA makes.
*/}}
{{- define "sharerelay.behavior" -}}
scaleUp:
  {{- toYaml .Values.autoscaling.scaleUp | nindent 2 }}
scaleDown:
  {{- toYaml .Values.autoscaling.scaleDown | nindent 2 }}
{{- end -}}
