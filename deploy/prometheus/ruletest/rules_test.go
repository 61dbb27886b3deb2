package ruletest

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/promslog"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql/promqltest"
	"github.com/prometheus/prometheus/rules"
)

const (
	rulesFile = "../sharerelay-alerts.yaml"
	// chartRulesFile is the Helm chart's PrometheusRule for a release of
	// the pipeline chartPipeline, as the chart's tests render it.
	chartRulesFile = "../../helm/testdata/orders-alerts.yaml"
	chartPipeline  = "orders-to-jobs"
	// evalInterval is Prometheus's default evaluation_interval.
	evalInterval = time.Minute
)

// alertCase is one scenario: series loaded in promqltest's notation (one
// sample a minute from time 0: "1x30" is 31 samples of 1, "0+6x30" a
// counter rising by 6 a minute, "_" a missing sample, "stale" the marker
// Prometheus writes when a target disappears or its scrape fails), the
// rules evaluated every minute up to at, and the alerts of rule firing
// then, each written as its labels (pipeline, instance and job unless
// labels names others).
type alertCase struct {
	name string
	// file is the rule file; "" is rulesFile.
	file   string
	rule   string
	series string
	at     time.Duration
	labels []string
	want   []string
}

// runCase evaluates every group of the rule file from time 0 to c.at and
// returns the firing alerts of c.rule, sorted. An evaluation error of any
// rule fails the test: a rule that errors never fires.
func runCase(t *testing.T, c alertCase) []string {
	t.Helper()
	ll, err := promqltest.NewLazyLoader("load 1m\n"+c.series, promqltest.LazyLoaderOpts{EnableAtModifier: true, EnableNegativeOffset: true})
	if err != nil {
		t.Fatalf("series: %v", err)
	}
	defer func() {
		if err := ll.Close(); err != nil {
			t.Error(err)
		}
	}()
	mgr := rules.NewManager(&rules.ManagerOptions{
		QueryFunc:    rules.EngineQueryFunc(ll.QueryEngine(), ll.Storage()),
		AppendableV2: ll.Storage(),
		Context:      context.Background(),
		NotifyFunc:   func(context.Context, string, ...*rules.Alert) {},
		Logger:       promslog.NewNopLogger(),
	})
	file := c.file
	if file == "" {
		file = rulesFile
	}
	groups, errs := mgr.LoadGroups(evalInterval, labels.EmptyLabels(), "", nil, false, file)
	if len(errs) > 0 {
		t.Fatalf("%s: %v", file, errs)
	}
	var found *rules.AlertingRule
	for _, g := range groups {
		for _, r := range g.Rules() {
			if ar, ok := r.(*rules.AlertingRule); ok && ar.Name() == c.rule {
				found = ar
			}
		}
	}
	if found == nil {
		t.Fatalf("%s has no alert %s", file, c.rule)
	}
	start := time.Unix(0, 0).UTC()
	for ts := start; !ts.After(start.Add(c.at)); ts = ts.Add(evalInterval) {
		ll.WithSamplesTill(ts, func(err error) {
			if err != nil {
				t.Fatal(err)
			}
			for _, g := range groups {
				g.Eval(ll.Context(), ts)
				for _, r := range g.Rules() {
					if err := r.LastError(); err != nil {
						t.Fatalf("at %s, rule %s: %v", ts.Sub(start), r.Name(), err)
					}
				}
			}
		})
	}
	shown := c.labels
	if shown == nil {
		shown = []string{"pipeline", "instance", "job"}
	}
	var got []string
	for _, a := range found.ActiveAlerts() {
		if a.State != rules.StateFiring {
			continue
		}
		var parts []string
		for _, l := range shown {
			if v := a.Labels.Get(l); v != "" {
				parts = append(parts, fmt.Sprintf("%s=%s", l, v))
			}
		}
		got = append(got, strings.Join(parts, ","))
	}
	slices.Sort(got)
	return got
}

