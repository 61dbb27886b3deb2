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

// batch.acquire_mode auto acquires whole source batches
// when the group may lock what the instance asks for, and splits them
// (record_limit) when it may not: one source batch of 3,000 records, polls
// of 1,000, 2 consumers (2,000 records asked for). With 4,000 locks the
// first poll takes the whole batch, one or two transactions; with 1,500
// each poll takes at most 1,000, three transactions or more. Both relay
// exactly once, and the relay logs the mode it chose and why.
func TestRealBrokerAutoAcquiresWholeBatchesOnlyWhenTheGroupMayLockThem(t *testing.T) {
	seeds := seedsFor(t)
	const n, most = 3000, 1000
	cases := []struct {
		name, locks, mode string
		minTxns, maxTxns  int
	}{
		{name: "locks cover the instance", locks: "4000", mode: config.AcquireBatchOptimized, minTxns: 1, maxTxns: 2},
		{name: "locks short", locks: "1500", mode: config.AcquireRecordLimit, minTxns: n / most, maxTxns: n},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			addr := metricsAddr(t)
			p := newPipe(t, seeds, harness.PipelineOptions{Workers: 1, Consumers: 2, Partitions: 1, MaxRecords: most,
				AcquireMode: config.AcquireAuto, MetricsListen: addr, GroupConfigs: map[string]string{"share.partition.max.record.locks": c.locks}})
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			if err := (harness.Orders{Topic: p.Source}).Seed(ctx, p.Seeds, 1, n,
				kgo.ProducerLinger(2*time.Second), kgo.ProducerBatchMaxBytes(1<<20)); err != nil {
				t.Fatal(err)
			}
			r := startRelay(t, p, "r")
			exactlyOnce(t, settled(t, p, n, 3*time.Minute), n, 0)
			txns := int(metricWhere(t, addr, "sharerelay_transactions_total", `outcome="committed"`))
			log := r.LogTail(1 << 20)
			t.Logf("%s: %d transactions committed", c.name, txns)
			if !strings.Contains(log, "acquire mode "+c.mode) || !strings.Contains(log, "auto: ") {
				t.Errorf("the relay's log does not say it chose %s (auto):\n%s", c.mode, log)
			}
			if txns < c.minTxns || txns > c.maxTxns {
				t.Errorf("%d transactions committed; want %d to %d (%s)", txns, c.minTxns, c.maxTxns, c.mode)
			}
		})
	}
}
