package main

import (
	"bufio"
	"context"
	"encoding/csv"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sharerelay/sharerelay/audit"
	"github.com/sharerelay/sharerelay/integration/harness"
	"github.com/sharerelay/sharerelay/integration/kafkatest"
)

// The elastic fleet (-fleet, make bench-fleet): relay processes scaled
// out and in on a schedule under a steady backlog, as a Kubernetes
// StatefulSet of relays would be, with the committed output rate of each
// plateau against the fleet size. Every instance has its own name
// (relay-0, relay-1, ...), so its own transactional ids; scale-in sends
// SIGTERM to the highest ordinals at once (the chart's
// podManagementPolicy: Parallel) and does not wait for them to exit: they
// drain while the next plateau runs, as pods do.
//
// The pipeline is bound by its transform, not by the broker: a delay step
// (-fleet-delay a record), few workers (-fleet-workers) and few records
// transformed at once (-fleet-concurrency), so that one instance's rate
// is the transform's and N instances could do N times it until the cores
// run out. batch.consumers and batch.max_records are left to the relay:
// how it sizes its polls to the record locks it shares with the other
// instances is what the fleet measures.

// fleetOptions are the flags of -fleet.
type fleetOptions struct {
	schedule    []int
	plateau     time.Duration
	window      time.Duration
	delay       time.Duration
	workers     int
	concurrency int
	csvPath     string
	drain       time.Duration
}

// defineFleetFlags defines the flags of -fleet on fs; the schedule, a
// list, is returned to be parsed after fs.Parse.
func (o *options) defineFleetFlags(fs *flag.FlagSet) *string {
	fs.BoolVar(&o.fleet, "fleet", false, "measure the elastic fleet instead of the tables: relay processes (-relay-bin) scaled along -fleet-schedule under a steady backlog, the committed output rate per plateau (make bench-fleet)")
	fs.DurationVar(&o.fleetOpts.plateau, "fleet-plateau", 60*time.Second, "how long each fleet size of -fleet-schedule runs")
	fs.DurationVar(&o.fleetOpts.window, "fleet-window", 5*time.Second, "the window of the fleet's output rate: a plateau's rate is the median of these windows over its second half, and it is reached at the end of the first window after the change within 10% of it")
	fs.DurationVar(&o.fleetOpts.delay, "fleet-delay", 5*time.Millisecond, "the fleet pipeline's transform time a record (a delay step)")
	fs.IntVar(&o.fleetOpts.workers, "fleet-workers", 1, "workers of each relay instance of the fleet")
	fs.IntVar(&o.fleetOpts.concurrency, "fleet-concurrency", 4, "batch.transform_concurrency of the fleet pipeline: records of a batch transformed at once")
	fs.StringVar(&o.fleetOpts.csvPath, "fleet-csv", "", "write the fleet's samples (one a second) to this CSV file, which integration/cmd/fleetchart draws")
	fs.DurationVar(&o.fleetOpts.drain, "fleet-drain", 5*time.Minute, "the longest wait, after the schedule, for the last fleet to finish the backlog before the verdict")
	return fs.String("fleet-schedule", "1,2,4,8,3,1", "the fleet sizes in turn, comma separated, one plateau each")
}

// checkFleet checks the options of -fleet.
func (o *options) checkFleet(schedule string) error {
	if !o.fleet {
		return nil
	}
	fo := &o.fleetOpts
	var err error
	if fo.schedule, err = intList("-fleet-schedule", schedule, 1, maxFleet); err != nil {
		return err
	}
	switch {
	case len(fo.schedule) == 0:
		return errors.New("-fleet-schedule: at least one fleet size")
	case o.relayBin == "":
		return errors.New("-fleet: the fleet runs the relay binary as processes; give -relay-bin (make build: bin/relay)")
	case o.nodes != 1:
		return fmt.Errorf("-fleet: runs on one broker; leave out -nodes %d", o.nodes)
	case o.cross:
		return errors.New("-fleet: runs on one broker; leave out -cross")
	case fo.window < 2*fleetSampleEvery || fo.plateau < 2*fo.window:
		return fmt.Errorf("-fleet-window must be at least %s and -fleet-plateau at least twice it, got %s and %s", 2*fleetSampleEvery, fo.window, fo.plateau)
	case fo.delay <= 0 || fo.workers < 1 || fo.concurrency < 1 || fo.drain <= 0:
		return errors.New("-fleet-delay and -fleet-drain must be positive, -fleet-workers and -fleet-concurrency at least 1")
	}
	return nil
}

