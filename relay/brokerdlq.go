package relay

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sharerelay/sharerelay/config"
)

// Share-group configs of the broker-side dead-letter queue (KIP-1191,
// Apache Kafka 4.4: GroupConfig in the group coordinator). A group has a
// broker-side DLQ when GroupDLQTopic is set and not empty; the broker then
// writes to it every record of the group that a consumer REJECTs (cause
// CLIENT_REJECT) or that runs out of deliveries, before archiving it.
// GroupDLQCopyRecord says whether it copies the record's key, value and
// headers or only the context headers. (The topic must also carry
// errors.deadletterqueue.group.enable=true, and the cluster's
// share.version feature must be at least 2.)
const (
	GroupDLQTopic      = "errors.deadletterqueue.topic.name"
	GroupDLQCopyRecord = "errors.deadletterqueue.copy.record.enable"
)

// ErrBrokerDLQWithReject means dead_letter.ack is reject while the share
// group has a broker-side dead-letter topic: every record the relay
// dead-letters would be written to a dead-letter topic twice, once by the
// relay (in its transaction, with the reason) and once by the broker
// (CLIENT_REJECT).
var ErrBrokerDLQWithReject = errors.New("dead_letter.ack: reject with a broker-side dead-letter queue (KIP-1191) on the share group: the broker would copy every dead-lettered record to its dead-letter topic a second time")

// CheckBrokerDLQ judges a pipeline's dead-letter settings against its
// share group's configs (as DescribeConfigs reports them; a broker
// before Kafka 4.4 reports no GroupDLQTopic). It returns
// ErrBrokerDLQWithReject for ack reject on a group with a broker-side
// DLQ; with ack accept that DLQ is the intended backstop for records the
// broker archives after their last delivery, and note describes it (a
// warning when it is the relay's own dead-letter topic, which would then
// mix records the broker wrote, outside any transaction and without
// lineage headers, with the relay's). note is "" when the group has no
// broker-side DLQ.
func CheckBrokerDLQ(dl config.DeadLetter, group string, groupConfigs map[string]string) (note string, warn bool, err error) {
	topic := groupConfigs[GroupDLQTopic]
	if topic == "" {
		return "", false, nil
	}
	if dl.Ack == config.DeadLetterReject {
		return "", false, fmt.Errorf("%w: group %s has %s=%s; set dead_letter.ack: accept (the broker's DLQ then only receives records archived after their last delivery), or remove the group's %s",
			ErrBrokerDLQWithReject, group, GroupDLQTopic, topic, GroupDLQTopic)
	}
	if topic == dl.Topic {
		return fmt.Sprintf("share group %s has the broker write records archived after their last delivery to %s, the relay's own dead-letter topic: they carry no lineage headers and are not transactional; give the broker a topic of its own", group, topic), true, nil
	}
	return fmt.Sprintf("share group %s has a broker-side dead-letter queue: records archived after their last delivery go to %s", group, topic), false, nil
}

// checkBrokerDLQ reads the share group's configs and applies
// CheckBrokerDLQ. When the configs cannot be read it logs a warning and
// lets the relay start: the check guards against a double copy, not
// against loss.
func checkBrokerDLQ(ctx context.Context, cl *kgo.Client, p *config.Pipeline, log *slog.Logger) error {
	gc, err := describeGroupConfig(ctx, cl, p.Source.Group)
	if err != nil {
		if p.DeadLetter.Ack == config.DeadLetterReject {
			log.Warn("could not read the share group's configs: cannot check that it has no broker-side dead-letter queue (KIP-1191), which would copy every rejected dead letter a second time",
				"group", p.Source.Group, "err", err)
		}
		return nil
	}
	note, warn, err := CheckBrokerDLQ(p.DeadLetter, p.Source.Group, gc)
	switch {
	case err != nil:
		return err
	case warn:
		log.Warn(note)
	case note != "":
		log.Info(note)
	}
	return nil
}
