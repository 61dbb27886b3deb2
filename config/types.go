package config

import (
	"slices"
	"time"

	"github.com/sharerelay/sharerelay/transform"
)

// Delivery guarantees a pipeline can ask for.
const (
	AtLeastOnce = "at-least-once"
	ExactlyOnce = "exactly-once"
)

// Pipeline is one relay pipeline, as declared in a YAML file. Load decodes,
// interpolates, defaults and validates it in one place; every other package
// can trust its values.
type Pipeline struct {
	// Name identifies the pipeline; it prefixes transactional ids and
	// names the default ledger topic. Required; [a-zA-Z0-9._-]+.
	Name string `yaml:"name" json:"name"`
	// Brokers are the seed brokers. Required.
	Brokers []string `yaml:"brokers" json:"brokers"`
	// Delivery is "exactly-once" (default) or "at-least-once".
	Delivery string `yaml:"delivery" json:"delivery"`
	// Workers is the number of workers in this process (default 1). Each
	// has its own share consumer and transactional producer.
	Workers int `yaml:"workers" json:"workers"`

	Source     Source           `yaml:"source" json:"source"`
	Output     Output           `yaml:"output" json:"output"`
	DeadLetter DeadLetter       `yaml:"dead_letter" json:"dead_letter"`
	Batch      Batch            `yaml:"batch" json:"batch"`
	Transforms []transform.Spec `yaml:"transforms" json:"transforms"`
	CEL        CEL              `yaml:"cel" json:"cel"`
	Metrics    Metrics          `yaml:"metrics" json:"metrics"`
	Ledger     Ledger           `yaml:"ledger" json:"ledger"`

	// TLS and SASL secure every connection to the brokers; Client tunes
	// the Kafka clients. The relay gives every client it makes the same
	// settings (see internal/kafkaopts).
	TLS    TLS    `yaml:"tls" json:"tls"`
	SASL   SASL   `yaml:"sasl" json:"sasl"`
	Client Client `yaml:"client" json:"client"`

	// SchemaRegistry is the registry of the outputs' schemas and, unless
	// source.cluster has one of its own, of the source's: needed by the
	// avro, protobuf and json_schema formats.
	SchemaRegistry *SchemaRegistry `yaml:"schema_registry" json:"schema_registry"`

	// dir is the directory of the pipeline file, which schema files are
	// relative to (SchemaPath).
	dir string

	// Warnings are what Parse or Validate found questionable but not
	// wrong — credentials sent in clear text, certificates not verified
	// — for the caller to print. They are not read from the file.
	Warnings []Warning `yaml:"-" json:"-"`
}

// Source is where records come from: one or more topics read through a
// share group.
type Source struct {
	Topics []string `yaml:"topics" json:"topics"`
	// Group is the share group id. Default "<name>".
	Group string `yaml:"group" json:"group"`
	// AutoOffsetReset is the group's share.auto.offset.reset: "earliest"
	// or "latest" (default "earliest": a new pipeline processes what is
	// already in the topic).
	AutoOffsetReset string `yaml:"auto_offset_reset" json:"auto_offset_reset"`
	// IsolationLevel is the group's share.isolation.level:
	// "read_committed" (default) or "read_uncommitted".
	IsolationLevel string `yaml:"isolation_level" json:"isolation_level"`
	// ManageGroupConfig: when true (default) the relay sets the two
	// group configs above and GroupConfigs with IncrementalAlterConfigs
	// at start, and, unless GroupConfigs sets them, raises the group's
	// record lock limit and delivery limit for what an instance holds
	// (sharegroup.ConfigsToSet).
	ManageGroupConfig *bool `yaml:"manage_group_config" json:"manage_group_config"`
	// GroupConfigs are further share-group configs the relay sets with
	// the two above, e.g. share.record.lock.duration.ms or
	// share.delivery.count.limit. Keys must start with "share.".
	GroupConfigs map[string]string `yaml:"group_configs" json:"group_configs"`
	// Cluster, when set, is the cluster the source topics and the share
	// group live on; the pipeline's own brokers, tls, sasl and client
	// are then the cluster of the outputs, dead letters and claim ledger
	// only. Nil (default): the source is on that cluster too. See
	// Pipeline.SourceCluster.
	Cluster *Cluster `yaml:"cluster" json:"cluster"`

	// ValueFormat is how the records' values are read: json (default),
	// avro, protobuf, json_schema (the Confluent wire format, with a
	// schema registry), string or bytes. A value is decoded only when a
	// step reads it.
	ValueFormat string `yaml:"value_format" json:"value_format"`
	// KeyFormat is how the records' keys are read (default string: the
	// key's text).
	KeyFormat string `yaml:"key_format" json:"key_format"`
	// ValueSchema and KeySchema optionally give a reader schema (see
	// ReadSchema).
	ValueSchema *ReadSchema `yaml:"value_schema" json:"value_schema"`
	KeySchema   *ReadSchema `yaml:"key_schema" json:"key_schema"`
}

