package preflight_test

import (
	"net"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kversion"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/sharerelay/sharerelay/config"
	"github.com/sharerelay/sharerelay/internal/kfaketest"
	"github.com/sharerelay/sharerelay/preflight"
)

// sourceACLs are what the source cluster's principal needs: READ on the
// source topic and the share group, ALTER_CONFIGS on the group.
var sourceACLs = []acl{{"topic", "orders", kadm.OpRead}, {"group", "g", kadm.OpRead}, {"group", "g", kadm.OpAlterConfigs}}

// sinkACLs are what the sink cluster's principal needs: everything but
// the source's.
var sinkACLs = slices.DeleteFunc(slices.Clone(everything), func(a acl) bool { return slices.Contains(sourceACLs, a) })

// twoClusters are a source cluster (id "source-id", topic orders, user
// reader) and a sink cluster (id "sink-id", topics jobs and dlq, user
// relay), each with the ACLs its principal needs, and the pipeline p
// reading from the first and writing to the second.
type twoClusters struct {
	src, sink            *fixture
	p                    *config.Pipeline
	sinkOpts, sourceOpts []kgo.Opt
}

func newTwoClusters(t *testing.T, srcTopics ...string) *twoClusters {
	t.Helper()
	if srcTopics == nil {
		srcTopics = []string{"orders"}
	}
	tc := &twoClusters{
		src:  newSecured(t, "reader", kfake.ClusterID("source-id"), kfake.SeedTopics(3, srcTopics...)),
		sink: newSecured(t, "relay", kfake.ClusterID("sink-id"), kfake.SeedTopics(3, "jobs", "dlq")),
	}
	tc.src.grantTo(t, "reader", sourceACLs)
	tc.sink.grant(t, sinkACLs)
	tc.p, tc.sinkOpts = tc.sink.pipeline(relayPassword)
	tc.pointSourceAt(tc.src.c.ListenAddrs(), "reader")
	return tc
}

// pointSourceAt sets the pipeline's source.cluster to the brokers addrs,
// reached as user.
func (tc *twoClusters) pointSourceAt(addrs []string, user string) {
	sc := &config.Cluster{Brokers: addrs}
	sc.SASL.Mechanism, sc.SASL.Username = config.MechanismScramSHA512, user
	tc.p.Source.Cluster = sc
	tc.sourceOpts = []kgo.Opt{kgo.SeedBrokers(addrs...), kgo.SASL(scram.Auth{User: user, Pass: relayPassword}.AsSha512Mechanism())}
}

func (tc *twoClusters) check(t *testing.T) *preflight.Report {
	t.Helper()
	return checkBoth(t, tc.p, tc.sinkOpts, tc.sourceOpts)
}

// lines are the report's lines.
func lines(rep *preflight.Report) []string {
	var out []string
	for _, r := range rep.Results {
		out = append(out, r.String())
	}
	return out
}

// hasLine reports whether a line of rep starts with prefix.
func hasLine(rep *preflight.Report, prefix string) bool {
	return slices.ContainsFunc(lines(rep), func(l string) bool { return strings.HasPrefix(l, prefix) })
}

