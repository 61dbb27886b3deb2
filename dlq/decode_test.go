package dlq

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hamba/avro/v2"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sr"

	"github.com/sharerelay/sharerelay/config"
	"github.com/sharerelay/sharerelay/eos"
	"github.com/sharerelay/sharerelay/internal/kfaketest"
	"github.com/sharerelay/sharerelay/internal/srtest"
	"github.com/sharerelay/sharerelay/lineage"
	"github.com/sharerelay/sharerelay/transform"
)

const orderSchema = `{"type":"record","name":"Order","fields":[{"name":"id","type":"long"},{"name":"customer","type":"string"}]}`

// avroDeadLetters writes to jobs.dlq, as the relay dead-letters them,
// four Avro orders: one that decodes (dead-lettered by a step), one not
// in the wire format, one naming a schema id the registry does not have,
// and one whose value the relay left out to fit the topic.
func avroDeadLetters(t *testing.T, c *kfake.Cluster, id int) {
	t.Helper()
	var h sr.ConfluentHeader
	good, err := avro.Marshal(avro.MustParse(orderSchema), map[string]any{"id": int64(7), "customer": "c-7"})
	if err != nil {
		t.Fatal(err)
	}
	framed := func(id int, payload []byte) []byte {
		b, err := h.AppendEncode(nil, id, nil)
		if err != nil {
			t.Fatal(err)
		}
		return append(b, payload...)
	}
	recs := []struct {
		key, value []byte
		class      string
		extra      []kgo.RecordHeader
	}{
		{[]byte("7"), framed(id, good), "fail", nil},
		{[]byte("8"), []byte(`{"id":8}`), "avro", nil},
		{nil, framed(99, good), "avro", nil},
		{[]byte("10"), nil, "fail", []kgo.RecordHeader{{Key: lineage.HeaderDLQValueOmitted, Value: []byte("2000000")}}},
	}
	cl, err := kgo.NewClient(seeds(c)...)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	for i, r := range recs {
		hs := append(lineage.SetSource(nil, lineage.Source{Topic: "orders", Offset: int64(i)}),
			kgo.RecordHeader{Key: lineage.HeaderDLQErrorClass, Value: []byte(r.class)},
			kgo.RecordHeader{Key: lineage.HeaderDLQKind, Value: []byte("permanent")})
		rec := &kgo.Record{Topic: "jobs.dlq", Key: r.key, Value: r.value, Headers: append(hs, r.extra...)}
		if err := cl.ProduceSync(context.Background(), rec).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
}

// avroPipeline reads Avro values and text keys under the registry at url.
func avroPipeline(t *testing.T, c *kfake.Cluster, url string) *config.Pipeline {
	t.Helper()
	path := filepath.Join(t.TempDir(), "p.yaml")
	y := fmt.Sprintf("name: test\nbrokers: [%q]\nschema_registry: {urls: [%s], timeout: 2s}\nsource: {topics: [orders], group: g, value_format: avro}\noutput: {topic: jobs, value_format: json}\ndead_letter: {topic: jobs.dlq}\n",
		c.ListenAddrs()[0], url)
	if err := os.WriteFile(path, []byte(y), 0o644); err != nil {
		t.Fatal(err)
	}
	p, err := config.Parse(path, []byte(y), func(string) (string, bool) { return "", false })
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func inspectDecoded(t *testing.T, c *kfake.Cluster, p *config.Pipeline) *Report {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	rep, err := Inspect(ctx, InspectOptions{ClientOpts: seeds(c), Topic: "jobs.dlq", Samples: 10, Decode: p})
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	rep.Print(&b)
	t.Logf("inspect --decode:\n%s", b.String())
	return rep
}

// String is c for a person, for comparisons.
func (c *Content) String() string { return c.text() }

func TestInspectDecodesEachSampleWithTheSourcesFormatsOrSaysWhyItDoesNot(t *testing.T) {
	c := kfaketest.Cluster(t, kfake.SeedTopics(1, "orders", "jobs", "jobs.dlq"))
	reg := srtest.New()
	defer reg.Close()
	id, _ := reg.Register("orders-value", srtest.Schema{Schema: orderSchema})
	avroDeadLetters(t, c, id)
	p := avroPipeline(t, c, reg.URL())

	rep := inspectDecoded(t, c, p)
	if rep.Decoded == nil || rep.Decoded.ValueFormat != "avro" || rep.Decoded.KeyFormat != "string" || rep.Decoded.Note != "" {
		t.Fatalf("decoded: %+v, want value avro, key string, no note", rep.Decoded)
	}
	want := []struct{ key, value string }{
		{`"7"`, `{"customer":"c-7","id":7}`},
		{`"8"`, `does not decode: not in the Confluent wire format (a zero byte, then the schema id): 5 byte header for value is missing or does not have 0 magic byte; bytes "{\"id\":8}"`},
		{`null`, `does not decode: schema id 99: schema not found (Schema 99 not found); bytes "\x00\x00\x00\x00c\x0e\x06c-7"`},
		{`"10"`, `(left out of the dead letter to fit its topic)`},
	}
	if len(rep.Samples) != len(want) {
		t.Fatalf("%d samples, want %d", len(rep.Samples), len(want))
	}
	for i, w := range want {
		s := rep.Samples[i]
		if s.Key.String() != w.key || s.Value.String() != w.value {
			t.Errorf("dead letter %d: key %s, value %s\nwant key %s, value %s", s.Offset, s.Key, s.Value, w.key, w.value)
		}
	}

	// The registry down: one note, and the values shown as bytes; the
	// text keys still decode, and the command fails nothing.
	reg.Down(true)
	before := reg.Requests.Load()
	rep = inspectDecoded(t, c, p)
	if rep.Decoded.Note == "" || !strings.Contains(rep.Decoded.Note, "the schema registry cannot be asked (schema id 1: schema registry unavailable: HTTP 503: down)") {
		t.Errorf("note %q, want the registry named unavailable", rep.Decoded.Note)
	}
	if n := reg.Requests.Load() - before; n != 1 {
		t.Errorf("%d requests to the registry while down, want 1: the samples after the first are not held up again", n)
	}
	for _, s := range rep.Samples[:3] {
		if s.Value.JSON != nil || s.Value.Error != "" || !strings.HasPrefix(s.Value.String(), "not decoded; bytes ") {
			t.Errorf("dead letter %d, registry down: value %s, want its bytes, not decoded", s.Offset, s.Value)
		}
	}
	if k := rep.Samples[0].Key.String(); k != `"7"` {
		t.Errorf("key %s, want \"7\": text needs no registry", k)
	}
}

// A replay reads the dead letters' values in the source's formats, as the
// relay does; with the registry out of reach it waits, and dead-letters
// nothing for it.
func TestAReplayReadsAvroDeadLettersAndWaitsForTheRegistry(t *testing.T) {
	c := kfaketest.Cluster(t, kfake.SeedTopics(1, "orders", "jobs", "jobs.dlq"))
	reg := srtest.New()
	defer reg.Close()
	id, _ := reg.Register("orders-value", srtest.Schema{Schema: orderSchema})
	avroDeadLetters(t, c, id)
	p := avroPipeline(t, c, reg.URL())
	p.Transforms = []transform.Spec{{Type: "set", Field: "replayed", Value: true}}
	o := ReplayOptions{Pipeline: p, ClientOpts: seeds(c), LedgerMarkers: eos.MarkersAtSameOrNextEpoch, Logger: quiet(), Job: "avro"}

	reg.Down(true)
	go func() {
		time.Sleep(2 * time.Second)
		reg.Down(false)
	}()
	rep := replay(t, o)
	if rep.Outputs != 1 {
		t.Fatalf("replay: %+v; want the one dead letter that decodes written out", rep)
	}
	var out []string
	for _, r := range readAll(t, c, "jobs") {
		out = append(out, string(r.Value))
	}
	if len(out) != 1 || out[0] != `{"customer":"c-7","id":7,"replayed":true}` {
		t.Fatalf("outputs %q, want the order decoded, the step applied, written as JSON", out)
	}
	// The two that do not decode are dead-lettered again, as what they
	// are: the value converter's failures, not the registry's.
	var stages []string
	for _, r := range readAll(t, c, "jobs.dlq")[4:] {
		for _, h := range r.Headers {
			if h.Key == lineage.HeaderDLQStage {
				stages = append(stages, string(h.Value))
			}
		}
	}
	if strings.Join(stages, ",") != "VALUE_CONVERTER,VALUE_CONVERTER" {
		t.Fatalf("new dead letters' stages %v, want two VALUE_CONVERTER", stages)
	}
}
