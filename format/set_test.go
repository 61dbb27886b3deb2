package format_test

import (
	"context"
	"errors"
	"math/big"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/hamba/avro/v2"
	"github.com/twmb/franz-go/pkg/sr"

	"github.com/sharerelay/sharerelay/config"
	"github.com/sharerelay/sharerelay/format"
	"github.com/sharerelay/sharerelay/internal/srtest"
	"github.com/sharerelay/sharerelay/transform"
)

// pipeline parses a pipeline file held in testdata/set (so that its
// schema files resolve there) with the registry at url.
func pipeline(t *testing.T, url, body string) *config.Pipeline {
	t.Helper()
	y := "name: p\nbrokers: [localhost:9092]\nschema_registry: {urls: [" + url + "]}\ndead_letter: {topic: dlq}\n" + body
	p, err := config.Parse("testdata/set/p.yaml", []byte(y), nil)
	if err != nil {
		t.Fatalf("pipeline: %v\n%s", err, y)
	}
	return p
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

type order struct {
	ID       int64     `avro:"id"`
	Customer string    `avro:"customer"`
	Amount   *big.Rat  `avro:"amount"`
	Placed   time.Time `avro:"placed"`
	Coupon   *string   `avro:"coupon"`
}

// avroOrder writes an order as a Confluent-framed Avro record with schema
// id, through hamba's encoder of Go structs (not the relay's tree path).
func avroOrder(t *testing.T, id int, o order) []byte {
	t.Helper()
	s := avro.MustParse(readFile(t, "testdata/set/order.avsc"))
	b, err := avro.Marshal(s, o)
	if err != nil {
		t.Fatal(err)
	}
	var h sr.ConfluentHeader
	out, err := h.AppendEncode(nil, id, nil)
	if err != nil {
		t.Fatal(err)
	}
	return append(out, b...)
}

func chain(t *testing.T, p *config.Pipeline) *transform.Chain {
	t.Helper()
	f, regs, err := format.ForPipeline(p)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range regs {
		format.SetFailFast(r, 0) // the tests switch the registry's failures at once
	}
	c, err := p.ChainWith(f)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func apply(t *testing.T, c *transform.Chain, value []byte) ([]*transform.Record, error) {
	t.Helper()
	return c.Apply(context.Background(), &transform.Record{Topic: "jobs", Value: value, Key: []byte("k"),
		Source: transform.Source{Topic: "orders", Timestamp: time.UnixMilli(1_700_000_000_000)}})
}

func TestAnAvroOrderBecomesAnAvroJobWithItsFieldsRenamed(t *testing.T) {
	reg := srtest.New()
	defer reg.Close()
	id, _ := reg.Register("orders-value", srtest.Schema{Schema: readFile(t, "testdata/set/order.avsc")})
	p := pipeline(t, reg.URL(), `
source: {topics: [orders], value_format: avro}
output: {topic: jobs, value_schema: {file: job.avsc, auto_register: true}}
transforms:
  - {type: rename, field: id, to: order_id}
  - {type: remove, field: placed}
  - {type: remove, field: coupon}
  - {type: filter, when: {expr: 'value.customer == "nobody"'}}
`)
	c := chain(t, p)
	in := avroOrder(t, id, order{ID: 42, Customer: "ada", Amount: big.NewRat(1234, 100), Placed: time.UnixMilli(1_700_000_000_000).UTC()})
	outs, err := apply(t, c, in)
	if err != nil {
		t.Fatalf("Apply: %v", err)
	}
	if len(outs) != 1 {
		t.Fatalf("%d outputs, want 1", len(outs))
	}
	// Read back with hamba into a Go struct: the relay's bytes are a
	// Job under the id the registry gave job.avsc.
	jobID, _ := reg.Register("jobs-value", srtest.Schema{Schema: readFile(t, "testdata/set/job.avsc")})
	var h sr.ConfluentHeader
	gotID, payload, err := h.DecodeID(outs[0].Value)
	if err != nil || gotID != jobID {
		t.Fatalf("output header: id %d (err %v), want id %d", gotID, err, jobID)
	}
	var job struct {
		OrderID  int64    `avro:"order_id"`
		Customer string   `avro:"customer"`
		Amount   *big.Rat `avro:"amount"`
	}
	if err := avro.Unmarshal(avro.MustParse(readFile(t, "testdata/set/job.avsc")), payload, &job); err != nil {
		t.Fatal(err)
	}
	if job.OrderID != 42 || job.Customer != "ada" || job.Amount.Cmp(big.NewRat(1234, 100)) != 0 {
		t.Fatalf("job %+v", job)
	}
	if !outs[0].Timestamp.Equal(time.UnixMilli(1_700_000_000_000)) {
		t.Fatalf("timestamp %v, want the source's", outs[0].Timestamp)
	}
	// filtered
	outs, err = apply(t, c, avroOrder(t, id, order{ID: 1, Customer: "nobody", Amount: big.NewRat(0, 1), Placed: time.Now().UTC()}))
	if err != nil || len(outs) != 0 {
		t.Fatalf("a filtered order: %d outputs, err %v", len(outs), err)
	}
}

func TestARecordNoStepReadsPassesThroughWithoutTheRegistry(t *testing.T) {
	reg := srtest.New()
	defer reg.Close()
	id, _ := reg.Register("orders-value", srtest.Schema{Schema: readFile(t, "testdata/set/order.avsc")})
	p := pipeline(t, reg.URL(), `
source: {topics: [orders], value_format: avro}
output: {topic: jobs}
transforms:
  - {type: header, header: seen, value: "yes"}
`)
	c := chain(t, p)
	in := avroOrder(t, id, order{ID: 7, Customer: "bo", Amount: big.NewRat(1, 1), Placed: time.Now().UTC()})
	before := reg.Requests.Load()
	reg.Down(true)
	outs, err := apply(t, c, in)
	if err != nil {
		t.Fatalf("Apply with the registry down: %v", err)
	}
	if string(outs[0].Value) != string(in) {
		t.Fatalf("the value changed: % x", outs[0].Value)
	}
	if n := reg.Requests.Load() - before; n != 0 {
		t.Fatalf("%d registry requests for a record no step read", n)
	}
}

func TestARegistryOutageHoldsTheRecordAndAnUnknownIDDeadLettersIt(t *testing.T) {
	reg := srtest.New()
	defer reg.Close()
	id, _ := reg.Register("orders-value", srtest.Schema{Schema: readFile(t, "testdata/set/order.avsc")})
	p := pipeline(t, reg.URL(), `
source: {topics: [orders], value_format: avro}
output: {topic: jobs}
transforms:
  - {type: set, field: customer, expr: 'value.customer.upperAscii()'}
`)
	c := chain(t, p)
	in := avroOrder(t, id, order{ID: 7, Customer: "bo", Amount: big.NewRat(1, 1), Placed: time.Now().UTC()})

	reg.Down(true)
	_, err := apply(t, c, in)
	var e *transform.Error
	if !errors.As(err, &e) || e.Kind != transform.KindHold || e.Reason != "schema registry unavailable" || e.Step != "source.value_format" {
		t.Fatalf("registry down: %v (%+v), want a hold for the registry", err, e)
	}
	reg.Down(false)
	reg.RefuseCredentials(true)
	if _, err = apply(t, c, in); !errors.As(err, &e) || e.Kind != transform.KindHold || !strings.Contains(e.Error(), "credentials refused") {
		t.Fatalf("credentials refused: %v, want a hold", err)
	}
	reg.RefuseCredentials(false)
	outs, err := apply(t, c, in)
	if err != nil || len(outs) != 1 {
		t.Fatalf("registry back: %d outputs, %v", len(outs), err)
	}
	// Cached: no more requests for this id, even with the registry down.
	reg.Down(true)
	if _, err := apply(t, c, in); err != nil {
		t.Fatalf("a cached id with the registry down: %v", err)
	}
	reg.Down(false)

	unknown := avroOrder(t, 99, order{ID: 1, Customer: "x", Amount: big.NewRat(1, 1), Placed: time.Now().UTC()})
	_, err = apply(t, c, unknown)
	if !errors.As(err, &e) || e.Kind != transform.KindPermanent || e.Class != "avro" || e.Converter != "value" || !strings.Contains(e.Error(), "schema id 99") {
		t.Fatalf("unknown id: %v (%+v), want a permanent avro failure naming the id", err, e)
	}
	_, err = apply(t, c, []byte(`{"not":"avro"}`))
	if !errors.As(err, &e) || e.Kind != transform.KindPermanent || !strings.Contains(e.Error(), "wire format") {
		t.Fatalf("JSON in an avro topic: %v, want a permanent failure", err)
	}
}

func TestAValueThatDoesNotFitTheOutputSchemaIsDeadLetteredWithItsPath(t *testing.T) {
	reg := srtest.New()
	defer reg.Close()
	id, _ := reg.Register("orders-value", srtest.Schema{Schema: readFile(t, "testdata/set/order.avsc")})
	p := pipeline(t, reg.URL(), `
source: {topics: [orders], value_format: avro}
output: {topic: jobs, value_schema: {file: job.avsc, auto_register: true}}
transforms:
  - {type: rename, field: id, to: order_id}
  - {type: remove, field: placed}
  - {type: remove, field: coupon}
  - {type: set, field: amount, expr: 'double(value.amount) / 3.0'}
`)
	c := chain(t, p)
	_, err := apply(t, c, avroOrder(t, id, order{ID: 7, Customer: "bo", Amount: big.NewRat(1, 1), Placed: time.Now().UTC()}))
	var e *transform.Error
	if !errors.As(err, &e) || e.Kind != transform.KindPermanent || e.Step != "output.value_format" || !strings.Contains(e.Error(), "amount") {
		t.Fatalf("%v (%+v), want a permanent failure of output.value_format naming amount", err, e)
	}
}

func TestAnAvroOrderWrittenAsJSON(t *testing.T) {
	reg := srtest.New()
	defer reg.Close()
	id, _ := reg.Register("orders-value", srtest.Schema{Schema: readFile(t, "testdata/set/order.avsc")})
	p := pipeline(t, reg.URL(), `
source: {topics: [orders], value_format: avro}
output: {topic: jobs, value_format: json}
`)
	c := chain(t, p)
	outs, err := apply(t, c, avroOrder(t, id, order{ID: 7, Customer: "bo", Amount: big.NewRat(1205, 100), Placed: time.UnixMilli(1_700_000_000_123).UTC()}))
	if err != nil {
		t.Fatal(err)
	}
	want := `{"amount":12.05,"coupon":null,"customer":"bo","id":7,"placed":"2023-11-14T22:13:20.123Z"}`
	if got := string(outs[0].Value); got != want {
		t.Fatalf("got %s\nwant %s", got, want)
	}
}

func TestJSONSchemaValuesAreValidatedOnTheWayInAndOut(t *testing.T) {
	reg := srtest.New()
	defer reg.Close()
	js := readFile(t, "testdata/set/order.schema.json")
	id, _ := reg.Register("orders-value", srtest.Schema{Schema: js, SchemaType: "JSON"})
	p := pipeline(t, reg.URL(), `
source: {topics: [orders], value_format: json_schema, value_schema: {validate: true}}
output: {topic: jobs}
transforms:
  - {type: set, field: extra, value: 1, when: {field: customer, equals: extra}}
`)
	c := chain(t, p)
	frame := func(body string) []byte {
		var h sr.ConfluentHeader
		b, _ := h.AppendEncode(nil, id, nil)
		return append(b, body...)
	}
	outs, err := apply(t, c, frame(`{"id": 1, "customer": "ada"}`))
	if err != nil || string(outs[0].Value) != string(frame(`{"id": 1, "customer": "ada"}`)) {
		t.Fatalf("a valid value: %v, %d outputs", err, len(outs))
	}
	var e *transform.Error
	_, err = apply(t, c, frame(`{"id": "one", "customer": "ada"}`))
	if !errors.As(err, &e) || e.Kind != transform.KindPermanent || !strings.Contains(e.Error(), "id") {
		t.Fatalf("an invalid value read: %v, want a permanent failure at id", err)
	}
	_, err = apply(t, c, frame(`{"id": 2, "customer": "extra"}`))
	if !errors.As(err, &e) || e.Kind != transform.KindPermanent || e.Step != "output.value_format" || !strings.Contains(e.Error(), "extra") {
		t.Fatalf("a value the step made invalid: %v, want a permanent failure of the output", err)
	}
}

func TestTheOutputSchemaIsLookedUpAndHeldForWhenNotRegistered(t *testing.T) {
	reg := srtest.New()
	defer reg.Close()
	id, _ := reg.Register("orders-value", srtest.Schema{Schema: readFile(t, "testdata/set/order.avsc")})
	p := pipeline(t, reg.URL(), `
source: {topics: [orders], value_format: avro}
output: {topic: jobs, value_schema: {file: job.avsc}}
transforms:
  - {type: rename, field: id, to: order_id}
  - {type: remove, field: placed}
  - {type: remove, field: coupon}
`)
	c := chain(t, p)
	in := avroOrder(t, id, order{ID: 7, Customer: "bo", Amount: big.NewRat(1, 1), Placed: time.Now().UTC()})
	_, err := apply(t, c, in)
	var e *transform.Error
	if !errors.As(err, &e) || e.Kind != transform.KindHold || !strings.Contains(e.Error(), "not registered under subject jobs-value") {
		t.Fatalf("%v, want a hold naming the subject", err)
	}
	reg.Register("jobs-value", srtest.Schema{Schema: readFile(t, "testdata/set/job.avsc")})
	if _, err := apply(t, c, in); err != nil {
		t.Fatalf("once registered: %v", err)
	}
}

func TestAJSONSchemaSourceThatValidatesChecksRecordsNoStepReads(t *testing.T) {
	reg := srtest.New()
	defer reg.Close()
	id, _ := reg.Register("orders-value", srtest.Schema{Schema: readFile(t, "testdata/set/order.schema.json"), SchemaType: "JSON"})
	p := pipeline(t, reg.URL(), `
source: {topics: [orders], value_format: json_schema, value_schema: {validate: true}}
output: {topic: jobs}
transforms:
  - {type: header, header: via, value: relay}
`)
	c := chain(t, p)
	var h sr.ConfluentHeader
	frame, _ := h.AppendEncode(nil, id, nil)
	valid := append(append([]byte{}, frame...), `{"id": 1, "customer": "ada"}`...)
	outs, err := apply(t, c, valid)
	if err != nil || string(outs[0].Value) != string(valid) {
		t.Fatalf("a valid value: %v; it must pass through as it came", err)
	}
	_, err = apply(t, c, append(append([]byte{}, frame...), `{"id": 1}`...))
	var e *transform.Error
	if !errors.As(err, &e) || e.Kind != transform.KindPermanent || e.Step != "source.value_format" || !strings.Contains(e.Error(), "customer") {
		t.Fatalf("an invalid value no step reads: %v, want a permanent failure naming customer", err)
	}
}