// maxFleet is the largest fleet size -fleet-schedule takes: every
// instance is a process on this machine.
const maxFleet = 16

// fleetSampleEvery is how often the fleet is sampled.
const fleetSampleEvery = time.Second

// fleetMinBacklog is the fewest records left for the fleet to take: more
// than the share group can hold locked on the three source partitions
// (3 × 10,000, Kafka's highest setting), so that records wait unlocked
// whatever the relays hold. The producer also keeps fleetLead of the
// current output rate ahead of it.
const (
	fleetMinBacklog = 40_000
	fleetLead       = 20 * time.Second
)

// fleetInstance names the relay instance of ordinal i, as a StatefulSet
// names its pods.
func fleetInstance(i int) string { return "relay-" + strconv.Itoa(i) }

// fleetSample is the fleet at one instant.
type fleetSample struct {
	// At is the time since the schedule began.
	At time.Duration
	// Plateau is the plateau of the schedule running (1, 2, ...), 0
	// once the schedule is done and the last fleet finishes the
	// backlog.
	Plateau int
	// Instances is the fleet size the schedule asks for; Processes the
	// relay processes running (those scaled in drain for a while).
	Instances, Processes int
	// Output is the committed outputs read so far (read_committed).
	Output int64
	// Lag is the share group's lag, the backlog (-1: unknown).
	Lag int64
	// RelayCPU and BrokerCPU are the CPU time (user+system) the relay
	// processes, every one run so far, and the broker used since the
	// schedule began.
	RelayCPU, BrokerCPU time.Duration
	// PollRecords and Consumers are the sums of sharerelay_poll_records
	// and sharerelay_share_consumers of the running relays (each
	// worker's poll size and share consumers; 0 where the relay has no
	// such gauges).
	PollRecords, Consumers int64
}

// fleetChange is a change of the fleet size.
type fleetChange struct {
	At        time.Duration
	Instances int
}

// member is one relay instance of the fleet: its current process.
type member struct {
	ordinal int
	proc    *harness.Proc
	addr    string // its metrics endpoint
	log     string
	// released is the most sharerelay_released_on_last_delivery_total
	// read from the process, resizes the most sharerelay_resizes_total.
	released, resizes atomic.Int64
}

// fleet runs the relay instances of the fleet pipeline.
type fleet struct {
	bin, config, dir string

	mu      sync.Mutex
	members []*member // the running and draining ones, by start
	size    int       // the size asked for: ordinals 0..size-1 run
	// ever are every process started, for the sizing lines of their
	// logs and their released records.
	ever     []*member
	stopping sync.WaitGroup
	// stops records each scale-in's exits: "relay-5 exit 0 after 3.2s".
	stops []string
}

// scale starts ordinals size..n-1 or sends SIGTERM to ordinals n..size-1,
// all at once; it does not wait for those to exit.
func (f *fleet) scale(n int) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	for i := f.size; i < n; i++ {
		port, err := kafkatest.FreePort()
		if err != nil {
			return fmt.Errorf("starting %s: %w", fleetInstance(i), err)
		}
		m := &member{ordinal: i, addr: "127.0.0.1:" + strconv.Itoa(port)}
		c := harness.RelayCommand(f.bin, f.config, fleetInstance(i))
		m.log = filepath.Join(f.dir, fmt.Sprintf("%s.%d.log", fleetInstance(i), len(f.ever)))
		c.LogPath, c.Env = m.log, []string{"FLEET_METRICS_ADDR=" + m.addr}
		if m.proc, err = harness.Start(c); err != nil {
			return err
		}
		f.members = append(f.members, m)
		f.ever = append(f.ever, m)
	}
	for _, m := range f.members {
		if m.ordinal < n || m.proc.Exited() {
			continue
		}
		began := time.Now()
		if err := m.proc.Signal(syscall.SIGTERM); err != nil {
			continue // it exited meanwhile
		}
		f.stopping.Go(func() {
			code, err := m.proc.Wait(processStopTimeout * 2)
			if err != nil {
				m.proc.Kill()
				code = m.proc.ExitCode()
			}
			f.mu.Lock()
			f.stops = append(f.stops, fmt.Sprintf("%s exit %d after %s", fleetInstance(m.ordinal), code, time.Since(began).Round(100*time.Millisecond)))
			f.mu.Unlock()
		})
	}
	f.size = n
	return nil
}

