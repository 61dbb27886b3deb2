package relay

import (
	"errors"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

func TestDisruptionsRememberTransportFailuresOnly(t *testing.T) {
	d := &disruptions{}
	now := time.Now()
	if d.recent(now, fenceExcuse) {
		t.Fatal("a new tracker reports a disruption")
	}
	d.OnBrokerE2E(kgo.BrokerMetadata{}, 0, kgo.BrokerE2E{}) // a request that went fine
	d.OnBrokerConnect(kgo.BrokerMetadata{}, 0, nil, nil)    // a dial that worked
	if d.recent(time.Now(), fenceExcuse) {
		t.Fatal("successful requests count as a disruption")
	}
	d.OnBrokerE2E(kgo.BrokerMetadata{}, 0, kgo.BrokerE2E{ReadErr: errors.New("connection reset by peer")})
	if !d.recent(time.Now(), fenceExcuse) {
		t.Fatal("a failed read is not remembered")
	}
	if d.recent(time.Now().Add(2*fenceExcuse), fenceExcuse) {
		t.Fatal("a disruption is remembered beyond the window")
	}
	d2 := &disruptions{}
	d2.OnBrokerConnect(kgo.BrokerMetadata{}, 0, nil, errors.New("connection refused"))
	if !d2.recent(time.Now(), fenceExcuse) {
		t.Fatal("a failed dial is not remembered")
	}
}
