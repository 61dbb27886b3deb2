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
// offsets (an IntervalSet) and the claims not yet resolved, in ledger
// order. A claim written at producer epoch E is resolved only by its
// producer's marker at E+1 — transaction.version 2 (KIP-890), which
// OpenLedger checks, bumps the epoch at every end of a transaction and
// writes the markers with the bumped epoch. A claim whose producer shows a
// later epoch first lost its marker (a broker killed with markers in
// flight drops them): it is orphaned, keeps blocking its offsets, and is
// settled by a Resolution record that a resolver writes once the
// transaction's outputs show its outcome to read_committed readers.
//
// Invariants:
//
//  1. A worker commits a transaction only after its reader applied the
//     transaction's claims, and no offset of them is committed or covered by
//     an earlier unresolved claim (Index.Check). Hence no source offset is
//     ever committed by two transactions.
//  2. Earlier claims of the worker's own producer id count like any other's:
//     a transactional id keeps its producer id across transactions.
//  3. A claim is committed only on evidence of its own transaction's
//     commit: its own marker (E+1), or a resolution from its own outputs.
//     Never on another transaction's marker.
//  4. Nothing is pruned by the share-partition start offset; memory is
//     bounded by holes in the committed sets, which collapse as offsets
//     commit.
//  5. A snapshot carries the claims unresolved at its position, with their
//     producer ids, epochs and orphan state; without them a marker read
//     after it could not resolve them.
//  6. Waits are only on earlier claims and are bounded (ClaimWait); a
//     timeout aborts and releases, which is always safe. Safety never
//     depends on clocks, locks or delivery counts — they only affect
//     liveness.
//
// docs/exactly-once.md has the full argument, the failure windows and
// their tests, and what is not covered.
package eos
