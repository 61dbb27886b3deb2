// Package live is the live auditor behind relay audit: a long-running
// process beside the relay that judges every source record as relay
// verify would, once the record has settled, and exports the verdicts as
// metrics. relay verify proves a pipeline exact after the fact; this
// shows it while the pipeline runs.
//
// # Settling rule
//
// Every Config.Interval the auditor takes a fence: first it reads each
// source partition's share-partition start offset (SPSO) from the share
// group, then the high watermark of every output and dead-letter
// partition. Its read_committed readers read every output and dead-letter
// partition up to the fence's high watermarks, and its source reader up
// to the SPSO; a read_committed reader reaches a high watermark only once
// every transaction that wrote below it has ended. The next fence is
// taken once they are there, and a source record below the SPSO of a
// fence is judged when the readers have reached the next fence's ends.
//
// Why no record in flight is judged: the relay acknowledges a record only
// after its outputs' transaction committed (exactly-once) or the brokers
// acknowledged its outputs (at-least-once), and below the SPSO every
// record is acknowledged; so its outputs were written before the SPSO was
// read, hence below the high watermarks read after. Records acquired and
// not acknowledged, or whose transaction is still open, are at or above
// the SPSO and wait for a later fence. The SPSO Kafka reports trails the
// records acknowledged last (it is stored with a later acknowledgement);
// where the group reports no lag on a partition, the fence takes the
// partition's end, read before, instead. A hanging transaction holds its
// partition's last stable offset, so judgement waits (the audit's lag
// grows) rather than calling anything lost.
//
// Why one fence later: when a broker loses a commit marker, the
// committed outputs stay in an open transaction, and the relay closes it
// with an abort only after writing them again in a transaction of its
// other producer (docs/exactly-once.md). The readers get past the open
// transaction only after that, so the copies lie below the ends of the
// next fence; judged at its own fence, such a record would be called
// lost, then its copy a late duplicate.
//
// When the broker breaks the premise otherwise — a transaction reported
// committed that was in fact aborted (KAFKA-21181) — the record is judged
// lost, which is the truth. A record the broker archived at its delivery
// limit without output is lost too.
//
// # Judgement
//
// Each record is judged by audit.Judge, the rule relay verify applies:
// lost (no output, no dead letter; filtered when the chain can drop
// records), duplicated, in both, a fan-out short of its outputs
// (incomplete), outputs naming no record (unexpected). An output read
// after its record was judged is late, and counted as a duplicate: by
// the rule, every output of a judged record was below its fence.
//
// # Memory
//
// The auditor holds only the offsets between each partition's judged
// watermark and the newest fence: a byte of marks and a bit per offset
// (16 bytes more per offset of a chunk where outputs fan out), in chunks
// freed as judgement passes them, plus counters. Its readers pause at
// the current fence's bounds, so they hold no more than two fences.
// Catching up after a long stop holds the backlog the same way, about
// 1.13 bytes a record, like relay verify.
//
// # Checkpoint
//
// The state a restart needs — judged watermarks, reader positions, the
// marks of unjudged offsets below those positions, the cumulative counts
// — is saved every Config.CheckpointInterval and on a clean stop, by
// default in a compacted topic on the sink cluster (CheckpointTopic).
// A restart resumes from it: the counters continue, nothing is judged
// twice.
package live
