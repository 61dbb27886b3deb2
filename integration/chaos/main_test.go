package chaos

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	toxiproxy "github.com/Shopify/toxiproxy/v2"
	"github.com/rs/zerolog"

	"github.com/sharerelay/sharerelay/integration/harness"
	"github.com/sharerelay/sharerelay/integration/kafkatest"
)

// maxRelays is the number of relay slots: proxied listeners, proxies and
// at most this many relay processes at once (2 cores).
const maxRelays = 3

// relayBin is the relay binary every scenario runs as processes.
var relayBin string

func TestMain(m *testing.M) {
	flag.Parse()
	bin, cleanup, err := harness.BuildRelay(context.Background())
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	relayBin = bin
	code := m.Run()
	closeEnv(code != 0)
	writeReport()
	cleanup()
	os.Exit(code)
}

// env is where the scenarios run: the harness's own broker behind one
// Toxiproxy proxy per relay slot, or an external cluster without proxies.
type env struct {
	// direct are the seeds of the harness's own clients (seeding,
	// lag, the concurrent reader, the verifier): never proxied.
	direct []string
	// slots are the seeds of relay slot i: its proxy, or direct.
	slots []string
	// local is set when the harness started the broker itself; then
	// broker and proxies are set.
	local   bool
	broker  *kafkatest.Broker
	proxies []*toxiproxy.Proxy
}

// needs says what a scenario needs beyond a broker.
type needs int

const (
	// needProxy: network faults between relays and broker.
	needProxy needs = 1 << iota
	// needBroker: killing and restarting the broker.
	needBroker
)

var (
	envOnce sync.Once
	envVal  *env
	envErr  error
)

// chaosEnv returns the environment, starting the broker and the proxies on
// first use. It skips (or, with SHARERELAY_REQUIRE_BROKER=1 and no
// external cluster, fails) when there is no broker to use.
func chaosEnv(t *testing.T, n needs) *env {
	t.Helper()
	require := os.Getenv(kafkatest.EnvRequireBroker) == "1"
	if testing.Short() {
		if require {
			t.Fatal("chaos test under -short with SHARERELAY_REQUIRE_BROKER=1")
		}
		t.Skip("chaos test skipped under -short")
	}
	if seeds := kafkatest.ExternalSeeds(); len(seeds) > 0 {
		// The operator chose an external cluster: the harness cannot
		// put a proxy between the relays and it (the brokers advertise
		// themselves) nor restart it. Not a failure even when the broker
		// is required: the local broker was not to be used.
		if n&needProxy != 0 {
			t.Skipf("needs network faults: the harness's own broker advertises a listener through Toxiproxy; %s points at an external cluster whose advertised addresses bypass any proxy", kafkatest.EnvBootstrap)
		}
		if n&needBroker != 0 {
			t.Skipf("needs to kill and restart the broker; %s points at an external cluster", kafkatest.EnvBootstrap)
		}
		return &env{direct: seeds, slots: []string{strings.Join(seeds, ","), strings.Join(seeds, ","), strings.Join(seeds, ",")}}
	}
	envOnce.Do(func() { envVal, envErr = startEnv() })
	if envErr != nil {
		if errors.Is(envErr, kafkatest.ErrToolMissing) && !require {
			t.Skipf("no Kafka broker (set %s, or install java and mvn): %v", kafkatest.EnvBootstrap, envErr)
		}
		t.Fatalf("chaos: starting the broker and proxies: %v", envErr)
	}
	if !envVal.broker.Running() {
		t.Fatalf("chaos: the broker is not running (a previous scenario left it down)")
	}
	return envVal
}

// startEnv starts one proxy per relay slot and a broker with a direct
// PLAINTEXT listener plus one listener per slot that advertises that
// slot's proxy. Clients that bootstrap through a proxy get the proxy's
// address back in every metadata response, so all their connections go
// through it; the harness's clients use the direct listener and never
// see a fault.
func startEnv() (*env, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	defer cancel()
	srv := toxiproxy.NewServer(toxiproxy.NewMetricsContainer(nil), zerolog.Nop())
	var lastErr error
	for attempt := 0; attempt < 3; attempt++ {
		proxyAddrs := make([]string, maxRelays)
		ls := make([]kafkatest.Listener, maxRelays)
		for i := range proxyAddrs {
			p, err := kafkatest.FreePort()
			if err != nil {
				return nil, err
			}
			proxyAddrs[i] = fmt.Sprintf("127.0.0.1:%d", p)
			ls[i] = kafkatest.Listener{Name: fmt.Sprintf("RELAY%d", i), Advertised: proxyAddrs[i]}
		}
		opts, ls, err := kafkatest.WithListeners(kafkatest.Options{Properties: brokerProperties()}, ls...)
		if err != nil {
			return nil, err
		}
		e := &env{local: true}
		for i, l := range ls {
			px := toxiproxy.NewProxy(srv, fmt.Sprintf("relay%d", i), proxyAddrs[i], fmt.Sprintf("127.0.0.1:%d", l.Port))
			if err := px.Start(); err != nil {
				lastErr = fmt.Errorf("starting proxy %s: %w", proxyAddrs[i], err)
				break
			}
			e.proxies = append(e.proxies, px)
			e.slots = append(e.slots, proxyAddrs[i])
		}
		if len(e.proxies) != maxRelays {
			stopProxies(e.proxies)
			continue
		}
		b, err := kafkatest.StartLocal(ctx, opts)
		if err != nil {
			stopProxies(e.proxies)
			lastErr = err
			if errors.Is(err, kafkatest.ErrToolMissing) {
				return nil, err
			}
			continue
		}
		e.broker = b
		e.direct = []string{b.Addr()}
		fmt.Fprintf(os.Stderr, "chaos: broker %s (log %s), relay proxies %v\n", b.Addr(), b.LogPath(), e.slots)
		return e, nil
	}
	return nil, lastErr
}

// brokerProperties are the chaos broker's overrides of kafkatest's test
// defaults.
func brokerProperties() map[string]string {
	return map[string]string{
		// The relays' groups raise share.delivery.count.limit to 10
		// (the broker's maximum by default) so that the faults do not
		// use up every delivery of a record; keep the maximum explicit.
		"group.share.max.delivery.count.limit": "10",
	}
}

func stopProxies(ps []*toxiproxy.Proxy) {
	for _, p := range ps {
		p.Stop()
	}
}

// closeEnv stops the broker and the proxies. When tests failed the
// broker directory is kept for its log.
func closeEnv(failed bool) {
	if envVal == nil {
		return
	}
	stopProxies(envVal.proxies)
	b := envVal.broker
	if err := b.Stop(); err != nil {
		fmt.Fprintf(os.Stderr, "chaos: stopping the broker: %v\n", err)
	}
	if failed {
		fmt.Fprintf(os.Stderr, "chaos: tests failed; broker log kept at %s\n", b.LogPath())
		return
	}
	os.RemoveAll(b.Dir())
}