// ready is a sharerelay_ready series of pipeline p on instance i, with
// the labels Prometheus adds to it (job and instance).
func ready(p, i, values string) string {
	return fmt.Sprintf("sharerelay_ready{job=\"relay\", pipeline=%q, instance=%q} %s\n", p, i, values)
}

// up is the up series Prometheus writes for the target job/instance.
func up(job, i, values string) string {
	return fmt.Sprintf("up{job=%q, instance=%q} %s\n", job, i, values)
}

// counter is a relay counter of pipeline p, worker w, on instance i.
func counter(name, p, i, w, values string) string {
	return fmt.Sprintf("%s{job=\"relay\", pipeline=%q, instance=%q, worker=%q} %s\n", name, p, i, w, values)
}

var alertCases = []alertCase{
	// SharerelayPipelineNotReady and SharerelayPipelineDown: the first
	// needs an instance alive to say it is not ready; the second covers
	// the silence left when there is none.
	{
		name:   "a pipeline whose only instance reports not ready is not ready",
		rule:   "SharerelayPipelineNotReady",
		series: ready("orders", "a:9464", "1x10 0x20") + up("relay", "a:9464", "1x30"),
		at:     30 * time.Minute,
		want:   []string{"pipeline=orders"},
	},
	{
		name:   "when its only instance dies, not-ready goes quiet with it",
		rule:   "SharerelayPipelineNotReady",
		series: ready("orders", "a:9464", "1x10 0x5 stale _x20"),
		at:     30 * time.Minute,
		want:   nil,
	},
	{
		name:   "when its only instance dies, the pipeline is down after 5 minutes",
		rule:   "SharerelayPipelineDown",
		series: ready("orders", "a:9464", "1x10 stale _x20"),
		at:     17 * time.Minute,
		want:   []string{"pipeline=orders"},
	},
	{
		name:   "a pipeline gone for less than 5 minutes is not down yet",
		rule:   "SharerelayPipelineDown",
		series: ready("orders", "a:9464", "1x10 stale _x20"),
		at:     14 * time.Minute,
		want:   nil,
	},
	{
		name: "a pipeline is down when every instance is gone, each at its own time",
		rule: "SharerelayPipelineDown",
		series: ready("orders", "a:9464", "1x10 stale _x30") +
			ready("orders", "b:9464", "1x20 stale _x20") +
			ready("orders", "c:9464", "1x25 stale _x15"),
		at:   33 * time.Minute,
		want: []string{"pipeline=orders"},
	},
	{
		name: "a pipeline with one instance left is not down",
		rule: "SharerelayPipelineDown",
		series: ready("orders", "a:9464", "1x10 stale _x30") +
			ready("orders", "b:9464", "0x40"),
		at: 40 * time.Minute,
	},
	{
		name: "only the pipeline that is gone is down, not its neighbour",
		rule: "SharerelayPipelineDown",
		series: ready("orders", "a:9464", "1x10 stale _x20") +
			ready("invoices", "b:9464", "1x30"),
		at:   30 * time.Minute,
		want: []string{"pipeline=orders"},
	},
	{
		name: "a rolling restart that replaces the instance within a minute is not down",
		rule: "SharerelayPipelineDown",
		series: ready("orders", "pod-ip-1:9464", "1x10 stale _x20") +
			ready("orders", "pod-ip-2:9464", "_x11 0 1x18"),
		at: 30 * time.Minute,
	},
	{
		name: "samples that stop without a stale marker are down once they fall out of the 5-minute lookback",
		rule: "SharerelayPipelineDown",
		// Prometheus itself gone for a while, say: no marker is written.
		series: ready("orders", "a:9464", "1x10 _x20"),
		at:     21 * time.Minute,
		want:   []string{"pipeline=orders"},
	},
	{
		name:   "a pipeline is forgotten 24 hours after its last instance reported",
		rule:   "SharerelayPipelineDown",
		series: ready("orders", "a:9464", "1x10 stale _x1460"),
		at:     (24*60 + 12) * time.Minute,
		want:   nil,
	},

	// SharerelayInstanceDown: a target still configured whose scrape fails.
	{
		name: "an instance Prometheus cannot scrape for 5 minutes is down, with its pipeline",
		rule: "SharerelayInstanceDown",
		series: ready("orders", "a:9464", "1x10 stale _x20") + up("relay", "a:9464", "1x10 0x20") +
			ready("orders", "b:9464", "1x30") + up("relay", "b:9464", "1x30"),
		at:   17 * time.Minute,
		want: []string{"pipeline=orders,instance=a:9464,job=relay"},
	},
	{
		name:   "an instance down for less than 5 minutes is not down yet",
		rule:   "SharerelayInstanceDown",
		series: ready("orders", "a:9464", "1x10 stale _x20") + up("relay", "a:9464", "1x10 0x20"),
		at:     14 * time.Minute,
	},
	{
		name:   "a failing target that never exported sharerelay metrics is not the relay's concern",
		rule:   "SharerelayInstanceDown",
		series: up("node", "db:9100", "0x30") + ready("orders", "a:9464", "1x30") + up("relay", "a:9464", "1x30"),
		at:     30 * time.Minute,
	},
	{
		name:   "an instance removed from the scrape configuration is not down",
		rule:   "SharerelayInstanceDown",
		series: ready("orders", "a:9464", "1x10 stale _x20") + up("relay", "a:9464", "1x10 stale _x20"),
		at:     30 * time.Minute,
	},
	{
		name: "an address that served two pipelines in the last day is one alert, and the rule does not fail",
		rule: "SharerelayInstanceDown",
		series: ready("orders", "a:9464", "1x10 stale _x20") +
			ready("invoices", "a:9464", "_x11 1x5 stale _x14") +
			up("relay", "a:9464", "1x16 0x14"),
		at: 30 * time.Minute,
		// Either pipeline may be named: the address's history cannot tell
		// which one it ran last.
		labels: []string{"instance", "job"},
		want:   []string{"instance=a:9464,job=relay"},
	},

	// SharerelayDeadLetterRateHigh: dead letters per record received.
	{
		name: "one record in ten dead-lettered for 10 minutes fires",
		rule: "SharerelayDeadLetterRateHigh",
		series: counter("sharerelay_records_polled_total", "orders", "a:9464", "0", "0+600x40") +
			counter("sharerelay_dead_letters_total", "orders", "a:9464", "0", "0+60x40"),
		at:   30 * time.Minute,
		want: []string{"pipeline=orders"},
	},
	{
		name: "dead letters from one instance of two count against the pipeline's records",
		rule: "SharerelayDeadLetterRateHigh",
		series: counter("sharerelay_records_polled_total", "orders", "a:9464", "0", "0+300x40") +
			counter("sharerelay_records_polled_total", "orders", "b:9464", "0", "0+300x40") +
			counter("sharerelay_dead_letters_total", "orders", "b:9464", "0", "0+60x40"),
		at:   30 * time.Minute,
		want: []string{"pipeline=orders"},
	},
	{
		name: "one record in a hundred dead-lettered does not fire",
		rule: "SharerelayDeadLetterRateHigh",
		series: counter("sharerelay_records_polled_total", "orders", "a:9464", "0", "0+600x40") +
			counter("sharerelay_dead_letters_total", "orders", "a:9464", "0", "0+6x40"),
		at: 30 * time.Minute,
	},
	{
		name: "a burst shorter than 10 minutes does not fire",
		rule: "SharerelayDeadLetterRateHigh",
		series: counter("sharerelay_records_polled_total", "orders", "a:9464", "0", "0+600x40") +
			counter("sharerelay_dead_letters_total", "orders", "a:9464", "0", "0x10 0+600x3 1800x27"),
		at: 40 * time.Minute,
	},
	{
		name:   "a pipeline that never dead-lettered does not fire",
		rule:   "SharerelayDeadLetterRateHigh",
		series: counter("sharerelay_records_polled_total", "orders", "a:9464", "0", "0+600x40"),
		at:     30 * time.Minute,
	},
	{
		name: "a pipeline with no traffic does not fire",
		rule: "SharerelayDeadLetterRateHigh",
		series: counter("sharerelay_records_polled_total", "orders", "a:9464", "0", "100x40") +
			counter("sharerelay_dead_letters_total", "orders", "a:9464", "0", "10x40"),
		at: 30 * time.Minute,
	},
	{
		name: "a restarted instance's counters starting again from 0 do not fire",
		rule: "SharerelayDeadLetterRateHigh",
		series: counter("sharerelay_records_polled_total", "orders", "a:9464", "0", "0+600x20 0+600x20") +
			counter("sharerelay_dead_letters_total", "orders", "a:9464", "0", "0+3x20 0+3x20"),
		at: 40 * time.Minute,
	},

	// The live audit's alerts: its counters are per source partition,
	// from its own scrape target.
	{
		name:   "a loss the live audit judges fires at once",
		rule:   "SharerelayAuditLost",
		series: audited("sharerelay_audit_lost_total", "orders", "audit:9465", "0x10 1x10"),
		at:     12 * time.Minute,
		labels: auditLabels,
		want:   []string{"pipeline=orders,topic=orders,partition=0"},
	},
	{
		name:   "an audit that judges nothing lost does not fire",
		rule:   "SharerelayAuditLost",
		series: audited("sharerelay_audit_lost_total", "orders", "audit:9465", "0x40"),
		at:     40 * time.Minute,
		labels: auditLabels,
	},
	{
		name:   "a loss judged on the auditor's first start, before its first scrape, fires",
		rule:   "SharerelayAuditLost",
		series: audited("sharerelay_audit_lost_total", "orders", "audit:9465", "_x10 3x10"),
		at:     12 * time.Minute,
		labels: auditLabels,
		want:   []string{"pipeline=orders,topic=orders,partition=0"},
	},
	{
		name: "an old loss does not fire again when the auditor restarts from its checkpoint, on another instance",
		rule: "SharerelayAuditLost",
		series: audited("sharerelay_audit_lost_total", "orders", "audit-a:9465", "2x30 stale") +
			audited("sharerelay_audit_lost_total", "orders", "audit-b:9465", "_x31 2x30"),
		at:     40 * time.Minute,
		labels: auditLabels,
	},
	{
		name: "a duplicate in an exactly-once pipeline fires",
		rule: "SharerelayAuditDuplicated",
		series: audited("sharerelay_audit_duplicated_total", "orders", "audit:9465", "0x10 1x10") +
			audited("sharerelay_audit_both_total", "orders", "audit:9465", "0x20") + auditInfo("orders", "exactly-once"),
		at:     12 * time.Minute,
		labels: auditLabels,
		want:   []string{"pipeline=orders,topic=orders,partition=0"},
	},
	{
		name: "a record in the output and the dead letters of an exactly-once pipeline fires",
		rule: "SharerelayAuditDuplicated",
		series: audited("sharerelay_audit_duplicated_total", "orders", "audit:9465", "0x20") +
			audited("sharerelay_audit_both_total", "orders", "audit:9465", "0x10 1x10") + auditInfo("orders", "exactly-once"),
		at:     12 * time.Minute,
		labels: auditLabels,
		want:   []string{"pipeline=orders,topic=orders,partition=0"},
	},
	{
		name: "duplicates of an at-least-once pipeline do not fire",
		rule: "SharerelayAuditDuplicated",
		series: audited("sharerelay_audit_duplicated_total", "orders", "audit:9465", "0+3x20") +
			audited("sharerelay_audit_both_total", "orders", "audit:9465", "0x20") + auditInfo("orders", "at-least-once"),
		at:     12 * time.Minute,
		labels: auditLabels,
	},
	{
		name:   "a judgement stuck for over 10 minutes, and still falling behind, fires",
		rule:   "SharerelayAuditLagGrowing",
		series: auditLag("orders", "0+60x30"),
		at:     20 * time.Minute,
		labels: []string{"pipeline"},
		want:   []string{"pipeline=orders"},
	},
	{
		name:   "a judgement that catches up does not fire",
		rule:   "SharerelayAuditLagGrowing",
		series: auditLag("orders", "0+60x12 5x20"),
		at:     30 * time.Minute,
		labels: []string{"pipeline"},
	},
	{
		name:   "an audit judging every few seconds does not fire",
		rule:   "SharerelayAuditLagGrowing",
		series: auditLag("orders", "5x40"),
		at:     40 * time.Minute,
		labels: []string{"pipeline"},
	},
}

