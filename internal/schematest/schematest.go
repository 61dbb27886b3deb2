// Package schematest runs documents through the repository's JSON schemas
// (configs/*.schema.json) as an editor's YAML language server does, for
// the tests that compare what a schema accepts with what the loaders
// accept.
package schematest

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"go.yaml.in/yaml/v3"
)

// Compile compiles the schema file at path and returns its validator,
// then one for each JSON pointer in fragments (e.g. "#/$defs/transform").
// It fails t when the schema does not compile.
func Compile(t testing.TB, path string, fragments ...string) []*jsonschema.Schema {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	c := jsonschema.NewCompiler()
	url := "file:///" + filepath.Base(path)
	if err := c.AddResource(url, doc); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	var out []*jsonschema.Schema
	for _, f := range append([]string{""}, fragments...) {
		s, err := c.Compile(url + f)
		if err != nil {
			t.Fatalf("%s%s: %v", path, f, err)
		}
		out = append(out, s)
	}
	return out
}

// Value turns a Go value into the value a JSON decoder gives, which is
// what a validator takes.
func Value(t testing.TB, v any) any {
	t.Helper()
	b, err := json.Marshal(v) // a YAML timestamp becomes its RFC 3339 text
	if err != nil {
		t.Fatalf("not JSON: %v", err)
	}
	out, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// YAML is the value the YAML document data stands for, as a validator
// takes it. It fails t when data is not YAML.
func YAML(t testing.TB, data []byte) any {
	t.Helper()
	var v any
	if err := yaml.Unmarshal(data, &v); err != nil {
		t.Fatalf("not YAML: %v", err)
	}
	return Value(t, v)
}
