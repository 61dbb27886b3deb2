package integration

import (
	"context"
	"errors"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	toxiproxy "github.com/Shopify/toxiproxy/v2"
	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/sharerelay/sharerelay/integration/harness"
	"github.com/sharerelay/sharerelay/integration/kafkatest"
)

// A pipeline across two clusters (the file's source.cluster): the share
// group and its source on one Kafka cluster, the outputs, dead letters and
// claim ledger on another, independent one (kafkatest.SecondBroker beside
// the binary's broker, each its own KRaft cluster). Each test streams
// orders through two relay processes and ends with every order exactly
// once (the harness reads the output on the sink and the share group's lag
// on the source), relay verify exit 0, and nothing of the pipeline written
// to the source cluster. The fault tests also show the relays met the
// fault.
//
// CI runs the tests named TestRealCrossClusterCI*; the others run with
// SHARERELAY_CLUSTER_TESTS=all (make cluster-tests).

// crossPipe creates a pipeline whose source is on the cluster of source
// and whose outputs are on the cluster of sink, with a metrics endpoint
// per relay and lock renewal on (as the relay's default).
func crossPipe(t *testing.T, sink, source []string, o harness.PipelineOptions) *harness.Pipeline {
	t.Helper()
	o.SourceSeeds, o.RenewLocks, o.MetricsListen = source, true, "${SHARERELAY_TEST_METRICS:-}"
	return newPipe(t, sink, o)
}

// finishCross is finish (exactly once, relay verify) plus the check that
// each cluster holds only its side of the pipeline: the source cluster
// the source topic and nothing the relay wrote (no output, dead letter or
// ledger), the sink cluster no source topic.
func finishCross(r *clusterRun) counters {
	r.t.Helper()
	c := r.finish()
	p := r.p
	// relay verify read each side on its own cluster, and says so.
	if cl := r.verified.Clusters; cl == nil || cl.Source != strings.Join(p.SourceBrokers, ",") || cl.Sink != strings.Join(p.Brokers, ",") {
		r.t.Errorf("relay verify's report names the clusters %+v; want source %v and sink %v", cl, p.SourceBrokers, p.Brokers)
	}
	for _, side := range []struct {
		name  string
		seeds []string
		want  map[string]bool
	}{
		{"source", p.SourceSeeds, map[string]bool{p.Source: true}},
		{"sink", p.Seeds, map[string]bool{p.Output: true, p.DeadLetter: true, p.Ledger: true, p.Ledger + ".snapshots": true}},
	} {
		adm, ctx := kafkatest.Admin(r.t, side.seeds)
		td, err := adm.ListTopics(ctx)
		if err != nil {
			r.t.Fatalf("listing the %s cluster's topics: %v", side.name, err)
		}
		for _, name := range td.Names() {
			if strings.HasPrefix(name, p.Name+".") && !side.want[name] {
				r.t.Errorf("the %s cluster has topic %s, which belongs to the other cluster", side.name, name)
			}
		}
	}
	return c
}

// A BookNest pipeline (configs/booknest-packing.yaml's chain: a
// dead letter every 500th order, a release of every 7th on its first
// delivery) with its share group on one cluster and its outputs on
// another, two relay processes, orders streaming in.
func TestRealCrossClusterCIBookNestExactlyOnce(t *testing.T) {
	sink := seedsFor(t)
	source := kafkatest.SecondBroker(t)
	const n = 4000
	p := crossPipe(t, sink, []string{source.Addr()}, harness.PipelineOptions{Workers: 2, Transforms: bookNestTransforms})
	r := startStreamRun(t, p, n, 8*time.Second)
	r.shareBroker, r.wantDLQ = source, n/500
	c := finishCross(r)
	o, err := measure(t, p)
	if err != nil {
		t.Fatal(err)
	}
	if o.Jobs.Records != n-n/500 {
		t.Fatalf("packing jobs = %d, want %d", o.Jobs.Records, n-n/500)
	}
	t.Logf("%v; relays met: %v", o, c)
}

// The source cluster's broker is killed -9 mid-stream and restarted: the
// share group, its acquisitions and its acknowledgements go down with it,
// while the sink keeps taking the relays' transactions.
func TestRealCrossClusterSourceBrokerKilled(t *testing.T) {
	clusterTestsAll(t)
	sink := seedsFor(t)
	source := kafkatest.SecondBroker(t)
	p := crossPipe(t, sink, []string{source.Addr()}, harness.PipelineOptions{Workers: 2})
	r := startStreamRun(t, p, clusterRecords, 20*time.Second)
	r.shareBroker = source
	before := r.counters()
	killAndRestart(t, source, "the source cluster's broker")
	after := finishCross(r)
	met := subtract(after, before)
	t.Logf("relays met: %v", met)
	if met.sourceDisruptions == 0 {
		t.Fatalf("the share consumers met nothing of the source broker's kill: %v", met)
	}
}

