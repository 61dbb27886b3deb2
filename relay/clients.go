package relay

import (
	"fmt"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// kgoLogWindow is how often one franz-go warning is written at most (the
// next line counts the repeats held back): while a broker is down franz-go
// warns on every connection attempt of every client.
const kgoLogWindow = time.Minute

// clientOpts returns the options of a new Kafka client of the sink
// cluster: the pipeline's (brokers, TLS, SASL, tuning, built once by
// kafkaopts in New), then franz-go's logger (its warnings and errors in
// the relay's log, see kgolog), then Options.ClientOpts, then extra, this
// client's own. The clients that write and their helpers are made with
// them: transactional producers, the claim ledger's readers and writers
// and its resolver, the output checks, the retired-id watcher.
func (r *Relay) clientOpts(extra ...kgo.Opt) []kgo.Opt {
	return r.kafka.Sink.Opts(slices.Concat([]kgo.Opt{kgo.WithLogger(r.kgoLog)}, r.opts.ClientOpts, extra)...)
}

// sourceClientOpts is clientOpts for a client of the source cluster
// (config.Pipeline.SourceCluster): the share consumers, the share group's
// configs, limits and lag, and the source topics' checks. Without
// source.cluster it is clientOpts. Nothing is written with them.
func (r *Relay) sourceClientOpts(extra ...kgo.Opt) []kgo.Opt {
	return r.kafka.Source.Opts(slices.Concat([]kgo.Opt{kgo.WithLogger(r.kgoLog)}, r.opts.ClientOpts, extra)...)
}

// onSource and onSink name the cluster an error came from when the
// pipeline has two (source.cluster), so that a not-ready reason, a log
// line or a stop says which side failed; on one cluster they return err.
func (r *Relay) onSource(err error) error { return r.onCluster("source cluster", err) }
func (r *Relay) onSink(err error) error   { return r.onCluster("sink cluster", err) }

func (r *Relay) onCluster(name string, err error) error {
	if err == nil || !r.p.CrossCluster() {
		return err
	}
	return fmt.Errorf("%s: %w", name, err)
}

// storeSizes publishes the topics' batch limits, capped by
// client.producer.max_batch_bytes when the pipeline sets it: the workers
// then keep each topic's batches within the cap, and dead-letter a record
// that does not fit as one too large for its topic.
func (r *Relay) storeSizes(sizes map[string]int) {
	if limit := r.p.Client.Producer.MaxBatchBytes; limit > 0 {
		for _, t := range r.p.OutputTopics() {
			if v, ok := sizes[t]; !ok || v > limit {
				sizes[t] = limit
			}
		}
	}
	r.sizes.Store(&sizes)
}
