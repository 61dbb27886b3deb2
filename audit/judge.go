package audit

import (
	"fmt"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sharerelay/sharerelay/lineage"
)

// The judgement of one source record, shared by Verify (after the fact)
// and the live auditor (audit/live), so that the two can never disagree:
// what an output or dead letter names (Attribute), how it is counted
// against its source offset (Marks, FanOut), and the verdict on the
// offset once nothing more can name it (Judge).

// Marks counts the outputs and dead letters naming one source offset:
// the low nibble the outputs, the high nibble the dead letters, each
// saturating at 15. One byte per source offset, whatever the output
// volume.
type Marks uint8

// Outputs is the number of output records naming the offset (up to 15).
func (m Marks) Outputs() int { return int(m & 0x0f) }

// DeadLetters is the number of dead letters naming the offset (up to 15).
func (m Marks) DeadLetters() int { return int(m >> 4) }

// Add returns m with one more output, or dead letter when deadLetter.
func (m Marks) Add(deadLetter bool) Marks {
	if deadLetter {
		if m>>4 < 15 {
			m += 0x10
		}
	} else if m&0x0f < 15 {
		m++
	}
	return m
}

// FanOut is what the outputs of one source record's fan-out showed: the
// count they name (N; -1 when they disagree or a label is malformed; 0
// when no output was numbered), how many were seen, and the XOR of a mix
// of their indexes — equal to fanXor(N) when each index 0..N-1 was seen
// once (a duplicate together with a missing index, same count, is caught
// with high probability). Its fields are exported for the live auditor's
// checkpoint.
type FanOut struct {
	N    int32  `json:"n"`
	Seen uint32 `json:"seen"`
	Xor  uint64 `json:"xor"`
}

// Add counts output index of n (ok false: a malformed label).
func (f *FanOut) Add(index, n int, ok bool) {
	switch {
	case !ok || f.N != 0 && int(f.N) != n:
		f.N = -1
	case f.N == 0:
		f.N = int32(n)
	}
	f.Seen++
	f.Xor ^= mix(uint64(index))
}

// mix is SplitMix64's finaliser: a cheap, well-spread hash of an index.
func mix(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ x>>30) * 0xbf58476d1ce4e5b9
	x = (x ^ x>>27) * 0x94d049bb133111eb
	return x ^ x>>31
}

// fanXor is the FanOut.Xor of a complete fan-out of n outputs.
func fanXor(n int) uint64 {
	var x uint64
	for i := range n {
		x ^= mix(uint64(i))
	}
	return x
}

// Verdict is the judgement of one source offset: which of a report's
// columns it counts in. An offset that is no record (a transaction
// marker, an aborted record, one below the log start) counts only as
// Unexpected, and only when something names it.
type Verdict struct {
	Record       bool // a source record (PartitionReport.Sources)
	Output       bool // with at least one output
	DeadLettered bool // with at least one dead letter
	Lost         bool // neither, and the pipeline cannot filter
	Filtered     bool // neither, and the pipeline can filter
	Duplicated   bool // an output or a dead letter more than once (or a fan-out index twice)
	Both         bool // in the output and the dead letters
	Incomplete   bool // a fan-out short of the outputs it names
	Unexpected   bool // named by outputs or dead letters, but no record
}

// Judge judges a source offset from what named it: m and f, whether it is
// a record, and whether the pipeline may drop records (atMostOnce: a
// filter, so no output is Filtered, not Lost). It is the one rule of
// "exactly once per source record".
func Judge(m Marks, f FanOut, isRecord, atMostOnce bool) Verdict {
	no, nd := m.Outputs(), m.DeadLetters()
	if !isRecord {
		return Verdict{Unexpected: no+nd > 0}
	}
	v := Verdict{Record: true}
	if f.N != 0 {
		no, v.Incomplete = judgeFanOut(f)
	}
	v.Output, v.DeadLettered = no > 0, nd > 0
	v.Lost = no == 0 && nd == 0 && !atMostOnce
	v.Filtered = no == 0 && nd == 0 && atMostOnce
	v.Duplicated = no > 1 || nd > 1
	v.Both = no > 0 && nd > 0
	return v
}

// judgeFanOut judges the outputs of a fan-out: exactly its count of
// outputs, each index once. It returns the number of outputs to judge the
// record by — 2 (a duplicate) or 1 — and whether the fan-out is short.
func judgeFanOut(f FanOut) (outputs int, incomplete bool) {
	switch {
	case f.N < 0 || f.Seen > uint32(f.N) || f.Seen == uint32(f.N) && f.Xor != fanXor(int(f.N)):
		return 2, false
	case f.Seen < uint32(f.N):
		return 1, true
	default:
		return 1, false
	}
}

// Add counts verdict v of source offset o into pr, with o in the samples
// of its anomalies.
func (pr *PartitionReport) Add(v Verdict, o int64) {
	if v.Unexpected {
		pr.Unexpected++
	}
	if !v.Record {
		return
	}
	pr.Sources++
	count := func(n *int, flag bool, sample *[]int64) {
		if !flag {
			return
		}
		*n++
		if sample != nil && len(*sample) < sampleMax {
			*sample = append(*sample, o)
		}
	}
	count(&pr.Output, v.Output, nil)
	count(&pr.DeadLettered, v.DeadLettered, nil)
	count(&pr.Filtered, v.Filtered, nil)
	count(&pr.Lost, v.Lost, &pr.LostSample)
	count(&pr.Duplicated, v.Duplicated, &pr.DuplicatedSample)
	count(&pr.Both, v.Both, nil)
	count(&pr.Incomplete, v.Incomplete, &pr.IncompleteSample)
}

