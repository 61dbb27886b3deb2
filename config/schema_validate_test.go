package config_test

import (
	"encoding/json"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/sharerelay/sharerelay/config"
	"github.com/sharerelay/sharerelay/internal/schematest"
	"github.com/sharerelay/sharerelay/transform"
)

// These tests run the schema through a validator of draft 2020-12, as an
// editor does, rather than reading its structure: what it accepts and
// rejects is compared with what config.Parse accepts and rejects.

// compiledSchema returns the validators of a whole pipeline file and of
// one transform step.
func compiledSchema(t *testing.T) (file, step *jsonschema.Schema) {
	t.Helper()
	s := schematest.Compile(t, schemaFile, "#/$defs/transform")
	return s[0], s[1]
}

func mustReadFile(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// asJSON is the value a validator takes for v.
func asJSON(t *testing.T, v any) any { return schematest.Value(t, v) }

// yamlDoc is the value a validator takes for the YAML file at path.
func yamlDoc(t *testing.T, path string) any { return schematest.YAML(t, mustReadFile(t, path)) }

func TestShippedAndTestPipelinesValidateAgainstTheSchema(t *testing.T) {
	var files []string
	for _, g := range []string{"../configs/*.yaml", "../configs/examples/*.yaml", "testdata/*.good.yml"} {
		m, err := filepath.Glob(g)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, m...)
	}
	if len(files) < 8 {
		t.Fatalf("found %d pipeline files: the globs no longer see them", len(files))
	}
	file, _ := compiledSchema(t)
	for _, f := range files {
		if err := file.Validate(yamlDoc(t, f)); err != nil {
			t.Errorf("%s: the schema rejects a pipeline the relay accepts:\n%v", f, err)
		}
	}
}

// minimalSteps are, per transform type, a step with only the fields the
// type requires.
var minimalSteps = map[string]map[string]any{
	"set":    {"field": "a"},
	"map":    {"expr": "value"},
	"rename": {"field": "a", "to": "b"},
	"remove": {"field": "a"},
	"header": {"header": "h", "value": "v"},
	"key":    {"field": "a"},
	"filter": {"when": map[string]any{"field": "a", "exists": true}},
	"route":  {"field": "a", "routes": map[string]any{"x": "t1"}},
	"split":  {"field": "a"},
	"copy":   {"topics": []any{"t1"}},
	"fail":   {"when": map[string]any{"field": "a", "exists": true}},
	"delay":  {"duration": "10ms"},
}

// sampleValues are a valid value for each field of a step, to add to a
// minimal step.
var sampleValues = map[string]any{
	"field":    "b",
	"to":       "c",
	"value":    "v",
	"expr":     `"t2"`,
	"header":   "h2",
	"when":     map[string]any{"field": "a", "exists": true},
	"action":   "keep",
	"routes":   map[string]any{"y": "t2"},
	"default":  "t2",
	"topics":   []any{"t2"},
	"cases":    []any{map[string]any{"expr": "true", "topic": "t2"}},
	"kind":     "permanent",
	"reason":   "r",
	"duration": "10ms",
	"bogus":    "x", // no type has it
}

// loaderAccepts reports whether config.Parse accepts a pipeline whose one
// transform is step, and the error if not.
func loaderAccepts(t *testing.T, step map[string]any) (bool, error) {
	t.Helper()
	p := map[string]any{
		"name":        "p",
		"brokers":     []any{"localhost:9092"},
		"source":      map[string]any{"topics": []any{"in"}},
		"output":      map[string]any{"topic": "out"},
		"dead_letter": map[string]any{"topic": "out.dlq"},
		"transforms":  []any{step},
	}
	b, err := json.Marshal(p) // JSON is YAML
	if err != nil {
		t.Fatal(err)
	}
	_, err = config.Parse("step.yaml", b, nil)
	return err == nil, err
}

// branchFields returns the fields the schema's branch for typ declares
// (and does not forbid).
func branchFields(t *testing.T, typ string) []string {
	t.Helper()
	spec := loadSchema(t)["$defs"].(schemaNode)["transform"].(schemaNode)
	for _, a := range spec["allOf"].([]any) {
		a := a.(schemaNode)
		if a["if"].(schemaNode)["properties"].(schemaNode)["type"].(schemaNode)["const"] == typ {
			var own []string
			for name, p := range a["then"].(schemaNode)["properties"].(schemaNode) {
				if p != false {
					own = append(own, name)
				}
			}
			return own
		}
	}
	t.Fatalf("schema: no branch for transform type %s", typ)
	return nil
}

