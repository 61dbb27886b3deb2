package kafkatest

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl/scram"
)

// Names of the listeners Secure adds.
const (
	// SASLSSLListener takes SCRAM-SHA-512, PLAIN and OAUTHBEARER over
	// TLS; its principals are User:<name> (for OAUTHBEARER the token's
	// sub claim).
	SASLSSLListener = "SASL_SSL"
	// SSLListener requires a client certificate (mutual TLS); its
	// principals are User:CN=<cn> (the certificate's subject).
	SSLListener = "SSL"
)

// StandardAuthorizer is the KRaft ACL authorizer.
const StandardAuthorizer = "org.apache.kafka.metadata.authorizer.StandardAuthorizer"

// Security describes the secured listeners Secure adds to a local broker.
// The PLAINTEXT listener stays as it is, for the controller, inter-broker
// traffic and the test's own admin clients, whose principal
// User:ANONYMOUS is a super user: tests set up topics and ACLs there and
// clients under test connect to the secured listeners.
type Security struct {
	// Dir receives the PEM files: ca.pem, broker.pem (key and chain),
	// and <cn>.pem / <cn>.key for each client certificate. Required.
	Dir string
	// PlainUsers are PLAIN users (name to password); they live in the
	// SASL_SSL listener's JAAS configuration. SCRAM users are created
	// after start: see Secured.AddSCRAMUsers.
	PlainUsers map[string]string
	// ClientCNs are the common names of the client certificates to
	// issue for the SSL listener.
	ClientCNs []string
	// SuperUsers are principals allowed everything besides
	// User:ANONYMOUS, e.g. "User:admin".
	SuperUsers []string
	// OAuthBearer, when true, also takes OAUTHBEARER on the SASL_SSL
	// listener with Kafka's unsecured token validator (an unsigned JWT
	// with sub, iat and exp claims: see UnsecuredJWT), re-authenticating
	// every OAuthReauth: a client must then present a valid token again.
	OAuthBearer bool
	// ACLs, when true, turns on the StandardAuthorizer with
	// allow.everyone.if.no.acl.found=false: a client on a secured
	// listener may do only what an ACL allows.
	ACLs bool
}

// Secured is what a secured broker's clients need: its listeners and the
// files Secure wrote.
type Secured struct {
	// SASLSSL and SSL are the secured listeners, ports filled in.
	SASLSSL, SSL Listener
	// CAFile is the PEM file of the CA that signed every certificate.
	CAFile string
	// Clients are the client certificates, by common name.
	Clients map[string]CertFiles
	// CA issues more certificates, e.g. one the broker should refuse.
	CA *CA
}

// Secure returns a copy of opts for a broker with two more listeners: a
// SASL_SSL one (SCRAM-SHA-512, and PLAIN when sec has PLAIN users) and an
// SSL one with ssl.client.auth=required. It creates a CA, a certificate for
// the broker (127.0.0.1 and localhost) and one for each of sec.ClientCNs,
// all ECDSA P-256 in PEM files under sec.Dir. Like [WithListeners], it
// fixes the ports.
func Secure(opts Options, sec Security) (Options, *Secured, error) {
	if sec.Dir == "" {
		return opts, nil, errors.New("kafkatest: Security.Dir is required")
	}
	ca, err := NewCA("sharerelay test CA")
	if err != nil {
		return opts, nil, err
	}
	s := &Secured{CAFile: filepath.Join(sec.Dir, "ca.pem"), Clients: make(map[string]CertFiles), CA: ca}
	if err := os.WriteFile(s.CAFile, ca.CertPEM, 0o644); err != nil {
		return opts, nil, fmt.Errorf("kafkatest: %w", err)
	}
	broker, err := ca.IssueServer("localhost")
	if err != nil {
		return opts, nil, err
	}
	// One PEM file with the key and the chain: ssl.keystore.location.
	keystore := filepath.Join(sec.Dir, "broker.pem")
	if err := os.WriteFile(keystore, slices.Concat(broker.KeyPEM, broker.CertPEM, ca.CertPEM), 0o600); err != nil {
		return opts, nil, fmt.Errorf("kafkatest: %w", err)
	}
	for _, cn := range sec.ClientCNs {
		kp, err := ca.IssueClient(cn)
		if err != nil {
			return opts, nil, err
		}
		if s.Clients[cn], err = kp.Write(sec.Dir, cn); err != nil {
			return opts, nil, err
		}
	}

	out, ls, err := WithListeners(opts,
		Listener{Name: SASLSSLListener, Protocol: "SASL_SSL"},
		Listener{Name: SSLListener, Protocol: "SSL"})
	if err != nil {
		return opts, nil, err
	}
	s.SASLSSL, s.SSL = ls[0], ls[1]
	maps.Copy(out.Properties, securityProperties(keystore, s.CAFile, sec))
	return out, s, nil
}

