package live

import (
	"os"
	"runtime"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sharerelay/sharerelay/audit"
	"github.com/sharerelay/sharerelay/lineage"
)

// The state is driven directly here: records in, fences, verdicts out,
// with no broker.

var src0 = tp{"src", 0}

func newTestState() *state {
	return newState(audit.VerifyConfig{Sources: []string{"src"}, Outputs: []string{"out"}, DeadLetter: "dlq"}, false, NewMetrics(prometheus.NewRegistry(), "p"))
}

// request allocates the next fence, as the auditor does when it asks for
// one: what is read from now on is placed by a later fence.
func (s *state) request(spso, end int64) *fence {
	f := &fence{seq: s.nextSeq, taken: time.Now(), spso: map[tp]int64{src0: spso},
		srcStart: map[tp]int64{src0: 0}, srcEnd: map[tp]int64{src0: end}, outStart: map[tp]int64{}, outEnd: map[tp]int64{}}
	s.nextSeq++
	return f
}

// fence requests a fence and places it at once.
func (s *state) fence(spso, end int64) *fence {
	f := s.request(spso, end)
	s.placed(f)
	return f
}

func (s *state) readSources(from, to int64) {
	r := &kgo.Record{Topic: "src"}
	for o := from; o < to; o++ {
		r.Offset = o
		s.sourceRecord(r)
	}
}

// output reads an output naming source offset o.
func (s *state) output(o int64) {
	s.outputRecord(&kgo.Record{Topic: "out", Headers: lineage.SetSource(nil, lineage.Source{Topic: "src", Offset: o})}, false)
}

// An output naming an offset past the source's end is unexpected once a
// fence taken after it was read shows the end short of it — near the end
// or far beyond; one read while a fence was in flight waits for the next,
// and counts against its record if the record came meanwhile.
func TestOutputsNamingOffsetsPastTheEndAreUnexpectedOnlyWhenAFenceTakenAfterSaysSo(t *testing.T) {
	s := newTestState()
	s.fence(0, 10)
	s.readSources(0, 10)
	for o := range int64(10) {
		s.output(o)
	}
	s.output(12)            // past the end: no record
	s.output(1_000_000_000) // far past
	inFlight := s.request(0, 11)
	s.output(15) // read after the fence's reads, perhaps: wait for the next
	s.placed(inFlight)
	p := s.parts[src0]
	if p.rep.Unexpected != 2 {
		t.Fatalf("unexpected %d after the fence taken after offsets 12 and 1e9 were named, want 2", p.rep.Unexpected)
	}
	s.readSources(10, 20)
	f := s.fence(20, 20)
	s.judge(f)
	if p.rep.Unexpected != 2 || p.rep.Output != 11 || p.rep.Lost != 9 || p.rep.Sources != 20 {
		t.Fatalf("after the next fence: %+v; want offset 15 judged with its output, 2 unexpected", p.rep)
	}
}

// The memory measurement: records flow through the state at a steady
// pace — a fence every 50,000 records, 2,000 in flight (acquired, not
// acknowledged) at each — and the heap after 1M records is the heap
// after 10M: what is held is the unjudged window, not the history. Each
// record has one output, or fans out to two (numbered outputs keep 16
// bytes more an offset). SHARERELAY_AUDIT_MEMORY=1 runs it to 10M
// records (docs/benchmarks.md has the figures); without it, to 1M.
func TestMemoryStaysFlatAsRecordsFlow(t *testing.T) {
	total := int64(1_000_000)
	if os.Getenv("SHARERELAY_AUDIT_MEMORY") != "" {
		total = 10_000_000
	}
	for _, tc := range []struct {
		name      string
		fan       int
		perOffset float64
	}{{"one output each", 1, 1.125}, {"fan-outs of two", 2, 1.125 + 16}} {
		t.Run(tc.name, func(t *testing.T) { measureMemory(t, total, tc.fan, tc.perOffset) })
	}
}

