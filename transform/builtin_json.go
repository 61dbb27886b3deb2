package transform

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"math/big"
	"strconv"
	"strings"
	"sync"
	"time"
)

// This file holds the JSON plumbing shared by the built-ins and by
// Condition: decoding a record value into a map (numbers kept as
// json.Number so big integers survive), dotted-path access and
// re-encoding.

// decodeJSON decodes v, which must be exactly one JSON value. Anything
// else is a permanent error of class "json": bad data never gets better.
func decodeJSON(v []byte) (any, error) {
	if len(bytes.TrimSpace(v)) == 0 {
		return nil, notJSON(errors.New("empty value"))
	}
	dec := json.NewDecoder(bytes.NewReader(v))
	dec.UseNumber()
	var x any
	if err := dec.Decode(&x); err != nil {
		return nil, notJSON(err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, notJSON(errors.New("trailing data after the value"))
	}
	return x, nil
}

func notJSON(err error) error {
	return Permanent("json", fmt.Errorf("value is not JSON: %w", err))
}

// notObject reports a value that is not a JSON object, keeping the
// reason when err already says the value is not JSON at all.
func notObject(err error) error {
	var e *Error
	if errors.As(err, &e) {
		return err
	}
	return Permanent("json", fmt.Errorf("value is not a JSON object: %w", err))
}

func jsonKind(x any) string {
	switch x.(type) {
	case nil:
		return "null"
	case bool:
		return "boolean"
	case json.Number, float64:
		return "number"
	case string:
		return "string"
	case []any:
		return "array"
	case map[string]any:
		return "object"
	case int64, uint64:
		return "integer"
	case []byte:
		return "bytes"
	case time.Time:
		return "timestamp"
	case Duration:
		return "duration"
	}
	return fmt.Sprintf("%T", x)
}

var bufPool = sync.Pool{New: func() any { return new(bytes.Buffer) }}

// encodeJSON encodes x compactly without HTML escaping (so "<" stays "<").
// Map keys come out sorted, which is why a re-encoded value may have a
// different key order than the input.
func encodeJSON(x any) ([]byte, error) {
	buf := bufPool.Get().(*bytes.Buffer)
	buf.Reset()
	enc := json.NewEncoder(buf)
	enc.SetEscapeHTML(false)
	err := enc.Encode(x)
	var out []byte
	if err == nil {
		b := buf.Bytes()
		out = bytes.Clone(b[:len(b)-1]) // drop Encode's trailing newline
	}
	if buf.Cap() <= 64<<10 {
		bufPool.Put(buf)
	}
	if err != nil {
		return nil, err
	}
	return out, nil
}

// lookup returns the value at the dotted path and whether it exists. A
// path through a non-object is absent.
func lookup(obj map[string]any, path string) (any, bool) {
	for {
		seg, rest, more := strings.Cut(path, ".")
		v, ok := obj[seg]
		if !ok || !more {
			return v, ok
		}
		next, isObj := v.(map[string]any)
		if !isObj {
			return nil, false
		}
		obj, path = next, rest
	}
}

// setPath sets the value at the dotted path, creating missing intermediate
// objects (a null intermediate is replaced by an object). An intermediate
// that holds anything else is a permanent "json" error rather than being
// overwritten.
func setPath(obj map[string]any, path string, v any) error {
	full := path
	for {
		seg, rest, more := strings.Cut(path, ".")
		if !more {
			obj[seg] = v
			return nil
		}
		switch next := obj[seg].(type) {
		case map[string]any:
			obj = next
		case nil: // missing, or JSON null: nothing to lose
			m := make(map[string]any, 1)
			obj[seg] = m
			obj = m
		default:
			return notAnObject(full, path, seg)
		}
		path = rest
	}
}

func notAnObject(full, path, seg string) error {
	prefix := full[:len(full)-len(path)+len(seg)]
	return Permanent("json", fmt.Errorf("cannot set %s: %s is not an object", full, prefix))
}

// deletePath removes the value at the dotted path and returns it. Missing
// fields (or a path through a non-object) report false.
func deletePath(obj map[string]any, path string) (any, bool) {
	for {
		seg, rest, more := strings.Cut(path, ".")
		if !more {
			v, ok := obj[seg]
			if ok {
				delete(obj, seg)
			}
			return v, ok
		}
		next, isObj := obj[seg].(map[string]any)
		if !isObj {
			return nil, false
		}
		obj, path = next, rest
	}
}

// modMatches reports whether text is a base-10 integer n (optional '-',
// digits only: no fraction, exponent or '+') with n mod m == rem, where mod
// is Euclidean (the result is in [0, m) also for negative n). Integers of
// any size are handled; for m below 2^59 without allocating.
func modMatches(text string, m, rem int64) bool {
	if m <= 0 || !isInteger(text) {
		return false
	}
	neg := text[0] == '-'
	digits := text
	if neg {
		digits = text[1:]
	}
	var r int64
	if m <= (math.MaxInt64-9)/10 {
		// Horner's rule mod m: r*10+9 cannot overflow.
		for i := 0; i < len(digits); i++ {
			r = (r*10 + int64(digits[i]-'0')) % m
		}
	} else {
		n, ok := new(big.Int).SetString(digits, 10)
		if !ok {
			return false
		}
		r = n.Mod(n, big.NewInt(m)).Int64() // < m, so it fits
	}
	if neg && r != 0 {
		r = m - r
	}
	return r == rem
}

func isInteger(s string) bool {
	s = strings.TrimPrefix(s, "-")
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// checkPath reports a problem with a dotted path, or "" if it is fine.
func checkPath(p string) string {
	for _, seg := range strings.Split(p, ".") {
		if seg == "" {
			return fmt.Sprintf("invalid dotted path %q: empty segment; expected e.g. order.id", p)
		}
	}
	return ""
}

// normalizeYAML converts what a YAML decoder produces into something
// encoding/json can marshal: maps with non-string keys (map[any]any) become
// map[string]any with the keys' text.
func normalizeYAML(v any) any {
	switch v := v.(type) {
	case map[any]any:
		m := make(map[string]any, len(v))
		for k, x := range v {
			m[fmt.Sprint(k)] = normalizeYAML(x)
		}
		return m
	case map[string]any:
		m := make(map[string]any, len(v))
		for k, x := range v {
			m[k] = normalizeYAML(x)
		}
		return m
	case []any:
		s := make([]any, len(v))
		for i, x := range v {
			s[i] = normalizeYAML(x)
		}
		return s
	}
	return v
}

// specValueTree is set's Value as a value tree, as the JSON it would be
// written as decodes (numbers as json.Number); a missing value is null.
func specValueTree(v any) (any, error) {
	b, err := encodeJSON(normalizeYAML(v))
	if err != nil {
		return nil, err
	}
	return decodeJSON(b)
}

// headerValueText is header's Value as text: strings as they are, bools as
// true/false, numbers as JSON writes them (1000000, 1.5, 1e+21).
func headerValueText(v any) (string, bool) {
	switch x := v.(type) {
	case string:
		return x, true
	case bool:
		return strconv.FormatBool(x), true
	case json.Number:
		return string(x), true
	case int, int8, int16, int32, int64, uint, uint8, uint16, uint32, uint64, float32, float64:
		b, err := json.Marshal(x)
		if err != nil { // NaN, ±Inf
			return "", false
		}
		return string(b), true
	}
	return "", false
}
