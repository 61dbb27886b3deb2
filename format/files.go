package format

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/hamba/avro/v2"
	"github.com/twmb/franz-go/pkg/sr"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/sharerelay/sharerelay/config"
)

// schemaFile is a schema file kept beside a pipeline, compiled when the
// relay starts (so that a broken file stops it before it touches Kafka).
type schemaFile struct {
	path     string
	text     string
	compiled *compiled
	// record is the full name of the file's record (Avro), first
	// message (Protobuf) or its title (JSON Schema), for record subject
	// naming.
	record string
	// imports are the .proto files the file imports (not the standard
	// ones), by import path, each after those it imports itself.
	imports []reference
}

// LoadSchemaFile reads and compiles the schema file at path (as the
// pipeline names it, resolved with config.Pipeline.SchemaPath) in format
// f. A Protobuf file's imports are read from beside it.
func LoadSchemaFile(path, f string) (*schemaFile, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	sf := &schemaFile{path: path, text: string(b)}
	switch f {
	case config.FormatAvro:
		s, err := parseAvro(sf.text, nil)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		sf.compiled = &compiled{typ: sr.TypeAvro, avro: s}
		if n, ok := s.(avro.NamedSchema); ok {
			sf.record = n.FullName()
		}
	case config.FormatProtobuf:
		files := map[string]string{}
		name := filepath.Base(path)
		if err := readImports(filepath.Dir(path), name, string(b), files, &sf.imports); err != nil {
			return nil, err
		}
		files[name] = sf.text
		fd, err := compileProto(name, files)
		if err != nil {
			return nil, err
		}
		sf.compiled = &compiled{typ: sr.TypeProtobuf, proto: fd}
		if fd.Messages().Len() == 0 {
			return nil, fmt.Errorf("%s: no message", path)
		}
		sf.record = string(fd.Messages().Get(0).FullName())
	case config.FormatJSONSchema:
		js, err := compileJSONSchema(sf.text, nil)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		sf.compiled = &compiled{typ: sr.TypeJSON, json: js}
		var doc struct {
			Title string `json:"title"`
		}
		_ = json.Unmarshal(b, &doc)
		sf.record = doc.Title
	default:
		return nil, fmt.Errorf("%s: the %s format has no schema file", path, f)
	}
	return sf, nil
}

// readImports reads, from dir, the files text imports (but the standard
// google/protobuf ones), depth first, into files and imports.
func readImports(dir, name, text string, files map[string]string, imports *[]reference) error {
	for _, imp := range protoImports(text) {
		if strings.HasPrefix(imp, "google/protobuf/") || files[imp] != "" {
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, imp))
		if err != nil {
			return fmt.Errorf("%s imports %s: %w", name, imp, err)
		}
		files[imp] = string(b)
		if err := readImports(dir, imp, string(b), files, imports); err != nil {
			return err
		}
		*imports = append(*imports, reference{name: imp, text: string(b)})
	}
	return nil
}

// protoImports lists the import paths of a .proto text (import, import
// public, import weak), in order.
func protoImports(text string) []string {
	var out []string
	for _, line := range strings.Split(text, "\n") {
		line = strings.TrimSpace(line)
		if !strings.HasPrefix(line, "import ") {
			continue
		}
		q := strings.IndexByte(line, '"')
		e := strings.LastIndexByte(line, '"')
		if q >= 0 && e > q {
			out = append(out, line[q+1:e])
		}
	}
	return out
}

// register makes sure the files the schema file imports are in the
// registry, each under the subject named by its import path (as
// Confluent's serializers name them), registering them when auto is set,
// and returns the references to them.
func (f *schemaFile) register(ctx context.Context, reg *Registry, auto bool) ([]sr.SchemaReference, error) {
	done := map[string]sr.SchemaReference{}
	for _, imp := range f.imports {
		s := sr.Schema{Schema: imp.text, Type: sr.TypeProtobuf, References: importRefs(imp.text, done)}
		var (
			ss  sr.SubjectSchema
			err error
		)
		if auto {
			ss, err = reg.Register(ctx, imp.name, s)
		} else {
			ss, err = reg.Lookup(ctx, imp.name, s)
		}
		if err != nil {
			return nil, fmt.Errorf("%s, imported by %s: %w", imp.name, filepath.Base(f.path), err)
		}
		done[imp.name] = sr.SchemaReference{Name: imp.name, Subject: imp.name, Version: ss.Version}
	}
	return importRefs(f.text, done), nil
}

// importRefs are the references of a .proto text to the files of done it
// imports.
func importRefs(text string, done map[string]sr.SchemaReference) []sr.SchemaReference {
	var refs []sr.SchemaReference
	for _, imp := range protoImports(text) {
		if r, ok := done[imp]; ok {
			refs = append(refs, r)
		}
	}
	return refs
}

// message returns the file's Protobuf message named name, or its first.
func (f *schemaFile) message(name string) (protoreflect.MessageDescriptor, error) {
	if name != "" {
		return protoMessageNamed(f.compiled.proto, name)
	}
	return protoMessageAt(f.compiled.proto, nil)
}
