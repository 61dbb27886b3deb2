package live

import (
	"cmp"
	"maps"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sharerelay/sharerelay/audit"
	"github.com/sharerelay/sharerelay/lineage"
)

// tp is a topic partition.
type tp struct {
	topic     string
	partition int32
}

func compareTP(a, b tp) int {
	return cmp.Or(cmp.Compare(a.topic, b.topic), cmp.Compare(a.partition, b.partition))
}

// srcPart is what the auditor holds of one source partition: the
// unjudged offsets and the cumulative verdicts.
type srcPart struct {
	tp
	// from: offsets below are outside the audit. judged: every offset
	// below is judged. pos: the source reader has read every offset
	// below. end: the partition's end at the newest fence.
	from, judged, pos, end int64
	// win holds the offsets from judged on.
	win window
	// Marks of offsets at or past end wait for a fence taken after they
	// were read, which says whether those offsets exist. They are kept in
	// the window when near and all waiting for the same fence (aheadSeq;
	// aheadFrom is the lowest such offset) — the usual case, as the
	// readers read while no fence is in flight — and in far, each with
	// its own, otherwise.
	aheadFrom int64
	aheadSeq  uint64
	far       map[int64]*held
	// rep is the cumulative verdict; late counts the outputs and dead
	// letters read after the offset they name was judged (in
	// rep.Duplicated too).
	rep  audit.PartitionReport
	late int
}

// held is what names an offset the auditor cannot place yet, and the
// sequence number of the first fence that can place it: one requested
// after it was read.
type held struct {
	marks audit.Marks
	fan   audit.FanOut
	seq   uint64
}

// heldRecord is an output naming a partition of a source topic that no
// fence has listed yet (a partition added while the pipeline ran).
type heldRecord struct {
	src lineage.Source
	h   held
}

// state is everything the auditor judges from, and the verdicts. It is
// owned by one goroutine (the auditor's loop) and touches no network, so
// that it can be driven directly (tests, the memory measurement).
type state struct {
	atMostOnce bool
	deadLetter string
	sources    map[string]bool // the source topics
	// fromEnd: outputs naming offsets below a partition's from are
	// ignored (the audit started at the topics' ends); otherwise they
	// are unexpected, as relay verify counts them.
	fromEnd bool

	parts   map[tp]*srcPart
	outPos  map[tp]int64 // per output and dead-letter partition: every offset below was read
	unknown []heldRecord
	replays map[lineage.Source]*audit.Replayed

	foreign, unlabelled, outputRecords int
	// nextSeq is the sequence number the next fence requested will carry.
	nextSeq uint64
	// judgedAt is when the newest judged fence was taken: every record
	// the share group had acknowledged by then is judged.
	judgedAt time.Time

	m *Metrics
}

func newState(cfg audit.VerifyConfig, fromEnd bool, m *Metrics) *state {
	s := &state{
		atMostOnce: cfg.AtMostOnce,
		deadLetter: cfg.DeadLetter,
		sources:    map[string]bool{},
		fromEnd:    fromEnd,
		parts:      map[tp]*srcPart{},
		outPos:     map[tp]int64{},
		replays:    map[lineage.Source]*audit.Replayed{},
		nextSeq:    1,
		m:          m,
	}
	for _, t := range cfg.Sources {
		s.sources[t] = true
	}
	return s
}

// addPart starts auditing source partition at from (judged, read from
// there).
func (s *state) addPart(at tp, from int64) *srcPart {
	p := &srcPart{tp: at, from: from, judged: from, pos: from, end: from, win: newWindow(from),
		rep: audit.PartitionReport{Topic: at.topic, Partition: at.partition}}
	s.parts[at] = p
	s.m.partition(p)
	return p
}

// sourceRecord notes a record read from a source partition: its offset is
// a record (a transaction marker is not) and the reader is past it.
func (s *state) sourceRecord(r *kgo.Record) {
	p := s.parts[tp{r.Topic, r.Partition}]
	if p == nil {
		return
	}
	p.pos = max(p.pos, r.Offset+1)
	if r.Attrs.IsControl() || r.Offset < p.judged {
		return
	}
	c, i := p.win.at(r.Offset, true)
	c.setRecord(i)
}

// outputRecord counts a record read from an output partition, or a
// dead-letter partition when dlq, against what it names.
func (s *state) outputRecord(r *kgo.Record, dlq bool) {
	at := tp{r.Topic, r.Partition}
	s.outPos[at] = max(s.outPos[at], r.Offset+1)
	if r.Attrs.IsControl() {
		return
	}
	s.outputRecords++
	a := audit.Attribute(r, dlq, s.deadLetter, func(topic string, _ int32) bool { return s.sources[topic] })
	switch a.Kind {
	case audit.Unlabelled:
		s.unlabelled++
		s.m.unlabelled.Inc()
	case audit.Replay:
		s.replay(r, a)
	case audit.Foreign:
		s.foreignRecord()
	default:
		p := s.parts[tp{a.Source.Topic, a.Source.Partition}]
		if p == nil {
			h := oneMark(a)
			h.seq = s.nextSeq
			s.unknown = append(s.unknown, heldRecord{a.Source, h})
			return
		}
		s.count(p, a.Source.Offset, oneMark(a), s.nextSeq)
	}
}