// AttributionKind is what an output or dead-letter record names.
type AttributionKind int

const (
	// Unlabelled: no sharerelay.source.* headers.
	Unlabelled AttributionKind = iota
	// Replay: a dead letter, as written by relay dlq replay.
	Replay
	// Foreign: a partition that is neither a source nor the dead-letter
	// topic: counted unexpected.
	Foreign
	// SourceRecord: a source record.
	SourceRecord
)

// Attribution is what an output or dead-letter record names, and how it
// counts against its source offset.
type Attribution struct {
	Kind   AttributionKind
	Source lineage.Source
	// Numbered: an output that carries a fan-out position (or a malformed
	// one): count it into the offset's FanOut with Index, N and IndexOK.
	Numbered   bool
	Index, N   int
	IndexOK    bool
	DeadLetter bool
}

// Attribute reads what rec — an output, or a dead letter when deadLetter
// — names. deadLetterTopic is the pipeline's; isSource says whether a
// partition is one of the sources. A record naming the dead-letter topic
// is a replay's when that topic is no source partition or the record
// carries the replay headers: across clusters the dead-letter topic may
// carry a source topic's name.
func Attribute(rec *kgo.Record, deadLetter bool, deadLetterTopic string, isSource func(topic string, partition int32) bool) Attribution {
	s, ok := lineage.SourceOf(rec)
	if !ok {
		return Attribution{Kind: Unlabelled, DeadLetter: deadLetter}
	}
	a := Attribution{Source: s, DeadLetter: deadLetter}
	src := isSource(s.Topic, s.Partition)
	switch {
	case s.Topic == deadLetterTopic && (!src || isReplay(rec)):
		a.Kind = Replay
	case !src:
		a.Kind = Foreign
	default:
		a.Kind = SourceRecord
		if !deadLetter {
			i, n, ok := lineage.IndexOf(rec)
			a.Numbered, a.Index, a.N, a.IndexOK = !ok || n > 1, i, n, ok
		}
	}
	return a
}

// isReplay reports whether rec was written by relay dlq replay (it has
// sharerelay.replay.* headers).
func isReplay(rec *kgo.Record) bool {
	_, _, ok := lineage.ReplayOf(rec)
	return ok
}

// Replayed is what the records naming one dead letter showed: relay dlq
// replay treats a dead letter as a source record, so each must have its
// outputs once (a fan-out's indexes once each) or one dead letter again.
// Its fields are exported for the live auditor's checkpoint.
type Replayed struct {
	// Outs counts the outputs per fan-out index.
	Outs map[int]int `json:"outs,omitempty"`
	// N is the fan-out count they name (-1: disagreeing or malformed).
	N int `json:"n,omitempty"`
	// Letters counts the dead letters written again.
	Letters int `json:"letters,omitempty"`
}

// Add counts rec, a record naming the dead letter: an output, or a dead
// letter again when deadLetter.
func (x *Replayed) Add(rec *kgo.Record, deadLetter bool) {
	if deadLetter {
		x.Letters++
		return
	}
	if x.Outs == nil {
		x.Outs = map[int]int{}
	}
	i, n, ok := lineage.IndexOf(rec)
	if !ok || x.N != 0 && x.N != n {
		n = -1
	}
	x.N = n
	x.Outs[i]++
}

// ReplayVerdict is the judgement of one replayed dead letter.
type ReplayVerdict struct {
	Output, DeadLettered, Duplicated, Both bool
	// Outputs is the number of output records.
	Outputs int
}

// Judge judges the replay of one dead letter.
func (x *Replayed) Judge() ReplayVerdict {
	v := ReplayVerdict{Output: len(x.Outs) > 0, DeadLettered: x.Letters > 0}
	v.Duplicated = x.Letters > 1 || x.N < 0
	for _, c := range x.Outs {
		v.Outputs += c
		v.Duplicated = v.Duplicated || c > 1
	}
	v.Both = v.Output && v.DeadLettered
	return v
}

// Add counts the verdict on dead letter at into rr.
func (rr *ReplayReport) Add(v ReplayVerdict, at lineage.Source) {
	rr.DeadLetters++
	rr.Outputs += v.Outputs
	if v.Output {
		rr.Output++
	}
	if v.DeadLettered {
		rr.DeadLettered++
	}
	if v.Both {
		rr.Both++
	}
	if v.Duplicated {
		rr.Duplicated++
		if len(rr.DuplicatedSample) < sampleMax {
			rr.DuplicatedSample = append(rr.DuplicatedSample, ReplayName(at))
		}
	}
}

// ReplayName names dead letter at as the reports do: topic[partition]@offset.
func ReplayName(at lineage.Source) string {
	return fmt.Sprintf("%s[%d]@%d", at.Topic, at.Partition, at.Offset)
}
