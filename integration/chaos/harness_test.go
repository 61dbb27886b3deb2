package chaos

import (
	"context"
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sharerelay/sharerelay/audit"
	"github.com/sharerelay/sharerelay/integration/harness"
	"github.com/sharerelay/sharerelay/integration/registrytest"
)

// opts shapes a scenario's pipeline and run.
type opts struct {
	Records    int    // source records; default recordsDefault()
	Relays     int    // relay processes, at most maxRelays (maxDirectRelays with Direct); default 3
	Workers    int    // workers per relay; default 2
	Partitions int32  // source partitions; default 3
	MaxRecords int    // batch.max_records; default 100 (CHAOS_MAX_RECORDS)
	Delivery   string // default exactly-once
	// LockMs is share.record.lock.duration.ms (default 6000) and
	// TxnTimeout output.transaction_timeout (default 4s, below the lock).
	LockMs     int
	TxnTimeout time.Duration
	// DeliveryLimit is share.delivery.count.limit; default 10 (the
	// broker's maximum), so faults do not use up a record's deliveries.
	DeliveryLimit int
	MaxAttempts   int // dead_letter.max_attempts; 0 = config.DefaultMaxAttempts(limit)
	NoRenew       bool
	// Transforms is a YAML flow list; default [].
	Transforms string
	// TransformConcurrency is batch.transform_concurrency; default the
	// relay's.
	TransformConcurrency int
	// Direct connects every relay to the direct listener instead of its
	// slot's proxies: no network faults, and up to maxDirectRelays
	// relays rather than one per proxy slot (the fleet, fleet_test.go).
	Direct bool
	// WantDLQ is the exact number of dead letters the transforms make.
	WantDLQ int
	// Env returns extra environment for incarnation n (1-based) of
	// relay slot i, e.g. failpoints.
	Env func(slot, n int) []string
	// Pad returns the padding (bytes) of order i (harness.Orders.Pad).
	Pad func(i int) int
	// OutputMaxBytes, when set, is the output topic's max.message.bytes.
	OutputMaxBytes int
	// OutputChurn: the scenario deletes the output topic under the
	// relays; the outputs that went with it are excused (churnedOutputs)
	// and the concurrent reader, which reads the topic, is not compared.
	OutputChurn bool
	// Audit runs the live auditor (relay audit) beside the relays from
	// startAll on; finish then requires its final counters to equal the
	// verifier's verdict (audit_test.go).
	Audit bool
	// Avro makes the pipeline the Avro one (avro_test.go): a schema
	// registry of the scenario's own, orders in Avro in the writer
	// schema versions of harness.AvroOrderSchemas, avroSteps (a filter,
	// a rename and a key step on decoded fields, then the simulated
	// work) instead of Transforms, which must be empty, and outputs in
	// Avro (harness.AvroJobSchema, registered by the relays). finish
	// then also reads every output back (checkAvroJobs).
	Avro bool
	// AvroVersion returns the index of order i's writer schema in
	// harness.AvroOrderSchemas (harness.AvroOrders.Version); default i
	// modulo the versions.
	AvroVersion func(i int) int
	// Filtered reports the orders the transforms drop (set by Avro: the
	// cancelled ones). The verifier then counts a record without output
	// as filtered, not lost, and finish requires exactly these to be.
	Filtered func(i int) bool
}

// recordsDefault is CHAOS_RECORDS or 100,000.
func recordsDefault() int {
	if v := os.Getenv("CHAOS_RECORDS"); v != "" {
		n, err := strconv.Atoi(v)
		if err == nil && n > 0 {
			return n
		}
	}
	return 100_000
}

