package integration

import (
	"bytes"
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/sharerelay/sharerelay/integration/harness"
	"github.com/sharerelay/sharerelay/integration/kafkatest"
)

// compatRecords is the scenario's stream: at 5 ms a record and 2 workers,
// some ten seconds of work, so the kill at a quarter of it lands while
// most records are still to come.
const compatRecords = 4000

// brokerReadyLine is what the broker logs each time it comes up
// (kafkatest waits for it): counted to learn how often the scenario
// restarted the broker.
const brokerReadyLine = "Transitioning from RECOVERY to RUNNING"

// The compatibility scenario, run by `make compat` on each supported Kafka
// release line (SHARERELAY_KAFKA_VERSION); the normal suite leaves it to
// make compat, as its broker kill on the pom's release is what the
// broker-kill tests of CI already do: relay check passes on the broker (its Kafka version line by the
// rule relay run refuses to start on); an exactly-once relay streams
// 4,000 records; the broker is killed -9 a quarter of the way through and
// restarted on its data while the relay keeps running; then every record
// must be in the output exactly once, by the harness's reading and by
// relay verify. With COMPAT_REPORT set it appends its row for the table
// (harness.CompatRow), failed or not.
func TestCompatExactlyOnceAcrossABrokerKill(t *testing.T) {
	if os.Getenv(harness.EnvCompatReport) == "" {
		t.Skip("make compat runs it, on every supported Kafka release")
	}
	seeds := seedsFor(t)
	b := kafkatest.LocalBroker(t)
	version, err := kafkatest.KafkaVersion()
	if err != nil {
		t.Fatal(err)
	}
	row := harness.CompatRow{Kafka: version, Records: compatRecords, Lost: -1, Duplicated: -1, Verdict: harness.VerdictFail}
	start := time.Now()
	logFrom := fileSize(b.LogPath())
	addr := metricsAddr(t)
	if path := os.Getenv(harness.EnvCompatReport); path != "" {
		t.Cleanup(func() {
			row.Seconds = time.Since(start).Seconds()
			if log, err := os.ReadFile(b.LogPath()); err == nil && int64(len(log)) >= logFrom {
				row.ShareStalls = max(0, bytes.Count(log[logFrom:], []byte(brokerReadyLine))-row.BrokerKills)
			}
			if !t.Failed() {
				row.Verdict = harness.VerdictExact
			}
			if err := harness.AppendCompatRow(path, row); err != nil {
				t.Error(err)
			}
		})
	}
	t.Logf("Kafka %s", version)

	p := newPipe(t, seeds, harness.PipelineOptions{Workers: 2, MaxRecords: 50, MetricsListen: addr, RenewLocks: true,
		Transforms: `[{type: delay, duration: 5ms}]`})
	code, out := relayCheck(t, p)
	if code != 0 || !strings.Contains(out, "ok: kafka version: ") || strings.Contains(out, "FAIL") {
		t.Fatalf("relay check on Kafka %s: exit %d\n%s", version, code, out)
	}
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(l, "ok: kafka version: ") || strings.HasPrefix(l, "ok: transaction.version: ") {
			t.Log(l)
		}
	}

	seedOrders(t, p, 1, compatRecords)
	startRelay(t, p, "r")
	o := waitFor(t, p, 2*time.Minute, "a quarter of the stream", func(o outcome) bool { return o.Jobs.Records >= compatRecords/4 })
	if len(o.Jobs.BySource) >= compatRecords {
		t.Fatalf("the stream ended before the kill (%v): the scenario shows nothing", o)
	}
	if err := b.Kill(); err != nil {
		t.Fatal(err)
	}
	row.BrokerKills++
	down := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := b.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Logf("broker killed -9 with %d of %d records relayed, back after %s", len(o.Jobs.BySource), compatRecords, time.Since(down).Round(time.Millisecond))

	repairHanging(t, p)
	o = settledAfterRestart(t, p, b, compatRecords, 4*time.Minute)
	// Every delivery beyond a record's first, as the relay received them:
	// a broker restarted after kill -9 hands back what was acquired with
	// the delivery count it last wrote, so redeliveries_total (a count
	// above 1) can miss them.
	polled := metric(t, addr, "sharerelay_records_polled_total")
	row.Redeliveries = int(polled) - compatRecords
	t.Logf("relay: %v records polled (%d again), %v with a delivery count above 1; transactions committed %v, aborted %v, unknown %v",
		polled, row.Redeliveries, metric(t, addr, "sharerelay_redeliveries_total"),
		metricWhere(t, addr, "sharerelay_transactions_total", `outcome="committed"`),
		metricWhere(t, addr, "sharerelay_transactions_total", `outcome="aborted"`),
		metricWhere(t, addr, "sharerelay_transactions_total", `outcome="unknown"`))
	code, rep := relayVerify(t, p)
	row.Lost, row.Duplicated = rep.Total.Lost, rep.Total.Duplicated
	t.Logf("relay verify: exit %d, exact %v, lost %d, duplicated %d", code, rep.Exact, rep.Total.Lost, rep.Total.Duplicated)
	if code != 0 || !rep.Exact {
		t.Fatalf("relay verify on Kafka %s: exit %d, %+v", version, code, rep.Total)
	}
	exactlyOnce(t, o, compatRecords, 0)
}

// fileSize is the size of the file at path, 0 when it cannot be read.
func fileSize(path string) int64 {
	fi, err := os.Stat(path)
	if err != nil {
		return 0
	}
	return fi.Size()
}
