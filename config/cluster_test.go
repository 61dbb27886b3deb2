package config_test

import (
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/sharerelay/sharerelay/config"
)

const crossBase = `name: x
brokers: ["sink-a:9092,sink-b:9092"]
client:
  request_timeout: 20s
  rack: az1
  consumer: {fetch_max_bytes: 4096}
  producer: {compression: zstd}
source:
  topics: [orders]
  cluster:
%s
output: {topic: orders}
dead_letter: {topic: orders.dlq}
`

func parseCross(t *testing.T, cluster string, env map[string]string) (*config.Pipeline, error) {
	t.Helper()
	return config.Parse("p.yml", fmt.Appendf(nil, crossBase, cluster), func(k string) (string, bool) {
		v, ok := env[k]
		return v, ok
	})
}

func TestSourceClusterIsItsOwnClusterAndInheritsOnlyTheClientTuning(t *testing.T) {
	p, err := parseCross(t, `    brokers: ["src-a:9092, src-b:9092"]
    sasl: {mechanism: SCRAM-SHA-512, username: src, password: "${SRC_PW}"}
    tls: {enabled: true}
    client: {consumer: {fetch_max_wait: 50ms}}`, map[string]string{"SRC_PW": "hunter2"})
	if err != nil {
		t.Fatal(err)
	}
	if !p.CrossCluster() {
		t.Fatal("CrossCluster() = false with source.cluster set")
	}
	src, sink := p.SourceCluster(), p.SinkCluster()
	if got := strings.Join(src.Brokers, " "); got != "src-a:9092 src-b:9092" {
		t.Errorf("source brokers = %q, want the two split from one entry", got)
	}
	if got := strings.Join(sink.Brokers, " "); got != "sink-a:9092 sink-b:9092" {
		t.Errorf("sink brokers = %q", got)
	}
	if sink.SASL.Mechanism != "" || sink.TLS.Enabled {
		t.Errorf("the sink took the source's security: %+v %+v", sink.SASL, sink.TLS)
	}
	if src.SASL.Password.Reveal() != "hunter2" || !src.TLS.Enabled {
		t.Errorf("source security = %+v %+v", src.SASL, src.TLS)
	}
	c := src.Client
	if c.RequestTimeout != 20*time.Second || c.Rack != "az1" || c.Consumer.FetchMaxBytes != 4096 {
		t.Errorf("the source's client did not take the keys it left out from client: %+v", c)
	}
	if c.Consumer.FetchMaxWait != 50*time.Millisecond {
		t.Errorf("source fetch_max_wait = %s, want its own 50ms", c.Consumer.FetchMaxWait)
	}
	if c.Producer != (config.ProducerTuning{}) {
		t.Errorf("the source's client took producer tuning: %+v", c.Producer)
	}
	var log strings.Builder
	slog.New(slog.NewTextHandler(&log, nil)).Info("x", "config", p)
	if strings.Contains(log.String(), "hunter2") {
		t.Errorf("the source cluster's password is logged: %s", log.String())
	}
}

func TestWithoutSourceClusterTheSourceIsOnTheSinkCluster(t *testing.T) {
	p, err := config.Parse("p.yml", []byte("name: x\nbrokers: [k:9092]\nsource: {topics: [a]}\noutput: {topic: b}\ndead_letter: {topic: c}\n"), nil)
	if err != nil {
		t.Fatal(err)
	}
	if p.CrossCluster() {
		t.Error("CrossCluster() = true without source.cluster")
	}
	if got := p.SourceCluster().Brokers; len(got) != 1 || got[0] != "k:9092" {
		t.Errorf("SourceCluster().Brokers = %v, want the pipeline's", got)
	}
}

func TestSourceClusterErrorsNameTheirFieldAndHideSecrets(t *testing.T) {
	for _, c := range []struct{ name, cluster, want string }{
		{"no brokers", `    tls: {enabled: true}`, "p.yml:10:3: source.cluster.brokers: required"},
		{"bad broker", `    brokers: [ok:1, "nope"]`, "source.cluster.brokers[1]: \"nope\" is not host:port"},
		{"sasl of its own", `    brokers: [s:9092]
    sasl: {mechanism: PLAIN, username: u}`, "source.cluster.sasl.password: required for PLAIN"},
		{"producer refused", `    brokers: [s:9092]
    client: {producer: {linger: 5ms}}`, "source.cluster.client.producer: the relay writes nothing to the source cluster"},
		{"client checked", `    brokers: [s:9092]
    client: {request_timeout: 1ms}`, "source.cluster.client.request_timeout: must be between"},
		{"secret hidden", `    brokers: [s:9092]
    sasl: {mechanism: PLAIN, username: "${SRC_PW}", password: "${SRC_PW}"}
    tls: {enabled: true, ca_file: "/nonexistent/${SRC_PW}"}`, "source.cluster.tls.ca_file: no such file"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := parseCross(t, c.cluster, map[string]string{"SRC_PW": "hunter2"})
			if err == nil {
				t.Fatal("no error")
			}
			if !strings.Contains(err.Error(), c.want) {
				t.Errorf("error\n%v\ndoes not say %q", err, c.want)
			}
			if strings.Contains(err.Error(), "hunter2") {
				t.Errorf("error shows a secret: %v", err)
			}
		})
	}
}

func TestAcrossClustersAnOutputMayCarryItsSourcesName(t *testing.T) {
	if _, err := parseCross(t, `    brokers: [s:9092]`, nil); err != nil {
		t.Fatalf("output.topic orders beside source orders on another cluster: %v", err)
	}
	one := strings.Replace(fmt.Sprintf(crossBase, "    brokers: [s:9092]"), "  cluster:\n    brokers: [s:9092]\n", "", 1)
	_, err := config.Parse("p.yml", []byte(one), nil)
	if err == nil || !strings.Contains(err.Error(), "output.topic: \"orders\" is also a source topic") {
		t.Errorf("one cluster, output named as the source: err = %v", err)
	}
}

func TestSourceClusterOnTheSameBrokersIsWarnedOf(t *testing.T) {
	p, err := parseCross(t, `    brokers: ["sink-b:9092", "sink-a:9092"]`, nil)
	if err != nil {
		t.Fatal(err)
	}
	var found bool
	for _, w := range p.Warnings {
		found = found || strings.Contains(w.String(), "source.cluster.brokers: names the same brokers as brokers")
	}
	if !found {
		t.Errorf("warnings %v lack the same-brokers one", p.Warnings)
	}
}
