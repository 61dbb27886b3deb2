package chaos

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sharerelay/sharerelay/integration/harness"
	"github.com/sharerelay/sharerelay/lineage"
)

// committedReader reads the output and dead-letter topics read_committed
// WHILE the faults run, the way a downstream consumer would, and tallies
// what it sees per source record. Jepsen's "aborted read" check: such a
// reader must never see a source record twice, and everything it saw must
// be in the final committed set (finish compares the totals).
type committedReader struct {
	cl       *kgo.Client
	cancel   context.CancelFunc
	done     chan struct{}
	stopOnce sync.Once

	mu        sync.Mutex
	counts    map[srcKey]int32
	records   int
	dups      int
	dupSample []srcKey
	pos       map[string]map[int32]int64 // next offset per partition
	err       error
}

type srcKey struct {
	p int32
	o int64
}

func (k srcKey) String() string { return fmt.Sprintf("%d@%d", k.p, k.o) }

type readerResult struct {
	records, distinct, duplicates int
	dupSample                     []srcKey
}

func (s *scenario) startReader() {
	s.t.Helper()
	want := map[string]map[int32]kgo.Offset{s.p.Output: {}, s.p.DeadLetter: {}}
	for p := range int32(harness.OutputPartitions) {
		want[s.p.Output][p] = kgo.NewOffset().AtStart()
	}
	for p := range int32(harness.DeadLetterPartitions) {
		want[s.p.DeadLetter][p] = kgo.NewOffset().AtStart()
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(s.env.direct...),
		kgo.ConsumePartitions(want),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.KeepControlRecords(),
		kgo.FetchMaxWait(500*time.Millisecond))
	if err != nil {
		s.t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	rd := &committedReader{cl: cl, cancel: cancel, done: make(chan struct{}),
		counts: make(map[srcKey]int32, s.o.Records), pos: map[string]map[int32]int64{}}
	s.reader = rd
	go rd.run(ctx, s.p.Source)
}

func (rd *committedReader) run(ctx context.Context, source string) {
	defer close(rd.done)
	for ctx.Err() == nil {
		fs := rd.cl.PollFetches(ctx)
		rd.mu.Lock()
		fs.EachRecord(func(r *kgo.Record) {
			if rd.pos[r.Topic] == nil {
				rd.pos[r.Topic] = map[int32]int64{}
			}
			rd.pos[r.Topic][r.Partition] = r.Offset + 1
			if r.Attrs.IsControl() {
				return
			}
			rd.records++
			src, ok := lineage.SourceOf(r)
			if !ok || src.Topic != source {
				rd.err = fmt.Errorf("record %s[%d]@%d without the source headers of %s", r.Topic, r.Partition, r.Offset, source)
				return
			}
			k := srcKey{src.Partition, src.Offset}
			rd.counts[k]++
			if rd.counts[k] == 2 {
				rd.dups++
				if len(rd.dupSample) < 5 {
					rd.dupSample = append(rd.dupSample, k)
				}
			}
		})
		rd.mu.Unlock()
	}
}

func (rd *committedReader) stop() {
	rd.stopOnce.Do(func() {
		rd.cancel()
		<-rd.done
		rd.cl.Close()
	})
}

// finish lets the reader catch up with the (now final) ends of the topics,
// stops it and returns what it saw.
func (rd *committedReader) finish(s *scenario) readerResult {
	s.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	ends, err := s.adm.ListEndOffsets(ctx, s.p.Output, s.p.DeadLetter)
	cancel()
	if err == nil {
		err = ends.Error()
	}
	if err != nil {
		s.t.Fatalf("reader: end offsets: %v", err)
	}
	deadline := time.Now().Add(2 * time.Minute)
	for {
		behind := 0
		rd.mu.Lock()
		for t, ps := range ends {
			for p, o := range ps {
				if o.Offset > 0 && rd.pos[t][p] < o.Offset {
					behind++
				}
			}
		}
		rd.mu.Unlock()
		if behind == 0 {
			break
		}
		if time.Now().After(deadline) {
			s.t.Fatalf("the read_committed reader did not reach the end of %d partitions in 2 minutes", behind)
		}
		time.Sleep(200 * time.Millisecond)
	}
	rd.stop()
	rd.mu.Lock()
	defer rd.mu.Unlock()
	if rd.err != nil {
		s.t.Errorf("reader: %v", rd.err)
	}
	return readerResult{records: rd.records, distinct: len(rd.counts), duplicates: rd.dups, dupSample: rd.dupSample}
}
