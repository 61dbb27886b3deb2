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
			if err := (harness.Orders{Topic: p.Source}).Seed(ctx, p.Seeds, 1, n,
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

// batch.acquire_mode auto acquires whole source batches when a source
// batch is no larger than a poll and the group may lock what the instance
// may hold with them, and splits them (record_limit) otherwise: 3,000
// records, polls of 1,000, one worker with one share consumer. Written
// in batches of 750 with 4,000 locks (1,000 + 750 may be held), a poll
// takes two whole batches, 1,500 records: two transactions. With 1,500
// locks, or written in one batch of 3,000 (1,000 + 3,000 may be held,
// within the 4,000 locks, but a poll of whole batches would hold all of
// it, three times what it asks for), each poll takes at most 1,000:
// three transactions or more. All relay exactly once, and the relay logs
// the mode it chose and why. Before auto sampled the source's batches
// the one-batch case chose batch_optimized (one transaction).
func TestRealBrokerAutoAcquiresWholeBatchesOnlyWhenTheyFitAPollAndTheGroupMayLockThem(t *testing.T) {
	seeds := seedsFor(t)
	const n, most = 3000, 1000
	cases := []struct {
		name, locks, mode string
		batch             int
		why               string
		minTxns, maxTxns  int
	}{
		{name: "batches fit a poll, locks cover the instance", locks: "4000", batch: 750, mode: config.AcquireBatchOptimized,
			why: "source batches span up to 750 records", minTxns: 1, maxTxns: 2},
		{name: "locks short", locks: "1500", batch: 750, mode: config.AcquireRecordLimit,
			why: "more than the 1500 the group may lock", minTxns: n / most, maxTxns: n},
		{name: "a source batch larger than a poll", locks: "4000", batch: n, mode: config.AcquireRecordLimit,
			why: "spans up to 3000 records, more than batch.max_records 1000", minTxns: n / most, maxTxns: n},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			addr := metricsAddr(t)
			p := newPipe(t, seeds, harness.PipelineOptions{Workers: 1, Consumers: 1, Partitions: 1, MaxRecords: most,
				AcquireMode: config.AcquireAuto, MetricsListen: addr, GroupConfigs: map[string]string{"share.partition.max.record.locks": c.locks}})
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			// One source batch a Seed: every record produced within
			// the linger, far below the batch size.
			for from := 1; from <= n; from += c.batch {
				if err := (harness.Orders{Topic: p.Source}).Seed(ctx, p.Seeds, from, min(from+c.batch-1, n),
					kgo.ProducerLinger(2*time.Second), kgo.ProducerBatchMaxBytes(1<<20)); err != nil {
					t.Fatal(err)
				}
			}
			r := startRelay(t, p, "r")
			exactlyOnce(t, settled(t, p, n, 3*time.Minute), n, 0)
			txns := int(metricWhere(t, addr, "sharerelay_transactions_total", `outcome="committed"`))
			log := r.LogTail(1 << 20)
			t.Logf("%s: %d transactions committed", c.name, txns)
			if !strings.Contains(log, "acquire mode "+c.mode) || !strings.Contains(log, "auto: ") || !strings.Contains(log, c.why) {
				t.Errorf("the relay's log does not say it chose %s (auto) because %q:\n%s", c.mode, c.why, log)
			}
			if txns < c.minTxns || txns > c.maxTxns {
				t.Errorf("%d transactions committed; want %d to %d (%s)", txns, c.minTxns, c.maxTxns, c.mode)
			}
		})
	}
}
