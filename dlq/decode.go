package dlq

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/sharerelay/sharerelay/config"
	"github.com/sharerelay/sharerelay/format"
	"github.com/sharerelay/sharerelay/lineage"
	"github.com/sharerelay/sharerelay/transform"
)

// Content is a dead letter's key or value read with the source's format
// (relay dlq inspect --decode). A dead letter keeps the source record's
// bytes as they came, so they are read as the relay read them.
type Content struct {
	// JSON is the value decoded, as JSON (the value tree as
	// transform.JSON writes it).
	JSON json.RawMessage `json:"json,omitempty"`
	// Error says why the bytes do not decode in the source's format:
	// often the reason the record is a dead letter.
	Error string `json:"error,omitempty"`
	// Raw are the bytes, when they were not decoded: they do not decode
	// (Error), or the schema registry could not be asked (Decoding.Note).
	Raw []byte `json:"raw,omitempty"`
	// Omitted: the relay left the bytes out of the dead letter, to fit
	// its topic.
	Omitted bool `json:"omitted,omitempty"`
}

// Decoding says how the samples' keys and values were read.
type Decoding struct {
	// ValueFormat and KeyFormat are the source's formats.
	ValueFormat string `json:"value_format"`
	KeyFormat   string `json:"key_format"`
	// Note, when set, says why some were not decoded: the schema registry
	// could not be asked, or the pipeline's formats could not be built.
	// Those are shown as their bytes.
	Note string `json:"note,omitempty"`
}

// raw is what a sample keeps of its dead letter to decode it.
type raw struct {
	key, value               []byte
	keyOmitted, valueOmitted bool
}

// rawOf keeps d's key and value, and whether the relay left them out.
func rawOf(d DeadLetter) raw {
	r := raw{key: d.Record.Key, value: d.Record.Value}
	for _, h := range d.Record.Headers {
		switch h.Key {
		case lineage.HeaderDLQKeyOmitted:
			r.keyOmitted = true
		case lineage.HeaderDLQValueOmitted:
			r.valueOmitted = true
		}
	}
	return r
}

// decodeSide is one of the source's decoders, for the samples' keys or
// values.
type decodeSide struct {
	which string // "key" or "value"
	dec   transform.Decoder
	// held is set once the decoder could not ask the schema registry:
	// the samples after it are shown as bytes, without waiting on it
	// again.
	held bool
}

// decodeSamples reads the samples' keys and values with p's source
// formats (format.ForPipeline: the relay's own decoders). A sample that
// does not decode says why; when the schema registry cannot be asked,
// one note says so and the rest are shown as bytes. It fails nothing.
func decodeSamples(ctx context.Context, p *config.Pipeline, samples []Sample) *Decoding {
	d := &Decoding{ValueFormat: p.Source.ValueFormat, KeyFormat: p.Source.KeyFormat}
	value, key := &decodeSide{which: "value", dec: transform.JSON}, &decodeSide{which: "key", dec: transform.Text}
	formats, _, err := format.ForPipeline(p)
	switch {
	case err != nil:
		d.Note = fmt.Sprintf("the pipeline's formats: %v: keys and values are shown as bytes", err)
		value.held, key.held = true, true
	case formats != nil:
		// One format for every source topic.
		value.dec, key.dec = formats.Source(p.Source.Topics[0])
	}
	for i := range samples {
		s := &samples[i]
		s.Value = value.decode(ctx, d, s.raw.value, s.raw.valueOmitted)
		s.Key = key.decode(ctx, d, s.raw.key, s.raw.keyOmitted)
	}
	return d
}

// decode reads b, noting on d the first time the schema registry cannot
// be asked.
func (sd *decodeSide) decode(ctx context.Context, d *Decoding, b []byte, omitted bool) (c *Content) {
	switch {
	case omitted:
		return &Content{Omitted: true}
	case sd.held:
		return &Content{Raw: b}
	}
	defer func() {
		if p := recover(); p != nil {
			c = &Content{Error: fmt.Sprintf("the decoder panicked: %v", p), Raw: b}
		}
	}()
	v, err := sd.dec.Decode(ctx, b)
	if err != nil {
		e := transform.Classify(err)
		msg := err.Error()
		if e.Err != nil {
			msg = strings.TrimPrefix(e.Err.Error(), sd.which+": ")
		}
		if e.Kind == transform.KindHold {
			sd.held = true
			if d.Note == "" {
				d.Note = fmt.Sprintf("the schema registry cannot be asked (%s): what it would decode is shown as bytes", msg)
			}
			return &Content{Raw: b}
		}
		return &Content{Error: msg, Raw: b}
	}
	j, err := transform.JSON.Encode(ctx, v, transform.Origin{})
	if err != nil {
		return &Content{Error: fmt.Sprintf("decoded, but not writable as JSON: %v", err), Raw: b}
	}
	return &Content{JSON: j}
}

// printDecoded writes the samples' keys and values as decoded.
func printDecoded(w io.Writer, d *Decoding, samples []Sample) {
	if d == nil || len(samples) == 0 {
		return
	}
	fmt.Fprintf(w, "\ndecoded with the source's formats (value %s, key %s)\n", d.ValueFormat, d.KeyFormat)
	if d.Note != "" {
		fmt.Fprintln(w, d.Note)
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, s := range samples {
		fmt.Fprintf(tw, "%d@%d\tkey\t%s\n", s.Partition, s.Offset, s.Key.text())
		fmt.Fprintf(tw, "\tvalue\t%s\n", s.Value.text())
	}
	tw.Flush()
}

// text is c for a person, on one line.
func (c *Content) text() string {
	switch {
	case c == nil:
		return "-"
	case c.Omitted:
		return "(left out of the dead letter to fit its topic)"
	case c.JSON != nil:
		return cut(string(c.JSON), 1000)
	case c.Error != "":
		return "does not decode: " + oneLine(c.Error, 300) + "; bytes " + quoteBytes(c.Raw)
	}
	return "not decoded; bytes " + quoteBytes(c.Raw)
}

// quoteBytes is b as a quoted Go string (bytes that are not UTF-8
// escaped), cut short; "null" for no bytes.
func quoteBytes(b []byte) string {
	if b == nil {
		return "null"
	}
	return cut(strconv.Quote(string(b)), 200)
}

// cut returns s cut to at most n runes, with the size when cut.
func cut(s string, n int) string {
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + fmt.Sprintf("… (%d bytes; --json shows all)", len(s))
	}
	return s
}