// scenario is one chaos run: a pipeline, its relays, the faults and the
// verdict.
type scenario struct {
	t    *testing.T
	name string
	// env is where the relays write (outputs, dead letters, ledger)
	// and src where they read (the source topic and the share group):
	// the same env but in the cross-cluster scenarios (needCross).
	env, src *env
	o        opts
	seed     uint64
	rng      *rand.Rand
	rngMu    sync.Mutex
	dir      string // logs and configs; kept when the test fails
	began    time.Time

	// p is the pipeline: its topics, group, ledger and file.
	p *harness.Pipeline
	// registry is the scenario's schema registry and avro its orders'
	// writer schemas in it, with opts.Avro; else nil.
	registry *registrytest.Registry
	avro     *harness.AvroOrders

	// adm and admCl talk to env; srcAdm to src (adm itself when they
	// are one cluster).
	adm    *kadm.Client
	admCl  *kgo.Client
	srcAdm *kadm.Client
	relays []*relay
	reader *committedReader
	// auditor is the live auditor, when opts.Audit.
	auditor *auditor
	res     *result
	resMu   sync.Mutex

	stopping atomic.Bool
	scrapeWG sync.WaitGroup
	stopCh   chan struct{}
	// faultMu serialises fault injection with healing.
	faultMu sync.Mutex
	// nodeMu serialises the cluster's node faults with each other and
	// with healing: one node down at a time.
	nodeMu sync.Mutex
	// active network faults, to heal at the end.
	toxics map[string]activeToxic
	// paused relays, to SIGCONT at the end.
	paused map[*relay]bool
	// stallRestarts counts broker restarts made for a stalled share
	// partition (restartStalledBroker), at most maxStallRestarts a
	// scenario.
	stallRestarts int
	// toward counts the network faults toward the source (0) and the
	// sink (1) of a cross-cluster scenario, for side to even them out.
	toward [2]int
}

// maxStallRestarts bounds the broker restarts a scenario makes for stalled
// share partitions.
const maxStallRestarts = 2

// stallWatch notices a stalled share partition (doc.go, "Share partitions
// that stall"): on the local broker, lag that stays exactly the same for
// 60 s with no transaction open. Zero value: nothing seen yet.
type stallWatch struct {
	lag   int64
	since time.Time
}

// stalled takes one observation and reports whether the lag has not moved
// for 60 s with nothing open; it then starts over.
func (w *stallWatch) stalled(local bool, lag int64, open []string, err error) bool {
	switch {
	case !local || lag <= 0 || err != nil || len(open) > 0:
		w.lag = -1
	case lag != w.lag:
		w.lag, w.since = lag, time.Now()
	case time.Since(w.since) > 60*time.Second:
		w.lag = -1
		return true
	}
	return false
}

var (
	runSalt     = strconv.FormatInt(time.Now().UnixNano()%(1<<32), 36)
	scenarioSeq atomic.Int64
)

