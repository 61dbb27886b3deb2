package audit

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"slices"
	"sort"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sharerelay/sharerelay/lineage"
)

// VerifyConfig says what a pipeline reads and writes, and where.
type VerifyConfig struct {
	// ClientOpts must include the seed brokers. They reach the sink
	// cluster: the outputs, the dead letters and the claim ledger.
	ClientOpts []kgo.Opt
	// SourceClientOpts reach the cluster the sources and the share
	// group are on (a pipeline's source.cluster): the sources, their
	// start and end offsets, and the group's lag are read with them.
	// Empty: ClientOpts, the pipeline is on one cluster.
	SourceClientOpts []kgo.Opt
	// Clusters, when set, names the two clusters of a pipeline whose
	// source is on a cluster of its own: the report says which side was
	// read from which, and an error reaching one side names it. Nil:
	// one cluster, and errors as they are.
	Clusters *Clusters
	// Sources are the source topics; SourceCommitted reads them
	// read_committed (the share group's share.isolation.level).
	Sources         []string
	SourceCommitted bool
	// Outputs are every topic the pipeline can write outputs to.
	Outputs []string
	// DeadLetter is the dead-letter topic.
	DeadLetter string
	// Group is the share group, for its lag; empty skips the lag.
	Group string
	// AtMostOnce: the pipeline can drop records (transform.MayDrop: a
	// filter, a split of an empty array), so a source record may rightly
	// have no output; records without any are counted as Filtered, not
	// Lost.
	AtMostOnce bool
	// Ledger is the claim ledger topic of an exactly-once pipeline and
	// Generation its generation; empty skips the ledger report.
	Ledger     string
	Generation int64
}

// Clusters names the two clusters of a pipeline that reads its source on
// one and writes on another, e.g. by their seed brokers.
type Clusters struct {
	// Source is where the sources and the share group are; Sink where
	// the outputs, dead letters and claim ledger are.
	Source string `json:"source"`
	Sink   string `json:"sink"`
}

// sourceOpts are the client options that reach the source cluster.
func (cfg *VerifyConfig) sourceOpts() []kgo.Opt {
	if len(cfg.SourceClientOpts) == 0 {
		return cfg.ClientOpts
	}
	return cfg.SourceClientOpts
}

// onSource and onSink name the cluster err came from when the pipeline
// spans two: "source cluster: …" says which connection to look at.
func (cfg *VerifyConfig) onSource(err error) error { return cfg.on("source", err) }
func (cfg *VerifyConfig) onSink(err error) error   { return cfg.on("sink", err) }

func (cfg *VerifyConfig) on(side string, err error) error {
	if err == nil || cfg.Clusters == nil {
		return err
	}
	return fmt.Errorf("%s cluster: %w", side, err)
}

// PartitionReport is the verdict for one source partition (or the totals).
type PartitionReport struct {
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
	// Sources is the number of source records up to the snapshot.
	Sources int `json:"sources"`
	// Output and DeadLettered count the source records with at least one
	// output / dead letter.
	Output       int `json:"output"`
	DeadLettered int `json:"dead_lettered"`
	// Lost: never in output ∪ dead letters (Filtered instead when the
	// pipeline filters).
	Lost     int `json:"lost"`
	Filtered int `json:"filtered"`
	// Duplicated: in the output more than once, or dead-lettered more
	// than once.
	Duplicated int `json:"duplicated"`
	// Both: in the output and in the dead letters.
	Both int `json:"both"`
	// Incomplete: a fan-out with fewer outputs than it names
	// (sharerelay.source.count): some of a record's outputs are lost.
	Incomplete int `json:"incomplete"`
	// Unexpected: outputs or dead letters whose source record does not
	// exist.
	Unexpected int `json:"unexpected"`
	// Lag is the share group's remaining lag on this partition.
	Lag int64 `json:"lag"`
	// Samples of offsets, for a person to look at.
	LostSample       []int64 `json:"lost_sample,omitempty"`
	DuplicatedSample []int64 `json:"duplicated_sample,omitempty"`
	IncompleteSample []int64 `json:"incomplete_sample,omitempty"`
}

