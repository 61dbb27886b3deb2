package main

import (
	"encoding/json"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sharerelay/sharerelay/config"
	"github.com/sharerelay/sharerelay/integration/kafkatest"
)

func TestBrokerRecordLocksDefaultToKafkasOwnAndTakeAList(t *testing.T) {
	t.Setenv(kafkatest.EnvBootstrap, "")
	o, err := parseFlags(nil)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(o.brokerRecordLocks, []int{0}) {
		t.Fatalf("default -broker-record-locks = %v, want [0] (Kafka's default limits)", o.brokerRecordLocks)
	}
	o, err = parseFlags([]string{"-broker-record-locks", "0, 10000"})
	if err != nil || !slices.Equal(o.brokerRecordLocks, []int{0, 10000}) {
		t.Fatalf("-broker-record-locks 0,10000 = %v, %v; want [0 10000] in that order", o.brokerRecordLocks, err)
	}
	for _, bad := range []string{"1999", "10001", "x", "0,0", "", " , "} {
		if _, err := parseFlags([]string{"-broker-record-locks", bad}); err == nil || !strings.Contains(err.Error(), "-broker-record-locks") {
			t.Errorf("-broker-record-locks %q: %v, want an error naming the flag", bad, err)
		}
	}
}

func TestAnExternalClusterTakesNoListOfBrokerSettings(t *testing.T) {
	t.Setenv(kafkatest.EnvBootstrap, "127.0.0.1:9092")
	if o, err := parseFlags(nil); err != nil || !slices.Equal(o.brokerRecordLocks, []int{0}) {
		t.Fatalf("the default on an external cluster: %v, %v; want [0] and no error", o.brokerRecordLocks, err)
	}
	for _, bad := range []string{"0,10000", "10000"} {
		_, err := parseFlags([]string{"-broker-record-locks", bad})
		if err == nil || !strings.Contains(err.Error(), "-broker-record-locks") || !strings.Contains(err.Error(), kafkatest.EnvBootstrap) {
			t.Errorf("-broker-record-locks %s on an external cluster: %v, want an error naming the flag and %s", bad, err, kafkatest.EnvBootstrap)
		}
	}
}

func TestRelayVariantsAreNamedByTheirSettingsAndSitBesideTheirBase(t *testing.T) {
	o, err := parseFlags([]string{"-relay-variants", "consumers=2; max_records=4000,consumers=1 ;alo:consumers=2;"})
	if err != nil {
		t.Fatal(err)
	}
	var names, slugs []string
	for _, v := range o.variants {
		names, slugs = append(names, v.name), append(slugs, v.id())
	}
	want := []string{"relay-eos{consumers=2}", "relay-eos{consumers=1,max_records=4000}", "relay-alo{consumers=2}"}
	if !slices.Equal(names, want) {
		t.Fatalf("variant names %q, want %q", names, want)
	}
	if want := []string{"relay-eos-v1", "relay-eos-v2", "relay-alo-v3"}; !slices.Equal(slugs, want) {
		t.Fatalf("variant ids %q, want %q (no braces: they name topics)", slugs, want)
	}
	if o.variants[1].delivery != config.ExactlyOnce || o.variants[2].delivery != config.AtLeastOnce {
		t.Fatalf("deliveries %q and %q, want exactly-once and at-least-once", o.variants[1].delivery, o.variants[2].delivery)
	}
	var order []string
	for _, c := range (&bench{opts: o}).contenders() {
		order = append(order, c.name)
	}
	wantOrder := []string{"raw-share", "copier", "copier-strict", "relay-alo", "relay-alo{consumers=2}",
		"relay-eos", "relay-eos{consumers=2}", "relay-eos{consumers=1,max_records=4000}", "classic-eos", "classic-alo"}
	if !slices.Equal(order, wantOrder) {
		t.Fatalf("contenders %q, want %q", order, wantOrder)
	}
}

