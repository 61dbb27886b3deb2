// Package txn is the relay's transactional producer: a franz-go client that is
// always idempotent with acks=all and a transactional id, and that turns the
// many ways EndTxn can fail into three outcomes the relay can act on:
// committed, not committed, and unknown.
//
// The weaker settings a hand-written copier might use (acks=1, no
// idempotence) are not configurable here on purpose: the relay's delivery
// guarantee rests on them.
package txn
