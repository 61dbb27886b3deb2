package kafkatest_test

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/sharerelay/sharerelay/integration/kafkatest"
	"github.com/sharerelay/sharerelay/internal/kfaketest"
)

// TestAdminReachesTheClusterWithinItsDeadline runs against kfake, so that
// it is checked by every `go test -short`.
func TestAdminReachesTheClusterWithinItsDeadline(t *testing.T) {
	c := kfaketest.Cluster(t, kfake.SeedTopics(2, "orders"))
	adm, ctx := kafkatest.Admin(t, c.ListenAddrs())
	if d, ok := ctx.Deadline(); !ok || time.Until(d) > 30*time.Second || time.Until(d) < 20*time.Second {
		t.Errorf("context deadline %v (set: %v); want about 30s from now", d, ok)
	}
	td, err := adm.ListTopics(ctx, "orders")
	if err != nil {
		t.Fatal(err)
	}
	if n := len(td["orders"].Partitions); n != 2 {
		t.Errorf("orders has %d partitions, want 2", n)
	}
}

// TestAtExitRegistersWhileTheTestsRunUnderMain: this binary's TestMain
// is kafkatest.Main, so a helper may register its clean-up; Run calls it
// after the tests, which no test can observe from inside.
func TestAtExitRegistersWhileTheTestsRunUnderMain(t *testing.T) {
	if !kafkatest.AtExit(func(bool) {}) {
		t.Fatal("AtExit refused a function while the tests run under kafkatest.Main")
	}
}
