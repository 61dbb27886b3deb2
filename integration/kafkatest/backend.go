package kafkatest

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// Environment variables that choose the shared broker's backend.
const (
	// EnvBroker chooses how [Bootstrap] gets a broker when
	// KAFKA_BOOTSTRAP_SERVERS is unset: "jvm" (the default, a JVM
	// broker from the Maven jars) or "testcontainers" (a container
	// started through testcontainers-go's Kafka module; the test binary
	// must be built with -tags testcontainers and Docker must answer).
	EnvBroker = "SHARERELAY_BROKER"
	// EnvBrokerImage is the container image of the testcontainers
	// backend (default DefaultImage).
	EnvBrokerImage = "SHARERELAY_BROKER_IMAGE"
)

// Backend is how the shared broker is started.
type Backend string

const (
	// BackendJVM runs Apache Kafka from the Maven jars as a child process.
	BackendJVM Backend = "jvm"
	// BackendTestcontainers runs a container through testcontainers-go.
	BackendTestcontainers Backend = "testcontainers"
)

// DefaultImage is the testcontainers backend's image. testcontainers-go's
// Kafka module (v0.44) only starts Confluent-style images: it sources
// /etc/confluent/docker scripts, so apache/kafka does not work with it.
// Confluent Platform 8.3 carries Apache Kafka 4.3, with share groups on
// by default. The tag is not checked here (no registry of images is
// reachable from CI); SHARERELAY_BROKER_IMAGE overrides it.
const DefaultImage = "confluentinc/confluent-local:8.3.0"

// ErrDockerUnavailable means the testcontainers backend was chosen but no
// Docker engine answered.
var ErrDockerUnavailable = errors.New("kafkatest: Docker is not available")

// ErrNoTestcontainers means the testcontainers backend was chosen in a
// test binary built without the testcontainers build tag.
var ErrNoTestcontainers = errors.New("kafkatest: this test binary was built without -tags testcontainers")

// choice is the backend and image the environment asks for.
type choice struct {
	backend Backend
	image   string
}

// chooseBackend reads EnvBroker and EnvBrokerImage through getenv. An
// unknown backend is an error naming the ones there are.
func chooseBackend(getenv func(string) string) (choice, error) {
	c := choice{backend: BackendJVM, image: DefaultImage}
	if img := strings.TrimSpace(getenv(EnvBrokerImage)); img != "" {
		c.image = img
	}
	switch v := strings.ToLower(strings.TrimSpace(getenv(EnvBroker))); v {
	case "", string(BackendJVM):
	case string(BackendTestcontainers):
		c.backend = BackendTestcontainers
	default:
		return c, fmt.Errorf("kafkatest: %s=%q: want %q (the default) or %q", EnvBroker, v, BackendJVM, BackendTestcontainers)
	}
	return c, nil
}

// container is a broker in a container, from startContainer.
type container struct {
	seeds []string
	image string
	stop  func() error
}

// startContainerFor starts the backend c asks for: a container, after checking
// that this binary can start one and that Docker answers; the JVM broker
// is started by the caller.
func startContainerFor(ctx context.Context, c choice) (*container, error) {
	if c.backend != BackendTestcontainers {
		return nil, fmt.Errorf("kafkatest: startContainerFor(%s): not a container backend", c.backend)
	}
	if !testcontainersBuilt {
		return nil, fmt.Errorf("%w: rerun with go test -tags testcontainers, or unset %s", ErrNoTestcontainers, EnvBroker)
	}
	if err := dockerAvailable(ctx, os.Getenv); err != nil {
		return nil, fmt.Errorf("%s=%s: %w (unset it to use the JVM broker)", EnvBroker, c.backend, err)
	}
	return startContainer(ctx, c.image)
}

// dockerAvailable pings the Docker engine of DOCKER_HOST, or of the first
// default socket that exists, within 3 s. It does not know
// testcontainers' own configuration file: an engine named only there
// is not found.
func dockerAvailable(ctx context.Context, getenv func(string) string) error {
	network, addr, err := dockerAddr(getenv)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	tr := &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, network, addr)
	}}
	defer tr.CloseIdleConnections()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://docker/_ping", nil)
	if err != nil {
		return fmt.Errorf("%w: %v", ErrDockerUnavailable, err)
	}
	resp, err := (&http.Client{Transport: tr}).Do(req)
	if err != nil {
		return fmt.Errorf("%w: ping %s %s: %v", ErrDockerUnavailable, network, addr, err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%w: ping %s %s: %s", ErrDockerUnavailable, network, addr, resp.Status)
	}
	return nil
}

// dockerAddr is the engine's network and address: DOCKER_HOST
// (unix:// or tcp://), else the first default socket that exists.
func dockerAddr(getenv func(string) string) (network, addr string, err error) {
	if h := getenv("DOCKER_HOST"); h != "" {
		u, err := url.Parse(h)
		if err != nil {
			return "", "", fmt.Errorf("%w: DOCKER_HOST=%q: %v", ErrDockerUnavailable, h, err)
		}
		switch u.Scheme {
		case "unix":
			return "unix", u.Path, nil
		case "tcp":
			return "tcp", u.Host, nil
		}
		return "", "", fmt.Errorf("%w: DOCKER_HOST=%q: want unix:// or tcp://", ErrDockerUnavailable, h)
	}
	candidates := []string{"/var/run/docker.sock"}
	if d := getenv("XDG_RUNTIME_DIR"); d != "" {
		candidates = append(candidates, filepath.Join(d, "docker.sock"))
	}
	if d := getenv("HOME"); d != "" {
		candidates = append(candidates, filepath.Join(d, ".docker", "run", "docker.sock"),
			filepath.Join(d, ".docker", "desktop", "docker.sock"))
	}
	for _, s := range candidates {
		if _, err := os.Stat(s); err == nil {
			return "unix", s, nil
		}
	}
	return "", "", fmt.Errorf("%w: DOCKER_HOST is unset and none of %s exists", ErrDockerUnavailable, strings.Join(candidates, ", "))
}

// containerEnv turns the test broker's properties into the KAFKA_*
// variables Kafka images map to server properties ("." becomes "_",
// upper case; none of these names has a "_" or "-" to escape).
func containerEnv() map[string]string {
	env := make(map[string]string)
	for _, p := range defaultProperties() {
		env["KAFKA_"+strings.ToUpper(strings.ReplaceAll(p.key, ".", "_"))] = p.value
	}
	return env
}
