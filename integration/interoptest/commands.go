package interoptest

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os/exec"
	"strconv"
	"strings"
	"time"
)

// Format is a value format under the schema registry, as interop.py names it.
type Format string

// The formats.
const (
	Avro       Format = "avro"
	Protobuf   Format = "protobuf"
	JSONSchema Format = "json_schema"
)

// KeyFormat is how record keys are written and read.
type KeyFormat string

// The key formats. The zero KeyFormat is KeyString.
const (
	// KeyString is UTF-8 text; Record.Key is a JSON string.
	KeyString KeyFormat = "string"
	// KeyBytes is raw bytes; Record.Key is their base64 as a JSON string.
	KeyBytes KeyFormat = "bytes"
	// KeyAvro is Avro under the registry (KeySchema, default the
	// primitive "string"); Record.Key is its canonical form.
	KeyAvro KeyFormat = "avro"
	// KeyNone writes no key and reads none.
	KeyNone KeyFormat = "none"
)

// SubjectNaming is the serializers' subject name strategy. The zero
// value is TopicNaming.
type SubjectNaming string

// The strategies.
const (
	// TopicNaming is <topic>-value (and <topic>-key).
	TopicNaming SubjectNaming = "topic"
	// RecordNaming is the record's full name.
	RecordNaming SubjectNaming = "record"
	// TopicRecordNaming is <topic>-<record full name>.
	TopicRecordNaming SubjectNaming = "topic_record"
)

// ErrTooFew is wrapped by Consume's error when fewer records than asked
// for arrived in time; the records that did are returned with it.
var ErrTooFew = errors.New("interoptest: fewer records than expected")

// Record is one record line of interop.py: what Produce writes (only
// Value is required) and what Consume reads. Key and Value hold the
// canonical JSON form, verbatim.
type Record struct {
	Topic     string          `json:"topic,omitempty"`
	Partition *int32          `json:"partition,omitempty"`
	Offset    int64           `json:"offset,omitempty"`
	Timestamp *int64          `json:"timestamp_ms,omitempty"`
	Key       json.RawMessage `json:"key,omitempty"`
	Value     json.RawMessage `json:"value"`
	// Headers' values are UTF-8 text; a header without a value reads as "".
	Headers map[string]string `json:"headers,omitempty"`
	// Message is the Protobuf message of the value: on Produce, which
	// one to write (default ProduceArgs.ProtoMessage); from Consume, the
	// one the record's message indexes name in its writer schema.
	Message string `json:"message,omitempty"`
	// MessageIndexes are the Protobuf message indexes of the record's
	// wire header, from Consume.
	MessageIndexes []int `json:"message_indexes,omitempty"`
	// SchemaID is the registry id of the value's schema, from Consume.
	SchemaID int `json:"schema_id,omitempty"`
	// KeySchemaID is the key's, for KeyAvro.
	KeySchemaID int `json:"key_schema_id,omitempty"`
}

// KeyText is the key as text: the JSON string Key holds, or "" when it
// holds something else.
func (r Record) KeyText() string {
	var s string
	if json.Unmarshal(r.Key, &s) != nil {
		return ""
	}
	return s
}

// GenerateArgs asks for deterministic source records: an Order of the
// format's order schema each (order.avsc, order.proto,
// order.schema.json), the same for the same arguments.
type GenerateArgs struct {
	Format Format
	Count  int
	Seed   int64
	// ProtoMix makes, for Protobuf, every tenth record from the fourth a
	// Refund (message indexes [1]) and from the eighth an Order.Line
	// ([0, 0]).
	ProtoMix bool
	// BaseTime, when set, gives record i the Kafka timestamp BaseTime+i ms.
	// Keep it recent: the broker deletes records older than its retention.
	BaseTime time.Time
}

