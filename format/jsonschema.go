package format

import (
	"bytes"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"golang.org/x/text/language"
	"golang.org/x/text/message"
)

// compileJSONSchema compiles a JSON Schema text; refs are the texts of
// the schemas it references ($ref), by the name it references them with.
// A schema without $schema is read as draft-07, the draft Confluent's
// serializers assume.
func compileJSONSchema(text string, refs map[string]string) (*jsonschema.Schema, error) {
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft7)
	doc, err := jsonschema.UnmarshalJSON(strings.NewReader(text))
	if err != nil {
		return nil, fmt.Errorf("the JSON schema is not JSON: %w", err)
	}
	const main = "urn:sharerelay:schema"
	if err := c.AddResource(main, doc); err != nil {
		return nil, fmt.Errorf("the JSON schema: %w", err)
	}
	for name, t := range refs {
		d, err := jsonschema.UnmarshalJSON(strings.NewReader(t))
		if err != nil {
			return nil, fmt.Errorf("the JSON schema's reference %s is not JSON: %w", name, err)
		}
		if err := c.AddResource(name, d); err != nil {
			return nil, fmt.Errorf("the JSON schema's reference %s: %w", name, err)
		}
	}
	s, err := c.Compile(main)
	if err != nil {
		return nil, fmt.Errorf("the JSON schema does not compile: %w", err)
	}
	return s, nil
}

// validateJSON checks the JSON text b against s: a value that does not
// fit is a *DataError at the place it fails ("items[2].price").
func validateJSON(s *jsonschema.Schema, b []byte) error {
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
	if err != nil {
		return &DataError{Msg: "not JSON: " + err.Error()}
	}
	err = s.Validate(v)
	var ve *jsonschema.ValidationError
	if errors.As(err, &ve) {
		return schemaViolation(ve)
	}
	return err
}

var english = message.NewPrinter(language.English)

// schemaViolation is a validation error as a DataError: the first leaf
// cause, at its instance location.
func schemaViolation(ve *jsonschema.ValidationError) error {
	for len(ve.Causes) > 0 {
		ve = ve.Causes[0]
	}
	path := ""
	for _, seg := range ve.InstanceLocation {
		if _, err := strconv.Atoi(seg); err == nil {
			path += "[" + seg + "]"
			continue
		}
		path = join(path, seg)
	}
	return &DataError{Path: path, Msg: "does not fit the JSON schema: " + ve.ErrorKind.LocalizedString(english)}
}

// jsonSchemaShape is the Shape of values s describes: the properties of
// an object schema, open when it allows other properties or says
// nothing of them; nil for a schema that is not of an object.
func jsonSchemaShape(s *jsonschema.Schema) *Shape {
	return jsonShape(s, 0)
}

func jsonShape(s *jsonschema.Schema, depth int) *Shape {
	if s == nil || depth > 32 {
		return &Shape{Open: true}
	}
	for s.Ref != nil {
		s = s.Ref
	}
	var out *Shape
	for _, sub := range append(append(append([]*jsonschema.Schema(nil), s.AllOf...), s.AnyOf...), s.OneOf...) {
		out = out.merge(jsonShape(sub, depth+1))
	}
	if s.Types != nil && !s.Types.IsEmpty() && !strings.Contains(s.Types.String(), "object") {
		return out
	}
	if len(s.Properties) == 0 && out == nil {
		return &Shape{Open: true}
	}
	sh := &Shape{Fields: map[string]*Shape{}}
	for name, p := range s.Properties {
		sh.Fields[name] = jsonShape(p, depth+1)
	}
	// Other properties are allowed unless additionalProperties is false.
	if b, ok := s.AdditionalProperties.(bool); !ok || b {
		sh.Open = true
	}
	return out.merge(sh)
}
