package kafkatest

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

// property is one server.properties entry with an optional comment.
type property struct {
	key, value, comment string
}

// defaultProperties returns the properties of a single-node test broker,
// except the listener and directory settings added by serverProperties.
// Every name and range was checked against the 4.3.1 jars, and the names
// again against the 4.4.0 jars
// (GroupCoordinatorConfig, ShareGroupConfig, ShareCoordinatorConfig,
// TransactionStateManagerConfig, TransactionLogConfig, CleanerConfig,
// KRaftConfigs, ServerConfigs, ServerLogConfigs, SocketServerConfigs).
func defaultProperties() []property {
	return []property{
		// One node: internal topics need RF 1 and min.isr 1 (defaults
		// RF 3, share state min.isr 2) and one partition (default 50).
		{"num.partitions", "1", ""},
		{"auto.create.topics.enable", "false", "tests create their topics"},
		{"offsets.topic.replication.factor", "1", ""},
		{"offsets.topic.num.partitions", "1", ""},
		{"transaction.state.log.replication.factor", "1", ""},
		{"transaction.state.log.min.isr", "1", ""},
		{"transaction.state.log.num.partitions", "1", ""},
		{"share.coordinator.state.topic.replication.factor", "1", ""},
		{"share.coordinator.state.topic.min.isr", "1", ""},
		{"share.coordinator.state.topic.num.partitions", "1", ""},
		{"group.initial.rebalance.delay.ms", "0", "default 3000"},

		// Small and fast.
		{"num.network.threads", "2", "default 3"},
		{"num.io.threads", "2", "default 8"},
		{"background.threads", "2", "default 10"},
		{"group.coordinator.threads", "1", "default 4"},
		{"num.recovery.threads.per.data.dir", "1", "default 2"},
		{"log.cleaner.dedupe.buffer.size", "2097152", "default 128 MiB, allocated at start-up"},

		// Test-speed knobs: shorter share-group and transaction timers.
		{"group.share.min.record.lock.duration.ms", "1000", "default 15000; range [1000, 30000]"},
		{"group.share.record.lock.duration.ms", "15000", "default 30000; range [1000, 3600000]"},
		{"group.share.min.heartbeat.interval.ms", "100", "default 5000"},
		{"group.share.heartbeat.interval.ms", "500", "default 5000"},
		{"group.share.min.session.timeout.ms", "1000", "default 45000"},
		{"group.share.session.timeout.ms", "10000", "default 45000"},
		// group.share.min.delivery.count.limit is already at its
		// minimum (default 2, range [2, 5]), so it is left alone.
		{"transaction.abort.timed.out.transaction.cleanup.interval.ms", "1000", "default 10000"},
		// After kill -9 the restarted node cannot register until the
		// controller expires its previous incarnation's session.
		{"broker.heartbeat.interval.ms", "500", "default 2000"},
		{"broker.session.timeout.ms", "4000", "default 9000; restart after kill -9 waits this long"},
	}
}

// node says which KRaft node a broker is: its id, and the controller it
// joins ("" for a combined broker and controller).
type node struct {
	id     int
	join   string
	voters string // controller.quorum.voters of a multi-node quorum
}

// serverProperties renders server.properties for a broker listening on
// 127.0.0.1:port with its controller on 127.0.0.1:cport, or joining the
// controller n.join.
func serverProperties(dataDir string, port, cport int, n node, advertised string, overrides map[string]string) string {
	if advertised == "" {
		advertised = fmt.Sprintf("127.0.0.1:%d", port)
	}
	if n.id == 0 {
		n.id = 1
	}
	roles := property{"process.roles", "broker,controller", "combined KRaft node"}
	voters := property{"controller.quorum.voters", fmt.Sprintf("1@127.0.0.1:%d", cport), "static voter: format needs no --standalone"}
	listeners := property{"listeners", fmt.Sprintf("PLAINTEXT://127.0.0.1:%d,CONTROLLER://127.0.0.1:%d", port, cport), ""}
	if n.voters != "" {
		voters = property{"controller.quorum.voters", n.voters, "static voters of a multi-node quorum"}
	}
	if n.join != "" {
		roles = property{"process.roles", "broker", "broker-only node joining node 1's controller"}
		voters = property{"controller.quorum.voters", "1@" + n.join, ""}
		listeners = property{"listeners", fmt.Sprintf("PLAINTEXT://127.0.0.1:%d", port), ""}
	}
	props := []property{
		roles,
		{"node.id", strconv.Itoa(n.id), ""},
		voters,
		listeners,
		{"advertised.listeners", "PLAINTEXT://" + advertised, ""},
		{"inter.broker.listener.name", "PLAINTEXT", ""},
		{"controller.listener.names", "CONTROLLER", ""},
		{"listener.security.protocol.map", "CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT", ""},
		{"log.dirs", dataDir, ""},
	}
	props = append(props, defaultProperties()...)

	seen := make(map[string]bool, len(props))
	var b strings.Builder
	b.WriteString("# Written by sharerelay integration/kafkatest; rewritten at every start.\n")
	for _, p := range props {
		seen[p.key] = true
		v, overridden := overrides[p.key]
		if !overridden {
			v = p.value
		} else if v == "" {
			continue
		}
		if p.comment != "" && !overridden {
			fmt.Fprintf(&b, "# %s\n", p.comment)
		}
		fmt.Fprintf(&b, "%s=%s\n", p.key, v)
	}
	extra := make([]string, 0, len(overrides))
	for k, v := range overrides {
		if !seen[k] && v != "" {
			extra = append(extra, k)
		}
	}
	sort.Strings(extra)
	if len(extra) > 0 {
		b.WriteString("# From Options.Properties.\n")
	}
	for _, k := range extra {
		fmt.Fprintf(&b, "%s=%s\n", k, overrides[k])
	}
	return b.String()
}

// log4jProperties sends WARN and above to stdout (the broker log file),
// plus the INFO lines that show the broker's life cycle, including the
// readiness line waited for by Start. BrokerLifecycleManager moved from
// kafka.server (Scala) to org.apache.kafka.server (Java) in Kafka 4.3.
const log4jProperties = `appender.o.type=Console
appender.o.name=O
appender.o.layout.type=PatternLayout
appender.o.layout.pattern=[%d] %p %m (%c)%n
rootLogger.level=WARN
rootLogger.appenderRef.o.ref=O
logger.a.name=org.apache.kafka.server.BrokerLifecycleManager
logger.a.level=INFO
logger.a2.name=kafka.server.BrokerLifecycleManager
logger.a2.level=INFO
logger.b.name=kafka.server.KafkaRaftServer
logger.b.level=INFO
logger.c.name=kafka.Kafka
logger.c.level=INFO
`

// writeConfig writes server.properties and log4j2.properties into dir.
func writeConfig(dir, serverProps string) error {
	files := map[string]string{
		"server.properties": serverProps,
		"log4j2.properties": log4jProperties,
	}
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			return fmt.Errorf("write %s: %w", name, err)
		}
	}
	return nil
}
