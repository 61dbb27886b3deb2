package live

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sharerelay/sharerelay/audit"
	"github.com/sharerelay/sharerelay/lineage"
)

// checkpoint is what a restart resumes from: per source partition the
// judged watermark, the cumulative verdicts and the marks of the offsets
// not judged yet; per output and dead-letter partition the reader's
// position. The marks belong to the positions: everything below a
// position was read, and counted either in a verdict or in the marks, so
// the readers go on from the positions and the source reader from the
// judged watermarks, and nothing is counted twice or missed. (Resuming
// the outputs from the end of the last judged fence instead would miss
// outputs below it whose record the group had not acknowledged yet.)
type checkpoint struct {
	Version  int       `json:"version"`
	Pipeline string    `json:"pipeline"`
	Written  time.Time `json:"written"`
	// FromEnd: the audit started at the topics' ends (Config.FromEnd).
	FromEnd bool `json:"from_end"`
	// JudgedAt: every record the group had acknowledged by then is judged.
	JudgedAt time.Time  `json:"judged_at"`
	Sources  []cpSource `json:"sources"`
	Outputs  []cpOutput `json:"outputs"`
	// Foreign, Unlabelled and OutputRecords are the cumulative counts of
	// outputs naming no source partition, without lineage headers, and
	// read in all.
	Foreign       int        `json:"foreign"`
	Unlabelled    int        `json:"unlabelled"`
	OutputRecords int        `json:"output_records"`
	Replays       []cpReplay `json:"replays,omitempty"`
}

// checkpointVersion is the checkpoint's format; a restart refuses another.
const checkpointVersion = 1

type cpSource struct {
	Topic     string                `json:"topic"`
	Partition int32                 `json:"partition"`
	From      int64                 `json:"from"`
	Judged    int64                 `json:"judged"`
	Counts    audit.PartitionReport `json:"counts"`
	Late      int                   `json:"late"`
	Pending   []cpPending           `json:"pending,omitempty"`
}

// cpPending is what names one unjudged offset.
type cpPending struct {
	O int64         `json:"o"`
	M audit.Marks   `json:"m"`
	F *audit.FanOut `json:"f,omitempty"`
}

type cpOutput struct {
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
	Position  int64  `json:"position"`
}

type cpReplay struct {
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
	Offset    int64  `json:"offset"`
	audit.Replayed
}

// snapshot returns the state as a checkpoint.
func (s *state) snapshot(pipeline string) *checkpoint {
	cp := &checkpoint{Version: checkpointVersion, Pipeline: pipeline, Written: time.Now().UTC(), FromEnd: s.fromEnd,
		JudgedAt: s.judgedAt, Foreign: s.foreign, Unlabelled: s.unlabelled, OutputRecords: s.outputRecords}
	for _, at := range slices.SortedFunc(maps.Keys(s.parts), compareTP) {
		p := s.parts[at]
		cs := cpSource{Topic: at.topic, Partition: at.partition, From: p.from, Judged: p.judged, Counts: p.rep, Late: p.late}
		for k, c := range p.win.chunks {
			if c == nil {
				continue
			}
			base := p.win.base + int64(k)<<chunkShift
			for i := range chunkSize {
				o := base + int64(i)
				if f := c.fanAt(i); o >= p.judged && (c.marks[i] != 0 || f.Seen > 0) {
					cs.Pending = append(cs.Pending, pending(o, c.marks[i], f))
				}
			}
		}
		for _, o := range slices.Sorted(maps.Keys(p.far)) {
			cs.Pending = append(cs.Pending, pending(o, p.far[o].marks, p.far[o].fan))
		}
		cp.Sources = append(cp.Sources, cs)
	}
	for _, at := range slices.SortedFunc(maps.Keys(s.outPos), compareTP) {
		cp.Outputs = append(cp.Outputs, cpOutput{Topic: at.topic, Partition: at.partition, Position: s.outPos[at]})
	}
	// Outputs naming partitions no fence listed yet were read below the
	// positions: they are kept as pending of partitions of their own.
	for _, u := range s.unknown {
		cp.Sources = append(cp.Sources, cpSource{Topic: u.src.Topic, Partition: u.src.Partition, From: -1,
			Pending: []cpPending{pending(u.src.Offset, u.h.marks, u.h.fan)}})
	}
	for _, at := range slices.SortedFunc(maps.Keys(s.replays), func(a, b lineage.Source) int {
		return cmp.Or(cmp.Compare(a.Topic, b.Topic), cmp.Compare(a.Partition, b.Partition), cmp.Compare(a.Offset, b.Offset))
	}) {
		cp.Replays = append(cp.Replays, cpReplay{Topic: at.Topic, Partition: at.Partition, Offset: at.Offset, Replayed: *s.replays[at]})
	}
	return cp
}

