package preflight

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/sharerelay/sharerelay/config"
	"github.com/sharerelay/sharerelay/internal/brokerfloor"
)

// The brokers line of a cluster of two names the principal its client
// certificate stands for, since each cluster grants its own; the one
// cluster's line stays as it was.
func TestTheBrokersLineOfEachClusterNamesItsCertificatesCommonName(t *testing.T) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "relay-sink", Organization: []string{"booknest"}},
		NotBefore: time.Now(), NotAfter: time.Now().Add(time.Hour)}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "client.pem")
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	cl := config.Cluster{TLS: config.TLS{Enabled: true, CertFile: path}}
	cl.SASL.Mechanism, cl.SASL.Username = config.MechanismScramSHA512, "packer"
	for _, c := range []struct {
		role brokerfloor.Role
		want string
	}{
		{brokerfloor.Sink, " (TLS, client certificate CN=relay-sink, SASL SCRAM-SHA-512 as packer)"},
		{brokerfloor.Both, " (TLS, client certificate, SASL SCRAM-SHA-512 as packer)"},
	} {
		if got := (&side{of: cl, role: c.role}).how(); got != c.want {
			t.Errorf("%s: how() = %q, want %q", c.role, got, c.want)
		}
	}
}
