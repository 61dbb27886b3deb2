package preflight

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sharerelay/sharerelay/config"
	"github.com/sharerelay/sharerelay/eos"
	"github.com/sharerelay/sharerelay/sharegroup"
)

// written is a topic the relay writes, whose loss loses what it wrote:
// an output, the dead letters, the claim ledger and its snapshots.
type written struct {
	name string
	// check is the topic check's name, "output topic jobs".
	check string
	// role is the topic's first role the relay writes ("output",
	// "dead-letter", "ledger", "ledger snapshots").
	role string
	// rf is the fewest replicas of its partitions.
	rf int
	// create: it does not exist yet, and the relay will create it
	// (eos.LedgerReplication).
	create bool
}

// losses says what a broker loss loses, by role.
var losses = map[string]string{
	"output":           "committed outputs",
	"dead-letter":      "committed dead letters",
	"ledger":           "committed claims, and their records are written again",
	"ledger snapshots": "the ledger's snapshots, and a restart past the ledger's retention then refuses to start",
}

// writtenTopic is the topic name of roles and partitions, when the relay
// writes it.
func writtenTopic(name, check string, roles []string, parts []kmsg.MetadataResponseTopicPartition) (written, bool) {
	for _, r := range roles {
		if _, ok := losses[r]; !ok {
			continue
		}
		rf := 0
		for i, p := range parts {
			if i == 0 || len(p.Replicas) < rf {
				rf = len(p.Replicas)
			}
		}
		return written{name: name, check: check, role: r, rf: rf}, true
	}
	return written{}, false
}

// setting is one topic config's effective value and where it comes from.
type setting struct {
	value string
	// from says where the value comes from, "" when unknown.
	from string
	// known: the value was read (or is the relay's own).
	known bool
}

// durability is what the replication check judges a topic by.
type durability struct {
	rf              int
	minISR, unclean setting
	// unread is why the topic's configs could not be read.
	unread error
}

// replication checks that every topic the relay writes keeps what it
// acknowledged through the loss of a broker: more than one replica on a
// cluster of more than one broker, min.insync.replicas at least 2, so
// that acks=all means two brokers hold the write, and no unclean leader
// election, which lets a replica that missed writes lead. The relay
// acknowledges a source record once its outputs are written, so a lost
// write is a lost record, at-least-once as much as exactly-once: both get
// the same warnings. One line per topic and finding.
func (c *checker) replication(ctx context.Context) {
	var describe []string
	for _, w := range c.written {
		if !w.create && w.rf > 1 {
			describe = append(describe, w.name)
		}
	}
	configs, errs := describeTopics(ctx, c, describe)
	for _, w := range c.written {
		d := durability{rf: w.rf}
		switch {
		case w.create:
			d = c.created(ctx)
		case w.rf > 1:
			cfg := configs[w.name]
			d.unread = errs[w.name]
			d.minISR = describedSetting(cfg, eos.MinInsyncReplicas, "1")
			d.unclean = describedSetting(cfg, eos.UncleanLeaderElection, "false")
		}
		c.judgeReplication("replication of "+w.check, w.role, d, w.create)
	}
}

// created is the durability of a ledger topic the relay will create.
func (c *checker) created(ctx context.Context) durability {
	rf, cfgs := eos.LedgerReplication(c.sink.brokers)
	d := durability{rf: int(rf)}
	d.unclean = setting{value: cfgs[eos.UncleanLeaderElection], from: "the relay sets it on the topic", known: true}
	if v, ok := cfgs[eos.MinInsyncReplicas]; ok {
		d.minISR = setting{value: v, from: "the relay sets it on the topic", known: true}
		return d
	}
	if rf > 1 {
		bc, err := sharegroup.BrokerConfig(ctx, kadm.NewClient(c.sink.cl), eos.MinInsyncReplicas)
		if v, ok := bc[eos.MinInsyncReplicas]; err == nil && ok {
			d.minISR = setting{value: v, from: "the brokers' default", known: true}
		} else {
			d.unread = errors.New("not readable without DESCRIBE_CONFIGS on the cluster")
		}
	}
	return d
}

