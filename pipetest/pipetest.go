package pipetest

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sharerelay/sharerelay/config"
	"github.com/sharerelay/sharerelay/internal/didyoumean"
	"github.com/sharerelay/sharerelay/lineage"
	"github.com/sharerelay/sharerelay/transform"
)

// KafkaDeliveryCountLimit is Kafka's default share.delivery.count.limit,
// which MaxAttempts falls back on when nothing else sets the attempts.
const KafkaDeliveryCountLimit = 5

// Suite is one test file: cases run against one pipeline.
type Suite struct {
	// File is where the suite was read from, for messages.
	File string `yaml:"-"`
	// MaxAttempts is the deliveries a record gets before a retryable
	// failure dead-letters it. 0 (default): the pipeline's
	// dead_letter.max_attempts, else config.DefaultMaxAttempts of the
	// share group's share.delivery.count.limit as set in
	// source.group_configs, else of Kafka's default limit (3 attempts of
	// 5). The relay reads the limit from the broker; set this when the
	// broker's differs.
	MaxAttempts int `yaml:"max_attempts"`
	// Schemas are schema files, relative to the pipeline file, for
	// records in avro, protobuf or json_schema where the pipeline names
	// none, by topic: a source topic's are what its cases' inputs are
	// written with (default: source.value_schema.file and key_schema's);
	// an output topic's stand in for the schema the pipeline names by
	// subject or id in its registry.
	Schemas map[string]TopicSchemas `yaml:"schemas"`
	// Partitions are the partition counts of the output topics whose
	// outputs' partition a case checks.
	Partitions map[string]int `yaml:"partitions"`
	// Cases run in order, each on its own record.
	Cases []Case `yaml:"cases"`
}

// TopicSchemas are the schema files of a topic's values and keys.
type TopicSchemas struct {
	Value string `yaml:"value"`
	Key   string `yaml:"key"`
}

// Case is one input record and what should become of it.
type Case struct {
	Name   string `yaml:"name"`
	Input  Input  `yaml:"input"`
	Expect Expect `yaml:"expect"`
	// Line is the case's line in File.
	Line int `yaml:"-"`
}

// Input is a source record as the share consumer would deliver it.
type Input struct {
	// Key is the key: its text (a string or a number), or for a source
	// whose key_format is structured any YAML value, written in that
	// format. Left out, the key is null.
	Key any `yaml:"key"`
	// Value is written in the source's value_format: for json, a string
	// is taken as it is and any other YAML value (a mapping, list,
	// number or bool) is written as JSON; for avro, protobuf and
	// json_schema the value is written with the source topic's writer
	// schema (Suite.Schemas). Left out or null, the value is null.
	Value any `yaml:"value"`
	// Headers are set in the order of their names.
	Headers map[string]string `yaml:"headers"`
	// DeliveryCount is the share-group delivery count (default 1).
	DeliveryCount int32 `yaml:"delivery_count"`
	// Topic is the source topic (default: the pipeline's first).
	Topic     string    `yaml:"topic"`
	Partition int32     `yaml:"partition"`
	Offset    int64     `yaml:"offset"`
	Timestamp time.Time `yaml:"timestamp"`
}

// Expect is what should become of a case's record: exactly one of
// Outputs (the records written, in order; empty when the record is
// filtered out), DeadLetter and Release.
type Expect struct {
	Outputs    *[]Output   `yaml:"outputs"`
	DeadLetter *DeadLetter `yaml:"dead_letter"`
	Release    bool        `yaml:"release"`
}

// Output is one expected output record. Fields left out are not checked,
// but for Topic, which defaults to the pipeline's output topic.
type Output struct {
	Topic string `yaml:"topic"`
	// Key is the key's text, or for a structured key format its value
	// (compared as Value is).
	Key any `yaml:"key"`
	// Value compares as JSON when it and the actual value both parse as
	// JSON (a string holding JSON, or any other YAML value), and as bytes
	// otherwise. An output in avro, protobuf or json_schema is read back
	// (decoded) first.
	Value any `yaml:"value"`
	// Timestamp is the output's timestamp (RFC 3339), or "now" for none
	// set (the producer writes the time of writing).
	Timestamp string `yaml:"timestamp"`
	// Partition is the partition the output lands on: a keyed output's,
	// as the relay's producer and a Java producer choose it (murmur2 of
	// the key, modulo the topic's partitions, from Suite.Partitions).
	Partition *int `yaml:"partition"`
	// Headers must be present with these values (a subset; for a
	// repeated header, the last one counts); a null value means the
	// header must be absent.
	Headers map[string]*string `yaml:"headers"`
}

