package config_test

import (
	"encoding/json"
	"maps"
	"os"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sharerelay/sharerelay/config"
	"github.com/sharerelay/sharerelay/transform"
)

const schemaFile = "../configs/pipeline.schema.json"

type schemaNode = map[string]any

func loadSchema(t *testing.T) schemaNode {
	t.Helper()
	data, err := os.ReadFile(schemaFile)
	if err != nil {
		t.Fatal(err)
	}
	var s schemaNode
	if err := json.Unmarshal(data, &s); err != nil {
		t.Fatalf("%s: %v", schemaFile, err)
	}
	if got, want := s["$schema"], "https://json-schema.org/draft/2020-12/schema"; got != want {
		t.Errorf("$schema is %v, want %s", got, want)
	}
	return s
}

// resolve follows a "$ref": "#/$defs/name" in n.
func resolve(t *testing.T, root, n schemaNode) schemaNode {
	t.Helper()
	for {
		ref, ok := n["$ref"].(string)
		if !ok {
			return n
		}
		name, ok := strings.CutPrefix(ref, "#/$defs/")
		def, found := root["$defs"].(schemaNode)[name].(schemaNode)
		if !ok || !found {
			t.Fatalf("unresolvable $ref %q", ref)
		}
		n = def
	}
}

// jsonTypes collects the JSON types n allows, through $ref and anyOf.
func jsonTypes(t *testing.T, root, n schemaNode) []string {
	n = resolve(t, root, n)
	var types []string
	switch typ := n["type"].(type) {
	case string:
		types = append(types, typ)
	case []any:
		for _, x := range typ {
			types = append(types, x.(string))
		}
	}
	for _, key := range []string{"anyOf", "oneOf"} {
		alts, _ := n[key].([]any)
		for _, a := range alts {
			types = append(types, jsonTypes(t, root, a.(schemaNode))...)
		}
	}
	return types
}

// yamlNames lists the yaml keys of struct type typ, in field order.
func yamlNames(typ reflect.Type) map[string]reflect.StructField {
	fields := map[string]reflect.StructField{}
	for _, f := range reflect.VisibleFields(typ) {
		tag := f.Tag.Get("yaml")
		if !f.IsExported() || tag == "-" {
			continue
		}
		name, _, _ := strings.Cut(tag, ",")
		if name == "" {
			name = strings.ToLower(f.Name)
		}
		fields[name] = f
	}
	return fields
}

// checkSchema checks that schema node n describes Go type typ: a struct is
// an object whose properties are exactly the struct's yaml fields, each
// described and checked in turn, with no additional properties; a slice is
// an array of its element; a map an object of its values; a leaf allows
// its JSON type.
func checkSchema(t *testing.T, root, n schemaNode, typ reflect.Type, path string) {
	t.Helper()
	for typ.Kind() == reflect.Pointer {
		typ = typ.Elem()
	}
	n = resolve(t, root, n)
	types := jsonTypes(t, root, n)
	allows := func(want string) {
		t.Helper()
		if !slices.Contains(types, want) {
			t.Errorf("schema %s: allows types %v, want %s for Go type %s", path, types, want, typ)
		}
	}
	switch {
	case typ == reflect.TypeFor[time.Duration]():
		allows("string")
	case typ.Kind() == reflect.Struct:
		allows("object")
		props := closedProperties(t, n, path)
		fields := yamlNames(typ)
		for _, name := range slices.Sorted(maps.Keys(fields)) {
			p := strings.TrimPrefix(path+"."+name, ".")
			if len(props[name]) == 0 {
				t.Errorf("schema %s: missing (Go field %s.%s)", p, typ, fields[name].Name)
				continue
			}
			for _, prop := range props[name] {
				if d, _ := prop.node["description"].(string); d == "" {
					t.Errorf("schema %s: no description", p)
				}
				if prop.branch && fields[name].Type.Kind() == reflect.Interface {
					continue // a branch may narrow a field of any value (header's value)
				}
				checkSchema(t, root, prop.node, fields[name].Type, p)
			}
		}
		for _, name := range slices.Sorted(maps.Keys(props)) {
			if _, ok := fields[name]; !ok {
				t.Errorf("schema %s.%s: no such field in Go type %s", path, name, typ)
			}
		}
	case typ.Kind() == reflect.Slice:
		allows("array")
		items, ok := n["items"].(schemaNode)
		if !ok {
			t.Errorf("schema %s: array without items", path)
			return
		}
		checkSchema(t, root, items, typ.Elem(), path+"[]")
	case typ.Kind() == reflect.Map:
		allows("object")
		values, ok := n["additionalProperties"].(schemaNode)
		if !ok {
			t.Errorf("schema %s: map without an additionalProperties schema", path)
			return
		}
		checkSchema(t, root, values, typ.Elem(), path+".*")
	case typ.Kind() == reflect.Interface:
		if len(types) != 0 {
			t.Errorf("schema %s: restricted to %v, but the Go field takes any value", path, types)
		}
	case typ.Kind() == reflect.String:
		allows("string")
	case typ.Kind() == reflect.Bool:
		allows("boolean")
	case typ.Kind() >= reflect.Int && typ.Kind() <= reflect.Uint64:
		allows("integer")
	default:
		t.Errorf("schema %s: checkSchema does not know Go type %s", path, typ)
	}
}