func TestSchemaAllowsInEachTransformTypeOnlyTheFieldsTheLoaderAccepts(t *testing.T) {
	_, stepSchema := compiledSchema(t)
	if got, want := slices.Sorted(maps.Keys(minimalSteps)), slices.Sorted(maps.Keys(transform.Registry)); !slices.Equal(got, want) {
		t.Fatalf("minimalSteps has types %v, transform.Registry %v", got, want)
	}
	var fields []string
	for name := range yamlNames(reflect.TypeFor[transform.Spec]()) {
		if name != "type" && name != "name" {
			fields = append(fields, name)
		}
	}
	slices.Sort(fields)
	fields = append(fields, "bogus")
	for _, typ := range slices.Sorted(maps.Keys(minimalSteps)) {
		own := branchFields(t, typ)
		t.Run(typ, func(t *testing.T) {
			base := map[string]any{"type": typ, "name": "s"}
			maps.Copy(base, minimalSteps[typ])
			if err := stepSchema.Validate(asJSON(t, base)); err != nil {
				t.Fatalf("the schema rejects the minimal %s step %v:\n%v", typ, base, err)
			}
			if ok, err := loaderAccepts(t, base); !ok {
				t.Fatalf("the loader rejects the minimal %s step %v: %v", typ, base, err)
			}
			for _, f := range fields {
				if _, ok := base[f]; ok {
					continue
				}
				step := maps.Clone(base)
				step[f] = sampleValues[f]
				schemaErr := stepSchema.Validate(asJSON(t, step))
				loaderOK, loaderErr := loaderAccepts(t, step)
				if (schemaErr == nil) != loaderOK {
					t.Errorf("a %s step with %s: the schema says %v, the loader %v", typ, f, verdict(schemaErr), verdict(loaderErr))
				}
				if !slices.Contains(own, f) && schemaErr == nil {
					t.Errorf("a %s step with %s, a field of another type: the schema accepts it", typ, f)
				}
			}
		})
	}
}

func verdict(err error) string {
	if err == nil {
		return "valid"
	}
	return "invalid (" + strings.ReplaceAll(err.Error(), "\n", " ") + ")"
}

func TestSchemaAndLoaderJudgeTheEdgesOfATypeAlike(t *testing.T) {
	_, stepSchema := compiledSchema(t)
	tests := []struct {
		name  string
		step  map[string]any
		valid bool
	}{
		{"set with both value and expr is invalid", map[string]any{"type": "set", "field": "a", "value": 1, "expr": "1"}, false},
		{"set with a null value and expr is valid (a null value is no value)", map[string]any{"type": "set", "field": "a", "value": nil, "expr": "1"}, true},
		{"set with a list value is valid", map[string]any{"type": "set", "field": "a", "value": []any{1, "x"}}, true},
		{"header with a list value is invalid", map[string]any{"type": "header", "header": "h", "value": []any{1}}, false},
		{"header with a null value is invalid", map[string]any{"type": "header", "header": "h", "value": nil}, false},
		{"header with a number value is valid", map[string]any{"type": "header", "header": "h", "value": 3}, true},
		{"header with an expression is valid", map[string]any{"type": "header", "header": "h", "expr": `value.region`, "action": "set"}, true},
		{"header without value or expression is invalid", map[string]any{"type": "header", "header": "h", "action": "set"}, false},
		{"header removed needs no value", map[string]any{"type": "header", "header": "h", "action": "remove"}, true},
		{"header removed with a value is invalid", map[string]any{"type": "header", "header": "h", "action": "remove", "value": "v"}, false},
		{"key from an expression is valid", map[string]any{"type": "key", "expr": `value.id`}, true},
		{"key removed is valid", map[string]any{"type": "key", "action": "remove"}, true},
		{"key with nothing is invalid", map[string]any{"type": "key"}, false},
		{"key from a field and an expression is invalid", map[string]any{"type": "key", "field": "a", "expr": `value.id`}, false},
		{"route by expr with its topics is valid", map[string]any{"type": "route", "expr": `"t1"`, "topics": []any{"t1"}}, true},
		{"route by cases is valid", map[string]any{"type": "route", "cases": []any{map[string]any{"expr": "true", "topic": "t1"}}}, true},
		{"route mixing routes and cases is invalid", map[string]any{"type": "route", "field": "a", "routes": map[string]any{"x": "t1"}, "cases": []any{map[string]any{"expr": "true", "topic": "t1"}}}, false},
		{"route with only a default is invalid", map[string]any{"type": "route", "default": "t1"}, false},
		{"filter without when is invalid", map[string]any{"type": "filter", "action": "keep"}, false},
		{"an unknown type is invalid", map[string]any{"type": "sett", "field": "a"}, false},
		{"a step without a type is invalid", map[string]any{"field": "a"}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			schemaErr := stepSchema.Validate(asJSON(t, tt.step))
			loaderOK, loaderErr := loaderAccepts(t, tt.step)
			if (schemaErr == nil) != tt.valid || loaderOK != tt.valid {
				t.Errorf("%v: the schema says %s, the loader %s; want both valid = %v", tt.step, verdict(schemaErr), verdict(loaderErr), tt.valid)
			}
		})
	}
}