// running returns the processes that have not exited.
func (f *fleet) running() []*member {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []*member
	for _, m := range f.members {
		if !m.proc.Exited() {
			out = append(out, m)
		}
	}
	return out
}

// stop scales the fleet to 0 and waits for every process to exit.
func (f *fleet) stop() error {
	err := f.scale(0)
	f.stopping.Wait()
	return err
}

// kill ends every process at once (a failed run).
func (f *fleet) kill() {
	f.mu.Lock()
	ms := slices.Clone(f.ever)
	f.mu.Unlock()
	for _, m := range ms {
		m.proc.Kill()
	}
	f.stopping.Wait()
}

// totals sums, over every process, the records released on their last
// delivery and the resizes of share consumers.
func (f *fleet) totals() (released, resizes int64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, m := range f.ever {
		released += m.released.Load()
		resizes += m.resizes.Load()
	}
	return released, resizes
}

// scrape reads each running relay's metrics: it keeps the most records
// each released on their last delivery and the most resizes, and returns
// the sums of their workers' poll sizes and share consumers.
func (f *fleet) scrape(ctx context.Context) (pollRecords, consumers int64) {
	hc := &http.Client{Timeout: 500 * time.Millisecond}
	for _, m := range f.running() {
		vals, err := scrapeSums(ctx, hc, "http://"+m.addr+"/metrics", "sharerelay_released_on_last_delivery_total",
			"sharerelay_resizes_total", "sharerelay_poll_records", "sharerelay_share_consumers")
		if err != nil {
			continue // not listening yet, or stopping
		}
		if r := int64(vals[0]); r > m.released.Load() {
			m.released.Store(r)
		}
		if r := int64(vals[1]); r > m.resizes.Load() {
			m.resizes.Store(r)
		}
		pollRecords += int64(vals[2])
		consumers += int64(vals[3])
	}
	return pollRecords, consumers
}

// scrapeSums reads a relay's metrics endpoint and sums the samples of each
// of names over their labels.
func scrapeSums(ctx context.Context, hc *http.Client, url string, names ...string) ([]float64, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	resp, err := hc.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("%s: %s", url, resp.Status)
	}
	return sumMetrics(resp.Body, names...)
}

// sumMetrics sums, in the Prometheus text format read from r, the samples
// of each of names over their labels (0 for a name with no sample).
func sumMetrics(r io.Reader, names ...string) ([]float64, error) {
	out := make([]float64, len(names))
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "#") {
			continue
		}
		name, _, _ := strings.Cut(line, "{")
		name, _, _ = strings.Cut(name, " ")
		i := slices.Index(names, name)
		if i < 0 {
			continue
		}
		v, err := strconv.ParseFloat(line[strings.LastIndexByte(line, ' ')+1:], 64)
		if err != nil {
			return nil, fmt.Errorf("%q: %w", line, err)
		}
		out[i] += v
	}
	return out, sc.Err()
}

// sizingLines returns, per process, the lines of its log that say how it
// sized its share consumers (at start, and each resize).
func (f *fleet) sizingLines() []string {
	f.mu.Lock()
	ms := slices.Clone(f.ever)
	f.mu.Unlock()
	var out []string
	for _, m := range ms {
		b, err := os.ReadFile(m.log)
		if err != nil {
			continue
		}
		for line := range strings.SplitSeq(string(b), "\n") {
			if strings.Contains(line, "share consumers sized") || strings.Contains(line, "share consumers resized") || strings.Contains(line, "record locks short") {
				out = append(out, fmt.Sprintf("%s: %s", fleetInstance(m.ordinal), sizingSummary(line)))
			}
		}
	}
	return out
}

// sizingSummary keeps the message and the consumers and records a poll of
// a relay's log line, without the time and level.
func sizingSummary(line string) string {
	msg := line
	if i := strings.Index(line, "msg="); i >= 0 {
		msg = line[i+len("msg="):]
	}
	return msg
}

// cpuMeter reads the CPU the relay processes and the broker used.
type cpuMeter struct {
	f      *fleet
	broker []int
	// base are the readings when the schedule began.
	baseRelay, baseBroker time.Duration
}

