package chaos

import (
	"encoding/json"
	"fmt"
	"os"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/sharerelay/sharerelay/audit"
)

// result is one scenario's line in the report. Fault counts are what the
// harness injected; the relay counters (redeliveries, transactions, ...)
// are sums over every relay process of the largest value scraped from its
// /metrics, so they are lower bounds: what a process counted in its last
// half second before a SIGKILL is lost.
type result struct {
	Scenario   string `json:"scenario"`
	Seed       uint64 `json:"seed"`
	Delivery   string `json:"delivery"`
	Records    int    `json:"records"`
	Relays     int    `json:"relays"`
	Workers    int    `json:"workers_per_relay"`
	Partitions int    `json:"partitions"`

	Kills          int            `json:"sigkills"`
	FailpointKills int            `json:"failpoint_kills"`
	Terms          int            `json:"sigterms"`
	UncleanStops   int            `json:"unclean_stops"`
	Pauses         int            `json:"sigstops"`
	Toxics         map[string]int `json:"network_faults"`
	BrokerKills    int            `json:"broker_kill9"`
	BrokerStops    int            `json:"broker_clean_restarts"`
	// Nodes is the number of broker nodes (1, or 3 for the cluster).
	// On the cluster, NodeFaults counts the node faults by kind and
	// NodeRoles by the role of the victim (nodes_test.go), and
	// LeaderChanges the changes of leader of the pipeline's partitions.
	Nodes int `json:"nodes"`
	// Clusters is 2 in the cross-cluster scenarios (needCross), 1
	// otherwise. With 2, Toxics, BrokerKills and BrokerStops count the
	// faults toward the sink cluster and the Source* fields those toward
	// the source cluster.
	Clusters          int            `json:"clusters"`
	SourceToxics      map[string]int `json:"source_network_faults,omitempty"`
	SourceBrokerKills int            `json:"source_broker_kill9,omitempty"`
	SourceBrokerStops int            `json:"source_broker_clean_restarts,omitempty"`

	// Registry is set when the scenario runs a schema registry of its
	// own (opts.Avro); RegistryKills counts its kill -9s, RecordsHeld
	// the records the relays held while it could not answer
	// (sharerelay_records_held_total) and RegistryRequests what they
	// asked it (sharerelay_schema_registry_requests_total).
	Registry         bool `json:"registry,omitempty"`
	RegistryKills    int  `json:"registry_kill9,omitempty"`
	RecordsHeld      int  `json:"records_held,omitempty"`
	RegistryRequests int  `json:"registry_requests,omitempty"`

	NodeFaults    map[string]int `json:"node_faults,omitempty"`
	NodeRoles     map[string]int `json:"node_fault_roles,omitempty"`
	LeaderChanges int            `json:"leader_changes"`
	// ShareStalls counts broker restarts the harness made to reload a
	// share partition that stopped delivering records (see doc.go).
	ShareStalls int `json:"share_partition_stalls"`
	// HangingTxns counts transactions whose markers the single-node
	// broker dropped after a crash, completed by the harness (doc.go).
	HangingTxns int `json:"hanging_txns_completed"`
	// OrphanedClaims counts claims whose ledger marker the broker lost
	// (audit.ReadLedger); Settled* how resolutions settled them;
	// Unsettled those left blocked.
	OrphanedClaims   int `json:"orphaned_claims"`
	SettledCommitted int `json:"settled_committed"`
	SettledAborted   int `json:"settled_aborted"`
	UnsettledClaims  int `json:"unsettled_claims"`
	RelayExits       int `json:"relay_exits_on_their_own"`
	Incarnations     int `json:"relay_processes"`

	Polled       int `json:"records_polled"`
	Redeliveries int `json:"redeliveries"`
	Committed    int `json:"txn_committed"`
	Aborted      int `json:"txn_aborted"`
	Unknown      int `json:"txn_unknown"`
	// Ambiguous counts EndTxn calls whose answer was lost (from the
	// relay logs), AmbiguousCommitted those the ledger showed committed.
	Ambiguous          int `json:"ambiguous_commits"`
	AmbiguousCommitted int `json:"ambiguous_resolved_committed"`
	AckErrors          int `json:"ack_errors"`
	ClaimConflicts     int `json:"claim_conflicts"`
	AlreadyCommitted   int `json:"already_committed"`
	DeadLettersMetric  int `json:"dead_letters_metric"`
	InvariantBreaks    int `json:"invariant_violations"`
	ProducerResets     int `json:"producer_resets"`
	// HeldHanging counts the relays' checks that found a transaction of
	// their own producer id left open and held their records
	// (sharerelay_hanging_transactions_total).
	HeldHanging int `json:"held_behind_own_hanging_txn"`
	// LostMarkers counts the relays' transactions that continued a span
	// a lost marker left open and ended as the earlier transaction had
	// to (sharerelay_lost_markers_total).
	LostMarkers int `json:"lost_marker_repairs"`

	ReaderRecords    int `json:"reader_records"`
	ReaderDuplicates int `json:"reader_duplicates"`
	// Audit is the live auditor's final counters, when the scenario ran
	// it (opts.Audit).
	Audit *auditResult `json:"live_audit,omitempty"`

	Output         int    `json:"verified_output"`
	DeadLettered   int    `json:"verified_dead_letters"`
	Lost           int    `json:"lost"`
	Duplicated     int    `json:"duplicated"`
	Both           int    `json:"both"`
	Unexpected     int    `json:"unexpected"`
	AbortedRecords int    `json:"aborted_records"`
	Verdict        string `json:"verdict"`
	Elapsed        string `json:"elapsed"`

	elapsed time.Duration
}

