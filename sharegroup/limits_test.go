package sharegroup

import "testing"

// TestAnInstancesShareConsumersStayBelowTheDeliveryLimit: a crash can
// cost a record one delivery per share consumer of the instance (Kafka 4.3
// hands the released records to the dead instance's other waiting
// fetches), so workers × consumers is kept below the group's delivery
// limit, with at least one consumer a worker.
func TestAnInstancesShareConsumersStayBelowTheDeliveryLimit(t *testing.T) {
	for _, c := range []struct{ workers, want, limit, got int }{
		{1, 4, 5, 4}, // the defaults: 4 consumers, one crash costs at most 4 of 5
		{2, 4, 5, 2}, // 8 would let a crash use every delivery
		{2, 2, 5, 2},
		{3, 4, 5, 1},
		{12, 4, 5, 1}, // workers alone reach the limit: one each (and a warning)
		{2, 4, 10, 4}, // a raised limit keeps what was asked
		{2, 8, 10, 4},
		{1, 16, 2, 1},
	} {
		if got := ConsumersPerWorker(c.workers, c.want, c.limit); got != c.got {
			t.Errorf("%d workers asking %d consumers, delivery limit %d: %d consumers each, want %d", c.workers, c.want, c.limit, got, c.got)
		}
		if got := ConsumersPerWorker(c.workers, c.want, c.limit); c.workers < c.limit && c.workers*got >= c.limit {
			t.Errorf("%d workers × %d consumers reach the delivery limit %d", c.workers, got, c.limit)
		}
	}
}
