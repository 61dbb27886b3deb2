package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The repository's files, from this package's directory.
const (
	repoSchema = "../../../configs/pipeline.schema.json"
	repoPage   = "../../../docs/configuration.md"
)

func TestTheConfigurationPageIsWhatTheSchemaGives(t *testing.T) {
	want, err := generate(repoSchema, repoPage)
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(repoPage)
	if err != nil {
		t.Fatalf("%v\nwrite it with: %s", err, command)
	}
	if string(got) == want {
		return
	}
	gl, wl := strings.Split(string(got), "\n"), strings.Split(want, "\n")
	for i := range max(len(gl), len(wl)) {
		var g, w string
		if i < len(gl) {
			g = gl[i]
		}
		if i < len(wl) {
			w = wl[i]
		}
		if g != w {
			t.Fatalf("docs/configuration.md is not what configs/pipeline.schema.json gives; regenerate it with (from the repository's root):\n\t%s\nfirst difference, line %d:\n\tpage:   %.200q\n\tschema: %.200q", command, i+1, g, w)
		}
	}
}

// renderSchema renders an inline schema for a test.
func renderSchema(t *testing.T, schema string) string {
	t.Helper()
	d, err := newSchemaDoc([]byte(schema))
	if err != nil {
		t.Fatal(err)
	}
	return render(d, "s.json", "s.json", "cmd")
}

// part returns the page from the line that starts with heading to the
// next heading of the same or a higher level.
func part(t *testing.T, page, heading string) string {
	t.Helper()
	i := strings.Index(page, "\n"+heading+"\n")
	if i < 0 {
		t.Fatalf("no heading %q in:\n%s", heading, page)
	}
	rest := page[i+1:]
	level := strings.Index(heading, " ") + 1 // "### " → 4
	for j := len(heading); j < len(rest); {
		k := strings.Index(rest[j:], "\n#")
		if k < 0 {
			break
		}
		j += k + 1
		if n := strings.Index(rest[j:], " "); n >= 0 && n+1 <= level {
			return rest[:j]
		}
		j++
	}
	return rest
}

// row returns the table row of field in text.
func row(t *testing.T, text, field string) string {
	t.Helper()
	for line := range strings.SplitSeq(text, "\n") {
		if strings.HasPrefix(line, "| `"+field+"` |") {
			return line
		}
	}
	return ""
}

// steps is a transform step in the form of if/then branches in allOf:
// the fields a type does not use are set to false, as the shipped schema
// does.
const ifThenSteps = `{
  "type": "object",
  "properties": {"steps": {"type": "array", "items": {"$ref": "#/$defs/step"}}},
  "$defs": {
    "step": {
      "type": "object",
      "required": ["type"],
      "properties": {
        "type": {"type": "string", "enum": ["set", "copy", "route"], "description": "The step:\n- set: set field to value\n- copy: copy the record\n- route: choose a topic"},
        "field": {"type": "string", "description": "A path."},
        "value": {"description": "What to set."},
        "topics": {"type": "array", "minItems": 1, "items": {"type": "string"}, "description": "Topics."},
        "expr": {"type": "string"}
      },
      "allOf": [
        {"if": {"properties": {"type": {"const": "set"}}, "required": ["type"]},
         "then": {"required": ["field"], "properties": {"topics": false, "expr": false}}},
        {"if": {"properties": {"type": {"const": "copy"}}, "required": ["type"]},
         "then": {"required": ["topics"], "properties": {"field": false, "value": false, "expr": false}}},
        {"if": {"properties": {"type": {"enum": ["copy", "route"]}}, "required": ["type"]},
         "then": {"properties": {"value": false}}},
        {"if": {"properties": {"type": {"const": "route"}}, "required": ["type"]},
         "then": {"anyOf": [{"required": ["field", "topics"], "properties": {"expr": false}},
                            {"required": ["expr", "topics"], "properties": {"field": false}}]}}
      ]
    }
  }
}`

