package sharegroup

import (
	"strings"
	"testing"
)

func TestSizeFitsWhatAnInstanceHoldsToTheGroupsRecordLocks(t *testing.T) {
	def := func(d Demand) Demand {
		d.Consumers, d.MaxRecords = 4, 2000
		if d.Workers == 0 {
			d.Workers = 2
		}
		if d.Instances == 0 {
			d.Instances = 1
		}
		return d
	}
	for _, c := range []struct {
		name      string
		d         Demand
		consumers int
		records   int
		short     bool
		says      []string
	}{
		{name: "Kafka's maximum, 3 partitions, 2 workers: 6000 a worker",
			d: def(Demand{Partitions: 3, RecordLocks: 4000}), consumers: 2, records: 3000,
			says: []string{"6000 record locks a worker", "4000 a partition × 3 source partitions ÷ (1 instance × 2 workers)"}},
		{name: "the recommended maximum: the defaults fit",
			d: def(Demand{Partitions: 3, RecordLocks: 10000}), consumers: 4, records: 2000, says: []string{"fit"}},
		{name: "three instances share the budget",
			d: def(Demand{Partitions: 3, RecordLocks: 4000, Instances: 3}), consumers: 2, records: 1000},
		{name: "a budget below one default poll: one smaller poll",
			d: def(Demand{Partitions: 1, RecordLocks: 4000, Instances: 3}), consumers: 2, records: 333},
		{name: "a budget too small for two polls: one",
			d: def(Demand{Partitions: 1, RecordLocks: 2000, Instances: 6, Workers: 2}), consumers: 1, records: 166},
		{name: "one consumer when the delivery limit allows one",
			d: def(Demand{Partitions: 1, RecordLocks: 2000, Instances: 2, ConsumersCap: 1}), consumers: 1, records: 500},
		{name: "never below the smallest poll",
			d: def(Demand{Partitions: 1, RecordLocks: 2000, Instances: 16, Workers: 8}), consumers: 1, records: minPollRecords, short: true},
		{name: "the delivery limit's cap comes first",
			d: def(Demand{Partitions: 3, RecordLocks: 10000, ConsumersCap: 2}), consumers: 2, records: 2000},
		{name: "both set by the file: kept, and short",
			d: def(Demand{Partitions: 3, RecordLocks: 4000, ConsumersSet: true, MaxRecordsSet: true}), consumers: 4, records: 2000, short: true,
			says: []string{"as the file sets them"}},
		{name: "max_records set: fewer consumers",
			d: Demand{Workers: 2, Consumers: 4, MaxRecords: 3000, MaxRecordsSet: true, Partitions: 3, RecordLocks: 4000, Instances: 1}, consumers: 2, records: 3000},
		{name: "max_records set too large for one consumer: one, short",
			d: Demand{Workers: 2, Consumers: 4, MaxRecords: 9000, MaxRecordsSet: true, Partitions: 3, RecordLocks: 4000, Instances: 1}, consumers: 1, records: 9000, short: true},
		{name: "consumers set: smaller polls",
			d: Demand{Workers: 2, Consumers: 4, MaxRecords: 2000, ConsumersSet: true, Partitions: 3, RecordLocks: 4000, Instances: 1}, consumers: 4, records: 1500},
		{name: "locks unknown: the configured values",
			d: def(Demand{Partitions: 3}), consumers: 4, records: 2000, says: []string{"unknown"}},
	} {
		s := Size(c.d)
		if s.Consumers != c.consumers || s.MaxRecords != c.records || s.Short != c.short {
			t.Errorf("%s: Size(%+v) = %d consumers × %d records, short %v; want %d × %d, short %v (%s)",
				c.name, c.d, s.Consumers, s.MaxRecords, s.Short, c.consumers, c.records, c.short, s.Why)
		}
		if !s.Short && c.d.RecordLocks > 0 && c.d.Partitions > 0 {
			if budget := c.d.Partitions * c.d.RecordLocks / (max(1, c.d.Instances) * c.d.Workers); s.Consumers*s.MaxRecords > budget {
				t.Errorf("%s: %d × %d is over the budget %d but not short", c.name, s.Consumers, s.MaxRecords, budget)
			}
		}
		for _, w := range c.says {
			if !strings.Contains(s.Why, w) {
				t.Errorf("%s: Why = %q; want it to say %q", c.name, s.Why, w)
			}
		}
	}
}

func TestInstancesAreCountedFromTheClientIDsOfTheirShareConsumers(t *testing.T) {
	self := "sharerelay-orders-a-"
	ids := []string{
		ClientID(self, 0, 0), ClientID(self, 0, 1), // an earlier run of this instance
		ClientID("sharerelay-orders-b-", 0, 0), ClientID("sharerelay-orders-b-", 1, 3),
		ClientID("sharerelay-orders-c-7-", 0, 0), // an instance named "c-7"
		"consumer-orders-1", "rdkafka",
	}
	n, others := InstancesOf(ids, self)
	if n != 3 || others != 2 {
		t.Errorf("InstancesOf = %d instances, %d others; want 3 (a, b, c-7) and 2", n, others)
	}
	if n, _ := InstancesOf(nil, self); n != 1 {
		t.Errorf("InstancesOf(no members) = %d; want this instance alone", n)
	}
	if n, _ := InstancesOf(ids[2:4], ""); n != 2 {
		t.Errorf("InstancesOf(b's members, unnamed self) = %d; want b and the one being checked", n)
	}
}
