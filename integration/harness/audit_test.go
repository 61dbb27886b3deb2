package harness_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sharerelay/sharerelay/integration/harness"
)

const auditExposition = `# HELP sharerelay_audit_records_judged_total Source records judged.
# TYPE sharerelay_audit_records_judged_total counter
sharerelay_audit_records_judged_total{delivery="exactly-once",partition="0",pipeline="p",topic="p.orders"} 40
sharerelay_audit_records_judged_total{delivery="exactly-once",partition="1",pipeline="p",topic="p.orders"} 2
sharerelay_audit_lost_total{delivery="exactly-once",partition="1",pipeline="p",topic="p.orders"} 3
sharerelay_audit_duplicated_total{delivery="exactly-once",partition="0",pipeline="p",topic="p.orders"} 1
sharerelay_audit_dead_lettered_total{delivery="exactly-once",partition="0",pipeline="p",topic="p.orders"} 5
sharerelay_audit_lag_records{partition="0",topic="p.orders"} 7
sharerelay_audit_lag_records{partition="1",topic="p.orders"} 1
sharerelay_audit_lag_seconds 4.5
sharerelay_audit_ready 1
sharerelay_records_polled_total{worker="0"} 99
`

func TestParseAuditMetricsSumsEachCounterOverItsPartitions(t *testing.T) {
	c, err := harness.ParseAuditMetrics(strings.NewReader(auditExposition))
	if err != nil {
		t.Fatal(err)
	}
	want := harness.AuditCounters{Judged: 42, Lost: 3, Duplicated: 1, DeadLettered: 5, LagRecords: 8, Ready: true}
	if c != want {
		t.Fatalf("parsed %+v, want %+v", c, want)
	}
	if got := c.String(); got != "judged 42 lost 3 dup 1 incomplete 0 unexpected 0 dead-lettered 5 filtered 0 lag 8" {
		t.Errorf("String() = %q", got)
	}
}

func TestParseAuditMetricsRefusesAValueThatIsNoNumber(t *testing.T) {
	_, err := harness.ParseAuditMetrics(strings.NewReader("sharerelay_audit_lost_total{topic=\"a\"} many\n"))
	if err == nil || !strings.Contains(err.Error(), "sharerelay_audit_lost_total") {
		t.Fatalf("got %v, want an error quoting the line", err)
	}
}

func TestWaitAuditReturnsTheCountersThatMetTheCondition(t *testing.T) {
	var scrapes atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := scrapes.Add(1)
		fmt.Fprintf(w, "sharerelay_audit_records_judged_total{topic=\"t\",partition=\"0\"} %d\nsharerelay_audit_lag_records{topic=\"t\",partition=\"0\"} %d\n", 10*n, max(0, 3-n))
	}))
	defer srv.Close()
	addr := strings.TrimPrefix(srv.URL, "http://")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := harness.WaitAudit(ctx, addr, func(c harness.AuditCounters) bool { return c.LagRecords == 0 })
	if err != nil {
		t.Fatal(err)
	}
	if c.Judged != 30 || c.LagRecords != 0 {
		t.Fatalf("got %v, want the third scrape's: judged 30, lag 0", c)
	}

	short, cancel2 := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel2()
	c, err = harness.WaitAudit(short, addr, func(c harness.AuditCounters) bool { return c.Lost > 0 })
	if err == nil || !strings.Contains(err.Error(), "judged") || c.Judged == 0 {
		t.Fatalf("a condition never met: %v, %v; want an error with the last counters", c, err)
	}
}

func TestAuditCommandRunsTheAuditorOnThePipeline(t *testing.T) {
	c := harness.AuditCommand("/bin/relay", "/tmp/p.yaml", "127.0.0.1:9465")
	if got := strings.Join(c.Args, " "); got != "audit -c /tmp/p.yaml --listen 127.0.0.1:9465 --log-level info" || c.Path != "/bin/relay" {
		t.Fatalf("%s %s", c.Path, got)
	}
}
