package kafkatest

import "time"

// ClusterID is the fixed KRaft cluster id a local broker is formatted with
// unless [Options.ClusterID] names another. A fixed id saves one JVM launch
// (StorageTool random-uuid); it is the default id of the official
// apache/kafka Docker image.
const ClusterID = "5L6g3nShT-eMCtK--X86sw"

// DefaultStartTimeout bounds how long [Broker.Start] waits for the broker to
// become ready when [Options.StartTimeout] is zero.
const DefaultStartTimeout = 90 * time.Second

// Options configures a local broker started by [StartLocal].
// The zero value is ready to use.
type Options struct {
	// Dir is the broker directory holding server.properties, the log file
	// and the data. Empty means a new temporary directory.
	// An already formatted directory is reused as it is.
	Dir string

	// Port is the broker (PLAINTEXT) port on 127.0.0.1; 0 picks a free one.
	Port int

	// ControllerPort is the KRaft controller port on 127.0.0.1; 0 picks a
	// free one.
	ControllerPort int

	// AdvertisedAddr, when set ("host:port"), is the address the broker
	// advertises to clients in metadata, for example a proxy in front of
	// it. The broker still listens on 127.0.0.1:Port.
	AdvertisedAddr string

	// Properties adds or overrides broker properties
	// (server.properties keys). An empty value removes a default property.
	Properties map[string]string

	// LibDir is the directory with the Kafka jars. Empty means the
	// per-version cache, filled with mvn when needed.
	LibDir string

	// JVMArgs replaces the default JVM flags (heap and GC settings) when
	// not nil.
	JVMArgs []string

	// StartTimeout bounds the wait for readiness; 0 means
	// [DefaultStartTimeout].
	StartTimeout time.Duration

	// Detached starts the JVM in its own session so that it outlives the
	// Go process. Otherwise the JVM gets SIGKILL when the process that
	// started it dies (on Linux).
	Detached bool

	// JoinController, when set to the KRaft controller address of a
	// running local node ([Broker.ControllerAddr]), starts a broker-only
	// node that joins that node's cluster instead of a combined
	// broker-and-controller node: a second broker, for tests that need a
	// partition without a leader while the rest of the cluster runs.
	// ControllerPort is ignored then.
	JoinController string

	// NodeID is the KRaft node id; 0 means 1. A node that joins another
	// must have a different one.
	NodeID int

	// ClusterID is the KRaft cluster id the storage is formatted with;
	// empty means [ClusterID]. Two brokers that should be independent
	// clusters, as a client sees them in metadata, need different ids
	// ([NamedClusterID] derives one). An already formatted directory
	// keeps the id it has.
	ClusterID string

	// Voters, when set, is controller.quorum.voters of a multi-node
	// KRaft quorum ("1@127.0.0.1:9093,2@…"): the node is a combined
	// broker and controller, one of those voters, whose NodeID and
	// ControllerPort must match its entry. [StartCluster] sets it.
	Voters string
}

// defaultJVMArgs favour start-up time and a small footprint over
// throughput: functional tests only.
var defaultJVMArgs = []string{
	"-Xms256m", "-Xmx512m",
	"-XX:+UseSerialGC",
	"-XX:TieredStopAtLevel=1",
	"-XX:-UsePerfData",
	"-XX:+ExitOnOutOfMemoryError",
	"-Djava.awt.headless=true",
}