// A pipeline whose source is on a cluster of its own is checked on both:
// the share group and the source topic on the source cluster as its
// principal, the topics the relay writes and its transactional ids on the
// sink cluster as its own, each line naming its cluster. Each cluster
// holds only its own topics, so a check asked of the wrong one fails.
func TestACrossClusterPipelineIsCheckedOnEachClusterAsItsPrincipal(t *testing.T) {
	tc := newTwoClusters(t)
	rep := tc.check(t)
	for _, r := range rep.Results {
		if r.Status != preflight.OK {
			t.Errorf("%v; want ok", r)
		}
		if r.Check != "acquire mode" && !strings.HasSuffix(r.Check, " (source cluster)") && !strings.HasSuffix(r.Check, " (sink cluster)") && r.Check != "cluster ids" {
			t.Errorf("%v: names no cluster", r)
		}
	}
	for _, want := range []string{
		"ok: brokers (source cluster): 1 in the cluster, reached through " + tc.src.c.ListenAddrs()[0] + " (SASL SCRAM-SHA-512 as reader)",
		"ok: kafka version (source cluster): ",
		"ok: share groups (source cluster): ",
		"ok: source topic orders (source cluster): 3 partitions; READ allowed",
		"ok: share group g (source cluster): READ allowed",
		"ok: share group g configs (source cluster): ALTER_CONFIGS allowed",
		"ok: lock duration (source cluster): ",
		"ok: brokers (sink cluster): 1 in the cluster, reached through " + tc.sink.c.ListenAddrs()[0] + " (SASL SCRAM-SHA-512 as relay)",
		"ok: kafka version (sink cluster): ",
		"ok: transaction.version (sink cluster): finalized at 2",
		"ok: output topic jobs (sink cluster): 3 partitions; WRITE, DESCRIBE_CONFIGS allowed",
		"ok: dead-letter topic dlq (sink cluster): ",
		"ok: ledger topic p.ledger (sink cluster): does not exist yet",
		"ok: replication of output topic jobs (sink cluster): ",
		"ok: transactional ids sharerelay-p-* (sink cluster): WRITE allowed",
		"ok: cluster ids: two clusters: the source cluster is source-id, the sink cluster sink-id",
	} {
		if !hasLine(rep, want) {
			t.Errorf("no line starting %q", want)
		}
	}
	// Each cluster is asked only what it serves.
	for _, notWant := range []string{"transaction.version (source cluster)", "share groups (sink cluster)", "source topic orders (sink cluster)", "output topic jobs (source cluster)"} {
		if slices.ContainsFunc(rep.Results, func(r preflight.Result) bool { return r.Check == notWant }) {
			t.Errorf("a line %q: that cluster is not asked that", notWant)
		}
	}
}

// A permission one cluster's principal lacks fails the line of that
// cluster alone: each principal is checked on its own cluster.
func TestAPermissionMissingOnOneClusterFailsTheLineNamingIt(t *testing.T) {
	for _, c := range []struct {
		name     string
		sink     bool // the permission is the sink principal's
		without  acl
		wantFail string
	}{
		{"the source principal without READ on the group", false, acl{"group", "g", kadm.OpRead},
			"FAIL: share group g (source cluster): not authorized to READ it (GROUP_AUTHORIZATION_FAILED)"},
		{"the source principal without READ on the source topic", false, acl{"topic", "orders", kadm.OpRead},
			"FAIL: source topic orders (source cluster): not authorized to describe it (TOPIC_AUTHORIZATION_FAILED): the relay needs READ on it"},
		{"the sink principal without WRITE on the transactional ids", true, acl{"txn", "sharerelay-p-", kadm.OpWrite},
			`FAIL: transactional ids sharerelay-p-* (sink cluster): not authorized to WRITE them`},
	} {
		t.Run(c.name, func(t *testing.T) {
			src := newSecured(t, "reader", kfake.ClusterID("source-id"), kfake.SeedTopics(3, "orders"))
			sink := newSecured(t, "relay", kfake.ClusterID("sink-id"), kfake.SeedTopics(3, "jobs", "dlq"))
			without := func(acls []acl, drop bool) []acl {
				if !drop {
					return acls
				}
				return slices.DeleteFunc(slices.Clone(acls), func(a acl) bool { return a == c.without })
			}
			src.grantTo(t, "reader", without(sourceACLs, !c.sink))
			sink.grant(t, without(sinkACLs, c.sink))
			tc := &twoClusters{src: src, sink: sink}
			tc.p, tc.sinkOpts = sink.pipeline(relayPassword)
			tc.pointSourceAt(src.c.ListenAddrs(), "reader")
			rep := tc.check(t)
			var fails []string
			for _, l := range lines(rep) {
				if strings.HasPrefix(l, "FAIL") {
					fails = append(fails, l)
				}
			}
			if len(fails) != 1 || !strings.HasPrefix(fails[0], c.wantFail) {
				t.Errorf("failures %q; want exactly one starting %q", fails, c.wantFail)
			}
		})
	}
}

