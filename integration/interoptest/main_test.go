package interoptest_test

import (
	"testing"

	"github.com/sharerelay/sharerelay/integration/kafkatest"
)

// TestMain stops the broker and the registry the tests started.
func TestMain(m *testing.M) { kafkatest.Main(m) }
