package format

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// DataError is a record whose bytes do not decode in their format, or
// whose value does not fit the schema it is written with: the record's
// fault, which no retry cures. The relay dead-letters it with Path and
// the reason.
type DataError struct {
	// Path locates the problem in the value: "items[2].price", "" for the
	// value as a whole. Object keys are joined with ".", array and
	// repeated elements are "[i]", map entries are ".<key>".
	Path string
	// Msg says what is wrong, e.g. "12.345 has 3 decimal places; decimal(10,2) takes 2".
	Msg string
}

// Error returns "<path>: <msg>", or Msg alone at the root.
func (e *DataError) Error() string {
	if e.Path == "" {
		return e.Msg
	}
	return e.Path + ": " + e.Msg
}

// dataErr returns a DataError at path with a formatted message.
func dataErr(path, msg string, args ...any) error {
	return &DataError{Path: path, Msg: fmt.Sprintf(msg, args...)}
}

// under prefixes err's path with the segment seg (a field name, or
// "[i]" for an element, which joins without a dot), so that a conversion
// that recurses can report where in the value it failed. Errors that are
// not DataErrors are returned as they are.
func under(seg string, err error) error {
	var de *DataError
	if !errors.As(err, &de) {
		return err
	}
	p := seg
	switch {
	case de.Path == "":
	case strings.HasPrefix(de.Path, "["):
		p += de.Path
	default:
		p += "." + de.Path
	}
	return &DataError{Path: p, Msg: de.Msg}
}

// elem is the path segment of element i: "[i]".
func elem(i int) string { return "[" + strconv.Itoa(i) + "]" }

// join appends seg to path as under does: "a" + "b" is "a.b", "a" +
// "[1]" is "a[1]".
func join(path, seg string) string {
	switch {
	case path == "":
		return seg
	case strings.HasPrefix(seg, "["):
		return path + seg
	}
	return path + "." + seg
}

// Shape is what a schema says of the structure of the values it
// describes, as far as dotted paths go: relay validate checks that the
// fields a pipeline's steps name exist in its source schema.
type Shape struct {
	// Fields are the fields of an object (a record, a message): a path
	// may name these only. Nil for a value that is not an object.
	Fields map[string]*Shape
	// Open: any field name may follow (an Avro or Protobuf map, a
	// google.protobuf.Struct, a JSON Schema object without properties or
	// with additional ones).
	Open bool
}

// merge returns a shape that allows what a or b allows: the branches of
// a union. Not for shapes that contain themselves (recursive schemas):
// their callers bound the depth.
func (a *Shape) merge(b *Shape) *Shape {
	switch {
	case a == nil:
		return b
	case b == nil:
		return a
	}
	out := &Shape{Open: a.Open || b.Open}
	if a.Fields != nil || b.Fields != nil {
		out.Fields = map[string]*Shape{}
		for k, v := range a.Fields {
			out.Fields[k] = v
		}
		for k, v := range b.Fields {
			out.Fields[k] = out.Fields[k].merge(v)
		}
	}
	return out
}
