package sharegroup

import (
	"errors"
	"fmt"

	"github.com/sharerelay/sharerelay/config"
)

// Share-group configs of the broker-side dead-letter queue (KIP-1191,
// Apache Kafka 4.4: GroupConfig in the group coordinator). A group has a
// broker-side DLQ when DLQTopic is set and not empty; the broker then
// writes to it every record of the group that a consumer REJECTs (cause
// CLIENT_REJECT) or that runs out of deliveries, before archiving it.
// DLQCopyRecord says whether it copies the record's key, value and
// headers or only the context headers. (The topic must also carry
// errors.deadletterqueue.group.enable=true, and the cluster's
// share.version feature must be at least 2.)
const (
	DLQTopic      = "errors.deadletterqueue.topic.name"
	DLQCopyRecord = "errors.deadletterqueue.copy.record.enable"
)

// ErrBrokerDLQWithReject means dead_letter.ack is reject while the share
// group has a broker-side dead-letter topic: every record the relay
// dead-letters would be written to a dead-letter topic twice, once by the
// relay (in its transaction, with the reason) and once by the broker
// (CLIENT_REJECT).
var ErrBrokerDLQWithReject = errors.New("dead_letter.ack: reject with a broker-side dead-letter queue (KIP-1191) on the share group: the broker would copy every dead-lettered record to its dead-letter topic a second time")

// CheckBrokerDLQ judges a pipeline's dead-letter settings against its
// share group's configs (as DescribeConfigs reports them; a broker
// before Kafka 4.4 reports no DLQTopic). It returns
// ErrBrokerDLQWithReject for ack reject on a group with a broker-side
// DLQ; with ack accept that DLQ is the intended backstop for records the
// broker archives after their last delivery, and note describes it (a
// warning when it is the relay's own dead-letter topic, which would then
// mix records the broker wrote, outside any transaction and without
// lineage headers, with the relay's). note is "" when the group has no
// broker-side DLQ.
func CheckBrokerDLQ(dl config.DeadLetter, group string, groupConfigs map[string]string) (note string, warn bool, err error) {
	topic := groupConfigs[DLQTopic]
	if topic == "" {
		return "", false, nil
	}
	if dl.Ack == config.DeadLetterReject {
		return "", false, fmt.Errorf("%w: group %s has %s=%s; set dead_letter.ack: accept (the broker's DLQ then only receives records archived after their last delivery), or remove the group's %s",
			ErrBrokerDLQWithReject, group, DLQTopic, topic, DLQTopic)
	}
	if topic == dl.Topic {
		return fmt.Sprintf("share group %s has the broker write records archived after their last delivery to %s, the relay's own dead-letter topic: they carry no lineage headers and are not transactional; give the broker a topic of its own", group, topic), true, nil
	}
	return fmt.Sprintf("share group %s has a broker-side dead-letter queue: records archived after their last delivery go to %s", group, topic), false, nil
}
