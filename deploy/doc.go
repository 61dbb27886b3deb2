// Package deploy holds the relay's operations kit, and no code: a Grafana
// dashboard (grafana/), Prometheus alerting rules (prometheus/), a systemd
// unit (systemd/), with the Dockerfile at the repository's root.
//
// Its tests keep the kit honest where nothing else would: every metric the
// dashboard and the rules query must be one metrics.New or live.NewMetrics
// (relay audit's) registers (a renamed metric otherwise turns a panel
// blank and an alert silent), the dashboard must show every metric the
// relay and its auditor export, the rules must have
// the fields Prometheus and the on-call need, the Helm chart's rules and
// autoscaling query (as its tests render them into helm/testdata/) must
// read their own pipeline's series only, and the Dockerfile and the
// unit must keep the properties docs/operations.md promises (a static binary run
// as non-root; a stop timeout above the relay's shutdown bound), since no
// Docker engine or systemd runs in CI.
package deploy
