package registrytest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"time"

	"github.com/sharerelay/sharerelay/integration/internal/jvmproc"
	"github.com/sharerelay/sharerelay/integration/kafkatest"
)

// CcompatPath is where Apicurio serves its Confluent-compatible API.
const CcompatPath = "/apis/ccompat/v7"

// DefaultStartTimeout bounds how long [Registry.Start] waits for the
// registry to answer when [Options.StartTimeout] is zero.
const DefaultStartTimeout = 90 * time.Second

// Options configures a registry started by [StartLocal]. The zero value
// is ready to use.
type Options struct {
	// Dir is the registry's directory: its database, log and temporary
	// files. Empty means a new temporary directory, which the caller
	// owns once the registry has started (see [Registry.Dir]). A
	// directory with a database keeps its schemas.
	Dir string

	// Port is the HTTP port on 127.0.0.1; 0 picks a free one, and picks
	// again when another process takes it before the registry binds it.
	Port int

	// Properties adds or overrides configuration properties of the
	// registry (Quarkus and Apicurio keys, such as
	// apicurio.ccompat.legacy-id-mode.enabled), passed as JVM system
	// properties, which win over the environment. Overriding the
	// addresses, ports or the datasource breaks the accessors and the
	// persistence described on [Registry].
	Properties map[string]string

	// JVMArgs replaces the default JVM flags (heap and JIT settings)
	// when not nil.
	JVMArgs []string

	// StartTimeout bounds the wait for the registry to answer; 0 means
	// [DefaultStartTimeout].
	StartTimeout time.Duration
}

// defaultJVMArgs keep the registry small and quick to start, for
// functional tests next to other JVMs on a small machine.
var defaultJVMArgs = []string{
	"-Xms64m", "-Xmx256m",
	"-XX:+UseSerialGC",
	"-XX:TieredStopAtLevel=1",
	"-XX:-UsePerfData",
	"-XX:+ExitOnOutOfMemoryError",
	"-Djava.awt.headless=true",
}

// Registry is a local Apicurio Registry running as a JVM child process,
// its HTTP API on 127.0.0.1 and its schemas in an H2 database file in
// its directory, written at each commit (WRITE_DELAY=0): a Start after
// Stop or Kill serves the same schemas under the same ids.
// Its methods are safe for concurrent use, but Start, Stop and Kill are
// meant to be called from one goroutine at a time.
type Registry struct {
	dir     string
	port    int
	mport   int // Quarkus management interface (health, metrics)
	opts    Options
	java    string
	app     string
	ownsDir bool

	proc jvmproc.Proc // the JVM
}

// StartLocal starts a local registry and waits until it answers: it finds
// a JDK 21+, unpacks the application if needed, picks free ports, runs the
// JVM and waits until the ccompat API lists subjects. The caller must
// Stop (or Kill) the registry; with an empty Options.Dir the caller also
// owns the temporary directory returned by Dir. A missing JDK or mvn is
// an error wrapping kafkatest.ErrToolMissing.
func StartLocal(ctx context.Context, opts Options) (*Registry, error) {
	r, err := newRegistry(ctx, opts)
	if err != nil {
		return nil, err
	}
	if err := r.startOnPorts(ctx, opts.Port == 0); err != nil {
		if r.ownsDir {
			os.RemoveAll(r.dir)
		}
		return nil, err
	}
	return r, nil
}

// startOnPorts picks the ports left at zero and starts the registry;
// when repick is set and a port was taken by another process in between,
// it picks new ones and tries again, three times in all.
func (r *Registry) startOnPorts(ctx context.Context, repick bool) error {
	for attempt := 1; ; attempt++ {
		err := r.pickPorts()
		if err == nil {
			err = r.Start(ctx)
		}
		if err == nil || !repick || attempt == 3 || !errors.Is(err, jvmproc.ErrPortInUse) {
			return err
		}
		r.port, r.mport = 0, 0
	}
}

// newRegistry makes a registry of opts without starting it: it finds
// java, unpacks the application if needed and creates the directory.
func newRegistry(ctx context.Context, opts Options) (*Registry, error) {
	java, err := findJava()
	if err != nil {
		return nil, err
	}
	app, err := ensureApp(ctx)
	if err != nil {
		return nil, err
	}
	r := &Registry{dir: opts.Dir, port: opts.Port, opts: opts, java: java, app: app}
	if r.dir == "" {
		if r.dir, err = os.MkdirTemp("", "sharerelay-registry-"); err != nil {
			return nil, fmt.Errorf("create the registry directory: %w", err)
		}
		r.ownsDir = true
	} else if err := os.MkdirAll(r.dir, 0o755); err != nil {
		return nil, fmt.Errorf("create the registry directory: %w", err)
	}
	if r.dir, err = filepath.Abs(r.dir); err != nil {
		return nil, fmt.Errorf("registry directory: %w", err)
	}
	return r, nil
}