// Report is what Verify found.
type Report struct {
	Partitions []PartitionReport `json:"partitions"`
	Total      PartitionReport   `json:"total"`
	// Records read from the output and dead-letter topics read_committed,
	// and how many more read_uncommitted shows (aborted writes).
	OutputRecords  int `json:"output_records"`
	AbortedRecords int `json:"aborted_records"`
	// Unlabelled output records (no sharerelay.source.* headers).
	Unlabelled int `json:"unlabelled"`
	// BeyondSnapshot counts outputs of source records appended after the
	// source snapshot was taken (the pipeline was still running).
	BeyondSnapshot int `json:"beyond_snapshot"`
	// Replays counts the records `relay dlq replay` wrote through the
	// chain: outputs and dead letters whose source is a dead letter.
	Replays *ReplayReport `json:"replays,omitempty"`
	// Ledger reports claims whose marker the broker lost (exactly-once
	// pipelines).
	Ledger *LedgerReport `json:"ledger,omitempty"`
	// Clusters names where each side was read from, for a pipeline on
	// two clusters (VerifyConfig.Clusters).
	Clusters *Clusters `json:"clusters,omitempty"`
	Check    string    `json:"check"`
	Exact    bool      `json:"exact"`
	Elapsed  string    `json:"elapsed"`
}

const sampleMax = 5

// ReplayReport counts what replays of dead letters wrote to the
// pipeline's outputs and dead-letter topic: records whose
// sharerelay.source.* name a dead letter (see lineage.HeaderReplayOfTopic).
// Each replayed dead letter must have its outputs once (a fan-out's
// indexes once each) or one dead letter again, like a source record.
type ReplayReport struct {
	// DeadLetters is the number of dead letters with a replay's record.
	DeadLetters int `json:"dead_letters"`
	// Output and DeadLettered count the dead letters replayed to outputs
	// and dead-lettered again; Outputs the output records.
	Output       int `json:"output"`
	Outputs      int `json:"outputs"`
	DeadLettered int `json:"dead_lettered"`
	// Duplicated: a dead letter replayed more than once (an output index
	// twice, or dead-lettered again twice); Both: to outputs and
	// dead-lettered again.
	Duplicated       int      `json:"duplicated"`
	Both             int      `json:"both"`
	DuplicatedSample []string `json:"duplicated_sample,omitempty"`
}

// replayed is what the records naming one dead letter showed.
type replayed struct {
	outs    map[int]int // per fan-out index
	n       int         // the fan-out count they name (-1: disagreeing)
	letters int
}

func (r *Report) countReplay(seen map[lineage.Source]*replayed, rec *kgo.Record, at lineage.Source, dlq bool) {
	x := seen[at]
	if x == nil {
		x = &replayed{outs: map[int]int{}}
		seen[at] = x
	}
	if dlq {
		x.letters++
		return
	}
	i, n, ok := lineage.IndexOf(rec)
	if !ok || x.n != 0 && x.n != n {
		n = -1
	}
	x.n = n
	x.outs[i]++
}

func (r *Report) judgeReplays(seen map[lineage.Source]*replayed) {
	if len(seen) == 0 {
		return
	}
	rr := &ReplayReport{DeadLetters: len(seen)}
	for _, at := range slices.SortedFunc(maps.Keys(seen), func(a, b lineage.Source) int {
		return cmp.Or(cmp.Compare(a.Partition, b.Partition), cmp.Compare(a.Offset, b.Offset))
	}) {
		x := seen[at]
		dup := x.letters > 1 || x.n < 0
		for _, c := range x.outs {
			rr.Outputs += c
			dup = dup || c > 1
		}
		if len(x.outs) > 0 {
			rr.Output++
		}
		if x.letters > 0 {
			rr.DeadLettered++
		}
		if len(x.outs) > 0 && x.letters > 0 {
			rr.Both++
		}
		if dup {
			rr.Duplicated++
			if len(rr.DuplicatedSample) < sampleMax {
				rr.DuplicatedSample = append(rr.DuplicatedSample, fmt.Sprintf("%s[%d]@%d", at.Topic, at.Partition, at.Offset))
			}
		}
	}
	r.Replays = rr
}