// newScenario seeds the randomness, creates the topics and writes the
// pipeline file. It does not seed records or start relays.
func newScenario(t *testing.T, n needs, o opts) *scenario {
	t.Helper()
	e, src := chaosEnv(t, n)
	if o.Records == 0 {
		o.Records = recordsDefault()
	}
	if o.Relays == 0 {
		o.Relays = 3
	}
	switch {
	case o.Direct && n&needProxy != 0:
		t.Fatal("chaos: relays on the direct listener cannot have network faults")
	case o.Direct && o.Relays > maxDirectRelays:
		t.Fatalf("at most %d relays on the direct listener", maxDirectRelays)
	case !o.Direct && o.Relays > maxRelays:
		t.Fatalf("at most %d relays", maxRelays)
	}
	if o.Workers == 0 {
		o.Workers = 2
	}
	if o.Partitions == 0 {
		o.Partitions = 3
	}
	if o.MaxRecords == 0 {
		o.MaxRecords = 100
		if v, err := strconv.Atoi(os.Getenv("CHAOS_MAX_RECORDS")); err == nil && v > 0 {
			o.MaxRecords = v
		}
	}
	if o.Delivery == "" {
		o.Delivery = "exactly-once"
	}
	if o.LockMs == 0 {
		o.LockMs = 6000
	}
	if o.TxnTimeout == 0 {
		o.TxnTimeout = 4 * time.Second
	}
	if o.DeliveryLimit == 0 {
		o.DeliveryLimit = 10
	}
	if o.Avro {
		if o.Transforms != "" {
			t.Fatal("chaos: the Avro pipeline has its own transforms (avroSteps); opts.Transforms must be empty")
		}
		o.Transforms, o.Filtered = avroSteps, avroCancelled
	}
	if o.Transforms == "" {
		o.Transforms = "[]"
	}
	s := &scenario{t: t, name: strings.TrimPrefix(t.Name(), "TestChaos"), env: e, src: src, o: o, began: time.Now(),
		stopCh: make(chan struct{}), toxics: make(map[string]activeToxic), paused: make(map[*relay]bool)}
	s.seed = chaosSeed()
	s.rng = rand.New(rand.NewPCG(s.seed, 0x5eed))
	t.Logf("chaos seed %d — replay the fault schedule with CHAOS_SEED=%d go test -count=1 -run '^%s$' ./integration/chaos/", s.seed, s.seed, t.Name())
	var err error
	if s.dir, err = os.MkdirTemp("", "sharerelay-chaos-"+strings.ToLower(s.name)+"-"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() || os.Getenv("CHAOS_KEEP") != "" {
			t.Logf("chaos seed %d; relay logs and configs kept in %s", s.seed, s.dir)
			return
		}
		os.RemoveAll(s.dir)
	})

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	popts := harness.PipelineOptions{
		Name:  fmt.Sprintf("chaos-%s-%s-%d", strings.ToLower(s.name), runSalt, scenarioSeq.Add(1)),
		Seeds: e.direct,
		// Each relay process gets its slot's proxy and its own metrics
		// port through the environment.
		Brokers:              []string{"${CHAOS_BROKERS}"},
		MetricsListen:        "${CHAOS_METRICS_ADDR}",
		Dir:                  s.dir,
		Delivery:             o.Delivery,
		Workers:              o.Workers,
		Partitions:           o.Partitions,
		MaxRecords:           o.MaxRecords,
		TransformConcurrency: o.TransformConcurrency,
		AcquireMode:          os.Getenv("CHAOS_ACQUIRE_MODE"),
		DrainTimeout:         os.Getenv("CHAOS_DRAIN_TIMEOUT"),
		Transforms:           o.Transforms,
		TxnTimeout:           o.TxnTimeout,
		RenewLocks:           !o.NoRenew,
		MaxAttempts:          o.MaxAttempts,
		GroupConfigs: map[string]string{
			"share.record.lock.duration.ms": strconv.Itoa(o.LockMs),
			"share.delivery.count.limit":    strconv.Itoa(o.DeliveryLimit),
		},
	}
	if o.Avro {
		s.registry = registrytest.Dedicated(t, registrytest.Options{})
		avroPipeline(&popts, s.registry.URL())
	}
	s.p, err = harness.NewPipeline(ctx, popts)
	if err == nil && o.Avro {
		s.avro, err = registerOrders(ctx, s.registry.URL(), s.p.Source, o.AvroVersion)
	}
	if err == nil && s.cross() {
		err = moveSource(ctx, s.p, e.direct, src.direct, o.Partitions)
	}
	if err != nil {
		t.Fatal(err)
	}
	if s.admCl, err = kgo.NewClient(kgo.SeedBrokers(e.direct...), kgo.RetryTimeout(30*time.Second)); err != nil {
		t.Fatal(err)
	}
	s.adm, s.srcAdm = kadm.NewClient(s.admCl), kadm.NewClient(s.admCl)
	if s.cross() {
		srcCl, err := kgo.NewClient(kgo.SeedBrokers(src.direct...), kgo.RetryTimeout(30*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(srcCl.Close)
		s.srcAdm = kadm.NewClient(srcCl)
	}
	if o.OutputMaxBytes > 0 {
		v := strconv.Itoa(o.OutputMaxBytes)
		resp, err := s.adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{{Name: "max.message.bytes", Value: &v}}, s.p.Output)
		if err == nil {
			_, err = resp.On(s.p.Output, nil)
		}
		if err != nil {
			t.Fatalf("setting max.message.bytes of %s: %v", s.p.Output, err)
		}
	}
	t.Cleanup(s.admCl.Close)
	s.res = &result{Scenario: s.name, Seed: s.seed, Records: o.Records, Relays: o.Relays, Workers: o.Workers,
		Partitions: int(o.Partitions), Delivery: o.Delivery, Toxics: map[string]int{},
		Nodes: max(1, len(e.nodes())), NodeFaults: map[string]int{}, NodeRoles: map[string]int{}, Clusters: 1, Registry: o.Avro}
	if s.cross() {
		s.res.Clusters, s.res.SourceToxics = 2, map[string]int{}
	}
	for i := 0; i < o.Relays; i++ {
		s.relays = append(s.relays, &relay{s: s, slot: i, name: fmt.Sprintf("r%d", i)})
	}
	t.Cleanup(s.teardown)
	return s
}

// chaosSeed is CHAOS_SEED, or a fresh one.
func chaosSeed() uint64 {
	if v := os.Getenv("CHAOS_SEED"); v != "" {
		if n, err := strconv.ParseUint(v, 10, 64); err == nil {
			return n
		}
	}
	return uint64(time.Now().UnixNano())
}

// Random helpers, safe for concurrent use.
func (s *scenario) intn(n int) int {
	s.rngMu.Lock()
	defer s.rngMu.Unlock()
	return s.rng.IntN(n)
}

