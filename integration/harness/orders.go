package harness

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// Orders are the source records of the test pipelines: order i is the
// value {"order_id":i} keyed by i, the shape the BookNest transforms
// (configs/booknest-packing.yaml) select on. Orders are unique per source
// topic, so a checker can tell every source record from every other.
type Orders struct {
	// Topic is the source topic.
	Topic string
	// Run, when set, is added to every value as "run", e.g. to tell a
	// scenario's records from those of another in a shared topic:
	// {"order_id":i,"run":"<Run>"}.
	Run string
	// Pad, when set, returns how many bytes of padding order i carries
	// in a "pad" field: hex of random bytes, which does not compress.
	// JSON orders only.
	Pad func(i int) int
	// Avro, when set, writes the values in Avro under a schema registry
	// instead of JSON: AvroOrder's fields, "run" always (empty without
	// Run), framed with the id of the writer schema of each order's
	// version. Pad must be nil then.
	Avro *AvroOrders
}

// Record returns order i.
func (o Orders) Record(i int) *kgo.Record {
	r := &kgo.Record{Topic: o.Topic, Key: strconv.AppendInt(nil, int64(i), 10)}
	if o.Avro != nil {
		if o.Pad != nil {
			panic("harness: Orders.Pad is for JSON orders; Avro orders carry no padding")
		}
		r.Value = o.Avro.value(i, o.Run)
		return r
	}
	if o.Run == "" {
		r.Value = fmt.Appendf(nil, `{"order_id":%d`, i)
	} else {
		r.Value = fmt.Appendf(nil, `{"order_id":%d,"run":%q`, i, o.Run)
	}
	if o.Pad != nil {
		if n := o.Pad(i); n > 0 {
			raw := make([]byte, (n+1)/2)
			rand.Read(raw)
			r.Value = fmt.Appendf(r.Value, `,"pad":"%s"`, hex.EncodeToString(raw)[:n])
		}
	}
	r.Value = append(r.Value, '}')
	return r
}

// OrderID returns the order id of one of these orders' values: JSON, or
// Avro with one of the writer schemas of o.Avro.
func (o Orders) OrderID(value []byte) (int, error) {
	if o.Avro != nil {
		return o.Avro.orderID(value)
	}
	var v struct {
		OrderID *int `json:"order_id"`
	}
	if err := json.Unmarshal(value, &v); err != nil {
		return 0, err
	}
	if v.OrderID == nil {
		return 0, fmt.Errorf("no order_id in %.100q", value)
	}
	return *v.OrderID, nil
}

// Seed writes the orders from..to (both included) to the cluster of seeds
// and returns once every one is acknowledged, or with the first error. The
// producer lingers 5 ms; opts are added to its options (e.g. a larger
// buffer or batch size for a large seed). Records are made as they are
// produced, so a million orders do not sit in memory at once.
func (o Orders) Seed(ctx context.Context, seeds []string, from, to int, opts ...kgo.Opt) error {
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(seeds...), kgo.ProducerLinger(5 * time.Millisecond)}, opts...)...)
	if err != nil {
		return fmt.Errorf("seeding %s: %w", o.Topic, err)
	}
	defer cl.Close()
	var (
		mu    sync.Mutex
		first error
		wg    sync.WaitGroup
	)
	for i := from; i <= to; i++ {
		wg.Add(1)
		cl.Produce(ctx, o.Record(i), func(_ *kgo.Record, err error) {
			defer wg.Done()
			if err != nil {
				mu.Lock()
				if first == nil {
					first = err
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if first != nil {
		return fmt.Errorf("seeding %s with orders %d..%d: %w", o.Topic, from, to, first)
	}
	return nil
}
