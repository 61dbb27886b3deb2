package integration

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sharerelay/sharerelay/config"
	"github.com/sharerelay/sharerelay/integration/harness"
	"github.com/sharerelay/sharerelay/internal/failpoint"
)

// With batch.acquire_mode batch_optimized a share fetch
// acquires whole source batches: here one batch of 1,000 records against
// a max_records of 40. The worker takes all of the fetch into its batch and
// renews its locks, so a batch that takes longer than the lock (10 s of
// transforms against a 6 s lock) costs no delivery, and it is written in
// a few transactions instead of 25. The poll-part failpoint takes
// max_records a poll instead, as the relay once did with whole batches:
// the rest of the fetch waits in the client's buffer, where no renewal
// reaches it, its locks expire and its records are delivered again (still
// exactly once). record_limit acquires 40 at a time.
func TestRealBrokerAFetchOfWholeSourceBatchesIsHeldAndRenewedByTheWorker(t *testing.T) {
	seeds := seedsFor(t)
	const n, most = 1000, 40
	cases := []struct {
		name        string
		mode        string
		env         []string
		redelivered bool // records must have come back after a lock expired
		minTxns     int
		maxTxns     int
	}{
		{name: "batch_optimized", mode: config.AcquireBatchOptimized, maxTxns: 5},
		{name: "batch_optimized, max_records a poll (poll-part)", mode: config.AcquireBatchOptimized,
			env: []string{fp(failpoint.PollPart + "=error")}, redelivered: true, maxTxns: n},
		{name: "record_limit", mode: config.AcquireRecordLimit, minTxns: n / most, maxTxns: n},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			addr := metricsAddr(t)
			// 2 consumers: an exactly-once batch takes one poll (half
			// the consumers'), so record_limit makes a transaction
			// of each 40.
			p := newPipe(t, seeds, harness.PipelineOptions{Workers: 1, Consumers: 2, Partitions: 1, MaxRecords: most, AcquireMode: c.mode,
				RenewLocks: true, MetricsListen: addr, GroupConfigs: map[string]string{"share.record.lock.duration.ms": "6000"},
				Transforms: `[{type: delay, duration: 10ms}]`})
			// One source batch: every record produced within the linger,
			// far below the batch size.
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			if err := (harness.Orders{Topic: p.Source}).Seed(ctx, p.SourceSeeds, 1, n,
				kgo.ProducerLinger(2*time.Second), kgo.ProducerBatchMaxBytes(1<<20)); err != nil {
				t.Fatal(err)
			}
			startRelay(t, p, "r", c.env...)
			exactlyOnce(t, settled(t, p, n, 3*time.Minute), n, 0)
			redelivered := metric(t, addr, "sharerelay_redeliveries_total")
			txns := int(metricWhere(t, addr, "sharerelay_transactions_total", `outcome="committed"`))
			t.Logf("%s: %v records delivered again, %d transactions committed", c.name, redelivered, txns)
			if c.redelivered != (redelivered > 0) {
				t.Errorf("records delivered again: %v; want some: %v", redelivered, c.redelivered)
			}
			if txns < c.minTxns || txns > c.maxTxns {
				t.Errorf("%d transactions committed; want %d to %d", txns, c.minTxns, c.maxTxns)
			}
		})
	}
}

// batch.acquire_mode auto acquires by record limit, and batch_optimized,
// which a file must name, takes whole batches: 3,000 records written in
// batches of 750, polls of 1,000, one worker with one share consumer and
// 4,000 record locks. Whole batches take two batches a poll, 1,500
// records: two transactions. record_limit takes 1,000 a poll: three
// transactions or more. Both relay exactly once, and the relay logs the
// mode and why. auto once chose whole batches here (the source's batches
// fit a poll and the locks covered the instance); it no longer does, since
// whole batches lose records to repeated crashes
// (docs/decisions/acquire-mode.md).
func TestRealBrokerAutoAcquiresByRecordLimitAndBatchOptimizedTakesWholeBatches(t *testing.T) {
	seeds := seedsFor(t)
	const n, most, batch = 3000, 1000, 750
	cases := []struct {
		mode, want, why  string
		minTxns, maxTxns int
	}{
		{mode: config.AcquireAuto, want: config.AcquireRecordLimit, why: "auto: record_limit; whole record batches can lose records", minTxns: n / most, maxTxns: n},
		{mode: config.AcquireBatchOptimized, want: config.AcquireBatchOptimized, why: "set by batch.acquire_mode", minTxns: 1, maxTxns: 2},
	}
	for _, c := range cases {
		t.Run(c.mode, func(t *testing.T) {
			addr := metricsAddr(t)
			p := newPipe(t, seeds, harness.PipelineOptions{Workers: 1, Consumers: 1, Partitions: 1, MaxRecords: most,
				AcquireMode: c.mode, MetricsListen: addr, GroupConfigs: map[string]string{"share.partition.max.record.locks": "4000"}})
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			// One source batch a Seed: every record produced within
			// the linger, far below the batch size.
			for from := 1; from <= n; from += batch {
				if err := (harness.Orders{Topic: p.Source}).Seed(ctx, p.SourceSeeds, from, min(from+batch-1, n),
					kgo.ProducerLinger(2*time.Second), kgo.ProducerBatchMaxBytes(1<<20)); err != nil {
					t.Fatal(err)
				}
			}
			r := startRelay(t, p, "r")
			exactlyOnce(t, settled(t, p, n, 3*time.Minute), n, 0)
			txns := int(metricWhere(t, addr, "sharerelay_transactions_total", `outcome="committed"`))
			log := r.LogTail(1 << 20)
			t.Logf("acquire_mode %s: %d transactions committed", c.mode, txns)
			if !strings.Contains(log, "acquire mode "+c.want) || !strings.Contains(log, c.why) {
				t.Errorf("the relay's log does not say it acquires by %s because %q:\n%s", c.want, c.why, log)
			}
			if txns < c.minTxns || txns > c.maxTxns {
				t.Errorf("%d transactions committed; want %d to %d (%s)", txns, c.minTxns, c.maxTxns, c.want)
			}
		})
	}
}
