package integration

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"runtime/pprof"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sharerelay/sharerelay/audit"
	"github.com/sharerelay/sharerelay/integration/harness"
	"github.com/sharerelay/sharerelay/lineage"
)

// BenchmarkVerifyMemory measures relay verify's memory on a large topic:
// VERIFY_RECORDS source records (default 1,000,000; docs/benchmarks.md's figure is
// from 5,000,000) on 3 partitions, each with one output, then one
// audit.Verify while the peak live heap is sampled. It reports the peak
// heap per source record; VERIFY_HEAP_PROFILE=<file> writes a heap
// profile at the peak.
//
//	go test -run '^$' -bench BenchmarkVerifyMemory -benchtime 1x ./integration/
func BenchmarkVerifyMemory(b *testing.B) {
	seeds := seedsForBench(b)
	n := 1_000_000
	if v, err := strconv.Atoi(os.Getenv("VERIFY_RECORDS")); err == nil && v > 0 {
		n = v
	}
	name := fmt.Sprintf("verify-bench-%d", time.Now().UnixNano()%1e9)
	src, out, dlq := name+".orders", name+".jobs", name+".dlq"
	ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
	defer cancel()
	if err := harness.CreateTopics(ctx, seeds, harness.Topic{Name: src, Partitions: 3}, harness.Topic{Name: out, Partitions: 3}, harness.Topic{Name: dlq}); err != nil {
		b.Fatal(err)
	}
	defer harness.DeleteTopics(context.Background(), seeds, src, out, dlq)

	start := time.Now()
	if err := fill(ctx, seeds, src, out, n); err != nil {
		b.Fatal(err)
	}
	b.Logf("wrote %d source records and %d outputs in %s", n, n, time.Since(start).Round(time.Second))

	for range b.N {
		runtime.GC()
		var base runtime.MemStats
		runtime.ReadMemStats(&base)
		var peak atomic.Uint64
		stop := make(chan struct{})
		var wg sync.WaitGroup
		wg.Add(1)
		go func() {
			defer wg.Done()
			t := time.NewTicker(20 * time.Millisecond)
			defer t.Stop()
			for {
				select {
				case <-stop:
					return
				case <-t.C:
				}
				var m runtime.MemStats
				runtime.ReadMemStats(&m)
				if m.HeapInuse > peak.Load() {
					peak.Store(m.HeapInuse)
					if path := os.Getenv("VERIFY_HEAP_PROFILE"); path != "" {
						if f, err := os.Create(path); err == nil {
							pprof.WriteHeapProfile(f)
							f.Close()
						}
					}
				}
			}
		}()
		began := time.Now()
		rep, err := audit.Verify(ctx, audit.VerifyConfig{ClientOpts: []kgo.Opt{kgo.SeedBrokers(seeds...)}, Sources: []string{src},
			SourceCommitted: true, Outputs: []string{out}, DeadLetter: dlq})
		close(stop)
		wg.Wait()
		if err != nil {
			b.Fatal(err)
		}
		if !rep.Exact || rep.Total.Sources != n {
			b.Fatalf("verify: exact %v, %d sources (want %d), lost %d, duplicated %d", rep.Exact, rep.Total.Sources, n, rep.Total.Lost, rep.Total.Duplicated)
		}
		used := float64(peak.Load()) - float64(base.HeapInuse)
		b.ReportMetric(used/float64(n), "B/record")
		b.ReportMetric(float64(peak.Load())/(1<<20), "peak-heap-MiB")
		b.Logf("verify of %d records: %s, peak heap %.0f MiB (%.1f B per source record above the %0.f MiB before)",
			n, time.Since(began).Round(time.Second), float64(peak.Load())/(1<<20), used/float64(n), float64(base.HeapInuse)/(1<<20))
	}
}

// fill writes n small source records over src's 3 partitions and, for
// each, one output record in out labelled with its source coordinates.
func fill(ctx context.Context, seeds []string, src, out string, n int) error {
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.ProducerLinger(20*time.Millisecond), kgo.ProducerBatchCompression(kgo.Lz4Compression()),
		kgo.MaxBufferedRecords(200_000), kgo.ProducerBatchMaxBytes(1<<20))
	if err != nil {
		return err
	}
	defer cl.Close()
	var (
		mu    sync.Mutex
		first error
		wg    sync.WaitGroup
	)
	done := func(_ *kgo.Record, err error) {
		if err != nil {
			mu.Lock()
			if first == nil {
				first = err
			}
			mu.Unlock()
		}
		wg.Done()
	}
	for i := range n {
		p := int32(i % 3)
		off := int64(i / 3) // offsets per partition, in order: one producer, no retries reorder (idempotent)
		wg.Add(2)
		cl.Produce(ctx, &kgo.Record{Topic: src, Partition: p, Value: strconv.AppendInt(nil, int64(i), 10)}, done)
		cl.Produce(ctx, &kgo.Record{Topic: out, Partition: int32((i + 1) % 3), Value: []byte("x"),
			Headers: lineage.SetSource(nil, lineage.Source{Topic: src, Partition: p, Offset: off})}, done)
	}
	wg.Wait()
	return first
}