// Cluster is a Kafka cluster and how the relay connects to it.
type Cluster struct {
	// Brokers are the cluster's seed brokers. Required.
	Brokers []string `yaml:"brokers" json:"brokers"`
	// TLS and SASL secure the connections to this cluster. Neither is
	// taken from the other cluster's: each cluster has its own
	// certificates and principals, and a credential is never sent to a
	// cluster it was not written for.
	TLS  TLS  `yaml:"tls" json:"tls"`
	SASL SASL `yaml:"sasl" json:"sasl"`
	// Client tunes the clients of this cluster. In source.cluster, a
	// key left out takes the pipeline's client value, and the producer
	// keys are refused: the relay writes nothing to the source cluster.
	Client Client `yaml:"client" json:"client"`
	// SchemaRegistry, in source.cluster, is the registry of the source
	// cluster's schemas, where the source records' schema ids are
	// looked up. Left out: the pipeline's schema_registry.
	SchemaRegistry *SchemaRegistry `yaml:"schema_registry" json:"schema_registry"`
}

// Output is where transformed records go.
type Output struct {
	// Topic is the default output topic (a route transform may choose
	// another). Required.
	Topic string `yaml:"topic" json:"topic"`
	// TransactionTimeout is the producer's transaction timeout (default
	// 10s). Exactly-once needs it below the share lock duration.
	TransactionTimeout time.Duration `yaml:"transaction_timeout" json:"transaction_timeout"`

	// ValueFormat and KeyFormat are how the outputs' values and keys are
	// written (default: the source's formats). A value or key no step
	// changed is written as it came when its format and schema are the
	// source's.
	ValueFormat string `yaml:"value_format" json:"value_format"`
	KeyFormat   string `yaml:"key_format" json:"key_format"`
	// ValueSchema and KeySchema choose the schemas written with (see
	// Schema).
	ValueSchema *Schema `yaml:"value_schema" json:"value_schema"`
	KeySchema   *Schema `yaml:"key_schema" json:"key_schema"`
	// Routes gives a topic a route or copy step writes to formats and
	// schemas of its own, by topic name; a field left out takes the
	// output's.
	Routes map[string]*RouteFormats `yaml:"routes" json:"routes"`
	// Timestamp is the outputs' timestamp: source (default: the source
	// record's), now (the time of writing), or a CEL expression giving a
	// timestamp (null: the time of writing).
	Timestamp string `yaml:"timestamp" json:"timestamp"`
}

