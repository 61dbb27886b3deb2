package kafkaopts

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl"
	"go.uber.org/goleak"

	"github.com/sharerelay/sharerelay/config"
	"github.com/sharerelay/sharerelay/internal/kfaketest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// pki is a CA with a broker certificate (127.0.0.1, localhost) and a client
// certificate, written as PEM files to a temporary directory.
type pki struct {
	dir                          string
	caFile, certFile, keyFile    string
	serverCert                   tls.Certificate
	pool                         *x509.CertPool
	otherCAFile, mismatchKeyFile string
}

func newPKI(t *testing.T) *pki {
	t.Helper()
	dir := t.TempDir()
	p := &pki{dir: dir, pool: x509.NewCertPool()}
	write := func(name, typ string, der []byte) string {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600); err != nil {
			t.Fatal(err)
		}
		return path
	}
	key := func() *ecdsa.PrivateKey {
		k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		return k
	}
	keyDER := func(k *ecdsa.PrivateKey) []byte {
		b, err := x509.MarshalPKCS8PrivateKey(k)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	serial := int64(0)
	issue := func(tmpl *x509.Certificate, parent *x509.Certificate, pub, signer any) (*x509.Certificate, []byte) {
		serial++
		tmpl.SerialNumber = big.NewInt(serial)
		tmpl.NotBefore, tmpl.NotAfter = time.Now().Add(-time.Hour), time.Now().Add(time.Hour)
		if parent == nil {
			parent = tmpl
		}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, pub, signer)
		if err != nil {
			t.Fatal(err)
		}
		c, err := x509.ParseCertificate(der)
		if err != nil {
			t.Fatal(err)
		}
		return c, der
	}
	newCA := func(name string) (*x509.Certificate, []byte, *ecdsa.PrivateKey) {
		k := key()
		c, der := issue(&x509.Certificate{Subject: pkix.Name{CommonName: name}, IsCA: true,
			BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}, nil, &k.PublicKey, k)
		return c, der, k
	}
	ca, caDER, caKey := newCA("test CA")
	p.pool.AddCert(ca)
	p.caFile = write("ca.pem", "CERTIFICATE", caDER)
	_, otherDER, _ := newCA("another CA")
	p.otherCAFile = write("other-ca.pem", "CERTIFICATE", otherDER)

	sk := key()
	_, sDER := issue(&x509.Certificate{Subject: pkix.Name{CommonName: "broker"}, DNSNames: []string{"localhost"},
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		KeyUsage: x509.KeyUsageDigitalSignature}, ca, &sk.PublicKey, caKey)
	var err error
	if p.serverCert, err = tls.X509KeyPair(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: sDER}),
		pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER(sk)})); err != nil {
		t.Fatal(err)
	}

	ck := key()
	_, cDER := issue(&x509.Certificate{Subject: pkix.Name{CommonName: "relay"},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}, KeyUsage: x509.KeyUsageDigitalSignature},
		ca, &ck.PublicKey, caKey)
	p.certFile = write("client.pem", "CERTIFICATE", cDER)
	p.keyFile = write("client.key", "PRIVATE KEY", keyDER(ck))
	p.mismatchKeyFile = write("other.key", "PRIVATE KEY", keyDER(key()))
	return p
}

// serverTLS is the broker side: its certificate, and client certificates
// required and checked against the CA.
func (p *pki) serverTLS() *tls.Config {
	return &tls.Config{Certificates: []tls.Certificate{p.serverCert}, ClientAuth: tls.RequireAndVerifyClientCert, ClientCAs: p.pool}
}

func TestTLSConfigLoadsTheCAPoolTheClientCertificateAndTheFlags(t *testing.T) {
	p := newPKI(t)
	c, err := TLSConfig(config.TLS{Enabled: true, CAFile: p.caFile, CertFile: p.certFile, KeyFile: p.keyFile,
		ServerName: "kafka.example.com"})
	if err != nil {
		t.Fatal(err)
	}
	if c.ServerName != "kafka.example.com" || c.InsecureSkipVerify || c.MinVersion != tls.VersionTLS12 {
		t.Errorf("server name %q, insecure %v, min version %x", c.ServerName, c.InsecureSkipVerify, c.MinVersion)
	}
	if len(c.Certificates) != 1 || c.Certificates[0].Leaf == nil || c.Certificates[0].Leaf.Subject.CommonName != "relay" {
		t.Errorf("client certificates: %+v", c.Certificates)
	}
	if c.RootCAs == nil || !c.RootCAs.Equal(p.pool) {
		t.Error("RootCAs is not the CA file's pool")
	}

	c, err = TLSConfig(config.TLS{Enabled: true, InsecureSkipVerify: true})
	if err != nil || c.RootCAs != nil || len(c.Certificates) != 0 || !c.InsecureSkipVerify || c.ServerName != "" {
		t.Errorf("TLS with defaults and insecure_skip_verify: %+v, %v", c, err)
	}
	if c, err := TLSConfig(config.TLS{CAFile: p.caFile}); c != nil || err != nil {
		t.Errorf("TLS off: %v, %v; want nil, nil", c, err)
	}
}

