package integration

// Avro, Protobuf and JSON Schema records written by Confluent's own
// Python serializers (integration/interop) go through the relay exactly
// once, on the real broker and a real schema registry (Apicurio,
// integration/registrytest): the steps change their decoded fields, set
// their keys and headers, and the same serializers read the outputs back.
// Outputs keep their source records' timestamps; the records the relay
// cannot read or cannot write in the output's schema are dead-lettered
// with their bytes as they came and a reason naming the field; relay
// verify finds the pipeline exact.

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sharerelay/sharerelay/integration/harness"
	"github.com/sharerelay/sharerelay/integration/interoptest"
	"github.com/sharerelay/sharerelay/integration/registrytest"
	"github.com/sharerelay/sharerelay/lineage"
)

// formatOrders is how many orders each format's test relays: enough for
// every branch of the generated data, few enough for CI.
const formatOrders = 300

// Every 25th order, from order 5 on, is a wholesale order: its coupon is
// WHOLESALE, its status PAID, and a step bills it from another field,
// which fits the output schema for every other one of them and not for
// the rest (too many decimal places, an id out of range).
func wholesale(i int) bool { return i%25 == 5 }

// wholesaleFits reports whether wholesale order i's field fits.
func wholesaleFits(i int) bool { return (i/25)%2 == 0 }

// headerSteps add headers (a value, an expression), replace one and
// remove one; every test that uses them checks their result
// (checkHeaders).
const headerSteps = `
  - {type: header, name: relayed-by, header: relayed-by, value: sharerelay}
  - {type: header, name: source-seq, header: source-seq, expr: headers.seq}
  - {type: header, name: reset-seq, header: seq, action: set, value: relayed}
  - {type: header, name: drop-origin, header: origin, action: remove}`

// removeSteps removes each field, one step each.
func removeSteps(fields ...string) string {
	var b strings.Builder
	for _, f := range fields {
		fmt.Fprintf(&b, "\n  - {type: remove, field: %s}", f)
	}
	return b.String()
}

// The Avro orders (order.avsc: every Avro type and logical type) become
// Jobs (job.avsc), registered by the relay: a filter on an enum, a
// decimal set from another decimal of a larger scale, a rename, a string
// built from a nested record's field, a timestamp moved by an hour, the
// key from a long, the headers changed. Records whose rate has a third
// decimal place do not fit Job's amount and are dead-lettered; so are
// records the relay cannot read.
func TestRealBrokerFormatAvroOrdersFromConfluentsSerializerAreRelayedExactlyOnceAsJobs(t *testing.T) {
	e := formatsSetup(t)
	p := e.pipe(t, formatPipe{
		transforms: `
  - {type: filter, name: drop-shipped, when: {field: status, equals: SHIPPED}}
  - {type: set, name: wholesale-at-rate, field: amount, expr: value.rate, when: {field: coupon, equals: WHOLESALE}}
  - {type: rename, name: order-id, field: id, to: order_id}
  - {type: set, name: customer-in-city, field: customer, expr: 'value.customer + " @ " + value.address.city'}
  - {type: set, name: placed-an-hour-later, field: placed_at, expr: 'value.created_ms + duration("1h")'}
  - {type: key, name: key-by-order, field: order_id}` +
			removeSteps("qty", "price", "weight", "gift", "note_bytes", "code", "rate", "placed_on", "open_time",
				"cutoff_time", "created_ms", "created_us", "local_ms", "order_uuid", "ref", "tags", "address", "channel") +
			headerSteps,
		source: []string{"value_format: avro"},
		output: []string{"value_format: avro", "value_schema: {file: job.avsc, auto_register: true}"},
		files:  []string{"job.avsc"},
	})

	recs := e.generate(t, interoptest.Avro, false)
	want := map[string]expected{}
	for i := range recs {
		r := &recs[i]
		v := editValue(t, r, func(v map[string]any) {
			if wholesale(i) {
				v["coupon"], v["status"] = "WHOLESALE", "PAID"
				last := 7 // a third decimal place, which amount has no room for
				if wholesaleFits(i) {
					last = 0
				}
				v["rate"] = fmt.Sprintf("%d.25%d", 10+i/25, last)
			}
		})
		switch {
		case v["status"] == "SHIPPED":
			want[r.KeyText()] = expected{fate: dropped}
		case wholesale(i) && !wholesaleFits(i):
			want[r.KeyText()] = expected{fate: deadLettered, why: []string{"amount", "3 decimal places", "decimal(10,2)"}}
		default:
			amount := v["amount"]
			if wholesale(i) {
				amount = strings.TrimSuffix(v["rate"].(string), "0") // 12.250 billed as 12.25
			}
			want[r.KeyText()] = expected{fate: relayed, key: num(v["id"]).String(), value: canonical(t, map[string]any{
				"order_id":  v["id"],
				"customer":  v["customer"].(string) + " @ " + v["address"].(map[string]any)["city"].(string),
				"status":    v["status"],
				"amount":    amount,
				"placed_at": json.Number(new(big.Int).Add(num(v["created_ms"]), big.NewInt(3_600_000_000)).String()),
				"coupon":    v["coupon"],
				"lines":     v["lines"],
			})}
		}
	}
	e.produce(t, p, interoptest.ProduceArgs{Format: interoptest.Avro, Schema: "order.avsc", Records: recs})
	e.produceUnreadable(t, p, want)
	e.check(t, p, check{format: interoptest.Avro, want: want, headers: true})
}