// ProduceArgs are the records to write and how.
type ProduceArgs struct {
	Bootstrap []string
	Registry  string // the registry's Confluent API URL
	Topic     string
	Format    Format
	// Schema is a file name of integration/interop/schemas ("order.avsc")
	// or a path.
	Schema string
	// ProtoMessage is the full name of the Protobuf message written when
	// a record names none (default: the first message of Schema).
	ProtoMessage string
	Records      []Record
	KeyFormat    KeyFormat
	KeySchema    string // for KeyAvro; a schema file name or path
	Naming       SubjectNaming
	// UseLatestVersion writes with the subject's latest version (one
	// Register made) instead of registering Schema.
	UseLatestVersion bool
	// RegisterKnownTypes sets the Protobuf serializer's skip.known.types
	// to false: google/protobuf/*.proto are registered as references too.
	RegisterKnownTypes bool
	// Timeout bounds the delivery (default 60 s).
	Timeout time.Duration
}

// Summary is what Produce reports.
type Summary struct {
	Topic string `json:"topic"`
	Count int    `json:"count"`
	// SchemaID is the id every value was written with, or 0 when they
	// were written with several (SchemaIDs).
	SchemaID   int            `json:"schema_id"`
	SchemaIDs  []int          `json:"schema_ids"`
	Partitions map[string]int `json:"partitions"`
}

// ConsumeArgs are the records to read.
type ConsumeArgs struct {
	Bootstrap []string
	Registry  string
	Topic     string
	Format    Format
	// Schema is the .proto the Protobuf classes are generated from
	// (required for Protobuf; unused otherwise: Avro and JSON Schema read
	// with the writer schema from the registry).
	Schema string
	// Count is how many records to read, from the beginning of every
	// partition, with isolation.level=read_committed.
	Count int
	// Timeout bounds reading Count records (default 60 s).
	Timeout time.Duration
	// Linger keeps reading this long after Count, so that a test sees
	// records beyond those it expects (duplicates, for one).
	Linger    time.Duration
	KeyFormat KeyFormat
	KeySchema string
	Naming    SubjectNaming
}

// RegisterArgs is a schema to register.
type RegisterArgs struct {
	Registry string
	Subject  string
	Format   Format
	// Schema is a file name of integration/interop/schemas or a path. A
	// .proto is registered as text, its local imports first, each under
	// a subject named by its import path (as Confluent's serializer names
	// them), referenced by that name.
	Schema    string
	Normalize bool
}

// Generate returns deterministic source records.
func (t *Tool) Generate(ctx context.Context, a GenerateArgs) ([]Record, error) {
	args := []string{"generate", "--format", string(a.Format), "--count", strconv.Itoa(a.Count),
		"--seed", strconv.FormatInt(a.Seed, 10)}
	if a.ProtoMix {
		args = append(args, "--proto-mix")
	}
	if !a.BaseTime.IsZero() {
		args = append(args, "--base-time-ms", strconv.FormatInt(a.BaseTime.UnixMilli(), 10))
	}
	out, err := t.run(ctx, nil, args)
	if err != nil {
		return nil, err
	}
	return parseRecords(out)
}

// Produce serializes the records with Confluent's serializer for the
// format (registering the schema unless UseLatestVersion) and produces
// them with an idempotent producer. A record the serializer refuses fails
// the call before anything is produced.
func (t *Tool) Produce(ctx context.Context, a ProduceArgs) (Summary, error) {
	var in bytes.Buffer
	enc := json.NewEncoder(&in)
	enc.SetEscapeHTML(false)
	for _, r := range a.Records {
		if err := enc.Encode(r); err != nil {
			return Summary{}, fmt.Errorf("interoptest: encode record: %w", err)
		}
	}
	args := []string{"produce", "--bootstrap", strings.Join(a.Bootstrap, ","), "--registry", a.Registry,
		"--topic", a.Topic, "--format", string(a.Format), "--schema", t.schemaArg(a.Schema), "--records", "-",
		"--timeout", seconds(a.Timeout)}
	if a.ProtoMessage != "" {
		args = append(args, "--proto-message", a.ProtoMessage)
	}
	if a.UseLatestVersion {
		args = append(args, "--use-latest-version")
	}
	if a.RegisterKnownTypes {
		args = append(args, "--proto-register-known-types")
	}
	args = append(args, keyArgs(t, a.KeyFormat, a.KeySchema, a.Naming)...)
	out, err := t.run(ctx, &in, args)
	if err != nil {
		return Summary{}, err
	}
	var s Summary
	if err := json.Unmarshal(out, &s); err != nil {
		return Summary{}, fmt.Errorf("interoptest: produce printed %q: %w", out, err)
	}
	return s, nil
}

