package chaos

import (
	"encoding/binary"
	"reflect"
	"strings"
	"testing"

	"github.com/sharerelay/sharerelay/config"
)

// Unit tests of the harness's own parsing (no broker).

func TestEndTxnFrameParser(t *testing.T) {
	frame := func(key int16, body int) []byte {
		b := make([]byte, 6+body)
		binary.BigEndian.PutUint32(b, uint32(2+body))
		binary.BigEndian.PutUint16(b[4:], uint16(key))
		return b
	}
	var all []byte
	all = append(all, frame(0, 100)...) // Produce
	all = append(all, frame(26, 30)...) // EndTxn, ends at 136+6=142
	all = append(all, frame(3, 10)...)  // Metadata
	all = append(all, frame(26, 0)...)  // EndTxn with an empty body
	want := []int{142, 142 + 16 + 6}
	for _, chunk := range []int{1, 2, 5, 7, 64, len(all)} {
		var p frameParser
		var got []int
		for off := 0; off < len(all); off += chunk {
			end := min(off+chunk, len(all))
			for _, e := range p.feed(all[off:end]) {
				got = append(got, off+e)
			}
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("chunks of %d: EndTxn ends at %v, want %v", chunk, got, want)
		}
	}
}

func TestParseMetrics(t *testing.T) {
	in := `# HELP sharerelay_transactions_total Transactions ended, by outcome.
# TYPE sharerelay_transactions_total counter
sharerelay_transactions_total{outcome="aborted",pipeline="p",worker="0"} 2
sharerelay_transactions_total{outcome="aborted",pipeline="p",worker="1"} 3
sharerelay_transactions_total{outcome="committed",pipeline="p",worker="0"} 40
sharerelay_redeliveries_total{pipeline="p",worker="0"} 7
sharerelay_acks_total{pipeline="p",type="accept",worker="0"} 1e+06
go_goroutines 12
`
	got := parseMetrics(strings.NewReader(in))
	want := map[string]float64{
		"sharerelay_transactions_total/aborted":   5,
		"sharerelay_transactions_total/committed": 40,
		"sharerelay_redeliveries_total":           7,
		"sharerelay_acks_total/accept":            1e6,
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("parseMetrics = %v, want %v", got, want)
	}
}

// The report line names the node faults by kind and role and the leader
// changes on the cluster, and keeps the single node's line as it was.
func TestReportLineNodes(t *testing.T) {
	single := &result{Scenario: "Nemesis", Nodes: 1, Toxics: map[string]int{}}
	if l := single.line(); strings.Contains(l, "nodes=") || !strings.Contains(l, "broker-restarts=0 (share-stalls 0)") {
		t.Errorf("single-node line: %s", l)
	}
	cluster := &result{Scenario: "ClusterNemesis", Nodes: 3, Toxics: map[string]int{},
		NodeFaults: map[string]int{nodePause: 1, nodeKill: 2}, NodeRoles: map[string]int{roleController: 1, roleAny: 2}, LeaderChanges: 7}
	want := "broker-restarts=0 nodes=3 node-faults=[kill9 2, sigstop 1] by-role=[any 2, controller 1] leader-changes=7 (share-stalls 0)"
	if l := cluster.line(); !strings.Contains(l, want) {
		t.Errorf("cluster line: %s\nwant it to contain: %s", l, want)
	}
}

// The report line carries the live auditor's final counters when the
// scenario ran it, and nothing about it otherwise.
func TestReportLineLiveAudit(t *testing.T) {
	without := &result{Scenario: "Control", Nodes: 1, Toxics: map[string]int{}}
	if l := without.line(); strings.Contains(l, "audit=") || !strings.Contains(l, "reader=0 (dups 0) |") {
		t.Errorf("line without an auditor: %s", l)
	}
	with := &result{Scenario: "Nemesis", Nodes: 1, Toxics: map[string]int{},
		Audit: &auditResult{Judged: 100000, Lost: 0, Duplicated: 0, Lag: 0}}
	if l := with.line(); !strings.Contains(l, "reader=0 (dups 0) audit=[judged 100000 lost 0 dup 0 lag 0] |") {
		t.Errorf("line with an auditor: %s", l)
	}
	with.Audit.Exits, with.Audit.Duplicated = 2, 31
	if l := with.line(); !strings.Contains(l, "audit=[judged 100000 lost 0 dup 31 lag 0 exits 2]") {
		t.Errorf("line with an auditor that was restarted: %s", l)
	}
	md := markdown([]*result{without, with})
	if !strings.Contains(md, "| live audit |") || !strings.Contains(md, "| judged 100000 lost 0 dup 31 lag 0 exits 2 |") || !strings.Contains(md, "| – |") {
		t.Errorf("markdown:\n%s", md)
	}
}