// A variant's settings go over -relay-batch's, into the pipeline file the
// relay's own parser reads.
func TestAVariantsBatchSettingsReachThePipelineFile(t *testing.T) {
	o, err := parseFlags([]string{"-relay-batch", "consumers=3,linger=5ms", "-relay-variants", "consumers=1,max_records=4000"})
	if err != nil {
		t.Fatal(err)
	}
	b := &bench{opts: o, br: &broker{seeds: []string{"127.0.0.1:9092"}}}
	tr := trial{c: o.variants[0], name: "p", source: "s", output: "o", dlq: "d", workers: 2}
	p, err := config.Parse("p.yaml", []byte(b.pipelineYAMLOf(tr)), nil)
	if err != nil {
		t.Fatal(err)
	}
	if p.Delivery != config.ExactlyOnce || p.Batch.Consumers != 1 || p.Batch.MaxRecords != 4000 || p.Batch.Linger.String() != "5ms" {
		t.Fatalf("delivery %s, batch %+v; want exactly-once, consumers 1 (the variant's), max_records 4000, linger 5ms (-relay-batch's)", p.Delivery, p.Batch)
	}
	tr.c = relayEOS
	if p, err := config.Parse("p.yaml", []byte(b.pipelineYAMLOf(tr)), nil); err != nil || p.Batch.Consumers != 3 {
		t.Fatalf("relay-eos beside the variant: %v, %v; want consumers 3 (-relay-batch's)", p, err)
	}
}

func TestBadRelayVariantsFailBeforeABrokerStarts(t *testing.T) {
	for _, tc := range []struct{ flags []string }{
		{[]string{"-relay-variants", "consumers=2;consumers=2"}},
		{[]string{"-relay-variants", "consumers"}},
		{[]string{"-relay-variants", "alo:"}},
		{[]string{"-relay-variants", "consumers=0"}},
		{[]string{"-relay-variants", "no_such_setting=1"}},
		{[]string{"-relay-variants", "consumers=2", "-contenders", "relay-alo,classic-eos"}},
	} {
		if _, err := parseFlags(tc.flags); err == nil || !strings.Contains(err.Error(), "-relay-variants") {
			t.Errorf("%q: %v, want an error naming -relay-variants", tc.flags, err)
		}
	}
}

func TestNodesIsOneBrokerOrAThreeNodeCluster(t *testing.T) {
	t.Setenv(kafkatest.EnvBootstrap, "")
	if o, err := parseFlags(nil); err != nil || o.nodes != 1 {
		t.Fatalf("default -nodes = %d, %v; want 1 (one broker)", o.nodes, err)
	}
	if o, err := parseFlags([]string{"-nodes", "3"}); err != nil || o.nodes != 3 {
		t.Fatalf("-nodes 3 = %d, %v; want 3", o.nodes, err)
	}
	for _, bad := range []string{"0", "2", "4", "-1"} {
		if _, err := parseFlags([]string{"-nodes", bad}); err == nil || !strings.Contains(err.Error(), "-nodes") {
			t.Errorf("-nodes %s: %v, want an error naming the flag", bad, err)
		}
	}
}

func TestAnExternalClusterTakesNoNodeCount(t *testing.T) {
	t.Setenv(kafkatest.EnvBootstrap, "127.0.0.1:9092")
	if o, err := parseFlags(nil); err != nil || o.nodes != 1 {
		t.Fatalf("the default on an external cluster: %d, %v; want 1 and no error", o.nodes, err)
	}
	_, err := parseFlags([]string{"-nodes", "3"})
	if err == nil || !strings.Contains(err.Error(), "-nodes") || !strings.Contains(err.Error(), kafkatest.EnvBootstrap) {
		t.Fatalf("-nodes 3 on an external cluster: %v, want an error naming the flag and %s", err, kafkatest.EnvBootstrap)
	}
}

