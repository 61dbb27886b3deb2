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

func (r *Report) judgeReplays(seen map[lineage.Source]*Replayed) {
	if len(seen) == 0 {
		return
	}
	rr := &ReplayReport{}
	for _, at := range slices.SortedFunc(maps.Keys(seen), func(a, b lineage.Source) int {
		return cmp.Or(cmp.Compare(a.Partition, b.Partition), cmp.Compare(a.Offset, b.Offset))
	}) {
		rr.Add(seen[at].Judge(), at)
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
	out := &outputCounter{r: r, src: src, deadLetter: cfg.DeadLetter, replays: map[lineage.Source]*Replayed{}}
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
	replays map[lineage.Source]*Replayed
}

// counter returns the scan callback that counts an output record (dlq
// false) or a dead letter (dlq true).
func (c *outputCounter) counter(dlq bool) func(*kgo.Record) {
	isSource := func(topic string, partition int32) bool { return c.src.parts[topicPartition{topic, partition}] != nil }
	return func(rec *kgo.Record) {
		if rec.Attrs.IsControl() {
			return
		}
		c.r.OutputRecords++
		a := Attribute(rec, dlq, c.deadLetter, isSource)
		switch a.Kind {
		case Unlabelled:
			c.unlabelled++
		case Replay: // written by relay dlq replay
			x := c.replays[a.Source]
			if x == nil {
				x = &Replayed{}
				c.replays[a.Source] = x
			}
			x.Add(rec, dlq)
		case Foreign:
			c.foreign++
		default:
			p := c.src.parts[topicPartition{a.Source.Topic, a.Source.Partition}]
			switch {
			case !p.count(a.Source.Offset, dlq):
				p.outside(a.Source.Offset)
			case a.Numbered:
				p.fanOut(a)
			}
		}
	}
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
	var f FanOut
	if p.fan != nil {
		f = p.fan[i]
	}
	pr.Add(Judge(p.counts[i], f, p.isRecord(i), atMostOnce), p.start+int64(i))
}

// sumTotal adds the partitions' reports into r.Total, with foreign (the
// records naming no source partition) as unexpected.
func (r *Report) sumTotal(foreign int) {
	tot := &r.Total
	tot.Topic = "total"
	tot.Partition = -1
	for _, pr := range r.Partitions {
		tot.AddCounts(pr)
	}
	tot.Unexpected += foreign
}

// AddCounts adds the counts of other (not its samples) to pr: a total
// over partitions.
func (pr *PartitionReport) AddCounts(other PartitionReport) {
	pr.Sources += other.Sources
	pr.Output += other.Output
	pr.DeadLettered += other.DeadLettered
	pr.Lost += other.Lost
	pr.Filtered += other.Filtered
	pr.Duplicated += other.Duplicated
	pr.Both += other.Both
	pr.Incomplete += other.Incomplete
	pr.Unexpected += other.Unexpected
	pr.Lag += other.Lag
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
	counts []Marks  // outputs and dead letters naming each offset
	record []uint64 // bit set: the offset is a data record
	fan    []FanOut // allocated when the partition's records fan out
	before int      // outputs of offsets below start (deleted by retention, or never records)
	beyond []int64  // outputs of offsets at or past the snapshot's end (few: the pipeline ran on)
}

func (p *sourcePart) isRecord(i int) bool { return p.record[i/64]&(1<<(i%64)) != 0 }

// count adds an output (or dead letter) of source offset o; it returns
// false when o is outside the snapshot's range.
func (p *sourcePart) count(o int64, dlq bool) bool {
	i := o - p.start
	if i < 0 || i >= int64(len(p.counts)) {
		return false
	}
	p.counts[i] = p.counts[i].Add(dlq)
	return true
}

// fanOut counts a numbered output a of the partition.
func (p *sourcePart) fanOut(a Attribution) {
	if p.fan == nil {
		p.fan = make([]FanOut, len(p.counts))
	}
	p.fan[a.Source.Offset-p.start].Add(a.Index, a.N, a.IndexOK)
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
			s.parts[tp] = &sourcePart{start: from, counts: make([]Marks, n), record: make([]uint64, (n+63)/64)}
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