// The sink cluster's broker (outputs, dead letters, ledger, transaction
// coordinator) is killed -9 mid-stream and restarted, while the share
// group's cluster runs on.
func TestRealCrossClusterSinkBrokerKilled(t *testing.T) {
	clusterTestsAll(t)
	seedsFor(t)
	sink := kafkatest.LocalBroker(t)
	source := kafkatest.SecondBroker(t)
	p := crossPipe(t, []string{sink.Addr()}, []string{source.Addr()}, harness.PipelineOptions{Workers: 2})
	r := startStreamRun(t, p, clusterRecords, 20*time.Second)
	r.shareBroker = source
	before := r.counters()
	killAndRestart(t, sink, "the sink cluster's broker")
	// A single node killed while commit markers were being written may
	// have dropped them (kafkatest.Broker.Kill); a replicated cluster
	// would have delivered them.
	repairHanging(t, p)
	after := finishCross(r)
	met := subtract(after, before)
	t.Logf("relays met: %v", met)
	if !met.met() {
		t.Fatalf("the relays met nothing of the kill: %v", met)
	}
}

// killAndRestart kills b with SIGKILL, leaves it down for 5 s and starts
// it again on its data.
func killAndRestart(t *testing.T, b *kafkatest.Broker, what string) {
	t.Helper()
	if err := b.Kill(); err != nil {
		t.Fatal(err)
	}
	down := time.Now()
	time.Sleep(5 * time.Second)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := b.Start(ctx); err != nil {
		t.Fatalf("restarting %s: %v", what, err)
	}
	t.Logf("%s killed -9, back after %s", what, time.Since(down).Round(100*time.Millisecond))
}

// cuttable is a broker of a test's own whose relays reach it through a
// proxy the test can cut: its RELAY listener advertises the proxy, so a
// client that bootstraps through the proxy keeps using it, while the
// harness's clients use the PLAINTEXT listener and never see the cut.
type cuttable struct {
	b  *kafkatest.Broker
	px *toxiproxy.Proxy
}

// startCuttable starts a broker, a cluster of its own named name, behind a
// proxy of srv. Both stop when the test ends; the broker's directory is
// kept when the test failed.
func startCuttable(t *testing.T, srv *toxiproxy.ApiServer, name string) *cuttable {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	var last error
	for range 3 { // a port picked may be taken before the broker binds it
		pp, err := kafkatest.FreePort()
		if err != nil {
			t.Fatal(err)
		}
		lp, err := kafkatest.FreePort()
		if err != nil {
			t.Fatal(err)
		}
		proxyAddr := "127.0.0.1:" + strconv.Itoa(pp)
		opts, _, err := kafkatest.WithListeners(kafkatest.Options{ClusterID: kafkatest.NamedClusterID(name)},
			kafkatest.Listener{Name: "RELAY", Port: lp, Advertised: proxyAddr})
		if err != nil {
			t.Fatal(err)
		}
		px := toxiproxy.NewProxy(srv, name, proxyAddr, "127.0.0.1:"+strconv.Itoa(lp))
		if last = px.Start(); last != nil {
			continue
		}
		b, err := kafkatest.StartLocal(ctx, opts)
		if last = err; err != nil {
			px.Stop()
			continue
		}
		t.Cleanup(func() {
			px.Stop()
			if err := b.Stop(); err != nil {
				t.Logf("stopping broker %s: %v", name, err)
			}
			if t.Failed() {
				t.Logf("broker %s's log kept at %s", name, b.LogPath())
			} else {
				os.RemoveAll(b.Dir())
			}
		})
		return &cuttable{b: b, px: px}
	}
	if errors.Is(last, kafkatest.ErrToolMissing) && os.Getenv(kafkatest.EnvRequireBroker) != "1" {
		t.Skipf("no JVM broker (install java and mvn): %v", last)
	}
	t.Fatalf("starting broker %s behind a proxy: %v", name, last)
	return nil
}

