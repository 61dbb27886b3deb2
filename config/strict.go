package config

import (
	"fmt"
	"reflect"
	"strings"
)

// Doc is a YAML file other than a pipeline — a pipeline's test file —
// decoded by DecodeStrict, with the problems found in it. The caller's
// own checks add theirs with Add, so that the file's every problem is
// reported in one pass, each at its position, as for a pipeline.
type Doc struct{ l *loader }

// DecodeStrict decodes data, the YAML file name, into v, a non-nil
// pointer to a struct, as strictly as Parse decodes a pipeline: the file
// holds one document, a mapping; every key names a field of the struct
// it fills (an unknown key is reported with the field it probably
// meant), once; every scalar has its field's type. A syntax error is
// reported at its line and column, with a hint for the usual mistakes.
// Nothing is interpolated: ${VAR} is text. kind names the file in
// messages about it as a whole ("test file").
//
// The problems found are in the returned Doc's Err. v holds what could be
// decoded: the fields that had problems are left as they were.
func DecodeStrict(name, kind string, data []byte, v any) *Doc {
	rv := reflect.ValueOf(v)
	if rv.Kind() != reflect.Pointer || rv.IsNil() || rv.Elem().Kind() != reflect.Struct {
		panic(fmt.Sprintf("config.DecodeStrict: need a non-nil pointer to a struct, got %T", v))
	}
	l := newLoader(name, kind, data, nil)
	root, errs := l.parse(data)
	if len(errs) > 0 {
		l.errs = errs
		l.bad[""] = true // nothing else can be said of the file
		return &Doc{l}
	}
	if root == nil {
		l.nodes[""] = nodePos{}
		return &Doc{l}
	}
	l.nodes[""] = nodePos{val: root}
	l.walk(root, rv.Elem().Type(), "")
	if err := root.Decode(v); err != nil && len(l.errs) == 0 {
		l.decodeError(err)
	}
	return &Doc{l}
}

// Add reports msg about the value at path ("cases[2].expect"), at the
// position of that value, or where it is missing (see Errors). A problem
// already reported at path or at one of its ancestors makes msg a
// consequence of it, and msg is dropped.
func (d *Doc) Add(path, msg string) {
	l := d.l
	if l.suppressed(path) {
		return
	}
	line, col := l.position(path)
	l.errs = append(l.errs, Error{File: l.file, Line: line, Col: col, Path: path, Msg: msg})
}

// Reported reports whether a problem was found at path or below it: a
// check of the value at path can then stay silent, the problem being
// likely its cause (an "expected:" reported as an unknown field is why
// "expect" is missing).
func (d *Doc) Reported(path string) bool {
	for _, e := range d.l.errs {
		if e.Path == path || strings.HasPrefix(e.Path, path+".") || strings.HasPrefix(e.Path, path+"[") {
			return true
		}
	}
	return d.l.bad[""]
}

// Line returns the line of the value at path, or of where it is missing.
func (d *Doc) Line(path string) int {
	line, _ := d.l.position(path)
	return line
}

// Err returns every problem found, in the order of the file, as an Errors
// value; nil when there is none.
func (d *Doc) Err() error {
	if len(d.l.errs) == 0 {
		return nil
	}
	return d.l.errs.sort()
}
