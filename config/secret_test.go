package config_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/sharerelay/sharerelay/config"
)

// leakBase is a pipeline that sets a field of every kind, with the
// password from the environment.
const leakBase = `name: leaks
brokers: [kafka-1:9093]
delivery: exactly-once
workers: 2
source:
  topics: [orders]
  group: packers
  auto_offset_reset: earliest
  isolation_level: read_committed
  manage_group_config: true
  group_configs: {share.record.lock.duration.ms: "30000"}
output: {topic: jobs, transaction_timeout: 10s}
dead_letter: {topic: jobs.dlq, max_attempts: 3}
batch: {max_records: 100, poll_timeout: 1s, renew_locks: true}
transforms:
  - {type: set, name: mark, field: a, value: x}
  - {type: rename, field: a, to: b}
  - {type: header, header: h, value: v}
  - {type: filter, action: keep, when: {field: status, equals: paid}}
  - {type: route, field: region, routes: {eu: jobs.eu}, default: jobs.other}
  - {type: fail, kind: retry, reason: jam, when: {header: x, modulo: 7, remainder: 1, min_delivery_count: 1, max_delivery_count: 2}}
  - {type: delay, duration: 1ms, when: {field: size, in: [big]}}
metrics: {listen: ":9464"}
ledger: {topic: claims, generation: 1}
tls:
  enabled: true
  ca_file: testdata/security/ca.pem
  cert_file: testdata/security/client.pem
  key_file: testdata/security/client.key
  server_name: kafka.example.com
  insecure_skip_verify: false
sasl:
  mechanism: SCRAM-SHA-512
  username: alice
  password: ${RELAY_TEST_PASSWORD}
client:
  id: packers
  rack: az1
  request_timeout: 10s
  producer: {compression: zstd, linger: 0s, max_batch_bytes: 1024}
  consumer: {fetch_max_bytes: 1048576, fetch_max_wait: 500ms}
`

// scalarRE finds the scalar values of leakBase: after "key: " or "- ",
// up to the next comma, brace, bracket or end of line.
var scalarRE = regexp.MustCompile(`(: |\[|- )([^,{}\[\]\n]+)`)

// TestNoConfigErrorOrWarningShowsAPassword puts the password, or a value
// embedding it, into every field of a pipeline in turn — from the
// environment, and written out while sasl.password holds it too — and
// fails if any error or warning shows it.
func TestNoConfigErrorOrWarningShowsAPassword(t *testing.T) {
	if _, err := config.Parse("base.yml", []byte(leakBase), testEnv); err != nil {
		t.Fatalf("the base pipeline does not parse: %v", err)
	}
	values := []string{
		"${RELAY_TEST_PASSWORD}",
		`"${RELAY_TEST_PASSWORD}"`,
		"x${RELAY_TEST_PASSWORD}x",
		"${RELAY_TEST_CREDS_BROKER}",
		"alice:${RELAY_TEST_PASSWORD}@kafka:9092",
		testPassword,
		"alice:" + testPassword + "@kafka:9092",
		"https://alice:" + testPassword + "@idp.example.com/token",
		"[" + testPassword + "]",
	}
	locs := scalarRE.FindAllStringSubmatchIndex(leakBase, -1)
	if len(locs) < 60 {
		t.Fatalf("found only %d scalars to replace", len(locs))
	}
	checked := 0
	for _, loc := range locs {
		start, end := loc[4], loc[5]
		for _, val := range values {
			y := leakBase[:start] + val + leakBase[end:]
			line := strings.Count(leakBase[:start], "\n") + 1
			p, err := config.Parse("leak.yml", []byte(y), testEnv)
			var texts []string
			if err != nil {
				texts = append(texts, err.Error())
				checked++
			}
			if p != nil {
				for _, w := range p.Warnings {
					texts = append(texts, w.String())
				}
			}
			for _, text := range texts {
				if strings.Contains(text, testPassword) || strings.Contains(text, "hunter2") {
					t.Errorf("line %d set to %s: the password shows in\n%s", line, val, text)
				}
			}
		}
	}
	if checked < 100 {
		t.Errorf("only %d of the variants failed to parse; the test checks too little", checked)
	}
}

func TestEveryBadFileKeepsThePasswordOutOfItsErrors(t *testing.T) {
	files, _ := filepath.Glob("testdata/*.bad.yml")
	for _, file := range files {
		data, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		_, err = config.Parse(file, data, testEnv)
		if err != nil && strings.Contains(err.Error(), testPassword) {
			t.Errorf("%s: the password shows in\n%v", file, err)
		}
	}
}