func TestTLSConfigRefusesFilesThatDoNotHoldWhatTheyShould(t *testing.T) {
	p := newPKI(t)
	for _, tc := range []struct {
		name string
		tls  config.TLS
		want string
	}{
		{"a missing CA file", config.TLS{Enabled: true, CAFile: filepath.Join(p.dir, "nope.pem")}, "no such file"},
		{"a CA file with no certificate", config.TLS{Enabled: true, CAFile: p.keyFile}, "holds no PEM certificate"},
		{"a key that is not the certificate's", config.TLS{Enabled: true, CertFile: p.certFile, KeyFile: p.mismatchKeyFile}, "does not match"},
		{"a certificate without its key", config.TLS{Enabled: true, CertFile: p.certFile}, "go together"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := TLSConfig(tc.tls); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got %v, want an error with %q", err, tc.want)
			}
		})
	}
}

func TestMechanismIsTheOneTheConfigNames(t *testing.T) {
	dir := t.TempDir()
	token := filepath.Join(dir, "token")
	os.WriteFile(token, []byte("t"), 0o600)
	t.Setenv("AWS_ACCESS_KEY_ID", "AKIDEXAMPLE")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "secret")
	t.Setenv("AWS_CONFIG_FILE", filepath.Join(dir, "none"))
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", filepath.Join(dir, "none"))
	for _, tc := range []struct {
		sasl config.SASL
		want string
	}{
		{config.SASL{}, ""},
		{config.SASL{Mechanism: "PLAIN", Username: "u", Password: "p"}, "PLAIN"},
		{config.SASL{Mechanism: "SCRAM-SHA-256", Username: "u", Password: "p"}, "SCRAM-SHA-256"},
		{config.SASL{Mechanism: "SCRAM-SHA-512", Username: "u", Password: "p"}, "SCRAM-SHA-512"},
		{config.SASL{Mechanism: "OAUTHBEARER", TokenFile: token}, "OAUTHBEARER"},
		{config.SASL{Mechanism: "OAUTHBEARER", TokenURL: "https://idp.example.com/token", ClientID: "c", ClientSecret: "s"}, "OAUTHBEARER"},
		{config.SASL{Mechanism: "AWS_MSK_IAM", Region: "eu-west-1"}, "AWS_MSK_IAM"},
	} {
		m, err := Mechanism(tc.sasl)
		if err != nil {
			t.Errorf("%s: %v", tc.sasl.Mechanism, err)
			continue
		}
		if got := name(m); got != tc.want {
			t.Errorf("mechanism %q: got %q", tc.sasl.Mechanism, got)
		}
	}
	if _, err := Mechanism(config.SASL{Mechanism: "GSSAPI"}); err == nil {
		t.Error("an unknown mechanism was accepted")
	}
}

func name(m sasl.Mechanism) string {
	if m == nil {
		return ""
	}
	return m.Name()
}

// initialToken returns the token in an OAUTHBEARER client-first message.
func initialToken(t *testing.T, m sasl.Mechanism) string {
	t.Helper()
	_, msg, err := m.Authenticate(context.Background(), "127.0.0.1:9092")
	if err != nil {
		t.Fatalf("Authenticate: %v", err)
	}
	_, rest, _ := strings.Cut(string(msg), "auth=Bearer ")
	tok, _, _ := strings.Cut(rest, "\x01")
	return tok
}

