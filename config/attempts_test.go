package config

import "testing"

// One crash can cost a record two deliveries on Kafka 4.3 (the one held and
// one a share fetch left waiting in the broker acquires for the dead
// connection): the default keeps two spares whenever the limit leaves an
// attempt after them.
func TestDefaultMaxAttemptsKeepsTwoSpareDeliveries(t *testing.T) {
	for _, c := range []struct{ limit, want int }{
		{1, 1}, {2, 1}, {3, 2}, {4, 2}, {5, 3}, {10, 8},
	} {
		if got := DefaultMaxAttempts(c.limit); got != c.want {
			t.Errorf("DefaultMaxAttempts(%d) = %d, want %d", c.limit, got, c.want)
		}
	}
}