// branches returns the then schemas of the if/then entries of n's allOf:
// an object whose fields depend on one of them (a transform step's type).
func branches(n schemaNode) []schemaNode {
	var out []schemaNode
	for _, a := range n["allOf"].([]any) {
		if then, ok := a.(schemaNode)["then"].(schemaNode); ok {
			out = append(out, then)
		}
	}
	return out
}

// propDef is one definition of a property: n's own, or a branch's.
type propDef struct {
	node   schemaNode
	branch bool
}

// closedProperties returns every definition of each property object
// schema n declares, and checks that n allows no other: either n has
// additionalProperties false, or n declares the properties common to all
// its if/then branches and each branch declares its own, with
// additionalProperties false, so that an editor offers in each branch
// only the fields it allows. A branch lists a common property as true.
func closedProperties(t *testing.T, n schemaNode, path string) map[string][]propDef {
	t.Helper()
	defs := map[string][]propDef{}
	common, _ := n["properties"].(schemaNode)
	for name, p := range common {
		defs[name] = append(defs[name], propDef{node: p.(schemaNode)})
	}
	if n["additionalProperties"] == false {
		return defs
	}
	if _, ok := n["allOf"].([]any); !ok {
		t.Errorf("schema %s: additionalProperties is %v, want false (or if/then branches that each allow only their fields)", path, n["additionalProperties"])
		return defs
	}
	for i, b := range branches(n) {
		if b["additionalProperties"] != false {
			t.Errorf("schema %s: branch %d: additionalProperties is %v, want false", path, i, b["additionalProperties"])
		}
		own, _ := b["properties"].(schemaNode)
		for name, p := range own {
			switch p := p.(type) {
			case schemaNode:
				if _, ok := common[name]; ok {
					t.Errorf("schema %s: branch %d: %s is declared for every branch; list it as true", path, i, name)
				}
				defs[name] = append(defs[name], propDef{node: p, branch: true})
			case bool:
				if _, ok := common[name]; !p || !ok {
					t.Errorf("schema %s: branch %d: %s is %v; a branch declares its fields, and lists the common ones as true", path, i, name, p)
				}
			}
		}
	}
	return defs
}

func TestSchemaDescribesEveryFieldOfPipelineAndNoOther(t *testing.T) {
	root := loadSchema(t)
	checkSchema(t, root, root, reflect.TypeFor[config.Pipeline](), "")
}