// between returns a duration uniformly in [lo, hi].
func (s *scenario) between(lo, hi time.Duration) time.Duration {
	if hi <= lo {
		return lo
	}
	s.rngMu.Lock()
	defer s.rngMu.Unlock()
	return lo + time.Duration(s.rng.Int64N(int64(hi-lo)+1))
}

// orders are the scenario's source records: {"order_id": i, "run": <pipeline>},
// in JSON or, with opts.Avro, in Avro.
func (s *scenario) orders() harness.Orders {
	return harness.Orders{Topic: s.p.Source, Run: s.p.Name, Pad: s.o.Pad, Avro: s.avro}
}

// seedRange writes the orders i in [from, to] through the direct listener.
func (s *scenario) seedRange(from, to int) {
	s.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	err := s.orders().Seed(ctx, s.src.direct, from, to,
		kgo.MaxBufferedRecords(50_000), kgo.RecordDeliveryTimeout(2*time.Minute), kgo.ProducerBatchMaxBytes(int32(s.batchBytes())))
	if err != nil {
		s.t.Fatal(err)
	}
}

// stream seeds the records from..to evenly over d, in the background
// (so that the faults always hit a live stream), and returns a function
// that waits until they are all written.
func (s *scenario) stream(from, to int, d time.Duration) (wait func()) {
	done := make(chan struct{})
	go func() {
		defer close(done)
		cl, err := kgo.NewClient(kgo.SeedBrokers(s.src.direct...), kgo.ProducerLinger(5*time.Millisecond),
			kgo.RecordDeliveryTimeout(5*time.Minute), kgo.ProducerBatchMaxBytes(int32(s.batchBytes())))
		if err != nil {
			s.t.Error(err)
			return
		}
		defer cl.Close()
		const tick = 100 * time.Millisecond
		steps := max(1, int(d/tick))
		per := float64(to-from+1) / float64(steps)
		next := from
		start := time.Now()
		orders := s.orders()
		// A broker killed or stopped under the stream can fail records
		// the client may or may not have written (e.g. the connection
		// closed right after the request): they are looked up at the
		// end and written again only if missing, so every order is in
		// the source exactly once.
		var (
			mu     sync.Mutex
			failed = map[int]error{}
		)
		for step := 1; next <= to; step++ {
			end := min(to, from+int(per*float64(step))-1)
			if step >= steps {
				end = to
			}
			for ; next <= end; next++ {
				i := next
				cl.Produce(context.Background(), orders.Record(i), func(_ *kgo.Record, err error) {
					if err != nil {
						mu.Lock()
						failed[i] = err
						mu.Unlock()
					}
				})
			}
			time.Sleep(time.Until(start.Add(time.Duration(step) * tick)))
		}
		if err := cl.Flush(context.Background()); err != nil {
			s.t.Errorf("streaming records: %v", err)
			return
		}
		if len(failed) > 0 {
			if err := s.reseed(failed); err != nil {
				s.t.Errorf("streaming records to %s: %v", s.p.Source, err)
			}
		}
	}()
	return func() {
		select {
		case <-done:
		case <-time.After(10 * time.Minute):
			s.t.Fatal("the record stream did not finish within 10 minutes")
		}
	}
}

// reseed writes again, once each, the orders of failed (order → the
// error the stream's producer gave) that are not in the source topic.
func (s *scenario) reseed(failed map[int]error) error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	var sample error
	for _, err := range failed {
		sample = err
		break
	}
	missing := maps.Clone(failed)
	orders := s.orders()
	err := readTopic(ctx, s.src.direct, s.p.Source, func(r *kgo.Record) {
		if i, err := orders.OrderID(r.Value); err == nil {
			delete(missing, i)
		}
	})
	if err != nil {
		return fmt.Errorf("looking up %d orders the stream failed to write (%v): %w", len(failed), sample, err)
	}
	s.t.Logf("the stream's producer failed %d orders (e.g. %v); %d of them are not in the source: writing those again", len(failed), sample, len(missing))
	cl, err := kgo.NewClient(kgo.SeedBrokers(s.src.direct...), kgo.RecordDeliveryTimeout(2*time.Minute))
	if err != nil {
		return err
	}
	defer cl.Close()
	for _, i := range slices.Sorted(maps.Keys(missing)) {
		if err := cl.ProduceSync(ctx, orders.Record(i)).FirstErr(); err != nil {
			return fmt.Errorf("writing order %d again: %w", i, err)
		}
	}
	return nil
}

