// Package integration holds sharerelay's real-broker tests: the relay binary
// run as separate processes against a real Apache Kafka broker (started by
// integration/kafkatest from Maven Central jars, or KAFKA_BOOTSTRAP_SERVERS),
// with faults injected at named failpoints, by signals and by killing the
// broker. kfake is never the proof of a guarantee; these tests are.
//
// What these tests share with the chaos suite (integration/chaos) — the
// relay binary, the pipeline file, topics, seeding, relay processes and the
// open-transaction check — is in integration/harness; the broker is
// integration/kafkatest's.
package integration
