package harness

import (
	"context"
	"errors"
	"fmt"

	"github.com/hamba/avro/v2"
	"github.com/twmb/franz-go/pkg/sr"
)

// AvroOrderSchemas are the Avro writer schemas of the orders
// (sharerelay.chaos.Order), oldest first. Each adds a field with a
// default to the one before, so that every version reads every other and
// a stream can carry several writer schemas, and so several schema ids,
// at once.
var AvroOrderSchemas = []string{
	avroOrderSchema(``),
	avroOrderSchema(`,
    {"name": "note", "type": "string", "default": ""}`),
	avroOrderSchema(`,
    {"name": "note", "type": "string", "default": ""},
    {"name": "priority", "type": "int", "default": 0}`),
	avroOrderSchema(`,
    {"name": "note", "type": "string", "default": ""},
    {"name": "priority", "type": "int", "default": 0},
    {"name": "region", "type": "string", "default": "eu"}`),
}

func avroOrderSchema(more string) string {
	return `{
  "type": "record", "name": "Order", "namespace": "sharerelay.chaos",
  "fields": [
    {"name": "order_id", "type": "long"},
    {"name": "run", "type": "string"},
    {"name": "status", "type": {"type": "enum", "name": "OrderStatus", "symbols": ["NEW", "PAID", "CANCELLED"]}}` + more + `
  ]
}`
}

// AvroJobSchema is a schema the orders' outputs can be written with (as a
// schema file beside the pipeline, output.value_schema): an order whose
// order_id is renamed id, with the fields of every order version, those an
// older version lacks at the same defaults.
const AvroJobSchema = `{
  "type": "record", "name": "Job", "namespace": "sharerelay.chaos",
  "fields": [
    {"name": "id", "type": "long"},
    {"name": "run", "type": "string"},
    {"name": "status", "type": {"type": "enum", "name": "JobStatus", "symbols": ["NEW", "PAID", "CANCELLED"]}},
    {"name": "note", "type": "string", "default": ""},
    {"name": "priority", "type": "int", "default": 0},
    {"name": "region", "type": "string", "default": "eu"}
  ]
}`

// Order statuses: every 40th order is cancelled, every third other one
// paid (AvroOrderStatus).
const (
	StatusNew       = "NEW"
	StatusPaid      = "PAID"
	StatusCancelled = "CANCELLED"
)

// AvroOrderStatus is the status of Avro order i: CANCELLED for every 40th,
// else PAID for every third, else NEW. A pipeline that filters on it
// drops exactly the orders it names.
func AvroOrderStatus(i int) string {
	switch {
	case i%40 == 0:
		return StatusCancelled
	case i%3 == 0:
		return StatusPaid
	}
	return StatusNew
}

// AvroOrder is an Avro order's fields, as the newest version has them; an
// older version's order reads with the defaults for those it lacks.
type AvroOrder struct {
	OrderID  int64  `avro:"order_id"`
	Run      string `avro:"run"`
	Status   string `avro:"status"`
	Note     string `avro:"note"`
	Priority int32  `avro:"priority"`
	Region   string `avro:"region"`
}

// AvroJob is a value of AvroJobSchema.
type AvroJob struct {
	ID       int64  `avro:"id"`
	Run      string `avro:"run"`
	Status   string `avro:"status"`
	Note     string `avro:"note"`
	Priority int32  `avro:"priority"`
	Region   string `avro:"region"`
}

// avroOrderSchemas are AvroOrderSchemas parsed, each in a cache of its
// own: they share their names.
var avroOrderSchemas = func() []avro.Schema {
	out := make([]avro.Schema, len(AvroOrderSchemas))
	for i, s := range AvroOrderSchemas {
		var err error
		if out[i], err = avro.ParseWithCache(s, "", &avro.SchemaCache{}); err != nil {
			panic(fmt.Sprintf("harness: Avro order schema version %d: %v", i+1, err))
		}
	}
	return out
}()

// avroJobSchema is AvroJobSchema parsed.
var avroJobSchema = avro.MustParse(AvroJobSchema)

// RegisterAvroOrders registers AvroOrderSchemas under subject, oldest
// first, in the schema registry at url (a Confluent-compatible API), and
// returns their ids, index for index.
func RegisterAvroOrders(ctx context.Context, url, subject string) ([]int, error) {
	cl, err := sr.NewClient(sr.URLs(url))
	if err != nil {
		return nil, err
	}
	ids := make([]int, len(AvroOrderSchemas))
	for i, s := range AvroOrderSchemas {
		ss, err := cl.CreateSchema(ctx, subject, sr.Schema{Schema: s, Type: sr.TypeAvro})
		if err != nil {
			return nil, fmt.Errorf("registering order schema version %d under %s: %w", i+1, subject, err)
		}
		ids[i] = ss.ID
	}
	return ids, nil
}