// A three-node bench's topics are replicated as kafkatest's cluster
// replicates its internal ones, and every label and the JSON say so; a
// one-node bench's labels are as they were.
func TestAThreeNodeBenchSaysSoInItsLabelsAndJSON(t *testing.T) {
	t.Setenv(kafkatest.EnvBootstrap, "")
	rf, minISR := replication(3)
	if want := kafkatest.ReplicatedProperties(3); strconv.Itoa(rf) != want["default.replication.factor"] || strconv.Itoa(minISR) != want["min.insync.replicas"] {
		t.Fatalf("replication(3) = RF %d, min ISR %d; want the cluster's defaults %s and %s", rf, minISR, want["default.replication.factor"], want["min.insync.replicas"])
	}
	if rf, minISR := replication(1); rf != 1 || minISR != 1 {
		t.Fatalf("replication(1) = RF %d, min ISR %d; want 1 and 1", rf, minISR)
	}
	limits := limitsLabel(true, 0, 4000)
	if got, want := nodesLabel(3, limits), "3 nodes, RF 3, min.insync.replicas 2; Kafka's default share-group limits (4,000 record locks a partition)"; got != want {
		t.Fatalf("nodesLabel(3) = %q, want %q", got, want)
	}
	if got := nodesLabel(1, limits); got != limits {
		t.Fatalf("nodesLabel(1) = %q, want the limits alone, %q", got, limits)
	}

	o, err := parseFlags([]string{"-nodes", "3"})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		external bool
		want     []string
		wantNot  []string
	}{
		{false, []string{`"nodes": 3`, `"replication_factor": 3`, `"min_insync_replicas": 2`}, nil},
		{true, nil, []string{`"nodes"`, `"replication_factor"`, `"min_insync_replicas"`}},
	} {
		data, err := json.MarshalIndent(newResults(o, time.Now(), tc.external), "", "  ")
		if err != nil {
			t.Fatal(err)
		}
		for _, w := range tc.want {
			if !strings.Contains(string(data), w) {
				t.Errorf("external %v: JSON\n%s\nwant %s", tc.external, data, w)
			}
		}
		for _, w := range tc.wantNot {
			if strings.Contains(string(data), w) {
				t.Errorf("external %v: JSON\n%s\nwant no %s (the cluster's own shape is unknown)", tc.external, data, w)
			}
		}
	}
}

// -cross adds relay-eos-cross right after relay-eos and its variants,
// whatever -contenders lists, so that their runs sit side by side;
// without it the table is as it was.
func TestCrossAddsRelayEOSCrossRightAfterRelayEOS(t *testing.T) {
	t.Setenv(kafkatest.EnvBootstrap, "")
	order := func(flags ...string) []string {
		t.Helper()
		o, err := parseFlags(flags)
		if err != nil {
			t.Fatalf("%q: %v", flags, err)
		}
		var names []string
		for _, c := range (&bench{opts: o}).contenders() {
			names = append(names, c.name)
		}
		return names
	}
	if got, want := order("-cross", "-relay-variants", "consumers=1"), []string{"raw-share", "copier", "copier-strict", "relay-alo",
		"relay-eos", "relay-eos{consumers=1}", "relay-eos-cross", "classic-eos", "classic-alo"}; !slices.Equal(got, want) {
		t.Fatalf("-cross: contenders %q, want %q", got, want)
	}
	for _, flags := range [][]string{{"-cross", "-contenders", "relay-eos"}, {"-cross", "-contenders", "relay-eos-cross,relay-eos"}} {
		if got, want := order(flags...), []string{"relay-eos", "relay-eos-cross"}; !slices.Equal(got, want) {
			t.Errorf("%q: contenders %q, want %q", flags, got, want)
		}
	}
	if got := order(); slices.Contains(got, relayEOSCross.name) {
		t.Fatalf("without -cross: contenders %q, want no %s", got, relayEOSCross.name)
	}
}