// securityProperties are the broker properties of the secured listeners.
func securityProperties(keystore, truststore string, sec Security) map[string]string {
	sasl := "listener.name." + strings.ToLower(SASLSSLListener) + "."
	ssl := "listener.name." + strings.ToLower(SSLListener) + "."
	p := map[string]string{
		// PEM key and trust stores, shared by both TLS listeners.
		"ssl.keystore.type":                     "PEM",
		"ssl.keystore.location":                 keystore,
		"ssl.truststore.type":                   "PEM",
		"ssl.truststore.location":               truststore,
		ssl + "ssl.client.auth":                 "required",
		sasl + "sasl.enabled.mechanisms":        "SCRAM-SHA-512",
		sasl + "scram-sha-512.sasl.jaas.config": "org.apache.kafka.common.security.scram.ScramLoginModule required;",
	}
	if len(sec.PlainUsers) > 0 {
		p[sasl+"sasl.enabled.mechanisms"] = "SCRAM-SHA-512,PLAIN"
		var jaas strings.Builder
		jaas.WriteString("org.apache.kafka.common.security.plain.PlainLoginModule required")
		for _, u := range slices.Sorted(maps.Keys(sec.PlainUsers)) {
			fmt.Fprintf(&jaas, " user_%s=%s", u, strconv.Quote(sec.PlainUsers[u]))
		}
		jaas.WriteString(";")
		p[sasl+"plain.sasl.jaas.config"] = jaas.String()
	}
	if sec.OAuthBearer {
		p[sasl+"sasl.enabled.mechanisms"] += ",OAUTHBEARER"
		p[sasl+"oauthbearer.sasl.jaas.config"] = "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required;"
		p[sasl+"oauthbearer.connections.max.reauth.ms"] = strconv.FormatInt(OAuthReauth.Milliseconds(), 10)
	}
	if sec.ACLs {
		p["authorizer.class.name"] = StandardAuthorizer
		p["allow.everyone.if.no.acl.found"] = "false"
		p["super.users"] = strings.Join(append([]string{"User:ANONYMOUS"}, sec.SuperUsers...), ";")
	}
	return p
}

// OAuthReauth is how often the SASL_SSL listener makes an OAUTHBEARER
// client authenticate again (connections.max.reauth.ms).
const OAuthReauth = 5 * time.Second

// UnsecuredJWT returns a token Kafka's unsecured OAUTHBEARER validator
// accepts: an unsigned JWT (alg none) whose sub claim is the principal's
// name, valid from now for ttl.
func UnsecuredJWT(sub string, ttl time.Duration) string {
	enc := base64.RawURLEncoding.EncodeToString
	now := time.Now()
	claims := fmt.Sprintf(`{"sub":%q,"iat":%d,"exp":%d}`, sub, now.Unix(), now.Add(ttl).Unix())
	return enc([]byte(`{"alg":"none"}`)) + "." + enc([]byte(claims)) + "."
}

// SASLSSLAddr is the SASL_SSL listener's address.
func (s *Secured) SASLSSLAddr() string { return "127.0.0.1:" + strconv.Itoa(s.SASLSSL.Port) }

// SSLAddr is the mutual-TLS listener's address.
func (s *Secured) SSLAddr() string { return "127.0.0.1:" + strconv.Itoa(s.SSL.Port) }

// TLSConfig returns a client TLS configuration that trusts the CA and,
// when cn is not empty, presents the client certificate issued for cn.
func (s *Secured) TLSConfig(cn string) (*tls.Config, error) {
	pem, err := os.ReadFile(s.CAFile)
	if err != nil {
		return nil, fmt.Errorf("kafkatest: %w", err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(pem)
	c := &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	if cn != "" {
		f, ok := s.Clients[cn]
		if !ok {
			return nil, fmt.Errorf("kafkatest: no client certificate for %q", cn)
		}
		cert, err := tls.LoadX509KeyPair(f.Cert, f.Key)
		if err != nil {
			return nil, fmt.Errorf("kafkatest: %w", err)
		}
		c.Certificates = []tls.Certificate{cert}
	}
	return c, nil
}

// AddSCRAMUsers creates or updates SCRAM-SHA-512 users (name to password)
// through admin, a client of the PLAINTEXT listener, then waits until
// each can log in on the SASL_SSL listener: credentials reach the
// broker's authenticator asynchronously, through the metadata log.
func (s *Secured) AddSCRAMUsers(ctx context.Context, admin []string, users map[string]string) error {
	cl, err := kgo.NewClient(kgo.SeedBrokers(admin...))
	if err != nil {
		return fmt.Errorf("kafkatest: SCRAM users: %w", err)
	}
	defer cl.Close()
	var upserts []kadm.UpsertSCRAM
	for _, u := range slices.Sorted(maps.Keys(users)) {
		upserts = append(upserts, kadm.UpsertSCRAM{User: u, Mechanism: kadm.ScramSha512, Iterations: 4096, Password: users[u]})
	}
	res, err := kadm.NewClient(cl).AlterUserSCRAMs(ctx, nil, upserts)
	if err == nil {
		err = res.Error()
	}
	if err != nil {
		return fmt.Errorf("kafkatest: creating SCRAM users: %w", err)
	}
	tc, err := s.TLSConfig("")
	if err != nil {
		return err
	}
	for _, u := range slices.Sorted(maps.Keys(users)) {
		if err := s.waitLogin(ctx, tc, u, users[u]); err != nil {
			return err
		}
	}
	return nil
}

// waitLogin retries a SCRAM-SHA-512 login as user for up to 30 s.
func (s *Secured) waitLogin(ctx context.Context, tc *tls.Config, user, pass string) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	for {
		err := func() error {
			cl, err := kgo.NewClient(kgo.SeedBrokers(s.SASLSSLAddr()), kgo.DialTLSConfig(tc.Clone()),
				kgo.SASL(scram.Auth{User: user, Pass: pass}.AsSha512Mechanism()), kgo.RequestRetries(0))
			if err != nil {
				return err
			}
			defer cl.Close()
			rctx, rcancel := context.WithTimeout(ctx, 5*time.Second)
			defer rcancel()
			// Any request authenticates the connection first.
			_, err = cl.SeedBrokers()[0].Request(rctx, kmsg.NewPtrMetadataRequest())
			return err
		}()
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("kafkatest: SCRAM user %s cannot log in on %s: %w", user, s.SASLSSLAddr(), err)
		case <-time.After(200 * time.Millisecond):
		}
	}
}