// read returns the relay processes' and the broker's CPU since the base.
// The relays are this process's children: the ones that exited count in
// its children's CPU (cutime + cstime, once reaped), the running ones in
// their own /proc entries.
func (c *cpuMeter) read() (relay, broker time.Duration) {
	relay = childrenCPU()
	for _, m := range c.f.running() {
		relay += procCPU(m.proc.Pid())
	}
	for _, pid := range c.broker {
		broker += procCPU(pid)
	}
	return relay - c.baseRelay, broker - c.baseBroker
}

// childrenCPU returns the user+system CPU of this process's children that
// have exited and been waited for (cutime + cstime of /proc/self/stat).
func childrenCPU() time.Duration { return statCPU("/proc/self/stat", 16) }

// backlog keeps the source topic ahead of the fleet: at least
// fleetMinBacklog records, and fleetLead of the current output rate, not
// yet finished by the group.
type backlog struct {
	cl     *kgo.Client
	adm    *kadm.Client
	orders harness.Orders
	group  string
	// produced is the orders written so far, 1..produced.
	produced atomic.Int64
	// rate is the fleet's current output rate (records/s), set by the
	// sampler.
	rate atomic.Int64
}

// fill writes orders until the group's lag reaches target; the lag is
// read, not counted, so records that other paths finished are not
// written twice.
func (bl *backlog) fill(ctx context.Context, lag int64) error {
	target := int64(fleetMinBacklog) + bl.rate.Load()*int64(fleetLead/time.Second)
	if lag >= target {
		return nil
	}
	var (
		mu    sync.Mutex
		first error
	)
	// Not cancelled with ctx: an order cut off half written might be in
	// the topic or not, and the verdict needs the count of those that are.
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Minute)
	defer cancel()
	from := bl.produced.Load() + 1
	to := from + min(target-lag, 50_000) - 1
	for i := from; i <= to; i++ {
		bl.cl.Produce(wctx, bl.orders.Record(int(i)), func(_ *kgo.Record, err error) {
			if err != nil {
				mu.Lock()
				first = cmpErr(first, err)
				mu.Unlock()
			}
		})
	}
	if err := bl.cl.Flush(wctx); err != nil {
		return fmt.Errorf("writing orders %d..%d: %w", from, to, err)
	}
	if first != nil {
		return fmt.Errorf("writing orders %d..%d: %w", from, to, first)
	}
	bl.produced.Store(to)
	return nil
}

// cmpErr returns a, or b when a is nil.
func cmpErr(a, b error) error {
	if a != nil {
		return a
	}
	return b
}