// auditLabels are the labels the live audit's partition alerts carry.
var auditLabels = []string{"pipeline", "topic", "partition"}

// audited is a live-audit counter of pipeline p's source partition
// orders[0], scraped from instance i.
func audited(name, p, i, values string) string {
	return fmt.Sprintf("%s{job=\"audit\", pipeline=%q, instance=%q, topic=\"orders\", partition=\"0\"} %s\n", name, p, i, values)
}

// auditInfo is the live audit's info series: pipeline p's delivery.
func auditInfo(p, delivery string) string {
	return fmt.Sprintf("sharerelay_audit_info{job=\"audit\", pipeline=%q, instance=\"audit:9465\", delivery=%q} 1x40\n", p, delivery)
}

// auditLag is the live audit's lag in seconds for pipeline p.
func auditLag(p, values string) string {
	return fmt.Sprintf("sharerelay_audit_lag_seconds{job=\"audit\", pipeline=%q, instance=\"audit:9465\"} %s\n", p, values)
}

func TestAlertRulesFireWhenTheyMust(t *testing.T) {
	for _, c := range alertCases {
		t.Run(c.name, func(t *testing.T) {
			if got := runCase(t, c); !slices.Equal(got, c.want) {
				t.Errorf("%s at %s: firing %q, want %q", c.rule, c.at, got, c.want)
			}
		})
	}
}

