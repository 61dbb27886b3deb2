package main

import (
	"slices"
	"strings"
	"testing"

	"github.com/sharerelay/sharerelay/integration/kafkatest"
)

func TestBrokerRecordLocksDefaultToKafkasOwnAndTakeAList(t *testing.T) {
	t.Setenv(kafkatest.EnvBootstrap, "")
	o, err := parseFlags(nil)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(o.brokerRecordLocks, []int{0}) {
		t.Fatalf("default -broker-record-locks = %v, want [0] (Kafka's default limits)", o.brokerRecordLocks)
	}
	o, err = parseFlags([]string{"-broker-record-locks", "0, 10000"})
	if err != nil || !slices.Equal(o.brokerRecordLocks, []int{0, 10000}) {
		t.Fatalf("-broker-record-locks 0,10000 = %v, %v; want [0 10000] in that order", o.brokerRecordLocks, err)
	}
	for _, bad := range []string{"1999", "10001", "x", "0,0", "", " , "} {
		if _, err := parseFlags([]string{"-broker-record-locks", bad}); err == nil || !strings.Contains(err.Error(), "-broker-record-locks") {
			t.Errorf("-broker-record-locks %q: %v, want an error naming the flag", bad, err)
		}
	}
}

func TestAnExternalClusterTakesNoListOfBrokerSettings(t *testing.T) {
	t.Setenv(kafkatest.EnvBootstrap, "127.0.0.1:9092")
	if o, err := parseFlags(nil); err != nil || !slices.Equal(o.brokerRecordLocks, []int{0}) {
		t.Fatalf("the default on an external cluster: %v, %v; want [0] and no error", o.brokerRecordLocks, err)
	}
	for _, bad := range []string{"0,10000", "10000"} {
		_, err := parseFlags([]string{"-broker-record-locks", bad})
		if err == nil || !strings.Contains(err.Error(), "-broker-record-locks") || !strings.Contains(err.Error(), kafkatest.EnvBootstrap) {
			t.Errorf("-broker-record-locks %s on an external cluster: %v, want an error naming the flag and %s", bad, err, kafkatest.EnvBootstrap)
		}
	}
}
