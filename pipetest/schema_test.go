package pipetest_test

import (
	"encoding/json"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/sharerelay/sharerelay/internal/schematest"
	"github.com/sharerelay/sharerelay/pipetest"
)

const schemaFile = "../configs/pipeline-test.schema.json"

// shippedTestFiles are the tests of the shipped pipelines.
func shippedTestFiles(t *testing.T) []string {
	t.Helper()
	var files []string
	for _, pattern := range []string{"../configs/tests/*.test.yaml", "../configs/examples/tests/*.test.yaml"} {
		m, err := filepath.Glob(pattern)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, m...)
	}
	if len(files) == 0 {
		t.Fatal("no shipped test files found")
	}
	return files
}

func compileSchema(t *testing.T) *jsonschema.Schema {
	t.Helper()
	return schematest.Compile(t, schemaFile)[0]
}

// validate checks the YAML test file data against sch, as an editor's
// yaml-language-server does: as the JSON value the YAML stands for.
func validate(t *testing.T, sch *jsonschema.Schema, data []byte) error {
	t.Helper()
	return sch.Validate(schematest.YAML(t, data))
}

func TestEveryShippedTestFileNamesTheSchemaAndValidatesAgainstIt(t *testing.T) {
	sch := compileSchema(t)
	want, err := filepath.Abs(schemaFile)
	if err != nil {
		t.Fatal(err)
	}
	for _, file := range shippedTestFiles(t) {
		t.Run(filepath.Base(file), func(t *testing.T) {
			data, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			first, _, _ := strings.Cut(string(data), "\n")
			rel, ok := strings.CutPrefix(first, "# yaml-language-server: $schema=")
			if !ok {
				t.Errorf("first line %q does not name the schema for editors", first)
			} else if got, _ := filepath.Abs(filepath.Join(filepath.Dir(file), rel)); got != want {
				t.Errorf("the first line names %s, which is %s, not %s", rel, got, want)
			}
			if err := validate(t, sch, data); err != nil {
				t.Errorf("does not validate against %s:\n%v", schemaFile, err)
			}
		})
	}
}

// TestTheSchemaAndParseAgreeOnWhatIsATestFile runs files that Parse
// rejects, and files it accepts, through the schema: an editor must not
// accept what relay test refuses, nor flag what it takes.
func TestTheSchemaAndParseAgreeOnWhatIsATestFile(t *testing.T) {
	sch := compileSchema(t)
	for _, tc := range []struct {
		name, file string
		valid      bool
	}{
		{"a case with every field set is valid", `max_attempts: 3
cases:
  - name: x
    input: {key: "1", value: {a: 1}, headers: {h: v, n: 2}, delivery_count: 2, topic: t, partition: 1, offset: 9, timestamp: 2024-05-01T12:00:00Z}
    expect:
      outputs:
        - {topic: t, key: "1", value: '{"a": 1}', headers: {h: v, gone: null}}
  - name: y
    expect: {dead_letter: {kind: attempts-exhausted, class: fail, step: 2:fail, reason: jam}}
  - name: z
    input: {key: null, value: null}
    expect: {release: true}
`, true},
		{"a filtered record expects no outputs", "cases:\n  - {name: x, expect: {outputs: []}}\n", true},
		{"a false release beside outputs is no second outcome", "cases:\n  - {name: x, expect: {outputs: [], release: false}}\n", true},
		{"a misspelt field is invalid", "cases:\n  - {name: x, expected: {release: true}}\n", false},
		{"a case without an outcome is invalid", "cases:\n  - {name: x, expect: {}}\n", false},
		{"a false release alone is no outcome", "cases:\n  - {name: x, expect: {release: false}}\n", false},
		{"a case with two outcomes is invalid", "cases:\n  - {name: x, expect: {release: true, outputs: []}}\n", false},
		{"an unknown dead letter kind is invalid", "cases:\n  - {name: x, expect: {dead_letter: {kind: fatal}}}\n", false},
		{"a case without a name is invalid", "cases:\n  - {expect: {release: true}}\n", false},
		{"a file without cases is invalid", "max_attempts: 2\n", false},
		{"a negative delivery count is invalid", "cases:\n  - {name: x, input: {delivery_count: -1}, expect: {release: true}}\n", false},
		{"a negative max_attempts is invalid", "max_attempts: -1\ncases:\n  - {name: x, expect: {release: true}}\n", false},
		{"a header value that is a list is invalid", "cases:\n  - {name: x, input: {headers: {h: [1]}}, expect: {release: true}}\n", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			schemaErr := validate(t, sch, []byte(tc.file))
			_, parseErr := pipetest.Parse("t.test.yaml", []byte(tc.file))
			if (schemaErr == nil) != tc.valid {
				t.Errorf("schema: valid %v, want %v (%v)", schemaErr == nil, tc.valid, schemaErr)
			}
			if (parseErr == nil) != tc.valid {
				t.Errorf("Parse: valid %v, want %v (%v)", parseErr == nil, tc.valid, parseErr)
			}
		})
	}
}

// TestTheSchemaDescribesEveryFieldOfASuiteAndNoOther walks the schema
// along the Go types Parse decodes into: each struct is an object with no
// other properties than the struct's yaml fields, each described.
func TestTheSchemaDescribesEveryFieldOfASuiteAndNoOther(t *testing.T) {
	data, err := os.ReadFile(schemaFile)
	if err != nil {
		t.Fatal(err)
	}
	var root map[string]any
	if err := json.Unmarshal(data, &root); err != nil {
		t.Fatal(err)
	}
	resolve := func(n map[string]any) map[string]any {
		if ref, ok := n["$ref"].(string); ok {
			name := strings.TrimPrefix(ref, "#/$defs/")
			def, ok := root["$defs"].(map[string]any)[name].(map[string]any)
			if !ok {
				t.Fatalf("unresolvable $ref %q", ref)
			}
			return def
		}
		return n
	}
	var walk func(n map[string]any, typ reflect.Type, path string)
	walk = func(n map[string]any, typ reflect.Type, path string) {
		for typ.Kind() == reflect.Pointer {
			typ = typ.Elem()
		}
		n = resolve(n)
		switch {
		case typ.Kind() == reflect.Slice:
			items, ok := n["items"].(map[string]any)
			if !ok {
				t.Errorf("schema %s: a list without items", path)
				return
			}
			walk(items, typ.Elem(), path+"[]")
		case typ.Kind() == reflect.Struct && typ != reflect.TypeFor[time.Time]():
			if n["additionalProperties"] != false {
				t.Errorf("schema %s: additionalProperties is %v, want false", path, n["additionalProperties"])
			}
			props, _ := n["properties"].(map[string]any)
			fields := map[string]reflect.Type{}
			for _, f := range reflect.VisibleFields(typ) {
				name, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
				if f.IsExported() && name != "-" {
					fields[name] = f.Type
				}
			}
			for _, name := range slices.Sorted(maps.Keys(fields)) {
				p := strings.TrimPrefix(path+"."+name, ".")
				prop, ok := props[name].(map[string]any)
				if !ok {
					t.Errorf("schema %s: missing (Go type %s)", p, typ)
					continue
				}
				if d, _ := resolve(prop)["description"].(string); d == "" {
					t.Errorf("schema %s: no description", p)
				}
				walk(prop, fields[name], p)
			}
			for _, name := range slices.Sorted(maps.Keys(props)) {
				if _, ok := fields[name]; !ok {
					t.Errorf("schema %s.%s: no such field in Go type %s", path, name, typ)
				}
			}
		}
	}
	walk(root, reflect.TypeFor[pipetest.Suite](), "")
}
