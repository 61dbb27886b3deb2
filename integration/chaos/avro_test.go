package chaos

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sharerelay/sharerelay/audit"
	"github.com/sharerelay/sharerelay/integration/harness"
)

// avroSteps are the Avro pipeline's transforms (opts.Avro): a filter, a
// rename and a key step on decoded fields, then the simulated work of
// every scenario (work). The cancelled orders are dropped.
const avroSteps = `
  - {type: filter, name: drop-cancelled, when: {field: status, equals: CANCELLED}}
  - {type: rename, name: order-id, field: order_id, to: id}
  - {type: key, name: key-by-id, field: id}
  - {type: delay, duration: 1ms}`

// avroCancelled reports whether avroSteps drop order i.
func avroCancelled(i int) bool { return harness.AvroOrderStatus(i) == harness.StatusCancelled }

// avroPipeline makes o the Avro pipeline's: orders in Avro under the
// registry at url, outputs in Avro with harness.AvroJobSchema, a file
// beside the pipeline that the relays register (auto_register) under the
// output topic's subject.
func avroPipeline(o *harness.PipelineOptions, url string) {
	o.Registry = url
	o.SourceValueFormat, o.OutputValueFormat = "avro", "avro"
	o.OutputValueSchema = "{file: job.avsc, auto_register: true}"
	o.Files = map[string]string{"job.avsc": harness.AvroJobSchema}
}

// registerOrders registers the orders' writer schemas under the source
// topic's subject and returns the orders, each in the version version
// chooses.
func registerOrders(ctx context.Context, url, source string, version func(i int) int) (*harness.AvroOrders, error) {
	ids, err := harness.RegisterAvroOrders(ctx, url, source+"-value")
	if err != nil {
		return nil, err
	}
	return &harness.AvroOrders{IDs: ids, Version: version}, nil
}

// checkAvroJobs reads every output back with the job schema (the id the
// relays registered it under): each order once but the cancelled ones,
// keyed by its id, its fields those its writer schema version gave it
// (the defaults for those it lacked) with order_id renamed id.
func (s *scenario) checkAvroJobs() []string {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	id, err := harness.LookupAvroJob(ctx, s.registry.URL(), s.p.Output+"-value")
	if err != nil {
		return []string{err.Error()}
	}
	seen := map[int]int{}
	var wrong []string
	err = readTopic(ctx, s.env.direct, s.p.Output, func(r *kgo.Record) {
		j, err := harness.DecodeAvroJob(r.Value, id)
		if err != nil {
			wrong = append(wrong, fmt.Sprintf("output %s[%d]@%d: %v", r.Topic, r.Partition, r.Offset, err))
			return
		}
		i := int(j.ID)
		seen[i]++
		o := s.avro.Order(i, s.p.Name)
		want := harness.AvroJob{ID: o.OrderID, Run: o.Run, Status: o.Status, Note: o.Note, Priority: o.Priority, Region: o.Region}
		if j != want || string(r.Key) != strconv.Itoa(i) {
			wrong = append(wrong, fmt.Sprintf("order %d: job %+v key %q, want %+v key %d", i, j, r.Key, want, i))
		}
	})
	if err != nil {
		return []string{err.Error()}
	}
	var problems []string
	if len(wrong) > 0 {
		problems = append(problems, fmt.Sprintf("%d outputs not the jobs of their orders, e.g. %v", len(wrong), wrong[:min(3, len(wrong))]))
	}
	missing, twice, cancelled, jobs := 0, 0, 0, 0
	for i := 1; i <= s.o.Records; i++ {
		c := seen[i]
		jobs += c
		switch {
		case avroCancelled(i) && c > 0:
			cancelled++
		case !avroCancelled(i) && c == 0:
			missing++
		case c > 1:
			twice++
		}
		delete(seen, i)
	}
	if missing+twice+cancelled+len(seen) > 0 {
		problems = append(problems, fmt.Sprintf("jobs read back in Avro: %d orders without a job, %d with more than one, %d cancelled orders with one, %d jobs of orders never seeded",
			missing, twice, cancelled, len(seen)))
	}
	s.t.Logf("outputs read back in Avro (job schema id %d, writer schema ids %v): %d jobs, one per order that was not cancelled, each keyed by its id with the fields its order's version gave it", id, s.avro.IDs, jobs)
	return problems
}

// killRegistry kills the scenario's schema registry (kill -9).
func (s *scenario) killRegistry() {
	s.t.Helper()
	if err := s.registry.Kill(); err != nil {
		s.t.Fatal(err)
	}
	s.count(func(r *result) { r.RegistryKills++ })
	s.t.Logf("schema registry %s: kill -9", s.registry.Addr())
}