func TestSchemaTransformTypesAreTheRegisteredOnes(t *testing.T) {
	root := loadSchema(t)
	spec := root["$defs"].(schemaNode)["transform"].(schemaNode)
	var enum []string
	for _, v := range spec["properties"].(schemaNode)["type"].(schemaNode)["enum"].([]any) {
		enum = append(enum, v.(string))
	}
	registered := slices.Sorted(maps.Keys(transform.Registry))
	if slices.Sort(enum); !slices.Equal(enum, registered) {
		t.Errorf("schema transform type enum %v, transform.Registry has %v", enum, registered)
	}

	// Each type has an if/then naming its required fields, which must be
	// exactly those transform.Spec.Validate reports missing for an
	// otherwise empty spec of that type. A type with several forms (route)
	// lists each form's required fields under then.anyOf instead: an empty
	// spec must then be reported as missing something, and a spec with
	// the fields of any one form as missing nothing.
	type rule struct {
		required []string
		forms    [][]string
	}
	strs := func(v any) []string {
		var out []string
		for _, x := range v.([]any) {
			out = append(out, x.(string))
		}
		return out
	}
	rules := map[string]rule{}
	for _, r := range spec["allOf"].([]any) {
		r := r.(schemaNode)
		typ := r["if"].(schemaNode)["properties"].(schemaNode)["type"].(schemaNode)["const"].(string)
		then := r["then"].(schemaNode)
		var ru rule
		if req, ok := then["required"]; ok {
			ru.required = strs(req)
		}
		if forms, ok := then["anyOf"].([]any); ok {
			for _, f := range forms {
				ru.forms = append(ru.forms, strs(f.(schemaNode)["required"]))
			}
		}
		rules[typ] = ru
	}
	missing := func(s transform.Spec) []string {
		var m []string
		for _, fe := range s.Validate() {
			if strings.HasPrefix(fe.Msg, "required") {
				m = append(m, fe.Path)
			}
		}
		slices.Sort(m)
		return m
	}
	for _, typ := range registered {
		ru, ok := rules[typ]
		if !ok {
			t.Errorf("schema has no if/then rule for transform type %s", typ)
			continue
		}
		empty := missing(transform.Spec{Type: typ})
		if ru.forms == nil {
			slices.Sort(ru.required)
			if !slices.Equal(ru.required, empty) {
				t.Errorf("schema requires %v for transform type %s; Validate reports %v missing", ru.required, typ, empty)
			}
			continue
		}
		if len(empty) == 0 {
			t.Errorf("transform type %s: Validate reports nothing missing in an empty spec, but the schema requires one of %v", typ, ru.forms)
		}
		for _, form := range ru.forms {
			s := transform.Spec{Type: typ}
			for _, f := range form {
				fillField(t, &s, f)
			}
			if s.Action != "" && typ != "filter" {
				s.Action = "remove" // the one action header and key take alone
			}
			if m := missing(s); len(m) != 0 {
				t.Errorf("transform type %s with %v (a form the schema allows): Validate reports %v missing", typ, form, m)
			}
		}
	}
}

// fillField sets the field of s named by its YAML name to a valid value.
func fillField(t *testing.T, s *transform.Spec, name string) {
	switch name {
	case "field":
		s.Field = "a"
	case "to":
		s.To = "b"
	case "value":
		s.Value = "v"
	case "expr":
		s.Expr = `"t"`
	case "header":
		s.Header = "h"
	case "when":
		s.When = &transform.Condition{Expr: "true"}
	case "action":
		s.Action = "keep"
	case "routes":
		s.Routes = map[string]string{"x": "t"}
	case "default":
		s.Default = "t"
	case "topics":
		s.Topics = []string{"t"}
	case "cases":
		s.Cases = []transform.RouteCase{{Expr: "true", Topic: "t"}}
	case "kind":
		s.Kind = "permanent"
	case "reason":
		s.Reason = "r"
	case "duration":
		s.Duration = time.Millisecond
	default:
		t.Fatalf("fillField does not know field %s", name)
	}
}

