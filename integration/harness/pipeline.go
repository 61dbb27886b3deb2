package harness

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Partition counts of the topics NewPipeline creates. The source's is an
// option; the output and the dead letters are fixed, so that a reader of
// them (the chaos suite's concurrent reader) knows their partitions.
const (
	OutputPartitions     = 3
	DeadLetterPartitions = 1
)

// PipelineOptions shape a test pipeline: its topics and the pipeline file
// the relay runs. Zero values take the defaults given per field.
type PipelineOptions struct {
	// Name names the pipeline; its topics and group are derived from it
	// (see Pipeline). Required, and unique per test: the topics must not
	// exist yet.
	Name string
	// Seeds are the brokers the harness's own clients use: NewPipeline
	// creates the topics through them, and Pipeline.Seeds returns them.
	// With SourceSeeds set, they are the sink cluster's: the output and
	// dead-letter topics (and the ledger the relay creates) live there.
	// Required.
	Seeds []string
	// Brokers are the file's brokers, the relay's seed brokers (default
	// Seeds). An entry may be an environment reference the relay
	// interpolates when it loads the file, e.g. "${CHAOS_BROKERS}" for a
	// proxy chosen per process.
	Brokers []string
	// SourceSeeds, when set, put the source on a cluster of its own: the
	// harness's clients create the source topic there, seed it and read
	// the share group there (Pipeline.SourceSeeds), and the file gets a
	// source.cluster section. Default none: one cluster, and the file is
	// what it is without the three Source options.
	SourceSeeds []string
	// SourceBrokers are source.cluster.brokers, the relay's seed brokers
	// of the source cluster (default SourceSeeds); entries may be
	// environment references, as in Brokers. Only with SourceSeeds.
	SourceBrokers []string
	// SourceSecurity is source.cluster's tls and sasl sections, written
	// as Security is (top-level keys, e.g. "tls:\n  enabled: true\n"):
	// the harness indents them under source.cluster. Only with
	// SourceSeeds. Default none.
	SourceSecurity string
	// Dir is where the file is written, as pipeline.yaml. Required.
	Dir string

	// Delivery is "exactly-once" (default) or "at-least-once".
	Delivery string
	// Workers per relay process (default 2).
	Workers int
	// Partitions of the source topic (default 3).
	Partitions int32
	// OnBroker places every topic of the pipeline on the broker with this
	// node id; 0 (default) lets the controller choose.
	OnBroker int32
	// Replicas is the replication factor of the pipeline's topics
	// (harness.Topic.Replicas: 0 means the cluster's default). The relay
	// creates the ledger itself, at min(3, brokers).
	Replicas int16
	// OutputOnBroker places the output topic on this broker instead
	// (default OnBroker).
	OutputOnBroker int32
	// MaxRecords is batch.max_records (default 50; -1 leaves it out of
	// the file, to the relay's own sizing).
	MaxRecords int
	// AcquireMode is batch.acquire_mode (default: the relay's,
	// record_limit).
	AcquireMode string
	// Consumers is batch.consumers (default: the relay's, 4).
	Consumers int
	// TransformConcurrency is batch.transform_concurrency, the records
	// of a batch transformed at once (default: the relay's, 1).
	TransformConcurrency int
	// PollTimeout is batch.poll_timeout (default 500ms).
	PollTimeout time.Duration
	// Transforms is the transform chain as YAML: a flow list such as
	// `[{type: delay, duration: 1ms}]`, or a block list whose lines are
	// indented by two spaces and that starts with a newline (default []).
	Transforms string
	// GroupConfigs are source.group_configs, e.g.
	// share.record.lock.duration.ms (default none).
	GroupConfigs map[string]string
	// TxnTimeout is output.transaction_timeout (default 10s).
	TxnTimeout time.Duration
	// ForegroundCommit sets batch.background_commit: false (exactly-once
	// commits each batch before writing the next, with one producer a
	// worker). Default false: the relay's default, true.
	ForegroundCommit bool
	// RenewLocks is batch.renew_locks. Unlike the relay's default
	// (true), the zero value here is false: most tests want a lock that
	// expires when they expect it to.
	RenewLocks bool
	// MaxAttempts is dead_letter.max_attempts (default 0: the relay
	// derives it from the group's delivery limit).
	MaxAttempts int
	// DeadLetterAck is dead_letter.ack (default "accept").
	DeadLetterAck string
	// MetricsListen is metrics.listen (default "": no endpoint). It may be
	// an environment reference, e.g. "${CHAOS_METRICS_ADDR}" for a port
	// chosen per process.
	MetricsListen string
	// LeaveGroupConfig sets source.manage_group_config: false (the
	// relay then sets none of the group's configs). Default false.
	LeaveGroupConfig bool
	// FetchMaxBytes is client.consumer.fetch_max_bytes (default: the
	// relay's).
	FetchMaxBytes int
	// DrainTimeout is batch.drain_timeout as YAML, e.g. "0s" (default
	// "": the relay's, 5s).
	DrainTimeout string
	// Security is YAML appended to the file as is: its tls and sasl
	// sections, for a relay on a secured listener (Brokers) while the
	// harness's own clients keep using Seeds; with SourceSeeds, the sink
	// cluster's. Default none.
	Security string

	// Registry is the schema registry's URL, schema_registry.urls
	// (default none: no schema_registry section), which the registry
	// formats below need.
	Registry string
	// SourceValueFormat is source.value_format and OutputValueFormat
	// output.value_format, e.g. "avro" (default: the relay's, json and
	// the source's).
	SourceValueFormat, OutputValueFormat string
	// OutputValueSchema is output.value_schema as a YAML flow mapping,
	// e.g. "{file: job.avsc, auto_register: true}" (default none).
	OutputValueSchema string
	// Files are written into Dir beside the pipeline file, by name, with
	// their content: the schema files the file names (default none).
	Files map[string]string
}

