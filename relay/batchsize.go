package relay

import (
	"context"
	"encoding/binary"
	"fmt"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Sampling the source's record batches (SourceBatchRecords).
const (
	// batchSampleOffsets is how far back from each partition's end the
	// sample starts: the batches the source is written in now.
	batchSampleOffsets = 50_000
	// batchSampleBytes is how much of each partition the sample reads.
	batchSampleBytes = 4 << 20
)

// SourceBatchRecords returns the most offsets one record batch spans in
// the newest part of the topics' partitions (at most batchSampleBytes a
// partition, from batchSampleOffsets before its end), skipping
// transaction markers; 0 when the topics hold no records. A share fetch
// of whole batches (acquire mode batch_optimized) acquires a batch's
// whole offset range, so this is how far a poll may overshoot
// batch.max_records (AcquireModeFor).
func SourceBatchRecords(ctx context.Context, cl *kgo.Client, topics []string) (int, error) {
	adm := kadm.NewClient(cl)
	md, err := adm.Metadata(ctx, topics...)
	if err != nil {
		return 0, fmt.Errorf("sampling the source's record batches: %w", err)
	}
	starts, err := adm.ListStartOffsets(ctx, topics...)
	if err == nil {
		err = starts.Error()
	}
	if err != nil {
		return 0, fmt.Errorf("sampling the source's record batches: listing start offsets: %w", err)
	}
	ends, err := adm.ListEndOffsets(ctx, topics...)
	if err == nil {
		err = ends.Error()
	}
	if err != nil {
		return 0, fmt.Errorf("sampling the source's record batches: listing end offsets: %w", err)
	}
	// One fetch a leader, each partition read from its sample's start.
	reqs := map[int32]*kmsg.FetchRequest{}
	names := map[[16]byte]string{} // a Fetch answer since v13 names topics by ID
	for _, t := range md.Topics.Sorted() {
		names[t.ID] = t.Topic
		if t.Err != nil {
			return 0, fmt.Errorf("sampling the source's record batches: topic %s: %w", t.Topic, t.Err)
		}
		rt := kmsg.NewFetchRequestTopic()
		rt.Topic, rt.TopicID = t.Topic, t.ID
		for _, p := range t.Partitions.Sorted() {
			start, _ := starts.Lookup(t.Topic, p.Partition)
			end, _ := ends.Lookup(t.Topic, p.Partition)
			if end.Offset <= start.Offset {
				continue // empty
			}
			req := reqs[p.Leader]
			if req == nil {
				req = kmsg.NewPtrFetchRequest()
				req.ReplicaID = -1
				req.MaxWaitMillis = 0
				req.MinBytes = 0
				req.MaxBytes = 64 << 20
				req.SessionEpoch = -1 // no fetch session
				reqs[p.Leader] = req
			}
			if len(req.Topics) == 0 || req.Topics[len(req.Topics)-1].TopicID != t.ID {
				req.Topics = append(req.Topics, rt)
			}
			rp := kmsg.NewFetchRequestTopicPartition()
			rp.Partition = p.Partition
			rp.FetchOffset = max(start.Offset, end.Offset-batchSampleOffsets)
			rp.CurrentLeaderEpoch = -1
			rp.LogStartOffset = -1
			rp.PartitionMaxBytes = batchSampleBytes
			last := &req.Topics[len(req.Topics)-1]
			last.Partitions = append(last.Partitions, rp)
		}
	}
	most := 0
	for leader, req := range reqs {
		resp, err := req.RequestWith(ctx, cl.Broker(int(leader)))
		if err != nil {
			return 0, fmt.Errorf("sampling the source's record batches: fetching from broker %d: %w", leader, err)
		}
		if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
			return 0, fmt.Errorf("sampling the source's record batches: fetching from broker %d: %w", leader, err)
		}
		for _, t := range resp.Topics {
			name := t.Topic
			if name == "" {
				name = names[t.TopicID]
			}
			for _, p := range t.Partitions {
				if err := kerr.ErrorForCode(p.ErrorCode); err != nil {
					return 0, fmt.Errorf("sampling the source's record batches: %s[%d]: %w", name, p.Partition, err)
				}
				most = max(most, largestBatch(p.RecordBatches))
			}
		}
	}
	return most, nil
}

// largestBatch returns the most offsets one record batch in b spans
// (lastOffsetDelta + 1, the range a whole-batch acquisition takes, with
// the records compaction removed), skipping control batches (transaction
// markers) and a partial batch at the end (a fetch cuts at its byte
// limit). The header layout is the record batch's, magic 2 (KIP-98).
func largestBatch(b []byte) int {
	const (
		lengthAt     = 8  // batchLength int32, after baseOffset int64
		magicAt      = 16 // after partitionLeaderEpoch int32
		attributesAt = 21 // after magic int8 and crc int32
		deltaAt      = 23 // lastOffsetDelta int32
		headerLen    = 61 // through recordCount
		controlBit   = 0x20
	)
	most := 0
	for len(b) >= headerLen {
		size := 12 + int(int32(binary.BigEndian.Uint32(b[lengthAt:])))
		if size < headerLen || size > len(b) {
			break
		}
		if b[magicAt] == 2 && binary.BigEndian.Uint16(b[attributesAt:])&controlBit == 0 {
			most = max(most, int(int32(binary.BigEndian.Uint32(b[deltaAt:])))+1)
		}
		b = b[size:]
	}
	return most
}
