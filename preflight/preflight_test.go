package preflight_test

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/sharerelay/sharerelay/config"
	"github.com/sharerelay/sharerelay/preflight"
	"github.com/sharerelay/sharerelay/sharegroup"
)

const relayPassword = "s3cret-relay-pw"

// fixture is a kfake cluster with SASL and ACLs: a super user for the
// test's admin client and a SCRAM user "relay" with no ACL yet.
type fixture struct {
	c   *kfake.Cluster
	adm *kadm.Client
}

// newFixture starts the fixture's cluster: one broker, unless opts say
// otherwise (kfake.NumBrokers), and the topics orders, jobs and dlq, each
// replicated to every broker up to 3.
func newFixture(t *testing.T, opts ...kfake.Opt) *fixture {
	t.Helper()
	return newSecured(t, "relay", append([]kfake.Opt{kfake.SeedTopics(3, "orders", "jobs", "dlq")}, opts...)...)
}

// newSecured starts a cluster with SASL and ACLs, one broker unless opts
// say otherwise: a super user for the test's admin client and a SCRAM
// user with password relayPassword and no ACL yet.
func newSecured(t *testing.T, user string, opts ...kfake.Opt) *fixture {
	t.Helper()
	c, err := kfake.NewCluster(append([]kfake.Opt{kfake.NumBrokers(1), kfake.EnableSASL(), kfake.EnableACLs(),
		kfake.Superuser("SCRAM-SHA-256", "admin", "admin")}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...), kgo.SASL(scram.Auth{User: "admin", Pass: "admin"}.AsSha256Mechanism()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	f := &fixture{c: c, adm: kadm.NewClient(cl)}
	res, err := f.adm.AlterUserSCRAMs(context.Background(), nil, []kadm.UpsertSCRAM{{User: user, Mechanism: kadm.ScramSha512, Iterations: 4096, Password: relayPassword}})
	if err == nil {
		err = res.Error()
	}
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// acl is one permission of User:relay.
type acl struct {
	kind string // topic, group, txn
	name string
	op   kadm.ACLOperation
}

// everything is what the relay needs for pipeline(): docs/operations.md's table.
var everything = []acl{
	{"topic", "orders", kadm.OpRead},
	{"topic", "jobs", kadm.OpWrite}, {"topic", "jobs", kadm.OpDescribeConfigs},
	{"topic", "dlq", kadm.OpWrite}, {"topic", "dlq", kadm.OpDescribeConfigs},
	{"topic", "p.ledger", kadm.OpRead}, {"topic", "p.ledger", kadm.OpWrite}, {"topic", "p.ledger", kadm.OpCreate}, {"topic", "p.ledger", kadm.OpDescribeConfigs},
	{"topic", "p.ledger.snapshots", kadm.OpRead}, {"topic", "p.ledger.snapshots", kadm.OpWrite}, {"topic", "p.ledger.snapshots", kadm.OpCreate}, {"topic", "p.ledger.snapshots", kadm.OpDescribeConfigs},
	{"group", "g", kadm.OpRead}, {"group", "g", kadm.OpAlterConfigs},
	{"txn", "sharerelay-p-", kadm.OpWrite},
}

func (f *fixture) grant(t *testing.T, acls []acl) {
	t.Helper()
	f.grantTo(t, "relay", acls)
}

// grantTo grants acls to User:user.
func (f *fixture) grantTo(t *testing.T, user string, acls []acl) {
	t.Helper()
	for _, a := range acls {
		b := kadm.NewACLs().Allow("User:" + user).AllowHosts().Operations(a.op)
		switch a.kind {
		case "topic":
			b.Topics(a.name)
		case "group":
			b.Groups(a.name)
		case "txn":
			b.TransactionalIDs(a.name).ResourcePatternType(kadm.ACLPatternPrefixed)
		}
		res, err := f.adm.CreateACLs(context.Background(), b)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range res {
			if r.Err != nil {
				t.Fatalf("granting %v: %v", a, r.Err)
			}
		}
	}
}

// pipeline is an exactly-once pipeline p on the fixture, connecting as
// relay with password.
func (f *fixture) pipeline(password string) (*config.Pipeline, []kgo.Opt) {
	p := &config.Pipeline{Name: "p", Brokers: f.c.ListenAddrs(), Delivery: config.ExactlyOnce}
	p.Source.Topics, p.Source.Group = []string{"orders"}, "g"
	p.Source.AutoOffsetReset, p.Source.IsolationLevel = "earliest", "read_committed"
	// kfake ignores group lock durations; the file's value is the one
	// the relay would set.
	p.Source.GroupConfigs = map[string]string{"share.record.lock.duration.ms": "30000"}
	p.Output.Topic, p.Output.TransactionTimeout = "jobs", 10*time.Second
	p.DeadLetter.Topic = "dlq"
	p.Ledger.Topic = "p.ledger"
	p.SASL.Mechanism, p.SASL.Username = config.MechanismScramSHA512, "relay"
	return p, []kgo.Opt{kgo.SeedBrokers(f.c.ListenAddrs()...), kgo.SASL(scram.Auth{User: "relay", Pass: password}.AsSha512Mechanism())}
}

func check(t *testing.T, p *config.Pipeline, opts []kgo.Opt) *preflight.Report {
	t.Helper()
	return checkBoth(t, p, opts, nil)
}

// checkBoth runs relay check's checks with the sink's and the source's
// client options, and logs its lines.
func checkBoth(t *testing.T, p *config.Pipeline, sinkOpts, sourceOpts []kgo.Opt) *preflight.Report {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	rep := preflight.Check(ctx, p, sinkOpts, sourceOpts)
	var b strings.Builder
	rep.Print(&b)
	t.Logf("relay check:\n%s", b.String())
	return rep
}

func TestAPrincipalWithTheDocumentedPermissionsPassesAndNothingChanges(t *testing.T) {
	f := newFixture(t)
	f.grant(t, everything)
	p, opts := f.pipeline(relayPassword)
	rep := check(t, p, opts)
	for _, r := range rep.Results {
		if r.Status != preflight.OK {
			t.Errorf("%v; want ok", r)
		}
	}
	if rep.Failed() {
		t.Error("Failed() = true, want false")
	}
	// Validate-only requests: no ledger created, no group config set.
	ctx := context.Background()
	td, err := f.adm.ListTopics(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if td.Has("p.ledger") || td.Has("p.ledger.snapshots") {
		t.Error("check created the ledger topics")
	}
	rcs, err := f.adm.DescribeTopicConfigs(ctx, "orders")
	if err != nil || len(rcs) != 1 {
		t.Fatalf("describe: %v", err)
	}
}

func TestEachMissingPermissionFailsTheCheckThatNamesIt(t *testing.T) {
	for _, tc := range []struct {
		name    string
		without acl
		plus    []acl
		want    string // the FAIL line starts so
	}{
		{"a source topic the principal cannot even describe is named with READ",
			acl{"topic", "orders", kadm.OpRead}, nil,
			"FAIL: source topic orders: not authorized to describe it (TOPIC_AUTHORIZATION_FAILED): the relay needs READ on it"},
		{"an output topic the principal may describe but not write is named with WRITE",
			acl{"topic", "jobs", kadm.OpWrite}, []acl{{"topic", "jobs", kadm.OpDescribe}},
			"FAIL: output topic jobs: 3 partitions; not authorized to WRITE (allowed: DESCRIBE, DESCRIBE_CONFIGS)"},
		{"a dead-letter topic without DESCRIBE_CONFIGS is named with it",
			acl{"topic", "dlq", kadm.OpDescribeConfigs}, nil,
			"FAIL: dead-letter topic dlq: 3 partitions; not authorized to DESCRIBE_CONFIGS (allowed: WRITE, DESCRIBE)"},
		{"a missing ledger the principal may not create asks for CREATE",
			acl{"topic", "p.ledger", kadm.OpCreate}, nil,
			"FAIL: ledger topic p.ledger: does not exist and this principal may not create it"},
		{"transactional ids without WRITE ask for WRITE on the prefix",
			acl{"txn", "sharerelay-p-", kadm.OpWrite}, nil,
			`FAIL: transactional ids sharerelay-p-*: not authorized to WRITE them (TRANSACTIONAL_ID_AUTHORIZATION_FAILED): grant WRITE on the PREFIXED transactional id "sharerelay-p-"`},
		{"a share group without READ is named with READ",
			acl{"group", "g", kadm.OpRead}, nil,
			"FAIL: share group g: not authorized to READ it (GROUP_AUTHORIZATION_FAILED)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			var acls []acl
			for _, a := range everything {
				if a != tc.without {
					acls = append(acls, a)
				}
			}
			f.grant(t, append(acls, tc.plus...))
			p, opts := f.pipeline(relayPassword)
			rep := check(t, p, opts)
			if !rep.Failed() {
				t.Fatal("Failed() = false, want true")
			}
			var fails []string
			for _, r := range rep.Results {
				if r.Status == preflight.Fail {
					fails = append(fails, r.String())
				}
			}
			if len(fails) != 1 || !strings.HasPrefix(fails[0], tc.want) {
				t.Errorf("failures %q; want exactly one starting %q", fails, tc.want)
			}
		})
	}
}

func TestAMissingTopicAndAShortLockFail(t *testing.T) {
	f := newFixture(t)
	f.grant(t, append(everything, acl{"topic", "nope", kadm.OpWrite}))
	p, opts := f.pipeline(relayPassword)
	p.DeadLetter.Topic = "nope" // not created: kfake answers UNKNOWN_TOPIC_OR_PARTITION to a principal that may describe it
	p.Source.GroupConfigs["share.record.lock.duration.ms"] = "5000"
	rep := check(t, p, opts)
	want := map[string]bool{
		"FAIL: dead-letter topic nope: does not exist (create it first)":                                  false,
		"FAIL: lock duration: 5s (from source.group_configs) is not above output.transaction_timeout 10s": false,
	}
	for _, r := range rep.Results {
		for w := range want {
			if strings.HasPrefix(r.String(), w) {
				want[w] = true
			}
		}
	}
	for w, found := range want {
		if !found {
			t.Errorf("no line starting %q", w)
		}
	}
}

func TestADeliveryLimitWithOneSpareWarns(t *testing.T) {
	f := newFixture(t)
	f.grant(t, everything)
	p, opts := f.pipeline(relayPassword)
	p.Source.GroupConfigs["share.delivery.count.limit"] = "3"
	rep := check(t, p, opts)
	const want = "warn: dead-letter spares: 2 attempts, delivery limit 3 (from source.group_configs): 1 spare deliveries"
	found := false
	for _, r := range rep.Results {
		found = found || strings.HasPrefix(r.String(), want)
	}
	if !found {
		t.Errorf("no line starting %q", want)
	}
	if rep.Failed() {
		t.Error("a warning failed the check")
	}
}

func TestDeadLetterSparesCoverWhatACrashOfTheInstanceCosts(t *testing.T) {
	f := newFixture(t)
	f.grant(t, everything)
	for _, c := range []struct {
		limit, attempts, workers, consumers int
		want                                string
	}{
		{7, 0, 1, 4, "warn: dead-letter spares: 5 attempts, delivery limit 7 (from source.group_configs): 2 spare deliveries; a crash of an instance of 4 share consumers can cost a record 4"},
		{7, 3, 1, 4, "ok: dead-letter spares: 3 attempts, delivery limit 7 (from source.group_configs): 4 spare deliveries"},
		{5, 0, 1, 1, "ok: dead-letter spares: 3 attempts, delivery limit 5 (from source.group_configs): 2 spare deliveries"},
	} {
		p, opts := f.pipeline(relayPassword)
		p.Source.GroupConfigs["share.delivery.count.limit"] = strconv.Itoa(c.limit)
		p.DeadLetter.MaxAttempts = c.attempts
		p.Workers, p.Batch.Consumers = c.workers, c.consumers
		rep := check(t, p, opts)
		found := false
		for _, r := range rep.Results {
			found = found || strings.HasPrefix(r.String(), c.want)
		}
		if !found {
			t.Errorf("limit %d, %d attempts, %d × %d: no line starting %q in\n%v", c.limit, c.attempts, c.workers, c.consumers, c.want, rep.Results)
		}
	}
}

func TestCheckSaysWhenTheRelayLowersItsShareConsumers(t *testing.T) {
	f := newFixture(t)
	f.grant(t, everything)
	for _, c := range []struct {
		workers, consumers int
		want               string
	}{
		{1, 4, "ok: share consumers: workers × consumers = 1 × 4, below the delivery limit 5 (from source.group_configs)"},
		{2, 4, "warn: share consumers: batch.consumers 4 is lowered to 2 at start: 2 workers × consumers must stay below the delivery limit 5 (from source.group_configs)"},
		{5, 2, "warn: share consumers: 5 workers reach the delivery limit 5 (from source.group_configs)"},
	} {
		p, opts := f.pipeline(relayPassword)
		p.Source.GroupConfigs["share.delivery.count.limit"] = "5"
		p.Workers, p.Batch.Consumers = c.workers, c.consumers
		rep := check(t, p, opts)
		found := false
		for _, r := range rep.Results {
			found = found || strings.HasPrefix(r.String(), c.want)
		}
		if !found {
			t.Errorf("%d workers × %d consumers: no line starting %q", c.workers, c.consumers, c.want)
		}
		if rep.Failed() {
			t.Errorf("%d workers × %d consumers: a warning failed the check", c.workers, c.consumers)
		}
	}
}

func TestAtLeastOnceNeedsNoLedger(t *testing.T) {
	f := newFixture(t)
	var acls []acl
	for _, a := range everything {
		if !strings.HasPrefix(a.name, "p.ledger") {
			acls = append(acls, a)
		}
	}
	f.grant(t, acls)
	p, opts := f.pipeline(relayPassword)
	p.Delivery = config.AtLeastOnce
	rep := check(t, p, opts)
	if rep.Failed() {
		t.Error("an at-least-once pipeline failed the check")
	}
	for _, r := range rep.Results {
		if strings.Contains(r.Check, "ledger") {
			t.Errorf("%v: an at-least-once pipeline has no ledger", r)
		}
	}
}

// dead_letter.ack: reject on a group with a broker-side dead-letter queue
// (KIP-1191) fails the check, as it stops the relay at start; with ack
// accept that queue is named as the backstop.
func TestRejectOnAGroupWithABrokerSideDLQFails(t *testing.T) {
	f := newFixture(t)
	f.grant(t, everything)
	// kfake knows no group DLQ config: answer the group's DescribeConfigs
	// as a Kafka 4.4 broker does for a group with one.
	f.c.ControlKey(int16(kmsg.DescribeConfigs), func(req kmsg.Request) (kmsg.Response, error, bool) {
		f.c.KeepControl()
		dreq := req.(*kmsg.DescribeConfigsRequest)
		if len(dreq.Resources) != 1 || dreq.Resources[0].ResourceType != kmsg.ConfigResourceTypeGroupConfig {
			return nil, nil, false
		}
		resp := dreq.ResponseKind().(*kmsg.DescribeConfigsResponse)
		rr := kmsg.NewDescribeConfigsResponseResource()
		rr.ResourceType, rr.ResourceName = kmsg.ConfigResourceTypeGroupConfig, dreq.Resources[0].ResourceName
		cfg := kmsg.NewDescribeConfigsResponseResourceConfig()
		cfg.Name, cfg.Value, cfg.Source = sharegroup.DLQTopic, kmsg.StringPtr("g.broker-dlq"), kmsg.ConfigSourceGroupConfig
		rr.Configs = append(rr.Configs, cfg)
		resp.Resources = append(resp.Resources, rr)
		return resp, nil, true
	})
	line := func(rep *preflight.Report) string {
		for _, r := range rep.Results {
			if r.Check == "broker-side dead-letter queue" {
				return r.String()
			}
		}
		return ""
	}
	p, opts := f.pipeline(relayPassword)
	p.DeadLetter.Ack = config.DeadLetterReject
	rep := check(t, p, opts)
	if got := line(rep); !rep.Failed() || !strings.HasPrefix(got, "FAIL: broker-side dead-letter queue: dead_letter.ack: reject") || !strings.Contains(got, "g.broker-dlq") {
		t.Errorf("ack reject: failed %v, line %q; want a FAIL naming the group's DLQ topic", rep.Failed(), got)
	}
	p.DeadLetter.Ack = config.DeadLetterAccept
	rep = check(t, p, opts)
	if got := line(rep); rep.Failed() || !strings.HasPrefix(got, "ok: broker-side dead-letter queue:") || !strings.Contains(got, "g.broker-dlq") {
		t.Errorf("ack accept: failed %v, line %q; want ok naming the group's DLQ topic", rep.Failed(), got)
	}
}
