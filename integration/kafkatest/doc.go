// Package kafkatest runs a real Apache Kafka broker for tests, without Docker.
//
// The broker is the official Apache Kafka server (the kafka_2.13 artifact)
// fetched from Maven Central with the pom.xml in integration/kafka and run as
// a plain JVM process: one combined KRaft broker+controller (node.id 1) bound
// to 127.0.0.1 on two free ports, with its data in a temporary directory.
// Only Java 17+ and Maven are needed; the jars are copied once into
// $SHARERELAY_CACHE/kafka-<version>/lib (default
// $HOME/.cache/sharerelay/kafka-<version>/lib) and reused afterwards. The
// broker is configured for a single node (internal topics with one partition
// and replication factor 1) and with shortened share-group and transaction
// timers, so share groups (share.version 1) and transactions
// (transaction.version 2) work and tests run fast; see [Options] to change
// any property.
//
// Test binaries use it through [Main] and [Bootstrap]:
//
//	func TestMain(m *testing.M) { kafkatest.Main(m) }
//
//	func TestX(t *testing.T) {
//		seeds := kafkatest.Bootstrap(t)
//		topic := kafkatest.NewTopic(t, seeds, 3)
//		...
//	}
//
// [Bootstrap] returns, in this order of preference:
//   - the brokers in KAFKA_BOOTSTRAP_SERVERS (comma separated), for any
//     external cluster, for example one started once with
//     `go run ./integration/cmd/kafkabroker up` and shared by all packages;
//   - a local JVM broker, started lazily once per test binary and stopped by
//     [Main] when the tests end;
//   - a skip, with the reason, when java (or mvn, while the jars are not yet
//     cached) is missing. With SHARERELAY_REQUIRE_BROKER=1 the skip becomes a
//     test failure, so CI cannot silently skip the real-broker tests.
//
// testcontainers-go is deliberately not used. Its Kafka module only runs
// Confluent images (confluentinc/confluent-local), needs a reachable Docker
// engine, and adds some fifty modules (the Docker client, moby, OpenTelemetry)
// to go.mod. The JVM broker runs the same Apache Kafka code, starts in a few
// seconds and works wherever Java does. To test against Docker or any other
// cluster, start it yourself and set KAFKA_BOOTSTRAP_SERVERS.
//
// Tests that kill or restart the broker use [LocalBroker]; they are skipped
// when KAFKA_BOOTSTRAP_SERVERS points at an external cluster.
package kafkatest
