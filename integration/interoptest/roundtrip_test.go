package interoptest_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sharerelay/sharerelay/integration/interoptest"
	"github.com/sharerelay/sharerelay/integration/kafkatest"
	"github.com/sharerelay/sharerelay/integration/registrytest"
)

// envRegistryURL names an external registry's Confluent API URL, used in
// place of the shared Apicurio registry when set.
const envRegistryURL = "SHARERELAY_TEST_REGISTRY_URL"

// registryURL is the registry the tests use: $SHARERELAY_TEST_REGISTRY_URL,
// or this binary's Apicurio registry.
func registryURL(t *testing.T) string {
	t.Helper()
	if u := os.Getenv(envRegistryURL); u != "" {
		return u
	}
	return registrytest.Shared(t).URL()
}

// env is what every test needs: the tool, a broker and a registry.
type env struct {
	tool     *interoptest.Tool
	seeds    []string
	registry string
}

func setup(t *testing.T) env {
	t.Helper()
	tool := interoptest.Ensure(t)
	seeds := kafkatest.Bootstrap(t)
	return env{tool: tool, seeds: seeds, registry: registryURL(t)}
}

func testContext(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// orderSchemas are the source schemas of each format.
var orderSchemas = []struct {
	name   string
	format interoptest.Format
	schema string
	mix    bool                  // Protobuf: Refunds and Order.Lines among the Orders
	key    interoptest.KeyFormat // in the control test
}{
	{"Avro", interoptest.Avro, "order.avsc", false, interoptest.KeyAvro},
	{"Protobuf", interoptest.Protobuf, "order.proto", true, interoptest.KeyString},
	{"JSON Schema", interoptest.JSONSchema, "order.schema.json", false, interoptest.KeyString},
}

// The control the relay's interop tests are compared against: Confluent's
// serializer writes, Confluent's deserializer reads, nothing in between.
func TestEveryGeneratedOrderReadsBackAsWrittenThroughABrokerAndTheRegistry(t *testing.T) {
	e := setup(t)
	const n = 50
	for _, tc := range orderSchemas {
		t.Run(tc.name, func(t *testing.T) {
			ctx := testContext(t)
			topic := kafkatest.NewTopic(t, e.seeds, 3)
			want, err := e.tool.Generate(ctx, interoptest.GenerateArgs{Format: tc.format, Count: n, Seed: 46, ProtoMix: tc.mix, BaseTime: time.Now()})
			if err != nil {
				t.Fatal(err)
			}
			if len(want) != n {
				t.Fatalf("generated %d records, want %d", len(want), n)
			}
			began := time.Now()
			sum, err := e.tool.Produce(ctx, interoptest.ProduceArgs{Bootstrap: e.seeds, Registry: e.registry, Topic: topic,
				Format: tc.format, Schema: tc.schema, Records: want, KeyFormat: tc.key})
			if err != nil {
				t.Fatal(err)
			}
			if sum.Count != n || sum.SchemaID <= 0 {
				t.Fatalf("produce summary %+v: want %d records written with one schema id", sum, n)
			}
			got, err := e.tool.Consume(ctx, interoptest.ConsumeArgs{Bootstrap: e.seeds, Registry: e.registry, Topic: topic,
				Format: tc.format, Schema: tc.schema, Count: n, Linger: time.Second, KeyFormat: tc.key})
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("%d records written with schema %d and read back in %s", n, sum.SchemaID, time.Since(began).Round(time.Millisecond))
			if len(got) != n {
				t.Fatalf("read %d records, want %d", len(got), n)
			}
			compare(t, want, got, sum.SchemaID)
			if tc.key == interoptest.KeyAvro && got[0].KeySchemaID <= 0 {
				t.Errorf("an Avro key read with key schema id %d", got[0].KeySchemaID)
			}
			if tc.mix {
				assertIndexes(t, got)
			}
		})
	}
}

// compare checks got against want record by record, matched by key.
func compare(t *testing.T, want, got []interoptest.Record, schemaID int) {
	t.Helper()
	byKey := make(map[string]interoptest.Record, len(want))
	for _, r := range want {
		byKey[r.KeyText()] = r
	}
	for _, g := range got {
		w, ok := byKey[g.KeyText()]
		if !ok {
			t.Errorf("%s[%d]@%d: key %s was not written (or read twice)", g.Topic, *g.Partition, g.Offset, g.Key)
			continue
		}
		delete(byKey, g.KeyText())
		where := fmt.Sprintf("key %s (%s[%d]@%d)", g.KeyText(), g.Topic, *g.Partition, g.Offset)
		if d := interoptest.Diff(w.Value, g.Value); d != "" {
			t.Errorf("%s: value differs:\n%s", where, d)
		}
		if g.SchemaID != schemaID {
			t.Errorf("%s: schema id %d, want %d", where, g.SchemaID, schemaID)
		}
		if w.Timestamp == nil || g.Timestamp == nil || *w.Timestamp != *g.Timestamp {
			t.Errorf("%s: timestamp %v, want %v", where, deref(g.Timestamp), deref(w.Timestamp))
		}
		if fmt.Sprint(w.Headers) != fmt.Sprint(g.Headers) {
			t.Errorf("%s: headers %v, want %v", where, g.Headers, w.Headers)
		}
		if w.Message != g.Message {
			t.Errorf("%s: message %q, want %q", where, g.Message, w.Message)
		}
	}
	for k := range byKey {
		t.Errorf("key %s was written but not read", k)
	}
}

func deref(p *int64) any {
	if p == nil {
		return nil
	}
	return *p
}

// assertIndexes checks the Protobuf message indexes the serializer wrote
// for each message, and that every one of them occurred.
func assertIndexes(t *testing.T, got []interoptest.Record) {
	t.Helper()
	want := map[string][]int{
		"sharerelay.test.Order":      {0},
		"sharerelay.test.Refund":     {1},
		"sharerelay.test.Order.Line": {0, 0},
	}
	seen := map[string]int{}
	for _, g := range got {
		seen[g.Message]++
		if w, ok := want[g.Message]; !ok || !slices.Equal(g.MessageIndexes, w) {
			t.Errorf("key %s: a %s with message indexes %v, want %v", g.KeyText(), g.Message, g.MessageIndexes, w)
		}
	}
	for m := range want {
		if seen[m] == 0 {
			t.Errorf("no %s among the records (seen %v)", m, seen)
		}
	}
}

// The relay registers its output schemas as text (.proto source, not the
// base64 descriptor Confluent's Python serializer registers) and writes
// with them; the tool must read what was written with such a schema. Here
// the tool plays both parts: it registers order.* as text and writes with
// the subject's latest version instead of registering.
func TestRecordsWrittenWithASchemaRegisteredAsTextReadBackAsWritten(t *testing.T) {
	e := setup(t)
	const n = 20
	for _, tc := range orderSchemas {
		t.Run(tc.name, func(t *testing.T) {
			ctx := testContext(t)
			topic := kafkatest.NewTopic(t, e.seeds, 1)
			id, err := e.tool.Register(ctx, interoptest.RegisterArgs{Registry: e.registry, Subject: topic + "-value", Format: tc.format, Schema: tc.schema})
			if err != nil {
				t.Fatal(err)
			}
			// Without the mix: Confluent's Protobuf serializer cannot write a
			// nested message (Order.Line) with use.latest.version.
			want, err := e.tool.Generate(ctx, interoptest.GenerateArgs{Format: tc.format, Count: n, Seed: 7, BaseTime: time.Now()})
			if err != nil {
				t.Fatal(err)
			}
			sum, err := e.tool.Produce(ctx, interoptest.ProduceArgs{Bootstrap: e.seeds, Registry: e.registry, Topic: topic,
				Format: tc.format, Schema: tc.schema, Records: want, UseLatestVersion: true})
			if err != nil {
				t.Fatal(err)
			}
			if sum.SchemaID != id {
				t.Fatalf("written with schema %d, want the registered %d", sum.SchemaID, id)
			}
			got, err := e.tool.Consume(ctx, interoptest.ConsumeArgs{Bootstrap: e.seeds, Registry: e.registry, Topic: topic,
				Format: tc.format, Schema: tc.schema, Count: n})
			if err != nil {
				t.Fatal(err)
			}
			compare(t, want, got, id)
		})
	}
}

func TestARecordTheJSONSchemaSerializerRefusesFailsProduceAndWritesNothing(t *testing.T) {
	e := setup(t)
	ctx := testContext(t)
	topic := kafkatest.NewTopic(t, e.seeds, 1)
	recs, err := e.tool.Generate(ctx, interoptest.GenerateArgs{Format: interoptest.JSONSchema, Count: 3, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	var v map[string]any
	if err := json.Unmarshal(recs[2].Value, &v); err != nil {
		t.Fatal(err)
	}
	delete(v, "customer")
	recs[2].Value, _ = json.Marshal(v)
	_, err = e.tool.Produce(ctx, interoptest.ProduceArgs{Bootstrap: e.seeds, Registry: e.registry, Topic: topic,
		Format: interoptest.JSONSchema, Schema: "order.schema.json", Records: recs})
	if err == nil || !strings.Contains(err.Error(), "'customer' is a required property") {
		t.Fatalf("produce a record without its required customer: %v; want the serializer's refusal", err)
	}
	got, err := e.tool.Consume(ctx, interoptest.ConsumeArgs{Bootstrap: e.seeds, Registry: e.registry, Topic: topic,
		Format: interoptest.JSONSchema, Count: 1, Timeout: 3 * time.Second})
	if !errors.Is(err, interoptest.ErrTooFew) || len(got) != 0 {
		t.Fatalf("after the refusal the topic holds %d records (%v); want none", len(got), err)
	}
}