// oneMark is what attribution a adds to its offset.
func oneMark(a audit.Attribution) held {
	h := held{marks: audit.Marks(0).Add(a.DeadLetter)}
	if a.Numbered {
		h.fan.Add(a.Index, a.N, a.IndexOK)
	}
	return h
}

func (s *state) foreignRecord() {
	s.foreign++
	s.m.unexpected.WithLabelValues("", "").Inc()
}

// replay counts a record naming a dead letter (written by relay dlq
// replay); the dead letter's verdict is counted when it changes.
func (s *state) replay(r *kgo.Record, a audit.Attribution) {
	x := s.replays[a.Source]
	if x == nil {
		x = &audit.Replayed{}
		s.replays[a.Source] = x
	}
	before := x.Judge()
	x.Add(r, a.DeadLetter)
	after := x.Judge()
	labels := []string{a.Source.Topic, itoa(a.Source.Partition)}
	if after.Duplicated && !before.Duplicated {
		s.m.duplicated.WithLabelValues(labels...).Inc()
	}
	if after.Both && !before.Both {
		s.m.both.WithLabelValues(labels...).Inc()
	}
}

// farAhead is how far past a partition's end a mark is kept in the
// window; one further (an output naming an offset far beyond any record)
// is held in srcPart.far, so that it cannot make the window grow.
const farAhead = 1 << 22

// count adds h to offset o of p: into the window, as late when o is
// judged. Past the partition's end at the newest fence it waits for a
// fence taken after it was read (seq).
func (s *state) count(p *srcPart, o int64, h held, seq uint64) {
	switch {
	case o < p.from:
		if !s.fromEnd {
			p.rep.Unexpected++ // below the source's start: relay verify's count too
			s.m.unexpected.WithLabelValues(p.labels()...).Inc()
		}
		return
	case o < p.judged:
		// Every output of a judged record was written before its fence:
		// one read after is a second write.
		p.late++
		p.rep.Duplicated++
		s.m.late.WithLabelValues(p.labels()...).Inc()
		s.m.duplicated.WithLabelValues(p.labels()...).Inc()
		return
	case o >= p.end+farAhead || o >= p.end && p.aheadSeq != 0 && p.aheadSeq != seq:
		if p.far == nil {
			p.far = map[int64]*held{}
		}
		x := p.far[o]
		if x == nil {
			x = &held{}
			p.far[o] = x
		}
		merge(&x.marks, &x.fan, h)
		x.seq = max(x.seq, seq)
		return
	case o >= p.end:
		if p.aheadSeq == 0 || o < p.aheadFrom {
			p.aheadFrom = o
		}
		p.aheadSeq = max(p.aheadSeq, seq)
	}
	c, i := p.win.at(o, true)
	var f *audit.FanOut
	if h.fan.Seen > 0 {
		f = c.fanOut(i)
	}
	merge(&c.marks[i], f, h)
}

// merge adds h's marks and fan-out to m and f (f nil: h has none).
func merge(m *audit.Marks, f *audit.FanOut, h held) {
	for range h.marks.Outputs() {
		*m = m.Add(false)
	}
	for range h.marks.DeadLetters() {
		*m = m.Add(true)
	}
	if f != nil && h.fan.Seen > 0 {
		switch {
		case f.Seen == 0:
			*f = h.fan
		case f.N != h.fan.N || f.N < 0 || h.fan.N < 0:
			f.N, f.Seen, f.Xor = -1, f.Seen+h.fan.Seen, f.Xor^h.fan.Xor
		default:
			f.Seen, f.Xor = f.Seen+h.fan.Seen, f.Xor^h.fan.Xor
		}
	}
}

// fence is one settling point: the share group's start offsets (spso),
// read first, then the sources' and the outputs' start and end offsets.
// A source record below its partition's spso is judged once the readers
// of every output and dead-letter partition are at the fence's end of it
// and the source reader at spso.
type fence struct {
	seq   uint64
	taken time.Time // when spso was read
	spso  map[tp]int64
	// srcStart, srcEnd: the sources' log start and end; outStart, outEnd:
	// the outputs' and dead letters' (their high watermarks).
	srcStart, srcEnd map[tp]int64
	outStart, outEnd map[tp]int64
}

