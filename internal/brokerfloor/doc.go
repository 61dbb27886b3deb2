// Package brokerfloor decides whether a Kafka cluster is new enough for the
// relay, from the brokers' ApiVersions answer: the one rule behind
// `relay run`'s refusal at start-up, `relay check`'s "kafka version" and
// "transaction.version" lines, and the claim ledger's refusal of a cluster
// without transaction version 2.
//
// The floor is Kafka 4.2: ShareFetch v2 carries the record-limit acquire
// mode (KIP-1206) the relay asks for by default, which an older broker
// drops without a word, acquiring whole record batches instead; and
// ShareAcknowledge v2 carries the Renew acknowledgement (KIP-1222) that
// keeps a slow batch's record locks. Both came in Kafka 4.2. Exactly-once
// also needs the cluster's transaction.version finalized at 2 (KIP-890),
// a feature level, not a release: a cluster upgraded from an older one may
// still run at 1. docs/compat.md lists the releases tested.
//
// With source.cluster a pipeline has two clusters, and each is asked only
// for what it serves (JudgeFor): the source cluster for the share group
// requests, the sink cluster for the transactions' requests and
// transaction.version, whose floor is then Kafka 4.1 (SinkMinimum).
package brokerfloor