// DeadLetter is an expected dead letter; fields left out are not checked.
type DeadLetter struct {
	// Kind is "permanent" or "attempts-exhausted".
	Kind string `yaml:"kind"`
	// Class is the error class ("fail", "json", "cel", "panic", ...).
	Class string `yaml:"class"`
	// Step is the name of the failing step ("bad-address", "2:set").
	Step string `yaml:"step"`
	// Reason is a part of the error message.
	Reason string `yaml:"reason"`
}

// DefaultFile is where the tests of the pipeline file at path are when
// none are named: dir/tests/name.test.yaml for dir/name.yaml.
func DefaultFile(path string) string {
	dir, base := filepath.Split(path)
	stem := strings.TrimSuffix(strings.TrimSuffix(base, ".yaml"), ".yml")
	return filepath.Join(dir, "tests", stem+".test.yaml")
}

// Load reads and checks the test file at path (see Parse).
func Load(path string) (*Suite, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return Parse(path, data)
}

// Parse parses a test file; name is used in messages. It is read as
// strictly as a pipeline file (config.DecodeStrict): an unknown field is
// an error that names the field probably meant, and every problem of the
// file is reported at once, each as "<name>:<line>:<col>: <path>:
// <message>", in a config.Errors value. Besides, the file needs a case,
// each case a name and exactly one outcome.
func Parse(name string, data []byte) (*Suite, error) {
	s := &Suite{File: name}
	d := config.DecodeStrict(name, "test file", data, s)
	if len(s.Cases) == 0 && !d.Reported("cases") {
		d.Add("cases", "no test cases: list at least one")
	}
	if s.MaxAttempts < 0 {
		d.Add("max_attempts", fmt.Sprintf("must be 1 or more, got %d", s.MaxAttempts))
	}
	for i := range s.Cases {
		c := &s.Cases[i]
		at := fmt.Sprintf("cases[%d]", i)
		c.Line = d.Line(at)
		if c.Name == "" && !d.Reported(at) {
			d.Add(at+".name", "required: what the case checks, in a sentence")
		}
		switch n := c.Expect.outcomes(); {
		case d.Reported(at):
			// An unknown or mistyped field ("expected:") is likely why
			// the outcome looks missing.
		case n == 0:
			d.Add(at+".expect", "required: one of outputs, dead_letter and release")
		case n > 1:
			d.Add(at+".expect", "set only one of outputs, dead_letter and release")
		}
		kinds := []string{lineage.DLQKindPermanent, lineage.DLQKindAttemptsExhausted}
		if k := c.Expect.kind(); k != "" && !slices.Contains(kinds, k) {
			msg := fmt.Sprintf("must be %s or %s, got %q", kinds[0], kinds[1], k)
			if best, ok := didyoumean.Closest(k, kinds); ok {
				msg += fmt.Sprintf(" (did you mean %q?)", best)
			}
			d.Add(at+".expect.dead_letter.kind", msg)
		}
		if c.Input.DeliveryCount < 0 {
			d.Add(at+".input.delivery_count", fmt.Sprintf("must be 1 or more, got %d", c.Input.DeliveryCount))
		}
	}
	if err := d.Err(); err != nil {
		return nil, err
	}
	return s, nil
}

// outcomes counts the outcomes e expects; a valid case expects one.
func (e Expect) outcomes() int {
	n := 0
	if e.Outputs != nil {
		n++
	}
	if e.DeadLetter != nil {
		n++
	}
	if e.Release {
		n++
	}
	return n
}

// kind is the dead letter's expected kind; "" when not checked.
func (e Expect) kind() string {
	if e.DeadLetter == nil {
		return ""
	}
	return e.DeadLetter.Kind
}

// maxAttempts is the deliveries a record gets in s's tests of p: see
// Suite.MaxAttempts.
func (s *Suite) maxAttempts(p *config.Pipeline) int32 {
	switch {
	case s.MaxAttempts > 0:
		return int32(s.MaxAttempts)
	case p.DeadLetter.MaxAttempts > 0:
		return int32(p.DeadLetter.MaxAttempts)
	}
	limit := KafkaDeliveryCountLimit
	if v, err := strconv.Atoi(p.Source.GroupConfigs["share.delivery.count.limit"]); err == nil {
		limit = v
	}
	// As the relay: keep the broker's last deliveries as spares.
	return int32(config.DefaultMaxAttempts(limit))
}

// Result is what one case came to.
type Result struct {
	Case *Case
	// Got describes what became of the record.
	Got string
	// Diffs lists every difference from the expectation; none when the
	// case passed. When the outcome itself differs (outputs, dead letter
	// or release), the one line says so.
	Diffs []string
	// SameOutcome is true when the record came to the kind of outcome
	// expected (and Diffs, if any, are about its details).
	SameOutcome bool
}

