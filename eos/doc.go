// Package eos holds the relay's delivery protocol: what ties a share-group
// acknowledgement to the commit of the transaction that wrote the record's
// outputs.
//
// Apache Kafka has no transactional share acknowledgement yet (KIP-1289 is
// a proposal), so a relay that acknowledges after the commit is
// at-least-once: a crash between commit and acknowledgement, or a lock that
// expires while the transaction is still running, lets another worker
// process the record again. The worker talks to the protocol only through
// the Guard interface, so the at-least-once Guard here, the claim-ledger
// Guard, and one day a broker-native transactional acknowledgement can be
// swapped without touching the worker loop.
package eos
