package kafkatest

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestKafkaVersionComesFromTheEnvironmentAndElseThePom(t *testing.T) {
	pom := filepath.Join(t.TempDir(), "pom.xml")
	if err := os.WriteFile(pom, []byte("<properties><kafka.version>4.4.0</kafka.version></properties>"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name, env, want, err string
	}{
		{name: "unset: the pom's version", want: "4.4.0"},
		{name: "blank: the pom's version", env: "  ", want: "4.4.0"},
		{name: "a release number overrides the pom", env: "4.2.2", want: "4.2.2"},
		{name: "a pre-release suffix is a release number too", env: "4.5.0-rc1", want: "4.5.0-rc1"},
		{name: "a path is refused before it reaches the cache or mvn", env: "../4.2.2", err: "want a release number"},
		{name: "a property injection is refused", env: "4.2.2 -Dx=y", err: "want a release number"},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := kafkaVersion(pom, func(k string) string {
				if k == EnvKafkaVersion {
					return c.env
				}
				return ""
			})
			switch {
			case c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)):
				t.Fatalf("kafkaVersion(%q) = %q, %v; want an error containing %q", c.env, got, err, c.err)
			case c.err == "" && (err != nil || got != c.want):
				t.Fatalf("kafkaVersion(%q) = %q, %v; want %q", c.env, got, err, c.want)
			}
		})
	}
}
