package registrytest

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"

	"github.com/sharerelay/sharerelay/integration/kafkatest"
)

// Version is the Apicurio Registry release the tests run.
const Version = "3.3.3"

// artifact is that release's runnable Quarkus layout on Maven Central
// (groupId:artifactId:version:type:classifier).
const artifact = "io.apicurio:apicurio-registry-app:" + Version + ":tar.gz:all"

// dependencyPlugin pins the Maven plugin that unpacks it: the release
// integration/kafka/pom.xml uses, so no other is fetched.
const dependencyPlugin = "org.apache.maven.plugins:maven-dependency-plugin:3.8.1"

// runJar is the launcher of the Quarkus layout, at its top.
const runJar = "quarkus-run.jar"

// hasApp reports whether dir holds an unpacked application.
func hasApp(dir string) bool {
	_, err := os.Stat(filepath.Join(dir, runJar))
	return err == nil
}

// ensureApp returns the directory of the unpacked application,
// $SHARERELAY_CACHE/apicurio-<Version>, unpacking it there with mvn
// (from the local Maven repository, or Maven Central) when it is absent.
// Concurrent callers (parallel test binaries) each unpack into a private
// directory and rename it into place; the first rename wins.
func ensureApp(ctx context.Context) (string, error) {
	root, err := kafkatest.CacheRoot()
	if err != nil {
		return "", err
	}
	dir := filepath.Join(root, "apicurio-"+Version)
	if hasApp(dir) {
		return dir, nil
	}
	mvn, err := exec.LookPath("mvn")
	if err != nil {
		return "", fmt.Errorf("%w: mvn not in PATH and Apicurio Registry %s not cached in %s", kafkatest.ErrToolMissing, Version, dir)
	}
	if err := os.MkdirAll(root, 0o755); err != nil {
		return "", fmt.Errorf("create the registry cache: %w", err)
	}
	tmp, err := os.MkdirTemp(root, "apicurio-"+Version+".tmp-")
	if err != nil {
		return "", fmt.Errorf("create the registry cache: %w", err)
	}
	defer os.RemoveAll(tmp)
	out := filepath.Join(tmp, "app")
	cmd := exec.CommandContext(ctx, mvn, "-q", "-B", dependencyPlugin+":unpack",
		"-Dartifact="+artifact, "-DoutputDirectory="+out,
		"-DmarkersDirectory="+filepath.Join(tmp, "markers"))
	cmd.Dir = tmp // without a pom, mvn writes beside the working directory
	if b, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("fetch Apicurio Registry %s with mvn: %w\n%s", Version, err, b)
	}
	if !hasApp(out) {
		return "", fmt.Errorf("fetch Apicurio Registry %s with mvn: %s missing from %s", Version, runJar, artifact)
	}
	if err := os.Rename(out, dir); err != nil && !hasApp(dir) {
		// A partial directory left by an interrupted manual copy.
		if err := os.RemoveAll(dir); err != nil {
			return "", fmt.Errorf("replace the incomplete registry cache: %w", err)
		}
		if err := os.Rename(out, dir); err != nil && !hasApp(dir) {
			return "", fmt.Errorf("move the registry into the cache: %w", err)
		}
	}
	return dir, nil
}