// Verify audits a pipeline: it snapshots the source topics' ends, reads the
// sources, then the outputs and dead letters read_committed (and
// read_uncommitted, to count aborted writes), and judges every source
// record by the sharerelay.source.* headers. Run it once the pipeline is
// quiet (lag 0); a running pipeline shows as lag and lost records.
//
// The sources, their offsets and the group's lag are read on the source
// cluster (SourceClientOpts), everything the pipeline wrote on the sink
// cluster (ClientOpts).
//
// Memory is bounded by the source partitions' offset ranges, not by what
// was read: per source offset one bit (is it a record) and one byte (how
// many outputs and dead letters name it, 4 bits each, saturating) —
// about 1.1 bytes per source offset whatever the output volume.
func Verify(ctx context.Context, cfg VerifyConfig) (*Report, error) {
	start := time.Now()
	src, err := readSources(ctx, cfg.sourceOpts(), cfg.SourceCommitted, cfg.Sources)
	if err != nil {
		return nil, cfg.onSource(err)
	}
	r := &Report{Check: "exactly once per source record", Clusters: cfg.Clusters}
	if cfg.AtMostOnce {
		r.Check = "at most once per source record (the pipeline filters)"
	}
	out := &outputCounter{r: r, src: src, deadLetter: cfg.DeadLetter, replays: map[lineage.Source]*replayed{}}
	if err := r.readOutputs(ctx, cfg, out); err != nil {
		return nil, cfg.onSink(err)
	}
	// Source ends again, now: an output whose source offset is past even
	// these never had a source record (unexpected); one between the two
	// snapshots came from a record appended while we read.
	later, err := sourceEnds(ctx, cfg.sourceOpts(), cfg.Sources)
	if err != nil {
		return nil, cfg.onSource(err)
	}
	lag, err := verifyLag(ctx, cfg)
	if err != nil {
		return nil, cfg.onSource(err)
	}

	for _, tp := range src.order {
		r.judgePartition(tp, src.parts[tp], lag[tp.topic][tp.partition], later[tp], cfg.AtMostOnce)
	}
	r.sumTotal(out.foreign)
	r.judgeReplays(out.replays)
	r.Exact = r.isExact()
	if cfg.Ledger != "" {
		if r.Ledger, err = ReadLedger(ctx, cfg.ClientOpts, cfg.Ledger, cfg.Generation); err != nil {
			return nil, cfg.onSink(err)
		}
	}
	r.Elapsed = time.Since(start).Round(time.Millisecond).String()
	return r, nil
}

// outputCounter counts the output and dead-letter records Verify reads
// against the source offsets their sharerelay.source.* headers name.
type outputCounter struct {
	r          *Report
	src        *sources
	deadLetter string
	// unlabelled: records without sharerelay.source.* headers; foreign:
	// records naming a partition that is neither a source nor the
	// dead-letter topic.
	unlabelled, foreign int
	// replays: records naming a dead letter (written by relay dlq replay).
	replays map[lineage.Source]*replayed
}

// counter returns the scan callback that counts an output record (dlq
// false) or a dead letter (dlq true).
func (c *outputCounter) counter(dlq bool) func(*kgo.Record) {
	return func(rec *kgo.Record) {
		if rec.Attrs.IsControl() {
			return
		}
		c.r.OutputRecords++
		s, ok := lineage.SourceOf(rec)
		if !ok {
			c.unlabelled++
			return
		}
		p := c.src.parts[topicPartition{s.Topic, s.Partition}]
		switch {
		case s.Topic == c.deadLetter && (p == nil || isReplay(rec)):
			c.r.countReplay(c.replays, rec, s, dlq) // written by relay dlq replay
		case p == nil:
			c.foreign++
		case !p.count(s.Offset, dlq):
			p.outside(s.Offset)
		case !dlq:
			if i, n, ok := lineage.IndexOf(rec); !ok || n > 1 {
				p.fanOut(s.Offset, i, n, ok)
			}
		}
	}
}

