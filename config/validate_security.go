package config

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"net/url"
	"os"
	"regexp"
	"slices"
	"strings"
	"time"
)

// Limits of the client tuning enforced by Validate.
const (
	MinRequestTimeout = time.Second
	MaxRequestTimeout = 15 * time.Minute
	MaxLinger         = time.Second // client.producer.linger and batch.linger
	MinBatchBytes     = 512
	MaxBatchBytes     = 1 << 30
	MinFetchMaxBytes  = 1 << 10
	MaxFetchMaxBytes  = 100 << 20
	MinFetchMaxWait   = 10 * time.Millisecond
	MaxFetchMaxWait   = 10 * time.Second
	MaxClientIDLength = 255
	MaxRackLength     = 512
)

var (
	awsRegionRE = regexp.MustCompile(`^[a-z]+(-[a-z0-9]+)+-\d+$`)
	clientIDRE  = regexp.MustCompile(`^[a-zA-Z0-9._-]+$`)
)

// tls checks the TLS section at prefix ("tls", "source.cluster.tls").
func (v *validator) tls(prefix string, t TLS) {
	if !t.Enabled {
		var set []string
		for _, f := range []saslField{ // not SASL's, but the same shape
			{"ca_file", t.CAFile != ""}, {"cert_file", t.CertFile != ""}, {"key_file", t.KeyFile != ""},
			{"server_name", t.ServerName != ""}, {"insecure_skip_verify", t.InsecureSkipVerify},
		} {
			if f.set {
				set = append(set, f.name)
			}
		}
		if len(set) > 0 {
			v.warn(prefix+".enabled", "TLS is off, so %s %s ignored: set enabled: true to use TLS",
				strings.Join(set, ", "), plural(len(set), "is", "are"))
		}
		return
	}
	if t.CAFile != "" {
		if data, ok := v.readFile(prefix+".ca_file", t.CAFile); ok && !hasCertificate(data) {
			v.add(prefix+".ca_file", "%s holds no PEM certificate", v.show(prefix+".ca_file", t.CAFile))
		}
	}
	switch {
	case t.CertFile != "" && t.KeyFile == "":
		v.add(prefix+".key_file", "required with tls.cert_file: the private key of the client certificate")
		v.readFile(prefix+".cert_file", t.CertFile)
	case t.KeyFile != "" && t.CertFile == "":
		v.add(prefix+".cert_file", "required with tls.key_file: the client certificate of the private key")
		v.readFile(prefix+".key_file", t.KeyFile)
	case t.CertFile != "":
		cert, certOK := v.readFile(prefix+".cert_file", t.CertFile)
		key, keyOK := v.readFile(prefix+".key_file", t.KeyFile)
		if certOK && keyOK {
			if _, err := tls.X509KeyPair(cert, key); err != nil {
				// The error names what is wrong ("private key does not
				// match public key"), never the key's content.
				v.add(prefix+".cert_file", "%s and tls.key_file %s are not a certificate and its key: %s",
					v.show(prefix+".cert_file", t.CertFile), v.show(prefix+".key_file", t.KeyFile), strings.TrimPrefix(err.Error(), "tls: "))
			}
		}
	}
	if t.InsecureSkipVerify {
		v.warn(prefix+".insecure_skip_verify", "the brokers' certificates are not verified: anyone between the relay and the brokers can read and change the traffic, credentials included")
	}
}

// readFile reads the file named at path, reporting why it cannot.
func (v *validator) readFile(path, name string) ([]byte, bool) {
	data, err := os.ReadFile(name)
	switch {
	case err == nil:
		return data, true
	case errors.Is(err, fs.ErrNotExist):
		v.add(path, "no such file: %s", v.show(path, name))
	case errors.Is(err, fs.ErrPermission):
		v.add(path, "cannot read %s: permission denied", v.show(path, name))
	default:
		var perr *fs.PathError
		if errors.As(err, &perr) {
			err = perr.Err // the path is named already
		}
		v.add(path, "cannot read %s: %v", v.show(path, name), err)
	}
	return nil, false
}

func hasCertificate(data []byte) bool {
	for {
		var b *pem.Block
		b, data = pem.Decode(data)
		if b == nil {
			return false
		}
		if b.Type == "CERTIFICATE" {
			if _, err := x509.ParseCertificate(b.Bytes); err == nil {
				return true
			}
		}
	}
}

