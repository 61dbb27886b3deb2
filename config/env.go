package config

import (
	"fmt"
	"strings"
)

// expand interpolates s from env:
//
//	${VAR}          the value of VAR; an error if VAR is unset
//	${VAR:-default} the value of VAR, or default if VAR is unset or empty
//	$${             a literal "${"
//
// A default runs to the first "}" and is not itself interpolated. Any other
// "$" is kept as written. expand reports every problem in s, not just the
// first, and returns the values it took from env (not the defaults), so
// that errors can keep them out of sight.
func expand(s string, env func(string) (string, bool)) (val string, used, errs []string) {
	if !strings.Contains(s, "${") {
		return s, nil, nil
	}
	var b strings.Builder
	for {
		i := strings.Index(s, "${")
		if i < 0 {
			b.WriteString(s)
			return b.String(), used, errs
		}
		if i > 0 && s[i-1] == '$' { // "$${": escaped
			b.WriteString(s[:i-1])
			b.WriteString("${")
			s = s[i+2:]
			continue
		}
		b.WriteString(s[:i])
		end := strings.IndexByte(s[i:], '}')
		if end < 0 {
			errs = append(errs, `unterminated "${" (write "$${" for a literal "${")`)
			b.WriteString(s[i:])
			return b.String(), used, errs
		}
		ref := s[i+2 : i+end] // between "${" and "}"
		s = s[i+end+1:]
		name, def, hasDef := strings.Cut(ref, ":-")
		if !validVarName(name) {
			errs = append(errs, fmt.Sprintf(`invalid variable reference "${%s}": want ${NAME} or ${NAME:-default}, NAME of letters, digits and _ (write "$${" for a literal "${")`, ref))
			continue
		}
		val, ok := env(name)
		switch {
		case hasDef && (!ok || val == ""):
			b.WriteString(def)
		case ok:
			b.WriteString(val)
			used = append(used, val)
		default:
			errs = append(errs, fmt.Sprintf("environment variable %s is not set (write ${%s:-default} to give a default)", name, name))
		}
	}
}

func validVarName(s string) bool {
	if s == "" {
		return false
	}
	for i, c := range s {
		switch {
		case c == '_', 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z':
		case '0' <= c && c <= '9' && i > 0:
		default:
			return false
		}
	}
	return true
}