// The Protobuf orders (order.proto, which imports common.proto and four
// well-known types) come mixed with Refunds and Order.Lines (message
// indexes [1] and [0, 0]): those are routed to a topic of JSON, where
// their fields read as they were written; the Orders become Jobs (job.proto, registered by the relay with
// its import) by one map step over their fields — a oneof's member, a
// Timestamp an hour later, an enum, repeated messages. Wholesale orders
// take their id from a uint64, which for half of them is past int64 and
// is dead-lettered naming order_id.
func TestRealBrokerFormatProtobufOrdersFromConfluentsSerializerAreRelayedExactlyOnceAsJobs(t *testing.T) {
	e := formatsSetup(t)
	p := e.pipe(t, formatPipe{
		transforms: `
  - {type: route, name: not-an-order, expr: '"customer" in value ? "" : "{pipeline}.other"', topics: ["{pipeline}.other"]}
  - {type: filter, name: drop-unspecified, when: {field: status, equals: STATUS_UNSPECIFIED}}
  - {type: set, name: wholesale-number, field: id, expr: value.big, when: {field: coupon, equals: WHOLESALE}}
  - type: map
    name: order-to-job
    when: {field: customer, exists: true}
    expr: |
      {
        "order_id": value.id,
        "customer": value.customer,
        "status": value.status,
        "amount": value.?card.orValue(null),
        "placed_at": has(value.placed_at) ? value.placed_at + duration("1h") : null,
        "coupon": value.?coupon.orValue(null),
        "lines": value.lines
      }
  - {type: key, name: key-by-order, field: order_id, when: {field: customer, exists: true}}` + headerSteps,
		source: []string{"value_format: protobuf"},
		output: []string{"value_format: protobuf", "value_schema: {file: job.proto, auto_register: true}",
			"routes:", "  {pipeline}.other: {value_format: json}"},
		files:  []string{"job.proto", "common.proto"},
		topics: []string{"{pipeline}.other"},
	})
	other := p.Name + ".other"

	recs := e.generate(t, interoptest.Protobuf, true)
	want := map[string]expected{}
	others := map[string]json.RawMessage{}       // routed, by source key: the JSON the relay writes
	const maxTimestamp = 253_402_300_799_999_999 // 9999-12-31T23:59:59.999999Z, in µs
	for i := range recs {
		r := &recs[i]
		v := editValue(t, r, func(v map[string]any) {
			if wholesale(i) && r.Message == "sharerelay.test.Order" {
				v["coupon"], v["status"] = "WHOLESALE", "PAID"
				v["big"] = json.Number(strconv.Itoa(1000 + i))
				if !wholesaleFits(i) {
					v["big"] = json.Number(new(big.Int).Add(new(big.Int).Lsh(big.NewInt(1), 63), big.NewInt(int64(i))).String())
				}
			}
		})
		switch {
		case r.Message != "sharerelay.test.Order":
			want[r.KeyText()] = expected{fate: routed}
			others[r.KeyText()] = canonical(t, asRelayJSON(t, v))
		case v["status"] == "STATUS_UNSPECIFIED":
			want[r.KeyText()] = expected{fate: dropped}
		case wholesale(i) && !wholesaleFits(i):
			want[r.KeyText()] = expected{fate: deadLettered, why: []string{"order_id", "out of range"}}
		default:
			id := v["id"]
			if wholesale(i) {
				id = v["big"]
			}
			var placed any
			if v["placed_at"] != nil {
				at := new(big.Int).Add(num(v["placed_at"]), big.NewInt(3_600_000_000))
				if at.Cmp(big.NewInt(maxTimestamp)) > 0 {
					t.Fatalf("order %s: placed_at %v is within an hour of the last Timestamp: choose another seed", r.KeyText(), v["placed_at"])
				}
				placed = json.Number(at.String())
			}
			want[r.KeyText()] = expected{fate: relayed, key: num(id).String(), value: canonical(t, map[string]any{
				"order_id":  id,
				"customer":  v["customer"],
				"status":    v["status"],
				"amount":    v["card"],
				"placed_at": placed,
				"coupon":    v["coupon"],
				"lines":     v["lines"],
			})}
		}
	}
	e.produce(t, p, interoptest.ProduceArgs{Format: interoptest.Protobuf, Schema: "order.proto", Records: recs})
	e.produceUnreadable(t, p, want)
	sources := e.check(t, p, check{format: interoptest.Protobuf, schema: "job.proto", want: want, headers: true, message: "sharerelay.test.Job"})

	// The Refunds and Order.Lines, in JSON on their topic: once each, as
	// they came (but the headers the steps change), keys and timestamps
	// kept.
	got := readTopic(t, e.seeds, other, len(others), time.Second)
	seen := map[string]int{}
	for _, g := range got {
		key := sourceKey(t, sources, kgoHeaders(g.Headers))
		seen[key]++
		w, ok := others[key]
		if !ok {
			t.Errorf("%s: a record on %s, which only the Refunds and Order.Lines go to", key, other)
			continue
		}
		if d := interoptest.Diff(w, g.Value); d != "" {
			t.Errorf("%s: the JSON on %s differs:\n%s\n(got %s)", key, other, d, g.Value)
		}
		src := sources[key]
		if !bytes.Equal(g.Key, src.Key) || !g.Timestamp.Equal(src.Timestamp) {
			t.Errorf("%s: key %q and timestamp %v on %s, want the source's %q and %v", key, g.Key, g.Timestamp, other, src.Key, src.Timestamp)
		}
		checkHeaders(t, key, src, kgoHeaders(g.Headers))
	}
	for key := range others {
		if seen[key] != 1 {
			t.Errorf("%s: on %s %d times, want once", key, other, seen[key])
		}
	}
}