// seedAll writes all the scenario's records, 1..Records.
func (s *scenario) seedAll() {
	s.t.Helper()
	start := time.Now()
	s.seedRange(1, s.o.Records)
	s.t.Logf("seeded %d records in %s", s.o.Records, time.Since(start).Round(time.Millisecond))
}

// startAll starts every relay, the metrics scraper and the concurrent
// read_committed reader.
func (s *scenario) startAll() {
	s.t.Helper()
	s.startReader()
	if s.o.Audit {
		s.startAuditor()
	}
	for _, r := range s.relays {
		r.start()
	}
	s.scrapeWG.Add(1)
	go s.scrapeLoop()
	if s.env.cluster != nil {
		s.watchLeaders()
	}
}

// lag returns the share group's total lag, or -1 when unknown.
func (s *scenario) lag(ctx context.Context) int64 {
	l, err := audit.ShareGroupLag(ctx, s.srcAdm, s.p.Group, s.p.Source)
	if err != nil {
		return -1
	}
	return audit.TotalLag(l)
}

// progress returns the fraction of the records the group has finished.
func (s *scenario) progress() float64 {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return s.progressAt(s.lag(ctx))
}

// progressAt is the fraction of the records finished at lag (0 when the
// lag is unknown, -1).
func (s *scenario) progressAt(lag int64) float64 {
	if lag < 0 {
		return 0
	}
	return 1 - float64(lag)/float64(s.o.Records)
}

// waitProgress waits until progress reaches p or d passes; it returns
// false on timeout. A share partition that stalls meanwhile (lag unmoved
// for 60 s, no transaction open) gets the broker restart quiesce would
// give it: seen in BrokerKillDuringCommits between two kills, where the
// wait for the next kill's progress ran out first.
func (s *scenario) waitProgress(p float64, d time.Duration) bool {
	deadline := time.Now().Add(d)
	var watch stallWatch
	for time.Now().Before(deadline) {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		lag := s.lag(ctx)
		if s.progressAt(lag) >= p {
			cancel()
			return true
		}
		open, err := harness.OpenTransactions(ctx, s.adm, s.txnTopics()...)
		cancel()
		if watch.stalled(s.env.local, lag, open, err) && s.stallRestarts < maxStallRestarts {
			s.restartStalledBroker(lag)
			deadline = deadline.Add(time.Minute) // the stall's minute was the broker's
		}
		time.Sleep(500 * time.Millisecond)
	}
	return false
}

// sleep waits d unless the scenario is stopping.
func (s *scenario) sleep(d time.Duration) {
	select {
	case <-time.After(d):
	case <-s.stopCh:
	}
}

func (s *scenario) txnTopics() []string {
	if s.o.Delivery != "exactly-once" {
		return []string{s.p.Output, s.p.DeadLetter} // no ledger
	}
	return []string{s.p.Output, s.p.DeadLetter, s.p.Ledger}
}