func (r *result) fromReport(rep *audit.Report) {
	r.Output, r.DeadLettered = rep.Total.Output, rep.Total.DeadLettered
	r.Lost, r.Duplicated, r.Both, r.Unexpected = rep.Total.Lost, rep.Total.Duplicated, rep.Total.Both, rep.Total.Unexpected
	r.AbortedRecords = rep.AbortedRecords
	if l := rep.Ledger; l != nil {
		r.OrphanedClaims, r.SettledCommitted, r.SettledAborted, r.UnsettledClaims = l.Orphaned, l.SettledCommitted, l.SettledAborted, len(l.Unsettled)
	}
	r.Verdict = "EXACT"
	if !rep.Exact {
		r.Verdict = fmt.Sprintf("NOT EXACT (lost %d, duplicated %d, both %d, unexpected %d, lag %d)",
			rep.Total.Lost, rep.Total.Duplicated, rep.Total.Both, rep.Total.Unexpected, rep.Total.Lag)
	}
}

// networkFaults returns the counts of network faults toward the source
// cluster (source) or the sink.
func (r *result) networkFaults(source bool) map[string]int {
	if source {
		return r.SourceToxics
	}
	return r.Toxics
}

// brokerCount returns the counter of broker kills (hard) or clean
// restarts of the source cluster's broker (source) or the sink's.
func (r *result) brokerCount(source, hard bool) *int {
	switch {
	case source && hard:
		return &r.SourceBrokerKills
	case source:
		return &r.SourceBrokerStops
	case hard:
		return &r.BrokerKills
	}
	return &r.BrokerStops
}

// toxicsString is the network faults: per cluster when there are two.
func (r *result) toxicsString() string {
	if r.Clusters == 2 {
		return fmt.Sprintf("source: %s; sink: %s", countsString(r.SourceToxics), countsString(r.Toxics))
	}
	return countsString(r.Toxics)
}

// perCluster formats a count of each cluster's broker ("source: 1; sink:
// 2"), or the one count.
func (r *result) perCluster(source, sink int) string {
	if r.Clusters == 2 {
		return fmt.Sprintf("[source: %d; sink: %d]", source, sink)
	}
	return fmt.Sprint(sink)
}

// clustersString is the line's clusters=2 of a cross-cluster scenario;
// nothing on one cluster.
func (r *result) clustersString() string {
	if r.Clusters == 2 {
		return " clusters=2"
	}
	return ""
}

// countsString formats counts by name, sorted: "a 1, b 2", or "0".
func countsString(m map[string]int) string {
	if len(m) == 0 {
		return "0"
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var parts []string
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%s %d", k, m[k]))
	}
	return strings.Join(parts, ", ")
}

// nodesString is the cluster's part of the line: node faults by kind and
// by role, and leader changes; nothing on the single node.
func (r *result) nodesString() string {
	if r.Nodes <= 1 {
		return ""
	}
	return fmt.Sprintf(" nodes=%d node-faults=[%s] by-role=[%s] leader-changes=%d", r.Nodes, countsString(r.NodeFaults), countsString(r.NodeRoles), r.LeaderChanges)
}

// registryString is the schema registry's part of the line: its kills,
// the records held and the requests; nothing without a registry.
func (r *result) registryString() string {
	if !r.Registry {
		return ""
	}
	return fmt.Sprintf(" registry=[kill9 %d, held %d, requests %d]", r.RegistryKills, r.RecordsHeld, r.RegistryRequests)
}

