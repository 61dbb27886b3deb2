package preflight_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sharerelay/sharerelay/config"
	"github.com/sharerelay/sharerelay/internal/kfaketest"
	"github.com/sharerelay/sharerelay/internal/srtest"
	"github.com/sharerelay/sharerelay/preflight"
)

// Two versions of the orders schema: v2 adds a field with a default
// (compatible under BACKWARD).
const (
	ordersV1 = `{"type":"record","name":"Order","namespace":"com.acme","fields":[{"name":"id","type":"long"}]}`
	ordersV2 = `{"type":"record","name":"Order","namespace":"com.acme","fields":[{"name":"id","type":"long"},{"name":"note","type":"string","default":""}]}`
)

// registryPipeline is an at-least-once pipeline on a kfake cluster
// (orders to jobs, dead letters in jobs.dlq) whose file, beside
// orders.avsc (ordersV2) and files (by name), has extra appended: the
// registry and formats.
func registryPipeline(t *testing.T, extra string, files ...map[string]string) (*config.Pipeline, []kgo.Opt) {
	t.Helper()
	c := kfaketest.Cluster(t, kfake.SeedTopics(1, "orders", "jobs", "jobs.dlq", "audit", "archive"))
	dir := t.TempDir()
	all := map[string]string{"orders.avsc": ordersV2}
	for _, fs := range files {
		for name, text := range fs {
			all[name] = text
		}
	}
	for name, text := range all {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	y := fmt.Sprintf("name: p\nbrokers: [%q]\ndelivery: at-least-once\ndead_letter: {topic: jobs.dlq}\n%s", c.ListenAddrs()[0], extra)
	p, err := config.Parse(filepath.Join(dir, "p.yaml"), []byte(y), func(string) (string, bool) { return "", false })
	if err != nil {
		t.Fatal(err)
	}
	return p, []kgo.Opt{kgo.SeedBrokers(c.ListenAddrs()...)}
}

// registryLines returns the report's lines that name registry reg.
func registryLines(rep *preflight.Report, reg string) []string {
	var out []string
	for _, r := range rep.Results {
		if strings.Contains(r.Check, "schema registry "+reg) {
			out = append(out, r.String())
		}
	}
	return out
}

// wantLines checks that the lines naming the registry at url are want,
// in order, url written <url> in them.
func wantLines(t *testing.T, rep *preflight.Report, url string, want ...string) {
	t.Helper()
	got := registryLines(rep, url)
	for i := range want {
		want[i] = strings.ReplaceAll(want[i], "<url>", url)
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("registry lines:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if rep.Failed() != strings.Contains(strings.Join(want, "\n"), "FAIL") {
		t.Errorf("Failed() is %v", rep.Failed())
	}
}

// avroOutput writes orders.avsc to jobs under the registry at url, with
// schema options opts (e.g. "auto_register: true").
func avroOutput(url, opts string) string {
	return fmt.Sprintf("schema_registry: {urls: [%s]}\nsource: {topics: [orders], group: g}\noutput: {topic: jobs, value_format: avro, value_schema: {file: orders.avsc%s}}\n", url, opts)
}

func TestTheRegistryOfAPipelineIsAskedForTheSubjectItsOutputSchemaIsUnder(t *testing.T) {
	for _, tc := range []struct {
		name    string
		setup   func(*srtest.Registry)
		options string
		want    []string
	}{
		{
			name: "a schema file registered under its subject passes",
			setup: func(r *srtest.Registry) {
				r.Register("jobs-value", srtest.Schema{Schema: ordersV1})
				r.Register("jobs-value", srtest.Schema{Schema: ordersV2})
			},
			want: []string{
				"ok: schema registry <url>: reachable (no authentication; default compatibility BACKWARD)",
				"ok: output topic jobs value schema (schema registry <url>): orders.avsc is registered under subject jobs-value: version 2 (of 2), id 2",
			},
		},
		{
			name: "a subject that does not exist fails without auto_register, saying what to do",
			want: []string{
				"ok: schema registry <url>: reachable (no authentication; default compatibility BACKWARD)",
				"FAIL: output topic jobs value schema (schema registry <url>): subject jobs-value does not exist: register orders.avsc under it, or set output.value_schema.auto_register: true",
				"ok: output topic jobs value schema compatibility (schema registry <url>): a new subject: nothing to be compatible with",
			},
		},
		{
			name:    "a subject that does not exist passes with auto_register: the relay registers it",
			options: ", auto_register: true",
			want: []string{
				"ok: schema registry <url>: reachable (no authentication; default compatibility BACKWARD)",
				"ok: output topic jobs value schema (schema registry <url>): subject jobs-value does not exist yet: orders.avsc will be registered under it at the first record (auto_register)",
				"ok: output topic jobs value schema compatibility (schema registry <url>): a new subject: nothing to be compatible with",
			},
		},
		{
			name:  "a schema file not registered under an existing subject fails without auto_register",
			setup: func(r *srtest.Registry) { r.Register("jobs-value", srtest.Schema{Schema: ordersV1}) },
			want: []string{
				"ok: schema registry <url>: reachable (no authentication; default compatibility BACKWARD)",
				"FAIL: output topic jobs value schema (schema registry <url>): orders.avsc is not registered under subject jobs-value (latest: version 1): register it, or set output.value_schema.auto_register: true",
				"ok: output topic jobs value schema compatibility (schema registry <url>): compatible under BACKWARD with version 1 of jobs-value",
			},
		},
		{
			name:    "a schema file to register that the subject's rule refuses fails with the registry's reasons",
			options: ", auto_register: true",
			setup: func(r *srtest.Registry) {
				r.CompatibilityLevel = "FULL_TRANSITIVE"
				r.Register("jobs-value", srtest.Schema{Schema: ordersV1})
				r.Incompatible("READER_FIELD_MISSING_DEFAULT_VALUE: note")
			},
			want: []string{
				"ok: schema registry <url>: reachable (no authentication; default compatibility FULL_TRANSITIVE)",
				"ok: output topic jobs value schema (schema registry <url>): orders.avsc is not registered under subject jobs-value (latest: version 1): it will be registered at the first record (auto_register)",
				"FAIL: output topic jobs value schema compatibility (schema registry <url>): incompatible under FULL_TRANSITIVE with version 1 of jobs-value: READER_FIELD_MISSING_DEFAULT_VALUE: note; the registry would refuse to register orders.avsc: change the schema, or the subject's compatibility",
			},
		},
		{
			name:    "a subject whose rule is NONE warns that the registry checks nothing",
			options: ", auto_register: true",
			setup: func(r *srtest.Registry) {
				r.CompatibilityLevel = "NONE"
				r.Register("jobs-value", srtest.Schema{Schema: ordersV1})
			},
			want: []string{
				"ok: schema registry <url>: reachable (no authentication; default compatibility NONE)",
				"ok: output topic jobs value schema (schema registry <url>): orders.avsc is not registered under subject jobs-value (latest: version 1): it will be registered at the first record (auto_register)",
				"warn: output topic jobs value schema compatibility (schema registry <url>): compatible under NONE with version 1 of jobs-value: the registry checks nothing on this subject, so any schema registers; set a compatibility on jobs-value if its readers rely on one",
			},
		},
		{
			name:  "a registry that answers 503 fails and skips the schemas",
			setup: func(r *srtest.Registry) { r.Down(true) },
			want: []string{
				"FAIL: schema registry <url>: unavailable: HTTP 503: down (the relay would hold every record that needs it)",
				"skipped: output schemas (schema registry <url>): the registry is unavailable",
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			reg := srtest.New()
			defer reg.Close()
			if tc.setup != nil {
				tc.setup(reg)
			}
			p, opts := registryPipeline(t, avroOutput(reg.URL(), tc.options))
			wantLines(t, check(t, p, opts), reg.URL(), tc.want...)
		})
	}
}

func TestARegistryThatRefusesTheCredentialsFailsNamingThoseTheRelaySends(t *testing.T) {
	for _, tc := range []struct{ name, auth, want string }{
		{"basic auth", "basic_auth: {username: relay, password: wrong}",
			"FAIL: schema registry <url>: credentials refused (HTTP 401: unauthorized): the registry refuses basic auth as relay: check schema_registry.basic_auth (username and password)"},
		{"a bearer token", "bearer_token: expired",
			"FAIL: schema registry <url>: credentials refused (HTTP 401: unauthorized): the registry refuses the bearer token: check schema_registry.bearer_token, and whether it expired"},
		{"none", "",
			"FAIL: schema registry <url>: credentials refused (HTTP 401: unauthorized): the registry wants credentials and the relay sends none: add schema_registry.basic_auth or bearer_token"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			reg := srtest.New()
			defer reg.Close()
			reg.Auth = "Bearer right"
			p, opts := registryPipeline(t, fmt.Sprintf("schema_registry: {urls: [%s], %s}\nsource: {topics: [orders], group: g, value_format: avro}\noutput: {topic: jobs}\n", reg.URL(), tc.auth))
			wantLines(t, check(t, p, opts), reg.URL(), tc.want,
				"skipped: source schemas (schema registry <url>): the registry is unavailable",
				"skipped: output schemas (schema registry <url>): the registry is unavailable")
		})
	}
}

func TestASchemaGivenByIDOrVersionMustExistAndOwnSchemasNeedNoLookup(t *testing.T) {
	reg := srtest.New()
	defer reg.Close()
	reg.Register("jobs-value", srtest.Schema{Schema: ordersV1})
	reg.Register("jobs-value", srtest.Schema{Schema: ordersV2})
	proto, _ := reg.Register("other", srtest.Schema{Schema: `syntax = "proto3"; message M { int64 id = 1; }`, SchemaType: "PROTOBUF"})
	p, opts := registryPipeline(t, fmt.Sprintf(`schema_registry: {urls: [%s]}
source: {topics: [orders], group: g, value_format: avro, key_format: avro}
output:
  topic: jobs
  value_schema: {version: "1"}
  routes:
    audit: {value_schema: {id: %d}, key_schema: {subject: nope}}
    archive: {value_schema: {id: 99}, key_format: string}
transforms:
  - {type: route, expr: '"audit"', topics: [audit, archive]}
`, reg.URL(), proto))
	wantLines(t, check(t, p, opts), reg.URL(),
		"ok: schema registry <url>: reachable (no authentication; default compatibility BACKWARD)",
		"ok: source schemas (schema registry <url>): avro values and avro keys: each record's writer schema is read by its id from this registry, which answers",
		"FAIL: output topic archive value schema (schema registry <url>): no schema of id 99 in the registry: set output.routes.archive.value_schema.id to a registered schema's id",
		"FAIL: output topic audit value schema (schema registry <url>): schema id 3 is a PROTOBUF schema, and the output writes avro: set output.routes.audit.value_schema.id to the id of a schema in avro",
		"FAIL: output topic audit key schema (schema registry <url>): subject nope does not exist: register the schema under it first, or name another subject in output.routes.audit.key_schema",
		"ok: output topic jobs value schema (schema registry <url>): subject jobs-value has version 1 (id 1)",
		"ok: output topic jobs key schema (schema registry <url>): avro written with each record's own writer schema (no output.key_schema): nothing to look up",
	)
}

func TestASourceOnARegistryOfItsOwnIsCheckedThere(t *testing.T) {
	src, sink := srtest.New(), srtest.New()
	defer src.Close()
	defer sink.Close()
	sink.Register("jobs-value", srtest.Schema{Schema: ordersV2})
	srcCluster := kfaketest.Cluster(t, kfake.SeedTopics(1, "orders"))
	p, opts := registryPipeline(t, fmt.Sprintf(`schema_registry: {urls: [%s]}
source: {topics: [orders], group: g, value_format: avro, cluster: {brokers: [%q], schema_registry: {urls: [%s]}}}
output: {topic: jobs, value_format: avro, value_schema: {file: orders.avsc}}
`, sink.URL(), srcCluster.ListenAddrs()[0], src.URL()))
	rep := checkBoth(t, p, opts, []kgo.Opt{kgo.SeedBrokers(srcCluster.ListenAddrs()...)})
	wantLines(t, rep, src.URL(),
		"ok: schema registry <url>: reachable (no authentication; default compatibility BACKWARD)",
		"ok: source schemas (schema registry <url>): avro values: each record's writer schema is read by its id from this registry, which answers")
	wantLines(t, rep, sink.URL(),
		"ok: schema registry <url>: reachable (no authentication; default compatibility BACKWARD)",
		"ok: output topic jobs value schema (schema registry <url>): orders.avsc is registered under subject jobs-value: version 1 (of 1), id 1")
}

// A Protobuf file is looked up with the references to the files it
// imports, each under its own subject, as the relay looks it up.
func TestAProtobufFileIsLookedUpWithItsImports(t *testing.T) {
	const (
		common = "syntax = \"proto3\";\npackage acme;\nmessage Money { int64 cents = 1; }\n"
		order  = "syntax = \"proto3\";\npackage acme;\nimport \"common.proto\";\nmessage Order { int64 id = 1; Money total = 2; }\n"
	)
	reg := srtest.New()
	defer reg.Close()
	yaml := fmt.Sprintf("schema_registry: {urls: [%s]}\nsource: {topics: [orders], group: g}\noutput: {topic: jobs, value_format: protobuf, value_schema: {file: order.proto}}\n", reg.URL())
	p, opts := registryPipeline(t, yaml, map[string]string{"order.proto": order, "common.proto": common})
	wantLines(t, check(t, p, opts), reg.URL(),
		"ok: schema registry <url>: reachable (no authentication; default compatibility BACKWARD)",
		"FAIL: output topic jobs value schema (schema registry <url>): common.proto, imported by order.proto: looking up the schema under subject common.proto: not found in the schema registry (Subject not found): register it, or set output.value_schema.auto_register: true")

	_, v := reg.Register("common.proto", srtest.Schema{Schema: common, SchemaType: "PROTOBUF"})
	_, _ = reg.Register("jobs-value", srtest.Schema{Schema: order, SchemaType: "PROTOBUF", References: []srtest.Reference{{Name: "common.proto", Subject: "common.proto", Version: v}}})
	wantLines(t, check(t, p, opts), reg.URL(),
		"ok: schema registry <url>: reachable (no authentication; default compatibility BACKWARD)",
		"ok: output topic jobs value schema (schema registry <url>): order.proto is registered under subject jobs-value: version 1 (of 1), id 2")
}