// startRegistry starts the scenario's schema registry again, on its port
// and its database: the same schemas under the same ids.
func (s *scenario) startRegistry() {
	s.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	start := time.Now()
	if err := s.registry.Start(ctx); err != nil {
		s.t.Fatalf("restarting the schema registry: %v", err)
	}
	s.t.Logf("schema registry %s: started again in %s", s.registry.Addr(), time.Since(start).Round(time.Millisecond))
}

// versionPlan gives ranges of orders their writer schema versions as a
// scenario decides them (opts.AvroVersion): each range is set before its
// orders are seeded, and an order keeps its version when it is written
// again.
type versionPlan struct {
	mu     sync.Mutex
	ranges []versionRange
}

type versionRange struct {
	from, to int
	version  func(i int) int
}

// set gives the orders from..to the versions of v.
func (p *versionPlan) set(from, to int, v func(i int) int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.ranges = append(p.ranges, versionRange{from, to, v})
}

// version is order i's version (the first, for an order of no range).
func (p *versionPlan) version(i int) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, r := range p.ranges {
		if i >= r.from && i <= r.to {
			return r.version(i)
		}
	}
	return 0
}

// oneOf returns the versions chooser that cycles through the first n.
func oneOf(n int) func(int) int { return func(i int) int { return i % n } }

// just returns the chooser of version v alone.
func just(v int) func(int) int { return func(int) int { return v } }

// The name of the not-ready reason of a worker that holds records for
// the registry (format's ErrUnavailable), and the relay counters the
// outage is judged by.
const (
	registryReason     = "schema registry unavailable"
	metricReleases     = "sharerelay_acks_total/release"
	metricHeld         = "sharerelay_records_held_total"
	metricRedeliveries = "sharerelay_redeliveries_total"
)

// outage is what the harness saw of one registry outage: each relay
// process's counters when it began, the processes it stopped during it,
// and the relays that said they held records for the registry.
type outage struct {
	began  time.Time
	before map[*incarnation]map[string]float64
	termed map[*incarnation]bool
	ready  map[int]string // relay slot → its /readyz answer naming the registry
}

// counters returns every relay process's counters, scraped now.
func (s *scenario) counters() map[*incarnation]map[string]float64 {
	s.scrapeOnce()
	out := map[*incarnation]map[string]float64{}
	for _, r := range s.relays {
		r.mu.Lock()
		incs := append([]*incarnation{}, r.incs...)
		r.mu.Unlock()
		for _, inc := range incs {
			inc.mu.Lock()
			out[inc] = map[string]float64{metricReleases: inc.maxima[metricReleases], metricHeld: inc.maxima[metricHeld], metricRedeliveries: inc.maxima[metricRedeliveries]}
			inc.mu.Unlock()
		}
	}
	return out
}

// registryDown begins an outage: the relays' counters, then kill -9.
func (s *scenario) registryDown() *outage {
	o := &outage{before: s.counters(), termed: map[*incarnation]bool{}, ready: map[int]string{}, began: time.Now()}
	s.killRegistry()
	return o
}

// bounceRelay stops relay slot i during outage o and has it restarted
// after 0–2 s, with an empty cache of schemas: everything it reads or
// writes now needs the registry. With term it waits (up to 30 s) until the
// relay holds records for the registry and stops it with SIGTERM, which it
// must obey within 45 s, exit status 0, releasing what it holds; else
// SIGKILL.
func (s *scenario) bounceRelay(o *outage, i int, term bool) {
	restart := s.between(0, 2*time.Second)
	if !term {
		s.killRelay(i, restart)
		return
	}
	r := s.relays[i]
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(250 * time.Millisecond) {
		if s.holding(o, r) {
			break
		}
	}
	if inc := r.current(); inc != nil {
		o.termed[inc] = true
	}
	s.termRelay(i, restart)
}

// holding reports whether relay r's running process says, on /readyz,
// that it holds records for the registry, and notes it in o.
func (s *scenario) holding(o *outage, r *relay) bool {
	inc := r.current()
	if inc == nil {
		return false
	}
	a := inc.readyz()
	if !strings.Contains(a, registryReason) {
		return false
	}
	if _, ok := o.ready[r.slot]; !ok {
		o.ready[r.slot] = a
		s.t.Logf("relay %s#%d holds records %s into the outage: /readyz %s", r.name, inc.n, time.Since(o.began).Round(time.Millisecond), a)
	}
	return true
}

