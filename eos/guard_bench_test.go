package eos

import (
	"context"
	"testing"
)

// fixedTx is a Tx with a fixed producer id and epoch.
type fixedTx struct{}

func (fixedTx) ProducerID(context.Context) (int64, int16, error) { return 7, 3, nil }
func (fixedTx) TransactionalID() string                          { return "tx" }

// BenchmarkClaimsOfABatch measures what a worker's guard does per
// transaction before the commit: group a batch's sources by partition and
// encode one claim per partition. A batch here is what make bench's 1 KiB
// run writes a transaction: about 3,400 records of three partitions, in
// runs of one partition (one poll each).
func BenchmarkClaimsOfABatch(b *testing.B) {
	l := &Ledger{cfg: LedgerConfig{Topic: "ledger", Gen: 1}}
	g := l.Guard("tx").(*ledgerGuard)
	var srcs []Source
	for p := range int32(3) {
		for o := range int64(1130) {
			srcs = append(srcs, Source{Topic: "in", Partition: p, Offset: 10_000 + o})
		}
	}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		recs, err := g.Claims(ctx, fixedTx{}, srcs, []string{"out"}, 0)
		if err != nil || len(recs) != 3 {
			b.Fatalf("claims %d, %v", len(recs), err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(srcs)), "ns/record")
}