// DeadLetter configures the dead-letter topic.
type DeadLetter struct {
	// Topic is required.
	Topic string `yaml:"topic" json:"topic"`
	// MaxAttempts is the number of deliveries a record gets before a
	// retryable failure dead-letters it. 0 (default) derives it from the
	// group's effective share.delivery.count.limit read from the broker
	// (DefaultMaxAttempts): two less than the limit, keeping two spare
	// deliveries for a crash during the last attempt. A limit the relay
	// raised itself (ManageGroupConfig) adds spares, not attempts: the
	// attempts are then derived from the broker's default limit.
	MaxAttempts int `yaml:"max_attempts" json:"max_attempts"`
	// Ack is how a dead-lettered record is acknowledged to the share
	// group once its dead letter is committed: "accept" (default: the
	// record was handled, by the dead letter) or "reject" (the share
	// group shows it as unprocessable, and the broker archives it). With
	// "reject" the relay refuses to start when the group has a
	// broker-side dead-letter topic (KIP-1191), which would copy every
	// dead letter a second time.
	Ack string `yaml:"ack" json:"ack"`
}

// Acquire modes of a share consumer (Batch.AcquireMode). AcquireAuto is
// not a broker mode: it resolves to AcquireRecordLimit (Batch.Acquire);
// it is kept so that files naming it still load.
const (
	AcquireAuto           = "auto"
	AcquireBatchOptimized = "batch_optimized"
	AcquireRecordLimit    = "record_limit"
)

// WholeBatchesLost is why whole record batches are a risk: what a file
// that asks for them (batch_optimized) is warned of, and why auto never
// chooses them (docs/decisions/acquire-mode.md).
const WholeBatchesLost = "every crash of a relay costs a delivery to each record it holds, whole record batches make it hold many more, and a record whose deliveries run out is archived by the broker with no output and no dead letter"

// Acquire resolves Batch.AcquireMode for the share consumers: the
// mode the file names, and record_limit for auto; why says which, for
// the relay's log and `relay check`. auto never chooses whole record
// batches: no rule about batch and poll sizes makes them safe from
// repeated crashes (WholeBatchesLost).
func (b Batch) Acquire() (mode, why string) {
	if b.AcquireMode != AcquireAuto {
		return b.AcquireMode, "set by batch.acquire_mode"
	}
	return AcquireRecordLimit, "auto: record_limit; whole record batches can lose records to repeated crashes"
}

// Acknowledgements of a dead-lettered record (DeadLetter.Ack).
const (
	DeadLetterAccept = "accept"
	DeadLetterReject = "reject"
)