func TestATokenFileIsReadAgainWhenItChanges(t *testing.T) {
	path := filepath.Join(t.TempDir(), "token")
	write := func(tok string, mod time.Time) {
		if err := os.WriteFile(path, []byte(tok+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(path, mod, mod); err != nil {
			t.Fatal(err)
		}
	}
	start := time.Now().Add(-time.Hour)
	write("first", start)
	m, err := Mechanism(config.SASL{Mechanism: "OAUTHBEARER", TokenFile: path})
	if err != nil {
		t.Fatal(err)
	}
	if got := initialToken(t, m); got != "first" {
		t.Errorf("token %q, want first", got)
	}
	write("second", start.Add(time.Minute))
	if got := initialToken(t, m); got != "second" {
		t.Errorf("after a rotation: token %q, want second", got)
	}
	write("", start.Add(2*time.Minute))
	if _, _, err := m.Authenticate(context.Background(), "127.0.0.1:9092"); err == nil || !strings.Contains(err.Error(), "empty") {
		t.Errorf("an empty token file: %v, want an error", err)
	}
	os.Remove(path)
	if _, _, err := m.Authenticate(context.Background(), "127.0.0.1:9092"); err == nil {
		t.Error("a missing token file gave no error")
	}
}

func TestATokenFileUnchangedIsNotReadAgain(t *testing.T) {
	path := filepath.Join(t.TempDir(), "token")
	os.WriteFile(path, []byte("abc"), 0o600)
	f := &tokenFile{path: path}
	if a, err := f.auth(context.Background()); err != nil || a.Token != "abc" {
		t.Fatalf("%+v, %v", a, err)
	}
	// Same size, same modification time: the cached token stands.
	fi, _ := os.Stat(path)
	os.WriteFile(path, []byte("xyz"), 0o600)
	os.Chtimes(path, fi.ModTime(), fi.ModTime())
	if a, _ := f.auth(context.Background()); a.Token != "abc" {
		t.Errorf("token %q, want the cached abc", a.Token)
	}
}

// tokenServer is an OAuth 2 token endpoint that counts its requests and
// issues tokens valid for expiresIn seconds (none when 0).
func tokenServer(t *testing.T, expiresIn int) (*httptest.Server, *atomic.Int32) {
	t.Helper()
	var n atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := r.ParseForm(); err != nil || r.Form.Get("grant_type") != "client_credentials" {
			http.Error(w, "bad grant", http.StatusBadRequest)
			return
		}
		id, secret, ok := r.BasicAuth()
		if !ok {
			id, secret = r.Form.Get("client_id"), r.Form.Get("client_secret")
		}
		if id != "relay" || secret != "s3cret" || r.Form.Get("scope") != "kafka.read kafka.write" {
			http.Error(w, `{"error":"invalid_client"}`, http.StatusUnauthorized)
			return
		}
		i := n.Add(1)
		body := map[string]any{"access_token": "tok-" + string(rune('0'+i)), "token_type": "Bearer"}
		if expiresIn > 0 {
			body["expires_in"] = expiresIn
		}
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(body)
	}))
	t.Cleanup(srv.Close)
	return srv, &n
}

func TestATokenFromTheEndpointIsReusedUntilShortlyBeforeItExpires(t *testing.T) {
	srv, n := tokenServer(t, 3600)
	e := newTokenEndpoint(config.SASL{Mechanism: "OAUTHBEARER", TokenURL: srv.URL + "/token", ClientID: "relay",
		ClientSecret: "s3cret", Scope: "kafka.read  kafka.write", Extensions: map[string]string{"logicalCluster": "lkc-1"}})
	now := time.Now()
	e.now = func() time.Time { return now }
	ctx := context.Background()
	for range 3 {
		a, err := e.auth(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if a.Token != "tok-1" || a.Extensions["logicalCluster"] != "lkc-1" {
			t.Errorf("auth %+v", a)
		}
	}
	if n.Load() != 1 {
		t.Errorf("%d token requests for three authentications, want 1", n.Load())
	}
	now = now.Add(time.Hour - RefreshBefore + time.Second)
	if a, err := e.auth(ctx); err != nil || a.Token != "tok-2" {
		t.Errorf("near expiry: %+v, %v; want a new token", a, err)
	}
}

func TestATokenWithoutAnExpiryIsFetchedForEachAuthentication(t *testing.T) {
	srv, n := tokenServer(t, 0)
	e := newTokenEndpoint(config.SASL{TokenURL: srv.URL, ClientID: "relay", ClientSecret: "s3cret", Scope: "kafka.read kafka.write"})
	e.auth(context.Background())
	e.auth(context.Background())
	if n.Load() != 2 {
		t.Errorf("%d token requests, want 2", n.Load())
	}
}

func TestATokenEndpointThatRefusesTheClientFailsWithoutShowingTheSecret(t *testing.T) {
	srv, _ := tokenServer(t, 60)
	e := newTokenEndpoint(config.SASL{TokenURL: srv.URL + "/token?key=hidden", ClientID: "relay", ClientSecret: "wrong-secret", Scope: "x"})
	_, err := e.auth(context.Background())
	if err == nil {
		t.Fatal("no error")
	}
	if strings.Contains(err.Error(), "wrong-secret") || strings.Contains(err.Error(), "hidden") {
		t.Errorf("the error shows a secret: %v", err)
	}
}

func TestAWSMSKIAMSignsWithCredentialsFromTheDefaultChain(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("AWS_ACCESS_KEY_ID", "AKIDEXAMPLE")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "wJalrXUtnFEMI")
	t.Setenv("AWS_SESSION_TOKEN", "session-token")
	t.Setenv("AWS_CONFIG_FILE", filepath.Join(dir, "none"))
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", filepath.Join(dir, "none"))
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
	m, err := Mechanism(config.SASL{Mechanism: "AWS_MSK_IAM", Region: "eu-west-1"})
	if err != nil {
		t.Fatal(err)
	}
	_, msg, err := m.Authenticate(context.Background(), "b-1.orders.abc.c2.kafka.eu-west-1.amazonaws.com:9098")
	if err != nil {
		t.Fatal(err)
	}
	var challenge map[string]string
	if err := json.Unmarshal(msg, &challenge); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(challenge["x-amz-credential"], "AKIDEXAMPLE/") || !strings.Contains(challenge["x-amz-credential"], "/eu-west-1/kafka-cluster/") ||
		challenge["x-amz-security-token"] != "session-token" || challenge["action"] != "kafka-cluster:Connect" {
		t.Errorf("challenge %v", challenge)
	}
}

