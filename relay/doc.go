// Package relay runs a pipeline: N workers, each with its own share consumer
// and transactional producer, moving records from the source topics through
// the transform chain to the output and dead-letter topics.
//
// One batch follows one path, kept in one place (worker.process):
//
//	poll → already committed? → transform → begin → produce → claim → commit → acknowledge
//
// and every record of a batch is accepted or released before the next poll.
// That last rule is enforced by construction (see shareSource): franz-go's
// next PollRecords would otherwise accept every record of the previous poll
// that was not acknowledged, losing records whose transaction then aborted.
package relay
