package main

import (
	"cmp"
	"encoding"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"reflect"
	"slices"
	"strconv"
	"time"

	"github.com/sharerelay/sharerelay/config"
)

// newLogger returns a logger writing to w at level, as logfmt text or as
// one JSON object a line (format "text" or "json"). In both formats a
// duration is its text ("500ms", not 500000000 nanoseconds), so that one
// log reads the same whichever format it is in; in text, lists and maps
// are groups (config.transforms.0.type=set) rather than Go's
// "[map[type:set …]]", which no logfmt reader can take apart.
func newLogger(w io.Writer, level, format string) (*slog.Logger, error) {
	var l slog.Level
	if err := l.UnmarshalText([]byte(level)); err != nil {
		return nil, fmt.Errorf("--log-level: %w", err)
	}
	switch format {
	case "text":
		return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: l, ReplaceAttr: textAttr})), nil
	case "json":
		return slog.New(slog.NewJSONHandler(w, &slog.HandlerOptions{Level: l, ReplaceAttr: jsonAttr})), nil
	}
	return nil, fmt.Errorf("--log-format: %q is not text or json", format)
}

// jsonAttr writes durations as text, and lists and maps with their
// durations and their values that only say how they print (a
// fmt.Stringer, which JSON would write as {}) as text, as the text
// format does.
func jsonAttr(_ []string, a slog.Attr) slog.Attr {
	switch a.Value.Kind() {
	case slog.KindDuration:
		a.Value = slog.StringValue(a.Value.Duration().String())
	case slog.KindAny:
		a.Value = slog.AnyValue(jsonPlain(a.Value.Any()))
	}
	return a
}

// jsonPlain returns x as jsonAttr writes it: a duration or a value that
// JSON cannot encode but which prints (a fmt.Stringer) as its text; a list
// or a map as a list or a map of its elements so converted; anything else,
// including what encodes itself (json.Marshaler, encoding.TextMarshaler)
// and errors (which slog writes as their message), as it is.
func jsonPlain(x any) any {
	switch v := x.(type) {
	case nil, json.Marshaler, encoding.TextMarshaler, error:
		return x
	case time.Duration:
		return v.String()
	case fmt.Stringer:
		return v.String()
	}
	rv := reflect.ValueOf(x)
	switch rv.Kind() {
	case reflect.Slice, reflect.Array:
		if rv.Type().Elem().Kind() == reflect.Uint8 {
			return x // bytes, which JSON writes as base64
		}
		out := make([]any, rv.Len())
		for i := range out {
			out[i] = jsonPlain(rv.Index(i).Interface())
		}
		return out
	case reflect.Map:
		out := make(map[string]any, rv.Len())
		for it := rv.MapRange(); it.Next(); {
			out[fmt.Sprint(it.Key().Interface())] = jsonPlain(it.Value().Interface())
		}
		return out
	}
	return x
}

// textAttr writes durations as text, and lists and maps as groups.
func textAttr(_ []string, a slog.Attr) slog.Attr {
	switch a.Value.Kind() {
	case slog.KindDuration:
		a.Value = slog.StringValue(a.Value.Duration().String())
	case slog.KindAny:
		if v, ok := groupOf(a.Value.Any()); ok {
			a.Value = v
		}
	}
	return a
}

// groupOf returns a list or a map as a group: a list's elements keyed by
// their index, a map's entries by their key, in order. The handler passes
// each element through textAttr again, so nested lists and maps become
// nested groups. It returns false for anything else, and for values that
// say how they print (an error, a fmt.Stringer), which the handler then
// writes as it would.
func groupOf(x any) (slog.Value, bool) {
	switch x.(type) {
	case nil, error, fmt.Stringer:
		return slog.Value{}, false
	}
	v := reflect.ValueOf(x)
	for v.Kind() == reflect.Pointer && !v.IsNil() {
		v = v.Elem()
	}
	var attrs []slog.Attr
	switch v.Kind() {
	case reflect.Slice, reflect.Array:
		if v.Type().Elem().Kind() == reflect.Uint8 {
			return slog.Value{}, false // bytes print as text
		}
		for i := range v.Len() {
			attrs = append(attrs, slog.Any(strconv.Itoa(i), v.Index(i).Interface()))
		}
	case reflect.Map:
		keys := v.MapKeys()
		slices.SortFunc(keys, func(a, b reflect.Value) int { return cmp.Compare(fmt.Sprint(a), fmt.Sprint(b)) })
		for _, k := range keys {
			attrs = append(attrs, slog.Any(fmt.Sprint(k), v.MapIndex(k).Interface()))
		}
	default:
		return slog.Value{}, false
	}
	if len(attrs) == 0 {
		// An empty group would vanish from the line; say it is empty.
		return slog.StringValue("[]"), true
	}
	return slog.GroupValue(attrs...), true
}

// logWarnings logs the configuration's warnings, one line each.
func logWarnings(log *slog.Logger, p *config.Pipeline) {
	for _, w := range p.Warnings {
		log.Warn("pipeline config warning", "path", w.Path, "at", fmt.Sprintf("%s:%d:%d", w.File, w.Line, w.Col), "warning", w.Msg)
	}
}