func TestOptionsOrderTheClientsOwnBetweenThePipelinesAndClientID(t *testing.T) {
	p := &config.Pipeline{Name: "p", Brokers: []string{"127.0.0.1:1"}}
	p.SetDefaults()
	ids := func(o *Options, extra ...kgo.Opt) string {
		cl, err := kgo.NewClient(o.Opts(extra...)...)
		if err != nil {
			t.Fatal(err)
		}
		defer cl.Close()
		return cl.OptValue(kgo.ClientID).(string)
	}
	o, err := New(p)
	if err != nil {
		t.Fatal(err)
	}
	if got := ids(o); got != "kgo" {
		t.Errorf("default client id %q", got)
	}
	if got := ids(o, kgo.ClientID("worker-0")); got != "worker-0" {
		t.Errorf("a client's own id: %q", got)
	}
	p.Client.ID = "quota-name"
	if o, err = New(p); err != nil {
		t.Fatal(err)
	}
	if got := ids(o, kgo.ClientID("worker-0")); got != "quota-name" {
		t.Errorf("with client.id: %q", got)
	}
}

func TestTheTuningReachesTheClient(t *testing.T) {
	p := &config.Pipeline{Name: "p", Brokers: []string{"127.0.0.1:1"}, Client: config.Client{
		Rack: "az1", RequestTimeout: 3 * time.Second,
		Producer: config.ProducerTuning{Compression: "zstd", Linger: 7 * time.Millisecond},
		Consumer: config.ConsumerTuning{FetchMaxBytes: 2 << 20, FetchMaxWait: 123 * time.Millisecond},
	}}
	p.SetDefaults()
	o, err := New(p)
	if err != nil {
		t.Fatal(err)
	}
	cl, err := kgo.NewClient(o.Opts()...)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	for _, tc := range []struct {
		opt  any
		want any
	}{
		{kgo.Rack, "az1"},
		{kgo.RequestTimeoutOverhead, 3 * time.Second},
		{kgo.ProducerLinger, 7 * time.Millisecond},
		{kgo.FetchMaxWait, 123 * time.Millisecond},
		{kgo.SeedBrokers, []string{"127.0.0.1:1"}},
	} {
		got := cl.OptValue(tc.opt)
		if gs, ok := got.([]string); ok {
			if strings.Join(gs, ",") != strings.Join(tc.want.([]string), ",") {
				t.Errorf("%T: %v, want %v", tc.opt, got, tc.want)
			}
			continue
		}
		if got != tc.want {
			t.Errorf("option %v: %v (%T), want %v", tc.opt, got, got, tc.want)
		}
	}
	comp, _ := cl.OptValue(kgo.WithCompressor).(kgo.Compressor)
	if comp == nil {
		t.Fatal("no compressor for client.producer.compression zstd")
	}
	if _, codec := comp.Compress(new(bytes.Buffer), bytes.Repeat([]byte("sharerelay "), 100)); codec != kgo.CodecZstd {
		t.Errorf("compressed with codec %v, want zstd", codec)
	}
}