func TestValidateOfAPipelineBuiltInGoKeepsItsSecretsOutOfErrors(t *testing.T) {
	p := &config.Pipeline{
		Name:    "p",
		Brokers: []string{"alice:" + testPassword + "@kafka:9092"},
		Source:  config.Source{Topics: []string{"bad topic " + testPassword}},
		Output:  config.Output{Topic: "out"},
		SASL:    config.SASL{Mechanism: "PLAIN", Username: "alice", Password: testPassword},
	}
	p.SetDefaults()
	err := p.Validate()
	if err == nil {
		t.Fatal("Validate accepted a bad pipeline")
	}
	if strings.Contains(err.Error(), testPassword) {
		t.Errorf("the password shows in\n%v", err)
	}
}

func TestTheBrokerEntryFromTheIssueNamesItsVariableNotItsValue(t *testing.T) {
	env := func(name string) (string, bool) {
		if name == "KAFKA_BOOTSTRAP_SERVERS" {
			return "user:hunter2@host:9092", true
		}
		return "", false
	}
	y := "name: p\nbrokers: [\"${KAFKA_BOOTSTRAP_SERVERS}\"]\nsource: {topics: [a]}\noutput: {topic: b}\ndead_letter: {topic: c}\n"
	_, err := config.Parse("p.yml", []byte(y), env)
	want := "p.yml:2:11: brokers[0]: the value of ${KAFKA_BOOTSTRAP_SERVERS} is not host:port"
	if err == nil || err.Error() != want {
		t.Errorf("got %v\nwant %s", err, want)
	}
}

func TestAPipelinePrintsMarshalsAndLogsWithItsSecretsRedacted(t *testing.T) {
	data, err := os.ReadFile("testdata/oauth.good.yml")
	if err != nil {
		t.Fatal(err)
	}
	p, err := config.Parse("oauth.good.yml", data, testEnv)
	if err != nil {
		t.Fatal(err)
	}
	p.SASL.Password = testPassword + "-pw" // not used by OAUTHBEARER, but set
	var text, js bytes.Buffer
	slog.New(slog.NewTextHandler(&text, nil)).Info("start", "config", p)
	slog.New(slog.NewJSONHandler(&js, nil)).Info("start", "config", p)
	marshalled, err := json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	for what, out := range map[string]string{
		"text log": text.String(),
		"JSON log": js.String(),
		"%v":       fmt.Sprintf("%v", p),
		"%+v":      fmt.Sprintf("%+v", *p),
		"%#v":      fmt.Sprintf("%#v", *p),
		"JSON":     string(marshalled),
	} {
		if strings.Contains(out, testPassword) {
			t.Errorf("%s shows the secret:\n%s", what, out)
		}
	}
	// The log still says what it can: the effective settings.
	for _, want := range []string{
		"config.sasl.mechanism=OAUTHBEARER", "config.sasl.client_secret=[redacted]",
		"config.client.producer.compression=snappy", "config.output.transaction_timeout=10s",
		"config.tls.insecure_skip_verify=true",
	} {
		if !strings.Contains(text.String(), want) {
			t.Errorf("text log lacks %s:\n%s", want, text.String())
		}
	}
	var decoded struct {
		Config struct {
			SASL struct {
				ClientSecret string `json:"client_secret"`
			} `json:"sasl"`
			Brokers []string `json:"brokers"`
		} `json:"config"`
	}
	if err := json.Unmarshal(js.Bytes(), &decoded); err != nil {
		t.Fatalf("JSON log: %v\n%s", err, js.String())
	}
	if decoded.Config.SASL.ClientSecret != "[redacted]" || len(decoded.Config.Brokers) != 1 {
		t.Errorf("JSON log has the wrong shape: %s", js.String())
	}
}

func TestWarningsPrintWithTheirPositionAndPath(t *testing.T) {
	w := config.Warning{File: "p.yml", Line: 3, Col: 5, Path: "sasl.mechanism", Msg: "PLAIN without TLS"}
	if got, want := w.String(), "p.yml:3:5: warning: sasl.mechanism: PLAIN without TLS"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

func TestAValueReadFromTheEnvironmentStaysHiddenWhenReachedThroughAnAlias(t *testing.T) {
	y := `name: p
x-brokers: &b ${RELAY_TEST_CREDS_BROKER}
brokers: [*b]
source: {topics: [a]}
output: {topic: b}
dead_letter: {topic: c}
`
	_, err := config.Parse("p.yml", []byte(y), testEnv)
	if err == nil {
		t.Fatal("no error")
	}
	if strings.Contains(err.Error(), testPassword) || !strings.Contains(err.Error(), "brokers[0]: the value of ${RELAY_TEST_CREDS_BROKER} is not host:port") {
		t.Errorf("got:\n%v", err)
	}
}
