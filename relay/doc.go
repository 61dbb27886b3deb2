// Package relay runs a pipeline: N workers moving records from the source
// topics through the transform chain to the output and dead-letter topics.
//
// Each worker runs one or more share consumers of the pipeline's share
// group (batch.consumers, lowered so that a crash of the instance cannot
// use up a record's deliveries), whose polls it writes together, and one
// or two lanes: a lane is a transactional producer with its delivery
// Guard (the claim ledger under exactly-once). Under exactly-once a
// worker alternates two lanes, so that the next transaction begins while
// the last one commits in the background; at-least-once has one, writing
// without transactions.
//
// One batch follows one path (worker.go lists it with the file of each
// step):
//
//	poll → already committed? → transform → begin → produce → claim → commit → acknowledge
//
// and every record of a batch is accepted or released before its share
// consumer polls again. That last rule is enforced by construction (see
// shareSource): franz-go's next PollRecords would otherwise accept every
// record of the previous poll that was not acknowledged, losing records
// whose transaction then aborted.
package relay