// asRelayJSON is a Refund's or an Order.Line's canonical form as the
// relay writes its value tree in JSON: fields with presence that are not
// set left out, a Timestamp in RFC 3339.
func asRelayJSON(t *testing.T, v map[string]any) map[string]any {
	t.Helper()
	out := map[string]any{}
	for k, x := range v {
		switch {
		case x == nil:
		case k == "at":
			out[k] = time.UnixMicro(num(x).Int64()).UTC().Format(time.RFC3339Nano)
		default:
			out[k] = x
		}
	}
	return out
}

// The JSON Schema orders (order.schema.json: integers past 2^53, a
// decimal as text, nested objects by $ref) become Jobs
// (job.schema.json, registered beforehand and looked up by the relay):
// a timestamp parsed from text and written an hour later, a string from
// a nested field, the key from an integer. Wholesale orders are billed by
// their weight, which for half of them has three decimal places: the
// output schema's pattern refuses those, naming amount.
func TestRealBrokerFormatJSONSchemaOrdersFromConfluentsSerializerAreRelayedExactlyOnceAsJobs(t *testing.T) {
	e := formatsSetup(t)
	p := e.pipe(t, formatPipe{
		transforms: `
  - {type: filter, name: drop-shipped, when: {field: status, equals: SHIPPED}}
  - {type: set, name: wholesale-by-weight, field: amount, expr: string(value.weight), when: {field: coupon, equals: WHOLESALE}}
  - {type: rename, name: order-id, field: id, to: order_id}
  - {type: set, name: customer-in-city, field: customer, expr: 'value.customer + " @ " + value.address.city'}
  - {type: set, name: placed-an-hour-later, field: placed_at, expr: 'timestamp(value.placed_at) + duration("1h")'}
  - {type: key, name: key-by-order, field: order_id}` +
			removeSteps("qty", "price", "weight", "gift", "note_bytes", "placed_on", "order_uuid", "ref", "tags", "address", "channel") +
			headerSteps,
		source: []string{"value_format: json_schema"},
		output: []string{"value_format: json_schema", "value_schema: {file: job.schema.json}"},
		files:  []string{"job.schema.json"},
	})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	jobID, err := e.tool.Register(ctx, interoptest.RegisterArgs{Registry: e.registry, Subject: p.Output + "-value",
		Format: interoptest.JSONSchema, Schema: "job.schema.json"})
	if err != nil {
		t.Fatal(err)
	}

	recs := e.generate(t, interoptest.JSONSchema, false)
	want := map[string]expected{}
	for i := range recs {
		r := &recs[i]
		v := editValue(t, r, func(v map[string]any) {
			if wholesale(i) {
				v["coupon"], v["status"] = "WHOLESALE", "PAID"
				v["weight"] = json.Number("12.125") // three decimal places: not an amount
				if wholesaleFits(i) {
					v["weight"] = json.Number("12.25")
				}
			}
		})
		switch {
		case v["status"] == "SHIPPED":
			want[r.KeyText()] = expected{fate: dropped}
		case wholesale(i) && !wholesaleFits(i):
			want[r.KeyText()] = expected{fate: deadLettered, why: []string{"amount", "does not fit the JSON schema"}}
		default:
			placed, err := time.Parse(time.RFC3339Nano, v["placed_at"].(string))
			if err != nil {
				t.Fatal(err)
			}
			job := map[string]any{
				"order_id":  v["id"],
				"customer":  v["customer"].(string) + " @ " + v["address"].(map[string]any)["city"].(string),
				"status":    v["status"],
				"amount":    v["amount"],
				"placed_at": placed.Add(time.Hour).UTC().Format(time.RFC3339Nano),
				"lines":     v["lines"],
			}
			if wholesale(i) {
				job["amount"] = "12.25"
			}
			if c, ok := v["coupon"]; ok {
				job["coupon"] = c
			}
			want[r.KeyText()] = expected{fate: relayed, key: num(v["id"]).String(), value: canonical(t, job)}
		}
	}
	e.produce(t, p, interoptest.ProduceArgs{Format: interoptest.JSONSchema, Schema: "order.schema.json", Records: recs})
	e.produceUnreadable(t, p, want)
	e.check(t, p, check{format: interoptest.JSONSchema, want: want, headers: true, schemaID: jobID, canon: func(v map[string]any) {
		// Any RFC 3339 form of the same instant will do.
		if s, ok := v["placed_at"].(string); ok {
			if at, err := time.Parse(time.RFC3339Nano, s); err == nil {
				v["placed_at"] = at.UTC().Format(time.RFC3339Nano)
			}
		}
	}})
}