// Batch bounds one poll → transaction → ack cycle.
type Batch struct {
	// MaxRecords is how many records one share consumer asks for at once
	// (default 2000); a worker's batch is its consumers' polls that are
	// ready. With AcquireMode record_limit a poll holds at most MaxRecords
	// records; with batch_optimized the broker acquires whole record
	// batches until it reaches MaxRecords, so a poll can hold up to one
	// source batch more. Left out of the file, it is sized at start with
	// Consumers to the record locks the group can give the instance
	// (sharegroup.Size, Explicit).
	MaxRecords int `yaml:"max_records" json:"max_records"`
	// AcquireMode is how the broker cuts what a share fetch acquires
	// (KIP-1206, the Java consumer's share.acquire.mode). record_limit
	// (default) acquires up to MaxRecords, splitting a record batch, and
	// every consumer that acquires part of a batch receives and
	// decompresses all of it, while the broker tracks and acknowledges
	// each record of that batch apart: up to several times the fetch work
	// with large source batches (franz-go producers write up to 1 MiB a
	// batch). batch_optimized (Kafka's default) acquires whole record
	// batches, so MaxRecords is a soft bound: less work for client and
	// broker, but polls of uneven size that take thousands of record
	// locks at once with small records, slow and erratic when the group
	// runs short of locks, and a crash of an instance costs a delivery to
	// every record it holds, which whole batches multiply: repeated
	// crashes can use up a record's deliveries (WholeBatchesLost; a
	// clean stop writes what it holds, see DrainTimeout;
	// docs/decisions/acquire-mode.md). A file that names it gets a
	// warning. auto is record_limit (Acquire), kept so that files naming
	// it still load (with a warning). In every mode a consumer fetches only inside a poll and the
	// worker takes every record of it, so no acquired record waits in the
	// client where nothing renews its lock (docs/decisions/fetch-ahead.md).
	AcquireMode string `yaml:"acquire_mode" json:"acquire_mode"`
	// PollTimeout bounds one poll (default 1s); an empty poll just loops.
	PollTimeout time.Duration `yaml:"poll_timeout" json:"poll_timeout"`
	// RenewLocks (default true) renews the acquisition locks of a batch
	// still in flight after a third of the lock duration (AckRenew,
	// KIP-1222), so slow work is not delivered again needlessly. An
	// optimisation only: exactly-once never depends on a lock being held.
	RenewLocks *bool `yaml:"renew_locks" json:"renew_locks"`
	// Consumers is the number of share consumers per worker (default 4,
	// 1..16). Each polls about MaxRecords; a worker writes the polls that
	// are ready together (one transaction with exactly-once), so more
	// consumers make batches larger and let the next fetch overlap the
	// current write. A worker holds up to Consumers × MaxRecords records
	// at once; a batch takes the polls of half of them (rounded up), so
	// the others fetch while it is written and committed. The relay
	// lowers it at start (with a warning) so that Workers × Consumers
	// stays below the share group's delivery limit: a crash can cost a
	// record one delivery per share consumer of the instance
	// (docs/decisions/consumers-per-worker.md). With
	// ManageGroupConfig the relay first raises that limit for its
	// consumers, within the broker's maximum (sharegroup.ConfigsToSet).
	// Left out of the file, it is sized at start with MaxRecords to the
	// record locks the group can give the instance: its limit a
	// partition × the source partitions, shared among the relay
	// instances in the group (sharegroup.Size, Explicit).
	Consumers int `yaml:"consumers" json:"consumers"`
	// Linger is how long a worker whose ready polls hold fewer than half
	// of what a batch takes (the polls of half the consumers) waits for
	// the polls of its other consumers before writing them (0 to 1s; 0,
	// the default, writes what is ready at once). A share group hands
	// out records in pieces when its record locks run short, and a
	// linger merges them into fewer transactions; a trickle of records
	// is delayed by at most Linger. The default is 0: the records a
	// linger holds while waiting cost exactly-once more than the
	// transactions it saves (DefaultLinger).
	Linger time.Duration `yaml:"linger" json:"linger"`
	// TransformConcurrency is how many records of a batch a worker
	// transforms at once (default 1, at most 256): for slow, I/O-bound
	// steps. Outputs keep the batch's order; records of a share group
	// have no order to keep across batches anyway.
	TransformConcurrency int `yaml:"transform_concurrency" json:"transform_concurrency"`
	// BackgroundCommit (exactly-once only; default true) gives each
	// worker a second transactional producer: the last transaction of a
	// batch commits in the background while the worker writes the next
	// batch with the other producer, and the batch is acknowledged when
	// its commit ends. false commits each batch before the next is
	// written, with one producer (and transactional id) a worker: less
	// CPU a record in the relay, and as fast where the relay and the
	// broker share a small machine (docs/decisions/two-lanes.md).
	// Where a commit takes long (a coordinator across the
	// network) the overlap is what hides it, hence the default.
	BackgroundCommit *bool `yaml:"background_commit" json:"background_commit"`
	// DrainTimeout is how long a worker that is told to stop (SIGTERM,
	// SIGINT) goes on writing the records it already holds — its batch
	// in flight and the polls its consumers handed over — before it
	// releases what is left (default 5s, at most MaxDrainTimeout; 0
	// releases everything not yet being written at once). It polls for
	// nothing new. Every record acquired costs a delivery whether it is
	// written or released, so a record released at a stop has spent one
	// for nothing: with frequent restarts and large polls that walks
	// records towards the group's delivery limit, at which the broker
	// archives them. Records whose transaction cannot be written (the
	// cluster unavailable) are released at once rather than held for
	// the drain. The shutdown bound is DrainTimeout +
	// output.transaction_timeout + 10 s (docs/decisions/drain.md).
	DrainTimeout time.Duration `yaml:"drain_timeout" json:"drain_timeout"`

	// consumersSet and maxRecordsSet say that the pipeline set Consumers
	// and MaxRecords itself (Explicit); defaulted, that SetDefaults
	// has run.
	consumersSet, maxRecordsSet, defaulted bool
}