// A source topic missing on the source cluster fails naming that cluster,
// though the sink cluster has a topic of that name.
func TestASourceTopicMissingOnTheSourceClusterFailsNamingIt(t *testing.T) {
	tc := newTwoClusters(t, "other")
	// The sink cluster has an orders topic: the wrong one to ask.
	if _, err := tc.sink.adm.CreateTopic(t.Context(), 1, 1, nil, "orders"); err != nil {
		t.Fatal(err)
	}
	rep := tc.check(t)
	const want = "FAIL: source topic orders (source cluster): does not exist (create it first)"
	if !rep.Failed() || !hasLine(rep, want) {
		t.Errorf("failed %v; want a line %q", rep.Failed(), want)
	}
}

// A cluster out of reach fails its brokers line, naming it and its
// brokers, and skips its own checks; the other cluster is still checked,
// and the clusters' ids are not compared.
func TestAClusterOutOfReachFailsWhileTheOtherIsStillChecked(t *testing.T) {
	for _, c := range []struct {
		down, up string
		upLines  []string
	}{
		{"source cluster", "sink cluster", []string{"ok: brokers (sink cluster): ", "ok: output topic jobs (sink cluster): ", "ok: transactional ids sharerelay-p-* (sink cluster): WRITE allowed"}},
		{"sink cluster", "source cluster", []string{"ok: brokers (source cluster): ", "ok: source topic orders (source cluster): ", "ok: share group g (source cluster): READ allowed"}},
	} {
		t.Run("the "+c.down+" down", func(t *testing.T) {
			tc := newTwoClusters(t)
			dead := closedAddr(t)
			if c.down == "source cluster" {
				tc.pointSourceAt([]string{dead}, "reader")
			} else {
				tc.p.Brokers = []string{dead}
				tc.sinkOpts = append(tc.sinkOpts, kgo.SeedBrokers(dead))
			}
			rep := tc.check(t)
			want := append([]string{
				"FAIL: brokers (" + c.down + "): cannot connect to " + dead + ": ",
				"skipped: everything else (" + c.down + "): no connection to the " + c.down,
			}, c.upLines...)
			for _, w := range want {
				if !hasLine(rep, w) {
					t.Errorf("no line starting %q", w)
				}
			}
			for _, r := range rep.Results {
				if r.Status == preflight.Fail && r.Check != "brokers ("+c.down+")" {
					t.Errorf("%v: only the brokers line of the %s fails", r, c.down)
				}
				if strings.HasSuffix(r.Check, "("+c.down+")") && r.Check != "brokers ("+c.down+")" && r.Status != preflight.Skipped {
					t.Errorf("%v: a check of the cluster out of reach", r)
				}
				if r.Check == "cluster ids" {
					t.Errorf("%v: compared with a cluster out of reach", r)
				}
			}
		})
	}
}