// AvroOrders writes the orders' values in Avro, each framed in the
// Confluent wire format (a zero byte and the writer schema's id) with one
// of AvroOrderSchemas, as a producer under a schema registry does.
type AvroOrders struct {
	// IDs are the registry's ids of AvroOrderSchemas, index for index
	// (RegisterAvroOrders). Required.
	IDs []int
	// Version returns the index into AvroOrderSchemas of the version
	// order i is written with: the same for every call with i, as an
	// order may be written again (a stream's retry). Default: i modulo
	// the versions.
	Version func(i int) int
}

// version is the index of order i's writer schema.
func (a *AvroOrders) version(i int) int {
	if a.Version == nil {
		return i % len(AvroOrderSchemas)
	}
	v := a.Version(i)
	if v < 0 || v >= len(AvroOrderSchemas) || v >= len(a.IDs) {
		panic(fmt.Sprintf("harness: order %d: Avro version index %d out of range (%d versions, %d ids)", i, v, len(AvroOrderSchemas), len(a.IDs)))
	}
	return v
}

// Order returns order i of run as it reads: the fields of its version,
// and the defaults of those its version lacks.
func (a *AvroOrders) Order(i int, run string) AvroOrder {
	o := AvroOrder{OrderID: int64(i), Run: run, Status: AvroOrderStatus(i), Region: "eu"}
	v := a.version(i)
	if v >= 1 {
		o.Note = fmt.Sprintf("order %d", i)
	}
	if v >= 2 {
		o.Priority = int32(i % 5)
	}
	if v >= 3 {
		o.Region = []string{"eu", "us", "apac"}[i%3]
	}
	return o
}

// value returns order i's value, framed with its version's id. The
// schemas are the harness's own, so a value that does not encode is a
// bug here: it panics.
func (a *AvroOrders) value(i int, run string) []byte {
	v := a.version(i)
	o := a.Order(i, run)
	var h sr.ConfluentHeader
	b, err := h.AppendEncode(nil, a.IDs[v], nil)
	if err == nil {
		var payload []byte
		payload, err = avro.Marshal(avroOrderSchemas[v], o)
		b = append(b, payload...)
	}
	if err != nil {
		panic(fmt.Sprintf("harness: encoding order %d with Avro version %d: %v", i, v+1, err))
	}
	return b
}

// orderID reads the order id of an Avro order's value.
func (a *AvroOrders) orderID(b []byte) (int, error) {
	var h sr.ConfluentHeader
	id, payload, err := h.DecodeID(b)
	if err != nil {
		return 0, err
	}
	for v, vid := range a.IDs {
		if vid == id {
			var o AvroOrder
			if err := avro.Unmarshal(avroOrderSchemas[v], payload, &o); err != nil {
				return 0, fmt.Errorf("order of schema id %d: %w", id, err)
			}
			return int(o.OrderID), nil
		}
	}
	return 0, fmt.Errorf("schema id %d is none of the orders' %v", id, a.IDs)
}

// ErrNotJob is what DecodeAvroJob returns for a value framed with another
// schema id than the job's.
var ErrNotJob = errors.New("not written with the job schema's id")

// DecodeAvroJob reads a value written with AvroJobSchema under schema id
// id, in the Confluent wire format.
func DecodeAvroJob(b []byte, id int) (AvroJob, error) {
	var h sr.ConfluentHeader
	got, payload, err := h.DecodeID(b)
	if err != nil {
		return AvroJob{}, err
	}
	if got != id {
		return AvroJob{}, fmt.Errorf("schema id %d, want %d: %w", got, id, ErrNotJob)
	}
	var j AvroJob
	if err := avro.Unmarshal(avroJobSchema, payload, &j); err != nil {
		return AvroJob{}, err
	}
	return j, nil
}

// LookupAvroJob returns the id AvroJobSchema has under subject in the
// registry at url: the id of the outputs a pipeline wrote with it.
func LookupAvroJob(ctx context.Context, url, subject string) (int, error) {
	cl, err := sr.NewClient(sr.URLs(url))
	if err != nil {
		return 0, err
	}
	ss, err := cl.LookupSchema(ctx, subject, sr.Schema{Schema: AvroJobSchema, Type: sr.TypeAvro})
	if err != nil {
		return 0, fmt.Errorf("looking up the job schema under %s: %w", subject, err)
	}
	return ss.ID, nil
}
