package transform

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"time"

	"cel.dev/cel-go/common/types"
)

// Header is one record header. Keys may repeat, as in Kafka.
type Header struct {
	Key   string
	Value []byte
}

// Source describes the share-group delivery a record came from. Transforms
// may read it (for example to fail only on a first delivery) but must not
// rely on DeliveryCount for correctness: the broker does not persist it at
// acquisition, so it can restart at 1 after a broker restart.
type Source struct {
	Topic         string
	Partition     int32
	Offset        int64
	DeliveryCount int32
	Timestamp     time.Time
}

// Record is the unit a Transform works on. Topic is the output topic; empty
// means the pipeline's default output topic. Source is copied unchanged to
// every record a transform derives from this one.
//
// Key and Value are the bytes the record came with; the steps read and
// change them as value trees (see value.go), decoded on first use, and
// Chain.Apply leaves the bytes of its outputs as they are written: the
// unchanged ones as they came, the changed ones encoded in the output's
// format.
type Record struct {
	Topic   string
	Key     []byte
	Value   []byte
	Headers []Header
	Source  Source
	// Timestamp is the output's timestamp, set by Chain.Apply (by
	// default the source record's); zero leaves it to the producer, which
	// writes the time of writing.
	Timestamp time.Time

	// val and key are the value and key as the steps see them.
	val, key content
}

// Clone returns a deep copy of r, for transforms that fan out.
func (r *Record) Clone() *Record {
	c := *r
	c.Key = cloneBytes(r.Key)
	c.Value = cloneBytes(r.Value)
	c.val = r.val.clone()
	c.key = r.key.clone()
	if r.Headers != nil {
		c.Headers = make([]Header, len(r.Headers))
		for i, h := range r.Headers {
			c.Headers[i] = Header{Key: h.Key, Value: cloneBytes(h.Value)}
		}
	}
	return &c
}

// Header returns the value of the last header named key and whether it
// exists.
func (r *Record) Header(key string) ([]byte, bool) {
	for i := len(r.Headers) - 1; i >= 0; i-- {
		if r.Headers[i].Key == key {
			return r.Headers[i].Value, true
		}
	}
	return nil, false
}

func cloneBytes(b []byte) []byte {
	if b == nil {
		return nil
	}
	return append([]byte(nil), b...)
}

// Transform processes one record. It returns the records to produce (none
// means "filtered"), or an error classified with Retry or Permanent. A
// Transform may modify r in place and return it.
//
// Transforms must be safe for concurrent use by several workers and must not
// have side effects outside the returned records: the relay may run a record
// more than once (a redelivery), and only the produced records are covered by
// its delivery guarantee.
type Transform interface {
	Apply(ctx context.Context, r *Record) ([]*Record, error)
}

// Func adapts a function to a Transform.
type Func func(ctx context.Context, r *Record) ([]*Record, error)

// Apply calls f.
func (f Func) Apply(ctx context.Context, r *Record) ([]*Record, error) { return f(ctx, r) }

// Kind says what the relay does with a record whose transform failed.
type Kind int

const (
	// KindRetry releases the record for another delivery; on the last
	// allowed attempt it is dead-lettered instead.
	KindRetry Kind = iota
	// KindPermanent dead-letters the record at once.
	KindPermanent
)

// String returns "retry" or "permanent", the words a fail step's kind
// is written with in a pipeline file.
func (k Kind) String() string {
	switch k {
	case KindPermanent:
		return "permanent"
	case KindHold:
		return "hold"
	}
	return "retry"
}

// Error is a classified transform failure.
type Error struct {
	Kind Kind
	// Class is a short machine-readable name for the failure ("panic",
	// "fail", "json", or a transform-chosen word). It ends up in the
	// dead-letter headers.
	Class string
	// Step names the transform in the chain that failed, e.g. "2:set".
	Step string
	Err  error
	// Converter is "value" or "key" when the record's value or key could
	// not be read or written in its format (a format's failure rather
	// than a step's): the dead letter's stage says so.
	Converter string
	// Reason, for KindHold, is the short reason the relay reports while
	// it holds the record ("schema registry unavailable").
	Reason string
}