// isReplay reports whether rec was written by relay dlq replay (it has
// sharerelay.replay.* headers). Across clusters the dead-letter topic may
// carry a source topic's name; these headers then tell the records naming
// a dead letter from those naming a source record.
func isReplay(rec *kgo.Record) bool {
	_, _, ok := lineage.ReplayOf(rec)
	return ok
}

// readOutputs reads the outputs, then the dead letters, read_committed into
// c, then both read_uncommitted to count the aborted records.
func (r *Report) readOutputs(ctx context.Context, cfg VerifyConfig, c *outputCounter) error {
	if err := scan(ctx, cfg.ClientOpts, true, cfg.Outputs, nil, c.counter(false)); err != nil {
		return err
	}
	if err := scan(ctx, cfg.ClientOpts, true, []string{cfg.DeadLetter}, nil, c.counter(true)); err != nil {
		return err
	}
	uncommitted := 0
	if err := scan(ctx, cfg.ClientOpts, false, append(append([]string{}, cfg.Outputs...), cfg.DeadLetter), nil, func(rec *kgo.Record) {
		if !rec.Attrs.IsControl() {
			uncommitted++
		}
	}); err != nil {
		return err
	}
	r.AbortedRecords = uncommitted - r.OutputRecords
	r.Unlabelled = c.unlabelled
	return nil
}

// verifyLag returns the share group's lag on the sources, read on the
// source cluster, or nil when cfg names no group.
func verifyLag(ctx context.Context, cfg VerifyConfig) (map[string]map[int32]int64, error) {
	if cfg.Group == "" {
		return nil, nil
	}
	cl, err := kgo.NewClient(cfg.sourceOpts()...)
	if err != nil {
		return nil, fmt.Errorf("audit: %w", err)
	}
	lag, err := ShareGroupLag(ctx, kadm.NewClient(cl), cfg.Group, cfg.Sources...)
	cl.Close()
	if err != nil {
		return nil, err
	}
	return lag, nil
}

// judgePartition judges every offset of source partition tp and appends
// its report; later is the partition's end after the outputs were read.
func (r *Report) judgePartition(tp topicPartition, p *sourcePart, lag, later int64, atMostOnce bool) {
	pr := PartitionReport{Topic: tp.topic, Partition: tp.partition, Lag: lag}
	for i := range p.counts {
		pr.judgeOffset(p, i, atMostOnce)
	}
	pr.Unexpected += p.before
	for _, o := range p.beyond {
		if o < later {
			r.BeyondSnapshot++
		} else {
			pr.Unexpected++
		}
	}
	r.Partitions = append(r.Partitions, pr)
}

// judgeOffset counts the verdict on offset p.start+i into pr.
func (pr *PartitionReport) judgeOffset(p *sourcePart, i int, atMostOnce bool) {
	o := p.start + int64(i)
	no, nd := p.outputs(i), p.deadLetters(i)
	if !p.isRecord(i) {
		if no+nd > 0 {
			pr.Unexpected++ // an output of an offset that is no record
		}
		return
	}
	pr.Sources++
	if p.fan != nil && p.fan[i].n != 0 {
		no = pr.judgeFanOut(p.fan[i], o)
	}
	if no > 0 {
		pr.Output++
	}
	if nd > 0 {
		pr.DeadLettered++
	}
	switch {
	case no == 0 && nd == 0 && atMostOnce:
		pr.Filtered++
	case no == 0 && nd == 0:
		pr.Lost++
		if len(pr.LostSample) < sampleMax {
			pr.LostSample = append(pr.LostSample, o)
		}
	}
	if no > 1 || nd > 1 {
		pr.Duplicated++
		if len(pr.DuplicatedSample) < sampleMax {
			pr.DuplicatedSample = append(pr.DuplicatedSample, o)
		}
	}
	if no > 0 && nd > 0 {
		pr.Both++
	}
}