// run tops the backlog up every half second until ctx ends.
func (bl *backlog) run(ctx context.Context) error {
	t := time.NewTicker(500 * time.Millisecond)
	defer t.Stop()
	for {
		lctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		l, err := audit.ShareGroupLag(lctx, bl.adm, bl.group, bl.orders.Topic)
		cancel()
		if err == nil {
			if err := bl.fill(ctx, audit.TotalLag(l)); err != nil && ctx.Err() == nil {
				return err
			}
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

// outputCounter counts the committed outputs of a topic as a
// read_committed consumer sees them.
type outputCounter struct {
	cl *kgo.Client
	n  atomic.Int64
}

// run counts until ctx ends.
func (oc *outputCounter) run(ctx context.Context) {
	for ctx.Err() == nil {
		fs := oc.cl.PollFetches(ctx)
		oc.n.Add(int64(fs.NumRecords()))
	}
}

// runFleet measures the fleet: it starts the broker, creates the fleet
// pipeline, keeps a backlog, scales the relay processes along the
// schedule while sampling, lets the last fleet finish the backlog, stops
// it, verifies exactly-once, and prints the plateau table.
func runFleet(ctx context.Context, opts options) (err error) {
	fo := opts.fleetOpts
	began := time.Now()
	br, err := getBroker(ctx, opts.brokerRecordLocks[0], 1, "")
	if err != nil {
		return err
	}
	defer func() {
		if serr := br.stop(); serr != nil {
			err = errors.Join(err, serr)
		}
	}()
	dir, err := os.MkdirTemp("", "bench-fleet-")
	if err != nil {
		return fmt.Errorf("creating the fleet's directory: %w", err)
	}
	defer func() {
		if err != nil {
			progress("the relays' logs and the pipeline are kept in %s", dir)
			return
		}
		os.RemoveAll(dir)
	}()
	p, err := harness.NewPipeline(ctx, harness.PipelineOptions{
		Name: fmt.Sprintf("fleet-%d", began.UnixNano()%1_000_000_000), Seeds: br.seeds, Dir: dir,
		Workers: fo.workers, MaxRecords: -1, TransformConcurrency: fo.concurrency, RenewLocks: true,
		Transforms:    fmt.Sprintf("[{type: delay, duration: %s}]", fo.delay),
		MetricsListen: "${FLEET_METRICS_ADDR}",
	})
	if err != nil {
		return fmt.Errorf("the fleet pipeline: %w", err)
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(br.seeds...), kgo.ProducerLinger(5*time.Millisecond), kgo.MaxBufferedRecords(100_000))
	if err != nil {
		return fmt.Errorf("the fleet's client: %w", err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	rcl, err := kgo.NewClient(kgo.SeedBrokers(br.seeds...), kgo.ConsumeTopics(p.Output),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	if err != nil {
		return fmt.Errorf("the fleet's output reader: %w", err)
	}
	defer rcl.Close()

	bl := &backlog{cl: cl, adm: adm, orders: harness.Orders{Topic: p.Source}, group: p.Group}
	if err := bl.fill(ctx, 0); err != nil {
		return fmt.Errorf("the fleet's backlog: %w", err)
	}
	setting := limitsLabel(br.isLocal(), br.recordLocks, 0)
	progress("fleet: schedule %v, plateaus of %s; %d worker(s) an instance, transform %s a record, %d at once; backlog of %d orders; broker %s (%s); logs in %s",
		fo.schedule, fo.plateau, fo.workers, fo.delay, fo.concurrency, bl.produced.Load(), strings.Join(br.seeds, ","), setting, dir)

	f := &fleet{bin: opts.relayBin, config: p.Path, dir: dir}
	defer func() {
		if err != nil {
			f.kill()
		}
	}()
	meter := &cpuMeter{f: f, broker: br.pids()}
	meter.baseRelay, meter.baseBroker = meter.read()

	// The reader, the producer and the sampler run until the fleet has
	// stopped; each is waited for before the verdict.
	bctx, stopBackground := context.WithCancel(ctx)
	defer stopBackground()
	oc := &outputCounter{cl: rcl}
	var bg sync.WaitGroup
	defer func() { stopBackground(); bg.Wait() }()
	bg.Go(func() { oc.run(bctx) })
	pctx, stopProducer := context.WithCancel(bctx)
	defer stopProducer()
	var prodErr error
	bg.Go(func() { prodErr = bl.run(pctx) })

	start := time.Now()
	var plateau atomic.Int64
	var (
		smu     sync.Mutex
		samples []fleetSample
		changes []fleetChange
	)
	bg.Go(func() {
		t := time.NewTicker(fleetSampleEvery)
		defer t.Stop()
		for {
			select {
			case <-bctx.Done():
				return
			case <-t.C:
			}
			lctx, cancel := context.WithTimeout(bctx, 900*time.Millisecond)
			lag := int64(-1)
			if l, err := audit.ShareGroupLag(lctx, adm, p.Group, p.Source); err == nil {
				lag = audit.TotalLag(l)
			}
			polls, consumers := f.scrape(lctx)
			cancel()
			relayCPU, brokerCPU := meter.read()
			smu.Lock() // the plateau and the size, as one change set them
			f.mu.Lock()
			size := f.size
			f.mu.Unlock()
			s := fleetSample{At: time.Since(start), Plateau: int(plateau.Load()), Instances: size, Processes: len(f.running()), Output: oc.n.Load(),
				Lag: lag, RelayCPU: relayCPU, BrokerCPU: brokerCPU, PollRecords: polls, Consumers: consumers}
			samples = append(samples, s)
			bl.rate.Store(int64(recentRate(samples, fo.window)))
			smu.Unlock()
		}
	})

	for i, n := range fo.schedule {
		smu.Lock()
		at := time.Since(start)
		err := f.scale(n)
		changes = append(changes, fleetChange{At: at, Instances: n})
		plateau.Store(int64(i + 1))
		smu.Unlock()
		if err != nil {
			return err
		}
		progress("fleet: plateau %d of %d: %d instance(s) (%d relay processes running, the rest draining); %d committed outputs so far",
			i+1, len(fo.schedule), n, len(f.running()), oc.n.Load())
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(fo.plateau):
		}
	}
	smu.Lock()
	scheduleEnd := time.Since(start)
	plateau.Store(0)
	smu.Unlock()
	stopProducer()
	progress("fleet: schedule done; %d orders written; waiting up to %s for the last fleet to finish them", bl.produced.Load(), fo.drain)
	if err := waitLag(ctx, adm, p.Group, p.Source, fo.drain); err != nil {
		return err
	}
	if err := f.stop(); err != nil {
		return err
	}
	tctx, cancel := context.WithTimeout(ctx, time.Minute)
	err = harness.WaitNoOpenTransactions(tctx, adm, p.Output, p.DeadLetter, p.Ledger)
	cancel()
	if err != nil {
		return err
	}
	stopBackground()
	bg.Wait()
	if prodErr != nil {
		return fmt.Errorf("the fleet's backlog: %w", prodErr)
	}
	released, resizes := f.totals()
	verdict, vErr := verifyFleet(ctx, br.seeds, p, bl.produced.Load(), released)

	stats := plateauStats(samples, changes, scheduleEnd, fo.window)
	printFleet(os.Stdout, fo, setting, stats, verdict)
	for _, l := range f.sizingLines() {
		fmt.Fprintln(os.Stdout, "  "+l)
	}
	for _, l := range f.stops {
		fmt.Fprintln(os.Stdout, "  scale-in: "+l)
	}
	fmt.Fprintf(os.Stdout, "  share consumers resized while running: %d times (sharerelay_resizes_total, all processes)\n", resizes)
	if fo.csvPath != "" {
		if err := writeFleetCSV(fo.csvPath, samples); err != nil {
			return err
		}
		progress("fleet: samples written to %s", fo.csvPath)
	}
	progress("fleet: done in %s", time.Since(began).Round(time.Second))
	return vErr
}

// waitLag waits up to d for the share group to have finished every record.
func waitLag(ctx context.Context, adm *kadm.Client, group, topic string, d time.Duration) error {
	deadline := time.Now().Add(d)
	last := int64(-1)
	for time.Now().Before(deadline) {
		lctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		l, err := audit.ShareGroupLag(lctx, adm, group, topic)
		cancel()
		if err == nil {
			if last = audit.TotalLag(l); last == 0 {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Second):
		}
	}
	return fmt.Errorf("the fleet left %d records of %s unfinished %s after the schedule (-fleet-drain)", last, topic, d)
}

// verifyFleet runs the pipeline verifier on the fleet's pipeline: every
// one of the produced orders written once, none dead-lettered, none
// released on its last delivery (which the broker archives without
// output). It returns the verdict as printed, and an error unless exact.
func verifyFleet(ctx context.Context, seeds []string, p *harness.Pipeline, produced, released int64) (string, error) {
	vctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	rep, err := audit.Verify(vctx, audit.VerifyConfig{
		ClientOpts: []kgo.Opt{kgo.SeedBrokers(seeds...)}, Sources: []string{p.Source}, SourceCommitted: true,
		Outputs: []string{p.Output}, DeadLetter: p.DeadLetter, Group: p.Group, Ledger: p.Ledger,
	})
	if err != nil {
		return "NOT VERIFIED", fmt.Errorf("verifying the fleet: %w", err)
	}
	t := rep.Total
	verdict := fmt.Sprintf("%d source records: output %d, dead-lettered %d, lost %d, duplicated %d, unexpected %d; released on the last delivery %d; aborted records %d",
		t.Sources, t.Output, t.DeadLettered, t.Lost, t.Duplicated, t.Unexpected, released, rep.AbortedRecords)
	var problems []string
	if !rep.Exact {
		problems = append(problems, "not exact")
	}
	if int64(t.Sources) != produced {
		problems = append(problems, fmt.Sprintf("%d source records, %d written", t.Sources, produced))
	}
	if t.DeadLettered != 0 || released != 0 {
		problems = append(problems, "records dead-lettered or released on their last delivery (archived by the broker)")
	}
	if len(problems) > 0 {
		return "FAIL: " + verdict, fmt.Errorf("the fleet is not exactly-once: %s (%s)", strings.Join(problems, "; "), verdict)
	}
	return "EXACT: " + verdict, nil
}

// recentRate is the output rate over the last window of samples
// (records/s), 0 before there is one.
func recentRate(samples []fleetSample, window time.Duration) float64 {
	if len(samples) == 0 {
		return 0
	}
	r, ok := windowRate(samples, len(samples)-1, window)
	if !ok {
		return 0
	}
	return r
}

// windowRate is the output rate over the window ending at sample j: from
// the latest sample at least window before it. ok is false when there is
// none.
func windowRate(samples []fleetSample, j int, window time.Duration) (rate float64, ok bool) {
	end := samples[j]
	for i := j - 1; i >= 0; i-- {
		if s := samples[i]; end.At-s.At >= window {
			return float64(end.Output-s.Output) / (end.At - s.At).Seconds(), true
		}
	}
	return 0, false
}

// plateauStat is what one plateau of the schedule did.
type plateauStat struct {
	Index, Instances int
	// Start and End bound the plateau, since the schedule began.
	Start, End time.Duration
	// Median is the median output rate (records/s) of the windows
	// ending in the plateau's second half, each wholly in the plateau.
	Median float64
	// Ratio is Median over Instances × the first plateau's rate a
	// instance.
	Ratio float64
	// ToPlateau is the time from the change to the end of the first
	// window, wholly after it, whose rate is within 10% of Median; -1
	// when none is. The window is its floor.
	ToPlateau time.Duration
	// RelayCPU and BrokerCPU are the CPU time used over the plateau.
	RelayCPU, BrokerCPU time.Duration
	// MinLag is the smallest backlog seen in the plateau (-1: unknown).
	MinLag int64
}

// plateauTolerance is how near a window's rate must be to the plateau's
// median for the plateau to count as reached: either way, so that a
// scale-in's drop counts once the rate is down, not while the scaled-in
// instances still drain.
const plateauTolerance = 0.10

// plateauStats computes each plateau's figures from the samples; the
// plateau of change k lasts until change k+1, the last one until end.
func plateauStats(samples []fleetSample, changes []fleetChange, end time.Duration, window time.Duration) []plateauStat {
	var out []plateauStat
	single := 0.0
	for k, c := range changes {
		st := plateauStat{Index: k + 1, Instances: c.Instances, Start: c.At, End: end, ToPlateau: -1, MinLag: -1}
		if k+1 < len(changes) {
			st.End = changes[k+1].At
		}
		var rates []float64
		type win struct {
			at   time.Duration
			rate float64
		}
		var wins []win
		first, last := -1, -1
		for j, s := range samples {
			if s.At < st.Start || s.At > st.End {
				continue
			}
			if first < 0 {
				first = j
			}
			last = j
			if s.Lag >= 0 && (st.MinLag < 0 || s.Lag < st.MinLag) {
				st.MinLag = s.Lag
			}
			if s.At-window < st.Start {
				continue
			}
			r, ok := windowRate(samples, j, window)
			if !ok {
				continue
			}
			wins = append(wins, win{s.At, r})
			if s.At >= st.Start+(st.End-st.Start)/2 {
				rates = append(rates, r)
			}
		}
		st.Median = medianOf(rates)
		for _, w := range wins {
			if st.Median > 0 && abs(w.rate-st.Median) <= plateauTolerance*st.Median {
				st.ToPlateau = w.at - st.Start
				break
			}
		}
		if first >= 0 && last > first {
			st.RelayCPU = samples[last].RelayCPU - samples[first].RelayCPU
			st.BrokerCPU = samples[last].BrokerCPU - samples[first].BrokerCPU
			// Scale the CPU to the whole plateau: samples start a
			// second in and end up to a second early.
			if span := samples[last].At - samples[first].At; span > 0 {
				f := float64(st.End-st.Start) / float64(span)
				st.RelayCPU = time.Duration(float64(st.RelayCPU) * f)
				st.BrokerCPU = time.Duration(float64(st.BrokerCPU) * f)
			}
		}
		if k == 0 && c.Instances > 0 {
			single = st.Median / float64(c.Instances)
		}
		if single > 0 {
			st.Ratio = st.Median / (single * float64(c.Instances))
		}
		out = append(out, st)
	}
	return out
}

func abs(x float64) float64 {
	if x < 0 {
		return -x
	}
	return x
}

// medianOf returns the median of xs (0 for none), sorting xs in place.
func medianOf(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	slices.Sort(xs)
	return median(xs)
}

// printFleet prints the plateau table, the goals' verdicts and the
// exactly-once verdict.
func printFleet(w io.Writer, fo fleetOptions, setting string, stats []plateauStat, verdict string) {
	fmt.Fprintf(w, "\nelastic fleet: schedule %s, plateaus of %s; transform %s a record, %d at once, %d worker(s) an instance; broker: %s\n",
		scheduleString(fo.schedule), fo.plateau, fo.delay, fo.concurrency, fo.workers, setting)
	fmt.Fprintf(w, "rate: median of %s windows over each plateau's second half; time to plateau: to the end of the first %s window after the change within %.0f%% of it\n",
		fo.window, fo.window, 100*plateauTolerance)
	// The transform's ceiling: what one instance would do if nothing but
	// its transform took time. A single instance commits a few polls at
	// once, seconds apart, so its windows' median is a noisy yardstick;
	// the ceiling is a fixed one.
	ceiling := float64(fo.workers*fo.concurrency) / fo.delay.Seconds()
	fmt.Fprintf(w, "ceiling: %d worker(s) × %d at once ÷ %s = %.0f records/s an instance, if the transform were all that took time\n", fo.workers, fo.concurrency, fo.delay, ceiling)
	fmt.Fprintf(w, "%-8s %9s %12s %14s %15s %16s %11s %12s %12s\n", "plateau", "instances", "records/s", "vs N × single", "vs N × ceiling", "time to plateau", "CPU relays", "CPU broker", "min backlog")
	for _, s := range stats {
		secs := (s.End - s.Start).Seconds()
		to := "not reached"
		if s.ToPlateau >= 0 {
			to = s.ToPlateau.Round(time.Second).String()
		}
		fmt.Fprintf(w, "%-8d %9d %12.0f %14.2f %15.2f %16s %5.0fs %4.2fc %5.0fs %4.2fc %12d\n", s.Index, s.Instances, s.Median, s.Ratio, s.Median/(ceiling*float64(s.Instances)), to,
			s.RelayCPU.Seconds(), s.RelayCPU.Seconds()/secs, s.BrokerCPU.Seconds(), s.BrokerCPU.Seconds()/secs, s.MinLag)
	}
	for _, s := range stats {
		g := "met"
		if s.Ratio < 0.8 {
			g = "NOT met"
		}
		p := "met"
		if s.ToPlateau < 0 || s.ToPlateau > 30*time.Second {
			p = "NOT met"
		}
		fmt.Fprintf(w, "goal: plateau %d (%d instances): rate ≥ 0.8 × N × single: %.2f, %s; new plateau within 30 s: %s\n", s.Index, s.Instances, s.Ratio, g, p)
	}
	fmt.Fprintf(w, "exactly-once: %s\n", verdict)
}

// scheduleString writes a schedule as 1 → 2 → 4.
func scheduleString(s []int) string {
	parts := make([]string, len(s))
	for i, n := range s {
		parts[i] = strconv.Itoa(n)
	}
	return strings.Join(parts, " → ")
}

// fleetCSVHeader names the columns of the fleet's CSV, which
// integration/cmd/fleetchart reads by these names.
var fleetCSVHeader = []string{"t_s", "plateau", "instances", "processes", "output_total", "lag", "relay_cpu_s", "broker_cpu_s", "poll_records", "share_consumers"}

// writeFleetCSV writes the samples to path, one row each.
func writeFleetCSV(path string, samples []fleetSample) error {
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("writing the fleet's samples: %w", err)
	}
	w := csv.NewWriter(f)
	_ = w.Write(fleetCSVHeader)
	for _, s := range samples {
		_ = w.Write([]string{
			strconv.FormatFloat(s.At.Seconds(), 'f', 3, 64), strconv.Itoa(s.Plateau), strconv.Itoa(s.Instances), strconv.Itoa(s.Processes),
			strconv.FormatInt(s.Output, 10), strconv.FormatInt(s.Lag, 10),
			strconv.FormatFloat(s.RelayCPU.Seconds(), 'f', 2, 64), strconv.FormatFloat(s.BrokerCPU.Seconds(), 'f', 2, 64),
			strconv.FormatInt(s.PollRecords, 10), strconv.FormatInt(s.Consumers, 10),
		})
	}
	w.Flush()
	if err := errors.Join(w.Error(), f.Close()); err != nil {
		return fmt.Errorf("writing the fleet's samples to %s: %w", path, err)
	}
	return nil
}
