package preflight_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sharerelay/sharerelay/config"
	"github.com/sharerelay/sharerelay/preflight"
)

// recreate replaces topic with one of rf replicas and cfgs.
func (f *fixture) recreate(t *testing.T, topic string, parts int32, rf int16, cfgs map[string]*string) {
	t.Helper()
	ctx := context.Background()
	if _, err := f.adm.DeleteTopic(ctx, topic); err != nil && !errors.Is(err, kerr.UnknownTopicOrPartition) {
		t.Fatalf("deleting %s: %v", topic, err)
	}
	resp, err := f.adm.CreateTopic(ctx, parts, rf, cfgs, topic)
	if err == nil {
		err = resp.Err
	}
	if err != nil {
		t.Fatalf("creating %s: %v", topic, err)
	}
}

// uncleanByDefault answers a DescribeConfigs of topics as a Kafka 4.4
// broker does on a cluster whose default is unclean.leader.election.enable
// true and min.insync.replicas 2 (kfake knows no unclean leader election).
func uncleanByDefault(c *kfake.Cluster) {
	c.ControlKey(int16(kmsg.DescribeConfigs), func(req kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		dreq := req.(*kmsg.DescribeConfigsRequest)
		resp := dreq.ResponseKind().(*kmsg.DescribeConfigsResponse)
		for _, r := range dreq.Resources {
			if r.ResourceType != kmsg.ConfigResourceTypeTopic {
				return nil, nil, false
			}
			rr := kmsg.NewDescribeConfigsResponseResource()
			rr.ResourceType, rr.ResourceName = r.ResourceType, r.ResourceName
			for k, v := range map[string]string{"min.insync.replicas": "2", "unclean.leader.election.enable": "true"} {
				cfg := kmsg.NewDescribeConfigsResponseResourceConfig()
				cfg.Name, cfg.Value, cfg.Source = k, kmsg.StringPtr(v), kmsg.ConfigSourceDynamicDefaultBrokerConfig
				rr.Configs = append(rr.Configs, cfg)
			}
			resp.Resources = append(resp.Resources, rr)
		}
		return resp, nil, true
	})
}