func TestBadCrossFlagsFailBeforeABrokerStarts(t *testing.T) {
	t.Setenv(kafkatest.EnvBootstrap, "")
	for _, tc := range []struct {
		flags []string
		names []string
	}{
		{[]string{"-contenders", "relay-eos,relay-eos-cross"}, []string{"-cross", "relay-eos-cross"}},
		{[]string{"-cross", "-contenders", "relay-alo"}, []string{"-cross", "relay-eos,"}},
		{[]string{"-cross", "-nodes", "3"}, []string{"-cross", "-nodes 3"}},
	} {
		_, err := parseFlags(tc.flags)
		for _, n := range tc.names {
			if err == nil || !strings.Contains(err.Error(), n) {
				t.Errorf("%q: %v, want an error naming %s", tc.flags, err, n)
			}
		}
	}
	t.Setenv(kafkatest.EnvBootstrap, "127.0.0.1:9092")
	if _, err := parseFlags([]string{"-cross"}); err == nil || !strings.Contains(err.Error(), "-cross") || !strings.Contains(err.Error(), kafkatest.EnvBootstrap) {
		t.Fatalf("-cross on an external cluster: %v, want an error naming -cross and %s", err, kafkatest.EnvBootstrap)
	}
}

// relay-eos-cross's pipeline file is relay-eos's with one line more,
// source.cluster naming the second broker: every setting the flags give
// reaches both, and the relay's own parser reads the source from the
// second broker and writes to the first.
func TestTheCrossPipelineIsRelayEOSsButForSourceCluster(t *testing.T) {
	t.Setenv(kafkatest.EnvBootstrap, "")
	o, err := parseFlags([]string{"-cross", "-relay-batch", "consumers=3,linger=5ms", "-relay-client", "consumer.fetch_max_bytes=4194304",
		"-relay-group", "share.record.lock.duration.ms=20000", "-relay-compression", "lz4"})
	if err != nil {
		t.Fatal(err)
	}
	sink, source := []string{"127.0.0.1:9092"}, []string{"127.0.0.1:9192"}
	b := &bench{opts: o, br: &broker{seeds: sink}, src: &bench{opts: o, br: &broker{seeds: source}}}
	tr := trial{c: relayEOS, name: "p", source: "s", output: "o", dlq: "d", workers: 2}
	same := b.pipelineYAMLOf(tr)
	tr.c = relayEOSCross
	cross := b.pipelineYAMLOf(tr)
	line := "  cluster: {brokers: [\"127.0.0.1:9192\"]}\n"
	if strings.Count(cross, line) != 1 || strings.Replace(cross, line, "", 1) != same {
		t.Fatalf("relay-eos-cross's pipeline:\n%s\nwant relay-eos's:\n%s\nwith the one line %q more", cross, same, line)
	}
	p, err := config.Parse("p.yaml", []byte(cross), nil)
	if err != nil {
		t.Fatal(err)
	}
	if !p.CrossCluster() || !slices.Equal(p.SourceCluster().Brokers, source) || !slices.Equal(p.SinkCluster().Brokers, sink) {
		t.Fatalf("source cluster %v, sink %v; want %v and %v", p.SourceCluster().Brokers, p.SinkCluster().Brokers, source, sink)
	}
	if p.SourceCluster().Client.Consumer.FetchMaxBytes != 4194304 || p.Batch.Consumers != 3 || p.Delivery != config.ExactlyOnce {
		t.Fatalf("source client %+v, batch %+v, delivery %s; want -relay-client's fetch bound on the source too, consumers 3, exactly-once",
			p.SourceCluster().Client, p.Batch, p.Delivery)
	}
	if p, err := config.Parse("p.yaml", []byte(same), nil); err != nil || p.CrossCluster() {
		t.Fatalf("relay-eos's pipeline: %v, %v; want one cluster", p, err)
	}
}

// The second broker of -cross is formatted with a cluster id of its own:
// the relay tells two clusters apart by their ids, and with the first
// broker's it would take source.cluster for the sink cluster named twice.
func TestTheSourceClusterHasAnIDOfItsOwn(t *testing.T) {
	if sourceClusterID == "" || sourceClusterID == kafkatest.ClusterID {
		t.Fatalf("source cluster id %q, want one other than the first broker's %q", sourceClusterID, kafkatest.ClusterID)
	}
}