// awaitHolding waits until every relay has said, on /readyz, that it holds
// records for the registry, and until the outage has lasted at least
// down; it gives up (a problem) after down + 2 minutes.
func (s *scenario) awaitHolding(o *outage, down time.Duration) []string {
	deadline := o.began.Add(down + 2*time.Minute)
	for {
		for _, r := range s.relays {
			if _, ok := o.ready[r.slot]; !ok {
				s.holding(o, r)
			}
		}
		if len(o.ready) == len(s.relays) && time.Since(o.began) >= down {
			return nil
		}
		if time.Now().After(deadline) {
			var not []string
			for _, r := range s.relays {
				if _, ok := o.ready[r.slot]; !ok {
					a := "not running"
					if inc := r.current(); inc != nil {
						a = inc.readyz()
					}
					not = append(not, fmt.Sprintf("%s (/readyz %s)", r.name, a))
				}
			}
			s.dumpState()
			return []string{fmt.Sprintf("registry outage: after %s, relays %v never said %q", time.Since(o.began).Round(time.Second), not, registryReason)}
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// registryUp ends outage o: it judges the relays' counters over it, and
// starts the registry again. Over the outage the relays must have held
// records (records_held_total) and released none but in the processes
// the harness stopped with SIGTERM (a stop releases what it holds); a
// SIGKILLed process releases nothing itself, the broker redelivers its
// records when their locks expire.
func (s *scenario) registryUp(o *outage) []string {
	after := s.counters()
	var problems []string
	var held, termReleased, redelivered float64
	leaked := false // a relay left running released records
	for inc, c := range after {
		b := o.before[inc] // nil for a process started during the outage: all zero
		held += c[metricHeld] - b[metricHeld]
		redelivered += c[metricRedeliveries] - b[metricRedeliveries]
		rel := c[metricReleases] - b[metricReleases]
		switch {
		case rel <= 0:
		case o.termed[inc]:
			termReleased += rel
		default:
			leaked = true
			problems = append(problems, fmt.Sprintf("registry outage: relay process #%d (%s) released %.0f records while the registry was down, without being stopped: it must hold them", inc.n, inc.LogPath(), rel))
		}
	}
	if held <= 0 {
		problems = append(problems, "registry outage: no relay counted a held record (sharerelay_records_held_total)")
	}
	var slots []string
	for slot, a := range o.ready {
		slots = append(slots, fmt.Sprintf("r%d: %.120s", slot, a))
	}
	sort.Strings(slots)
	running := "no release by a relay left running"
	if leaked {
		running = "releases by relays left running (failures below)"
	}
	s.t.Logf("registry outage of %s: %.0f records held, %.0f redeliveries, %s; %.0f released by the %d relays stopped with SIGTERM, as scraped (what a stop releases at its exit comes after its last scrape); not ready for the registry: %v",
		time.Since(o.began).Round(time.Millisecond), held, redelivered, running, termReleased, len(o.termed), slots)
	s.startRegistry()
	return problems
}

// outageSize sizes a registry-outage scenario.
type outageSize struct {
	records int
	outages int           // registry kills, one after the other
	down    time.Duration // how long each lasts at least
	flow    time.Duration // the stream before each outage, and after the last
	bounces int           // relays stopped and restarted during each (SIGKILL, SIGTERM, in turn)
}

// The CI size of the registry outage: about a minute of wall time, the
// registry's start and restart included.
var outageCI = outageSize{records: 20_000, outages: 1, down: 25 * time.Second, flow: 8 * time.Second, bounces: 2}

// 18. TestChaosRegistryOutageCI is the registry outage at a size for every
// CI run: 20,000 records, one outage of at least 25 s with one relay
// SIGKILLed and one SIGTERMed in it.
func TestChaosRegistryOutageCI(t *testing.T) { registryOutage(t, outageCI) }

// TestChaosRegistryOutage is scenario 18 at CHAOS_RECORDS records (at
// least 100,000): two outages of at least 90 s, four relay stops in each.
// Only with CHAOS_LONG=1 (make chaos): CI runs TestChaosRegistryOutageCI.
func TestChaosRegistryOutage(t *testing.T) {
	longOnly(t, "TestChaosRegistryOutageCI")
	registryOutage(t, outageSize{records: max(100_000, recordsDefault()), outages: 2, down: 90 * time.Second, flow: 30 * time.Second, bounces: 4})
}

// registryOutage runs scenario 18: the Avro pipeline while its schema
// registry is killed -9 and started again (on the same database: the same
// ids), z.outages times. A tenth of the orders is seeded in the first
// writer schema version and the relays started; before each outage a
// tenth more streams in, in the versions the relays have seen, and the
// registry is killed halfway through the stream. During the outage two
// twentieths are seeded in versions no relay has read yet, one before and
// one after the first relay stop; z.bounces relays are stopped and
// restarted (SIGKILL and SIGTERM in turn, a SIGTERM once the relay holds
// records, each relay restarted with no schema in its cache); the outage
// lasts until every relay has said on /readyz that it holds records for
// the registry, and at least z.down.
// The rest of the orders stream in, in every version, after the last.
//
// The records wait: no dead letter at all (nothing is wrong with them),
// records held (records_held_total), no release during an outage but by a
// relay stopped with SIGTERM, none released on its last delivery, and the
// verifier exact; every job read back in Avro (checkAvroJobs).
func registryOutage(t *testing.T, z outageSize) {
	plan := &versionPlan{}
	s := newScenario(t, 0, opts{Records: z.records, Avro: true, AvroVersion: plan.version})
	n := s.o.Records
	chunk := n / 20
	seen := 1 // versions the relays have read: the first ones
	plan.set(1, n/10, just(0))
	s.seedRange(1, n/10)
	s.startAll()
	next := n/10 + 1
	var problems []string
	for k := range z.outages {
		flowTo := next + n/10 - 1
		plan.set(next, flowTo, oneOf(seen))
		wait := s.stream(next, flowTo, z.flow)
		next = flowTo + 1
		s.sleep(z.flow / 2)
		o := s.registryDown()
		// The orders of the outage are in versions no relay has read:
		// the outage's share of the versions not used yet.
		left := len(harness.AvroOrderSchemas) - seen
		a := seen
		b := min(seen+max(1, left/(z.outages-k))-1, len(harness.AvroOrderSchemas)-1)
		victims := s.perm()
		for j := range max(1, z.bounces) {
			v := a
			if j > 0 {
				v = b
			}
			if j < 2 {
				plan.set(next, next+chunk-1, just(v))
				s.seedRange(next, next+chunk-1)
				s.t.Logf("registry down: orders %d..%d seeded in writer schema version %d (id %d), which no relay has read", next, next+chunk-1, v+1, s.avro.IDs[v])
				next += chunk
			}
			if j < z.bounces {
				s.bounceRelay(o, victims[j%len(victims)], j%2 == 1)
				s.sleep(s.between(2*time.Second, 4*time.Second))
			}
		}
		seen = b + 1
		wait()
		problems = append(problems, s.awaitHolding(o, z.down)...)
		problems = append(problems, s.registryUp(o)...)
	}
	plan.set(next, n, oneOf(len(harness.AvroOrderSchemas)))
	s.stream(next, n, z.flow)()
	s.finish(func(*audit.Report) []string {
		if d := s.res.DeadLettersMetric; d > 0 {
			problems = append(problems, fmt.Sprintf("the relays counted %d dead letters: a registry outage is not the records' fault", d))
		}
		if m := s.metricTotals()["sharerelay_released_on_last_delivery_total"]; m > 0 {
			problems = append(problems, fmt.Sprintf("the relays released %.0f records on their last delivery: the broker archived them", m))
		}
		return problems
	})
}

// The CI size of the Avro nemesis: about a minute of wall time, the
// registry's start included.
const (
	avroNemesisCIRecords = 24_000
	avroNemesisCIFaults  = 40 * time.Second
)

// 19. TestChaosNemesisAvroCI is scenario 10 on the Avro pipeline (a
// registry of its own, orders in four writer schema versions, a filter,
// a rename and a key step on their decoded fields, jobs in Avro) at a
// size for every CI run: 24,000 records and 40 s of faults.
func TestChaosNemesisAvroCI(t *testing.T) {
	nemesis(t, needProxy|needBroker, avroNemesisCIFaults, opts{Records: avroNemesisCIRecords, Avro: true})
}

// TestChaosNemesisAvro is scenario 19 at CHAOS_RECORDS records for
// CHAOS_NEMESIS, broker bounces included. Only with CHAOS_LONG=1 (make
// chaos): CI runs TestChaosNemesisAvroCI.
func TestChaosNemesisAvro(t *testing.T) {
	longOnly(t, "TestChaosNemesisAvroCI")
	nemesis(t, needProxy|needBroker, nemesisDuration(), opts{Avro: true})
}