// TestEveryNewRuleHasCases keeps the rules that watch for silence and for
// dead letters covered both ways: each has a case where it fires and one
// where it does not.
func TestEveryNewRuleHasCases(t *testing.T) {
	fires, quiet := map[string]bool{}, map[string]bool{}
	for _, c := range alertCases {
		if len(c.want) > 0 {
			fires[c.rule] = true
		} else {
			quiet[c.rule] = true
		}
	}
	for _, r := range []string{"SharerelayPipelineDown", "SharerelayInstanceDown", "SharerelayDeadLetterRateHigh",
		"SharerelayAuditLost", "SharerelayAuditDuplicated", "SharerelayAuditLagGrowing"} {
		if !fires[r] || !quiet[r] {
			t.Errorf("%s: a case where it fires: %v, one where it does not: %v; want both", r, fires[r], quiet[r])
		}
	}
}

// scopedCases run the chart's rules, which match the release's pipeline
// alone, beside a neighbour pipeline (payments) in the same Prometheus:
// the release alerts on its own pipeline and stays quiet for the
// neighbour's, the live audit's alerts as the relay's.
var scopedCases = []alertCase{
	{
		name:   "the release's pipeline not ready fires, its neighbour's does not",
		rule:   "SharerelayPipelineNotReady",
		series: ready(chartPipeline, "a:9464", "1x5 0x20") + ready("payments", "b:9464", "0x25"),
		at:     25 * time.Minute,
		want:   []string{"pipeline=" + chartPipeline},
	},
	{
		name:   "a neighbour's instance down is not the release's",
		rule:   "SharerelayInstanceDown",
		series: ready(chartPipeline, "a:9464", "1x30") + up("relay", "a:9464", "1x30") + ready("payments", "b:9464", "1x5 stale") + up("relay", "b:9464", "1x5 0x25"),
		at:     30 * time.Minute,
		want:   nil,
	},
	{
		name:   "the release's instance down is",
		rule:   "SharerelayInstanceDown",
		series: ready(chartPipeline, "a:9464", "1x5 stale") + up("relay", "a:9464", "1x5 0x25") + ready("payments", "b:9464", "1x30") + up("relay", "b:9464", "1x30"),
		at:     30 * time.Minute,
		want:   []string{"pipeline=" + chartPipeline + ",instance=a:9464,job=relay"},
	},
	{
		name:   "the neighbour's lost records do not fire the release's audit alert",
		rule:   "SharerelayAuditLost",
		series: audited("sharerelay_audit_lost_total", chartPipeline, "audit:9465", "0x30") + audited("sharerelay_audit_lost_total", "payments", "audit-p:9465", "0x10 1x20"),
		at:     20 * time.Minute,
		labels: auditLabels,
		want:   nil,
	},
	{
		name:   "the release's own lost records do",
		rule:   "SharerelayAuditLost",
		series: audited("sharerelay_audit_lost_total", chartPipeline, "audit:9465", "0x10 1x20") + audited("sharerelay_audit_lost_total", "payments", "audit-p:9465", "0x10 1x20"),
		at:     20 * time.Minute,
		labels: auditLabels,
		want:   []string{"pipeline=" + chartPipeline + ",topic=orders,partition=0"},
	},
	{
		name:   "the neighbour's duplicates in an exactly-once pipeline do not fire the release's",
		rule:   "SharerelayAuditDuplicated",
		series: audited("sharerelay_audit_duplicated_total", "payments", "audit-p:9465", "0x10 1x20") + audited("sharerelay_audit_both_total", "payments", "audit-p:9465", "0x30") + auditInfo("payments", "exactly-once") + auditInfo(chartPipeline, "exactly-once"),
		at:     20 * time.Minute,
		labels: auditLabels,
		want:   nil,
	},
	{
		name:   "the neighbour's audit falling behind does not fire the release's",
		rule:   "SharerelayAuditLagGrowing",
		series: auditLag("payments", "0+60x40") + auditLag(chartPipeline, "10x40"),
		at:     40 * time.Minute,
		labels: []string{"pipeline"},
		want:   nil,
	},
	{
		name:   "the release's audit falling behind does",
		rule:   "SharerelayAuditLagGrowing",
		series: auditLag(chartPipeline, "0+60x40"),
		at:     40 * time.Minute,
		labels: []string{"pipeline"},
		want:   []string{"pipeline=" + chartPipeline},
	},
}

