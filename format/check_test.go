package format_test

import (
	"strings"
	"testing"

	"github.com/sharerelay/sharerelay/config"
	"github.com/sharerelay/sharerelay/format"
)

// checked parses a pipeline held in testdata/set with format.Check and
// returns its errors, one a line.
func checked(t *testing.T, body string) string {
	t.Helper()
	y := "name: p\nbrokers: [localhost:9092]\nschema_registry: {urls: [\"http://localhost:8081\"]}\ndead_letter: {topic: dlq}\n" + body
	_, err := config.Parse("testdata/set/p.yaml", []byte(y), nil, format.Check)
	if err == nil {
		return ""
	}
	return err.Error()
}

func TestValidateNamesTheFieldsAStepReadsThatTheSourceSchemaLacks(t *testing.T) {
	got := checked(t, `
source: {topics: [orders], value_format: avro, value_schema: {file: order.avsc}}
output: {topic: jobs}
transforms:
  - {type: filter, when: {field: custmer, equals: ada}}
  - {type: set, field: total.cents, expr: 'value.amount * 100.0'}
  - {type: filter, when: {expr: 'has(value.total.cents) && value.?coupon.orValue("") != "" && value["placed"] > timestamp("2024-01-01T00:00:00Z") && value.id.x == 1'}}
  - {type: route, field: customer, routes: {a: jobs}}
  - {type: map, expr: '{"n": value.nope}'}
  - {type: remove, field: n.m}
`)
	for _, want := range []string{
		"transforms[0].when.field: custmer: no such field in the source's schema (order.avsc); did you mean customer?",
		"transforms[2].when.expr: id.x: id is not an object in the source's schema (order.avsc)",
		"transforms[4].expr: nope: no such field",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("missing %q in:\n%s", want, got)
		}
	}
	// total.cents is created by the set step before it; coupon and
	// placed are fields; after the map nothing more is checked.
	for _, not := range []string{": total", ": coupon", ": placed", "transforms[3]", "transforms[5]"} {
		if strings.Contains(got, not) {
			t.Errorf("%q reported, but it is fine:\n%s", not, got)
		}
	}
}

func TestValidateCompilesEverySchemaFileAndNamesWhatIsWrongInIt(t *testing.T) {
	got := checked(t, `
source: {topics: [orders], value_format: avro, value_schema: {file: broken.avsc}}
output:
  topic: jobs
  value_format: protobuf
  value_schema: {file: broken.proto}
  routes:
    audit: {value_format: protobuf, value_schema: {file: order.proto, message: shop.Nope}}
transforms:
  - {type: copy, topics: [audit]}
`)
	for _, want := range []string{
		"source.value_schema.file:", "lung",
		"output.value_schema.file:", "broken.proto:3:", "strin",
		"output.routes.audit.value_schema.message:", "shop.Nope",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("missing %q in:\n%s", want, got)
		}
	}
}

func TestAValidPipelineWithSchemasPassesTheCheck(t *testing.T) {
	if got := checked(t, `
source: {topics: [orders], value_format: avro, value_schema: {file: order.avsc}}
output: {topic: jobs, value_schema: {file: job.avsc}}
transforms:
  - {type: rename, field: id, to: order_id}
  - {type: filter, when: {expr: 'value.order_id > 0 && value.customer != ""'}}
`); got != "" {
		t.Fatalf("a valid pipeline: %s", got)
	}
}