// placed applies fence f to the state: new partitions are added, what
// was held for want of a fence is placed, positions move past what
// retention deleted.
func (s *state) placed(f *fence) {
	for _, at := range slices.SortedFunc(maps.Keys(f.srcEnd), compareTP) {
		p := s.parts[at]
		if p == nil {
			p = s.addPart(at, f.srcStart[at])
		}
		p.end = max(p.end, f.srcEnd[at])
		p.pos = max(p.pos, f.srcStart[at])
	}
	for at := range f.outEnd {
		s.outPos[at] = max(s.outPos[at], f.outStart[at])
	}
	keep := s.unknown[:0]
	for _, u := range s.unknown {
		switch p := s.parts[tp{u.src.Topic, u.src.Partition}]; {
		case u.h.seq > f.seq:
			keep = append(keep, u)
		case p == nil:
			for range u.h.marks.Outputs() + u.h.marks.DeadLetters() {
				s.foreignRecord()
			}
		default:
			s.count(p, u.src.Offset, u.h, u.h.seq)
		}
	}
	s.unknown = keep
	for _, p := range s.parts {
		s.placeAhead(p, f)
	}
}

// placeAhead settles the marks of p's offsets past its end once a fence
// taken after they were read (f) says where the end is: those still past
// it name no record, and are unexpected.
func (s *state) placeAhead(p *srcPart, f *fence) {
	if p.aheadSeq != 0 && p.aheadSeq <= f.seq {
		for o := max(p.aheadFrom, p.end); ; {
			c, i := p.win.at(o, false)
			if c == nil {
				if o-p.win.base >= int64(len(p.win.chunks))<<chunkShift {
					break
				}
				o = (o | (chunkSize - 1)) + 1
				continue
			}
			for ; i < chunkSize; i, o = i+1, o+1 {
				if c.marks[i] == 0 && c.fanAt(i).Seen == 0 {
					continue
				}
				n := c.marks[i].Outputs() + c.marks[i].DeadLetters()
				p.rep.Unexpected += n
				s.m.unexpected.WithLabelValues(p.labels()...).Add(float64(n))
				c.marks[i] = 0
				if c.fan != nil {
					c.fan[i] = audit.FanOut{}
				}
			}
		}
		p.aheadSeq = 0
	}
	for o, h := range p.far {
		if h.seq > f.seq {
			continue
		}
		delete(p.far, o)
		if o >= p.end {
			p.rep.Unexpected += h.marks.Outputs() + h.marks.DeadLetters()
			s.m.unexpected.WithLabelValues(p.labels()...).Add(float64(h.marks.Outputs() + h.marks.DeadLetters()))
			continue
		}
		s.count(p, o, *h, h.seq)
	}
}

// settled says whether fence f can be judged: every reader is at its
// bound. why names one that is not.
func (s *state) settled(f *fence) (ok bool, why string) {
	for at, end := range f.outEnd {
		if s.outPos[at] < end {
			return false, at.topic + "[" + itoa(at.partition) + "] read to " + i64toa(s.outPos[at]) + " of " + i64toa(end)
		}
	}
	for at, spso := range f.spso {
		if p := s.parts[at]; p != nil && p.pos < spso {
			return false, "source " + at.topic + "[" + itoa(at.partition) + "] read to " + i64toa(p.pos) + " of " + i64toa(spso)
		}
	}
	return true, ""
}

// judge judges every source offset below fence f's spso and frees what
// it held of them.
func (s *state) judge(f *fence) {
	for at, spso := range f.spso {
		p := s.parts[at]
		if p == nil || spso <= p.judged {
			continue
		}
		before := p.rep
		for o := p.judged; o < spso; {
			c, i := p.win.at(o, false)
			if c == nil {
				o = (o | (chunkSize - 1)) + 1 // nothing known of the rest of this chunk
				continue
			}
			for ; i < chunkSize && o < spso; i, o = i+1, o+1 {
				p.rep.Add(audit.Judge(c.marks[i], c.fanAt(i), c.isRecord(i), s.atMostOnce), o)
			}
		}
		p.judged = spso
		p.win.advance(spso)
		s.m.judgedDelta(p, before)
	}
	s.judgedAt = f.taken
	s.m.judgedUpTo(f.taken)
	for at, p := range s.parts {
		s.m.lagRecords.WithLabelValues(at.topic, itoa(at.partition)).Set(float64(max(0, p.end-p.judged)))
	}
}

// bounds returns how far each reader needs to read for fence f, and for
// the fence reached before it (nil: none): the source partitions to their
// spso (none past what is judged when the group has none), the outputs
// and dead letters to f's ends.
func (s *state) bounds(f, reached *fence) (src, out map[tp]int64) {
	src = map[tp]int64{}
	for at, p := range s.parts {
		src[at] = p.judged
		for _, g := range []*fence{f, reached} {
			if spso, ok := g.spsoOf(at); ok {
				src[at] = max(src[at], spso)
			}
		}
	}
	return src, f.outEnd
}

// spsoOf is partition at's start offset at fence f (a nil f has none).
func (f *fence) spsoOf(at tp) (int64, bool) {
	if f == nil {
		return 0, false
	}
	o, ok := f.spso[at]
	return o, ok
}

// heldBytes is the memory the state holds for unjudged offsets: the
// windows, and the marks held far ahead.
func (s *state) heldBytes() int {
	n := 0
	for _, p := range s.parts {
		n += p.win.bytes() + len(p.far)*64
	}
	return n
}

func (p *srcPart) labels() []string { return []string{p.topic, itoa(p.partition)} }
