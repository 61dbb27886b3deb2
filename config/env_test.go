package config

import (
	"slices"
	"testing"
)

func TestExpandInterpolatesTheEnvironment(t *testing.T) {
	env := func(name string) (string, bool) {
		v, ok := map[string]string{"HOST": "kafka", "PORT": "9092", "EMPTY": ""}[name]
		return v, ok
	}
	for _, tc := range []struct {
		in, want string
		errs     []string
	}{
		{in: "no references", want: "no references"},
		{in: "${HOST}:${PORT}", want: "kafka:9092"},
		{in: "${MISSING:-127.0.0.1}:${PORT:-1}", want: "127.0.0.1:9092"},
		{in: "${EMPTY:-fallback}", want: "fallback"},
		{in: "[${EMPTY}]", want: "[]"},
		{in: "${MISSING:-}", want: ""},
		{in: "${MISSING:-a:-b}", want: "a:-b"},
		{in: "$${HOST} is ${HOST}", want: "${HOST} is kafka"},
		{in: "$$${HOST}", want: "$${HOST}"},
		{in: "$HOST $ {HOST} $$ $", want: "$HOST $ {HOST} $$ $"},
		{in: "${MISSING}", errs: []string{"environment variable MISSING is not set (write ${MISSING:-default} to give a default)"}},
		{in: "${A}${B}", errs: []string{
			"environment variable A is not set (write ${A:-default} to give a default)",
			"environment variable B is not set (write ${B:-default} to give a default)",
		}},
		{in: "${HOST", errs: []string{`unterminated "${" (write "$${" for a literal "${")`}},
		{in: "${}", errs: []string{`invalid variable reference "${}": want ${NAME} or ${NAME:-default}, NAME of letters, digits and _ (write "$${" for a literal "${")`}},
		{in: "${HOST-x}", errs: []string{`invalid variable reference "${HOST-x}": want ${NAME} or ${NAME:-default}, NAME of letters, digits and _ (write "$${" for a literal "${")`}},
	} {
		got, _, errs := expand(tc.in, env)
		if !slices.Equal(errs, tc.errs) {
			t.Errorf("expand(%q) errors %q, want %q", tc.in, errs, tc.errs)
			continue
		}
		if tc.errs == nil && got != tc.want {
			t.Errorf("expand(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestExpandReportsTheEnvironmentValuesItUsedButNotTheDefaults(t *testing.T) {
	env := func(name string) (string, bool) {
		v, ok := map[string]string{"USER": "alice", "PASS": "s3cret", "EMPTY": ""}[name]
		return v, ok
	}
	_, used, _ := expand("${USER}:${PASS}@${HOST:-kafka}:${EMPTY:-9092}", env)
	if want := []string{"alice", "s3cret"}; !slices.Equal(used, want) {
		t.Errorf("used %q, want %q", used, want)
	}
}
