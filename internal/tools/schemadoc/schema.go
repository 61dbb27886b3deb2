package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
)

// object is a JSON object that keeps its keys in the order of the file:
// the page lists fields in the order the schema gives them, so that
// reordering the schema reorders the page and nothing else does.
type object struct {
	keys []string
	vals map[string]any
}

// get returns the value of key, nil when it is absent.
func (o *object) get(key string) any {
	if o == nil {
		return nil
	}
	return o.vals[key]
}

// obj returns the value of key when it is an object.
func (o *object) obj(key string) *object {
	v, _ := o.get(key).(*object)
	return v
}

// list returns the value of key when it is an array.
func (o *object) list(key string) []any {
	v, _ := o.get(key).([]any)
	return v
}

// str returns the value of key when it is a string.
func (o *object) str(key string) string {
	v, _ := o.get(key).(string)
	return v
}

// has reports whether key is present.
func (o *object) has(key string) bool {
	if o == nil {
		return false
	}
	_, ok := o.vals[key]
	return ok
}

// strings returns the value of key when it is an array of strings.
func (o *object) strings(key string) []string {
	var out []string
	for _, v := range o.list(key) {
		if s, ok := v.(string); ok {
			out = append(out, s)
		}
	}
	return out
}

// parse decodes a JSON document: objects as *object (keys in order),
// arrays as []any, numbers as json.Number, and strings, booleans and null
// as encoding/json does.
func parse(data []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	v, err := decodeValue(dec)
	if err != nil {
		return nil, err
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("data after the top-level value at offset %d", dec.InputOffset())
	}
	return v, nil
}

func decodeValue(dec *json.Decoder) (any, error) {
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	switch tok {
	case json.Delim('{'):
		o := &object{vals: map[string]any{}}
		for dec.More() {
			k, err := dec.Token()
			if err != nil {
				return nil, err
			}
			key := k.(string) // object keys are always strings
			v, err := decodeValue(dec)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", key, err)
			}
			if _, dup := o.vals[key]; !dup {
				o.keys = append(o.keys, key)
			}
			o.vals[key] = v
		}
		_, err := dec.Token() // '}'
		return o, err
	case json.Delim('['):
		var a []any
		for dec.More() {
			v, err := decodeValue(dec)
			if err != nil {
				return nil, err
			}
			a = append(a, v)
		}
		_, err := dec.Token() // ']'
		return a, err
	}
	return tok, nil
}

// defsPrefixes are the forms a local $ref takes: 2020-12's $defs and the
// older definitions.
var defsPrefixes = []string{"#/$defs/", "#/definitions/"}

// refName returns the name of the definition s refers to, "" when s has
// no local $ref.
func refName(s *object) string {
	ref := s.str("$ref")
	for _, p := range defsPrefixes {
		if name, ok := strings.CutPrefix(ref, p); ok {
			return name
		}
	}
	return ""
}

// schemaDoc holds a parsed schema and its definitions.
type schemaDoc struct {
	root *object
	defs map[string]*object
	// order is the definitions' names in the order of the file.
	order []string
}

// newSchemaDoc reads a JSON Schema.
func newSchemaDoc(data []byte) (*schemaDoc, error) {
	v, err := parse(data)
	if err != nil {
		return nil, fmt.Errorf("parsing the schema: %w", err)
	}
	root, ok := v.(*object)
	if !ok {
		return nil, errors.New("the schema is not a JSON object")
	}
	d := &schemaDoc{root: root, defs: map[string]*object{}}
	for _, key := range []string{"$defs", "definitions"} {
		defs := root.obj(key)
		if defs == nil {
			continue
		}
		for _, name := range defs.keys {
			if def, ok := defs.vals[name].(*object); ok {
				d.defs[name] = def
				d.order = append(d.order, name)
			}
		}
	}
	return d, nil
}

// resolve follows $ref from s to the schema that says what a value is,
// with the annotations written beside a $ref (description, default)
// kept: they describe the use, the definition describes the kind.
func (d *schemaDoc) resolve(s *object) *object {
	for range 32 { // a cycle of $refs alone would never end
		name := refName(s)
		def := d.defs[name]
		if name == "" || def == nil {
			return s
		}
		merged := &object{vals: map[string]any{}}
		for _, k := range def.keys {
			merged.keys = append(merged.keys, k)
			merged.vals[k] = def.vals[k]
		}
		for _, k := range s.keys {
			if k == "$ref" {
				continue
			}
			if !merged.has(k) {
				merged.keys = append(merged.keys, k)
			}
			merged.vals[k] = s.vals[k]
		}
		s = merged
	}
	return s
}
