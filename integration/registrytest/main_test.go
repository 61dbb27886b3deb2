package registrytest_test

import (
	"testing"

	"github.com/sharerelay/sharerelay/integration/kafkatest"
)

// TestMain stops the shared registry when the tests end: kafkatest.Run
// calls what registrytest registered with kafkatest.AtExit.
func TestMain(m *testing.M) { kafkatest.Main(m) }
