package kafkatest

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"
)

// CA is a certificate authority made for one test run: ECDSA P-256, valid
// for a day. Kafka reads its PEM files directly (ssl.keystore.type=PEM,
// ssl.truststore.type=PEM), so no keytool or JKS is involved.
type CA struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	// CertPEM is the CA certificate, PEM encoded: a trust store.
	CertPEM []byte
}

// NewCA creates a self-signed certificate authority named cn.
func NewCA(cn string) (*CA, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("kafkatest: CA key: %w", err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          serial(),
		Subject:               pkix.Name{CommonName: cn},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(24 * time.Hour),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, fmt.Errorf("kafkatest: CA certificate: %w", err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, fmt.Errorf("kafkatest: CA certificate: %w", err)
	}
	return &CA{cert: cert, key: key, CertPEM: pemBlock("CERTIFICATE", der)}, nil
}

// KeyPair is a certificate the CA issued and its private key, PEM encoded;
// the key is PKCS #8, the only unencrypted form Kafka's PEM key store reads.
type KeyPair struct {
	CertPEM, KeyPEM []byte
}

// IssueServer issues a broker certificate for 127.0.0.1 and localhost.
func (ca *CA) IssueServer(cn string) (KeyPair, error) {
	return ca.issue(cn, x509.ExtKeyUsageServerAuth, []string{"localhost"}, []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback})
}

// IssueClient issues a client certificate whose subject is CN=cn: on a
// listener with ssl.client.auth=required the broker's principal for it is
// User:CN=cn.
func (ca *CA) IssueClient(cn string) (KeyPair, error) {
	return ca.issue(cn, x509.ExtKeyUsageClientAuth, nil, nil)
}

func (ca *CA) issue(cn string, usage x509.ExtKeyUsage, dns []string, ips []net.IP) (KeyPair, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return KeyPair{}, fmt.Errorf("kafkatest: key for %s: %w", cn, err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial(),
		Subject:      pkix.Name{CommonName: cn},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{usage},
		DNSNames:     dns,
		IPAddresses:  ips,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		return KeyPair{}, fmt.Errorf("kafkatest: certificate for %s: %w", cn, err)
	}
	pkcs8, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return KeyPair{}, fmt.Errorf("kafkatest: key for %s: %w", cn, err)
	}
	return KeyPair{CertPEM: pemBlock("CERTIFICATE", der), KeyPEM: pemBlock("PRIVATE KEY", pkcs8)}, nil
}

// CertFiles are the paths of a PEM certificate and its key.
type CertFiles struct {
	Cert, Key string
}

// Write writes the pair into dir as <name>.pem and <name>.key (mode
// 0600) and returns their paths.
func (kp KeyPair) Write(dir, name string) (CertFiles, error) {
	f := CertFiles{Cert: filepath.Join(dir, name+".pem"), Key: filepath.Join(dir, name+".key")}
	if err := os.WriteFile(f.Cert, kp.CertPEM, 0o644); err != nil {
		return CertFiles{}, fmt.Errorf("kafkatest: %w", err)
	}
	if err := os.WriteFile(f.Key, kp.KeyPEM, 0o600); err != nil {
		return CertFiles{}, fmt.Errorf("kafkatest: %w", err)
	}
	return f, nil
}

func pemBlock(typ string, der []byte) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der})
}

func serial() *big.Int {
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	if err != nil {
		return big.NewInt(time.Now().UnixNano())
	}
	return n
}
