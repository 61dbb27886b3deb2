package format_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/sharerelay/sharerelay/config"
	"github.com/sharerelay/sharerelay/format"
	"github.com/sharerelay/sharerelay/transform"
)

// benchOrder is an order of about size bytes as JSON (its items' notes
// pad it), as a value tree.
func benchOrder(size int) map[string]any {
	note := strings.Repeat("n", 16)
	items := []any{}
	o := map[string]any{
		"order_id": int64(1234567890123), "customer": "c-1029", "tier": "gold", "country": "FR",
		"total": 42.5, "currency": "EUR", "placed_at": time.UnixMilli(1_700_000_000_000).UTC(), "items": items,
	}
	for {
		b, _ := transform.JSON.Encode(context.Background(), o, transform.Origin{})
		if len(b) >= size {
			return o
		}
		items = append(items, map[string]any{"sku": fmt.Sprintf("b-%d", len(items)), "qty": int64(len(items) + 1), "note": note})
		o["items"] = items
	}
}

// benchFormats runs, for each format, size and chain, the pipeline's
// chain on one record, as the relay runs it for each source record:
// decode what a step reads, run the steps, encode what changed.
//
//	rename-filter: a rename and a filter on a field (decode, encode)
//	pass-through:  a header step only (no decode, no encode)
func BenchmarkFormats(b *testing.B) {
	chains := map[string]string{
		"rename-filter": "  - {type: rename, field: customer, to: client}\n  - {type: filter, action: keep, when: {expr: 'value.total > 0.0'}}\n",
		"pass-through":  "  - {type: header, header: via, value: relay}\n",
	}
	for _, size := range []int{200, 1024} {
		for _, f := range []string{"json", "avro", "protobuf"} {
			for _, name := range []string{"rename-filter", "pass-through"} {
				b.Run(fmt.Sprintf("%s/%dB/%s", f, size, name), func(b *testing.B) {
					benchFormat(b, f, size, name, chains[name])
				})
			}
		}
	}
}

func benchFormat(b *testing.B, f string, size int, name, steps string) {
	ctx := context.Background()
	reg := format.NewMemoryRegistry()
	ext := map[string]string{"avro": ".avsc", "protobuf": ".proto"}[f]
	out := ""
	if f != "json" {
		out = ", value_schema: {file: job" + ext + ", auto_register: true}"
		if name == "pass-through" {
			out = ""
		}
	}
	y := fmt.Sprintf(`name: bench
brokers: [localhost:9092]
schema_registry: {urls: ["http://localhost:8081"]}
source: {topics: [orders], value_format: %s}
output: {topic: jobs%s}
dead_letter: {topic: dlq}
transforms:
%s`, f, out, steps)
	p, err := config.Parse("testdata/bench/p.yaml", []byte(y), nil)
	if err != nil {
		b.Fatal(err)
	}
	var value []byte
	tree := benchOrder(size)
	if f == "json" {
		value, _ = transform.JSON.Encode(ctx, tree, transform.Origin{})
	} else {
		w, err := format.Writer(reg, f, "testdata/bench/order"+ext, "orders-value")
		if err != nil {
			b.Fatal(err)
		}
		if value, err = w.Encode(ctx, tree, transform.Origin{}); err != nil {
			b.Fatal(err)
		}
	}
	var formats transform.Formats
	if format.Needed(p) {
		if formats, err = format.New(p, reg, reg); err != nil {
			b.Fatal(err)
		}
	}
	c, err := p.ChainWith(formats)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.SetBytes(int64(len(value)))
	r := &transform.Record{}
	for b.Loop() {
		*r = transform.Record{Topic: "jobs", Value: value, Headers: r.Headers[:0], Source: transform.Source{Topic: "orders", DeliveryCount: 1}}
		outs, err := c.Apply(ctx, r)
		if err != nil || len(outs) != 1 {
			b.Fatalf("%d outputs, %v", len(outs), err)
		}
	}
	b.ReportMetric(float64(len(value)), "value-bytes")
	b.ReportMetric(float64(reg.Requests()), "registry-requests")
}
