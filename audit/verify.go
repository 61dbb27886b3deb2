package audit

import (
	"context"
	"fmt"
	"sort"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sharerelay/sharerelay/lineage"
)

// VerifyConfig says what a pipeline reads and writes.
type VerifyConfig struct {
	// ClientOpts must include the seed brokers.
	ClientOpts []kgo.Opt
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
	// AtMostOnce: the pipeline filters, so a source record may rightly
	// have no output; records without any are counted as Filtered, not
	// Lost.
	AtMostOnce bool
	// Ledger is the claim ledger topic of an exactly-once pipeline and
	// Generation its generation; empty skips the ledger report.
	Ledger     string
	Generation int64
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
	// Unexpected: outputs or dead letters whose source record does not
	// exist.
	Unexpected int `json:"unexpected"`
	// Lag is the share group's remaining lag on this partition.
	Lag int64 `json:"lag"`
	// Samples of offsets, for a person to look at.
	LostSample       []int64 `json:"lost_sample,omitempty"`
	DuplicatedSample []int64 `json:"duplicated_sample,omitempty"`
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
	// Ledger reports claims whose marker the broker lost (exactly-once
	// pipelines).
	Ledger  *LedgerReport `json:"ledger,omitempty"`
	Check   string        `json:"check"`
	Exact   bool          `json:"exact"`
	Elapsed string        `json:"elapsed"`
}

const sampleMax = 5

// Verify audits a pipeline: it snapshots the source topics' ends, reads the
// sources, then the outputs and dead letters read_committed (and
// read_uncommitted, to count aborted writes), and judges every source
// record by the sharerelay.source.* headers. Run it once the pipeline is
// quiet (lag 0); a running pipeline shows as lag and lost records.
func Verify(ctx context.Context, cfg VerifyConfig) (*Report, error) {
	start := time.Now()
	src, err := readSourceOffsets(ctx, cfg.ClientOpts, cfg.SourceCommitted, cfg.Sources)
	if err != nil {
		return nil, err
	}
	out, err := ReadCommitted(ctx, cfg.ClientOpts, cfg.Outputs...)
	if err != nil {
		return nil, err
	}
	dlq, err := ReadCommitted(ctx, cfg.ClientOpts, cfg.DeadLetter)
	if err != nil {
		return nil, err
	}
	all, err := ReadUncommitted(ctx, cfg.ClientOpts, append(append([]string{}, cfg.Outputs...), cfg.DeadLetter)...)
	if err != nil {
		return nil, err
	}
	// Source ends again, now: an output whose source offset is past even
	// these never had a source record (unexpected); one between the two
	// snapshots came from a record appended while we read.
	later, err := sourceEnds(ctx, cfg.ClientOpts, cfg.Sources)
	if err != nil {
		return nil, err
	}
	r := &Report{
		OutputRecords:  out.Records + dlq.Records,
		AbortedRecords: all.Records - out.Records - dlq.Records,
		Unlabelled:     out.Unlabelled + dlq.Unlabelled,
		Check:          "exactly once per source record",
	}
	if cfg.AtMostOnce {
		r.Check = "at most once per source record (the pipeline filters)"
	}
	var lag map[string]map[int32]int64
	if cfg.Group != "" {
		cl, err := kgo.NewClient(cfg.ClientOpts...)
		if err != nil {
			return nil, fmt.Errorf("audit: %w", err)
		}
		lag, err = ShareGroupLag(ctx, kadm.NewClient(cl), cfg.Group, cfg.Sources...)
		cl.Close()
		if err != nil {
			return nil, err
		}
	}

	at := make(map[topicPartition]int, len(src.order))
	for _, tp := range src.order {
		at[tp] = len(r.Partitions)
		offs := src.offsets[tp]
		pr := PartitionReport{Topic: tp.topic, Partition: tp.partition, Sources: len(offs), Lag: lag[tp.topic][tp.partition]}
		for _, o := range offs {
			s := lineage.Source{Topic: tp.topic, Partition: tp.partition, Offset: o}
			no, nd := out.BySource[s], dlq.BySource[s]
			if no > 0 {
				pr.Output++
			}
			if nd > 0 {
				pr.DeadLettered++
			}
			switch {
			case no == 0 && nd == 0 && cfg.AtMostOnce:
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
		r.Partitions = append(r.Partitions, pr)
	}
	unexpectedElsewhere := 0
	for _, t := range []Tally{out, dlq} {
		for s := range t.BySource {
			tp := topicPartition{s.Topic, s.Partition}
			i, known := at[tp]
			switch {
			case known && s.Offset >= src.ends[tp] && s.Offset < later[tp]:
				r.BeyondSnapshot++
			case known && s.Offset >= src.ends[tp]:
				r.Partitions[i].Unexpected++
			case known && !src.has(tp, s.Offset):
				r.Partitions[i].Unexpected++
			case !known:
				unexpectedElsewhere++
			}
		}
	}
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
		tot.Unexpected += pr.Unexpected
		tot.Lag += pr.Lag
	}
	tot.Unexpected += unexpectedElsewhere
	r.Exact = tot.Lost == 0 && tot.Duplicated == 0 && tot.Both == 0 && tot.Unexpected == 0 && tot.Lag == 0 && r.Unlabelled == 0
	if cfg.Ledger != "" {
		if r.Ledger, err = ReadLedger(ctx, cfg.ClientOpts, cfg.Ledger, cfg.Generation); err != nil {
			return nil, err
		}
	}
	r.Elapsed = time.Since(start).Round(time.Millisecond).String()
	return r, nil
}

type topicPartition struct {
	topic     string
	partition int32
}

// sourceOffsets are the data-record offsets of the source partitions up to
// a snapshot of their ends, in order.
type sourceOffsets struct {
	order   []topicPartition
	offsets map[topicPartition][]int64
	ends    map[topicPartition]int64
}

func (s *sourceOffsets) has(tp topicPartition, o int64) bool {
	offs := s.offsets[tp]
	i := sort.Search(len(offs), func(i int) bool { return offs[i] >= o })
	return i < len(offs) && offs[i] == o
}

// readSourceOffsets reads the source topics up to their current ends and
// keeps the offsets of their data records (the records a share group with
// that isolation level delivers).
func readSourceOffsets(ctx context.Context, opts []kgo.Opt, committed bool, topics []string) (*sourceOffsets, error) {
	s := &sourceOffsets{offsets: make(map[topicPartition][]int64), ends: make(map[topicPartition]int64)}
	err := scan(ctx, opts, committed, topics, func(ends kadm.ListedOffsets) {
		ends.Each(func(o kadm.ListedOffset) {
			tp := topicPartition{o.Topic, o.Partition}
			s.order = append(s.order, tp)
			s.ends[tp] = o.Offset
		})
		sort.Slice(s.order, func(i, j int) bool {
			a, b := s.order[i], s.order[j]
			return a.topic < b.topic || a.topic == b.topic && a.partition < b.partition
		})
	}, func(r *kgo.Record) {
		if r.Attrs.IsControl() {
			return
		}
		tp := topicPartition{r.Topic, r.Partition}
		s.offsets[tp] = append(s.offsets[tp], r.Offset)
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
