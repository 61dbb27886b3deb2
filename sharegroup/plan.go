package sharegroup

import (
	"context"
	"fmt"
	"maps"
	"strconv"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sharerelay/sharerelay/config"
)

// Plan is what the relay sets on its share group at start when it
// manages the group's configs (source.manage_group_config).
type Plan struct {
	// Configs are the group configs to set.
	Configs map[string]string
	// Notes say what was decided about the record lock limit and the
	// delivery limit, and why, for the log and for `relay check`.
	Notes []string
	// AttemptsLimit, when not 0, is the delivery limit the default
	// dead_letter.max_attempts is derived from (config.DefaultMaxAttempts)
	// instead of the group's: the broker's default, when the relay raised
	// the group's limit above it. The deliveries it adds are spares for
	// crashes, not retries of a failing record.
	AttemptsLimit int
}

// ConfigsToSet returns the share-group configs the relay sets at start
// when it manages the group's configs (source.manage_group_config): the
// offset reset and isolation level, source.group_configs and, each unless
// the file sets it,
//   - a record lock limit (RecordLocks) raised to what the
//     relay's instance may hold, workers × batch.consumers ×
//     batch.max_records, within the broker's allowed maximum;
//   - a delivery limit (DeliveryCountLimit) raised so that a crash
//     of the instance cannot use up a record's deliveries
//     (deliveryLimitToSet), within the broker's allowed maximum.
//
// A broker whose configs cannot be read keeps its own limits. What the
// relay asks of the locks it gets is sized afterwards (Size).
func ConfigsToSet(ctx context.Context, cl *kgo.Client, p *config.Pipeline) Plan {
	plan := Plan{Configs: map[string]string{
		AutoOffsetReset: p.Source.AutoOffsetReset,
		IsolationLevel:  p.Source.IsolationLevel,
	}}
	maps.Copy(plan.Configs, p.Source.GroupConfigs)
	bc, err := BrokerConfig(ctx, kadm.NewClient(cl), brokerRecordLocks, brokerMaxRecordLocks, brokerDeliveryCountLimit, brokerMaxDeliveryCountLimit)
	readable := func(keys ...string) (vs []int, ok bool) {
		for _, k := range keys {
			v, cerr := strconv.Atoi(bc[k])
			if err != nil || cerr != nil {
				return nil, false
			}
			vs = append(vs, v)
		}
		return vs, true
	}

	if _, set := p.Source.GroupConfigs[RecordLocks]; set {
		plan.Notes = append(plan.Notes, "record lock limit set by source.group_configs")
	} else if vs, ok := readable(brokerRecordLocks, brokerMaxRecordLocks); !ok {
		plan.Notes = append(plan.Notes, fmt.Sprintf("record lock limit left to the broker (its %s and %s are not readable)", brokerRecordLocks, brokerMaxRecordLocks))
	} else {
		want, def, most := p.Workers*p.Batch.Consumers*p.Batch.MaxRecords, vs[0], vs[1]
		v, raise := recordLockLimit(want, def, most)
		if raise {
			plan.Configs[RecordLocks] = strconv.Itoa(v)
			plan.Notes = append(plan.Notes, fmt.Sprintf("record lock limit %d: the relay holds up to %d records, the broker's default is %d and its maximum %d", v, want, def, most))
		} else {
			plan.Notes = append(plan.Notes, fmt.Sprintf("record lock limit left at the broker's %d (the relay holds up to %d records)", def, want))
		}
	}

	if _, set := p.Source.GroupConfigs[DeliveryCountLimit]; set {
		plan.Notes = append(plan.Notes, "delivery limit set by source.group_configs")
	} else if vs, ok := readable(brokerDeliveryCountLimit, brokerMaxDeliveryCountLimit); !ok {
		plan.Notes = append(plan.Notes, fmt.Sprintf("delivery limit left to the broker (its %s and %s are not readable)", brokerDeliveryCountLimit, brokerMaxDeliveryCountLimit))
	} else {
		def, most := vs[0], vs[1]
		attempts := p.DeadLetter.MaxAttempts
		if attempts == 0 {
			attempts = config.DefaultMaxAttempts(def)
		}
		sessions := p.Workers * p.Batch.Consumers
		if v, raise := deliveryLimitToSet(attempts, sessions, def, most); raise {
			plan.Configs[DeliveryCountLimit] = strconv.Itoa(v)
			plan.AttemptsLimit = def
			plan.Notes = append(plan.Notes, fmt.Sprintf("delivery limit %d: %d attempts for a failing record and %d spare deliveries for a crash of this instance's %d share consumers (workers × batch.consumers); the broker's default is %d and its maximum %d", v, attempts, v-attempts, sessions, def, most))
		} else {
			plan.Notes = append(plan.Notes, fmt.Sprintf("delivery limit left at the broker's %d (%d attempts for a failing record, %d share consumers)", def, attempts, sessions))
		}
	}
	return plan
}

// recordLockLimit decides the group's record lock limit for a relay that
// holds up to want records, on a broker whose default is def and maximum
// most: raised to want, within most, and never lowered below def.
func recordLockLimit(want, def, most int) (limit int, raise bool) {
	if want <= def || most <= def {
		return def, false
	}
	return min(want, most), true
}

// deliveryLimitToSet decides the group's delivery limit for a relay that
// gives a failing record attempts deliveries and runs sessions share
// consumers an instance, on a broker whose default is def and maximum
// most: attempts plus the deliveries one crash of the instance can cost
// a record (one per share consumer, and at least two: ConsumersPerWorker,
// config.DefaultMaxAttempts), within most, and never lowered below def.
//
// The higher limit keeps what a crash costs from reaching the limit, so
// the broker does not archive a record without its output or dead letter,
// and it lets ConsumersPerWorker keep batch.consumers at more workers. A
// failing record still gets only attempts deliveries before its dead
// letter (Plan.AttemptsLimit); a record that crashes the relay
// itself is delivered more often before the broker archives it, up to
// most.
func deliveryLimitToSet(attempts, sessions, def, most int) (limit int, raise bool) {
	want := attempts + max(2, sessions)
	if want <= def || most <= def {
		return def, false
	}
	return min(want, most), true
}