// line is the one-line summary logged per scenario.
func (r *result) line() string {
	return fmt.Sprintf("CHAOS %s seed=%d %s records=%d relays=%dx%d%s | kills=%d failpoint-kills=%d sigterms=%d sigstops=%d network=[%s] broker-kill9=%s broker-restarts=%s%s%s (share-stalls %d) hanging-txns=%d (held %d, continued %d) orphaned-claims=%d (settled %d committed, %d aborted; unsettled %d) relay-exits=%d processes=%d | polled=%d redeliveries=%d txn committed=%d aborted=%d unknown=%d ambiguous=%d(committed %d) producer-resets=%d ack-errors=%d claim-conflicts=%d already-committed=%d | output=%d dead-letters=%d aborted-records=%d reader=%d (dups %d)%s | %s | %s",
		r.Scenario, r.Seed, r.Delivery, r.Records, r.Relays, r.Workers, r.clustersString(),
		r.Kills, r.FailpointKills, r.Terms, r.Pauses, r.toxicsString(), r.perCluster(r.SourceBrokerKills, r.BrokerKills), r.perCluster(r.SourceBrokerStops, r.BrokerStops), r.nodesString(), r.registryString(), r.ShareStalls, r.HangingTxns, r.HeldHanging, r.LostMarkers,
		r.OrphanedClaims, r.SettledCommitted, r.SettledAborted, r.UnsettledClaims, r.RelayExits, r.Incarnations,
		r.Polled, r.Redeliveries, r.Committed, r.Aborted, r.Unknown, r.Ambiguous, r.AmbiguousCommitted, r.ProducerResets, r.AckErrors, r.ClaimConflicts, r.AlreadyCommitted,
		r.Output, r.DeadLettered, r.AbortedRecords, r.ReaderRecords, r.ReaderDuplicates, r.Audit, r.Elapsed, r.Verdict)
}

var (
	resultsMu sync.Mutex
	results   []*result
)

// record keeps a scenario's result and rewrites the CHAOS_REPORT file.
func record(r *result) {
	resultsMu.Lock()
	results = append(results, r)
	resultsMu.Unlock()
	writeReport()
}

// writeReport writes every result so far to $CHAOS_REPORT: JSON when the
// name ends in .json, a markdown table otherwise.
func writeReport() {
	path := os.Getenv("CHAOS_REPORT")
	if path == "" {
		return
	}
	resultsMu.Lock()
	defer resultsMu.Unlock()
	var data []byte
	if strings.HasSuffix(path, ".json") {
		data, _ = json.MarshalIndent(results, "", "  ")
	} else {
		data = []byte(markdown(results))
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		fmt.Fprintf(os.Stderr, "chaos: writing %s: %v\n", path, err)
	}
}

func markdown(rs []*result) string {
	var b strings.Builder
	b.WriteString("| scenario | seed | delivery | records | relays×workers | SIGKILL | failpoint kills | SIGTERM | SIGSTOP | network faults | broker kill -9 / clean | node faults (by role), leader changes | hanging txns completed (held) | orphaned claims (settled C/A, unsettled) | relay exits | redeliveries | txn aborted | txn unknown | ambiguous commits | producer resets | ack errors | claim conflicts | aborted records | dead letters | live audit | time | verifier |\n")
	b.WriteString("|---|---:|---|---:|---|---:|---:|---:|---:|---|---|---|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|---:|---|\n")
	var total time.Duration
	for _, r := range rs {
		total += r.elapsed
		nodes := "–"
		if r.Nodes > 1 {
			nodes = fmt.Sprintf("%s (%s), %d", countsString(r.NodeFaults), countsString(r.NodeRoles), r.LeaderChanges)
		}
		live := "–"
		if a := r.Audit; a != nil {
			live = strings.TrimSuffix(strings.TrimPrefix(a.String(), " audit=["), "]")
		}
		fmt.Fprintf(&b, "| %s | %d | %s | %d | %d×%d | %d | %d | %d | %d | %s | %s / %s | %s | %d (%d) | %d (%d/%d, %d) | %d | %d | %d | %d | %d | %d | %d | %d | %d | %d | %s | %s | %s |\n",
			r.Scenario, r.Seed, r.Delivery, r.Records, r.Relays, r.Workers, r.Kills, r.FailpointKills, r.Terms, r.Pauses,
			r.toxicsString(), r.perCluster(r.SourceBrokerKills, r.BrokerKills), r.perCluster(r.SourceBrokerStops, r.BrokerStops), nodes, r.HangingTxns, r.HeldHanging, r.OrphanedClaims, r.SettledCommitted, r.SettledAborted, r.UnsettledClaims, r.RelayExits, r.Redeliveries, r.Aborted, r.Unknown, r.Ambiguous, r.ProducerResets, r.AckErrors,
			r.ClaimConflicts, r.AbortedRecords, r.DeadLettered, live, r.Elapsed, r.Verdict)
	}
	fmt.Fprintf(&b, "\nTotal scenario time: %s\n", total.Round(time.Second))
	return b.String()
}

// count updates the scenario's result under its lock.
func (s *scenario) count(f func(*result)) {
	s.resMu.Lock()
	defer s.resMu.Unlock()
	f(s.res)
}
