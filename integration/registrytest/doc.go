// Package registrytest runs a real schema registry for tests, without
// Docker: Apicurio Registry ([Version]), whose Confluent-compatible API
// ([Registry.URL], /apis/ccompat/v7) is what sharerelay's Avro, Protobuf
// and JSON Schema formats talk to.
//
// The registry is the Quarkus application Apicurio publishes on Maven
// Central (io.apicurio:apicurio-registry-app, classifier all, a tar.gz),
// unpacked once with mvn into $SHARERELAY_CACHE/apicurio-<version>
// (default $HOME/.cache/sharerelay/apicurio-<version>, beside the Kafka
// jars of integration/kafkatest) and run as a plain JVM process bound to
// 127.0.0.1 on a free port, through integration/internal/jvmproc as
// kafkatest's brokers are. It needs Java 21 or newer, which need not be
// the default java: the JDK is, in this order, $SHARERELAY_REGISTRY_JAVA_HOME,
// $JAVA_HOME when it is 21 or newer, the newest JDK 21+ in the JVM
// folders (/usr/lib/jvm, …), then java on PATH.
//
// Its schemas survive a restart, even after kill -9: the registry keeps
// them in an H2 database file in its directory, written at every commit,
// so a test that kills it and starts it again reads the same ids.
//
// Test binaries use it through [Shared]: one registry per binary, started
// by the first test that asks, started again when an earlier test left it
// killed, and stopped when the tests end by the TestMain that stops the
// brokers, which registry packages must have:
//
//	func TestMain(m *testing.M) { kafkatest.Main(m) }
//
//	func TestX(t *testing.T) {
//		reg := registrytest.Shared(t)
//		cl, err := sr.NewClient(sr.URLs(reg.URL()))
//		...
//	}
//
// A test that kills the registry while others use it takes a [Dedicated]
// one, its own directory and port, stopped when the test ends.
//
// Both skip as kafkatest's brokers do: under -short, and when no JDK 21+
// is found (or mvn, while the application is not cached yet); with
// SHARERELAY_REQUIRE_BROKER=1 such a skip is a failure instead. When the
// tests failed, the registry's directory and its log (registry.log) are
// kept and their paths printed.
//
// FINDINGS.md beside this file records where Apicurio's Confluent API
// differs from Confluent Schema Registry; the tests of this package
// check each finding against the real registry.
package registrytest