// TestEditorsOfferInEachTransformTypeOnlyItsFields checks what an editor
// completes inside a step of each type: the properties it merges from the
// step's schema and from the branch whose if matches the type (a
// property declared false is not offered, a property declared true is
// offered from where it is described). They must be exactly type, name
// and the fields transform.Spec.Validate does not report as "not used by
// type" for that type.
func TestEditorsOfferInEachTransformTypeOnlyItsFields(t *testing.T) {
	root := loadSchema(t)
	spec := root["$defs"].(schemaNode)["transform"].(schemaNode)
	offered := func(props schemaNode, into map[string]bool) {
		for name, p := range props {
			if p != false {
				into[name] = true
			}
		}
	}
	var fields []string
	for name := range yamlNames(reflect.TypeFor[transform.Spec]()) {
		if name != "type" && name != "name" {
			fields = append(fields, name)
		}
	}
	slices.Sort(fields)
	for _, typ := range slices.Sorted(maps.Keys(transform.Registry)) {
		got := map[string]bool{}
		offered(spec["properties"].(schemaNode), got)
		for _, a := range spec["allOf"].([]any) {
			a := a.(schemaNode)
			if a["if"].(schemaNode)["properties"].(schemaNode)["type"].(schemaNode)["const"] == typ {
				offered(a["then"].(schemaNode)["properties"].(schemaNode), got)
			}
		}
		want := []string{"name", "type"}
		for _, f := range fields {
			s := transform.Spec{Type: typ}
			fillField(t, &s, f)
			if !slices.ContainsFunc(s.Validate(), func(fe transform.FieldError) bool {
				return fe.Path == f && strings.HasPrefix(fe.Msg, "not used by type")
			}) {
				want = append(want, f)
			}
		}
		slices.Sort(want)
		if got := slices.Sorted(maps.Keys(got)); !slices.Equal(got, want) {
			t.Errorf("in a step of type %s an editor offers %v; the type uses %v", typ, got, want)
		}
	}
}

func TestSchemaDefaultsAreTheOnesSetDefaultsApplies(t *testing.T) {
	root := loadSchema(t)
	p := config.Pipeline{Name: "p"}
	p.SetDefaults()
	// name is set above, not defaulted; the defaults derived from it
	// cannot be written in the schema. cel.cost_limit stays 0, which
	// means transform.DefaultCostLimit, checked below.
	derived := map[string]bool{"name": true, "source.group": true, "ledger.topic": true, "cel.cost_limit": true}
	celDefault := resolve(t, root, root["properties"].(schemaNode)["cel"].(schemaNode))["properties"].(schemaNode)["cost_limit"].(schemaNode)["default"]
	if celDefault != float64(transform.DefaultCostLimit) {
		t.Errorf("schema cel.cost_limit: default %v, transform.DefaultCostLimit is %d", celDefault, transform.DefaultCostLimit)
	}
	var walk func(n schemaNode, v reflect.Value, path string)
	walk = func(n schemaNode, v reflect.Value, path string) {
		n = resolve(t, root, n)
		props, _ := n["properties"].(schemaNode)
		for name, f := range yamlNames(v.Type()) {
			p := strings.TrimPrefix(path+"."+name, ".")
			prop, _ := props[name].(schemaNode)
			fv := v.FieldByIndex(f.Index)
			if fv.Kind() == reflect.Pointer && !fv.IsNil() {
				fv = fv.Elem()
			}
			if fv.Kind() == reflect.Struct && fv.Type() != reflect.TypeFor[time.Duration]() {
				walk(prop, fv, p)
				continue
			}
			def, hasDef := prop["default"]
			var got any
			switch x := fv.Interface().(type) {
			case time.Duration:
				got = x.String()
			case int:
				got = float64(x)
			case string, bool:
				got = x
			default:
				continue // lists, maps and nil pointers have no defaults
			}
			isZero := fv.IsZero()
			switch {
			case derived[p]:
			case hasDef && def != got:
				t.Errorf("schema %s: default %v, SetDefaults gives %v", p, def, got)
			case !hasDef && !isZero:
				t.Errorf("schema %s: no default, SetDefaults gives %v", p, got)
			}
		}
	}
	walk(root, reflect.ValueOf(p), "")
}