// held is what pe holds, to be placed by the first fence.
func (pe cpPending) held() held {
	h := held{marks: pe.M}
	if pe.F != nil {
		h.fan = *pe.F
	}
	return h
}

func pending(o int64, m audit.Marks, f audit.FanOut) cpPending {
	p := cpPending{O: o, M: m}
	if f.Seen > 0 {
		p.F = &f
	}
	return p
}

// restore loads cp into a fresh state. Partitions of topics the pipeline
// no longer reads are dropped; the readers start at the returned
// positions once a fence lists the partitions.
func (s *state) restore(cp *checkpoint) error {
	if cp.Version != checkpointVersion {
		return fmt.Errorf("checkpoint version %d, this auditor reads %d", cp.Version, checkpointVersion)
	}
	s.fromEnd = cp.FromEnd
	s.judgedAt = cp.JudgedAt
	if !cp.JudgedAt.IsZero() {
		s.m.judgedUpTo(cp.JudgedAt)
	}
	s.foreign, s.unlabelled, s.outputRecords = cp.Foreign, cp.Unlabelled, cp.OutputRecords
	s.m.unexpected.WithLabelValues("", "").Add(float64(cp.Foreign))
	s.m.unlabelled.Add(float64(cp.Unlabelled))
	for _, cs := range cp.Sources {
		if !s.sources[cs.Topic] {
			continue
		}
		at := tp{cs.Topic, cs.Partition}
		if cs.From < 0 { // held for want of a fence
			for _, pe := range cs.Pending {
				s.unknown = append(s.unknown, heldRecord{lineage.Source{Topic: cs.Topic, Partition: cs.Partition, Offset: pe.O}, pe.held()})
			}
			continue
		}
		p := &srcPart{tp: at, from: cs.From, judged: cs.Judged, pos: cs.Judged, end: cs.Judged, win: newWindow(cs.Judged), rep: cs.Counts, late: cs.Late}
		p.rep.Topic, p.rep.Partition = at.topic, at.partition
		s.parts[at] = p
		s.m.partition(p)
		// Placed by the first fence, which reads the partition's end.
		for _, pe := range cs.Pending {
			s.count(p, pe.O, pe.held(), 1)
		}
	}
	for _, o := range cp.Outputs {
		s.outPos[tp{o.Topic, o.Partition}] = o.Position
	}
	for _, r := range cp.Replays {
		x := r.Replayed
		s.replays[lineage.Source{Topic: r.Topic, Partition: r.Partition, Offset: r.Offset}] = &x
		v := x.Judge()
		labels := []string{r.Topic, itoa(r.Partition)}
		if v.Duplicated {
			s.m.duplicated.WithLabelValues(labels...).Inc()
		}
		if v.Both {
			s.m.both.WithLabelValues(labels...).Inc()
		}
	}
	return nil
}

// Store keeps the auditor's checkpoint.
type Store interface {
	// Load returns the checkpoint saved last, or nil when there is none.
	Load(ctx context.Context) ([]byte, error)
	// Save replaces the checkpoint.
	Save(ctx context.Context, b []byte) error
	// String says where the checkpoint is, for the logs.
	String() string
}

// CheckpointTopic is the default checkpoint topic of pipeline name: on
// the sink cluster, compacted, one record per audit.
func CheckpointTopic(name string) string { return name + ".audit" }

// TopicStore keeps the checkpoint in a compacted topic, one record keyed
// by the audit's name (so several audits may share a topic); it creates
// the topic when it is missing: one partition, cleanup.policy=compact,
// replicated on min(3, brokers). opts reach the cluster (the sink).
func TopicStore(opts []kgo.Opt, topic, name string) Store {
	return &topicStore{opts: opts, topic: topic, key: name}
}

type topicStore struct {
	opts       []kgo.Opt
	topic, key string
	cl         *kgo.Client
}

func (t *topicStore) String() string { return "topic " + t.topic + ", key " + t.key }

// maxCheckpointBytes is the largest checkpoint the topic takes; the
// marks of a large in-flight window (many partitions, many unjudged
// fan-outs) can pass Kafka's default of 1 MiB.
const maxCheckpointBytes = 16 << 20

func (t *topicStore) client() (*kgo.Client, error) {
	if t.cl != nil {
		return t.cl, nil
	}
	cl, err := kgo.NewClient(append(append([]kgo.Opt{}, t.opts...), kgo.ProducerBatchMaxBytes(maxCheckpointBytes),
		kgo.MaxBufferedRecords(4), kgo.RecordRetries(5))...)
	if err != nil {
		return nil, fmt.Errorf("checkpoint: %w", err)
	}
	t.cl = cl
	return cl, nil
}

