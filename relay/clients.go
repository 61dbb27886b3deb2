package relay

import (
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// kgoLogWindow is how often one franz-go warning is written at most (the
// next line counts the repeats held back): while a broker is down franz-go
// warns on every connection attempt of every client.
const kgoLogWindow = time.Minute

// clientOpts returns the options of a new Kafka client: the pipeline's
// (brokers, TLS, SASL, tuning, built once by kafkaopts in New), then
// franz-go's logger (its warnings and errors in the relay's log, see
// kgolog), then Options.ClientOpts, then extra, this client's own. Every
// client of the relay, whatever its job, is made with them: share
// consumers, transactional producers, the claim ledger's readers and
// writers, admin clients and the background watchers.
func (r *Relay) clientOpts(extra ...kgo.Opt) []kgo.Opt {
	return r.kafka.Opts(slices.Concat([]kgo.Opt{kgo.WithLogger(r.kgoLog)}, r.opts.ClientOpts, extra)...)
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