// A JSON Schema record that Confluent's serializer would have refused —
// written here by hand, with the header of the source's registered
// schema — is dead-lettered when source.value_schema.validate is on and
// a step reads the value, with the place it fails; valid records pass
// with their bytes as they came.
//
// (A pipeline whose steps never read the value writes the invalid ones
// as they came: validation happens when a value is decoded.)
func TestRealBrokerFormatJSONSchemaSourceRecordsInvalidUnderTheirSchemaAreDeadLetteredWhenValidated(t *testing.T) {
	e := formatsSetup(t)
	p := e.pipe(t, formatPipe{
		transforms: "\n  - {type: key, name: key-by-order, field: id}",
		source:     []string{"value_format: json_schema", "value_schema: {validate: true}"},
		output:     []string{"value_format: json_schema"},
	})
	const n = 20
	recs := e.generate(t, interoptest.JSONSchema, false)[:n]
	want := map[string]expected{}
	for _, r := range recs {
		want[r.KeyText()] = expected{fate: relayed, key: num(decodeCanonical(t, r.Value)["id"]).String(), value: r.Value}
	}
	sum := e.produce(t, p, interoptest.ProduceArgs{Format: interoptest.JSONSchema, Schema: "order.schema.json", Records: recs})
	if sum.SchemaID <= 0 {
		t.Fatalf("produce summary %+v: want one schema id", sum)
	}

	// Three orders the schema refuses, each framed with its id.
	invalid := []struct {
		key  string
		edit func(map[string]any)
		why  []string
	}{
		{"no-customer", func(v map[string]any) { delete(v, "customer") }, []string{"customer", "does not fit the JSON schema"}},
		{"negative-qty", func(v map[string]any) { v["qty"] = -5 }, []string{"qty", "does not fit the JSON schema"}},
		{"price-in-mills", func(v map[string]any) {
			v["lines"] = []any{map[string]any{"sku": "SKU-1", "qty": 1, "price": "1.234"}}
		}, []string{"lines[0].price", "does not fit the JSON schema"}},
	}
	var bad []*kgo.Record
	for j, x := range invalid {
		v := decodeCanonical(t, recs[j].Value)
		x.edit(v)
		header := binary.BigEndian.AppendUint32([]byte{0}, uint32(sum.SchemaID))
		bad = append(bad, &kgo.Record{Topic: p.Source, Key: []byte(x.key), Value: append(header, canonical(t, v)...),
			Timestamp: e.base.Add(time.Duration(10_000+j) * time.Millisecond)})
		want[x.key] = expected{fate: deadLettered, why: x.why}
	}
	produceRecords(t, p, bad...)
	sources := e.check(t, p, check{format: interoptest.JSONSchema, want: want, schemaID: sum.SchemaID})
	for _, out := range readTopic(t, p.Seeds, p.Output, n, 0) {
		src := sources[sourceKey(t, sources, kgoHeaders(out.Headers))]
		if !bytes.Equal(out.Value, src.Value) {
			t.Errorf("source %s: output value %q, want the source's bytes %q", src.Key, out.Value, src.Value)
		}
	}
}

