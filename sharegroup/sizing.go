package sharegroup

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strings"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/sharerelay/sharerelay/config"
)

// Demand is what a relay instance would ask its share group for, and what
// the group can give it: the input of Size.
type Demand struct {
	// Workers is the instance's workers (pipeline workers).
	Workers int
	// Consumers and MaxRecords are the pipeline's batch.consumers and
	// batch.max_records, defaults filled in; ConsumersSet and
	// MaxRecordsSet say the file set them, and then they are kept.
	Consumers, MaxRecords       int
	ConsumersSet, MaxRecordsSet bool
	// ConsumersCap is the most share consumers a worker may run for the
	// group's delivery limit (ConsumersPerWorker; 0: no cap).
	ConsumersCap int
	// Partitions is the number of source partitions (0: unknown).
	Partitions int
	// RecordLocks is the group's record lock limit per share partition
	// (Limits.RecordLocks; 0: unknown).
	RecordLocks int
	// Instances is the relay instances that share the group, this one
	// included (at least 1): InstancesOf.
	Instances int
}

// Sizing is what each worker of an instance asks its share group for.
type Sizing struct {
	// Consumers is the share consumers each worker runs.
	Consumers int
	// MaxRecords is the records each of them asks for in one poll.
	MaxRecords int
	// Why says how they were chosen, for the log and `relay check`.
	Why string
	// Short is set when the values the file sets ask for more records
	// than the group can lock for this instance: share fetches then come
	// back in pieces, and each piece becomes a transaction of its own.
	Short bool
}

// ShortAdvice is what to do when the values a file sets ask for more
// records than the group can lock (Sizing.Short).
const ShortAdvice = "lower batch.consumers or batch.max_records, or leave them out for the relay to size, or raise " + brokerMaxRecordLocks +
	" on the brokers (the most record locks a group may set a partition; Kafka allows up to 10000)"

// splitConsumers is how many consumers a worker runs when the relay sizes
// them to a budget the defaults do not fit (Size).
const splitConsumers = 2

// minPollRecords is the fewest records a poll asks for when the relay
// sizes polls itself: below it a poll's fixed costs (a share fetch, a
// transaction's commit) outweigh what a smaller hold saves.
const minPollRecords = 100

// Size chooses each worker's share consumers and records a poll so that
// what the instance holds locked at once fits the record locks the group
// can give it: the group's limit per partition × the source partitions,
// shared evenly among the instances (d.Instances). A record stays locked
// from its fetch to its acknowledgement; a group whose locks run short
// hands out what is left, so polls come back in pieces and exactly-once,
// which holds every record through its commit, turns each piece into a
// transaction of its own and loses the most (docs/decisions/record-locks.md).
//
// A value the file sets is kept. Otherwise, when the defaults do not fit,
// each worker runs two consumers (one when the delivery limit allows no
// more) that split the budget between their polls (each at least
// minPollRecords): large polls make large transactions, whose fixed costs
// (claim check, commit, markers) are what exactly-once pays per
// transaction, while the second consumer fetches as the first one's batch
// is written, and keeps polls small enough that a fetch's byte bound
// (client.consumer.fetch_max_bytes) does not cut them
// (docs/decisions/lock-budget.md). When the budget is unknown (a broker
// whose configs cannot be read), or the defaults fit, the defaults stay.
// A budget that is wrong — a broker that locks fewer records than it
// reports — costs throughput only: the broker hands out fewer records,
// and every one is still acknowledged or released.
func Size(d Demand) Sizing {
	c, m := d.Consumers, d.MaxRecords
	if d.ConsumersCap > 0 && c > d.ConsumersCap {
		c = d.ConsumersCap
	}
	if d.Partitions <= 0 || d.RecordLocks <= 0 || d.Workers <= 0 {
		return Sizing{Consumers: c, MaxRecords: m, Why: "the group's record lock limit is unknown: the configured consumers and records a poll"}
	}
	inst := max(1, d.Instances)
	budget := d.Partitions * d.RecordLocks / (inst * d.Workers)
	of := fmt.Sprintf("%d record locks a worker (%d a partition × %s ÷ (%s × %s))",
		budget, d.RecordLocks, plural(d.Partitions, "source partition"), plural(inst, "instance"), plural(d.Workers, "worker"))
	switch {
	case c*m <= budget:
		return Sizing{Consumers: c, MaxRecords: m, Why: fmt.Sprintf("%s × %d records fit the group's %s", plural(c, "consumer"), m, of)}
	case d.ConsumersSet && d.MaxRecordsSet:
		return Sizing{Consumers: c, MaxRecords: m, Short: true,
			Why: fmt.Sprintf("batch.consumers %d × batch.max_records %d, as the file sets them, ask for more than the group's %s", c, m, of)}
	case d.MaxRecordsSet:
		fit := max(1, min(c, budget/m))
		return Sizing{Consumers: fit, MaxRecords: m, Short: fit*m > budget,
			Why: fmt.Sprintf("%s × batch.max_records %d (set by the file) for the group's %s", plural(fit, "consumer"), m, of)}
	case d.ConsumersSet:
		fit := min(m, max(minPollRecords, budget/c))
		return Sizing{Consumers: c, MaxRecords: fit, Short: c*fit > budget,
			Why: fmt.Sprintf("batch.consumers %d (set by the file) × %d records a poll for the group's %s", c, fit, of)}
	}
	n := min(c, splitConsumers)
	fit := min(config.MaxMaxRecords, max(minPollRecords, budget/n))
	if n > 1 && fit*n > budget {
		n, fit = 1, min(config.MaxMaxRecords, max(minPollRecords, budget))
	}
	return Sizing{Consumers: n, MaxRecords: fit, Short: n*fit > budget,
		Why: fmt.Sprintf("%s × %d records for the group's %s", plural(n, "consumer"), fit, of)}
}