// saslField is a field of SASL that only some mechanisms use.
type saslField struct {
	name string
	set  bool
}

// saslFields lists the fields of s that only some mechanisms use.
func saslFields(s SASL) []saslField {
	return []saslField{
		{"username", s.Username != ""},
		{"password", s.Password != ""},
		{"token_file", s.TokenFile != ""},
		{"token_url", s.TokenURL != ""},
		{"client_id", s.ClientID != ""},
		{"client_secret", s.ClientSecret != ""},
		{"scope", s.Scope != ""},
		{"extensions", len(s.Extensions) > 0},
		{"region", s.Region != ""},
	}
}

// saslUses maps each mechanism to the fields it uses.
var saslUses = map[string][]string{
	MechanismPlain:       {"username", "password"},
	MechanismScramSHA256: {"username", "password"},
	MechanismScramSHA512: {"username", "password"},
	MechanismOAuthBearer: {"token_file", "token_url", "client_id", "client_secret", "scope", "extensions"},
	MechanismAWSMSKIAM:   {"region"},
}

// sasl checks the SASL section at prefix of a cluster whose TLS is on
// or not.
func (v *validator) sasl(prefix string, s SASL, tlsOn bool) {
	fields := saslFields(s)
	m := s.Mechanism
	if m == "" {
		if slices.ContainsFunc(fields, func(f saslField) bool { return f.set }) || v.explicit(prefix+".mechanism") {
			v.add(prefix+".mechanism", "required: one of %s", strings.Join(Mechanisms, ", "))
		}
		return
	}
	uses, known := saslUses[m]
	if !known {
		hint := ""
		for _, k := range Mechanisms {
			if strings.EqualFold(k, m) || strings.EqualFold(strings.ReplaceAll(k, "_", "-"), strings.ReplaceAll(m, "_", "-")) {
				hint = fmt.Sprintf(" (did you mean %s?)", k)
			}
		}
		v.add(prefix+".mechanism", "unknown mechanism %s%s; want one of %s", v.show(prefix+".mechanism", m), hint, strings.Join(Mechanisms, ", "))
		return
	}
	for _, f := range fields {
		if f.set && !slices.Contains(uses, f.name) {
			v.add(prefix+"."+f.name, "not used by mechanism %s", m)
		}
	}
	switch m {
	case MechanismPlain, MechanismScramSHA256, MechanismScramSHA512:
		if s.Username == "" {
			v.add(prefix+".username", "required for %s", m)
		}
		if s.Password == "" {
			v.add(prefix+".password", "required for %s: read it from the environment, e.g. ${KAFKA_PASSWORD}", m)
		}
		if m == MechanismPlain && !tlsOn {
			v.warn(prefix+".mechanism", "PLAIN without TLS sends the password in clear text: enable tls, or use SCRAM-SHA-512")
		}
	case MechanismOAuthBearer:
		v.oauth(prefix, s)
		if !tlsOn {
			v.warn(prefix+".mechanism", "OAUTHBEARER without TLS sends the bearer token in clear text: enable tls")
		}
	case MechanismAWSMSKIAM:
		if s.Region != "" && !awsRegionRE.MatchString(s.Region) {
			v.add(prefix+".region", "%s is not an AWS region such as us-east-1", v.show(prefix+".region", s.Region))
		}
		if !tlsOn {
			v.warn(prefix+".mechanism", "Amazon MSK accepts IAM authentication only over TLS (port 9098): enable tls")
		}
	}
}