func TestIfThenBranchesGiveEachTypeASubsectionWithOnlyItsFields(t *testing.T) {
	page := renderSchema(t, ifThenSteps)
	set := part(t, page, "### `type: set`")
	if !strings.Contains(set, "Set field to value.") {
		t.Errorf("the set subsection does not start with its line of the type's description:\n%s", set)
	}
	if r := row(t, set, "field"); !strings.Contains(r, "**required**") {
		t.Errorf("set's field is not marked required: %q", r)
	}
	if row(t, set, "value") == "" {
		t.Errorf("set's value is missing:\n%s", set)
	}
	for _, f := range []string{"topics", "expr", "type"} {
		if r := row(t, set, f); r != "" {
			t.Errorf("set lists %s, which its branch forbids (or which selects it): %q", f, r)
		}
	}
	cp := part(t, page, "### `type: copy`")
	if r := row(t, cp, "topics"); !strings.Contains(r, "**required**") || !strings.Contains(r, "at least 1 item") {
		t.Errorf("copy's topics: %q", r)
	}
	if row(t, cp, "field") != "" || row(t, cp, "value") != "" {
		t.Errorf("copy lists fields its branch forbids:\n%s", cp)
	}
	route := part(t, page, "### `type: route`")
	if row(t, route, "value") != "" {
		t.Errorf("route lists value, which an if naming it with another type in an enum forbids:\n%s", route)
	}
	if !strings.Contains(route, "One of these forms:\n\n- `field` + `topics`\n- `expr` + `topics`") {
		t.Errorf("route's forms are not listed:\n%s", route)
	}
	if !strings.Contains(part(t, page, "## `steps[]`"), "| `type` | string | **required** | one of `set`, `copy` or `route` |") {
		t.Errorf("the type field is not described once before the subsections:\n%s", page)
	}
}

// oneOfSteps is a transform step as oneOf alternatives, each a
// definition of its own that fixes type with const and declares its own
// fields: the form a schema with per-type branches may take.
const oneOfSteps = `{
  "type": "object",
  "properties": {"steps": {"type": "array", "items": {"$ref": "#/$defs/step"}}},
  "$defs": {
    "step": {
      "type": "object",
      "description": "One step.",
      "properties": {"name": {"type": "string", "description": "Names the step."}},
      "oneOf": [{"$ref": "#/$defs/setStep"}, {"$ref": "#/$defs/delayStep"}]
    },
    "setStep": {
      "type": "object",
      "description": "set: stores a value.",
      "required": ["type", "field"],
      "properties": {
        "type": {"const": "set"},
        "name": true,
        "field": {"type": "string", "description": "Where to store it."}
      },
      "additionalProperties": false
    },
    "delayStep": {
      "type": "object",
      "required": ["type"],
      "properties": {
        "type": {"const": "delay"},
        "name": true,
        "duration": {"type": "string", "pattern": "^[0-9]+ms$", "default": "10ms", "description": "How long."}
      },
      "additionalProperties": false
    }
  }
}`

func TestOneOfBranchesGiveEachTypeASubsectionWithItsOwnFields(t *testing.T) {
	page := renderSchema(t, oneOfSteps)
	set := part(t, page, "### `type: set`")
	if !strings.Contains(set, "Set: stores a value.") {
		t.Errorf("set's own description is missing:\n%s", set)
	}
	if r := row(t, set, "field"); !strings.Contains(r, "**required**") || !strings.Contains(r, "Where to store it.") {
		t.Errorf("set's field: %q", r)
	}
	if r := row(t, set, "name"); !strings.Contains(r, "Names the step.") {
		t.Errorf("name, declared true by the branch, does not keep the common description: %q", r)
	}
	if row(t, set, "duration") != "" {
		t.Errorf("set lists delay's field:\n%s", set)
	}
	delay := part(t, page, "### `type: delay`")
	if r := row(t, delay, "duration"); !strings.Contains(r, "`10ms`") || !strings.Contains(r, "matches `^[0-9]+ms$`") {
		t.Errorf("delay's duration: %q", r)
	}
	if strings.Contains(page, "## `setStep`") || strings.Contains(page, "### setStep") {
		t.Errorf("a branch's definition is described apart from its type:\n%s", page)
	}
}