// judgeFanOut judges the outputs of a fan-out of source offset o: exactly
// its count of outputs, each index once. It counts an incomplete one into
// pr and returns the number of outputs to judge the record by: 2 (counted
// duplicated) or 1.
func (pr *PartitionReport) judgeFanOut(f fanState, o int64) int {
	switch {
	case f.n < 0 || f.seen > uint32(f.n) || f.seen == uint32(f.n) && f.xor != fanXor(int(f.n)):
		return 2 // counted duplicated by the caller
	case f.seen < uint32(f.n):
		pr.Incomplete++
		if len(pr.IncompleteSample) < sampleMax {
			pr.IncompleteSample = append(pr.IncompleteSample, o)
		}
		return 1
	default:
		return 1
	}
}

// sumTotal adds the partitions' reports into r.Total, with foreign (the
// records naming no source partition) as unexpected.
func (r *Report) sumTotal(foreign int) {
	tot := &r.Total
	tot.Topic = "total"
	tot.Partition = -1
	for _, pr := range r.Partitions {
		tot.Sources += pr.Sources
		tot.Output += pr.Output
		tot.DeadLettered += pr.DeadLettered
		tot.Lost += pr.Lost
		tot.Filtered += pr.Filtered
		tot.Duplicated += pr.Duplicated
		tot.Both += pr.Both
		tot.Incomplete += pr.Incomplete
		tot.Unexpected += pr.Unexpected
		tot.Lag += pr.Lag
	}
	tot.Unexpected += foreign
}

// isExact says whether the totals and the replays show every source record
// handled exactly once (or at most once, see Check), and nothing more.
func (r *Report) isExact() bool {
	tot := &r.Total
	return tot.Lost == 0 && tot.Duplicated == 0 && tot.Both == 0 && tot.Incomplete == 0 && tot.Unexpected == 0 && tot.Lag == 0 && r.Unlabelled == 0 &&
		(r.Replays == nil || r.Replays.Duplicated == 0 && r.Replays.Both == 0)
}

type topicPartition struct {
	topic     string
	partition int32
}

// sources are the source partitions up to a snapshot of their ends, each
// with its dense counters.
type sources struct {
	order []topicPartition
	parts map[topicPartition]*sourcePart
}

// sourcePart is one source partition's offsets [start, start+len(counts)):
// which are records, and how many outputs and dead letters name each.
type sourcePart struct {
	start  int64
	counts []byte     // low nibble: outputs; high nibble: dead letters (saturating at 15)
	record []uint64   // bit set: the offset is a data record
	fan    []fanState // allocated when the partition's records fan out
	before int        // outputs of offsets below start (deleted by retention, or never records)
	beyond []int64    // outputs of offsets at or past the snapshot's end (few: the pipeline ran on)
}

func (p *sourcePart) isRecord(i int) bool { return p.record[i/64]&(1<<(i%64)) != 0 }
func (p *sourcePart) outputs(i int) int   { return int(p.counts[i] & 0x0f) }
func (p *sourcePart) deadLetters(i int) int {
	return int(p.counts[i] >> 4)
}

// count adds an output (or dead letter) of source offset o; it returns
// false when o is outside the snapshot's range.
func (p *sourcePart) count(o int64, dlq bool) bool {
	i := o - p.start
	if i < 0 || i >= int64(len(p.counts)) {
		return false
	}
	c := p.counts[i]
	if dlq {
		if c>>4 < 15 {
			c += 0x10
		}
	} else if c&0x0f < 15 {
		c++
	}
	p.counts[i] = c
	return true
}

