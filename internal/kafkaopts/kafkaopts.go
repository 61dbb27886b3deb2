package kafkaopts

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
	"slices"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sharerelay/sharerelay/config"
)

// Options are the client options of one pipeline.
type Options struct {
	common   []kgo.Opt
	compress kgo.Opt // client.producer.compression, shared by every client
	override []kgo.Opt
}

// New builds the client options of pipeline p's sink cluster (its
// brokers, tls, sasl and client: outputs, dead letters, ledger), which
// must be valid (config.Load). It reads the TLS files and sets up the SASL
// mechanism now, so that a file that became unreadable since validation,
// or an AWS configuration that cannot be loaded, fails here, before any
// client is made; OAUTHBEARER tokens and AWS credentials are fetched when
// a connection authenticates. New dials no broker.
func New(p *config.Pipeline) (*Options, error) { return ForCluster(p.SinkCluster()) }

// NewSource builds the client options of pipeline p's source cluster
// (config.Pipeline.SourceCluster): source.cluster when the file sets it,
// else the same options as New. Errors name source.cluster's fields.
func NewSource(p *config.Pipeline) (*Options, error) {
	o, err := ForCluster(p.SourceCluster())
	if err != nil && p.CrossCluster() {
		return nil, fmt.Errorf("source.cluster: %w", err)
	}
	return o, err
}

// Clusters are the client options of a pipeline's two clusters: Sink,
// where the outputs, dead letters and claim ledger are, and Source, where
// the share group is. Without source.cluster both are one cluster's, and
// Source is Sink.
type Clusters struct {
	Sink, Source *Options
}

// NewClusters builds the client options of both of p's clusters (New and
// NewSource).
func NewClusters(p *config.Pipeline) (*Clusters, error) {
	sink, err := New(p)
	if err != nil {
		return nil, err
	}
	if !p.CrossCluster() {
		return &Clusters{Sink: sink, Source: sink}, nil
	}
	src, err := NewSource(p)
	if err != nil {
		return nil, err
	}
	return &Clusters{Sink: sink, Source: src}, nil
}

// ForCluster builds the client options of cluster cl, as New does.
func ForCluster(cl config.Cluster) (*Options, error) {
	o := &Options{common: []kgo.Opt{kgo.SeedBrokers(cl.Brokers...)}}
	tc, err := TLSConfig(cl.TLS)
	if err != nil {
		return nil, err
	}
	if tc != nil {
		o.common = append(o.common, kgo.DialTLSConfig(tc))
	}
	mech, err := Mechanism(cl.SASL)
	if err != nil {
		return nil, err
	}
	if mech != nil {
		o.common = append(o.common, kgo.SASL(mech))
	}
	c := cl.Client
	o.common = append(o.common, kgo.RequestTimeoutOverhead(c.RequestTimeout))
	if c.Rack != "" {
		o.common = append(o.common, kgo.Rack(c.Rack))
	}
	if o.compress, err = compressOpt(c.Producer.Compression); err != nil {
		return nil, err
	}
	o.common = append(o.common,
		kgo.ProducerLinger(c.Producer.Linger),
		// At most 100 MiB (validated): franz-go's largest response.
		kgo.FetchMaxBytes(int32(c.Consumer.FetchMaxBytes)),
		kgo.FetchMaxWait(c.Consumer.FetchMaxWait),
	)
	if c.ID != "" {
		o.override = append(o.override, kgo.ClientID(c.ID))
	}
	return o, nil
}

// Opts returns the options for one client: the pipeline's, then extra
// (this client's own, such as a share group, a client id or a fault
// injection hook), then client.id when the pipeline sets one, which names
// every client so that one quota covers the relay.
//
// TLS uses kgo.DialTLSConfig, which franz-go refuses to combine with
// kgo.Dialer: a caller that needs its own dialer on a TLS pipeline must
// wrap a tls.Dialer itself.
//
// The options returned may be shared by clients created at once: the
// claim ledger makes all its clients, some concurrently, from one slice.
func (o *Options) Opts(extra ...kgo.Opt) []kgo.Opt {
	return slices.Concat(o.common, []kgo.Opt{o.compress}, extra, o.override)
}

// compressOpt is the producers' compression option for codec name. It
// holds nothing franz-go writes to: kgo.ProducerBatchCompression keeps
// its list of codecs, which creating a client rewrites in place, so two
// clients created at once from one option race. A compressor built once
// (kgo.WithCompressor) is safe to share, as the producers of one client
// already do; no compression is a compressor that leaves the batch as it
// is (with none, franz-go would use its default, snappy). A client that
// wants a codec of its own adds kgo.WithCompressor(nil) before its
// kgo.ProducerBatchCompression.
func compressOpt(name string) (kgo.Opt, error) {
	codec, err := compression(name)
	if err != nil {
		return nil, err
	}
	if codec == kgo.NoCompression() {
		return kgo.WithCompressor(uncompressed{}), nil
	}
	comp, err := kgo.DefaultCompressor(codec)
	if err != nil {
		return nil, fmt.Errorf("client.producer.compression: %w", err)
	}
	return kgo.WithCompressor(comp), nil
}

// TLSConfig returns the TLS configuration of t, or nil when t is not
// enabled. It reads the CA and client certificate files.
func TLSConfig(t config.TLS) (*tls.Config, error) {
	if !t.Enabled {
		return nil, nil
	}
	c := &tls.Config{
		MinVersion:         tls.VersionTLS12,
		ServerName:         t.ServerName, // empty: the broker's host name, set per dial by franz-go
		InsecureSkipVerify: t.InsecureSkipVerify,
	}
	if t.CAFile != "" {
		pem, err := os.ReadFile(t.CAFile)
		if err != nil {
			return nil, fmt.Errorf("tls.ca_file: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("tls.ca_file: %s holds no PEM certificate", t.CAFile)
		}
		c.RootCAs = pool
	}
	if t.CertFile != "" || t.KeyFile != "" {
		if t.CertFile == "" || t.KeyFile == "" {
			return nil, errors.New("tls: cert_file and key_file go together")
		}
		cert, err := tls.LoadX509KeyPair(t.CertFile, t.KeyFile)
		if err != nil {
			return nil, fmt.Errorf("tls.cert_file, tls.key_file: %w", err)
		}
		c.Certificates = []tls.Certificate{cert}
	}
	return c, nil
}

func compression(name string) (kgo.CompressionCodec, error) {
	switch name {
	case "none", "":
		return kgo.NoCompression(), nil
	case "gzip":
		return kgo.GzipCompression(), nil
	case "snappy":
		return kgo.SnappyCompression(), nil
	case "lz4":
		return kgo.Lz4Compression(), nil
	case "zstd":
		return kgo.ZstdCompression(), nil
	}
	return kgo.CompressionCodec{}, fmt.Errorf("client.producer.compression: unknown codec %q", name)
}

// uncompressed is a kgo.Compressor that compresses nothing: franz-go keeps
// a batch as it is when the compressed form is not shorter.
type uncompressed struct{}

// Compress returns src, uncompressed.
func (uncompressed) Compress(_ *bytes.Buffer, src []byte, _ ...kgo.CompressFlag) ([]byte, kgo.CompressionCodecType) {
	return src, kgo.CodecNone
}
