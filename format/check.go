package format

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/sharerelay/sharerelay/config"
	"github.com/sharerelay/sharerelay/internal/didyoumean"
)

// Check is relay validate's check of what only this package can see in a
// pipeline, offline (a config.Check): every schema file it names compiles
// (and a Protobuf message it names is in its file), and every field of
// the value its steps read is a field of the source's schema, when the
// pipeline gives one (source.value_schema.file).
func Check(p *config.Pipeline) []config.Finding {
	var out []config.Finding
	add := func(path string, err error) { out = append(out, config.Finding{Path: path, Msg: err.Error()}) }
	var source *schemaFile
	for _, s := range []struct {
		path, format string
		rs           *config.ReadSchema
	}{{"source.value_schema", p.Source.ValueFormat, p.Source.ValueSchema}, {"source.key_schema", p.Source.KeyFormat, p.Source.KeySchema}} {
		if s.rs == nil || s.rs.File == "" || !config.RegistryFormat(s.format) {
			continue
		}
		f, err := LoadSchemaFile(p.SchemaPath(s.rs.File), s.format)
		if err != nil {
			add(s.path+".file", err)
			continue
		}
		if s.path == "source.value_schema" {
			source = f
		}
	}
	topics := append([]string{p.Output.Topic}, p.OutputTopics()...)
	seen := map[string]bool{}
	for _, topic := range topics {
		if topic == p.DeadLetter.Topic {
			continue
		}
		f, path := p.OutputFormats(topic)
		for _, o := range []struct {
			which, format string
			s             *config.Schema
		}{{"value", f.ValueFormat, f.ValueSchema}, {"key", f.KeyFormat, f.KeySchema}} {
			at := path + "." + o.which + "_schema"
			if o.s == nil || o.s.File == "" || !config.RegistryFormat(o.format) || seen[at] {
				continue
			}
			seen[at] = true
			sf, err := LoadSchemaFile(p.SchemaPath(o.s.File), o.format)
			if err != nil {
				add(at+".file", err)
				continue
			}
			if sf.compiled.proto != nil {
				if _, err := sf.message(o.s.Message); err != nil {
					add(at+".message", err)
				}
			}
		}
	}
	if source != nil {
		out = append(out, checkFields(p, source)...)
	}
	return out
}

// checkFields checks the fields the steps read against the source's
// schema, step by step: a field a step creates (set, rename's to) is
// known to the steps after it, and after a step that replaces the value
// (map, split) nothing more is checked.
func checkFields(p *config.Pipeline, source *schemaFile) []config.Finding {
	shape := source.shape("")
	if shape == nil {
		return nil
	}
	var created []string
	var out []config.Finding
	o := p.TransformOptions()
	for i, s := range p.Transforms {
		for _, r := range s.Reads(o) {
			if within(r.Field, created) {
				continue
			}
			if msg := missing(shape, r.Field, p.Source.ValueSchema.File); msg != "" {
				path := fmt.Sprintf("transforms[%d].%s", i, r.Path)
				out = append(out, config.Finding{Path: path, Msg: msg, Line: r.Line, Col: r.Col, Snippet: r.Snippet})
			}
		}
		w, replaces := s.Writes()
		if replaces {
			break
		}
		created = append(created, w...)
	}
	return out
}

// within reports whether field is, or is inside, one of created.
func within(field string, created []string) bool {
	for _, c := range created {
		if field == c || strings.HasPrefix(field, c+".") {
			return true
		}
	}
	return false
}

// missing returns why the dotted path field is not a field of values of
// shape s, the schema of file, or "" when it is (or may be: past an
// open object).
func missing(s *Shape, field, file string) string {
	var walked []string
	for _, seg := range strings.Split(field, ".") {
		switch {
		case s == nil || s.Fields == nil && !s.Open:
			if len(walked) == 0 {
				return fmt.Sprintf("%s: the value of the source's schema (%s) is not an object", field, file)
			}
			return fmt.Sprintf("%s: %s is not an object in the source's schema (%s)", field, strings.Join(walked, "."), file)
		case s.Open && s.Fields[seg] == nil:
			return ""
		}
		next, ok := s.Fields[seg]
		if !ok {
			names := slices.Sorted(maps.Keys(s.Fields))
			msg := fmt.Sprintf("%s: no such field in the source's schema (%s)", field, file)
			if best, ok := didyoumean.Closest(seg, names); ok {
				msg += fmt.Sprintf("; did you mean %s?", strings.Join(append(slices.Clone(walked), best), "."))
			} else if len(names) > 0 && len(names) <= 12 {
				prefix := "the value"
				if len(walked) > 0 {
					prefix = strings.Join(walked, ".")
				}
				msg += fmt.Sprintf("; %s has %s", prefix, strings.Join(names, ", "))
			}
			return msg
		}
		walked = append(walked, seg)
		s = next
	}
	return ""
}