func TestTheChartsRulesWatchTheReleasesPipelineAlone(t *testing.T) {
	for _, c := range scopedCases {
		c.file = chartRulesFile
		t.Run(c.name, func(t *testing.T) {
			if got := runCase(t, c); !slices.Equal(got, c.want) {
				t.Errorf("%s at %s: firing %q, want %q", c.rule, c.at, got, c.want)
			}
		})
	}
	// The same series fire the shipped rules, which watch every pipeline,
	// for the neighbour: the cases above are quiet for the scoping alone.
	for _, c := range scopedCases {
		if len(c.want) > 0 {
			continue
		}
		t.Run("unscoped: "+c.name, func(t *testing.T) {
			if got := runCase(t, c); len(got) == 0 {
				t.Errorf("%s at %s: the shipped rules do not fire either, so the case shows nothing of the scoping", c.rule, c.at)
			}
		})
	}
}

// TestRuleFileLoadsInPrometheus loads the file as a Prometheus server
// does: every expression parses, every template compiles, every field is
// known.
func TestRuleFileLoadsInPrometheus(t *testing.T) {
	mgr := rules.NewManager(&rules.ManagerOptions{Context: context.Background(), Logger: promslog.NewNopLogger()})
	for _, f := range []string{rulesFile, chartRulesFile} {
		if _, errs := mgr.LoadGroups(evalInterval, labels.EmptyLabels(), "", nil, false, f); len(errs) > 0 {
			t.Fatalf("%s: %v", f, errs)
		}
	}
}
