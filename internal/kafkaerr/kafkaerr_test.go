package kafkaerr

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"syscall"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

func TestClassify(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want Class
	}{
		{nil, None},
		{fmt.Errorf("producing to jobs: %w (uncompressed_bytes=6123)", kerr.MessageTooLarge), Record},
		{kerr.InvalidRecord, Record},
		{kerr.CorruptMessage, Record},
		{fmt.Errorf("x: %w", kerr.UnknownTopicOrPartition), Destination},
		{fmt.Errorf("x: %w, %w", kerr.TransactionAbortable, kerr.UnknownTopicID), Destination},
		{kerr.TopicAuthorizationFailed, Destination},
		{kerr.TransactionalIDAuthorizationFailed, Destination},
		{kerr.ProducerFenced, Fenced},
		// A coordinator that aborted a timed-out transaction bumps the
		// epoch: not a newer instance (KIP-588), the producer recovers.
		{kerr.InvalidProducerEpoch, Cluster},
		{kerr.NotEnoughReplicas, Cluster},
		{kgo.ErrRecordTimeout, Cluster},
		{errors.New("dial tcp 127.0.0.1:9092: connect: connection refused"), Cluster},
	} {
		if got := Classify(tc.err); got != tc.want {
			t.Errorf("Classify(%v) = %v, want %v", tc.err, got, tc.want)
		}
	}
}

func TestUnreachable(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want bool
	}{
		// A network fault at start-up in the chaos suite: the proxy
		// closed the connection during api versions negotiation.
		{fmt.Errorf("looking up topics: %w", &kgo.ErrFirstReadEOF{}), true},
		{io.ErrUnexpectedEOF, true},
		{kerr.NotCoordinator, true},
		{kerr.InvalidTxnState, false},
		{kerr.TopicAuthorizationFailed, false},
	} {
		if got := Unreachable(tc.err); got != tc.want {
			t.Errorf("Unreachable(%v) = %v, want %v", tc.err, got, tc.want)
		}
	}
}

func TestAuthenticationFailuresAreNotOutagesToWaitOut(t *testing.T) {
	for _, tc := range []struct {
		name string
		err  error
		auth bool
	}{
		{"SASL credentials refused", fmt.Errorf("looking up topics: %w", kerr.SaslAuthenticationFailed), true},
		{"an untrusted broker certificate", fmt.Errorf("unable to dial: %w", &tls.CertificateVerificationError{Err: x509.UnknownAuthorityError{}}), true},
		{"a TLS alert from the broker (client certificate refused)", &net.OpError{Op: "remote error", Err: errors.New("tls: bad certificate")}, true},
		{"a refused connection", &net.OpError{Op: "dial", Err: syscall.ECONNREFUSED}, false},
		{"a topic not authorized", kerr.TopicAuthorizationFailed, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Authentication(tc.err); got != tc.auth {
				t.Errorf("Authentication(%v) = %v, want %v", tc.err, got, tc.auth)
			}
			if tc.auth && Unreachable(tc.err) {
				t.Errorf("Unreachable(%v) = true: the relay would wait for an authentication failure to pass", tc.err)
			}
		})
	}
	if !Unreachable(&net.OpError{Op: "dial", Err: syscall.ECONNREFUSED}) {
		t.Error("a refused connection is no longer Unreachable")
	}
}

func TestDeniedNamesTheMissingOperation(t *testing.T) {
	for _, tc := range []struct {
		err         error
		topic, want string
	}{
		{kerr.TopicAuthorizationFailed, "orders", "not authorized to READ topic orders: TOPIC_AUTHORIZATION_FAILED"},
		{kerr.GroupAuthorizationFailed, "orders", "not authorized to READ group g: GROUP_AUTHORIZATION_FAILED"},
		{kerr.TopicAuthorizationFailed, "", "TOPIC_AUTHORIZATION_FAILED"},
		{kerr.NotLeaderForPartition, "orders", "NOT_LEADER_FOR_PARTITION"},
	} {
		err := Denied(tc.err, "READ", tc.topic, "g")
		if !errors.Is(err, tc.err) || !strings.HasPrefix(err.Error(), tc.want) {
			t.Errorf("Denied(%v, READ, %q, g) = %q; want it to start %q and wrap the error", tc.err, tc.topic, err, tc.want)
		}
	}
}