// waitNotReadyWith waits until a relay's /readyz answers 503 with a reason
// matching re, and returns it; it fails the test with every 503 answer
// seen otherwise.
func (r *clusterRun) waitNotReadyWith(re *regexp.Regexp, d time.Duration) string {
	r.t.Helper()
	deadline := time.Now().Add(d)
	seen := map[string]bool{}
	var order []string
	for {
		for inst, a := range r.addrs {
			code, body := get(a, "/readyz")
			if code != 503 {
				continue
			}
			body = strings.TrimSpace(body)
			if re.MatchString(body) {
				if len(order) > 0 {
					r.t.Logf("not-ready reasons before one named %q:\n%s", re, strings.Join(order, "\n"))
				}
				return inst + ": " + body
			}
			// The durations in a reason change every second.
			key := regexp.MustCompile(`for \d+s`).ReplaceAllString(body, "for Ns")
			if !seen[key] {
				seen[key] = true
				order = append(order, inst+": "+body)
			}
		}
		if time.Now().After(deadline) {
			r.t.Fatalf("no relay reported not ready naming %q within %s; its not-ready reasons were:\n%s", re, d, strings.Join(order, "\n"))
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// The relays are cut from one cluster at a time by a proxy while the
// other works: first from the source cluster (their share consumers and
// acknowledgements), then from the sink (their producers and ledger).
// Each time the relays go not ready with a reason naming the cluster they
// lost, hold what they have (while the sink is gone they renew the locks
// of the records they hold on the source, for longer than a lock lasts),
// and resume by themselves once the cut heals; in the end every order is
// there exactly once.
func TestRealCrossClusterRelayCutFromOneCluster(t *testing.T) {
	clusterTestsAll(t)
	seedsFor(t)
	srv := toxiproxy.NewServer(toxiproxy.NewMetricsContainer(nil), zerolog.Nop())
	source, sink := startCuttable(t, srv, "cut-source"), startCuttable(t, srv, "cut-sink")
	p := crossPipe(t, []string{sink.b.Addr()}, []string{source.b.Addr()}, harness.PipelineOptions{
		Workers: 2, Brokers: []string{sink.px.Listen}, SourceBrokers: []string{source.px.Listen},
	})
	r := startStreamRun(t, p, clusterRecords, 30*time.Second)
	r.shareBroker = source.b

	cut := func(c *cuttable, side string, re *regexp.Regexp, hold time.Duration) counters {
		t.Helper()
		before := r.counters()
		c.px.Stop()
		began := time.Now()
		reason := r.waitNotReadyWith(re, time.Minute)
		t.Logf("cut from the %s cluster: not ready after %s: %s", side, time.Since(began).Round(100*time.Millisecond), reason)
		time.Sleep(hold)
		during := subtract(r.counters(), before)
		for inst, a := range r.addrs {
			code, body := get(a, "/readyz")
			t.Logf("relay %s after %s cut from the %s cluster: /readyz %d %s", inst, time.Since(began).Round(time.Second), side, code, strings.TrimSpace(body))
		}
		if err := c.px.Start(); err != nil {
			t.Fatalf("healing the cut from the %s cluster: %v", side, err)
		}
		healed := time.Now()
		r.waitReady(2 * time.Minute)
		mid := r.sum("sharerelay_records_produced_total", "")
		r.waitProduced(int64(mid)+200, time.Minute)
		t.Logf("the %s cluster back: ready and writing again after %s; during the cut the relays met: %v", side, time.Since(healed).Round(100*time.Millisecond), during)
		return during
	}

	cut(source, "source", regexp.MustCompile(`(?i)source[ .]cluster`), 5*time.Second)
	// Longer than a record lock (15 s on the test brokers): the records
	// the relays hold outlive their locks unless renewed.
	during := cut(sink, "sink", regexp.MustCompile(`(?i)sink[ .]cluster`), 20*time.Second)
	if during.renewed == 0 {
		t.Errorf("no lock renewed while the relays held records with the sink cut for 20 s: %v", during)
	}
	if got := r.sum("sharerelay_released_on_last_delivery_total", ""); got != 0 {
		t.Errorf("%.0f records released on their last delivery over the cuts", got)
	}
	t.Logf("relays met: %v", finishCross(r))
}

// The sink cluster is secured (SASL_SSL with SCRAM-SHA-512 and ACLs: the
// relay's principal may write and read the outputs, dead letters and
// ledger there and nothing of the source) while the source cluster is
// PLAINTEXT: each cluster gets the security its own section of the file
// gives, the relay's and relay verify's clients alike.
func TestRealCrossClusterCISecuredSinkPlaintextSource(t *testing.T) {
	b, s := securedBrokerFor(t)
	source := kafkatest.SecondBroker(t)
	sink := []string{b.Addr()}
	const user = "relay-cross"
	password := "cross-" + topicSalt()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := s.AddSCRAMUsers(ctx, sink, map[string]string{user: password}); err != nil {
		t.Fatal(err)
	}
	const n = 2000
	p := crossPipe(t, sink, []string{source.Addr()}, harness.PipelineOptions{
		Workers: 2, Transforms: bookNestTransforms,
		Brokers: []string{s.SASLSSLAddr()}, Security: scramSecurity(s.CAFile, "SCRAM-SHA-512", user, password),
	})
	// READ on the outputs and dead letters, for relay verify (and the
	// relay's recommended check of what a broker crash left open).
	setPermissions(t, sink, "User:"+user, append(sinkPermissions(p),
		permission{"topic", p.Output, kadm.OpRead, false}, permission{"topic", p.DeadLetter, kadm.OpRead, false}))
	r := startStreamRun(t, p, n, 5*time.Second)
	r.shareBroker, r.wantDLQ = source, n/500
	c := finishCross(r)
	for inst, pr := range r.relays {
		if strings.Contains(pr.LogTail(1<<20), password) {
			t.Errorf("relay %s's log shows the sink's password", inst)
		}
	}
	t.Logf("relays met: %v", c)
}

// sinkPermissions are relayPermissions less those of the source topic and
// the share group: what the relay's principal needs on the sink cluster
// of a pipeline whose source is on another.
func sinkPermissions(p *harness.Pipeline) []permission {
	var out []permission
	for _, a := range relayPermissions(p) {
		if a.kind == "group" || a.kind == "topic" && a.name == p.Source {
			continue
		}
		out = append(out, a)
	}
	return out
}

// relay check on a pipeline across two clusters: the source cluster
// (PLAINTEXT) is asked for the source topic and the share group, the
// secured sink cluster (mutual TLS, ACLs) for the topics the relay writes
// and its transactional ids as the certificate's principal, every line
// naming its cluster and the clusters' ids compared. With WRITE on the
// transactional ids taken from the sink's principal, the one failure is
// that line of the sink cluster.
func TestRealCrossClusterCICheckAsksEachClusterAsItsPrincipal(t *testing.T) {
	b, s := securedBrokerFor(t)
	source := kafkatest.SecondBroker(t)
	sink := []string{b.Addr()}
	p := crossPipe(t, sink, []string{source.Addr()}, harness.PipelineOptions{
		Workers: 2, Brokers: []string{s.SSLAddr()}, Security: mtlsSecurity(s),
	})
	principal := "User:CN=" + mtlsCN
	setPermissions(t, sink, principal, sinkPermissions(p))

	code, out := relayCheck(t, p)
	t.Logf("relay check (exit %d):\n%s", code, out)
	if code != 0 {
		t.Fatalf("relay check exit %d, want 0", code)
	}
	for _, want := range []string{
		"ok: brokers (source cluster): 1 in the cluster, reached through " + source.Addr() + " (plaintext, no authentication)",
		"ok: share groups (source cluster): ",
		"ok: source topic " + p.Source + " (source cluster): ",
		"ok: share group " + p.Group + " (source cluster): READ allowed",
		"ok: brokers (sink cluster): 1 in the cluster, reached through " + s.SSLAddr() + " (TLS, client certificate CN=" + mtlsCN + ")",
		"ok: transaction.version (sink cluster): finalized at 2",
		"ok: output topic " + p.Output + " (sink cluster): ",
		"ok: ledger topic " + p.Ledger + " (sink cluster): ",
		"ok: transactional ids sharerelay-" + p.Name + "-* (sink cluster): WRITE allowed",
		"ok: cluster ids: two clusters: the source cluster is " + kafkatest.NamedClusterID("second") + ", the sink cluster " + kafkatest.NamedClusterID("secured"),
	} {
		if !hasCheckLine(out, want) {
			t.Errorf("relay check has no line starting %q", want)
		}
	}

	var perms []permission
	for _, a := range sinkPermissions(p) {
		if a.kind != "transactional-id" {
			perms = append(perms, a)
		}
	}
	setPermissions(t, sink, principal, perms)
	code, out = relayCheck(t, p)
	var fails []string
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(l, "FAIL") {
			fails = append(fails, l)
		}
	}
	want := "FAIL: transactional ids sharerelay-" + p.Name + "-* (sink cluster): not authorized to WRITE them"
	if code != 1 || len(fails) != 1 || !strings.HasPrefix(fails[0], want) {
		t.Errorf("relay check without WRITE on the transactional ids: exit %d, failures %q; want exit 1 and one failure starting %q\n%s", code, fails, want, out)
	}
}

// hasCheckLine reports whether a line of relay check's output starts with
// prefix.
func hasCheckLine(out, prefix string) bool {
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(l, prefix) {
			return true
		}
	}
	return false
}