// Pipeline is a test pipeline NewPipeline made: the names of its topics and
// group, the brokers to check it on, and its file.
type Pipeline struct {
	// Name is PipelineOptions.Name.
	Name string
	// Source, Output, DeadLetter are the topics NewPipeline created:
	// <name>.orders, <name>.jobs and <name>.dlq.
	Source, Output, DeadLetter string
	// Group is the share group, <name>.group.
	Group string
	// Ledger is the claim ledger exactly-once relays create, <name>.ledger
	// (the relay's default name).
	Ledger string
	// Seeds are PipelineOptions.Seeds: the brokers to check the output,
	// the dead letters and the ledger on.
	Seeds []string
	// SourceSeeds are the brokers to seed the source on and to read the
	// share group on: PipelineOptions.SourceSeeds, or Seeds when the
	// pipeline is on one cluster.
	SourceSeeds []string
	// Brokers and SourceBrokers are the file's brokers and
	// source.cluster.brokers as written (an environment reference is left
	// as it is); SourceBrokers is nil on one cluster.
	Brokers, SourceBrokers []string
	// Path is the pipeline file.
	Path string
}

// NewPipeline creates the pipeline's source, output and dead-letter topics
// and writes its pipeline file. It does not seed records or start relays.
func NewPipeline(ctx context.Context, o PipelineOptions) (*Pipeline, error) {
	o, err := o.withDefaults()
	if err != nil {
		return nil, err
	}
	p := &Pipeline{
		Name: o.Name, Source: o.Name + ".orders", Output: o.Name + ".jobs", DeadLetter: o.Name + ".dlq",
		Group: o.Name + ".group", Ledger: o.Name + ".ledger", Seeds: o.Seeds, SourceSeeds: o.Seeds,
		Path: filepath.Join(o.Dir, "pipeline.yaml"),
	}
	p.Brokers = o.Brokers
	if len(o.SourceSeeds) > 0 {
		p.SourceSeeds, p.SourceBrokers = o.SourceSeeds, o.SourceBrokers
	}
	source := Topic{Name: p.Source, Partitions: o.Partitions, Broker: o.OnBroker, Replicas: o.Replicas}
	sink := []Topic{
		{Name: p.Output, Partitions: OutputPartitions, Broker: cmp.Or(o.OutputOnBroker, o.OnBroker), Replicas: o.Replicas},
		{Name: p.DeadLetter, Partitions: DeadLetterPartitions, Broker: o.OnBroker, Replicas: o.Replicas},
	}
	if len(o.SourceSeeds) > 0 {
		err = CreateTopics(ctx, o.SourceSeeds, source)
	} else {
		sink = append([]Topic{source}, sink...)
	}
	if err == nil {
		err = CreateTopics(ctx, o.Seeds, sink...)
	}
	if err != nil {
		return nil, fmt.Errorf("pipeline %s: %w", p.Name, err)
	}
	for _, name := range slices.Sorted(maps.Keys(o.Files)) {
		if err := os.WriteFile(filepath.Join(o.Dir, name), []byte(o.Files[name]), 0o644); err != nil {
			return nil, fmt.Errorf("pipeline %s: %w", p.Name, err)
		}
	}
	if err := os.WriteFile(p.Path, p.yaml(o), 0o644); err != nil {
		return nil, fmt.Errorf("pipeline %s: %w", p.Name, err)
	}
	return p, nil
}

