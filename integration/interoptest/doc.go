// Package interoptest runs integration/interop/interop.py, a writer and
// reader of Confluent wire-format records built on Confluent's own Python
// client (confluent-kafka and its schema-registry serializers), so that
// tests can check the relay's Avro, Protobuf and JSON Schema records
// against an implementation it shares no code with: the tool writes the
// source records the relay reads and reads back the records it writes.
//
// The tool runs in a Python virtual environment made once from
// integration/interop/requirements.txt (exact versions) and kept in
// $SHARERELAY_CACHE/interop-venv-<hash> (default
// $HOME/.cache/sharerelay/…, beside the Kafka jars of kafkatest); the hash
// covers the requirements and the Python version, so a change of either
// makes a new one. Only python3 (3.10 or newer, with its venv module) and
// a reachable package index on the first run are needed;
// SHARERELAY_PYTHON names another interpreter. Parallel test binaries
// each build into a private directory and rename it into place; the
// first rename wins.
//
// Tests use it through [Ensure]:
//
//	tool := interoptest.Ensure(t)
//	recs, err := tool.Generate(ctx, interoptest.GenerateArgs{Format: interoptest.Avro, Count: 50, Seed: 1})
//	sum, err := tool.Produce(ctx, interoptest.ProduceArgs{Bootstrap: seeds, Registry: url,
//		Topic: topic, Format: interoptest.Avro, Schema: "order.avsc", Records: recs})
//	got, err := tool.Consume(ctx, interoptest.ConsumeArgs{Bootstrap: seeds, Registry: url,
//		Topic: topic, Format: interoptest.Avro, Count: 50})
//	if d := interoptest.Diff(recs[0].Value, got[0].Value); d != "" { … }
//
// Values travel in the canonical JSON form documented at the top of
// interop.py (decimals as text with the scale's digits, bytes as base64,
// timestamps as epoch microseconds, Protobuf 64-bit integers as JSON
// integers, every Protobuf field listed with null for an unset one that
// has presence, …), the same in both directions, so what a test wrote
// compares equal to what it reads back; [Diff] compares two such values.
// The schemas the tool ships, in integration/interop/schemas, are named
// by file name ("order.avsc", "order.proto", "order.schema.json",
// "job.avsc", …); see [SchemaPath].
//
// [Ensure] skips as kafkatest's brokers do: under -short, and when
// python3, its venv module or pip is missing; with
// SHARERELAY_REQUIRE_BROKER=1 those skips are failures. A failed install
// (no package index, a pinned wheel missing for this platform) fails the
// test with pip's output.
//
// What Confluent's Python serializers do against Apicurio's Confluent API,
// and the one place the tool steps in (Protobuf schemas fetched with
// format=serialized), is written down in integration/interop/README.md.
package interoptest