// judgeReplication adds the lines of one topic.
func (c *checker) judgeReplication(check, role string, d durability, create bool) {
	what := ""
	if create {
		what = "the relay will create it with "
	}
	lost := "a committed transaction"
	if c.p.Delivery != config.ExactlyOnce {
		lost = "a written record whose source was acknowledged"
	}
	if d.rf <= 1 {
		if c.sink.brokers <= 1 {
			c.sink.add(OK, check, "%sreplication factor 1 on a single-broker cluster: no other broker to replicate to (production wants 3 brokers)", what)
			return
		}
		c.sink.add(Warn, check, "%sreplication factor 1 on a %d-broker cluster: a broker loss loses %s; raise it to %d (kafka-reassign-partitions.sh adds replicas in place)",
			what, c.sink.brokers, losses[role], min(3, c.sink.brokers))
		return
	}
	if d.unread != nil && !d.minISR.known && create {
		c.sink.add(Warn, check, "%sreplication factor %d and unclean leader election off, and min.insync.replicas the cluster's default (%s): 1 lets a disk loss drop %s, 2 stops writes while either broker is down; a third broker avoids the choice",
			what, d.rf, shortErr(d.unread), lost)
		return
	}
	if d.unread != nil && !d.minISR.known {
		c.sink.add(Warn, check, "%sreplication factor %d; min.insync.replicas and unclean.leader.election.enable not read (%s): grant DESCRIBE_CONFIGS on the topic to check them",
			what, d.rf, shortErr(d.unread))
		return
	}
	isr := atoi(d.minISR.value)
	short := false
	switch {
	case isr > d.rf:
		c.sink.add(Fail, check, "%smin.insync.replicas %d%s above replication factor %d: every acks=all write fails with NOT_ENOUGH_REPLICAS; set min.insync.replicas=%d",
			what, isr, from(d.minISR), d.rf, max(2, d.rf-1))
		short = true
	case isr <= 1:
		fix := "set min.insync.replicas=2"
		if d.rf == 2 {
			fix += " (with 2 replicas that stops writes while either broker is down; 3 replicas allow both)"
		}
		c.sink.add(Warn, check, "%smin.insync.replicas %d%s with replication factor %d: acks=all then accepts a write one replica holds: an unclean failover or disk loss can drop %s; %s",
			what, isr, from(d.minISR), d.rf, lost, fix)
		short = true
	}
	if b, _ := strconv.ParseBool(d.unclean.value); b {
		c.sink.add(Warn, check, "%sunclean.leader.election.enable is true%s: a replica that missed committed writes can become leader and drop %s; set it to false",
			what, from(d.unclean), lost)
		short = true
	}
	if short {
		return
	}
	note := ""
	if isr == d.rf {
		note = "; a broker down stops writes to it"
	}
	c.sink.add(OK, check, "%sreplication factor %d, min.insync.replicas %d%s, unclean leader election off%s",
		what, d.rf, isr, from(d.minISR), note)
}

// from is " (where s comes from)", or "" when that is unknown.
func from(s setting) string {
	if s.from == "" {
		return ""
	}
	return " (" + s.from + ")"
}

// describedSetting is key's value from a topic's described configs, or
// Kafka's default def when the broker did not report it.
func describedSetting(cfg map[string]kmsg.DescribeConfigsResponseResourceConfig, key, def string) setting {
	if cfg == nil {
		return setting{}
	}
	rc, ok := cfg[key]
	if !ok || rc.Value == nil {
		return setting{value: def, from: "Kafka's default", known: true}
	}
	return setting{value: *rc.Value, from: sourceWords[rc.Source], known: true}
}

// sourceWords say where a topic config's value comes from.
var sourceWords = map[kmsg.ConfigSource]string{
	kmsg.ConfigSourceDynamicTopicConfig:         "set on the topic",
	kmsg.ConfigSourceDynamicBrokerConfig:        "the broker's config",
	kmsg.ConfigSourceDynamicDefaultBrokerConfig: "the cluster's default",
	kmsg.ConfigSourceStaticBrokerConfig:         "server.properties",
	kmsg.ConfigSourceDefaultConfig:              "Kafka's default",
}

// describeTopics returns the replication configs of topics
// (DescribeConfigs), and for each topic whose configs could not be read,
// why.
func describeTopics(ctx context.Context, c *checker, topics []string) (map[string]map[string]kmsg.DescribeConfigsResponseResourceConfig, map[string]error) {
	configs := make(map[string]map[string]kmsg.DescribeConfigsResponseResourceConfig)
	errs := make(map[string]error)
	if len(topics) == 0 {
		return configs, errs
	}
	req := kmsg.NewPtrDescribeConfigsRequest()
	for _, t := range topics {
		res := kmsg.NewDescribeConfigsRequestResource()
		res.ResourceType, res.ResourceName = kmsg.ConfigResourceTypeTopic, t
		res.ConfigNames = []string{eos.MinInsyncReplicas, eos.UncleanLeaderElection}
		req.Resources = append(req.Resources, res)
	}
	resp, err := request[*kmsg.DescribeConfigsResponse](ctx, c.sink.cl, req)
	if err != nil {
		for _, t := range topics {
			errs[t] = fmt.Errorf("DescribeConfigs: %w", err)
		}
		return configs, errs
	}
	for _, r := range resp.Resources {
		if err := kerr.ErrorForCode(r.ErrorCode); err != nil {
			errs[r.ResourceName] = err
			continue
		}
		cfg := make(map[string]kmsg.DescribeConfigsResponseResourceConfig)
		for _, rc := range r.Configs {
			cfg[rc.Name] = rc
		}
		configs[r.ResourceName] = cfg
	}
	for _, t := range topics {
		if _, ok := configs[t]; !ok && errs[t] == nil {
			errs[t] = errors.New("not in the DescribeConfigs answer")
		}
	}
	return configs, errs
}