// withDefaults checks the required options and fills in the defaults.
func (o PipelineOptions) withDefaults() (PipelineOptions, error) {
	var missing []string
	if o.Name == "" {
		missing = append(missing, "Name")
	}
	if len(o.Seeds) == 0 {
		missing = append(missing, "Seeds")
	}
	if o.Dir == "" {
		missing = append(missing, "Dir")
	}
	if len(missing) > 0 {
		return o, errors.New("pipeline options: no " + strings.Join(missing, ", no "))
	}
	for name := range o.Files {
		if name == "" || filepath.Base(name) != name || name == "pipeline.yaml" {
			return o, fmt.Errorf("pipeline options: Files: %q is not a file name of its own in Dir", name)
		}
	}
	if len(o.SourceSeeds) == 0 && (len(o.SourceBrokers) > 0 || o.SourceSecurity != "") {
		return o, errors.New("pipeline options: SourceBrokers or SourceSecurity without SourceSeeds, the source cluster they belong to")
	}
	if len(o.SourceBrokers) == 0 {
		o.SourceBrokers = o.SourceSeeds
	}
	if len(o.Brokers) == 0 {
		o.Brokers = o.Seeds
	}
	if o.Delivery == "" {
		o.Delivery = "exactly-once"
	}
	if o.Workers == 0 {
		o.Workers = 2
	}
	if o.Partitions == 0 {
		o.Partitions = 3
	}
	if o.MaxRecords == 0 {
		o.MaxRecords = 50
	}
	if o.PollTimeout == 0 {
		o.PollTimeout = 500 * time.Millisecond
	}
	if o.Transforms == "" {
		o.Transforms = "[]"
	}
	if o.TxnTimeout == 0 {
		o.TxnTimeout = 10 * time.Second
	}
	if o.DeadLetterAck == "" {
		o.DeadLetterAck = "accept"
	}
	if o.Security != "" && !strings.HasSuffix(o.Security, "\n") {
		o.Security += "\n"
	}
	return o, nil
}

// yaml renders the pipeline file, with the keys config.Load accepts.
func (p *Pipeline) yaml(o PipelineOptions) []byte {
	brokers := quoted(o.Brokers)
	var gc strings.Builder
	for _, k := range slices.Sorted(maps.Keys(o.GroupConfigs)) {
		fmt.Fprintf(&gc, "\n    %s: %q", k, o.GroupConfigs[k])
	}
	if gc.Len() == 0 {
		gc.WriteString(" {}")
	}
	maxRecords := fmt.Sprintf("\n  max_records: %d", o.MaxRecords)
	if o.MaxRecords < 0 {
		maxRecords = ""
	}
	batch := "" // batch keys with the relay's defaults unless set
	if o.AcquireMode != "" {
		batch = "\n  acquire_mode: " + o.AcquireMode
	}
	if o.Consumers != 0 {
		batch += fmt.Sprintf("\n  consumers: %d", o.Consumers)
	}
	if o.TransformConcurrency != 0 {
		batch += fmt.Sprintf("\n  transform_concurrency: %d", o.TransformConcurrency)
	}
	if o.ForegroundCommit {
		batch += "\n  background_commit: false"
	}
	if o.DrainTimeout != "" {
		batch += "\n  drain_timeout: " + o.DrainTimeout
	}
	if len(o.SourceSeeds) > 0 {
		fmt.Fprintf(&gc, "\n  cluster:\n    brokers: [%s]", quoted(o.SourceBrokers))
		for _, l := range strings.Split(strings.TrimRight(o.SourceSecurity, "\n"), "\n") {
			if l != "" {
				gc.WriteString("\n    " + l)
			}
		}
	}
	var source, output strings.Builder // format lines, when set
	if o.SourceValueFormat != "" {
		source.WriteString("\n  value_format: " + o.SourceValueFormat)
	}
	if o.OutputValueFormat != "" {
		output.WriteString("\n  value_format: " + o.OutputValueFormat)
	}
	if o.OutputValueSchema != "" {
		output.WriteString("\n  value_schema: " + o.OutputValueSchema)
	}
	registry := ""
	if o.Registry != "" {
		registry = fmt.Sprintf("schema_registry:\n  urls: [%q]\n", o.Registry)
	}
	client := ""
	if o.FetchMaxBytes != 0 {
		client = fmt.Sprintf("client:\n  consumer:\n    fetch_max_bytes: %d\n", o.FetchMaxBytes)
	}
	return fmt.Appendf(nil, `name: %s
brokers: [%s]
delivery: %s
workers: %d
source:
  topics: [%s]
  group: %s
  manage_group_config: %v
  group_configs:%s%s
output:
  topic: %s
  transaction_timeout: %s%s
dead_letter:
  topic: %s
  max_attempts: %d
  ack: %s
batch:%s%s
  poll_timeout: %s
  renew_locks: %v
transforms: %s
metrics:
  listen: %q
%s%s%s`, p.Name, brokers, o.Delivery, o.Workers, p.Source, p.Group, !o.LeaveGroupConfig, gc.String(), source.String(),
		p.Output, o.TxnTimeout, output.String(), p.DeadLetter, o.MaxAttempts, o.DeadLetterAck, maxRecords, batch, o.PollTimeout, o.RenewLocks, o.Transforms, o.MetricsListen, client, o.Security, registry)
}

// quoted renders brokers as the items of a YAML flow list, each quoted.
func quoted(brokers []string) string {
	q := make([]string, len(brokers))
	for i, b := range brokers {
		q[i] = strconv.Quote(b)
	}
	return strings.Join(q, ", ")
}
