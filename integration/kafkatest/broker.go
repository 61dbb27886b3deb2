package kafkatest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"

	"github.com/sharerelay/sharerelay/integration/internal/jvmproc"
)

// Broker is a local Apache Kafka broker running as a JVM child process:
// one combined KRaft broker and controller on 127.0.0.1.
// Its methods are safe for concurrent use, but Start, Stop, Kill and
// Restart are meant to be called from one goroutine at a time.
type Broker struct {
	dir     string
	port    int
	cport   int
	opts    Options
	java    string
	lib     string
	ownsDir bool

	proc jvmproc.Proc // the JVM
}

// StartLocal starts a local broker and waits until it is ready: it fetches
// the jars if needed, picks free ports, writes server.properties and
// log4j2.properties into the broker directory, formats the KRaft storage
// once, runs kafka.Kafka and waits for the "RUNNING" log line and for a
// probe topic to be created and deleted. The caller must Stop (or Kill)
// the broker; with an empty Options.Dir the caller also owns the
// temporary directory returned by Dir.
func StartLocal(ctx context.Context, opts Options) (*Broker, error) {
	b, err := newBroker(ctx, opts)
	if err != nil {
		return nil, err
	}
	autoPorts := opts.Port == 0 && opts.ControllerPort == 0
	for attempt := 1; ; attempt++ {
		if err = b.pickPorts(); err == nil {
			err = b.Start(ctx)
		}
		if err == nil {
			return b, nil
		}
		if !autoPorts || attempt == 3 || !errors.Is(err, jvmproc.ErrPortInUse) {
			break
		}
		b.port, b.cport = opts.Port, opts.ControllerPort // re-pick the free ones
	}
	b.removeDir()
	return nil, err
}

// newBroker makes a broker of opts without starting it: it finds java,
// fetches the jars if needed and creates the broker directory.
func newBroker(ctx context.Context, opts Options) (*Broker, error) {
	java, err := javaPath()
	if err != nil {
		return nil, err
	}
	lib := opts.LibDir
	if lib == "" {
		if lib, err = ensureJars(ctx); err != nil {
			return nil, err
		}
	}
	b := &Broker{dir: opts.Dir, port: opts.Port, cport: opts.ControllerPort, opts: opts, java: java, lib: lib}
	if b.dir == "" {
		if b.dir, err = os.MkdirTemp("", "sharerelay-kafka-"); err != nil {
			return nil, fmt.Errorf("create broker directory: %w", err)
		}
		b.ownsDir = true
	} else if err := os.MkdirAll(b.dir, 0o755); err != nil {
		return nil, fmt.Errorf("create broker directory: %w", err)
	}
	if b.dir, err = filepath.Abs(b.dir); err != nil {
		return nil, fmt.Errorf("broker directory: %w", err)
	}
	return b, nil
}

// removeDir removes the broker directory when the broker created it.
func (b *Broker) removeDir() {
	if b.ownsDir {
		os.RemoveAll(b.dir)
	}
}

// pickPorts fills in the ports left at zero.
func (b *Broker) pickPorts() error {
	if b.port != 0 && b.port == b.cport {
		return fmt.Errorf("broker and controller ports are both %d", b.port)
	}
	var err error
	if b.port == 0 {
		if b.port, err = FreePort(); err != nil {
			return err
		}
	}
	for b.opts.JoinController == "" && (b.cport == 0 || b.cport == b.port) {
		if b.cport, err = FreePort(); err != nil {
			return err
		}
	}
	return nil
}

// Addr returns the bootstrap address "127.0.0.1:port" the broker listens
// on (not Options.AdvertisedAddr).
func (b *Broker) Addr() string { return "127.0.0.1:" + strconv.Itoa(b.port) }

// ControllerAddr returns the KRaft controller address "127.0.0.1:port"
// (the one it joined, for a broker-only node).
func (b *Broker) ControllerAddr() string {
	if b.opts.JoinController != "" {
		return b.opts.JoinController
	}
	return "127.0.0.1:" + strconv.Itoa(b.cport)
}

// Dir returns the broker directory (configuration, log and data).
func (b *Broker) Dir() string { return b.dir }

