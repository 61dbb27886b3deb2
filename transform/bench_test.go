package transform_test

import (
	"testing"

	"github.com/sharerelay/sharerelay/transform"
)

// benchValue is a typical ~200-byte order event.
var benchValue = []byte(`{"order_id":12345678901234567890,"customer":{"id":"c-1029","tier":"gold","country":"FR"},"items":[{"sku":"b-1","qty":2},{"sku":"b-7","qty":1}],"total":42.50,"currency":"EUR","ts":"2025-01-01T12:00:00Z"}`)

func benchChain(b *testing.B, c *transform.Chain) {
	b.Helper()
	b.ReportAllocs()
	b.SetBytes(int64(len(benchValue)))
	r := &transform.Record{}
	for b.Loop() {
		// A record as the relay makes one for each source record; steps
		// replace the value, they never write into its bytes.
		*r = transform.Record{Value: benchValue, Headers: r.Headers[:0], Source: transform.Source{DeliveryCount: 1}}
		if _, err := c.Apply(bg, r); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkChainSetRename(b *testing.B) {
	benchChain(b, mustBuild(b,
		transform.Spec{Type: "set", Field: "meta.source", Value: "relay"},
		transform.Spec{Type: "rename", Field: "customer.id", To: "customer_id"},
	))
}

func BenchmarkChainSetWhenNotMatching(b *testing.B) {
	benchChain(b, mustBuild(b,
		transform.Spec{Type: "set", Field: "vip", Value: true, When: &transform.Condition{Field: "customer.tier", Equals: ptr("platinum")}},
	))
}

func BenchmarkChainBookNestRules(b *testing.B) {
	benchChain(b, mustBuild(b,
		transform.Spec{Type: "fail", Kind: "permanent", When: &transform.Condition{Field: "order_id", Modulo: 500, Remainder: 1}},
		transform.Spec{Type: "fail", When: &transform.Condition{Field: "order_id", Modulo: 7, Remainder: 6, MaxDeliveryCount: 1}},
		transform.Spec{Type: "route", Field: "customer.country", Routes: map[string]string{"FR": "orders-fr"}, Default: "orders"},
	))
}

func BenchmarkChainHeaderFilter(b *testing.B) {
	benchChain(b, mustBuild(b,
		transform.Spec{Type: "header", Header: "via", Value: "relay"},
		transform.Spec{Type: "filter", Action: "keep", When: &transform.Condition{Header: "via", In: []string{"relay"}}},
	))
}

func BenchmarkChainExpressionRoute(b *testing.B) {
	benchChain(b, mustBuild(b,
		transform.Spec{Type: "route", Cases: []transform.RouteCase{
			{Expr: `value.customer.tier == "gold" && value.total > 40`, Topic: "orders-vip"},
		}, Default: "orders"},
	))
}

func BenchmarkChainExpressionOnKeyOnly(b *testing.B) {
	benchChain(b, mustBuild(b,
		transform.Spec{Type: "filter", When: &transform.Condition{Expr: `key.startsWith("test-")`}},
	))
}

// BenchmarkCostLimitWorstCase measures how long an expression runs before
// the default cost limit stops it: the time one poison expression can
// take from a worker per record.
func BenchmarkCostLimitWorstCase(b *testing.B) {
	items := []byte(`{"items":[`)
	for i := range 1000 {
		if i > 0 {
			items = append(items, ',')
		}
		items = append(items, '1')
	}
	items = append(items, "]}"...)
	c := mustBuild(b, transform.Spec{Type: "filter", When: &transform.Condition{
		Expr: `value.items.all(i, value.items.all(j, value.items.exists(k, k == 2) == false))`}})
	for b.Loop() {
		if _, err := c.Apply(bg, &transform.Record{Value: items}); err == nil {
			b.Fatal("the cost limit did not stop the expression")
		}
	}
}
