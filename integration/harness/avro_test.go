package harness_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/hamba/avro/v2"

	"github.com/sharerelay/sharerelay/config"
	"github.com/sharerelay/sharerelay/format"
	"github.com/sharerelay/sharerelay/integration/harness"
)

func TestAvroOrdersAreFramedWithTheirVersionsIDAndReadBack(t *testing.T) {
	ids := []int{11, 12, 13, 14}
	orders := harness.Orders{Topic: "orders", Run: "chaos-x-1", Avro: &harness.AvroOrders{IDs: ids}}
	for i := 1; i <= 8; i++ {
		r := orders.Record(i)
		if string(r.Key) != fmt.Sprint(i) {
			t.Errorf("order %d: key %q", i, r.Key)
		}
		v := i % len(ids) // the default version
		if len(r.Value) < 5 || r.Value[0] != 0 || int(binary.BigEndian.Uint32(r.Value[1:5])) != ids[v] {
			t.Fatalf("order %d: value %x is not framed with id %d", i, r.Value, ids[v])
		}
		// Read with its own version's schema: the fields it has; those
		// it lacks read as their defaults (AvroOrders.Order).
		var got harness.AvroOrder
		if err := avro.Unmarshal(avro.MustParse(harness.AvroOrderSchemas[v]), r.Value[5:], &got); err != nil {
			t.Fatalf("order %d: %v", i, err)
		}
		if v < 3 {
			got.Region = "eu"
		}
		if want := orders.Avro.Order(i, "chaos-x-1"); got != want {
			t.Errorf("order %d (version %d) reads %+v, want %+v", i, v+1, got, want)
		}
		if id, err := orders.OrderID(r.Value); err != nil || id != i {
			t.Errorf("order %d: OrderID %d, %v", i, id, err)
		}
	}
	if _, err := orders.OrderID(append([]byte{0, 0, 0, 0, 99}, 2)); err == nil {
		t.Error("OrderID read a value framed with an id none of the versions has")
	}
	if got := harness.AvroOrderStatus(40) + harness.AvroOrderStatus(3) + harness.AvroOrderStatus(1); got != "CANCELLEDPAIDNEW" {
		t.Errorf("statuses of orders 40, 3, 1: %s", got)
	}
}

func TestAvroOrdersTakeTheVersionTheirChooserGives(t *testing.T) {
	orders := harness.Orders{Topic: "orders", Avro: &harness.AvroOrders{IDs: []int{1, 2, 3, 4}, Version: func(i int) int { return 3 }}}
	r := orders.Record(7)
	if !bytes.Equal(r.Value[:5], []byte{0, 0, 0, 0, 4}) {
		t.Fatalf("order 7 framed %x, want id 4", r.Value[:5])
	}
	if o := orders.Avro.Order(7, ""); o.Region != "us" || o.Priority != 2 || o.Note != "order 7" {
		t.Errorf("order 7 in the newest version: %+v", o)
	}
}

func TestJSONOrdersGiveTheirOrderID(t *testing.T) {
	orders := harness.Orders{Topic: "orders", Run: "r"}
	if id, err := orders.OrderID(orders.Record(42).Value); err != nil || id != 42 {
		t.Errorf("OrderID %d, %v", id, err)
	}
	if _, err := orders.OrderID([]byte(`{"run":"r"}`)); err == nil {
		t.Error("OrderID of a value without order_id")
	}
}

func TestDecodeAvroJobReadsOnlyTheJobsID(t *testing.T) {
	payload, err := avro.Marshal(avro.MustParse(harness.AvroJobSchema), harness.AvroJob{ID: 5, Run: "r", Status: "PAID", Region: "us"})
	if err != nil {
		t.Fatal(err)
	}
	b := append([]byte{0, 0, 0, 0, 9}, payload...)
	if j, err := harness.DecodeAvroJob(b, 9); err != nil || j.ID != 5 || j.Status != "PAID" || j.Region != "us" {
		t.Errorf("DecodeAvroJob: %+v, %v", j, err)
	}
	if _, err := harness.DecodeAvroJob(b, 8); !errors.Is(err, harness.ErrNotJob) {
		t.Errorf("DecodeAvroJob with another id: %v, want ErrNotJob", err)
	}
}

// The formats, the registry and the schema files reach the file and its
// directory, and the relay's own check compiles the schema the file
// names; without them the file has no registry (the other tests).
func TestNewPipelineWritesTheFormatsTheRegistryAndTheSchemaFiles(t *testing.T) {
	o := harness.PipelineOptions{
		Name: "avro-1", Seeds: fakeCluster(t, 1), Dir: t.TempDir(),
		Registry: "http://127.0.0.1:1/apis/ccompat/v7", SourceValueFormat: "avro", OutputValueFormat: "avro",
		OutputValueSchema: "{file: job.avsc, auto_register: true}",
		Files:             map[string]string{"job.avsc": harness.AvroJobSchema},
		Transforms: `
  - {type: filter, when: {field: status, equals: CANCELLED}}
  - {type: rename, field: order_id, to: id}`,
	}
	p, err := harness.NewPipeline(testContext(t), o)
	if err != nil {
		t.Fatal(err)
	}
	c, err := config.Load(p.Path, format.Check)
	if err != nil {
		b, _ := os.ReadFile(p.Path)
		t.Fatalf("the relay rejects the file: %v\n%s", err, b)
	}
	s := c.Output.ValueSchema
	if c.Source.ValueFormat != "avro" || c.Output.ValueFormat != "avro" || s == nil || s.File != "job.avsc" || !s.AutoRegister ||
		c.SchemaRegistry == nil || fmt.Sprint(c.SchemaRegistry.URLs) != "["+o.Registry+"]" {
		t.Errorf("formats %s → %s, schema %+v, registry %+v", c.Source.ValueFormat, c.Output.ValueFormat, s, c.SchemaRegistry)
	}
	if b, err := os.ReadFile(filepath.Join(o.Dir, "job.avsc")); err != nil || string(b) != harness.AvroJobSchema {
		t.Errorf("job.avsc beside the file: %v", err)
	}
	o.Name, o.Files = "avro-2", map[string]string{"../job.avsc": "{}"}
	if _, err := harness.NewPipeline(testContext(t), o); err == nil {
		t.Error("NewPipeline wrote a file outside Dir")
	}
}
