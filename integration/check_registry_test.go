package integration

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/sr"

	"github.com/sharerelay/sharerelay/integration/harness"
	"github.com/sharerelay/sharerelay/integration/registrytest"
)

// The output schema of the check: version 1 is in the registry; the
// compatible file adds a field with a default, the incompatible one a
// field without (BACKWARD refuses it: a reader of it cannot read the
// records written before).
const (
	checkOrderV1           = `{"type":"record","name":"Order","namespace":"com.acme","fields":[{"name":"id","type":"long"}]}`
	checkOrderCompatible   = `{"type":"record","name":"Order","namespace":"com.acme","fields":[{"name":"id","type":"long"},{"name":"note","type":"string","default":""}]}`
	checkOrderIncompatible = `{"type":"record","name":"Order","namespace":"com.acme","fields":[{"name":"id","type":"long"},{"name":"note","type":"string"}]}`
)

// relay check, against a real broker and a real registry (Apicurio), for
// a pipeline whose output is Avro written with a schema file: the
// registry is reachable, the subject the relay derives is found, and the
// registry's own compatibility check decides whether the file may be
// registered under the subject's rule. Nothing is registered.
func TestRealBrokerCheckAsksTheSchemaRegistry(t *testing.T) {
	seeds := seedsFor(t)
	reg := registrytest.Shared(t)
	p := newPipe(t, seeds, harness.PipelineOptions{Delivery: "at-least-once"})
	subject := p.Output + "-value"

	cl, err := sr.NewClient(sr.URLs(reg.URL()))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	v1, err := cl.CreateSchema(ctx, subject, sr.Schema{Schema: checkOrderV1})
	if err != nil {
		t.Fatal(err)
	}
	// Apicurio checks nothing by default (NONE): the subject gets a rule.
	if res := cl.SetCompatibility(ctx, sr.SetCompatibility{Level: sr.CompatBackward}, subject); res[0].Err != nil {
		t.Fatal(res[0].Err)
	}
	writeCheckPipeline(t, p, reg.URL())
	registryLines := func(out string) string {
		var ls []string
		for _, l := range strings.Split(out, "\n") {
			if strings.Contains(l, "schema registry ") {
				ls = append(ls, l)
			}
		}
		return strings.Join(ls, "\n")
	}
	schemaLine := "ok: output topic " + p.Output + " value schema (schema registry " + reg.URL() + "): orders.avsc is not registered under subject " + subject + " (latest: version 1): it will be registered at the first record (auto_register)"

	for _, tc := range []struct {
		name, schema string
		code         int
		want         []string
	}{
		{"a file compatible with the subject's latest version passes", checkOrderCompatible, 0, []string{
			"ok: schema registry " + reg.URL() + ": reachable (no authentication; default compatibility NONE)",
			schemaLine,
			"ok: output topic " + p.Output + " value schema compatibility (schema registry " + reg.URL() + "): compatible under BACKWARD with version 1 of " + subject,
		}},
		{"a file the subject's rule refuses fails", checkOrderIncompatible, 1, []string{
			"ok: schema registry " + reg.URL() + ": reachable (no authentication; default compatibility NONE)",
			schemaLine,
			"FAIL: output topic " + p.Output + " value schema compatibility (schema registry " + reg.URL() + "): incompatible under BACKWARD with version 1 of " + subject + " (no reasons given); the registry would refuse to register orders.avsc: change the schema, or the subject's compatibility",
		}},
		{"a file registered under the subject passes", checkOrderV1, 0, []string{
			"ok: schema registry " + reg.URL() + ": reachable (no authentication; default compatibility NONE)",
			"ok: output topic " + p.Output + " value schema (schema registry " + reg.URL() + "): orders.avsc is registered under subject " + subject + ": version 1 (of 1), id " + strconv.Itoa(v1.ID),
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := os.WriteFile(filepath.Join(filepath.Dir(p.Path), "orders.avsc"), []byte(tc.schema), 0o644); err != nil {
				t.Fatal(err)
			}
			code, out := relayCheck(t, p)
			t.Logf("relay check, exit %d:\n%s", code, out)
			if got, want := registryLines(out), strings.Join(tc.want, "\n"); got != want {
				t.Errorf("the registry's lines:\n%s\nwant:\n%s", got, want)
			}
			if code != tc.code {
				t.Errorf("exit %d, want %d", code, tc.code)
			}
		})
	}

	// relay check registered nothing: the subject still has its one
	// version.
	vs, err := cl.SubjectVersions(ctx, subject)
	if err != nil || len(vs) != 1 {
		t.Fatalf("versions of %s after relay check: %v, %v; want [1]", subject, vs, err)
	}
}

// writeCheckPipeline makes p's output Avro, written with orders.avsc
// (beside the file) under the registry at url, registered by the relay
// when it is not there yet.
func writeCheckPipeline(t *testing.T, p *harness.Pipeline, url string) {
	t.Helper()
	b, err := os.ReadFile(p.Path)
	if err != nil {
		t.Fatal(err)
	}
	out := "output:\n  topic: " + p.Output + "\n"
	y := string(b)
	if !strings.Contains(y, out) {
		t.Fatalf("no %q in the pipeline file:\n%s", out, y)
	}
	y = strings.Replace(y, out, out+"  value_format: avro\n  value_schema: {file: orders.avsc, auto_register: true}\n", 1)
	y += "\nschema_registry:\n  urls: [" + url + "]\n"
	if err := os.WriteFile(p.Path, []byte(y), 0o644); err != nil {
		t.Fatal(err)
	}
}
