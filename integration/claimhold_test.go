package integration

import (
	"regexp"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/sharerelay/sharerelay/integration/harness"
	"github.com/sharerelay/sharerelay/internal/failpoint"
)

// An earlier claim of a batch's records that stays unsettled (its marker
// lost with a killed broker, the resolver not done) ends each claim check
// in ClaimWait's timeout. Releasing the records then cost each a delivery
// per ClaimWait: in a CI run of the broker-kill chaos scenario a claim
// stayed unsettled for minutes, 83 records were released on their tenth
// delivery and archived, lost. A failpoint ends every claim check of relay
// a that way: it must hold the records (not ready, "claim blocked"),
// release none on its last delivery, and relay b, started once a stops,
// relays every record exactly once.
func TestRealBrokerRecordsBlockedByAnUnsettledClaimAreHeldNotReleased(t *testing.T) {
	seeds := seedsFor(t)
	const n = 200
	addr := metricsAddr(t)
	p := newPipe(t, seeds, harness.PipelineOptions{Workers: 1, MaxRecords: 50, MetricsListen: addr})
	seedOrders(t, p, 1, n)
	a := startRelay(t, p, "a", fp(failpoint.ClaimWaitTimeout+"=error"))
	// Long enough for ten release-and-redeliver rounds had the records
	// been released (each round is a claim check that fails at once).
	time.Sleep(20 * time.Second)
	_, body := get(addr, "/metrics")
	released := 0.0
	for _, m := range regexp.MustCompile(`(?m)^sharerelay_released_on_last_delivery_total\{[^}]*\} (\S+)$`).FindAllStringSubmatch(body, -1) {
		v, _ := strconv.ParseFloat(m[1], 64)
		released += v
	}
	if released != 0 {
		t.Fatalf("relay a released %v records on their last delivery while their claim was blocked", released)
	}
	waitHTTP(t, addr, "/readyz", 503, "claim blocked", 10*time.Second)
	_ = a.Signal(syscall.SIGTERM)
	if code, err := a.Wait(30 * time.Second); err != nil || code != 0 {
		t.Fatalf("relay a after SIGTERM: exit %d, %v", code, err)
	}
	startRelay(t, p, "b")
	exactlyOnce(t, settled(t, p, n, 2*time.Minute), n, 0)
}
