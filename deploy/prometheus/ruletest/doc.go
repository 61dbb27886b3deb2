// Package ruletest evaluates the shipped alerting rules
// (../sharerelay-alerts.yaml) with Prometheus's own rule manager and
// PromQL engine against synthetic series, step by step as a Prometheus
// server would, so that a rule is shown to fire when it must and to stay
// quiet when it must. It runs the Helm chart's rules for one release
// (../../helm/testdata/orders-alerts.yaml) beside a neighbour pipeline
// too, to show that a release alerts on its own pipeline alone.
//
// It is a module of its own: github.com/prometheus/prometheus brings a
// large dependency graph (and newer versions of modules the relay shares,
// such as client_golang), which must not reach the relay binary's module
// graph. Run it from this directory with go test ./...; make test runs it.
package ruletest
