package registrytest

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sharerelay/sharerelay/integration/kafkatest"
)

func TestMajorVersionReadsEachJavaNumbering(t *testing.T) {
	for in, want := range map[string]int{"25.0.3": 25, "21": 21, "17.0.15": 17, "1.8.0_402": 8, "11.0.2+9": 11, "22-ea": 22} {
		got, err := majorVersion(in)
		if err != nil || got != want {
			t.Errorf("majorVersion(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	if _, err := majorVersion("ea"); err == nil {
		t.Error(`majorVersion("ea") gave no error`)
	}
}

// fakeJDK makes a JDK home under dir named name: bin/java (never run)
// and a release file of version.
func fakeJDK(t *testing.T, dir, name, version string) string {
	t.Helper()
	home := filepath.Join(dir, name)
	if err := os.MkdirAll(filepath.Join(home, "bin"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(javaIn(home), []byte("#!/bin/false\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(home, "release"), []byte("IMPLEMENTOR=\"test\"\nJAVA_VERSION=\""+version+"\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return home
}

func TestFindJavaPicksTheFirstJDKOf21OrNewerInTheDocumentedOrder(t *testing.T) {
	jvm := t.TempDir()
	j17 := fakeJDK(t, jvm, "java-17-openjdk-amd64", "17.0.15")
	j21 := fakeJDK(t, jvm, "temurin-21-jdk-amd64", "21.0.7")
	j25 := fakeJDK(t, jvm, "temurin-25-jdk-amd64", "25.0.3")
	other := t.TempDir()
	own := fakeJDK(t, other, "own", "24")
	noPath := func(string) (string, error) { return "", errors.New("not found") }

	for _, tc := range []struct {
		name string
		env  map[string]string
		dirs []string
		path func(string) (string, error)
		want string
	}{
		{"SHARERELAY_REGISTRY_JAVA_HOME comes first", map[string]string{EnvJavaHome: own, "JAVA_HOME": j21}, []string{jvm}, noPath, javaIn(own)},
		{"JAVA_HOME of 21 or newer comes before the JVM folders", map[string]string{"JAVA_HOME": j21}, []string{jvm}, noPath, javaIn(j21)},
		{"a JAVA_HOME older than 21 is passed over for the newest JDK in the folders", map[string]string{"JAVA_HOME": j17}, []string{jvm}, noPath, javaIn(j25)},
		{"java on PATH is the last resort", map[string]string{"JAVA_HOME": j17}, nil, func(string) (string, error) { return javaIn(own), nil }, javaIn(own)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := javaFinder{getenv: func(k string) string { return tc.env[k] }, dirs: tc.dirs, lookPath: tc.path}
			got, err := f.find()
			if err != nil || got != tc.want {
				t.Errorf("find() = %q, %v; want %q", got, err, tc.want)
			}
		})
	}
}

func TestFindJavaNamesWhatItNeedsWhenNoJDKIsRecentEnough(t *testing.T) {
	jvm := t.TempDir()
	j17 := fakeJDK(t, jvm, "java-17-openjdk-amd64", "17.0.15")
	f := javaFinder{
		getenv:   func(k string) string { return map[string]string{"JAVA_HOME": j17}[k] },
		dirs:     []string{jvm, filepath.Join(jvm, "missing")},
		lookPath: func(string) (string, error) { return "", errors.New("not found") },
	}
	_, err := f.find()
	if !errors.Is(err, kafkatest.ErrToolMissing) {
		t.Fatalf("find() = %v; want an error wrapping kafkatest.ErrToolMissing (a skip)", err)
	}
	for _, want := range []string{"Java 21 or newer", EnvJavaHome, "JAVA_HOME=" + j17 + " (Java 17)"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
}

func TestFindJavaFailsRatherThanSkipsOnAWrongExplicitJDK(t *testing.T) {
	j17 := fakeJDK(t, t.TempDir(), "old", "17.0.15")
	for name, home := range map[string]string{"too old": j17, "not a JDK": t.TempDir()} {
		t.Run(name, func(t *testing.T) {
			f := javaFinder{getenv: func(k string) string { return map[string]string{EnvJavaHome: home}[k] }, lookPath: func(string) (string, error) { return "", errors.New("not found") }}
			_, err := f.find()
			if err == nil || errors.Is(err, kafkatest.ErrToolMissing) || !strings.Contains(err.Error(), EnvJavaHome) {
				t.Errorf("find() = %v; want a failure naming %s, not a skip", err, EnvJavaHome)
			}
		})
	}
}