// formatEnv is what every formats test needs: the interop tool, a broker
// and the registry.
type formatEnv struct {
	tool     *interoptest.Tool
	seeds    []string
	registry string
	base     time.Time // the first generated record's timestamp
}

// formatsSetup starts (or finds) the broker, the interop tool's venv and
// the registry; record timestamps start now.
func formatsSetup(t *testing.T) formatEnv {
	t.Helper()
	seeds := seedsFor(t)
	tool := interoptest.Ensure(t)
	reg := registrytest.Shared(t)
	return formatEnv{tool: tool, seeds: seeds, registry: reg.URL(), base: time.Now().Truncate(time.Millisecond)}
}

// formatPipe is a pipeline in a registry format: the harness's pipeline
// file with lines added to its source and output blocks, the registry,
// and the schema files it names copied beside it. "{pipeline}" in any
// of them is the pipeline's name.
type formatPipe struct {
	transforms     string   // a block list (harness.PipelineOptions.Transforms)
	source, output []string // lines of the source and output blocks
	files          []string // schema files of integration/interop/schemas
	topics         []string // further topics the pipeline writes to
}

// pipe creates the pipeline's topics and file, and checks the file with
// relay validate.
func (e formatEnv) pipe(t *testing.T, f formatPipe) *harness.Pipeline {
	t.Helper()
	p := newPipe(t, e.seeds, harness.PipelineOptions{Workers: 2, Transforms: f.transforms})
	named := func(s string) string { return strings.ReplaceAll(s, "{pipeline}", p.Name) }
	b, err := os.ReadFile(p.Path)
	if err != nil {
		t.Fatal(err)
	}
	y := string(b)
	for _, block := range []struct {
		anchor string
		lines  []string
	}{{"\nsource:\n", f.source}, {"\noutput:\n", f.output}} {
		if strings.Count(y, block.anchor) != 1 {
			t.Fatalf("the harness's pipeline file has not one %q:\n%s", block.anchor, y)
		}
		var add strings.Builder
		for _, l := range block.lines {
			add.WriteString("  " + l + "\n")
		}
		y = strings.Replace(y, block.anchor, block.anchor+add.String(), 1)
	}
	y += fmt.Sprintf("schema_registry:\n  urls: [%q]\n", e.registry)
	if err := os.WriteFile(p.Path, []byte(named(y)), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, name := range f.files {
		b, err := os.ReadFile(e.tool.SchemaPath(name))
		if err == nil {
			err = os.WriteFile(filepath.Join(filepath.Dir(p.Path), name), b, 0o644)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	for _, topic := range f.topics {
		createTopics(t, e.seeds, harness.Topic{Name: named(topic), Partitions: 1})
	}
	c := harness.Command{Name: "relay validate", Path: relayBin, Args: []string{"validate", p.Path}, LogPath: filepath.Join(t.TempDir(), "validate.log")}
	pr, err := harness.Start(c)
	if err != nil {
		t.Fatal(err)
	}
	if code, err := pr.Wait(30 * time.Second); code != 0 || err != nil {
		y, _ := os.ReadFile(p.Path)
		t.Fatalf("relay validate: exit %d (%v):\n%s\n%s", code, err, pr.LogTail(4000), y)
	}
	return p
}

// generate returns formatOrders orders of the interop tool's, record i
// with the timestamp base + i ms.
func (e formatEnv) generate(t *testing.T, f interoptest.Format, mix bool) []interoptest.Record {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	recs, err := e.tool.Generate(ctx, interoptest.GenerateArgs{Format: f, Count: formatOrders, Seed: 46, ProtoMix: mix, BaseTime: e.base})
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != formatOrders {
		t.Fatalf("generated %d orders, want %d", len(recs), formatOrders)
	}
	return recs
}

// produce writes the records to p's source with Confluent's serializer.
func (e formatEnv) produce(t *testing.T, p *harness.Pipeline, a interoptest.ProduceArgs) interoptest.Summary {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	a.Bootstrap, a.Registry, a.Topic = e.seeds, e.registry, p.Source
	sum, err := e.tool.Produce(ctx, a)
	if err != nil {
		t.Fatal(err)
	}
	if sum.Count != len(a.Records) {
		t.Fatalf("produce summary %+v: want %d records", sum, len(a.Records))
	}
	return sum
}

// produceUnreadable writes three records the relay cannot read in any
// registry format — two framed with a schema id the registry never gave,
// one not framed at all — and adds to want that each is dead-lettered.
func (e formatEnv) produceUnreadable(t *testing.T, p *harness.Pipeline, want map[string]expected) {
	t.Helper()
	const unknownID = 0x7fffff01
	framed := binary.BigEndian.AppendUint32([]byte{0}, unknownID)
	recs := []*kgo.Record{
		{Key: []byte("unknown-id-1"), Value: append(bytes.Clone(framed), 0, 2, 4, 6)},
		{Key: []byte("unknown-id-2"), Value: append(bytes.Clone(framed), "no schema has this id"...)},
		{Key: []byte("not-framed"), Value: []byte(`{"id": 1}`)},
	}
	for j, r := range recs {
		r.Topic, r.Timestamp = p.Source, e.base.Add(time.Duration(20_000+j)*time.Millisecond)
	}
	produceRecords(t, p, recs...)
	want["unknown-id-1"] = expected{fate: deadLettered, why: []string{"schema id " + strconv.Itoa(unknownID), "not found"}}
	want["unknown-id-2"] = want["unknown-id-1"]
	want["not-framed"] = expected{fate: deadLettered, why: []string{"Confluent wire format"}}
}

// produceRecords writes records to p's source as they are.
func produceRecords(t *testing.T, p *harness.Pipeline, recs ...*kgo.Record) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(p.SourceSeeds...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
}

// fate is what becomes of a source record.
type fate int

const (
	relayed      fate = iota // one output on the output topic
	dropped                  // filtered: nothing at all
	deadLettered             // one dead letter, the source's key and value as they came
	routed                   // one output on another topic, checked by its test
)

func (f fate) String() string {
	return [...]string{relayed: "relayed", dropped: "filtered", deadLettered: "dead-lettered", routed: "routed"}[f]
}

// expected is what a source record must become.
type expected struct {
	fate  fate
	key   string          // relayed: the output's key
	value json.RawMessage // relayed: the output's value, in the canonical form
	why   []string        // deadLettered: what the reason says, each
}

// check is what to read the outputs with and what to find.
type check struct {
	format interoptest.Format
	schema string // Protobuf: the output's .proto
	// want has an entry for every record of the source, by its key.
	want map[string]expected
	// headers: the outputs have the headers headerSteps make.
	headers bool
	// canon, when set, rewrites the values read back before they are
	// compared, to a form of its own for a field that has several.
	canon func(map[string]any)
	// schemaID, when set, is the id every output must be written with;
	// else they must share one. message is the Protobuf message they
	// must be (with message indexes [0]).
	schemaID int
	message  string
}

// check starts a relay on p, waits until every source record is accounted
// for and the share group has no lag left, and checks each record's fate:
// its output, read back by Confluent's deserializer (value, key,
// timestamp, headers), or its dead letter (the source's key and value,
// the reason); then relay verify. It returns the source records by key.
func (e formatEnv) check(t *testing.T, p *harness.Pipeline, c check) map[string]*kgo.Record {
	t.Helper()
	count := map[fate]int{}
	for _, w := range c.want {
		count[w.fate]++
	}
	sources := map[string]*kgo.Record{}
	for _, r := range readTopic(t, p.SourceSeeds, p.Source, len(c.want), 0) {
		sources[string(r.Key)] = r
	}
	if len(sources) != len(c.want) {
		t.Fatalf("%d distinct keys on the source, want %d", len(sources), len(c.want))
	}
	t.Logf("%d source records: %d to relay, %d to filter, %d to dead-letter, %d to route", len(c.want),
		count[relayed], count[dropped], count[deadLettered], count[routed])

	began := time.Now()
	startRelay(t, p, "r")
	accounted := count[relayed] + count[deadLettered]
	o := settled(t, p, accounted, 2*time.Minute)
	t.Logf("every source record accounted for and acknowledged %s after the relay started", time.Since(began).Round(time.Millisecond))

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	got, err := e.tool.Consume(ctx, interoptest.ConsumeArgs{Bootstrap: e.seeds, Registry: e.registry, Topic: p.Output,
		Format: c.format, Schema: c.schema, Count: count[relayed], Linger: 2 * time.Second, Timeout: 30 * time.Second})
	switch {
	case errors.Is(err, interoptest.ErrTooFew):
		t.Errorf("%d outputs read back, want %d: %v", len(got), count[relayed], err)
	case err != nil:
		t.Fatal(err)
	}
	seen := map[string]int{}
	schemaID := c.schemaID
	for _, g := range got {
		key := sourceKey(t, sources, g.Headers)
		seen[key]++
		w, src := c.want[key], sources[key]
		where := fmt.Sprintf("source %s (%s[%d]@%d)", key, src.Topic, src.Partition, src.Offset)
		if w.fate != relayed {
			t.Errorf("%s: an output, want it %s", where, w.fate)
			continue
		}
		value := g.Value
		if c.canon != nil {
			v := decodeCanonical(t, value)
			c.canon(v)
			value = canonical(t, v)
		}
		if d := interoptest.Diff(w.value, value); d != "" {
			t.Errorf("%s: the output's value differs:\n%s", where, d)
		}
		if k := g.KeyText(); k != w.key {
			t.Errorf("%s: the output's key is %q, want %q", where, k, w.key)
		}
		if g.Timestamp == nil || *g.Timestamp != src.Timestamp.UnixMilli() {
			t.Errorf("%s: the output's timestamp is %v, want the source's %d", where, g.Timestamp, src.Timestamp.UnixMilli())
		}
		if c.headers {
			checkHeaders(t, where, src, g.Headers)
		}
		if schemaID == 0 {
			schemaID = g.SchemaID
		}
		if g.SchemaID != schemaID || schemaID <= 0 {
			t.Errorf("%s: written with schema id %d, want %d", where, g.SchemaID, schemaID)
		}
		if c.message != "" && (g.Message != c.message || fmt.Sprint(g.MessageIndexes) != "[0]") {
			t.Errorf("%s: a %s with message indexes %v, want a %s with [0]", where, g.Message, g.MessageIndexes, c.message)
		}
	}

	dead := readTopic(t, p.Seeds, p.DeadLetter, count[deadLettered], time.Second)
	for _, dl := range dead {
		h := kgoHeaders(dl.Headers)
		key := sourceKey(t, sources, map[string]string{
			lineage.HeaderSourcePartition: h[lineage.HeaderDLQPartition], lineage.HeaderSourceOffset: h[lineage.HeaderDLQOffset]})
		seen[key]++
		w, src := c.want[key], sources[key]
		where := fmt.Sprintf("source %s (%s[%d]@%d)", key, src.Topic, src.Partition, src.Offset)
		if w.fate != deadLettered {
			t.Errorf("%s: dead-lettered (%s), want it %s", where, h[lineage.HeaderDLQErrorMessage], w.fate)
			continue
		}
		if !bytes.Equal(dl.Key, src.Key) || !bytes.Equal(dl.Value, src.Value) {
			t.Errorf("%s: the dead letter's key and value are %q and %q, want the source's %q and %q", where, dl.Key, dl.Value, src.Key, src.Value)
		}
		if h[lineage.HeaderDLQTopic] != p.Source || h[lineage.HeaderDLQStage] != lineage.DLQStageValueConverter || h[lineage.HeaderDLQKind] != lineage.DLQKindPermanent {
			t.Errorf("%s: dead letter of topic %q, stage %q, kind %q; want %s, %s, %s", where, h[lineage.HeaderDLQTopic],
				h[lineage.HeaderDLQStage], h[lineage.HeaderDLQKind], p.Source, lineage.DLQStageValueConverter, lineage.DLQKindPermanent)
		}
		for _, s := range w.why {
			if msg := h[lineage.HeaderDLQErrorMessage]; !strings.Contains(msg, s) {
				t.Errorf("%s: the dead letter's reason %q does not say %q", where, msg, s)
			}
		}
		for name, v := range kgoHeaders(src.Headers) {
			if h[name] != v {
				t.Errorf("%s: the dead letter's header %s is %q, want the source's %q", where, name, h[name], v)
			}
		}
	}
	for key, w := range c.want {
		if n := seen[key]; (w.fate == relayed || w.fate == deadLettered) && n != 1 {
			t.Errorf("source %s: %d outputs and dead letters, want it %s once", key, n, w.fate)
		}
	}

	if t.Failed() {
		t.FailNow()
	}
	exactlyOnce(t, o, accounted, count[deadLettered])

	waitNoOpenTxn(t, p.Seeds, p.Output, p.DeadLetter)
	code, r := relayVerify(t, p)
	if code != 0 || !r.Exact || r.Total.Sources != len(c.want) || r.Total.Output != count[relayed]+count[routed] ||
		r.Total.DeadLettered != count[deadLettered] || r.Total.Filtered != count[dropped] {
		t.Fatalf("relay verify: exit %d, exact %v, total %+v; want exact, %d sources, %d with output, %d dead-lettered, %d filtered",
			code, r.Exact, r.Total, len(c.want), count[relayed]+count[routed], count[deadLettered], count[dropped])
	}
	t.Logf("relay verify: %s", r.Check)
	return sources
}

// checkHeaders checks the headers headerSteps make from src's.
func checkHeaders(t *testing.T, where string, src *kgo.Record, got map[string]string) {
	t.Helper()
	seq := kgoHeaders(src.Headers)["seq"]
	if got["relayed-by"] != "sharerelay" || got["source-seq"] != seq || got["seq"] != "relayed" {
		t.Errorf("%s: headers relayed-by %q, source-seq %q, seq %q; want sharerelay, %s, relayed", where, got["relayed-by"], got["source-seq"], got["seq"], seq)
	}
	if o, ok := got["origin"]; ok {
		t.Errorf("%s: header origin %q, which a step removes", where, o)
	}
}

// sourceKey returns the key of the source record that headers name
// (sharerelay.source.partition and offset).
func sourceKey(t *testing.T, sources map[string]*kgo.Record, headers map[string]string) string {
	t.Helper()
	part, err1 := strconv.ParseInt(headers[lineage.HeaderSourcePartition], 10, 32)
	off, err2 := strconv.ParseInt(headers[lineage.HeaderSourceOffset], 10, 64)
	if err1 != nil || err2 != nil {
		t.Fatalf("a record without its source's partition and offset: headers %v", headers)
	}
	for k, r := range sources {
		if r.Partition == int32(part) && r.Offset == off {
			return k
		}
	}
	t.Fatalf("a record of source partition %d offset %d, which is no record of the source", part, off)
	return ""
}

// readTopic reads topic read_committed from its start until it has want
// records, then linger longer to see any beyond them.
func readTopic(t *testing.T, seeds []string, topic string, want int, linger time.Duration) []*kgo.Record {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.ConsumeTopics(topic), kgo.FetchMaxWait(200*time.Millisecond),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	deadline := time.Now().Add(30 * time.Second)
	var out []*kgo.Record
	var until time.Time
	for {
		now := time.Now()
		if len(out) >= want && until.IsZero() {
			until = now.Add(linger)
		}
		if !until.IsZero() && !now.Before(until) {
			return out
		}
		if now.After(deadline) {
			t.Fatalf("read %d records of %s in 30s, want %d", len(out), topic, want)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
		fs := cl.PollFetches(ctx)
		cancel()
		fs.EachRecord(func(r *kgo.Record) { out = append(out, r) })
	}
}

// kgoHeaders returns headers as a map (the last of a repeated name).
func kgoHeaders(hs []kgo.RecordHeader) map[string]string {
	m := make(map[string]string, len(hs))
	for _, h := range hs {
		m[h.Key] = string(h.Value)
	}
	return m
}

// editValue decodes r's canonical value, lets edit change it, stores the
// result in r and returns it.
func editValue(t *testing.T, r *interoptest.Record, edit func(map[string]any)) map[string]any {
	t.Helper()
	v := decodeCanonical(t, r.Value)
	edit(v)
	r.Value = canonical(t, v)
	return v
}

// decodeCanonical decodes a canonical value (an object), numbers as
// json.Number.
func decodeCanonical(t *testing.T, raw json.RawMessage) map[string]any {
	t.Helper()
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	var v map[string]any
	if err := d.Decode(&v); err != nil {
		t.Fatalf("canonical value %s: %v", raw, err)
	}
	return v
}

// canonical encodes v as JSON.
func canonical(t *testing.T, v any) json.RawMessage {
	t.Helper()
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		t.Fatal(err)
	}
	return bytes.TrimSpace(b.Bytes())
}

// num is an integer of a canonical value.
func num(v any) *big.Int {
	n, ok := new(big.Int).SetString(fmt.Sprint(v), 10)
	if !ok {
		panic(fmt.Sprintf("%v is not an integer", v))
	}
	return n
}
