// Package kafkaopts builds the franz-go client options of a pipeline from
// its configuration: the seed brokers, TLS, SASL and the client tuning of
// config.Client. It has that one job, so that every Kafka client the relay
// makes — share consumers, transactional producers, the claim ledger's
// readers and writers, admin clients, relay verify — connects the same way:
// build an Options once with New and give each client Options.Opts.
//
// What each setting becomes:
//
//	brokers                  kgo.SeedBrokers
//	tls                      kgo.DialTLSConfig: CA pool, client certificate,
//	                         server name, insecure flag; TLS 1.2 or later
//	sasl PLAIN, SCRAM-*      pkg/sasl/plain, pkg/sasl/scram
//	sasl OAUTHBEARER         pkg/sasl/oauth, with a token callback that
//	                         re-reads token_file when it changes, or fetches
//	                         a client-credentials token from token_url and
//	                         reuses it until shortly before it expires
//	sasl AWS_MSK_IAM         pkg/sasl/aws, with credentials from the AWS SDK's
//	                         default chain (cached and refreshed by the SDK)
//	client.id                kgo.ClientID, over any client's own
//	client.rack              kgo.Rack
//	client.request_timeout   kgo.RequestTimeoutOverhead
//	client.producer.*        kgo.WithCompressor (built once), kgo.ProducerLinger
//	client.consumer.*        kgo.FetchMaxBytes, kgo.FetchMaxWait
//
// client.producer.max_batch_bytes is not an option here: the relay caps
// the batch size it derives from the topics' max.message.bytes with it.
//
// None of these options touches acks or idempotence: the transactional
// producer (package txn) applies its own after them.
package kafkaopts