func (v *validator) oauth(prefix string, s SASL) {
	switch {
	case s.TokenFile == "" && s.TokenURL == "":
		v.add(prefix+".mechanism", "OAUTHBEARER needs a token: set token_file (a file holding the token) or token_url, client_id and client_secret (a client-credentials token endpoint)")
	case s.TokenFile != "" && s.TokenURL != "":
		v.add(prefix+".token_url", "set token_file or token_url, not both")
	case s.TokenFile != "":
		v.readFile(prefix+".token_file", s.TokenFile)
		for _, f := range []struct{ name, val string }{{"client_id", s.ClientID}, {"client_secret", string(s.ClientSecret)}, {"scope", s.Scope}} {
			if f.val != "" {
				v.add(prefix+"."+f.name, "only used with token_url")
			}
		}
	default:
		u, err := url.Parse(s.TokenURL)
		switch {
		case err != nil || u.Host == "" || (u.Scheme != "https" && u.Scheme != "http"):
			v.add(prefix+".token_url", "%s is not an http or https URL", v.show(prefix+".token_url", s.TokenURL))
		case u.User != nil:
			v.add(prefix+".token_url", "must not hold credentials: set client_id and client_secret")
		case u.Scheme == "http":
			v.warn(prefix+".token_url", "the client secret and the tokens travel in clear text over http: use https")
		}
		if s.ClientID == "" {
			v.add(prefix+".client_id", "required with token_url")
		}
		if s.ClientSecret == "" {
			v.add(prefix+".client_secret", "required with token_url: read it from the environment, e.g. ${KAFKA_CLIENT_SECRET}")
		}
	}
	for _, k := range slices.Sorted(maps.Keys(s.Extensions)) {
		// RFC 7628: keys are letters; "auth" is reserved for the token.
		if k == "auth" || strings.IndexFunc(k, func(r rune) bool { return !('a' <= r && r <= 'z' || 'A' <= r && r <= 'Z') }) >= 0 {
			v.add(prefix+".extensions."+k, "an extension key must be letters only and not \"auth\"")
		}
	}
}

// client checks the client section at prefix. The source cluster's
// (source.cluster.client) has no producer: nothing is produced there.
func (v *validator) client(prefix string, c Client) {
	if c.ID != "" {
		switch {
		case len(c.ID) > MaxClientIDLength:
			v.add(prefix+".id", "is %d characters long; at most %d", len(c.ID), MaxClientIDLength)
		case !clientIDRE.MatchString(c.ID):
			v.add(prefix+".id", "%s may only hold letters, digits and . _ -", v.show(prefix+".id", c.ID))
		}
	}
	if c.Rack != "" && (len(c.Rack) > MaxRackLength || strings.TrimSpace(c.Rack) != c.Rack) {
		v.add(prefix+".rack", "must be at most %d characters, without leading or trailing spaces", MaxRackLength)
	}
	if t := c.RequestTimeout; t < MinRequestTimeout || t > MaxRequestTimeout {
		v.add(prefix+".request_timeout", "must be between %s and %s, got %s", MinRequestTimeout, shortDuration(MaxRequestTimeout), v.showAny(prefix+".request_timeout", t))
	}
	if prefix == sourceClusterPath+".client" {
		if c.Producer != (ProducerTuning{}) || v.explicit(prefix+".producer") {
			v.add(prefix+".producer", "the relay writes nothing to the source cluster: tune its producers in client.producer, the cluster of the outputs")
		}
	} else {
		v.producer(prefix, c.Producer)
	}
	co := c.Consumer
	if n := co.FetchMaxBytes; n < MinFetchMaxBytes || n > MaxFetchMaxBytes {
		v.add(prefix+".consumer.fetch_max_bytes", "must be between %d (1 KiB) and %d (100 MiB), got %s", MinFetchMaxBytes, MaxFetchMaxBytes, v.showAny(prefix+".consumer.fetch_max_bytes", n))
	}
	if w := co.FetchMaxWait; w < MinFetchMaxWait || w > MaxFetchMaxWait {
		v.add(prefix+".consumer.fetch_max_wait", "must be between %s and %s, got %s", MinFetchMaxWait, MaxFetchMaxWait, v.showAny(prefix+".consumer.fetch_max_wait", w))
	}
}

// producer checks the producer tuning of the client section at prefix.
func (v *validator) producer(prefix string, pr ProducerTuning) {
	if !slices.Contains(Compressions, pr.Compression) {
		v.add(prefix+".producer.compression", "must be one of %s, got %s", strings.Join(Compressions, ", "), v.show(prefix+".producer.compression", pr.Compression))
	}
	if pr.Linger < 0 || pr.Linger > MaxLinger {
		v.add(prefix+".producer.linger", "must be between 0 and %s, got %s", MaxLinger, v.showAny(prefix+".producer.linger", pr.Linger))
	}
	if n := pr.MaxBatchBytes; n != 0 && (n < MinBatchBytes || n > MaxBatchBytes) {
		v.add(prefix+".producer.max_batch_bytes", "must be 0 (each topic's max.message.bytes) or between %d and %d, got %s", MinBatchBytes, MaxBatchBytes, v.showAny(prefix+".producer.max_batch_bytes", n))
	}
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
