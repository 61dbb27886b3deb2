package sharegroup

import (
	"context"
	"errors"
	"strconv"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// Kafka's defaults for the limits, for a group whose limits neither its
// configs nor the broker's say.
const (
	defaultDeliveryLimit  = 5
	defaultLockDurationMs = 30000
)

// Limits are the share-group settings the worker loop depends on.
type Limits struct {
	// DeliveryCountLimit is the group's effective delivery limit: the
	// broker archives a record after this many deliveries.
	DeliveryCountLimit int
	// LockDurationMs is the group's effective acquisition lock duration.
	LockDurationMs int
	// RecordLocks is the group's effective record lock limit per share
	// partition (0: unknown, when neither the group's config nor the
	// broker's default could be read).
	RecordLocks int
	// From says where the values came from ("group", "broker", "default").
	From string
}

// EffectiveLimits reads the group's effective delivery count limit and
// lock duration: the group config when the broker reports one, otherwise
// the broker's group.share.* default, otherwise Kafka's default.
func EffectiveLimits(ctx context.Context, cl *kgo.Client, group string) (Limits, error) {
	l := Limits{DeliveryCountLimit: defaultDeliveryLimit, LockDurationMs: defaultLockDurationMs, From: "default"}
	gc, gerr := Configs(ctx, cl, group)
	bc, berr := BrokerConfig(ctx, kadm.NewClient(cl), brokerDeliveryCountLimit, brokerLockDuration, brokerRecordLocks)
	if gerr != nil && berr != nil {
		return l, errors.Join(gerr, berr)
	}
	pick := func(groupKey, brokerKey string, dst *int) {
		if v, err := strconv.Atoi(gc[groupKey]); err == nil && v > 0 {
			*dst, l.From = v, "group"
			return
		}
		if v, err := strconv.Atoi(bc[brokerKey]); err == nil && v > 0 {
			*dst = v
			if l.From == "default" {
				l.From = "broker"
			}
		}
	}
	pick(DeliveryCountLimit, brokerDeliveryCountLimit, &l.DeliveryCountLimit)
	pick(LockDuration, brokerLockDuration, &l.LockDurationMs)
	// The lock limit does not say where the delivery limits came from.
	if v, err := strconv.Atoi(gc[RecordLocks]); err == nil && v > 0 {
		l.RecordLocks = v
	} else if v, err := strconv.Atoi(bc[brokerRecordLocks]); err == nil && v > 0 {
		l.RecordLocks = v
	}
	return l, nil
}

// ConsumersPerWorker is the share consumers each of workers runs: at most
// want, and few enough that the instance's share consumers stay below
// the group's delivery limit (at least one each). When a process dies,
// Kafka 4.3 releases the records each of its share sessions held and
// hands them to the share fetches still waiting in the broker, and those
// include the dead process's other sessions' fetches: a record can be
// acquired again for a dead consumer once per session of the process, a
// delivery each (integration
// TestRealBrokerACrashCostsARecordMoreThanTheDeliveryItHeld checks it).
// With workers × consumers below the limit, a live consumer still gets
// the record. ConfigsToSet raises the limit first when the relay manages
// the group's configs, so that want can be kept
// (docs/decisions/consumers-per-worker.md).
func ConsumersPerWorker(workers, want, limit int) int {
	if workers <= 0 || limit <= 1 {
		return want
	}
	return max(1, min(want, (limit-1)/workers))
}
