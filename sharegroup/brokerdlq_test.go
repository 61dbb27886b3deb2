package sharegroup

import (
	"errors"
	"strings"
	"testing"

	"github.com/sharerelay/sharerelay/config"
)

func TestCheckBrokerDLQ(t *testing.T) {
	accept := config.DeadLetter{Topic: "jobs.dlq", Ack: config.DeadLetterAccept}
	reject := config.DeadLetter{Topic: "jobs.dlq", Ack: config.DeadLetterReject}
	brokerDLQ := map[string]string{DLQTopic: "dlq.g", "share.delivery.count.limit": "5"}
	for _, tc := range []struct {
		name     string
		dl       config.DeadLetter
		configs  map[string]string
		wantErr  bool
		wantWarn bool
		wantNote string
	}{
		{name: "reject on a group without a broker-side DLQ (Kafka before 4.4 reports no such config) is fine",
			dl: reject, configs: map[string]string{"share.delivery.count.limit": "5"}},
		{name: "reject on a group whose DLQ topic is blank is fine", dl: reject, configs: map[string]string{DLQTopic: ""}},
		{name: "reject on a group with a broker-side DLQ is refused", dl: reject, configs: brokerDLQ, wantErr: true},
		{name: "accept on a group with a broker-side DLQ names it as the backstop", dl: accept, configs: brokerDLQ, wantNote: "dlq.g"},
		{name: "accept on a group whose broker-side DLQ is the relay's own dead-letter topic is a warning",
			dl: accept, configs: map[string]string{DLQTopic: "jobs.dlq"}, wantWarn: true, wantNote: "relay's own dead-letter topic"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			note, warn, err := CheckBrokerDLQ(tc.dl, "g", tc.configs)
			if gotErr := errors.Is(err, ErrBrokerDLQWithReject); gotErr != tc.wantErr {
				t.Fatalf("err = %v, want ErrBrokerDLQWithReject: %v", err, tc.wantErr)
			}
			if warn != tc.wantWarn || !strings.Contains(note, tc.wantNote) || (tc.wantNote == "") != (note == "") {
				t.Fatalf("note %q warn %v; want a note containing %q, warn %v", note, warn, tc.wantNote, tc.wantWarn)
			}
			if tc.wantErr && !strings.Contains(err.Error(), "dlq.g") {
				t.Fatalf("error %q does not name the group's DLQ topic", err)
			}
		})
	}
}