// A cross-cluster scenario's line says clusters=2 and counts the network
// faults and broker bounces per cluster; a scenario on one cluster keeps
// its line as it was.
func TestReportLineClusters(t *testing.T) {
	one := &result{Scenario: "Nemesis", Nodes: 1, Clusters: 1, Toxics: map[string]int{toxReset: 2}, BrokerKills: 3, BrokerStops: 1}
	if l := one.line(); strings.Contains(l, "clusters=") || !strings.Contains(l, "network=[reset 2] broker-kill9=3 broker-restarts=1 ") {
		t.Errorf("one-cluster line: %s", l)
	}
	two := &result{Scenario: "CrossClusterCI", Nodes: 1, Clusters: 2, Relays: 3, Workers: 3,
		Toxics: map[string]int{toxEndTxnCut: 4, toxReset: 1}, SourceToxics: map[string]int{toxBlackhole: 2, toxIsolateCluster: 1},
		BrokerKills: 1, SourceBrokerKills: 2, SourceBrokerStops: 1}
	l := two.line()
	for _, want := range []string{
		"relays=3x3 clusters=2 |",
		"network=[source: blackhole 2, isolate-cluster 1; sink: endtxn-cut 4, reset 1]",
		"broker-kill9=[source: 2; sink: 1] broker-restarts=[source: 1; sink: 0] ",
	} {
		if !strings.Contains(l, want) {
			t.Errorf("two-cluster line: %s\nwant it to contain: %s", l, want)
		}
	}
}

// A scenario with a schema registry of its own says what became of it
// (kills, records held, requests); the others keep their line as it was.
func TestReportLineRegistry(t *testing.T) {
	without := &result{Scenario: "Nemesis", Nodes: 1, Toxics: map[string]int{}}
	if l := without.line(); strings.Contains(l, "registry=") {
		t.Errorf("line without a registry: %s", l)
	}
	with := &result{Scenario: "RegistryOutageCI", Nodes: 1, Toxics: map[string]int{}, Registry: true, RegistryKills: 1, RecordsHeld: 4321, RegistryRequests: 57}
	if l := with.line(); !strings.Contains(l, "broker-restarts=0 registry=[kill9 1, held 4321, requests 57] (share-stalls 0)") {
		t.Errorf("line with a registry: %s", l)
	}
}

// The pipeline file of a cross-cluster scenario loads as two clusters:
// the top-level brokers the sink, source.cluster the source, each from its
// own variable.
func TestWithSourceCluster(t *testing.T) {
	file := []byte(`name: p
brokers: ["${CHAOS_BROKERS}"]
delivery: exactly-once
source:
  topics: [p.orders]
  group: p.group
output:
  topic: p.jobs
dead_letter:
  topic: p.dlq
transforms: []
`)
	b, err := withSourceCluster(file, `"${CHAOS_SOURCE_BROKERS}"`)
	if err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"CHAOS_BROKERS": "127.0.0.1:1,127.0.0.1:2", "CHAOS_SOURCE_BROKERS": "127.0.0.1:3"}
	p, err := config.Parse("pipeline.yaml", b, func(k string) (string, bool) { v, ok := env[k]; return v, ok })
	if err != nil {
		t.Fatalf("%v\n%s", err, b)
	}
	if !p.CrossCluster() || !reflect.DeepEqual(p.SourceCluster().Brokers, []string{"127.0.0.1:3"}) ||
		!reflect.DeepEqual(p.SinkCluster().Brokers, []string{"127.0.0.1:1", "127.0.0.1:2"}) {
		t.Errorf("cross %v, source brokers %v, sink brokers %v; file:\n%s", p.CrossCluster(), p.SourceCluster().Brokers, p.SinkCluster().Brokers, b)
	}
	if _, err := withSourceCluster(b[:len("name: p\n")], "x"); err == nil {
		t.Error("a file without a source section took a source.cluster")
	}
}
