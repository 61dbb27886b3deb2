package deploy

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
	"text/template"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"go.yaml.in/yaml/v3"

	"github.com/sharerelay/sharerelay/audit/live"
	"github.com/sharerelay/sharerelay/metrics"
)

const (
	dashboardFile = "grafana/sharerelay-dashboard.json"
	alertsFile    = "prometheus/sharerelay-alerts.yaml"
)

// family is one metric metrics.New (the relay's) or live.NewMetrics (the
// live auditor's, relay audit) registers.
type family struct {
	name, kind string // kind: counter, gauge, histogram, summary
	// labels are the names of its labels, constant (pipeline) and
	// variable, as its description gives them.
	labels []string
}

// series returns the names under which Prometheus stores the family.
func (f family) series() []string {
	switch f.kind {
	case "histogram":
		return []string{f.name + "_bucket", f.name + "_sum", f.name + "_count"}
	case "summary":
		return []string{f.name, f.name + "_sum", f.name + "_count"}
	}
	return []string{f.name}
}

// recorder registers on a real registry, so a conflict still fails, and
// remembers each collector: a vector with no child yet is absent from
// Gather, so the names come from the collectors' descriptions instead.
type recorder struct {
	*prometheus.Registry
	collectors []prometheus.Collector
}

func (r *recorder) Register(c prometheus.Collector) error {
	if err := r.Registry.Register(c); err != nil {
		return err
	}
	r.collectors = append(r.collectors, c)
	return nil
}

func (r *recorder) MustRegister(cs ...prometheus.Collector) {
	for _, c := range cs {
		if err := r.Register(c); err != nil {
			panic(err)
		}
	}
}

var (
	fqName      = regexp.MustCompile(`^Desc\{fqName: "([^"]+)"`)
	descLabels  = regexp.MustCompile(`constLabels: \{(.*)\}, variableLabels: \{([^}]*)\}\}$`)
	constLabel  = regexp.MustCompile(`(?:^|,)([a-zA-Z_][a-zA-Z0-9_]*)="`)
	constrained = regexp.MustCompile(`^c\((.*)\)$`)
)

// labelNames reads the label names of a metric's description.
func labelNames(desc string) []string {
	m := descLabels.FindStringSubmatch(desc)
	if m == nil {
		return nil
	}
	var out []string
	for _, c := range constLabel.FindAllStringSubmatch(m[1], -1) {
		out = append(out, c[1])
	}
	for _, v := range strings.Split(m[2], ",") {
		if v != "" {
			out = append(out, constrained.ReplaceAllString(v, "$1"))
		}
	}
	return out
}

// exported returns every metric metrics.New and live.NewMetrics register
// on a fresh registry, by the name of each series Prometheus stores.
func exported(t *testing.T) (bySeries map[string]family, families []family) {
	t.Helper()
	rec := &recorder{Registry: prometheus.NewRegistry()}
	metrics.New(rec, "p")
	live.NewMetrics(rec, "p")
	bySeries = map[string]family{}
	seen := map[string]bool{}
	for _, c := range rec.collectors {
		kind := kindOf(t, c)
		descs := make(chan *prometheus.Desc, 16)
		go func() { c.Describe(descs); close(descs) }()
		for d := range descs {
			m := fqName.FindStringSubmatch(d.String())
			if m == nil {
				t.Fatalf("cannot read the name of %s", d)
			}
			f := family{name: m[1], kind: kind, labels: labelNames(d.String())}
			if len(f.labels) == 0 {
				t.Fatalf("cannot read the labels of %s", d)
			}
			if seen[f.name] {
				continue // one family in several collectors (ledger_claims by state)
			}
			seen[f.name] = true
			families = append(families, f)
			for _, s := range f.series() {
				bySeries[s] = f
			}
		}
	}
	if len(families) < 20 {
		t.Fatalf("read %d metric families from metrics.New; the test no longer sees them", len(families))
	}
	return bySeries, families
}