// Error returns the cause's message (else the class), prefixed with the
// failing step when known.
func (e *Error) Error() string {
	msg := e.Class
	if e.Err != nil {
		msg = e.Err.Error()
	}
	if e.Step != "" {
		return fmt.Sprintf("transform %s: %s", e.Step, msg)
	}
	return msg
}

// Unwrap returns the cause, so errors.Is and errors.As see through the
// classification.
func (e *Error) Unwrap() error { return e.Err }

// Retry marks err as retryable: the record is released and delivered again.
func Retry(class string, err error) error {
	return &Error{Kind: KindRetry, Class: class, Err: err}
}

// Permanent marks err as permanent: the record goes to the dead-letter
// topic without further attempts.
func Permanent(class string, err error) error {
	return &Error{Kind: KindPermanent, Class: class, Err: err}
}

// Classify returns the classified form of err. Unclassified errors are
// retryable with class "error"; context cancellation is retryable too, so
// that a record interrupted by shutdown is released, never dead-lettered.
// Classify(nil) is nil.
func Classify(err error) *Error {
	if err == nil {
		return nil
	}
	var e *Error
	if errors.As(err, &e) {
		return e
	}
	return &Error{Kind: KindRetry, Class: "error", Err: err}
}

// Chain applies transforms in order: every record a step returns is fed to
// the next step. A step that returns no records ends that branch (filtered).
// When the steps are done, each output's value and key are written in
// their output's format and its timestamp chosen (finish).
type Chain struct {
	steps   []step
	formats Formats
	// stamp chooses the outputs' timestamps: nil for the source's, or an
	// expression; now writes none (the producer's time of writing).
	stamp *program
	now   bool
}

type step struct {
	name string
	t    Transform
}

// NewChain builds a chain from named steps; names are used in errors. It
// reads values as JSON and keys as text, and keeps the source's
// timestamps; BuildWith builds one with other Options.
func NewChain() *Chain { return &Chain{} }

// Add appends a step named name.
func (c *Chain) Add(name string, t Transform) *Chain {
	c.steps = append(c.steps, step{name: name, t: t})
	return c
}

// Len returns the number of steps.
func (c *Chain) Len() int { return len(c.steps) }

// CopiesAsIs reports whether the chain writes every record as it came:
// no steps, no formats, and the source's timestamp or none (now reports
// which). The relay then skips the transform record altogether.
func (c *Chain) CopiesAsIs() (ok, now bool) {
	return len(c.steps) == 0 && c.formats == nil && c.stamp == nil, c.now
}

// Apply runs the chain on r. A panic in any step is recovered and returned
// as a permanent error of class "panic" that names the step. Each output
// returned has its Value and Key as they are written (see finish) and
// its Timestamp.
func (c *Chain) Apply(ctx context.Context, r *Record) ([]*Record, error) {
	if c.formats != nil && r.val.dec == nil && r.val.state == stBytes {
		r.val.dec, r.key.dec = c.formats.Source(r.Source.Topic)
	}
	cur := []*Record{r}
	for _, s := range c.steps {
		var next []*Record
		for _, in := range cur {
			out, err := safeApply(ctx, s, in)
			if err != nil {
				e := Classify(err)
				ce := *e
				if ce.Step == "" {
					ce.Step = s.name
				}
				return nil, &ce
			}
			if len(cur) == 1 {
				next = out // the common 1:1 case: no copy
			} else {
				next = append(next, out...)
			}
		}
		cur = next
		if len(cur) == 0 {
			return nil, nil
		}
	}
	for _, o := range cur {
		if err := c.finish(ctx, o); err != nil {
			return nil, err
		}
	}
	return cur, nil
}

