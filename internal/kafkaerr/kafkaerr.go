// Package kafkaerr classifies the errors Kafka clients return by what the
// relay must do about them. Retrying only helps a cluster-level failure; a
// record that can never be written must be dead-lettered, and a topic that
// cannot take writes must pause the worker — neither may spend a record's
// deliveries.
package kafkaerr

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"syscall"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// Class is what an error means for the relay.
type Class int8

const (
	// None: no error.
	None Class = iota
	// Cluster: the cluster is unreachable or slow (connections refused,
	// timeouts, leaders moving, not enough replicas). Retry with backoff;
	// nothing is wrong with the records or the topics.
	Cluster
	// Record: this record can never be written as it is (too large for
	// the topic or the client, invalid, corrupt). Retrying cannot help:
	// dead-letter it.
	Record
	// Destination: the topic cannot take writes (missing, deleted,
	// recreated, or writes not authorized). Stop taking records until it
	// can, then resume.
	Destination
	// Fenced: a newer producer with the same transactional id exists; this
	// process is a zombie and must stop.
	Fenced
)

// String returns the class in lower case: the value of the class label
// of sharerelay_write_failures_total.
func (c Class) String() string {
	return [...]string{"none", "cluster", "record", "destination", "fenced"}[c]
}

// Classify returns the class of err. Unknown errors are Cluster: retrying
// them with backoff is safe, and the worker holds its records meanwhile.
func Classify(err error) Class {
	switch {
	case err == nil:
		return None
	case errors.Is(err, kerr.ProducerFenced):
		return Fenced
	case errors.Is(err, kerr.MessageTooLarge),
		errors.Is(err, kerr.RecordListTooLarge),
		errors.Is(err, kerr.InvalidRecord),
		errors.Is(err, kerr.CorruptMessage),
		errors.Is(err, kerr.InvalidTimestamp):
		return Record
	case errors.Is(err, kerr.UnknownTopicOrPartition),
		errors.Is(err, kerr.UnknownTopicID),
		errors.Is(err, kerr.InconsistentTopicID),
		errors.Is(err, kerr.InvalidTopicException),
		errors.Is(err, kerr.TopicAuthorizationFailed),
		errors.Is(err, kerr.GroupAuthorizationFailed),
		errors.Is(err, kerr.ClusterAuthorizationFailed),
		errors.Is(err, kerr.TransactionalIDAuthorizationFailed),
		errors.Is(err, kerr.SaslAuthenticationFailed),
		errors.Is(err, kerr.PolicyViolation):
		return Destination
	}
	return Cluster
}

// Unreachable reports whether err says the cluster could not be reached at
// all (refused or timed out connections, no broker answering), as opposed
// to a broker that answered with an error.
//
// A failed authentication is never Unreachable, even when it reaches the
// client as a network error (a TLS alert from the broker is a
// *net.OpError): waiting cannot cure a refused certificate.
func Unreachable(err error) bool {
	if Authentication(err) {
		return false
	}
	var ne net.Error
	// A connection the broker (or a proxy in front of it) closed
	// answers io.EOF: a broker restarting, a load balancer cutting it.
	// franz-go wraps an immediate one in ErrFirstReadEOF with a TLS or
	// SASL hint, which the caller's log line keeps visible.
	var eof *kgo.ErrFirstReadEOF
	return errors.As(err, &ne) || errors.As(err, &eof) || errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ECONNRESET) ||
		errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, context.DeadlineExceeded) || errors.Is(err, kgo.ErrRecordTimeout) ||
		errors.Is(err, kerr.RequestTimedOut) || errors.Is(err, kerr.NotCoordinator) ||
		errors.Is(err, kerr.CoordinatorNotAvailable) || errors.Is(err, kerr.LeaderNotAvailable) ||
		errors.Is(err, kerr.NotLeaderForPartition) || errors.Is(err, kerr.BrokerNotAvailable)
}

// Authentication reports whether err says the client could not
// authenticate: the broker refused the SASL credentials or mechanism, or
// the TLS handshake failed (an untrusted or mismatched certificate, a
// client certificate refused). Waiting cannot cure it; the configuration
// must change.
func Authentication(err error) bool {
	var (
		verify  *tls.CertificateVerificationError
		unknown x509.UnknownAuthorityError
		host    x509.HostnameError
		invalid x509.CertificateInvalidError
		op      *net.OpError
	)
	return errors.Is(err, kerr.SaslAuthenticationFailed) || errors.Is(err, kerr.UnsupportedSaslMechanism) ||
		errors.Is(err, kerr.IllegalSaslState) || errors.As(err, &verify) || errors.As(err, &unknown) ||
		errors.As(err, &host) || errors.As(err, &invalid) ||
		// A TLS alert from the broker, e.g. "tls: certificate required".
		errors.As(err, &op) && op.Op == "remote error"
}

// Denied wraps err, when it says the principal lacks a permission on the
// topic or group it names, with the ACL operation that is missing, e.g.
// "not authorized to READ topic orders: TOPIC_AUTHORIZATION_FAILED": an
// operator grants an operation, not an error code. op is what the client
// was doing (READ for a fetch, WRITE for a produce); other errors are
// returned as they are.
func Denied(err error, op, topic, group string) error {
	switch {
	case errors.Is(err, kerr.TopicAuthorizationFailed) && topic != "":
		return fmt.Errorf("not authorized to %s topic %s: %w", op, topic, err)
	case errors.Is(err, kerr.GroupAuthorizationFailed) && group != "":
		return fmt.Errorf("not authorized to READ group %s: %w", group, err)
	}
	return err
}