// kindOf tells a collector's metric type: from its Go type for vectors
// (which collect nothing until a child exists), else from what it collects.
func kindOf(t *testing.T, c prometheus.Collector) string {
	switch c.(type) {
	case *prometheus.CounterVec:
		return "counter"
	case *prometheus.GaugeVec:
		return "gauge"
	case *prometheus.HistogramVec:
		return "histogram"
	case *prometheus.SummaryVec:
		return "summary"
	}
	ch := make(chan prometheus.Metric, 16)
	go func() { c.Collect(ch); close(ch) }()
	kind := ""
	for m := range ch {
		var pb dto.Metric
		if err := m.Write(&pb); err != nil {
			t.Fatal(err)
		}
		switch {
		case pb.Counter != nil:
			kind = "counter"
		case pb.Gauge != nil:
			kind = "gauge"
		case pb.Histogram != nil:
			kind = "histogram"
		case pb.Summary != nil:
			kind = "summary"
		}
	}
	if kind == "" {
		t.Fatalf("cannot tell the type of collector %T", c)
	}
	return kind
}

func TestExportedCountersAreNamedTotal(t *testing.T) {
	_, families := exported(t)
	for _, f := range families {
		if !strings.HasPrefix(f.name, "sharerelay_") {
			t.Errorf("%s: every relay metric starts with sharerelay_", f.name)
		}
		if (f.kind == "counter") != strings.HasSuffix(f.name, "_total") {
			t.Errorf("%s is a %s: counters, and only counters, end in _total", f.name, f.kind)
		}
	}
}

// query is one PromQL expression of the kit, with where it is.
type query struct {
	where string
	expr  parsedExpr
	text  string
}

// dashboard is the part of a Grafana dashboard the tests read.
type dashboard struct {
	ID            *int    `json:"id"`
	UID           string  `json:"uid"`
	Title         string  `json:"title"`
	SchemaVersion int     `json:"schemaVersion"`
	Panels        []panel `json:"panels"`
	Templating    struct {
		List []struct {
			Name       string          `json:"name"`
			Type       string          `json:"type"`
			Query      json.RawMessage `json:"query"`
			Datasource *dsRef          `json:"datasource"`
		} `json:"list"`
	} `json:"templating"`
}

type panel struct {
	ID         int    `json:"id"`
	Type       string `json:"type"`
	Title      string `json:"title"`
	Datasource *dsRef `json:"datasource"`
	GridPos    struct {
		H, W, X, Y int
	} `json:"gridPos"`
	Targets []struct {
		RefID      string `json:"refId"`
		Expr       string `json:"expr"`
		Datasource *dsRef `json:"datasource"`
	} `json:"targets"`
	Panels []panel `json:"panels"` // a collapsed row's
}

type dsRef struct {
	Type string `json:"type"`
	UID  string `json:"uid"`
}