// source.cluster naming the sink cluster through other addresses is one
// cluster: a warning; and when a topic the relay writes has a source
// topic's name, a failure, for the relay would consume its own output.
func TestASourceClusterThatIsTheSinkClusterWarnsAndFailsWhenAnOutputIsASource(t *testing.T) {
	f := newFixture(t, kfake.NumBrokers(2), kfake.ClusterID("one-cluster"))
	f.grant(t, append(everything, acl{"topic", "orders", kadm.OpWrite}, acl{"topic", "orders", kadm.OpDescribeConfigs}))
	p, opts := f.pipeline(relayPassword)
	addrs := f.c.ListenAddrs()
	tc := &twoClusters{sink: f, p: p}
	tc.p.Brokers, tc.sinkOpts = addrs[:1], append(opts, kgo.SeedBrokers(addrs[0]))
	tc.pointSourceAt(addrs[1:], "relay")

	rep := tc.check(t)
	const warn = "warn: cluster ids: source.cluster is the sink cluster (both are one-cluster): one cluster needs no source.cluster, leave it out"
	if rep.Failed() || !hasLine(rep, warn) {
		t.Errorf("failed %v; want no failure and a line %q", rep.Failed(), warn)
	}

	tc.p.Output.Topic = "orders"
	rep = tc.check(t)
	const fail = "FAIL: cluster ids: source.cluster is the sink cluster (both are one-cluster) and output topic orders is a source topic too: the pipeline would consume its own output"
	var fails []string
	for _, l := range lines(rep) {
		if strings.HasPrefix(l, "FAIL") {
			fails = append(fails, l)
		}
	}
	if len(fails) != 1 || !strings.HasPrefix(fails[0], fail) {
		t.Errorf("failures %q; want exactly one starting %q", fails, fail)
	}
}

// closedAddr is an address nothing listens on.
func closedAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return addr
}

// Each cluster is held to the floor of what it serves (brokerfloor.Role):
// a sink cluster of Kafka 4.1, whose share requests are too old for the
// relay's consumers, passes, for no share consumer talks to it; the same
// release as the source cluster fails that cluster's kafka version line.
func TestEachClusterIsHeldToTheFloorOfWhatItServes(t *testing.T) {
	old := kfake.MaxVersions(kversion.V4_1_0())
	for _, c := range []struct {
		name              string
		srcOpts, sinkOpts []kfake.Opt
		// fail and says: the one failing line starts with fail and
		// holds says; "" for no failure.
		fail, says string
	}{
		{name: "a Kafka 4.1 sink cluster passes", sinkOpts: []kfake.Opt{old}},
		{name: "a Kafka 4.1 source cluster fails its kafka version line", srcOpts: []kfake.Opt{old},
			fail: "FAIL: kafka version (source cluster): the brokers are too old (source cluster): ", says: "lack ShareFetch v2"},
	} {
		t.Run(c.name, func(t *testing.T) {
			src := kfaketest.Cluster(t, append([]kfake.Opt{kfake.ClusterID("source-id"), kfake.SeedTopics(1, "orders")}, c.srcOpts...)...)
			sink := kfaketest.Cluster(t, append([]kfake.Opt{kfake.ClusterID("sink-id"), kfake.SeedTopics(1, "jobs", "dlq")}, c.sinkOpts...)...)
			p := &config.Pipeline{Name: "p", Brokers: sink.ListenAddrs(), Delivery: config.ExactlyOnce}
			p.Source.Cluster = &config.Cluster{Brokers: src.ListenAddrs()}
			p.Source.Topics, p.Source.Group = []string{"orders"}, "g"
			p.Output.Topic, p.Output.TransactionTimeout = "jobs", 10*time.Second
			p.DeadLetter.Topic, p.Ledger.Topic = "dlq", "p.ledger"
			rep := checkBoth(t, p, []kgo.Opt{kgo.SeedBrokers(sink.ListenAddrs()...)}, []kgo.Opt{kgo.SeedBrokers(src.ListenAddrs()...)})
			var fails []string
			for _, l := range lines(rep) {
				if strings.HasPrefix(l, "FAIL") {
					fails = append(fails, l)
				}
			}
			switch {
			case c.fail == "" && len(fails) > 0:
				t.Errorf("failures %q; want none", fails)
			case c.fail != "" && (len(fails) != 1 || !strings.HasPrefix(fails[0], c.fail) || !strings.Contains(fails[0], c.says)):
				t.Errorf("failures %q; want exactly one starting %q, saying %q", fails, c.fail, c.says)
			}
			if !hasLine(rep, "ok: transaction.version (sink cluster): finalized at 2") {
				t.Error("no line ok: transaction.version (sink cluster)")
			}
		})
	}
}