func measureMemory(t *testing.T, total int64, fan int, perOffset float64) {
	const perFence, inFlight = 50_000, 2_000
	s := newTestState()
	s.fence(0, 0)
	r := &kgo.Record{Topic: "out"}
	var hs []kgo.RecordHeader
	heap := map[int64]uint64{}
	var maxHeld, maxWindow int
	var ms runtime.MemStats
	for head := int64(0); head < total; head += perFence {
		s.readSources(head, head+perFence)
		for o := max(0, head-inFlight); o < head+perFence-inFlight; o++ {
			for i := range fan {
				hs = lineage.Label(hs[:0], lineage.Source{Topic: "src", Offset: o}, i, fan)
				r.Headers = hs
				s.outputRecord(r, false)
			}
		}
		f := s.fence(head+perFence-inFlight, head+perFence)
		if held := s.heldBytes(); held > maxHeld {
			maxHeld, maxWindow = held, int(head+perFence-s.parts[src0].judged)
		}
		s.judge(f)
		if n := head + perFence; n == 1_000_000 || n == total {
			runtime.GC()
			runtime.ReadMemStats(&ms)
			heap[n] = ms.HeapAlloc
		}
	}
	rep := s.parts[src0].rep
	if rep.Sources != int(total-inFlight) || rep.Output != rep.Sources || rep.Lost+rep.Duplicated+rep.Incomplete != 0 {
		t.Fatalf("judged %+v; want %d records each with its outputs", rep, total-inFlight)
	}
	t.Logf("%d records: held at most %d bytes for %d unjudged offsets (%.2f bytes each); heap after 1M records %d bytes, after %d %d bytes",
		total, maxHeld, maxWindow, float64(maxHeld)/float64(maxWindow), heap[1_000_000], total, heap[total])
	// perOffset bytes an offset, in chunks: one partly used at either end.
	if limit := perOffset*float64(maxWindow) + 3*perOffset*chunkSize; float64(maxHeld) > limit {
		t.Errorf("held %d bytes for %d unjudged offsets, want at most %.0f (%.3f an offset, in chunks of %d)", maxHeld, maxWindow, limit, perOffset, chunkSize)
	}
	if grown := int64(heap[total]) - int64(heap[1_000_000]); grown > 1<<20 {
		t.Errorf("the heap grew by %d bytes between 1M and %d records: the state grows with history", grown, total)
	}
}

// A dead letter replayed twice (relay dlq replay run twice over it) is a
// duplicate of the replay, counted under the dead letter's partition, as
// relay verify counts it.
func TestADeadLetterReplayedTwiceIsADuplicate(t *testing.T) {
	reg := prometheus.NewRegistry()
	s := newState(audit.VerifyConfig{Sources: []string{"src"}, Outputs: []string{"out"}, DeadLetter: "dlq"}, false, NewMetrics(reg, "p"))
	replay := func(dlqOffset int64) *kgo.Record {
		hs := lineage.SetSource(nil, lineage.Source{Topic: "dlq", Offset: dlqOffset})
		return &kgo.Record{Topic: "out", Headers: lineage.SetReplay(hs, lineage.Source{Topic: "src", Offset: 7}, "job-1")}
	}
	s.outputRecord(replay(3), false)
	s.outputRecord(replay(4), false)
	s.outputRecord(replay(3), false) // the second replay of dead letter 3
	rep := s.report("p", "exactly-once")
	if rep.Replays == nil || rep.Replays.DeadLetters != 2 || rep.Replays.Duplicated != 1 || rep.Exact {
		t.Fatalf("replays %+v exact %v; want 2 dead letters replayed, 1 twice, not exact", rep.Replays, rep.Exact)
	}
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != "sharerelay_audit_duplicated_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			if m.Counter.GetValue() == 1 {
				for _, l := range m.GetLabel() {
					if l.GetName() == "topic" && l.GetValue() == "dlq" {
						return
					}
				}
			}
		}
	}
	t.Fatal("no sharerelay_audit_duplicated_total{topic=\"dlq\"} of 1")
}