// fanState is what the outputs of one source record's fan-out showed:
// the count they name (-1 when they disagree, or a label is malformed),
// how many were seen, and the XOR of a mix of their indexes — equal to
// fanXor(n) when each index 0..n-1 was seen once (a duplicate with a
// missing index, same count, is caught with high probability).
type fanState struct {
	n    int32
	seen uint32
	xor  uint64
}

// fanOut counts output index of n of source offset o (ok false: a
// malformed label).
func (p *sourcePart) fanOut(o int64, index, n int, ok bool) {
	i := o - p.start
	if p.fan == nil {
		p.fan = make([]fanState, len(p.counts))
	}
	f := &p.fan[i]
	switch {
	case !ok || f.n != 0 && int(f.n) != n:
		f.n = -1
	case f.n == 0:
		f.n = int32(n)
	}
	f.seen++
	f.xor ^= mix(uint64(index))
}

// mix is SplitMix64's finaliser: a cheap, well-spread hash of an index.
func mix(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ x>>30) * 0xbf58476d1ce4e5b9
	x = (x ^ x>>27) * 0x94d049bb133111eb
	return x ^ x>>31
}

// fanXor is the fanState.xor of a complete fan-out of n outputs.
func fanXor(n int) uint64 {
	var x uint64
	for i := range n {
		x ^= mix(uint64(i))
	}
	return x
}

// outside records an output of offset o, outside the snapshot's range.
func (p *sourcePart) outside(o int64) {
	if o < p.start {
		p.before++
	} else {
		p.beyond = append(p.beyond, o)
	}
}

// readSources snapshots the source topics' start and end offsets and
// marks which offsets in between are data records (those a share group
// with that isolation level delivers).
func readSources(ctx context.Context, opts []kgo.Opt, committed bool, topics []string) (*sources, error) {
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return nil, fmt.Errorf("audit: %w", err)
	}
	starts, err := kadm.NewClient(cl).ListStartOffsets(ctx, topics...)
	cl.Close()
	if err == nil {
		err = starts.Error()
	}
	if err != nil {
		return nil, fmt.Errorf("audit: listing start offsets of %v: %w", topics, err)
	}
	s := &sources{parts: make(map[topicPartition]*sourcePart)}
	err = scan(ctx, opts, committed, topics, func(ends kadm.ListedOffsets) {
		ends.Each(func(o kadm.ListedOffset) {
			tp := topicPartition{o.Topic, o.Partition}
			from := int64(0)
			if so, ok := starts.Lookup(o.Topic, o.Partition); ok {
				from = min(so.Offset, o.Offset)
			}
			n := o.Offset - from
			s.order = append(s.order, tp)
			s.parts[tp] = &sourcePart{start: from, counts: make([]byte, n), record: make([]uint64, (n+63)/64)}
		})
		sort.Slice(s.order, func(i, j int) bool {
			a, b := s.order[i], s.order[j]
			return a.topic < b.topic || a.topic == b.topic && a.partition < b.partition
		})
	}, func(r *kgo.Record) {
		if r.Attrs.IsControl() {
			return
		}
		p := s.parts[topicPartition{r.Topic, r.Partition}]
		if i := r.Offset - p.start; i >= 0 && i < int64(len(p.counts)) {
			p.record[i/64] |= 1 << (i % 64)
		}
	})
	return s, err
}

// sourceEnds returns the topics' high watermarks.
func sourceEnds(ctx context.Context, opts []kgo.Opt, topics []string) (map[topicPartition]int64, error) {
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return nil, fmt.Errorf("audit: %w", err)
	}
	defer cl.Close()
	ends, err := kadm.NewClient(cl).ListEndOffsets(ctx, topics...)
	if err == nil {
		err = ends.Error()
	}
	if err != nil {
		return nil, fmt.Errorf("audit: listing end offsets of %v: %w", topics, err)
	}
	out := make(map[topicPartition]int64)
	ends.Each(func(o kadm.ListedOffset) { out[topicPartition{o.Topic, o.Partition}] = o.Offset })
	return out, nil
}
