package kafkatest_test

import (
	"crypto/tls"
	"crypto/x509"
	"strings"
	"testing"

	"github.com/sharerelay/sharerelay/integration/kafkatest"
)

func TestWithListenersMapsEachListenerToItsProtocol(t *testing.T) {
	opts, ls, err := kafkatest.WithListeners(kafkatest.Options{},
		kafkatest.Listener{Name: "SECURE", Protocol: "SASL_SSL"},
		kafkatest.Listener{Name: "PROXIED"})
	if err != nil {
		t.Fatal(err)
	}
	want := "CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT,SECURE:SASL_SSL,PROXIED:PLAINTEXT"
	if got := opts.Properties["listener.security.protocol.map"]; got != want {
		t.Errorf("listener.security.protocol.map = %q, want %q", got, want)
	}
	if ls[0].Protocol != "SASL_SSL" || ls[1].Protocol != "PLAINTEXT" {
		t.Errorf("listeners = %+v, want their protocols filled in", ls)
	}
	if _, _, err := kafkatest.WithListeners(kafkatest.Options{}, kafkatest.Listener{Name: "X", Protocol: "TLS"}); err == nil {
		t.Error("protocol TLS accepted; want an error naming the protocols Kafka knows")
	}
}

func TestSecureIssuesCertificatesTheBrokerAndClientsCanUse(t *testing.T) {
	dir := t.TempDir()
	opts, s, err := kafkatest.Secure(kafkatest.Options{}, kafkatest.Security{
		Dir: dir, PlainUsers: map[string]string{"alice": "a-secret"}, ClientCNs: []string{"relay"}, ACLs: true,
	})
	if err != nil {
		t.Fatal(err)
	}
	for k, want := range map[string]string{
		"listener.name.ssl.ssl.client.auth":              "required",
		"listener.name.sasl_ssl.sasl.enabled.mechanisms": "SCRAM-SHA-512,PLAIN",
		"listener.name.sasl_ssl.plain.sasl.jaas.config":  `org.apache.kafka.common.security.plain.PlainLoginModule required user_alice="a-secret";`,
		"authorizer.class.name":                          kafkatest.StandardAuthorizer,
		"allow.everyone.if.no.acl.found":                 "false",
		"super.users":                                    "User:ANONYMOUS",
		"ssl.keystore.type":                              "PEM",
		"ssl.truststore.type":                            "PEM",
	} {
		if got := opts.Properties[k]; got != want {
			t.Errorf("%s = %q, want %q", k, got, want)
		}
	}
	if !strings.Contains(opts.Properties["listeners"], "SASL_SSL://127.0.0.1:") || !strings.Contains(opts.Properties["listeners"], ",SSL://127.0.0.1:") {
		t.Errorf("listeners = %q, want a SASL_SSL and an SSL listener", opts.Properties["listeners"])
	}

	// The client certificate chains to the CA, for client authentication,
	// and the broker's key store is a key followed by its chain.
	tc, err := s.TLSConfig("relay")
	if err != nil {
		t.Fatal(err)
	}
	leaf, err := x509.ParseCertificate(tc.Certificates[0].Certificate[0])
	if err != nil {
		t.Fatal(err)
	}
	if leaf.Subject.String() != "CN=relay" {
		t.Errorf("client subject = %s, want CN=relay (the principal User:CN=relay)", leaf.Subject)
	}
	if _, err := leaf.Verify(x509.VerifyOptions{Roots: tc.RootCAs, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err != nil {
		t.Errorf("client certificate does not verify against the CA: %v", err)
	}
	broker, err := tls.LoadX509KeyPair(opts.Properties["ssl.keystore.location"], opts.Properties["ssl.keystore.location"])
	if err != nil {
		t.Fatalf("broker key store: %v", err)
	}
	bleaf, _ := x509.ParseCertificate(broker.Certificate[0])
	for _, host := range []string{"127.0.0.1", "localhost"} {
		if _, err := bleaf.Verify(x509.VerifyOptions{Roots: tc.RootCAs, DNSName: host}); err != nil {
			t.Errorf("broker certificate for %s: %v", host, err)
		}
	}
}
