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
// any property. The JVM runs, stops and is waited for through
// integration/internal/jvmproc, the process machinery it shares with the
// schema registry of integration/registrytest.
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
// With SHARERELAY_BROKER=testcontainers, for those who have Docker, the
// shared broker is a container started through testcontainers-go's Kafka
// module instead (image SHARERELAY_BROKER_IMAGE, default [DefaultImage]),
// configured with the same test properties. The module and the Docker
// client it brings (some fifty modules) are compiled only with
// -tags testcontainers, so the default test binaries do not link them and
// CI needs no Docker (make test only vets the tagged file, to keep it
// compiling):
//
//	SHARERELAY_BROKER=testcontainers go test -tags testcontainers ./integration/...
//
// Asking for it in a binary built without the tag, or with no Docker
// engine answering, fails the test with the reason ([ErrNoTestcontainers],
// [ErrDockerUnavailable]); it never falls back silently. The module only
// starts Confluent-style images (confluentinc/confluent-local; it runs
// their /etc/confluent/docker scripts), so apache/kafka images do not work
// with it. The JVM broker stays the default: it runs the same Apache Kafka
// code, starts in a few seconds and works wherever Java does.
//
// [Secure] adds TLS and SASL listeners and ACLs to a local broker, for the
// security tests; it needs the JVM broker.
//
// [SecondBroker] is a second local broker, a cluster independent of the
// first (its own KRaft cluster id, directory and ports), for tests of a
// pipeline whose share group is on one cluster and its outputs on the
// other; like [LocalCluster] it is a JVM broker started only when a test
// asks for it and stopped by [Main]. [SharedBroker] declares more such
// brokers, a secured one for instance ([Secure]), so that one cluster of
// a test can be secured while the other stays PLAINTEXT.
//
// Tests that kill or restart the broker use [LocalBroker]; they are skipped
// when KAFKA_BOOTSTRAP_SERVERS points at an external cluster, or the shared
// broker is a container.
package kafkatest
