package config

import (
	"log/slog"
	"net/url"
	"reflect"
	"strings"
	"time"
)

// Secret is a configuration value that must not be seen: a password or a
// client secret. It prints, marshals and logs as "[redacted]" (or "" when
// empty); Reveal returns the value for the code that needs it. Config
// errors never show it, wherever it appears.
type Secret string

const redacted = "[redacted]"

// Reveal returns the secret's value.
func (s Secret) Reveal() string { return string(s) }

// String returns "[redacted]", or "" for an empty secret, so that printing
// a pipeline cannot leak it.
func (s Secret) String() string {
	if s == "" {
		return ""
	}
	return redacted
}

// GoString is String, for %#v.
func (s Secret) GoString() string { return s.String() }

// MarshalText redacts s in JSON and every other text encoding.
func (s Secret) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// LogValue redacts s in logs.
func (s Secret) LogValue() slog.Value { return slog.StringValue(s.String()) }

var secretType = reflect.TypeFor[Secret]()

// LogValue returns the effective pipeline for a log line, secrets
// redacted: a group per section, keyed by the YAML names, durations as
// text. Logging a *Pipeline with slog uses it, so "config", p logs the
// whole configuration safely.
func (p *Pipeline) LogValue() slog.Value { return logValue(reflect.ValueOf(*p)) }

func logValue(v reflect.Value) slog.Value {
	for v.Kind() == reflect.Pointer || v.Kind() == reflect.Interface {
		if v.IsNil() {
			return slog.AnyValue(nil)
		}
		v = v.Elem()
	}
	switch {
	case v.Type() == secretType:
		return v.Interface().(Secret).LogValue()
	case v.Type() == durationType:
		return slog.StringValue(v.Interface().(time.Duration).String())
	case v.Kind() == reflect.Struct:
		var attrs []slog.Attr
		for _, f := range reflect.VisibleFields(v.Type()) {
			name, ok := yamlName(f)
			if !ok {
				continue
			}
			fv := v.FieldByIndex(f.Index)
			if fv.IsZero() && fv.Kind() != reflect.Bool && !isInt(fv.Type()) && fv.Type() != durationType {
				continue // an unset string, list or section says nothing
			}
			attrs = append(attrs, slog.Attr{Key: name, Value: logValue(fv)})
		}
		return slog.GroupValue(attrs...)
	case v.Kind() == reflect.String:
		return slog.StringValue(maskCredentials(v.String()))
	}
	return slog.AnyValue(plain(v))
}

// plain converts v to strings, numbers, bools, lists and maps, redacting
// secrets, for the parts of a pipeline slog has no groups for (lists and
// maps).
func plain(v reflect.Value) any {
	for v.Kind() == reflect.Pointer || v.Kind() == reflect.Interface {
		if v.IsNil() {
			return nil
		}
		v = v.Elem()
	}
	switch {
	case v.Type() == secretType:
		return v.Interface().(Secret).String()
	case v.Type() == durationType:
		return v.Interface().(time.Duration).String()
	}
	switch v.Kind() {
	case reflect.Struct:
		m := map[string]any{}
		for _, f := range reflect.VisibleFields(v.Type()) {
			if name, ok := yamlName(f); ok {
				if fv := v.FieldByIndex(f.Index); !fv.IsZero() {
					m[name] = plain(fv)
				}
			}
		}
		return m
	case reflect.Slice:
		out := make([]any, v.Len())
		for i := range out {
			out[i] = plain(v.Index(i))
		}
		return out
	case reflect.Map:
		m := map[string]any{}
		for it := v.MapRange(); it.Next(); {
			m[it.Key().String()] = plain(it.Value())
		}
		return m
	case reflect.String:
		return maskCredentials(v.String())
	}
	return v.Interface()
}

// maskCredentials hides credentials embedded in a value: the user
// information of a URL ("https://user:pw@host/" → "https://[redacted]@host/")
// or of host:port ("user:pw@host:9092" → "[redacted]@host:9092").
func maskCredentials(s string) string {
	at := strings.LastIndexByte(s, '@')
	if at < 0 {
		return s
	}
	if u, err := url.Parse(s); err == nil && u.User != nil && u.Host != "" {
		return u.Scheme + "://" + redacted + "@" + s[at+1:]
	}
	if strings.ContainsAny(s[at+1:], "/ ") || !strings.Contains(s[:at], ":") {
		return s // an "@" in a path, or no password: not credentials
	}
	return redacted + "@" + s[at+1:]
}

// secrets returns the values of the Secret fields of p.
func (p *Pipeline) secrets() []string {
	var out []string
	var walk func(v reflect.Value)
	walk = func(v reflect.Value) {
		for v.Kind() == reflect.Pointer {
			if v.IsNil() {
				return
			}
			v = v.Elem()
		}
		switch {
		case v.Type() == secretType:
			out = append(out, v.String())
		case v.Kind() == reflect.Struct:
			for i := range v.NumField() {
				if v.Type().Field(i).IsExported() {
					walk(v.Field(i))
				}
			}
		}
	}
	walk(reflect.ValueOf(*p))
	return out
}
