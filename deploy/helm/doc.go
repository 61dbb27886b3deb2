// Package helm holds the tests of the Helm chart in sharerelay/, and no
// code.
//
// It is a Go module of its own so that the Helm SDK, the Kubernetes API
// types and KEDA's (github.com/kedacore/keda/v2/apis/keda/v1alpha1), which
// the tests need, stay out of the relay's module graph: the relay's go.mod
// never names them, and building the relay never downloads them. It does
// not import the relay's module either; what the tests need from it they
// read as files: the pipeline schema (configs/pipeline.schema.json: its
// defaults, the documented shutdown bound, and the shape of a pipeline
// file) and the shipped alerts (deploy/prometheus/sharerelay-alerts.yaml).
//
// The tests render the chart with the Helm SDK, as helm install would, for
// the default values, a secured pipeline (SASL and TLS from Secrets,
// ServiceMonitor and PrometheusRule on), autoscaling (KEDA or an HPA) and
// the live audit; decode every rendered object strictly into its
// Kubernetes, prometheus-operator or KEDA type, so an unknown or misplaced
// field fails; and check what the chart promises: the instance name is
// the pod name, the probes reach /healthz and /readyz, the grace period
// covers the relay's shutdown bound, at scale-in too, and no autoscaler
// scales in faster than a pod drains, the pods run as non-root on a
// read-only root filesystem, the selectors match, the pipeline is in the
// ConfigMap, secrets are referenced and never written, and the
// PrometheusRule carries every shipped alert, each expression scoped to
// the release's pipeline.
//
// The alerting rules have one source, the chart's templates/_alerts.tpl:
// deploy/prometheus/sharerelay-alerts.yaml is its rendering for every
// pipeline, and testdata/ holds what the chart renders for one release
// (its rules, its autoscalers' query), which the relay module's deploy
// tests and the rule tests of deploy/prometheus/ruletest check in turn,
// as they cannot render the chart. A test fails when any of these files
// is stale; -update rewrites them:
//
//	cd deploy/helm && go test ./...
//	cd deploy/helm && go test ./... -update
//
// make test runs them after the relay's.
package helm
