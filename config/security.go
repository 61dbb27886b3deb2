package config

import "time"

// SASL mechanisms a pipeline can authenticate with.
const (
	MechanismPlain       = "PLAIN"
	MechanismScramSHA256 = "SCRAM-SHA-256"
	MechanismScramSHA512 = "SCRAM-SHA-512"
	MechanismOAuthBearer = "OAUTHBEARER"
	MechanismAWSMSKIAM   = "AWS_MSK_IAM"
)

// Mechanisms lists the SASL mechanisms sasl.mechanism accepts, in the
// order error messages name them.
var Mechanisms = []string{MechanismPlain, MechanismScramSHA256, MechanismScramSHA512, MechanismOAuthBearer, MechanismAWSMSKIAM}

// Compressions lists the codecs client.producer.compression accepts.
var Compressions = []string{"none", "gzip", "snappy", "lz4", "zstd"}

// TLS encrypts the connections to the brokers and, with a client
// certificate, authenticates the relay (mutual TLS). File paths are
// relative to the working directory; validation reads every file, so a
// missing or unreadable one is reported before any broker is dialled.
type TLS struct {
	// Enabled turns TLS on (default false). The other fields are ignored
	// (with a warning) while it is false.
	Enabled bool `yaml:"enabled" json:"enabled"`
	// CAFile holds the PEM certificates that sign the brokers'
	// certificates. Empty: the system's trusted roots.
	CAFile string `yaml:"ca_file" json:"ca_file"`
	// CertFile and KeyFile are the relay's PEM client certificate
	// (with its chain) and private key, for mutual TLS; set both or
	// neither.
	CertFile string `yaml:"cert_file" json:"cert_file"`
	KeyFile  string `yaml:"key_file" json:"key_file"`
	// ServerName is the name the brokers' certificates must carry.
	// Empty: the host name each broker is dialled at.
	ServerName string `yaml:"server_name" json:"server_name"`
	// InsecureSkipVerify accepts any broker certificate: the traffic is
	// encrypted but anyone in between can read and change it. For tests
	// only; it must be written out and is reported as a warning.
	InsecureSkipVerify bool `yaml:"insecure_skip_verify" json:"insecure_skip_verify"`
}

// SASL authenticates the relay to the brokers. Leave the section out for
// no authentication (or mutual TLS alone).
type SASL struct {
	// Mechanism is PLAIN, SCRAM-SHA-256, SCRAM-SHA-512, OAUTHBEARER or
	// AWS_MSK_IAM. Required when the section is present.
	Mechanism string `yaml:"mechanism" json:"mechanism"`
	// Username and Password: PLAIN and SCRAM-*, where both are required.
	// Read the password from the environment (${KAFKA_PASSWORD}); it is
	// never logged or shown in an error.
	Username string `yaml:"username" json:"username"`
	Password Secret `yaml:"password" json:"password"`
	// TokenFile (OAUTHBEARER) holds a bearer token, re-read whenever the
	// file changes, for tokens rotated by another process.
	TokenFile string `yaml:"token_file" json:"token_file"`
	// TokenURL, ClientID, ClientSecret and Scope (OAUTHBEARER) fetch
	// tokens from an OAuth 2 token endpoint with the client-credentials
	// grant; a token is reused until shortly before it expires. Scope is
	// space-separated and optional.
	TokenURL     string `yaml:"token_url" json:"token_url"`
	ClientID     string `yaml:"client_id" json:"client_id"`
	ClientSecret Secret `yaml:"client_secret" json:"client_secret"`
	Scope        string `yaml:"scope" json:"scope"`
	// Extensions (OAUTHBEARER) are SASL extensions sent with the token,
	// e.g. logicalCluster and identityPoolId for Confluent Cloud.
	Extensions map[string]string `yaml:"extensions" json:"extensions"`
	// Region (AWS_MSK_IAM) is the AWS region for the credential chain
	// (STS). Empty: AWS_REGION or the shared config's. Credentials come
	// from the standard AWS chain: environment, shared files, SSO, web
	// identity (EKS), container and instance roles.
	Region string `yaml:"region" json:"region"`
}

// Client tunes the relay's Kafka clients. Every field has a safe default;
// none can weaken the transactional producer's acks=all and idempotence.
type Client struct {
	// ID is the client.id of every client of the relay, for broker logs
	// and quotas. Empty (default): each worker's clients report its
	// transactional id, the other clients franz-go's "kgo".
	ID string `yaml:"id" json:"id"`
	// Rack is where the relay runs (e.g. an availability zone). Plain
	// fetches (the ledger reader, relay verify) are then served by the
	// closest replica when brokers use a rack-aware replica selector
	// (KIP-392); share consumers report it to the group coordinator.
	Rack string `yaml:"rack" json:"rack"`
	// RequestTimeout bounds a request with no timeout of its own, and is
	// added to those with one (produce, fetch). Default 10s.
	RequestTimeout time.Duration `yaml:"request_timeout" json:"request_timeout"`

	Producer ProducerTuning `yaml:"producer" json:"producer"`
	Consumer ConsumerTuning `yaml:"consumer" json:"consumer"`
}

// ProducerTuning tunes the producers (outputs, dead letters, claims).
type ProducerTuning struct {
	// Compression is none (default), gzip, snappy, lz4 or zstd. A batch is
	// sent compressed only when that makes it smaller.
	Compression string `yaml:"compression" json:"compression"`
	// Linger is how long a producer waits for more records before
	// sending a batch (default 0). The relay hands over a transaction's
	// records at once and waits for them, so a linger delays every
	// transaction; at most 1s.
	Linger time.Duration `yaml:"linger" json:"linger"`
	// MaxBatchBytes caps a record batch (before compression) written to
	// the output and dead-letter topics. 0 (default): each topic's
	// max.message.bytes. A record that does not fit is dead-lettered as
	// one too large for its topic would be.
	MaxBatchBytes int `yaml:"max_batch_bytes" json:"max_batch_bytes"`
}

// ConsumerTuning tunes the fetches (share consumers, the ledger reader).
type ConsumerTuning struct {
	// FetchMaxBytes is the most a broker returns for one fetch (default
	// 2 MiB, at most 100 MiB; the broker returns at least one batch even
	// when it is larger). It bounds what a share consumer's poll holds
	// in bytes, as batch.max_records bounds it in records.
	FetchMaxBytes int `yaml:"fetch_max_bytes" json:"fetch_max_bytes"`
	// FetchMaxWait is how long a broker holds a fetch waiting for records
	// (default 500ms). The claim ledger's reader keeps its own 200ms.
	FetchMaxWait time.Duration `yaml:"fetch_max_wait" json:"fetch_max_wait"`
}