// pickPorts fills in the ports left at zero, two different ones.
func (r *Registry) pickPorts() error {
	var err error
	if r.port == 0 {
		if r.port, err = kafkatest.FreePort(); err != nil {
			return err
		}
	}
	for r.mport == 0 || r.mport == r.port {
		if r.mport, err = kafkatest.FreePort(); err != nil {
			return err
		}
	}
	return nil
}

// URL returns the base URL of the Confluent-compatible API,
// http://127.0.0.1:port/apis/ccompat/v7, for a schema registry client.
func (r *Registry) URL() string { return "http://" + r.Addr() + CcompatPath }

// Addr returns the address "127.0.0.1:port" the registry's HTTP API
// listens on (its other APIs, /apis/registry/v3 and the UI, too).
func (r *Registry) Addr() string { return "127.0.0.1:" + strconv.Itoa(r.port) }

// Dir returns the registry's directory (database, log, temporary files).
func (r *Registry) Dir() string { return r.dir }

// LogPath returns the file that receives the JVM's stdout and stderr,
// appended to across restarts.
func (r *Registry) LogPath() string { return filepath.Join(r.dir, "registry.log") }

// dataDir holds the H2 database.
func (r *Registry) dataDir() string { return filepath.Join(r.dir, "data") }

// tmpDir is the JVM's java.io.tmpdir: Quarkus unpacks native libraries
// and caches files there, which then go with the directory.
func (r *Registry) tmpDir() string { return filepath.Join(r.dir, "tmp") }

// Pid returns the JVM's process id, or 0 when it is not running.
func (r *Registry) Pid() int { return r.proc.Pid() }

// Running reports whether the JVM process is alive (not whether it
// answers).
func (r *Registry) Running() bool { return r.Pid() != 0 }

// Start launches the registry on its directory and port and waits until
// it answers (see StartLocal), for at most Options.StartTimeout. On
// failure the JVM is killed and the error ends with the tail of the log.
func (r *Registry) Start(ctx context.Context) error {
	if r.Running() {
		return fmt.Errorf("start registry %s: already running", r.Addr())
	}
	for _, d := range []string{r.dataDir(), r.tmpDir()} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return fmt.Errorf("start registry: %w", err)
		}
	}
	cmd := exec.Command(r.java, r.javaArgs()...)
	cmd.Dir = r.dir // files Quarkus writes relative to it stay out of the cache
	timeout := r.opts.StartTimeout
	if timeout == 0 {
		timeout = DefaultStartTimeout
	}
	return r.proc.Start(ctx, jvmproc.Spec{
		Cmd:     cmd,
		Log:     r.LogPath(),
		Tag:     "registrytest",
		Name:    "registry",
		Addr:    r.Addr(),
		Note:    r.java,
		Timeout: timeout,
		// Listening on its own address, so that the answer below is not
		// another process's on the same port.
		ReadyLine:  "Listening on: http://" + r.Addr(),
		FatalLines: fatalLines,
		Probe:      r.prober(),
		Awaited:    "answered",
		PortInUse:  containsPortInUse,
	})
}

// javaArgs builds the java command line: the JVM flags, the
// configuration as system properties in key order, and the launcher.
func (r *Registry) javaArgs() []string {
	jvm := r.opts.JVMArgs
	if jvm == nil {
		jvm = defaultJVMArgs
	}
	props := r.properties()
	keys := make([]string, 0, len(props))
	for k := range props {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	out := append([]string{}, jvm...)
	for _, k := range keys {
		out = append(out, "-D"+k+"="+props[k])
	}
	return append(out, "-jar", filepath.Join(r.app, runJar))
}

// properties is the registry's configuration: loopback addresses, the
// ports, the database file (committed to disk at each commit, so a
// kill -9 loses nothing acknowledged), a small connection pool, and the
// temporary files kept in the directory; then Options.Properties.
func (r *Registry) properties() map[string]string {
	p := map[string]string{
		"quarkus.http.host":       "127.0.0.1",
		"quarkus.http.port":       strconv.Itoa(r.port),
		"quarkus.management.host": "127.0.0.1",
		"quarkus.management.port": strconv.Itoa(r.mport),
		// Apicurio's default is jdbc:h2:mem:, forgotten at exit. H2
		// writes a commit within WRITE_DELAY (500 ms by default), so a
		// kill -9 right after a registration would lose it.
		"apicurio.datasource.url":               "jdbc:h2:file:" + filepath.Join(r.dataDir(), "registry") + ";WRITE_DELAY=0",
		"apicurio.datasource.jdbc.initial-size": "2",
		"apicurio.datasource.jdbc.min-size":     "2",
		"apicurio.datasource.jdbc.max-size":     "20",
		"apicurio.storage.snapshot.location":    r.tmpDir(),
		"apicurio.import.work-dir":              r.tmpDir(),
		"java.io.tmpdir":                        r.tmpDir(),
	}
	for k, v := range r.opts.Properties {
		p[k] = v
	}
	return p
}
