// Command schemadoc writes the configuration reference, docs/configuration.md,
// from the pipeline's JSON Schema, configs/pipeline.schema.json, so that
// the page cannot drift from what editors and the schema tests see:
//
//	go run ./internal/tools/schemadoc [-schema configs/pipeline.schema.json] [-o docs/configuration.md]
//
// Run it from the repository's root after changing the schema; its test
// fails while the page and the schema differ. -o - writes to standard
// output.
//
// The page has a section per object of the schema (the file itself, each
// nested object, each object definition reached by $ref) with a table of
// its fields: type, default, range (minimum and maximum, enums, patterns,
// list and map constraints) and description. An object whose fields
// depend on the value of one of them — if/then branches in allOf, or
// oneOf/anyOf alternatives fixing it with const, such as a transform
// step's type or a SASL mechanism — gets a subsection per value listing
// the fields that value allows, required ones marked; alternatives that
// only require different fields are listed as forms. Definitions that are
// kinds of values (a topic, a duration) are described once at the end.
package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// The files the command reads and writes by default, from the
// repository's root.
const (
	defaultSchema = "configs/pipeline.schema.json"
	defaultOut    = "docs/configuration.md"
	command       = "go run ./internal/tools/schemadoc"
)

func main() {
	schema := flag.String("schema", defaultSchema, "the JSON Schema to describe")
	out := flag.String("o", defaultOut, "the Markdown file to write (- for standard output)")
	flag.Parse()
	if err := run(*schema, *out, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "schemadoc:", err)
		os.Exit(1)
	}
}

// run writes the page for the schema at schemaPath to out.
func run(schemaPath, out string, stdout io.Writer) error {
	page, err := generate(schemaPath, out)
	if err != nil {
		return err
	}
	if out == "-" {
		_, err = io.WriteString(stdout, page)
		return err
	}
	if err := os.WriteFile(out, []byte(page), 0o644); err != nil {
		return fmt.Errorf("writing the page: %w", err)
	}
	return nil
}

// generate returns the page for the schema at schemaPath as it is to be
// written to out (its link to the schema is relative to out).
func generate(schemaPath, out string) (string, error) {
	data, err := os.ReadFile(schemaPath)
	if err != nil {
		return "", fmt.Errorf("reading the schema: %w", err)
	}
	d, err := newSchemaDoc(data)
	if err != nil {
		return "", fmt.Errorf("%s: %w", schemaPath, err)
	}
	link := filepath.ToSlash(schemaPath)
	if out != "-" {
		if rel, err := filepath.Rel(filepath.Dir(out), schemaPath); err == nil {
			link = filepath.ToSlash(rel)
		}
	}
	return render(d, filepath.ToSlash(defaultSchemaName(schemaPath)), link, command), nil
}

// defaultSchemaName is how the page names the schema: its path from the
// root of the module it is in (the directory with go.mod), so that the
// page reads the same from wherever the command ran.
func defaultSchemaName(path string) string {
	abs, err := filepath.Abs(path)
	if err != nil {
		return path
	}
	for dir := filepath.Dir(abs); ; dir = filepath.Dir(dir) {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			if rel, err := filepath.Rel(dir, abs); err == nil {
				return rel
			}
			return path
		}
		if filepath.Dir(dir) == dir {
			return path
		}
	}
}
