package kafkatest

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sharerelay/sharerelay/integration/internal/jvmproc"
)

// readyLine is logged by BrokerLifecycleManager once the broker is
// unfenced ("The broker has been unfenced. Transitioning from RECOVERY to
// RUNNING."); testcontainers waits for the same line.
const readyLine = "Transitioning from RECOVERY to RUNNING"

// fatalLines in the log mean the start has failed even though the JVM
// may take many seconds to exit.
var fatalLines = []string{
	"Exiting Kafka due to fatal exception",
	"Address already in use",
}

// containsAddrInUse reports whether a broker log shows a failed bind.
func containsAddrInUse(log string) bool {
	return strings.Contains(log, "Address already in use")
}

// prober returns Start's readiness probe, which creates and deletes a
// topic through the broker (see probe) with a client it makes on first
// use, and a func that closes that client.
func (b *Broker) prober() (probeFn func(context.Context) error, closeFn func()) {
	var cl *kgo.Client
	probeFn = func(ctx context.Context) error {
		if cl == nil {
			var err error
			if cl, err = kgo.NewClient(kgo.SeedBrokers(b.Addr()), kgo.DialTimeout(2*time.Second)); err != nil {
				return jvmproc.Permanent(fmt.Errorf("create probe client: %w", err))
			}
		}
		pctx, pcancel := context.WithTimeout(ctx, 10*time.Second)
		defer pcancel()
		return probe(pctx, cl)
	}
	closeFn = func() {
		if cl != nil {
			cl.Close()
		}
	}
	return probeFn, closeFn
}

// probe creates and deletes a one-partition topic through the seed broker
// itself, so it works even when the advertised address (a proxy) is not
// reachable yet: a KRaft broker forwards both requests to the controller.
func probe(ctx context.Context, cl *kgo.Client) error {
	seeds := cl.SeedBrokers()
	if len(seeds) == 0 {
		return errors.New("probe: no seed broker")
	}
	seed := seeds[0]
	name := "kafkatest-probe-" + strconv.FormatInt(time.Now().UnixNano(), 36)

	create := kmsg.NewPtrCreateTopicsRequest()
	ct := kmsg.NewCreateTopicsRequestTopic()
	ct.Topic, ct.NumPartitions, ct.ReplicationFactor = name, 1, 1
	create.Topics = append(create.Topics, ct)
	create.TimeoutMillis = 5000
	resp, err := seed.Request(ctx, create)
	if err != nil {
		return fmt.Errorf("probe: create topic: %w", err)
	}
	for _, t := range resp.(*kmsg.CreateTopicsResponse).Topics {
		if err := kerr.ErrorForCode(t.ErrorCode); err != nil && !errors.Is(err, kerr.TopicAlreadyExists) {
			return fmt.Errorf("probe: create topic %s: %w", name, err)
		}
	}

	del := kmsg.NewPtrDeleteTopicsRequest()
	dt := kmsg.NewDeleteTopicsRequestTopic()
	dt.Topic = kmsg.StringPtr(name)
	del.Topics = append(del.Topics, dt)
	del.TopicNames = append(del.TopicNames, name) // for versions before 6
	del.TimeoutMillis = 5000
	resp, err = seed.Request(ctx, del)
	if err != nil {
		return fmt.Errorf("probe: delete topic: %w", err)
	}
	for _, t := range resp.(*kmsg.DeleteTopicsResponse).Topics {
		if err := kerr.ErrorForCode(t.ErrorCode); err != nil {
			return fmt.Errorf("probe: delete topic %s: %w", name, err)
		}
	}
	return nil
}