// Explicit reports whether the pipeline set batch.consumers and
// batch.max_records itself (in its file, or in code before SetDefaults)
// rather than taking the defaults: the relay keeps a value set, and sizes
// one left to it to the share group's record locks
// (sharegroup.Size).
func (b Batch) Explicit() (consumers, maxRecords bool) {
	return b.consumersSet, b.maxRecordsSet
}

// CEL configures the evaluation of the transforms' CEL expressions.
type CEL struct {
	// CostLimit bounds the runtime cost of one evaluation of one
	// expression for one record, in CEL's cost units (about one per
	// operation or element visited): an expression that exceeds it stops
	// and the record is dead-lettered, so that no expression can stall a
	// worker. 0 or left out means transform.DefaultCostLimit (100000,
	// some 7 ms of the worst kind of work); at most
	// transform.MaxCostLimit.
	CostLimit int `yaml:"cost_limit" json:"cost_limit"`
}

// Metrics configures the HTTP endpoint for /metrics, /healthz and /readyz.
type Metrics struct {
	// Listen is host:port; empty disables the endpoint.
	Listen string `yaml:"listen" json:"listen"`
}

// Ledger configures the exactly-once claim ledger (delivery: exactly-once).
type Ledger struct {
	// Topic defaults to "<name>.ledger".
	Topic string `yaml:"topic" json:"topic"`
	// Generation starts a fresh ledger generation when raised: claims of
	// older generations are ignored. Raise it after resetting the share
	// group's offsets to reprocess data (default 0).
	Generation int `yaml:"generation" json:"generation"`
}

// OutputTopics returns the topics the pipeline writes records to, sorted
// and without duplicates: the output topic, every topic a transform may
// send records to (see transform.Spec.Targets), and the dead-letter topic.
// The ledger topics are not included.
func (p *Pipeline) OutputTopics() []string {
	ts := []string{p.Output.Topic, p.DeadLetter.Topic}
	for _, s := range p.Transforms {
		for _, t := range s.Targets() {
			ts = append(ts, t.Topic)
		}
	}
	slices.Sort(ts)
	ts = slices.Compact(ts)
	if len(ts) > 0 && ts[0] == "" {
		ts = ts[1:]
	}
	return ts
}

// Chain builds the pipeline's transform chain with TransformOptions, its
// values read as JSON and keys as text (no formats); ChainWith adds
// formats.
func (p *Pipeline) Chain() (*transform.Chain, error) { return p.ChainWith(nil) }

// ChainWith builds the pipeline's transform chain with TransformOptions
// and formats f (package format's, for the pipeline's formats).
func (p *Pipeline) ChainWith(f transform.Formats) (*transform.Chain, error) {
	o := p.TransformOptions()
	o.Formats = f
	return transform.BuildWith(p.Transforms, o)
}

// DefaultMaxAttempts is the attempts a failing record gets when
// dead_letter.max_attempts is 0, for a share group whose delivery count
// limit is limit: limit-2 when that leaves at least one attempt, else
// limit-1 (at least 1).
//
// The spare deliveries are for a crash during the last attempt, and one
// crash can cost a record two deliveries on Kafka 4.3: the one the crashed
// process held, and one that a share fetch the process had left waiting
// in the broker acquires for the dead connection after its records were
// released (integration/chaos TestChaosPoison crashes a relay there). A
// single spare lets the broker archive such a record without a dead
// letter (docs/decisions/delivery-limit.md).
func DefaultMaxAttempts(limit int) int {
	if limit >= 4 {
		return limit - 2
	}
	return max(1, limit-1)
}
