// Package dlq looks at a pipeline's dead letters and sends them back:
// `relay dlq inspect` and `relay dlq replay`.
//
// Inspect reads the dead-letter topic read_committed, up to its last stable
// offset when it starts, and counts the dead letters by error class
// (__connect.errors.exception.class.name), step (class.name), kind and
// time, with a few samples; with InspectOptions.Decode, the samples' keys
// and values decoded with the pipeline's source formats (the relay's own
// decoders, package format), or why they do not decode.
//
// Replay sends the dead letters a Filter selects through the pipeline's
// transform chain again (or, with To, copies them unchanged to a topic),
// exactly once. It treats each dead letter as a source record whose
// coordinates are the dead letter's own — dead-letter topic, its topic ID,
// partition, offset — and runs the relay's delivery protocol on them, with
// the pipeline's own claim ledger (same topic, same generation), chunk by
// chunk, exactly as a worker does with a batch:
//
//  1. eos.Guard.Committed: dead letters an earlier replay committed are
//     skipped;
//  2. Claims and the chunk's outputs in one transaction;
//  3. Check: a dead letter an overlapping replay committed meanwhile is a
//     conflict — abort, drop it, write the rest again;
//  4. Commit; Resolve when the commit's answer is lost.
//
// So a replay run twice, killed and run again, or run alongside another
// replay of overlapping dead letters never writes a dead letter's outputs
// twice: a dead letter is replayed at most once per ledger generation,
// whatever the job or mode. The producer's transactional id is stable per
// job (sharerelay-<pipeline>-dlq-replay-<job>), so a replay started again
// fences the transaction its killed predecessor left open.
//
// Every record a replay writes carries the lineage headers of its source
// record, the dead letter (sharerelay.source.* are the dead-letter
// coordinates, so `relay verify` counts a replayed dead letter like any
// source record), and sharerelay.replay.of.* naming the original source
// record, with sharerelay.replay.job. A dead letter that fails again is
// dead-lettered again with the usual __connect.errors.* headers (their
// topic, partition and offset are the dead letter's); a replay never
// selects the dead letters its own job wrote.
//
// A pipeline with source.cluster keeps all of this on its sink cluster:
// the dead letters, the claim ledger, the outputs and To, which must be
// there since it commits in one transaction with the ledger. Nothing here
// reads the source topics or the share group; the source cluster is only
// asked whether it holds a To the sink lacks, to say why that fails.
package dlq
