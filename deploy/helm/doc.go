// Package helm holds the tests of the Helm chart in sharerelay/, and no
// code.
//
// It is a Go module of its own so that the Helm SDK and the Kubernetes API
// types, which the tests need, stay out of the relay's module graph: the
// relay's go.mod never names them, and building the relay never
// downloads them. It does not import the relay's module either; what the
// tests need from it they read as files: the pipeline schema
// (configs/pipeline.schema.json: its defaults, the documented shutdown
// bound, and the shape of a pipeline file) and the shipped alerts
// (deploy/prometheus/sharerelay-alerts.yaml).
//
// The tests render the chart with the Helm SDK, as helm install would, for
// the default values and for a secured pipeline (SASL and TLS from
// Secrets, ServiceMonitor and PrometheusRule on); decode every rendered
// object strictly into its Kubernetes or prometheus-operator type, so an
// unknown or misplaced field fails; and check what the chart promises: the
// instance name is the pod name, the probes reach /healthz and /readyz,
// the grace period covers the relay's shutdown bound, the pods run as
// non-root on a read-only root filesystem, the selectors match, the
// pipeline is in the ConfigMap, secrets are referenced and never written,
// and the PrometheusRule carries every shipped alert.
//
//	cd deploy/helm && go test ./...
//
// make test runs them after the relay's.
package helm
