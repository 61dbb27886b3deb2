// Package eos holds the relay's delivery protocol: what ties a share-group
// acknowledgement to the commit of the transaction that wrote the record's
// outputs.
//
// Apache Kafka has no transactional share acknowledgement yet (KIP-1289 is
// a proposal), so a relay that acknowledges after the commit is
// at-least-once: a crash between commit and acknowledgement, or a lock that
// expires while the transaction is still running, lets another worker
// process the record again. The worker talks to the protocol only through
// the Guard interface, so AtLeastOnce, the claim ledger (Ledger.Guard), and
// one day a broker-native transactional acknowledgement can be swapped
// without touching the worker loop.
//
// # The claim ledger, in short
//
// Every transaction also writes a Claim per source partition it touches to
// the ledger topic. Each instance tails the ledger read_uncommitted with
// control records and keeps an Index: per source partition, the committed
// offsets (an IntervalSet) and the pending claims in ledger order. A claim's
// fate is the next commit/abort marker of its producer id in its ledger
// partition — sound only under transaction.version 2 (KIP-890), which
// OpenLedger checks.
//
// Invariants:
//
//  1. A worker commits a transaction only after its reader applied the
//     transaction's claims, and no offset of them is committed or covered by
//     an earlier pending claim (Index.Check). Hence no source offset is ever
//     committed by two transactions.
//  2. Earlier claims of the worker's own producer id count like any other's:
//     a transactional id keeps its producer id across transactions.
//  3. Nothing is pruned by the share-partition start offset; memory is
//     bounded by holes in the committed sets, which collapse as offsets
//     commit.
//  4. A snapshot carries the claims pending at its position, with their
//     producer ids; without them a marker read after it could not resolve
//     them.
//  5. Waits are only on earlier claims and are bounded (ClaimWait); a
//     timeout aborts, which is always safe. Safety never depends on clocks,
//     locks or delivery counts — they only affect liveness.
//
// docs/exactly-once.md has the full argument, the failure windows and
// their tests, and what is not covered.
package eos
