package harness

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
)

// EnvCompatReport names the file TestCompatExactlyOnceAcrossABrokerKill
// appends its CompatRow to, one JSON object a line; `make compat`
// (integration/cmd/compat) sets it and prints the rows as CompatTable.
const EnvCompatReport = "COMPAT_REPORT"

// Verdicts of a CompatRow.
const (
	// VerdictExact: relay verify found every record once, none lost.
	VerdictExact = "EXACT"
	// VerdictFail: the scenario failed; its log says why.
	VerdictFail = "FAIL"
)

// CompatRow is one Kafka release's run of the compatibility scenario: a
// stream of exactly-once records with the broker killed -9 mid-stream and
// restarted, judged by relay verify.
type CompatRow struct {
	// Kafka is the release the broker ran.
	Kafka   string `json:"kafka"`
	Records int    `json:"records"`
	// Lost and Duplicated are relay verify's totals; -1 when the run
	// ended before verify.
	Lost       int `json:"lost"`
	Duplicated int `json:"duplicated"`
	// BrokerKills counts kill -9s of the broker, ShareStalls the extra
	// restarts a stalled share partition took (integration's
	// settledAfterRestart).
	BrokerKills int `json:"broker_kills"`
	ShareStalls int `json:"share_stalls"`
	// Redeliveries are the deliveries the relay received beyond each
	// record's first (its records_polled_total less Records).
	Redeliveries int    `json:"redeliveries"`
	Verdict      string `json:"verdict"`
	// Seconds is the scenario's duration, broker start excluded.
	Seconds float64 `json:"seconds"`
}

// AppendCompatRow appends r to the file at path as one JSON line.
func AppendCompatRow(path string, r CompatRow) error {
	b, err := json.Marshal(r)
	if err != nil {
		return fmt.Errorf("compat report: %w", err)
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return fmt.Errorf("compat report: %w", err)
	}
	if _, err := f.Write(append(b, '\n')); err != nil {
		f.Close()
		return fmt.Errorf("compat report %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("compat report %s: %w", path, err)
	}
	return nil
}

// ReadCompatRows reads the rows AppendCompatRow wrote to path; a missing
// file has none.
func ReadCompatRows(path string) ([]CompatRow, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("compat report: %w", err)
	}
	var rows []CompatRow
	sc := bufio.NewScanner(bytes.NewReader(b))
	for line := 1; sc.Scan(); line++ {
		if len(bytes.TrimSpace(sc.Bytes())) == 0 {
			continue
		}
		var r CompatRow
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			return nil, fmt.Errorf("compat report %s:%d: %w", path, line, err)
		}
		rows = append(rows, r)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("compat report %s: %w", path, err)
	}
	return rows, nil
}

// CompatTable renders rows as a markdown table: version, records, lost,
// duplicated, broker kills, redeliveries, verdict, seconds. A count the
// run did not reach is "–"; share-partition stalls, when there were any,
// follow the kills in parentheses.
func CompatTable(rows []CompatRow) string {
	var b strings.Builder
	b.WriteString("| Kafka | records | lost | duplicated | broker kills | redeliveries | verdict | seconds |\n")
	b.WriteString("|---|---:|---:|---:|---:|---:|---|---:|\n")
	count := func(n int) string {
		if n < 0 {
			return "–"
		}
		return fmt.Sprint(n)
	}
	for _, r := range rows {
		kills := fmt.Sprint(r.BrokerKills)
		if r.ShareStalls > 0 {
			kills += fmt.Sprintf(" (+%d restart for a stalled share partition)", r.ShareStalls)
		}
		fmt.Fprintf(&b, "| %s | %d | %s | %s | %s | %d | %s | %.0f |\n",
			r.Kafka, r.Records, count(r.Lost), count(r.Duplicated), kills, r.Redeliveries, r.Verdict, r.Seconds)
	}
	return b.String()
}