// quiesce heals every fault, waits until the group has no lag and no
// transaction is open on outputs, dead letters and ledger, stops the
// relays with SIGTERM, and checks again.
func (s *scenario) quiesce(d time.Duration) {
	s.t.Helper()
	s.healAll()
	deadline := time.Now().Add(d)
	stable := 0
	var lastLag int64
	var lastOpen []string
	var lastErr error
	var openSince time.Time
	var watch stallWatch
	for stable < 3 {
		if time.Now().After(deadline) {
			s.dumpState()
			if len(lastOpen) > 0 {
				dctx, dcancel := context.WithTimeout(context.Background(), time.Minute)
				s.t.Logf("hanging transactions:\n%s", diagnoseOpenTxns(dctx, s.adm, s.env.direct, s.p.Name, s.p.Ledger, s.txnTopics()...))
				dcancel()
			}
			s.t.Fatalf("not quiescent after %s: lag %d, open transactions %v (last error %v)", d, lastLag, lastOpen, lastErr)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		lastLag = s.lag(ctx)
		lastOpen, lastErr = harness.OpenTransactions(ctx, s.adm, s.txnTopics()...)
		cancel()
		if lastLag == 0 && lastErr == nil && len(lastOpen) == 0 {
			stable++
		} else {
			stable = 0
		}
		// Transactions stay open: markers Kafka dropped after a broker
		// crash (see doc.go). Lag may stay too: a worker whose own
		// producer id hangs holds its records until it is completed.
		switch {
		case len(lastOpen) == 0:
			openSince = time.Time{}
		case openSince.IsZero():
			openSince = time.Now()
		case time.Since(openSince) > s.o.TxnTimeout+15*time.Second:
			s.repairHanging(false)
			openSince = time.Time{}
		}
		// Lag that does not move with no transaction open: a share
		// partition the broker stopped delivering from (see doc.go,
		// "Share partitions that stall"). A restart reloads it.
		if watch.stalled(s.env.local, lastLag, lastOpen, lastErr) && s.stallRestarts < maxStallRestarts {
			s.restartStalledBroker(lastLag)
		}
		time.Sleep(time.Second)
	}
	s.stopRelays()
	start := time.Now()
	repaired := false
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		open, err := harness.OpenTransactions(ctx, s.adm, s.txnTopics()...)
		cancel()
		if err == nil && len(open) == 0 {
			break
		}
		if time.Since(start) > 15*time.Second && !repaired {
			s.repairHanging(true)
			repaired = true
		}
		if time.Since(start) > 60*time.Second {
			s.t.Fatalf("transactions still open after the relays stopped: %v %v", open, err)
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// restartStalledBroker logs the share group's offsets (the evidence of a
// stalled share partition: its start offset does not move while records
// past it wait) and restarts the broker cleanly, which reloads the share
// partitions (on the cluster, the leader of a partition with lag, which
// moves it); it is counted in the report.
func (s *scenario) restartStalledBroker(lag int64) {
	s.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	o, err := s.srcAdm.DescribeShareGroupOffsets(ctx, s.p.Group)
	cancel()
	var parts []string
	for _, g := range o {
		for t, ps := range g.Offsets {
			for p, off := range ps {
				parts = append(parts, fmt.Sprintf("%s[%d] start %d lag %d", t, p, off.StartOffset, off.Lag))
			}
		}
	}
	sort.Strings(parts)
	s.t.Logf("share group stalled: lag %d unchanged for 60s, no transaction open (%v, %v); restarting the broker to reload its share partitions", lag, parts, err)
	s.count(func(r *result) { r.ShareStalls++ })
	s.stallRestarts++
	if s.env.cluster != nil {
		err = s.restartStalledLeader(o)
	} else {
		err = s.bounce(s.src, false, 0) // the share partitions live on the source
	}
	if err != nil {
		s.t.Fatalf("restarting the broker after a share-partition stall: %v", err)
	}
}

// repairHanging completes the transactions whose markers Kafka dropped
// (findHanging), with the decision the coordinator logged, and counts
// them in the report. It fails the test when a
// hanging transaction cannot be judged.
func (s *scenario) repairHanging(final bool) {
	s.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	hs, err := harness.FindHanging(ctx, s.adm, s.env.direct, s.p.Name, final, s.txnTopics()...)
	if err == nil && len(hs) > 0 {
		for _, h := range hs {
			s.t.Logf("hanging transaction (markers dropped by the broker): %v; completing it", h)
		}
		err = harness.CompleteHanging(ctx, s.adm, hs)
		s.count(func(r *result) { r.HangingTxns += len(hs) })
	}
	if err != nil {
		s.t.Logf("hanging transactions:\n%s", diagnoseOpenTxns(ctx, s.adm, s.env.direct, s.p.Name, s.p.Ledger, s.txnTopics()...))
		s.t.Fatalf("completing hanging transactions: %v", err)
	}
}

// stopRelays stops the fault loops, then every relay with SIGTERM (SIGKILL
// after 60 s), and the scraper.
func (s *scenario) stopRelays() {
	if s.stopping.Swap(true) {
		return
	}
	close(s.stopCh)
	var wg sync.WaitGroup
	for _, r := range s.relays {
		wg.Add(1)
		go func() { defer wg.Done(); r.stopForGood() }()
	}
	wg.Wait()
	s.scrapeWG.Wait()
	s.scrapeOnce() // nothing left running; keeps the maxima
}

// teardown kills whatever is left (a failed test).
func (s *scenario) teardown() {
	if !s.stopping.Swap(true) {
		close(s.stopCh)
	}
	for _, r := range s.relays {
		r.killForGood()
	}
	s.scrapeWG.Wait()
	if s.reader != nil {
		s.reader.stop()
	}
	if s.auditor != nil {
		s.auditor.kill()
	}
	s.healAllQuiet()
	if c := s.env.cluster; c != nil {
		// A failed scenario may leave a node down or frozen; the next
		// one needs the whole cluster.
		s.nodeMu.Lock()
		ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
		if err := c.Heal(ctx); err != nil {
			s.t.Errorf("healing the cluster: %v", err)
		}
		cancel()
		s.nodeMu.Unlock()
	}
	if s.t.Failed() {
		for _, r := range s.relays {
			r.logTail(s.t, 30000)
		}
	}
}

// dumpState logs what the harness knows, for a stuck run.
func (s *scenario) dumpState() {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if l, err := audit.ShareGroupLag(ctx, s.srcAdm, s.p.Group, s.p.Source); err == nil {
		s.t.Logf("share group lag per partition: %v", l)
	} else {
		s.t.Logf("share group lag: %v", err)
	}
	for _, r := range s.relays {
		s.t.Logf("relay %s: %s", r.name, r.describe())
	}
	// Where each relay's workers wait: what /readyz says, then the
	// goroutines of package relay (SIGQUIT; the relay is restarted).
	for _, r := range s.relays {
		inc := r.current()
		if inc == nil {
			continue
		}
		s.t.Logf("---- stall diagnosis: relay %s#%d /readyz: %s", r.name, inc.n, inc.readyz())
		inc.setCause("stack dump")
		st, err := inc.Stacks("sharerelay/relay.", 10*time.Second)
		if err != nil {
			st = err.Error()
		}
		s.t.Logf("---- stall diagnosis: relay %s#%d goroutines in package relay ----\n%s---- end of stall diagnosis ----", r.name, inc.n, st)
	}
	for _, e := range s.envs() {
		for _, b := range e.nodes() {
			s.t.Logf("%s node %s running: %v, log %s", e.role, b.Addr(), b.Running(), b.LogPath())
		}
	}
	if c := s.env.cluster; c != nil {
		short, err := c.UnderReplicated(ctx)
		s.t.Logf("under-replicated partitions: %v (%v)", short, err)
	}
}

// verify runs the pipeline verifier (audit.Verify, the checker behind
// `relay verify -c`) on the direct listener and judges it; across two
// clusters, `relay verify` itself (relayVerify).
func (s *scenario) verify() *audit.Report {
	s.t.Helper()
	if s.cross() {
		rep := s.relayVerify()
		s.res.fromReport(rep)
		return rep
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	ledger := s.p.Ledger
	if s.o.Delivery != "exactly-once" {
		ledger = ""
	}
	rep, err := audit.Verify(ctx, audit.VerifyConfig{
		ClientOpts:      []kgo.Opt{kgo.SeedBrokers(s.env.direct...)},
		Sources:         []string{s.p.Source},
		SourceCommitted: true,
		Outputs:         []string{s.p.Output},
		DeadLetter:      s.p.DeadLetter,
		Group:           s.p.Group,
		AtMostOnce:      s.o.Filtered != nil,
		Ledger:          ledger,
	})
	if err != nil {
		s.t.Fatalf("verify: %v", err)
	}
	s.res.fromReport(rep)
	return rep
}

// finish quiesces, verifies, checks the concurrent reader, reports, and
// fails the test on any loss, duplicate, aborted read or wrong dead-letter
// count (exactly-once). It returns the report for further checks.
func (s *scenario) finish(extra ...func(*audit.Report) []string) *audit.Report {
	s.t.Helper()
	s.quiesce(quiesceTimeout())
	rep := s.verify()
	var rd readerResult
	if s.o.OutputChurn {
		s.reader.stop() // it read topics that were deleted under it
	} else {
		rd = s.reader.finish(s)
	}
	s.res.ReaderRecords, s.res.ReaderDuplicates = rd.records, rd.duplicates
	s.collectMetrics()
	s.res.Elapsed = time.Since(s.began).Round(time.Second).String()
	s.res.elapsed = time.Since(s.began)

	var problems []string
	switch {
	case s.o.OutputChurn:
		// Outputs were deleted with their topic: the lost records are
		// judged by churnedOutputs (an extra check); everything else
		// must be exact.
		if rep.Total.Duplicated+rep.Total.Both+rep.Total.Unexpected+int(rep.Total.Lag)+rep.Unlabelled > 0 {
			problems = append(problems, fmt.Sprintf("verifier: duplicated %d, both %d, unexpected %d, lag %d, unlabelled %d",
				rep.Total.Duplicated, rep.Total.Both, rep.Total.Unexpected, rep.Total.Lag, rep.Unlabelled))
		}
	case s.o.Delivery == "exactly-once":
		if !rep.Exact {
			problems = append(problems, fmt.Sprintf("verifier: NOT EXACT (lost %d, duplicated %d, both %d, unexpected %d, lag %d, unlabelled %d; lost e.g. %v, duplicated e.g. %v)",
				rep.Total.Lost, rep.Total.Duplicated, rep.Total.Both, rep.Total.Unexpected, rep.Total.Lag, rep.Unlabelled,
				samples(rep, true), samples(rep, false)))
		}
		if rd.duplicates > 0 {
			problems = append(problems, fmt.Sprintf("aborted read: the read_committed reader saw %d source records more than once during the run (e.g. %v)", rd.duplicates, rd.dupSample))
		}
		if want := rep.Total.Output + rep.Total.DeadLettered; rd.distinct != want || rd.records != rep.OutputRecords {
			problems = append(problems, fmt.Sprintf("aborted read: the read_committed reader saw %d records of %d source records, the final committed set has %d records of %d", rd.records, rd.distinct, rep.OutputRecords, want))
		}
	case rep.Total.Lost > 0 || rep.Total.Unexpected > 0:
		// At-least-once may duplicate, never lose.
		problems = append(problems, fmt.Sprintf("verifier: lost %d, unexpected %d (lost e.g. %v)", rep.Total.Lost, rep.Total.Unexpected, samples(rep, true)))
	}
	if m := s.res.InvariantBreaks; m > 0 {
		problems = append(problems, fmt.Sprintf("the relays counted %d invariant violations", m))
	}
	if s.auditor != nil {
		problems = append(problems, s.auditor.judge(rep)...)
	}
	for _, f := range extra {
		problems = append(problems, f(rep)...)
	}
	if rep.Total.Sources != s.o.Records {
		problems = append(problems, fmt.Sprintf("%d source records, want %d", rep.Total.Sources, s.o.Records))
	}
	if rep.Total.DeadLettered != s.o.WantDLQ {
		problems = append(problems, fmt.Sprintf("%d dead letters, want %d", rep.Total.DeadLettered, s.o.WantDLQ))
	}
	if f := s.o.Filtered; f != nil {
		want := 0
		for i := 1; i <= s.o.Records; i++ {
			if f(i) {
				want++
			}
		}
		if rep.Total.Filtered != want {
			problems = append(problems, fmt.Sprintf("%d source records without output (filtered), want %d", rep.Total.Filtered, want))
		}
	}
	if s.o.Avro {
		problems = append(problems, s.checkAvroJobs()...)
	}
	if rep.Total.Both != 0 {
		problems = append(problems, fmt.Sprintf("%d source records both in the output and the dead letters", rep.Total.Both))
	}
	if len(problems) > 0 {
		s.res.Verdict = "FAIL: " + strings.Join(problems, "; ")
	}
	s.t.Log(s.res.line())
	record(s.res)
	if len(problems) > 0 {
		s.t.Fatalf("chaos seed %d: %s", s.seed, strings.Join(problems, "; "))
	}
	return rep
}

func samples(rep *audit.Report, lost bool) map[string][]int64 {
	out := map[string][]int64{}
	for _, p := range rep.Partitions {
		sm := p.DuplicatedSample
		if lost {
			sm = p.LostSample
		}
		if len(sm) > 0 {
			out[fmt.Sprintf("%s[%d]", p.Topic, p.Partition)] = sm
		}
	}
	return out
}

// quiesceTimeout bounds the wait for quiescence after the faults.
func quiesceTimeout() time.Duration {
	d := 5 * time.Minute
	if n := recordsDefault(); n > 200_000 {
		d += time.Duration(n/200_000) * 2 * time.Minute
	}
	return d
}

// batchBytes is the seeding producer's batch size: CHAOS_BATCH_BYTES, or
// 16 KiB, the Java producer's default batch.size (franz-go's default is
// 1 MiB; see doc.go for what such batches do to the relay).
func batchBytes() int {
	if v, err := strconv.Atoi(os.Getenv("CHAOS_BATCH_BYTES")); err == nil && v > 0 {
		return v
	}
	return 16 << 10
}

// batchBytes is batchBytes(), raised to 64 KiB for a scenario whose
// orders carry padding (a record larger than a batch cannot be produced).
func (s *scenario) batchBytes() int {
	if s.o.Pad != nil {
		return max(batchBytes(), 64<<10)
	}
	return batchBytes()
}