// LogPath returns the file that receives the JVM's stdout and stderr.
// It is appended to across restarts.
func (b *Broker) LogPath() string { return filepath.Join(b.dir, "broker.log") }

// dataDir is log.dirs (and the KRaft metadata directory).
func (b *Broker) dataDir() string { return filepath.Join(b.dir, "data") }

// Pid returns the JVM's process id, or 0 when it is not running.
func (b *Broker) Pid() int { return b.proc.Pid() }

// Running reports whether the JVM process is alive (not whether it is
// ready).
func (b *Broker) Running() bool { return b.Pid() != 0 }

// Start launches the broker on its directory and ports and waits until it
// is ready (see StartLocal), for at most Options.StartTimeout. On failure
// the JVM is killed and the error ends with the tail of the broker log.
func (b *Broker) Start(ctx context.Context) error {
	if b.Running() {
		return fmt.Errorf("start broker %s: already running", b.Addr())
	}
	props := serverProperties(b.dataDir(), b.port, b.cport, node{b.opts.NodeID, b.opts.JoinController, b.opts.Voters}, b.opts.AdvertisedAddr, b.opts.Properties)
	if err := writeConfig(b.dir, props); err != nil {
		return fmt.Errorf("start broker: %w", err)
	}
	if err := b.format(ctx); err != nil {
		return fmt.Errorf("start broker: %w", err)
	}
	cmd := exec.Command(b.java, b.javaArgs("kafka.Kafka", "server.properties")...)
	cmd.Dir = b.dir
	timeout := b.opts.StartTimeout
	if timeout == 0 {
		timeout = DefaultStartTimeout
	}
	probe, closeProbe := b.prober()
	defer closeProbe()
	return b.proc.Start(ctx, jvmproc.Spec{
		Cmd:        cmd,
		Detached:   b.opts.Detached,
		Log:        b.LogPath(),
		Tag:        "kafkatest",
		Name:       "broker",
		Addr:       b.Addr(),
		Timeout:    timeout,
		ReadyLine:  readyLine,
		FatalLines: fatalLines,
		Probe:      probe,
		PortInUse:  containsAddrInUse,
	})
}

// javaArgs builds the java command line for a main class of the jars.
func (b *Broker) javaArgs(mainClass string, args ...string) []string {
	jvm := b.opts.JVMArgs
	if jvm == nil {
		jvm = defaultJVMArgs
	}
	out := append([]string{}, jvm...)
	out = append(out,
		"-Dlog4j2.configurationFile="+filepath.Join(b.dir, "log4j2.properties"),
		"-Dkafka.logs.dir="+filepath.Join(b.dir, "logs"),
		"-cp", filepath.Join(b.lib, "*"), // expanded by java, not a shell
		mainClass)
	return append(out, args...)
}

// format formats the KRaft storage unless the data directory already is.
// The output (bootstrap metadata version and features) goes to the log.
func (b *Broker) format(ctx context.Context) error {
	if _, err := os.Stat(filepath.Join(b.dataDir(), "meta.properties")); err == nil {
		return nil
	}
	cmd := exec.CommandContext(ctx, b.java, b.javaArgs("kafka.tools.StorageTool",
		"format", "--ignore-formatted", "-t", b.clusterID(), "-c", "server.properties")...)
	cmd.Dir = b.dir
	out, err := cmd.CombinedOutput()
	if werr := appendFile(b.LogPath(), append([]byte("=== kafkatest: StorageTool format ===\n"), out...)); werr != nil && err == nil {
		err = werr
	}
	if err != nil {
		return fmt.Errorf("format storage: %w\n%s", err, out)
	}
	return nil
}

// clusterID is the KRaft cluster id the storage is formatted with.
func (b *Broker) clusterID() string {
	if b.opts.ClusterID != "" {
		return b.opts.ClusterID
	}
	return ClusterID
}

// appendFile appends data to the file at path, creating it if needed.
func appendFile(path string, data []byte) error {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("append to %s: %w", path, err)
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return fmt.Errorf("append to %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("append to %s: %w", path, err)
	}
	return nil
}
