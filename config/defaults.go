package config

import (
	"strings"
	"time"
)

// Default values, applied by SetDefaults to fields left unset.
const (
	DefaultDelivery           = ExactlyOnce
	DefaultWorkers            = 1
	DefaultAutoOffsetReset    = "earliest"
	DefaultIsolationLevel     = "read_committed"
	DefaultTransactionTimeout = 10 * time.Second
	DefaultMaxRecords         = 2000
	DefaultPollTimeout        = time.Second
	DefaultConsumers          = 4
	DefaultAcquireMode        = AcquireRecordLimit
	// DefaultDrainTimeout is batch.drain_timeout: long enough to write
	// what a worker holds with the default batch (4 consumers × 2,000
	// records) many times over, short enough that the shutdown bound
	// (drain + transaction timeout + 10 s, 25 s by default) stays within
	// the 30 s that systemd's unit and Kubernetes give a stop.
	DefaultDrainTimeout = 5 * time.Second
	// DefaultLinger is batch.linger: a worker writes what is ready. A
	// linger gives fewer, larger transactions, but the records it holds
	// while waiting cost exactly-once more CPU a record than the
	// transactions save, and with it less throughput where the relay
	// is CPU-bound (docs/decisions/linger.md).
	DefaultLinger               time.Duration = 0
	DefaultTransformConcurrency               = 1
	DefaultDeadLetterAck                      = DeadLetterAccept
	// DefaultLedgerSuffix follows the pipeline name in the default ledger
	// topic: "<name>.ledger".
	DefaultLedgerSuffix = ".ledger"
	// Client tuning; see Client.
	DefaultRequestTimeout = 10 * time.Second
	DefaultCompression    = "snappy"
	// DefaultFetchMaxBytes bounds the bytes one fetch brings, so that what
	// a worker's polls hold (and the fetch bodies they pin) is bounded in
	// bytes as well as in records: about what batch.max_records of 1 KiB
	// take. A smaller bound slows small records, a larger one raises the
	// relay's peak memory (docs/decisions/fetch-max-bytes.md).
	// A larger record still comes: the broker returns at least one
	// batch.
	DefaultFetchMaxBytes = 2 << 20
	DefaultFetchMaxWait  = 500 * time.Millisecond
)

// SetDefaults fills in every unset (zero) field that has a default:
//
//	delivery                         exactly-once
//	workers                          1
//	source.group                     <name>
//	source.auto_offset_reset         earliest
//	source.isolation_level           read_committed
//	source.manage_group_config       true
//	output.transaction_timeout       10s
//	dead_letter.ack                  accept
//	batch.max_records                2000 (sized to the group's record locks at start)
//	batch.acquire_mode               record_limit
//	batch.poll_timeout               1s
//	batch.consumers                  4 (sized to the group's record locks at start)
//	batch.linger                     0 (none)
//	batch.transform_concurrency      1
//	batch.renew_locks                true
//	batch.background_commit          true (exactly-once; unset otherwise)
//	batch.drain_timeout              5s
//	ledger.topic                     <name>.ledger
//	client.request_timeout           10s
//	client.producer.compression      snappy
//	client.consumer.fetch_max_bytes  2097152 (2 MiB)
//	client.consumer.fetch_max_wait   500ms
//
// Load and Parse call it for the fields a file leaves out; a field written
// in the file keeps its value even when it is zero, so that "workers: 0" is
// reported instead of becoming 1.
func (p *Pipeline) SetDefaults() { p.setDefaults(func(string) bool { return false }) }

// setDefaults applies the defaults to the zero fields whose path is not
// explicit.
func (p *Pipeline) setDefaults(explicit func(path string) bool) {
	str := func(path string, v *string, def string) {
		if *v == "" && !explicit(path) {
			*v = def
		}
	}
	num := func(path string, v *int, def int) {
		if *v == 0 && !explicit(path) {
			*v = def
		}
	}
	dur := func(path string, v *time.Duration, def time.Duration) {
		if *v == 0 && !explicit(path) {
			*v = def
		}
	}
	str("delivery", &p.Delivery, DefaultDelivery)
	num("workers", &p.Workers, DefaultWorkers)
	str("source.group", &p.Source.Group, p.Name)
	str("source.auto_offset_reset", &p.Source.AutoOffsetReset, DefaultAutoOffsetReset)
	str("source.isolation_level", &p.Source.IsolationLevel, DefaultIsolationLevel)
	if p.Source.ManageGroupConfig == nil {
		manage := true
		p.Source.ManageGroupConfig = &manage
	}
	dur("output.transaction_timeout", &p.Output.TransactionTimeout, DefaultTransactionTimeout)
	str("dead_letter.ack", &p.DeadLetter.Ack, DefaultDeadLetterAck)
	if !p.Batch.defaulted { // a second SetDefaults must not take its own defaults for the pipeline's
		p.Batch.maxRecordsSet = p.Batch.MaxRecords != 0 || explicit("batch.max_records")
		p.Batch.consumersSet = p.Batch.Consumers != 0 || explicit("batch.consumers")
		p.Batch.defaulted = true
	}
	num("batch.max_records", &p.Batch.MaxRecords, DefaultMaxRecords)
	str("batch.acquire_mode", &p.Batch.AcquireMode, DefaultAcquireMode)
	dur("batch.poll_timeout", &p.Batch.PollTimeout, DefaultPollTimeout)
	num("batch.consumers", &p.Batch.Consumers, DefaultConsumers)
	dur("batch.linger", &p.Batch.Linger, DefaultLinger)
	num("batch.transform_concurrency", &p.Batch.TransformConcurrency, DefaultTransformConcurrency)
	dur("batch.drain_timeout", &p.Batch.DrainTimeout, DefaultDrainTimeout)
	if p.Batch.RenewLocks == nil {
		renew := true
		p.Batch.RenewLocks = &renew
	}
	if p.Batch.BackgroundCommit == nil && p.Delivery == ExactlyOnce {
		overlap := true
		p.Batch.BackgroundCommit = &overlap
	}
	if p.Name != "" {
		str("ledger.topic", &p.Ledger.Topic, p.Name+DefaultLedgerSuffix)
	}
	dur("client.request_timeout", &p.Client.RequestTimeout, DefaultRequestTimeout)
	str("client.producer.compression", &p.Client.Producer.Compression, DefaultCompression)
	num("client.consumer.fetch_max_bytes", &p.Client.Consumer.FetchMaxBytes, DefaultFetchMaxBytes)
	dur("client.consumer.fetch_max_wait", &p.Client.Consumer.FetchMaxWait, DefaultFetchMaxWait)
	if c := p.Source.Cluster; c != nil {
		c.Client.inheritClient(p.Client, sourceClusterPath+".client", explicit)
	}
	p.setFormatDefaults(explicit)
}

// splitBrokers splits comma-separated entries of p.Brokers and of
// source.cluster.brokers ("a:9092,b:9092", the usual form of
// $KAFKA_BOOTSTRAP_SERVERS) into one broker each, and records which YAML
// list element each came from.
func splitBrokers(p *Pipeline, l *loader) {
	split := func(path string, brokers []string) []string {
		var (
			out []string
			idx []int
		)
		for i, b := range brokers {
			for part := range strings.SplitSeq(b, ",") {
				out = append(out, strings.TrimSpace(part))
				idx = append(idx, i)
			}
		}
		l.brokerIndex[path] = idx
		return out
	}
	l.brokerIndex = map[string][]int{}
	p.Brokers = split("brokers", p.Brokers)
	if c := p.Source.Cluster; c != nil {
		c.Brokers = split(sourceClusterPath+".brokers", c.Brokers)
	}
}