func readDashboard(t *testing.T) dashboard {
	t.Helper()
	b, err := os.ReadFile(dashboardFile)
	if err != nil {
		t.Fatal(err)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	var d dashboard
	if err := dec.Decode(&d); err != nil {
		t.Fatalf("%s: %v", dashboardFile, err)
	}
	return d
}

// allPanels flattens rows.
func allPanels(ps []panel) []panel {
	var out []panel
	for _, p := range ps {
		out = append(out, p)
		out = append(out, allPanels(p.Panels)...)
	}
	return out
}

func dashboardQueries(t *testing.T) []query {
	t.Helper()
	d := readDashboard(t)
	var out []query
	for _, p := range allPanels(d.Panels) {
		for _, tg := range p.Targets {
			e, err := parsePromQL(tg.Expr)
			if err != nil {
				t.Errorf("%s: panel %q, query %s: %v", dashboardFile, p.Title, tg.RefID, err)
				continue
			}
			out = append(out, query{where: fmt.Sprintf("%s: panel %q, query %s", dashboardFile, p.Title, tg.RefID), expr: e, text: tg.Expr})
		}
	}
	for _, v := range d.Templating.List {
		if v.Type != "query" {
			continue
		}
		q := variableQuery(t, v.Query)
		e, ok, err := labelValuesMetric(q)
		if !ok {
			e, err = parsePromQL(q)
		}
		if err != nil {
			t.Errorf("%s: variable %s: %v", dashboardFile, v.Name, err)
			continue
		}
		out = append(out, query{where: fmt.Sprintf("%s: variable %s", dashboardFile, v.Name), expr: e, text: q})
	}
	return out
}

// variableQuery reads a query variable's query: a string, or an object
// with one (newer Grafana).
func variableQuery(t *testing.T, raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var o struct {
		Query string `json:"query"`
	}
	if err := json.Unmarshal(raw, &o); err != nil {
		t.Fatalf("%s: variable query %s: %v", dashboardFile, raw, err)
	}
	return o.Query
}

// ruleFile is a Prometheus rule file, decoded strictly: a misspelt key
// (expresion:, annotation:) is an error, as it is for Prometheus.
type ruleFile struct {
	Groups []struct {
		Name     string `yaml:"name"`
		Interval string `yaml:"interval"`
		Rules    []rule `yaml:"rules"`
	} `yaml:"groups"`
}

type rule struct {
	Alert         string            `yaml:"alert"`
	Record        string            `yaml:"record"`
	Expr          string            `yaml:"expr"`
	For           string            `yaml:"for"`
	KeepFiringFor string            `yaml:"keep_firing_for"`
	Labels        map[string]string `yaml:"labels"`
	Annotations   map[string]string `yaml:"annotations"`
}

func readRules(t *testing.T) ruleFile {
	t.Helper()
	return readRuleFile(t, alertsFile)
}

// readRuleFile reads the rule file at path.
func readRuleFile(t *testing.T, path string) ruleFile {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	var f ruleFile
	if err := dec.Decode(&f); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return f
}

func ruleQueries(t *testing.T) []query {
	t.Helper()
	var out []query
	for _, g := range readRules(t).Groups {
		for _, r := range g.Rules {
			e, err := parsePromQL(r.Expr)
			if err != nil {
				t.Errorf("%s: alert %s: %v", alertsFile, r.Alert, err)
				continue
			}
			out = append(out, query{where: fmt.Sprintf("%s: alert %s", alertsFile, r.Alert), expr: e, text: r.Expr})
		}
	}
	return out
}

// scrapeSeries are the series Prometheus writes for every target itself;
// the rules may read them (a dead instance exports nothing of its own).
var scrapeSeries = set("up")

func TestDashboardAndAlertsQueryOnlyMetricsTheRelayExports(t *testing.T) {
	bySeries, _ := exported(t)
	for _, q := range append(dashboardQueries(t), ruleQueries(t)...) {
		for _, n := range q.expr.names() {
			if _, ok := bySeries[n]; !ok && !(scrapeSeries[n] && strings.HasPrefix(q.where, alertsFile)) {
				t.Errorf("%s: %s is not a series the relay or its auditor exports (metrics.New, live.NewMetrics)", q.where, n)
			}
		}
	}
	if t.Failed() {
		t.Logf("the series it exports: %s", strings.Join(slices.Sorted(maps.Keys(bySeries)), ", "))
	}
}

func TestDashboardShowsEveryMetricTheRelayExports(t *testing.T) {
	bySeries, families := exported(t)
	shown := map[string]bool{}
	for _, q := range dashboardQueries(t) {
		for _, n := range q.expr.names() {
			shown[bySeries[n].name] = true
		}
	}
	for _, f := range families {
		if !shown[f.name] {
			t.Errorf("%s: no panel shows %s (%s); add one, or a query to a panel where it belongs", dashboardFile, f.name, f.kind)
		}
	}
}

func TestShareGroupLagIsAggregatedWithMax(t *testing.T) {
	// Every instance reports the broker's lag for every partition: a sum
	// over instances would multiply it by their number.
	for _, q := range append(dashboardQueries(t), ruleQueries(t)...) {
		for _, s := range q.expr.selectors {
			if s.name == "sharerelay_share_group_lag" && s.aggregation != "max" && !strings.HasPrefix(q.where, dashboardFile+": variable") {
				t.Errorf("%s: sharerelay_share_group_lag is aggregated with %q; take the max over instances first", q.where, s.aggregation)
			}
		}
	}
}

func TestDashboardIsImportable(t *testing.T) {
	d := readDashboard(t)
	if d.ID != nil {
		t.Errorf("id = %d, want null: Grafana assigns it on import", *d.ID)
	}
	if d.UID == "" || d.Title == "" || d.SchemaVersion == 0 {
		t.Errorf("uid %q, title %q, schemaVersion %d: all three are needed", d.UID, d.Title, d.SchemaVersion)
	}
	dsVar := ""
	for _, v := range d.Templating.List {
		if v.Type == "datasource" && variableQuery(t, v.Query) == "prometheus" {
			dsVar = v.Name
		}
	}
	if dsVar == "" {
		t.Fatal("no datasource variable of type prometheus: the dashboard would be tied to one Grafana's data source")
	}
	want := dsRef{Type: "prometheus", UID: "${" + dsVar + "}"}
	for _, v := range d.Templating.List {
		if v.Type == "query" && (v.Datasource == nil || *v.Datasource != want) {
			t.Errorf("variable %s: datasource %v, want %v", v.Name, v.Datasource, want)
		}
	}
	ids := map[int]string{}
	type cell struct{ x, y int }
	used := map[cell]string{}
	for _, p := range allPanels(d.Panels) {
		if other, ok := ids[p.ID]; ok || p.ID == 0 {
			t.Errorf("panel %q: id %d is missing or also %q's", p.Title, p.ID, other)
		}
		ids[p.ID] = p.Title
		if p.Title == "" {
			t.Errorf("panel %d has no title", p.ID)
		}
		g := p.GridPos
		if g.W < 1 || g.H < 1 || g.X < 0 || g.X+g.W > 24 {
			t.Errorf("panel %q: gridPos %+v is outside the 24-column grid", p.Title, g)
		}
		for x := g.X; x < g.X+g.W; x++ {
			for y := g.Y; y < g.Y+g.H; y++ {
				if other, ok := used[cell{x, y}]; ok {
					t.Errorf("panel %q overlaps panel %q at column %d, row %d", p.Title, other, x, y)
				}
				used[cell{x, y}] = p.Title
			}
		}
		if p.Type == "row" {
			continue
		}
		if p.Datasource == nil || *p.Datasource != want {
			t.Errorf("panel %q: datasource %v, want %v", p.Title, p.Datasource, want)
		}
		if len(p.Targets) == 0 {
			t.Errorf("panel %q has no query", p.Title)
		}
		refs := map[string]bool{}
		for _, tg := range p.Targets {
			if tg.Expr == "" || tg.RefID == "" || refs[tg.RefID] {
				t.Errorf("panel %q: query %q needs an expression and a refId of its own", p.Title, tg.RefID)
			}
			refs[tg.RefID] = true
			if tg.Datasource != nil && *tg.Datasource != want {
				t.Errorf("panel %q, query %s: datasource %v, want %v", p.Title, tg.RefID, tg.Datasource, want)
			}
		}
	}
}

// requiredAlerts are the conditions the on-call must hear about; a rule
// renamed or dropped fails here rather than going quiet.
var requiredAlerts = []string{
	"SharerelayShareGroupLagRising",
	"SharerelayWorkerPaused",
	"SharerelayInstanceNotReady",
	"SharerelayPipelineNotReady",
	"SharerelayPipelineDown",
	"SharerelayInstanceDown",
	"SharerelayDeadLetterRateHigh",
	"SharerelayInvariantViolation",
	"SharerelayTransactionsAborting",
	"SharerelayLockBudgetNearlySpent",
	"SharerelayReleasedOnLastDelivery",
	"SharerelayUnsettledClaims",
	"SharerelayAmbiguousCommitUnresolved",
	"SharerelayAuditLost",
	"SharerelayAuditDuplicated",
	"SharerelayAuditLagGrowing",
}

var (
	promDuration = regexp.MustCompile(`^([0-9]+(ms|s|m|h|d|w|y))+$`)
	alertName    = regexp.MustCompile(`^[A-Z][A-Za-z0-9]*$`)
	severities   = set("critical", "warning", "info")
)

// Prometheus's template functions, as stubs: parsing fails on any other.
var templateFuncs = template.FuncMap{
	"humanize": fmt.Sprint, "humanize1024": fmt.Sprint, "humanizeDuration": fmt.Sprint,
	"humanizePercentage": fmt.Sprint, "humanizeTimestamp": fmt.Sprint,
	"toUpper": strings.ToUpper, "toLower": strings.ToLower, "title": fmt.Sprint,
	"first": fmt.Sprint, "label": fmt.Sprint, "value": fmt.Sprint, "query": fmt.Sprint,
	"match": fmt.Sprint, "reReplaceAll": fmt.Sprint, "stripPort": fmt.Sprint,
	"stripDomain": fmt.Sprint, "safeHtml": fmt.Sprint, "externalURL": fmt.Sprint,
	"pathPrefix": fmt.Sprint, "args": fmt.Sprint, "sortByLabel": fmt.Sprint,
}

// templateHeader is what Prometheus defines before an annotation.
const templateHeader = `{{$labels := .Labels}}{{$externalLabels := .ExternalLabels}}{{$externalURL := .ExternalURL}}{{$value := .Value}}`

func TestAlertRulesAreWellFormed(t *testing.T) {
	f := readRules(t)
	if len(f.Groups) == 0 {
		t.Fatalf("%s: no groups", alertsFile)
	}
	groups := map[string]bool{}
	alerts := map[string]bool{}
	for _, g := range f.Groups {
		if g.Name == "" || groups[g.Name] {
			t.Errorf("group %q: a group needs a name of its own", g.Name)
		}
		groups[g.Name] = true
		if len(g.Rules) == 0 {
			t.Errorf("group %s has no rules", g.Name)
		}
		for _, r := range g.Rules {
			where := fmt.Sprintf("%s: alert %q", alertsFile, r.Alert)
			if r.Record != "" || !alertName.MatchString(r.Alert) || alerts[r.Alert] {
				t.Errorf("%s: every rule here is an alert with a CamelCase name of its own", where)
			}
			alerts[r.Alert] = true
			if strings.TrimSpace(r.Expr) == "" {
				t.Errorf("%s: no expr", where)
			}
			for _, d := range []string{r.For, r.KeepFiringFor} {
				if d != "" && !promDuration.MatchString(d) {
					t.Errorf("%s: %q is not a Prometheus duration", where, d)
				}
			}
			if !severities[r.Labels["severity"]] {
				t.Errorf("%s: labels.severity = %q, want critical, warning or info", where, r.Labels["severity"])
			}
			if strings.TrimSpace(r.Annotations["summary"]) == "" || strings.TrimSpace(r.Annotations["description"]) == "" {
				t.Errorf("%s: annotations summary and description are both needed", where)
			}
			e, err := parsePromQL(r.Expr)
			if err != nil {
				continue // reported by the metric test
			}
			// The labels an alert carries when its expression aggregates.
			data := map[string]any{"Labels": map[string]string{}, "ExternalLabels": map[string]string{}, "ExternalURL": "", "Value": 1.5}
			for _, l := range e.byLabels {
				data["Labels"].(map[string]string)[l] = "<" + l + ">"
			}
			for k, v := range r.Labels {
				data["Labels"].(map[string]string)[k] = v
			}
			for _, k := range slices.Sorted(maps.Keys(r.Annotations)) {
				tmpl, err := template.New(k).Funcs(templateFuncs).Option("missingkey=error").Parse(templateHeader + r.Annotations[k])
				if err != nil {
					t.Errorf("%s: annotation %s: %v", where, k, err)
					continue
				}
				if len(e.byLabels) == 0 {
					continue // which labels the alert carries is not known here
				}
				if err := tmpl.Execute(io.Discard, data); err != nil {
					t.Errorf("%s: annotation %s uses a label the expression aggregates away (it keeps %s): %v", where, k, strings.Join(e.byLabels, ", "), err)
				}
			}
		}
	}
	for _, a := range requiredAlerts {
		if !alerts[a] {
			t.Errorf("%s: alert %s is missing", alertsFile, a)
		}
	}
}