// Consume reads Count records from the beginning of the topic with
// Confluent's deserializer for the format. When fewer arrive within the
// timeout, it returns those with an error wrapping [ErrTooFew].
func (t *Tool) Consume(ctx context.Context, a ConsumeArgs) ([]Record, error) {
	args := []string{"consume", "--bootstrap", strings.Join(a.Bootstrap, ","), "--registry", a.Registry,
		"--topic", a.Topic, "--format", string(a.Format), "--count", strconv.Itoa(a.Count),
		"--timeout", seconds(a.Timeout), "--linger", strconv.FormatFloat(a.Linger.Seconds(), 'f', -1, 64)}
	if a.Schema != "" {
		args = append(args, "--schema", t.schemaArg(a.Schema))
	}
	args = append(args, keyArgs(t, a.KeyFormat, a.KeySchema, a.Naming)...)
	out, err := t.run(ctx, nil, args)
	recs, perr := parseRecords(out)
	if err != nil {
		var exit *exec.ExitError
		if errors.As(err, &exit) && exit.ExitCode() == exitTooFew && perr == nil {
			return recs, fmt.Errorf("%w: %w", ErrTooFew, err)
		}
		return recs, err
	}
	return recs, perr
}

// Register registers a schema under a subject and returns its id.
func (t *Tool) Register(ctx context.Context, a RegisterArgs) (int, error) {
	args := []string{"register", "--registry", a.Registry, "--subject", a.Subject,
		"--format", string(a.Format), "--schema", t.schemaArg(a.Schema)}
	if a.Normalize {
		args = append(args, "--normalize")
	}
	out, err := t.run(ctx, nil, args)
	if err != nil {
		return 0, err
	}
	var r struct {
		ID int `json:"id"`
	}
	if err := json.Unmarshal(out, &r); err != nil || r.ID == 0 {
		return 0, fmt.Errorf("interoptest: register printed %q: %v", out, err)
	}
	return r.ID, nil
}

// exitTooFew is interop.py's exit status when consume read fewer records
// than asked for.
const exitTooFew = 3

// run runs interop.py with args and stdin, returning its stdout. The
// error carries its stderr.
func (t *Tool) run(ctx context.Context, stdin *bytes.Buffer, args []string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, t.python, append([]string{"interop.py"}, args...)...)
	cmd.Dir = t.dir
	cmd.Env = append(cmd.Environ(), "PYTHONUTF8=1", "PYTHONDONTWRITEBYTECODE=1")
	if stdin != nil {
		cmd.Stdin = stdin
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		msg := strings.TrimSpace(stderr.String())
		if msg == "" {
			msg = "(no output on stderr)"
		}
		return stdout.Bytes(), fmt.Errorf("interop.py %s: %w\n%s", args[0], err, msg)
	}
	return stdout.Bytes(), nil
}

// keyArgs are the key and subject flags shared by produce and consume.
func keyArgs(t *Tool, f KeyFormat, schema string, naming SubjectNaming) []string {
	var args []string
	if f != "" {
		args = append(args, "--key-format", string(f))
	}
	if schema != "" {
		args = append(args, "--key-schema", t.schemaArg(schema))
	}
	if naming != "" {
		args = append(args, "--subject-naming", string(naming))
	}
	return args
}

// seconds is d in seconds for a --timeout flag, 60 when d is not positive.
func seconds(d time.Duration) string {
	if d <= 0 {
		d = time.Minute
	}
	return strconv.FormatFloat(d.Seconds(), 'f', -1, 64)
}

// parseRecords reads JSON lines of records.
func parseRecords(out []byte) ([]Record, error) {
	var recs []Record
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(make([]byte, 0, 64<<10), 64<<20)
	for n := 1; sc.Scan(); n++ {
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 {
			continue
		}
		var r Record
		if err := json.Unmarshal(line, &r); err != nil {
			return recs, fmt.Errorf("interoptest: record line %d: %w", n, err)
		}
		recs = append(recs, r)
	}
	return recs, sc.Err()
}
