// Package preflight checks, before a deploy, that a pipeline can run on its
// cluster: `relay check -c pipeline.yaml`. It connects with the pipeline's
// own client settings (internal/kafkaopts: TLS, SASL, tuning) and asks the
// brokers, consuming nothing and changing nothing:
//
//   - brokers reachable, TLS trusted, SASL accepted (ApiVersions);
//   - the Kafka version (guessed from ApiVersions) and the request
//     versions the relay needs, the finalized transaction.version (2 or
//     more for exactly-once), judged by internal/brokerfloor, the rule
//     relay run refuses to start on; and share.version (share groups on);
//   - the source, output and dead-letter topics exist; the claim ledger and
//     its snapshot topic exist or can be created (CreateTopics,
//     validate_only, replicated as the relay would:
//     eos.LedgerReplication);
//   - every topic the relay writes (outputs, dead letters, the ledger and
//     its snapshots) keeps a write acks=all accepted through the loss of a
//     broker: more than one replica on a cluster of several brokers,
//     min.insync.replicas at least 2 and at most the replicas, no unclean
//     leader election (Metadata and DescribeConfigs of the topics; for a
//     ledger still to be created, the relay's own rule). At-least-once
//     gets the same warnings: the relay acknowledges a source record once
//     its outputs are written, so a lost write is a lost record there too;
//   - the principal's permissions: on topics from Metadata's
//     topic_authorized_operations; on the share group by a ShareFetch with
//     no session (READ), DescribeConfigs (DESCRIBE_CONFIGS) and, when the
//     relay manages the group's configs, IncrementalAlterConfigs with
//     validate_only (ALTER_CONFIGS, with the very values the relay sets);
//     on the transactional ids by an AddPartitionsToTxn (v3) for an id of
//     the pipeline's prefix that no relay uses, with no producer id: the
//     broker checks WRITE on the id and on the topics before it finds that
//     the id has no transaction, and changes nothing; on the cluster from
//     DescribeCluster's cluster_authorized_operations, for information
//     (the relay needs no cluster permission);
//   - the share group's record lock duration (group config, else the
//     broker's default) above output.transaction_timeout;
//   - the delivery limit the relay will run with (the one it raises the
//     group's to, when it manages the group's configs) leaving, after the
//     dead-letter attempts, a spare delivery per share consumer of the
//     instance (at least two), and the share consumers a worker will run.
//
// With a schema registry (schema_registry, source.cluster.schema_registry),
// the registry is asked last, with the relay's own client (format), and
// whether or not the clusters answered: that it answers (GET /config),
// naming the credentials it refuses; that the source's writer schemas
// can be read from it; and, for every value and key an output writes in
// a registry format, what the registry holds under the subject the
// relay derives (format.OutputSchemas): the schema file registered, or to
// be registered (auto_register) and then, by the registry's own
// compatibility check, accepted under the subject's rule; a version or
// an id that exists. It registers nothing.
//
// What it cannot check without side effects: that a share consumer can
// join (a heartbeat would make the principal a member), that records can
// be written (a produce writes), and that InitProducerId works for the
// relay's real transactional ids (it would fence a running instance). The
// permissions behind those are checked as above; a broker-side quota, a
// policy or a full disk only shows when the relay runs.
//
// With source.cluster the pipeline has two clusters, and each is asked,
// with its own client settings and principal, only what it serves: the
// source cluster the share group checks (its broker floor, share.version,
// the source topics, the group's permissions, configs and limits), the
// sink cluster the rest (its broker floor, transaction.version, the topics
// the relay writes and their replication, the transactional ids). Every
// check's name then ends with its cluster, "brokers (source cluster)",
// and a last line compares the clusters' ids: source.cluster that is the
// sink cluster warns, and fails when a topic the relay writes has a source
// topic's name. A cluster out of reach skips its own checks only.
//
// Every check gives one Result, ok, warn or FAIL; a failure of the
// connection skips the rest of that cluster's checks.
package preflight