// relayClientID matches the client IDs of a relay's share consumers
// (ClientID): the instance's prefix, then "-<worker>-c<consumer>".
var relayClientID = regexp.MustCompile(`^(sharerelay-.+)-\d+-c\d+$`)

// ClientID is the client ID of share consumer c of worker i of the relay
// instance whose transactional IDs begin with prefix
// ("sharerelay-<pipeline>-<instance>-"). InstancesOf reads it back.
func ClientID(prefix string, i, c int) string {
	return fmt.Sprintf("%s%d-c%d", prefix, i, c)
}

// InstancesOf counts the relay instances among a share group's members,
// given their client IDs, with the instance whose prefix is self counted
// once whether or not it is a member yet (a member of an earlier run of
// the same instance is the same instance). Members that are not a relay's
// share consumers are counted apart in others: what they hold is unknown,
// so Size does not share the budget with them, and the log names them.
func InstancesOf(clientIDs []string, self string) (instances, others int) {
	seen := map[string]bool{strings.TrimSuffix(self, "-"): true}
	for _, id := range clientIDs {
		m := relayClientID.FindStringSubmatch(id)
		if m == nil {
			others++
			continue
		}
		seen[m[1]] = true
	}
	return len(seen), others
}

// plural is n and word, with an s when n is not 1.
func plural(n int, word string) string {
	if n == 1 {
		return "1 " + word
	}
	return fmt.Sprintf("%d %ss", n, word)
}

// Members returns the client IDs of the share group's members (none for a
// group that does not exist yet).
func Members(ctx context.Context, adm *kadm.Client, group string) ([]string, error) {
	ds, err := adm.DescribeShareGroups(ctx, group)
	if err != nil {
		return nil, fmt.Errorf("describing share group %s: %w", group, err)
	}
	g, ok := ds[group]
	if !ok {
		return nil, nil
	}
	if g.Err != nil {
		if errors.Is(g.Err, kerr.GroupIDNotFound) {
			return nil, nil
		}
		return nil, fmt.Errorf("describing share group %s: %w", group, g.Err)
	}
	ids := make([]string, 0, len(g.Members))
	for _, m := range g.Members {
		ids = append(ids, m.ClientID)
	}
	return ids, nil
}