// Every topic the relay writes — outputs, dead letters, the ledger and its
// snapshots — gets one replication line per finding, naming the topic and
// the setting: a warning for what loses a committed write when a broker is
// lost (one replica of several brokers, min.insync.replicas 1, unclean
// leader election), a failure for what stops every write, ok otherwise.
func TestRelayCheckJudgesTheReplicationOfEveryTopicItWrites(t *testing.T) {
	const (
		lostTxn = "acks=all then accepts a write one replica holds: an unclean failover or disk loss can drop a committed transaction; set min.insync.replicas=2"
		okOut   = "ok: replication of output topic jobs: replication factor 3, min.insync.replicas 2 (the broker's config), unclean leader election off"
		okDLQ   = "ok: replication of dead-letter topic dlq: replication factor 3, min.insync.replicas 2 (the broker's config), unclean leader election off"
		okLed   = "ok: replication of ledger topic p.ledger: the relay will create it with replication factor 3, min.insync.replicas 2 (the relay sets it on the topic), unclean leader election off"
		okSnap  = "ok: replication of ledger snapshots topic p.ledger.snapshots: the relay will create it with replication factor 3, min.insync.replicas 2 (the relay sets it on the topic), unclean leader election off"
	)
	minISR2 := kfake.BrokerConfigs(map[string]string{"min.insync.replicas": "2"})
	for _, tc := range []struct {
		name    string
		opts    []kfake.Opt
		setup   func(t *testing.T, f *fixture)
		without acl // a permission taken from everything
		alo     bool
		want    []string // the replication lines, in order, each starting so
	}{
		{"three replicas, two in sync for a write and no unclean election: every topic is ok, and the ledger will be created so",
			[]kfake.Opt{kfake.NumBrokers(3), minISR2}, nil, acl{}, false,
			[]string{okDLQ, okOut, okLed, okSnap}},
		{"on a single broker one replica is ok, as there is nothing to replicate to",
			nil, nil, acl{}, false,
			[]string{
				"ok: replication of dead-letter topic dlq: replication factor 1 on a single-broker cluster: no other broker to replicate to",
				"ok: replication of output topic jobs: replication factor 1 on a single-broker cluster",
				"ok: replication of ledger topic p.ledger: the relay will create it with replication factor 1 on a single-broker cluster",
				"ok: replication of ledger snapshots topic p.ledger.snapshots: the relay will create it with replication factor 1 on a single-broker cluster",
			}},
		{"an output of one replica on three brokers warns that a broker loss loses committed outputs",
			[]kfake.Opt{kfake.NumBrokers(3), minISR2}, func(t *testing.T, f *fixture) { f.recreate(t, "jobs", 3, 1, nil) }, acl{}, false,
			[]string{okDLQ, "warn: replication of output topic jobs: replication factor 1 on a 3-broker cluster: a broker loss loses committed outputs; raise it to 3", okLed, okSnap}},
		{"min.insync.replicas 1 set on the dead-letter topic warns",
			[]kfake.Opt{kfake.NumBrokers(3), minISR2}, func(t *testing.T, f *fixture) {
				f.recreate(t, "dlq", 3, 3, map[string]*string{"min.insync.replicas": kadm.StringPtr("1")})
			}, acl{}, false,
			[]string{"warn: replication of dead-letter topic dlq: min.insync.replicas 1 (set on the topic) with replication factor 3: " + lostTxn, okOut, okLed, okSnap}},
		{"Kafka's default min.insync.replicas of 1 warns on every topic the relay does not create",
			[]kfake.Opt{kfake.NumBrokers(3)}, nil, acl{}, false,
			[]string{
				"warn: replication of dead-letter topic dlq: min.insync.replicas 1 (Kafka's default) with replication factor 3: " + lostTxn,
				"warn: replication of output topic jobs: min.insync.replicas 1 (Kafka's default) with replication factor 3: " + lostTxn,
				okLed, okSnap,
			}},
		{"unclean leader election on an output topic warns",
			[]kfake.Opt{kfake.NumBrokers(3), minISR2}, func(t *testing.T, f *fixture) {
				f.recreate(t, "jobs", 3, 3, map[string]*string{"unclean.leader.election.enable": kadm.StringPtr("true")})
			}, acl{}, false,
			[]string{okDLQ, "warn: replication of output topic jobs: unclean.leader.election.enable is true (set on the topic): a replica that missed committed writes can become leader and drop a committed transaction; set it to false", okLed, okSnap}},
		{"unclean leader election as the cluster's default warns on the topics that take it, not on the ledger the relay creates with it off",
			[]kfake.Opt{kfake.NumBrokers(3)}, func(t *testing.T, f *fixture) { uncleanByDefault(f.c) }, acl{}, false,
			[]string{
				"warn: replication of dead-letter topic dlq: unclean.leader.election.enable is true (the cluster's default)",
				"warn: replication of output topic jobs: unclean.leader.election.enable is true (the cluster's default): a replica that missed committed writes can become leader and drop a committed transaction; set it to false",
				okLed, okSnap,
			}},
		{"min.insync.replicas above the replication factor fails: every write would",
			[]kfake.Opt{kfake.NumBrokers(3), minISR2}, func(t *testing.T, f *fixture) {
				f.recreate(t, "jobs", 3, 3, map[string]*string{"min.insync.replicas": kadm.StringPtr("4")})
			}, acl{}, false,
			[]string{okDLQ, "FAIL: replication of output topic jobs: min.insync.replicas 4 (set on the topic) above replication factor 3: every acks=all write fails with NOT_ENOUGH_REPLICAS; set min.insync.replicas=2", okLed, okSnap}},
		{"an existing ledger whose configs the principal may not read warns that they were not checked",
			[]kfake.Opt{kfake.NumBrokers(3), minISR2}, func(t *testing.T, f *fixture) {
				f.recreate(t, "p.ledger", 1, 3, map[string]*string{"min.insync.replicas": kadm.StringPtr("2")})
				f.recreate(t, "p.ledger.snapshots", 1, 3, map[string]*string{"min.insync.replicas": kadm.StringPtr("2")})
			}, acl{"topic", "p.ledger", kadm.OpDescribeConfigs}, false,
			[]string{okDLQ, okOut,
				"warn: replication of ledger topic p.ledger: replication factor 3; min.insync.replicas and unclean.leader.election.enable not read (TOPIC_AUTHORIZATION_FAILED): grant DESCRIBE_CONFIGS on the topic to check them",
				"ok: replication of ledger snapshots topic p.ledger.snapshots: replication factor 3, min.insync.replicas 2 (set on the topic), unclean leader election off",
			}},
		{"on two brokers the ledger gets two replicas and the cluster's min.insync.replicas, which the principal cannot read",
			[]kfake.Opt{kfake.NumBrokers(2), minISR2}, nil, acl{}, false,
			[]string{
				"ok: replication of dead-letter topic dlq: replication factor 2, min.insync.replicas 2 (the broker's config), unclean leader election off; a broker down stops writes to it",
				"ok: replication of output topic jobs: replication factor 2, min.insync.replicas 2 (the broker's config), unclean leader election off; a broker down stops writes to it",
				"warn: replication of ledger topic p.ledger: the relay will create it with replication factor 2 and unclean leader election off, and min.insync.replicas the cluster's default (not readable without DESCRIBE_CONFIGS on the cluster): 1 lets a disk loss drop a committed transaction, 2 stops writes while either broker is down; a third broker avoids the choice",
				"warn: replication of ledger snapshots topic p.ledger.snapshots: the relay will create it with replication factor 2 and unclean leader election off",
			}},
		{"at-least-once gets the same warnings: a lost write is a lost record there too",
			[]kfake.Opt{kfake.NumBrokers(3)}, nil, acl{}, true,
			[]string{
				"warn: replication of dead-letter topic dlq: min.insync.replicas 1 (Kafka's default) with replication factor 3",
				"warn: replication of output topic jobs: min.insync.replicas 1 (Kafka's default) with replication factor 3: acks=all then accepts a write one replica holds: an unclean failover or disk loss can drop a written record whose source was acknowledged; set min.insync.replicas=2",
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, tc.opts...)
			var acls []acl
			for _, a := range everything {
				if a != tc.without {
					acls = append(acls, a)
				}
			}
			f.grant(t, acls)
			if tc.setup != nil {
				tc.setup(t, f)
			}
			p, opts := f.pipeline(relayPassword)
			if tc.alo {
				p.Delivery = config.AtLeastOnce
			}
			rep := check(t, p, opts)
			var got []preflight.Result
			for _, r := range rep.Results {
				if strings.HasPrefix(r.Check, "replication of ") {
					got = append(got, r)
				}
			}
			if len(got) != len(tc.want) {
				t.Fatalf("%d replication lines %v; want %d", len(got), got, len(tc.want))
			}
			failed := false
			for i, w := range tc.want {
				if !strings.HasPrefix(got[i].String(), w) {
					t.Errorf("line %d:\n %s\nwant it to start\n %s", i, got[i], w)
				}
				failed = failed || got[i].Status == preflight.Fail
			}
			if rep.Failed() != failed {
				t.Errorf("Failed() = %v; want %v", rep.Failed(), failed)
			}
		})
	}
}
