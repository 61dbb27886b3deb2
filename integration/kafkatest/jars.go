package kafkatest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/sharerelay/sharerelay/integration/internal/jvmproc"
)

// pomRelPath is where the broker's pom.xml lives, relative to the repo root.
const pomRelPath = "integration/kafka/pom.xml"

// EnvKafkaVersion names, when set, the Apache Kafka release the local
// broker runs ("4.2.2"), in place of the kafka.version of
// integration/kafka/pom.xml: mvn fetches that release's jars into their
// own cache directory. `make compat` runs the same scenario on each
// supported release line this way.
const EnvKafkaVersion = "SHARERELAY_KAFKA_VERSION"

// ErrToolMissing reports that java, or mvn while the jars are not cached,
// is not installed. Test helpers skip rather than fail on it.
var ErrToolMissing = errors.New("kafkatest: required tool missing")

// findPom locates integration/kafka/pom.xml by walking up from the working
// directory and, failing that, from the harness's sources.
func findPom() (string, error) {
	if p, ok := jvmproc.FindInRepo(pomRelPath); ok {
		return p, nil
	}
	return "", fmt.Errorf("find %s from the working directory or the kafkatest sources: not found", pomRelPath)
}

var kafkaVersionRE = regexp.MustCompile(`<kafka\.version>\s*([^<\s]+)\s*</kafka\.version>`)

// pomKafkaVersion reads the kafka.version property of the pom.
func pomKafkaVersion(pom string) (string, error) {
	b, err := os.ReadFile(pom)
	if err != nil {
		return "", fmt.Errorf("read pom: %w", err)
	}
	m := kafkaVersionRE.FindSubmatch(b)
	if m == nil {
		return "", fmt.Errorf("no <kafka.version> property in %s", pom)
	}
	return string(m[1]), nil
}

// kafkaVersionOK matches a release number mvn can be asked for; anything
// else in EnvKafkaVersion is refused before it reaches a path or mvn.
var kafkaVersionOK = regexp.MustCompile(`^[0-9]+\.[0-9]+\.[0-9]+(-[A-Za-z0-9.]+)?$`)

// KafkaVersion returns the Apache Kafka release a local broker runs:
// $SHARERELAY_KAFKA_VERSION when set, otherwise the pom's kafka.version.
func KafkaVersion() (string, error) {
	pom, err := findPom()
	if err != nil {
		return "", err
	}
	return kafkaVersion(pom, os.Getenv)
}

// kafkaVersion is KafkaVersion with the pom found and the environment
// read through getenv.
func kafkaVersion(pom string, getenv func(string) string) (string, error) {
	if v := strings.TrimSpace(getenv(EnvKafkaVersion)); v != "" {
		if !kafkaVersionOK.MatchString(v) {
			return "", fmt.Errorf("kafkatest: %s=%q: want a release number such as 4.2.2", EnvKafkaVersion, v)
		}
		return v, nil
	}
	return pomKafkaVersion(pom)
}

// CacheRoot returns the directory the test helpers keep what they fetch
// with mvn in: $SHARERELAY_CACHE, or $HOME/.cache/sharerelay (the user
// cache directory). The Kafka jars go to kafka-<version>/lib under it;
// other helpers (integration/registrytest) use directories of their own
// beside them.
func CacheRoot() (string, error) {
	if d := os.Getenv("SHARERELAY_CACHE"); d != "" {
		return d, nil
	}
	d, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("locate cache directory (set SHARERELAY_CACHE): %w", err)
	}
	return filepath.Join(d, "sharerelay"), nil
}

// hasJar reports whether dir holds the kafka_2.13 jar of version.
func hasJar(dir, version string) bool {
	_, err := os.Stat(filepath.Join(dir, "kafka_2.13-"+version+".jar"))
	return err == nil
}

// ensureJars returns the directory with the jars of the Kafka release
// KafkaVersion names, running `mvn dependency:copy-dependencies` (with
// -Dkafka.version, which overrides the pom's property) into that
// release's cache directory when it is empty.
// Concurrent callers (parallel test binaries) each copy into a private
// directory and rename it into place; the first rename wins.
func ensureJars(ctx context.Context) (string, error) {
	pom, err := findPom()
	if err != nil {
		return "", err
	}
	version, err := kafkaVersion(pom, os.Getenv)
	if err != nil {
		return "", err
	}
	root, err := CacheRoot()
	if err != nil {
		return "", err
	}
	lib := filepath.Join(root, "kafka-"+version, "lib")
	if hasJar(lib, version) {
		return lib, nil
	}
	mvn, err := exec.LookPath("mvn")
	if err != nil {
		return "", fmt.Errorf("%w: mvn not in PATH and Kafka %s jars not cached in %s", ErrToolMissing, version, lib)
	}
	if err := os.MkdirAll(filepath.Dir(lib), 0o755); err != nil {
		return "", fmt.Errorf("create jar cache: %w", err)
	}
	tmp, err := os.MkdirTemp(filepath.Dir(lib), "lib.tmp-")
	if err != nil {
		return "", fmt.Errorf("create jar cache: %w", err)
	}
	defer os.RemoveAll(tmp)
	cmd := exec.CommandContext(ctx, mvn, "-q", "-B", "-f", pom,
		"dependency:copy-dependencies", "-Dkafka.version="+version, "-DincludeScope=runtime", "-DoutputDirectory="+tmp)
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("fetch Kafka %s jars with mvn: %w\n%s", version, err, out)
	}
	if !hasJar(tmp, version) {
		return "", fmt.Errorf("fetch Kafka %s jars with mvn: kafka_2.13-%s.jar missing from output", version, version)
	}
	if err := os.Rename(tmp, lib); err != nil && !hasJar(lib, version) {
		// A partial directory left by an interrupted manual copy.
		if err := os.RemoveAll(lib); err != nil {
			return "", fmt.Errorf("replace incomplete jar cache: %w", err)
		}
		if err := os.Rename(tmp, lib); err != nil && !hasJar(lib, version) {
			return "", fmt.Errorf("move jars into cache: %w", err)
		}
	}
	return lib, nil
}

// javaPath finds java in $JAVA_HOME/bin or PATH.
func javaPath() (string, error) {
	if home := os.Getenv("JAVA_HOME"); home != "" {
		p := filepath.Join(home, "bin", "java")
		if _, err := os.Stat(p); err == nil {
			return p, nil
		}
	}
	p, err := exec.LookPath("java")
	if err != nil {
		return "", fmt.Errorf("%w: java not in PATH or JAVA_HOME", ErrToolMissing)
	}
	return p, nil
}

// Jars returns the directory holding the jars of the Kafka release
// KafkaVersion names, fetching them with mvn the first time (as the
// local broker does): for tests that run Kafka's own Java code beside
// the relay, such as its producer's partitioner. ErrToolMissing when mvn
// is needed and missing.
func Jars(ctx context.Context) (string, error) { return ensureJars(ctx) }

// Java returns the java command that runs the local broker:
// $JAVA_HOME/bin/java, else java from PATH (ErrToolMissing when none).
func Java() (string, error) { return javaPath() }