// TestAClientWithThePipelinesOptionsTalksToATLSAndSCRAMCluster runs the
// options against kfake with mutual TLS and SCRAM-SHA-512: the right ones
// get in; a wrong password, a wrong CA or no client certificate do not.
func TestAClientWithThePipelinesOptionsTalksToATLSAndSCRAMCluster(t *testing.T) {
	p := newPKI(t)
	c := kfaketest.Cluster(t, kfake.TLS(p.serverTLS()), kfake.EnableSASL(),
		kfake.Superuser("SCRAM-SHA-512", "relay", "hunter2"), kfake.SeedTopics(1, "orders"))
	good := func() *config.Pipeline {
		pl := &config.Pipeline{Name: "p", Brokers: c.ListenAddrs(),
			TLS:  config.TLS{Enabled: true, CAFile: p.caFile, CertFile: p.certFile, KeyFile: p.keyFile},
			SASL: config.SASL{Mechanism: "SCRAM-SHA-512", Username: "relay", Password: "hunter2"}}
		pl.SetDefaults()
		return pl
	}
	list := func(pl *config.Pipeline) error {
		o, err := New(pl)
		if err != nil {
			return err
		}
		cl, err := kgo.NewClient(o.Opts(kgo.RequestRetries(0), kgo.RetryTimeout(2*time.Second))...)
		if err != nil {
			return err
		}
		defer cl.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		td, err := kadm.NewClient(cl).ListTopics(ctx, "orders")
		if err != nil {
			return err
		}
		return td.Error()
	}
	if err := list(good()); err != nil {
		t.Fatalf("the pipeline's own options: %v", err)
	}
	for _, tc := range []struct {
		name   string
		change func(*config.Pipeline)
	}{
		{"a wrong password", func(pl *config.Pipeline) { pl.SASL.Password = "wrong" }},
		{"a CA that did not sign the broker's certificate", func(pl *config.Pipeline) { pl.TLS.CAFile = p.otherCAFile }},
		{"no client certificate", func(pl *config.Pipeline) { pl.TLS.CertFile, pl.TLS.KeyFile = "", "" }},
		{"no TLS", func(pl *config.Pipeline) { pl.TLS = config.TLS{} }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pl := good()
			tc.change(pl)
			if err := list(pl); err == nil {
				t.Error("the cluster let the client in")
			}
		})
	}
}

// Clients are created at once from one Options, each with its own slice
// (the relay's workers) or all from one slice (the claim ledger, whose
// resolver makes clients concurrently): under -race, franz-go rewriting
// a shared list of codecs in place shows here.
func TestClientsCanBeCreatedAtOnceFromOneOptions(t *testing.T) {
	for _, codec := range []string{"none", "gzip", "zstd"} {
		p := &config.Pipeline{Name: "p", Brokers: []string{"127.0.0.1:1"}, Client: config.Client{
			Producer: config.ProducerTuning{Compression: codec}}}
		p.SetDefaults()
		o, err := New(p)
		if err != nil {
			t.Fatal(err)
		}
		shared := o.Opts()
		for _, opts := range map[string]func() []kgo.Opt{"a slice each": func() []kgo.Opt { return o.Opts() }, "one slice": func() []kgo.Opt { return shared }} {
			errs := make(chan error, 8)
			for range cap(errs) {
				go func() {
					cl, err := kgo.NewClient(opts()...)
					if err == nil {
						cl.Close()
					}
					errs <- err
				}()
			}
			for range cap(errs) {
				if err := <-errs; err != nil {
					t.Errorf("%s: %v", codec, err)
				}
			}
		}
	}
}

// client.producer.compression none sends batches uncompressed, not with
// franz-go's default (snappy).
func TestNoCompressionIsNone(t *testing.T) {
	p := &config.Pipeline{Name: "p", Brokers: []string{"127.0.0.1:1"}, Client: config.Client{
		Producer: config.ProducerTuning{Compression: "none"}}}
	p.SetDefaults()
	o, err := New(p)
	if err != nil {
		t.Fatal(err)
	}
	cl, err := kgo.NewClient(o.Opts()...)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	comp, _ := cl.OptValue(kgo.WithCompressor).(kgo.Compressor)
	if comp == nil {
		t.Fatal("compression none left franz-go's default compressor in place")
	}
	src := bytes.Repeat([]byte("sharerelay "), 100)
	if out, codec := comp.Compress(new(bytes.Buffer), src); codec != kgo.CodecNone || len(out) != len(src) {
		t.Errorf("compression none compressed %d bytes to %d with codec %v", len(src), len(out), codec)
	}
}