func TestARowGivesTypeDefaultRangeAndDescription(t *testing.T) {
	page := renderSchema(t, `{
  "type": "object",
  "required": ["topic"],
  "properties": {
    "workers": {"description": "How many.", "anyOf": [{"type": "integer", "minimum": 1, "maximum": 256}, {"$ref": "#/$defs/envReference"}], "default": 1},
    "mode": {"anyOf": [{"enum": ["a", "b"]}, {"$ref": "#/$defs/envReference"}], "default": "a"},
    "bytes": {"anyOf": [{"type": "integer", "anyOf": [{"const": 0}, {"minimum": 512, "maximum": 1024}]}, {"$ref": "#/$defs/envReference"}]},
    "topic": {"$ref": "#/$defs/topic", "description": "Where to <name> | go."},
    "tags": {"type": "object", "propertyNames": {"pattern": "^x-"}, "additionalProperties": {"type": "string"}},
    "inner": {"type": "object", "properties": {"cond": {"$ref": "#/$defs/cond"}}},
    "cond": {"$ref": "#/$defs/cond"}
  },
  "$defs": {
    "topic": {"type": "string", "pattern": "^[a-z]+$", "description": "A topic name."},
    "envReference": {"type": "string", "pattern": "\\$\\{"},
    "cond": {"type": "object", "description": "A condition.", "properties": {"expr": {"type": "string"}}, "dependentRequired": {"a": ["b"]}, "not": {"required": ["a", "c"]}}
  }
}`)
	for field, want := range map[string][]string{
		"workers": {"| integer |", "| `1` |", "| 1 to 256 |", "How many."},
		"mode":    {"| string |", "| `a` |", "one of `a` or `b`"},
		"bytes":   {"| integer |", "`0`, or 512 to 1024"},
		"topic":   {"[topic](#topic)", "**required**", `Where to &lt;name&gt; \| go.`},
		"tags":    {"map of string to string", "keys match `^x-`"},
		"inner":   {"object, see [`inner`](#inner)"},
		"cond":    {"object, see [`cond`](#cond)"},
	} {
		r := row(t, page, field)
		for _, w := range want {
			if !strings.Contains(r, w) {
				t.Errorf("row of %s lacks %q: %q", field, w, r)
			}
		}
	}
	// Described where first met: the top table's row comes before the
	// section of inner, which links to it.
	if n := strings.Count(page, "\n## `cond`\n"); n != 1 || strings.Contains(page, "## `inner.cond`") {
		t.Errorf("a definition used twice has %d sections named cond, want 1 and no other:\n%s", n, page)
	}
	if r := row(t, part(t, page, "## `inner`"), "cond"); !strings.Contains(r, "object, see [`cond`](#cond)") {
		t.Errorf("inner's cond does not link to the one section: %q", r)
	}
	cond := part(t, page, "## `cond`")
	for _, w := range []string{"- `a` needs `b`.\n", "- `a` and `c` cannot be set together.\n"} {
		if !strings.Contains(cond, w) {
			t.Errorf("the condition's section lacks %q:\n%s", w, cond)
		}
	}
	if !strings.Contains(part(t, page, "### topic"), "A topic name.") {
		t.Errorf("the value type topic is not described:\n%s", page)
	}
}

func TestTheCommandWritesThePageNamingTheSchemaFromTheModuleRoot(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "docs", "configuration.md")
	if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := run(repoSchema, out, nil); err != nil {
		t.Fatal(err)
	}
	page, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(string(page), "<!-- Generated from configs/pipeline.schema.json by `go run ./internal/tools/schemadoc`.") {
		t.Errorf("the page does not say what it is generated from and how: %.200q", page)
	}
}

func TestAStepThatIsOnlyOneOfItsTypesGetsOneSectionWithASubsectionPerType(t *testing.T) {
	page := renderSchema(t, `{
  "type": "object",
  "properties": {"steps": {"type": "array", "items": {"$ref": "#/$defs/step"}}},
  "$defs": {
    "step": {"oneOf": [{"$ref": "#/$defs/a"}, {"$ref": "#/$defs/b"}]},
    "a": {"type": "object", "required": ["type"], "properties": {"type": {"const": "a"}, "x": {"type": "integer", "minimum": 1}}},
    "b": {"type": "object", "required": ["type", "y"], "properties": {"type": {"const": "b"}, "y": {"type": "string"}}}
  }
}`)
	if n := strings.Count(page, "\n## `steps[]`\n"); n != 1 {
		t.Fatalf("%d sections for the step, want 1:\n%s", n, page)
	}
	if r := row(t, part(t, page, "### `type: a`"), "x"); !strings.Contains(r, "at least 1") {
		t.Errorf("a's x: %q", r)
	}
	if r := row(t, part(t, page, "### `type: b`"), "y"); !strings.Contains(r, "**required**") {
		t.Errorf("b's y: %q", r)
	}
	if r := row(t, page, "steps"); !strings.Contains(r, "list of object, see [`steps[]`](#steps)") {
		t.Errorf("the steps field does not link to the step's section: %q", r)
	}
}