func (t *topicStore) Load(ctx context.Context) ([]byte, error) {
	cl, err := t.client()
	if err != nil {
		return nil, err
	}
	created, err := t.ensure(ctx, kadm.NewClient(cl))
	if err != nil || created {
		return nil, err // a topic just created holds no checkpoint
	}
	ends, err := kadm.NewClient(cl).ListEndOffsets(ctx, t.topic)
	if err == nil {
		err = ends.Error()
	}
	if err != nil {
		return nil, fmt.Errorf("checkpoint: listing the end of %s: %w", t.topic, err)
	}
	want := map[string]map[int32]kgo.Offset{t.topic: {}}
	remaining := 0
	ends.Each(func(o kadm.ListedOffset) {
		if o.Offset > 0 {
			want[t.topic][o.Partition] = kgo.NewOffset().AtStart()
			remaining++
		}
	})
	if remaining == 0 {
		return nil, nil
	}
	rd, err := kgo.NewClient(append(append([]kgo.Opt{}, t.opts...), kgo.ConsumePartitions(want), kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.KeepControlRecords(), kgo.FetchMaxWait(500*time.Millisecond))...)
	if err != nil {
		return nil, fmt.Errorf("checkpoint: %w", err)
	}
	defer rd.Close()
	var last []byte
	for remaining > 0 {
		fs := rd.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("checkpoint: reading %s: %w", t.topic, err)
		}
		var ferr error
		fs.EachError(func(_ string, p int32, err error) {
			ferr = fmt.Errorf("checkpoint: reading %s[%d]: %w", t.topic, p, err)
		})
		if ferr != nil {
			return nil, ferr
		}
		fs.EachRecord(func(r *kgo.Record) {
			end, _ := ends.Lookup(r.Topic, r.Partition)
			if r.Offset >= end.Offset {
				return
			}
			if r.Offset == end.Offset-1 {
				remaining--
			}
			if !r.Attrs.IsControl() && string(r.Key) == t.key {
				last = r.Value // a tombstone (nil) resets the audit
			}
		})
	}
	return last, nil
}

// ensure creates the checkpoint topic when it is missing, and says
// whether it did.
func (t *topicStore) ensure(ctx context.Context, adm *kadm.Client) (created bool, err error) {
	td, err := adm.ListTopics(ctx, t.topic)
	if err != nil {
		return false, fmt.Errorf("checkpoint: looking up %s: %w", t.topic, err)
	}
	if d, ok := td[t.topic]; ok && d.Err == nil {
		return false, nil
	}
	brokers, err := adm.ListBrokers(ctx)
	if err != nil {
		return false, fmt.Errorf("checkpoint: listing brokers: %w", err)
	}
	rf := int16(max(1, min(3, len(brokers))))
	cfg := map[string]*string{
		"cleanup.policy":    kadm.StringPtr("compact"),
		"max.message.bytes": kadm.StringPtr(strconv.Itoa(maxCheckpointBytes)),
	}
	resp, err := adm.CreateTopic(ctx, 1, rf, cfg, t.topic)
	if err == nil {
		err = resp.Err
	}
	switch {
	case errors.Is(err, kerr.TopicAlreadyExists):
		return false, nil // created meanwhile, by another auditor
	case err != nil:
		return false, fmt.Errorf("checkpoint: creating %s: %w", t.topic, err)
	}
	return true, nil
}

func (t *topicStore) Save(ctx context.Context, b []byte) error {
	cl, err := t.client()
	if err != nil {
		return err
	}
	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: t.topic, Key: []byte(t.key), Value: b}).FirstErr(); err != nil {
		return fmt.Errorf("checkpoint: writing to %s: %w", t.topic, err)
	}
	return nil
}

// Close closes the store's client; a later Load or Save makes another.
func (t *topicStore) Close() {
	if t.cl != nil {
		t.cl.Close()
		t.cl = nil
	}
}

// FileStore keeps the checkpoint in a file, replaced atomically (written
// beside it, then renamed).
func FileStore(path string) Store { return fileStore(path) }

type fileStore string

func (f fileStore) String() string { return "file " + string(f) }

func (f fileStore) Load(context.Context) ([]byte, error) {
	b, err := os.ReadFile(string(f))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("checkpoint: %w", err)
	}
	return b, nil
}

func (f fileStore) Save(_ context.Context, b []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(string(f)), filepath.Base(string(f))+".*")
	if err != nil {
		return fmt.Errorf("checkpoint: %w", err)
	}
	_, err = tmp.Write(b)
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), string(f))
	}
	if err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("checkpoint: %w", err)
	}
	return nil
}

func encodeCheckpoint(cp *checkpoint) ([]byte, error) { return json.Marshal(cp) }

func decodeCheckpoint(b []byte) (*checkpoint, error) {
	var cp checkpoint
	if err := json.Unmarshal(b, &cp); err != nil {
		return nil, fmt.Errorf("checkpoint: %w", err)
	}
	return &cp, nil
}
