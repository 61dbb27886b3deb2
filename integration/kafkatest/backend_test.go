package kafkatest

import (
	"context"
	"errors"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// env is a fake environment for the selection logic.
type env map[string]string

func (e env) get(k string) string { return e[k] }

func TestChooseBackendReadsTheEnvironment(t *testing.T) {
	for _, tc := range []struct {
		name    string
		env     env
		want    choice
		wantErr string
	}{
		{"nothing set is the JVM broker", env{}, choice{BackendJVM, DefaultImage}, ""},
		{"jvm is the JVM broker", env{EnvBroker: "jvm"}, choice{BackendJVM, DefaultImage}, ""},
		{"testcontainers, any case and blanks", env{EnvBroker: " TestContainers "}, choice{BackendTestcontainers, DefaultImage}, ""},
		{"an image of one's own", env{EnvBroker: "testcontainers", EnvBrokerImage: "confluentinc/confluent-local:8.2.0"},
			choice{BackendTestcontainers, "confluentinc/confluent-local:8.2.0"}, ""},
		{"an unknown backend names the known ones", env{EnvBroker: "docker"}, choice{}, `SHARERELAY_BROKER="docker": want "jvm" (the default) or "testcontainers"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := chooseBackend(tc.env.get)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("chooseBackend = %+v, %v; want %+v", got, err, tc.want)
			}
		})
	}
}

func TestDockerRequestedButUnavailableIsAClearError(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		name string
		env  env
		want string
	}{
		{"DOCKER_HOST names a socket nobody listens on", env{"DOCKER_HOST": "unix://" + filepath.Join(dir, "none.sock")}, "ping unix"},
		{"DOCKER_HOST is not a URL Docker takes", env{"DOCKER_HOST": "ssh://host"}, "want unix:// or tcp://"},
		{"no DOCKER_HOST and no default socket", env{"HOME": dir, "XDG_RUNTIME_DIR": dir}, "DOCKER_HOST is unset and none of"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.env["DOCKER_HOST"] == "" {
				if _, err := os.Stat("/var/run/docker.sock"); err == nil {
					t.Skip("this machine has /var/run/docker.sock")
				}
			}
			err := dockerAvailable(context.Background(), tc.env.get)
			if !errors.Is(err, ErrDockerUnavailable) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("dockerAvailable = %v; want ErrDockerUnavailable saying %q", err, tc.want)
			}
		})
	}
}

func TestDockerAnsweringItsPingIsAvailable(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "docker.sock")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Skipf("unix sockets: %v", err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/_ping" {
			w.Write([]byte("OK"))
			return
		}
		http.NotFound(w, r)
	})}
	go srv.Serve(l)
	defer srv.Close()
	if err := dockerAvailable(context.Background(), env{"DOCKER_HOST": "unix://" + sock}.get); err != nil {
		t.Fatalf("dockerAvailable = %v, want nil", err)
	}
}

func TestTestcontainersRequestedIsAClearErrorWhenItCannotStart(t *testing.T) {
	t.Setenv("DOCKER_HOST", "unix://"+filepath.Join(t.TempDir(), "none.sock"))
	_, err := startContainerFor(context.Background(), choice{BackendTestcontainers, DefaultImage})
	if testcontainersBuilt {
		if !errors.Is(err, ErrDockerUnavailable) || !strings.Contains(err.Error(), "unset it to use the JVM broker") {
			t.Fatalf("error %v; want ErrDockerUnavailable and how to get the JVM broker back", err)
		}
		return
	}
	if !errors.Is(err, ErrNoTestcontainers) || !strings.Contains(err.Error(), "go test -tags testcontainers") {
		t.Fatalf("error %v; want ErrNoTestcontainers saying how to build with it", err)
	}
}

func TestContainerEnvCarriesTheTestBrokerProperties(t *testing.T) {
	e := containerEnv()
	for k, want := range map[string]string{
		"KAFKA_SHARE_COORDINATOR_STATE_TOPIC_REPLICATION_FACTOR": "1",
		"KAFKA_SHARE_COORDINATOR_STATE_TOPIC_MIN_ISR":            "1",
		"KAFKA_TRANSACTION_STATE_LOG_MIN_ISR":                    "1",
		"KAFKA_GROUP_SHARE_RECORD_LOCK_DURATION_MS":              "15000",
		"KAFKA_AUTO_CREATE_TOPICS_ENABLE":                        "false",
	} {
		if e[k] != want {
			t.Errorf("%s = %q, want %q", k, e[k], want)
		}
	}
}