// Passed reports whether the case met its expectation.
func (r Result) Passed() bool { return len(r.Diffs) == 0 }

// Run runs every case of s through p's chain, with p's formats read and
// written under a schema registry held in memory (see Suite.Schemas), and
// compares the outcome with the case's expectation. An error is a suite
// that cannot run: a schema file missing or broken, a schema the
// pipeline names by subject or id with no file standing in for it.
func Run(ctx context.Context, p *config.Pipeline, s *Suite) ([]Result, error) {
	e, err := newEnv(ctx, p, s)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", s.File, err)
	}
	return e.run(ctx, s), nil
}

// RunChain runs every case of s through chain (values read as JSON, keys
// as text), as Run does for a pipeline without formats.
func RunChain(ctx context.Context, p *config.Pipeline, chain *transform.Chain, s *Suite) []Result {
	e := &env{p: p, chain: chain}
	return e.run(ctx, s)
}

func (e *env) run(ctx context.Context, s *Suite) []Result {
	results := make([]Result, len(s.Cases))
	for i := range s.Cases {
		results[i] = e.runCase(ctx, s, s.maxAttempts(e.p), &s.Cases[i])
	}
	return results
}

// outcome is what became of one source record.
type outcome struct {
	outs       []*kgo.Record
	release    bool
	deadLetter *transform.Decision
	// held: the record's transform needed what was out of reach (in a
	// test, a schema the registry held in memory lacks).
	held *transform.Decision
}

func (e *env) runCase(ctx context.Context, s *Suite, maxAttempts int32, c *Case) Result {
	p := e.p
	in, err := e.record(ctx, c.Input)
	if err != nil {
		return Result{Case: c, Got: "no record", Diffs: []string{"input: " + err.Error()}}
	}
	dc := in.Source.DeliveryCount
	src := lineage.Source{Topic: in.Source.Topic, Partition: in.Source.Partition, Offset: in.Source.Offset}
	outs, err := e.chain.Apply(ctx, in)

	var got outcome
	if err != nil {
		d := transform.Decide(err, dc, maxAttempts)
		switch {
		case d.Hold:
			got.held = &d
		case d.Release:
			got.release = true
		default:
			got.deadLetter = &d
		}
	} else {
		// As the worker writes them: the default topic filled in, the
		// source coordinates and the fan-out position added.
		for i, o := range outs {
			out := lineage.Output(o, p.Output.Topic, src, i, len(outs))
			got.outs = append(got.outs, &out)
		}
	}
	diffs, same := e.compare(ctx, s, c.Expect, got)
	return Result{Case: c, Got: got.describe(), Diffs: diffs, SameOutcome: same}
}

// valueBytes is a YAML value as record bytes: a string as it is, nil as
// no value, anything else as JSON.
func valueBytes(v any) ([]byte, error) {
	switch x := v.(type) {
	case nil:
		return nil, nil
	case string:
		return []byte(x), nil
	}
	b, err := json.Marshal(normalize(v))
	if err != nil {
		return nil, fmt.Errorf("value cannot be written as JSON: %w", err)
	}
	return b, nil
}

// normalize turns YAML mappings with non-string keys into ones
// encoding/json can write.
func normalize(v any) any {
	switch x := v.(type) {
	case map[any]any:
		m := make(map[string]any, len(x))
		for k, e := range x {
			m[fmt.Sprint(k)] = normalize(e)
		}
		return m
	case map[string]any:
		m := make(map[string]any, len(x))
		for k, e := range x {
			m[k] = normalize(e)
		}
		return m
	case []any:
		s := make([]any, len(x))
		for i, e := range x {
			s[i] = normalize(e)
		}
		return s
	}
	return v
}

// describe says in one line what became of the record.
func (o outcome) describe() string {
	switch {
	case o.held != nil:
		return "held: " + o.held.Err.Error()
	case o.release:
		return "released for another delivery"
	case o.deadLetter != nil:
		return "dead letter " + describeDeadLetter(o.deadLetter)
	case len(o.outs) == 0:
		return "no output (filtered out)"
	case len(o.outs) == 1:
		return "1 output"
	}
	return fmt.Sprintf("%d outputs", len(o.outs))
}

func describeDeadLetter(d *transform.Decision) string {
	return fmt.Sprintf("(kind %s, class %s, step %s): %s", dlqKind(d), d.Err.Class, d.Err.Step, d.Err.Error())
}

// dlqKind is the kind header the relay gives the dead letter.
func dlqKind(d *transform.Decision) string {
	if d.Exhausted {
		return lineage.DLQKindAttemptsExhausted
	}
	return lineage.DLQKindPermanent
}