// finish writes o's value and key in the formats of its output topic and
// sets its timestamp. A value or key no step changed keeps its bytes when
// the output's format takes them as they are (Encoder.Keep): the same
// format and schema. Bytes a map step set are written as they are.
func (c *Chain) finish(ctx context.Context, o *Record) error {
	valEnc, keyEnc := Encoder(JSON), Encoder(Text)
	if c.formats != nil {
		valEnc, keyEnc = c.formats.Output(o.Topic)
	}
	b, err := o.val.write(ctx, o.Value, valEnc, JSON)
	if err != nil {
		return converterErr("value", err)
	}
	o.Value = b
	if b, err = o.key.write(ctx, o.Key, keyEnc, Text); err != nil {
		return converterErr("key", err)
	}
	o.Key = b
	switch {
	case c.now:
		o.Timestamp = time.Time{}
	case c.stamp != nil:
		v, err := c.stamp.eval(ctx, o)
		if err != nil {
			e := *Classify(err)
			e.Step = "output.timestamp"
			return &e
		}
		switch x := v.(type) {
		case types.Timestamp:
			o.Timestamp = x.Time
		case types.Null:
			o.Timestamp = time.Time{}
		default:
			return &Error{Kind: KindPermanent, Class: "cel", Step: "output.timestamp", Err: fmt.Errorf("got %s, want a timestamp or null", typeName(v))}
		}
	default:
		o.Timestamp = o.Source.Timestamp
	}
	return nil
}

// write returns the content's bytes for enc: b itself when no step changed
// it and enc keeps it, else its tree encoded.
func (c *content) write(ctx context.Context, b []byte, enc Encoder, def Decoder) ([]byte, error) {
	from := Origin{Decoder: c.dec, Bytes: b}
	if from.Decoder == nil {
		from.Decoder = def
	}
	if v, ok := from.Decoder.(Validator); ok && v.Validates() && c.state == stBytes {
		if _, err := c.get(ctx, b, def); err != nil {
			return nil, err
		}
	}
	switch c.state {
	case stLiteral:
		return b, nil
	case stBytes, stDecoded:
		keep, err := enc.Keep(ctx, from)
		if err != nil {
			return nil, err
		}
		if keep {
			return b, nil
		}
	}
	v, err := c.get(ctx, b, def)
	if err != nil {
		return nil, err
	}
	return enc.Encode(ctx, v, from)
}

// converterErr marks err as the value's or the key's format failing
// (Error.Converter), with the step "output.value_format" (or key) when
// the encoder named none.
func converterErr(which string, err error) error {
	e := *Classify(err)
	if e.Converter == "" {
		e.Converter = which
	}
	if e.Step == "" {
		e.Step = "output." + which + "_format"
	}
	return &e
}

func safeApply(ctx context.Context, s step, r *Record) (out []*Record, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = &Error{
				Kind:  KindPermanent,
				Class: "panic",
				Step:  s.name,
				Err:   fmt.Errorf("panic: %v\n%s", p, debug.Stack()),
			}
			out = nil
		}
	}()
	return s.t.Apply(ctx, r)
}

// KindHold is declared apart from Retry and Permanent: see Hold.
const (
	// KindHold keeps the record: the failure is outside it (a schema
	// registry that cannot be reached), so the relay neither releases it
	// (which would spend a delivery) nor dead-letters it, but holds it,
	// its lock renewed, and transforms it again once the cause is gone.
	KindHold Kind = KindPermanent + 1
)

// Hold marks err as a failure outside the record that retrying later
// cures without spending the record's deliveries (KindHold): a schema
// registry that cannot be reached, times out or refuses the relay's
// credentials. The relay holds such records and reports itself not
// ready with reason; `relay test` reports them as held.
func Hold(class, reason string, err error) error {
	return &Error{Kind: KindHold, Class: class, Err: err, Reason: reason}
}
