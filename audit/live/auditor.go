package live

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"golang.org/x/sync/errgroup"

	"github.com/sharerelay/sharerelay/audit"
	"github.com/sharerelay/sharerelay/lineage"
)

// Config is what an Auditor audits, and how.
type Config struct {
	// Verify says what the pipeline reads and writes, and where, as for
	// relay verify: ClientOpts reach the sink cluster (outputs, dead
	// letters, the checkpoint topic), SourceClientOpts the source
	// cluster (sources, share group); Sources, SourceCommitted, Outputs,
	// DeadLetter, Group and AtMostOnce as there. Group is required: the
	// share group's start offsets are the settling rule. Its Ledger,
	// Generation and Clusters are not used.
	Verify audit.VerifyConfig
	// Pipeline is the pipeline's name: the metrics' pipeline label.
	Pipeline string
	// Delivery is the pipeline's guarantee, config.ExactlyOnce or
	// config.AtLeastOnce: duplicates are expected of at-least-once (the
	// report's AsPromised, the info metric's delivery label).
	Delivery string
	// Interval is the time between fences (default 5s): how often the
	// auditor reads the group's start offsets and judges up to them.
	Interval time.Duration
	// CheckpointInterval is the time between checkpoints (default 30s);
	// one is also written on a clean stop.
	CheckpointInterval time.Duration
	// Checkpoint keeps the checkpoint (TopicStore, FileStore); nil keeps
	// none: every start judges from the beginning (or the ends).
	Checkpoint Store
	// FromEnd, with no checkpoint to resume from, starts the audit at the
	// topics' current ends: only records appended from then on are
	// judged. Otherwise it starts at the sources' start, as relay verify
	// does, and a share group created at the latest offset shows the
	// records before it as lost. A checkpoint says where it started.
	FromEnd bool
	// Registerer takes the metrics (NewMetrics); nil: a registry of its
	// own, read by nobody.
	Registerer prometheus.Registerer
	// Logger logs fences that fail, checkpoints and anomalies; nil
	// discards.
	Logger *slog.Logger

	// ownFence judges a fence's records as soon as the readers reach its
	// own ends: the rule without the second fence, for tests to break.
	ownFence bool
}

// atLeastOnce is config.AtLeastOnce: the delivery whose duplicates are
// expected.
const atLeastOnce = "at-least-once"

// Defaults of Config.
const (
	DefaultInterval           = 5 * time.Second
	DefaultCheckpointInterval = 30 * time.Second
)

// Auditor judges a running pipeline's records as they settle. Run it
// with Run (until its context ends) or RunOnce (up to the first fence).
type Auditor struct {
	cfg Config
	log *slog.Logger
	m   *Metrics

	mu     sync.Mutex
	ready  bool
	why    string
	report *Report
}

// New checks cfg and registers the auditor's metrics.
func New(cfg Config) (*Auditor, error) {
	v := &cfg.Verify
	switch {
	case cfg.Pipeline == "":
		return nil, errors.New("live audit: no pipeline name")
	case v.Group == "":
		return nil, errors.New("live audit: no share group: its start offsets settle the records")
	case len(v.Sources) == 0:
		return nil, errors.New("live audit: no source topics")
	case len(v.ClientOpts) == 0:
		return nil, errors.New("live audit: no client options for the sink cluster")
	}
	if cfg.Interval <= 0 {
		cfg.Interval = DefaultInterval
	}
	if cfg.CheckpointInterval <= 0 {
		cfg.CheckpointInterval = DefaultCheckpointInterval
	}
	if cfg.Registerer == nil {
		cfg.Registerer = prometheus.NewRegistry()
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	a := &Auditor{cfg: cfg, log: cfg.Logger, m: NewMetrics(cfg.Registerer, cfg.Pipeline), why: "starting"}
	a.m.info.WithLabelValues(cfg.Delivery).Set(1)
	return a, nil
}

// Ready says whether the auditor judges: it has judged a fence since it
// started, and its last fence and reads succeeded. If not, why.
func (a *Auditor) Ready() (bool, string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.ready, a.why
}

func (a *Auditor) setReady(ok bool, why string) {
	a.mu.Lock()
	a.ready, a.why = ok, why
	a.mu.Unlock()
	if ok {
		a.m.ready.Set(1)
	} else {
		a.m.ready.Set(0)
	}
}

// Report returns the cumulative verdict as of the newest judged fence
// (nil before the first).
func (a *Auditor) Report() *Report {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.report
}

// Run audits until ctx ends, then writes a checkpoint and returns nil;
// it returns an error only when it cannot start (the checkpoint cannot be
// read, the clients cannot be made). A fence or a read that fails is
// logged and retried; /readyz says so meanwhile.
func (a *Auditor) Run(ctx context.Context) error {
	_, err := a.run(ctx, false)
	return err
}

// RunOnce judges up to the first fence taken after it starts — every
// record the share group had acknowledged by then — once the next fence
// settles, writes a checkpoint and returns the cumulative report. On a quiet pipeline (nothing in
// flight) it judges what relay verify judges.
func (a *Auditor) RunOnce(ctx context.Context) (*Report, error) {
	return a.run(ctx, true)
}

// batch is a poll of one reader.
type batch struct {
	r  *reader
	fs kgo.Fetches
}

type fenceResult struct {
	f   *fence
	err error
}

func (a *Auditor) run(parent context.Context, once bool) (*Report, error) {
	v := a.cfg.Verify
	srcOpts := v.SourceClientOpts
	if len(srcOpts) == 0 {
		srcOpts = v.ClientOpts
	}
	srcAdmCl, err := kgo.NewClient(srcOpts...)
	if err != nil {
		return nil, fmt.Errorf("live audit: source cluster: %w", err)
	}
	defer srcAdmCl.Close()
	sinkAdmCl, err := kgo.NewClient(v.ClientOpts...)
	if err != nil {
		return nil, fmt.Errorf("live audit: sink cluster: %w", err)
	}
	defer sinkAdmCl.Close()
	srcAdm, sinkAdm := kadm.NewClient(srcAdmCl), kadm.NewClient(sinkAdmCl)
	if c, ok := a.cfg.Checkpoint.(interface{ Close() }); ok {
		defer c.Close()
	}

	s := newState(v, a.cfg.FromEnd, a.m)
	if err := a.resume(parent, s, srcAdm, sinkAdm); err != nil {
		return nil, err
	}
	outputs := append(slices.Clone(v.Outputs), v.DeadLetter)
	srcR := &reader{name: "source", opts: srcOpts, committed: v.SourceCommitted, src: true}
	outR := &reader{name: "outputs", opts: v.ClientOpts, committed: true, deadLetter: v.DeadLetter}
	defer srcR.close()
	defer outR.close()

	ctx, cancel := context.WithCancel(parent)
	defer cancel()
	g, gctx := errgroup.WithContext(ctx)
	fetched := make(chan batch)
	fenceReq, fenceRes := make(chan uint64), make(chan fenceResult)
	g.Go(func() error {
		for {
			select {
			case <-gctx.Done():
				return nil
			case seq := <-fenceReq:
				fctx, fcancel := context.WithTimeout(gctx, max(30*time.Second, 2*a.cfg.Interval))
				f, err := takeFence(fctx, srcAdm, sinkAdm, v.Group, v.Sources, outputs, seq)
				fcancel()
				select {
				case fenceRes <- fenceResult{f, err}:
				case <-gctx.Done():
					return nil
				}
			}
		}
	})
	loop := &loop{a: a, s: s, g: g, ctx: gctx, fetched: fetched, src: srcR, out: outR, once: once}
	rep, err := loop.run(ctx, fenceReq, fenceRes)
	cancel()
	werr := g.Wait()
	a.setReady(false, "stopped")
	if err == nil {
		err = werr
	}
	return rep, err
}

// resume loads the checkpoint into s, or, with none and FromEnd, starts
// s at the topics' ends.
func (a *Auditor) resume(ctx context.Context, s *state, srcAdm, sinkAdm *kadm.Client) error {
	if st := a.cfg.Checkpoint; st != nil {
		b, err := st.Load(ctx)
		if err != nil {
			return fmt.Errorf("live audit: loading the checkpoint from %s: %w", st, err)
		}
		if len(b) > 0 {
			cp, err := decodeCheckpoint(b)
			if err == nil {
				err = s.restore(cp)
			}
			if err != nil {
				return fmt.Errorf("live audit: the checkpoint in %s: %w", st, err)
			}
			a.log.Info("resuming from the checkpoint", "checkpoint", st.String(), "written", cp.Written, "judged_at", cp.JudgedAt)
			return nil
		}
		a.log.Info("no checkpoint yet: starting", "checkpoint", st.String(), "from_end", a.cfg.FromEnd)
	}
	if !a.cfg.FromEnd {
		return nil
	}
	// The outputs' ends first, then the sources': a record past the
	// sources' ends is delivered after, so its outputs are past the
	// outputs' ends.
	v := a.cfg.Verify
	_, outEnd, err := offsets(ctx, sinkAdm, append(slices.Clone(v.Outputs), v.DeadLetter))
	if err != nil {
		return fmt.Errorf("live audit: starting at the ends: %w", err)
	}
	_, srcEnd, err := offsets(ctx, srcAdm, v.Sources)
	if err != nil {
		return fmt.Errorf("live audit: starting at the ends: %w", err)
	}
	maps.Copy(s.outPos, outEnd)
	for at, end := range srcEnd {
		s.addPart(at, end)
	}
	return nil
}

// loop is the auditor's one goroutine that owns the state: it reads the
// readers' polls and the fences, judges, and checkpoints.
type loop struct {
	a        *Auditor
	s        *state
	g        *errgroup.Group
	ctx      context.Context // the readers' and the fencer's
	fetched  chan batch
	src, out *reader
	once     bool

	// target is the fence being settled (nil between fences); reached
	// the last one settled, whose records are judged when the next
	// settles (see settle).
	target, reached *fence
	inFlight        bool
	lastReq         time.Time
	judged          int
	fenceErr        error
	readErr         error
	readAt          time.Time
}

func (l *loop) run(ctx context.Context, fenceReq chan<- uint64, fenceRes <-chan fenceResult) (*Report, error) {
	a := l.a
	tick := time.NewTicker(a.cfg.Interval)
	defer tick.Stop()
	cpTick := time.NewTicker(a.cfg.CheckpointInterval)
	defer cpTick.Stop()
	request := func() bool {
		seq := l.s.nextSeq
		select {
		case fenceReq <- seq:
		case <-ctx.Done():
			return false
		}
		l.s.nextSeq++
		l.inFlight, l.lastReq = true, time.Now()
		return true
	}
	request()
	for {
		select {
		case <-ctx.Done():
			l.checkpoint()
			if l.once {
				why := "no fence taken"
				if l.target != nil {
					_, why = l.s.settled(l.target)
				}
				return nil, fmt.Errorf("live audit: the fence did not settle (%s): %w", why, ctx.Err())
			}
			return a.Report(), nil
		case b := <-l.fetched:
			l.read(b)
		case r := <-fenceRes:
			l.inFlight = false
			if r.err != nil {
				l.fenceErr = r.err
				a.log.Warn("cannot take a fence; retrying", "err", r.err)
				l.readiness()
				continue
			}
			l.fenceErr = nil
			if err := l.place(r.f); err != nil {
				return nil, err
			}
		case <-tick.C:
			if !l.inFlight && l.target == nil {
				request()
			}
			l.readiness()
			continue
		case <-cpTick.C:
			l.checkpoint()
			continue
		}
		if l.target == nil || !l.settled() {
			continue
		}
		if l.settle() && l.once {
			l.checkpoint()
			return a.Report(), nil
		}
		if time.Since(l.lastReq) >= a.cfg.Interval {
			request()
		}
	}
}

// settled says whether the readers are at the target fence's bounds, and
// the source reader at the previous one's too.
func (l *loop) settled() bool {
	ok, _ := l.s.settled(l.target)
	if ok && l.reached != nil {
		ok, _ = l.s.settled(l.reached)
	}
	return ok
}

// settle notes that the readers reached the target fence's ends, and
// judges the records below the previous fence's start offsets: the
// target was taken after the readers had reached that fence's ends. It
// says whether it judged.
//
// Why one fence late: a transaction left open by a lost marker keeps the
// readers below a fence's ends until the relay closes it, and the relay
// closes it only after writing again, in a transaction of its own, the
// committed outputs the close discards (docs/exactly-once.md). Those
// copies are written before the readers get past the open transaction,
// so below the ends of any fence taken after: judged at its own fence, a
// record whose outputs were so restored would be called lost, then its
// copy a late duplicate.
func (l *loop) settle() bool {
	f := l.target
	l.target = nil
	judge := l.reached
	if l.a.cfg.ownFence {
		judge = f
	}
	l.reached = f
	if judge == nil {
		l.readiness()
		return false
	}
	l.s.judge(judge)
	l.judged++
	l.a.mu.Lock()
	l.a.report = l.s.report(l.a.cfg.Pipeline, l.a.cfg.Delivery)
	l.a.mu.Unlock()
	l.readiness()
	return true
}

// place applies fence f: new partitions join the readers, and the readers
// read up to f's bounds.
func (l *loop) place(f *fence) error {
	l.s.placed(f)
	srcPos := l.srcPos()
	if err := l.src.add(l.ctx, l.g, srcPos, l.fetched); err != nil {
		return err
	}
	if err := l.out.add(l.ctx, l.g, l.s.outPos, l.fetched); err != nil {
		return err
	}
	l.target = f
	srcB, outB := l.s.bounds(f, l.reached)
	l.src.bound(srcB, srcPos)
	l.out.bound(outB, l.s.outPos)
	return nil
}

func (l *loop) srcPos() map[tp]int64 {
	pos := make(map[tp]int64, len(l.s.parts))
	for at, p := range l.s.parts {
		pos[at] = p.pos
	}
	return pos
}

// read counts a reader's poll, and pauses the partitions it has read up
// to their bound.
func (l *loop) read(b batch) {
	b.fs.EachError(func(t string, p int32, err error) {
		if errors.Is(err, context.Canceled) || errors.Is(err, kgo.ErrClientClosed) {
			return
		}
		if l.readErr == nil {
			l.a.log.Warn("cannot read", "reader", b.r.name, "topic", t, "partition", p, "err", err)
		}
		l.readErr, l.readAt = fmt.Errorf("reading %s[%d]: %w", t, p, err), time.Now()
	})
	b.fs.EachRecord(func(r *kgo.Record) {
		if b.r.src {
			l.s.sourceRecord(r)
		} else {
			l.s.outputRecord(r, r.Topic == b.r.deadLetter)
		}
	})
	b.fs.EachPartition(func(p kgo.FetchTopicPartition) {
		at := tp{p.Topic, p.Partition}
		if b.r.src {
			if sp := l.s.parts[at]; sp != nil {
				b.r.reached(at, sp.pos)
			}
		} else {
			b.r.reached(at, l.s.outPos[at])
		}
	})
}

// readiness sets /readyz from the loop's state.
func (l *loop) readiness() {
	switch {
	case l.fenceErr != nil:
		l.a.setReady(false, "cannot take a fence: "+l.fenceErr.Error())
	case l.readErr != nil && time.Since(l.readAt) < 3*l.a.cfg.Interval:
		l.a.setReady(false, l.readErr.Error())
	case l.judged == 0 && l.target != nil:
		_, why := l.s.settled(l.target)
		if why == "" && l.reached != nil {
			_, why = l.s.settled(l.reached)
		}
		l.a.setReady(false, "catching up: "+why)
	case l.judged == 0:
		l.a.setReady(false, "taking the first fence")
	default:
		l.readErr = nil
		l.a.setReady(true, "")
	}
}

// checkpoint saves the state, if the auditor keeps a checkpoint.
func (l *loop) checkpoint() {
	st := l.a.cfg.Checkpoint
	if st == nil {
		return
	}
	b, err := encodeCheckpoint(l.s.snapshot(l.a.cfg.Pipeline))
	if err == nil {
		// Its own deadline: the final checkpoint is written after the
		// auditor's context ended.
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		err = st.Save(ctx, b)
		cancel()
	}
	if err != nil {
		l.a.m.checkpoints.WithLabelValues("error").Inc()
		l.a.log.Warn("cannot write the checkpoint", "checkpoint", st.String(), "err", err)
		return
	}
	l.a.m.checkpoints.WithLabelValues("ok").Inc()
}

// reader reads one cluster's topics: the sources, or the outputs and
// dead letters, from the positions the state gives, pausing each
// partition at the current fence's bound so that what is held stays
// within two fences.
type reader struct {
	name       string
	opts       []kgo.Opt
	committed  bool
	src        bool
	deadLetter string

	cl      *kgo.Client
	reading map[tp]bool
	bounds  map[tp]int64
	paused  map[tp]bool
}

// add starts reading the partitions of pos it does not read yet, each at
// its position; the first call makes the client and its polling
// goroutine (in g).
func (r *reader) add(ctx context.Context, g *errgroup.Group, pos map[tp]int64, out chan<- batch) error {
	want := map[string]map[int32]kgo.Offset{}
	for at, o := range pos {
		if r.reading[at] {
			continue
		}
		if r.reading == nil {
			r.reading = map[tp]bool{}
		}
		r.reading[at] = true
		if want[at.topic] == nil {
			want[at.topic] = map[int32]kgo.Offset{}
		}
		want[at.topic][at.partition] = kgo.NewOffset().At(o)
	}
	if len(want) == 0 {
		return nil
	}
	if r.cl != nil {
		r.cl.AddConsumePartitions(want)
		return nil
	}
	iso := kgo.ReadUncommitted()
	if r.committed {
		iso = kgo.ReadCommitted()
	}
	cl, err := kgo.NewClient(append(slices.Clone(r.opts),
		kgo.ConsumePartitions(want),
		kgo.FetchIsolationLevel(iso),
		kgo.KeepControlRecords(),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchMaxWait(time.Second),
	)...)
	if err != nil {
		return fmt.Errorf("live audit: %s reader: %w", r.name, err)
	}
	r.cl = cl
	g.Go(func() error {
		for {
			fs := cl.PollFetches(ctx)
			if ctx.Err() != nil || fs.IsClientClosed() {
				return nil
			}
			select {
			case out <- batch{r, fs}:
			case <-ctx.Done():
				return nil
			}
		}
	})
	return nil
}

// bound sets how far each partition is to be read: those already there
// are paused, the others resumed.
func (r *reader) bound(bounds, pos map[tp]int64) {
	if r.cl == nil {
		return
	}
	r.bounds = bounds
	var pause, resume map[string][]int32
	for at := range pos {
		b, ok := bounds[at]
		stop := !ok || pos[at] >= b
		if stop == r.paused[at] {
			continue
		}
		if stop {
			pause = addTP(pause, at)
		} else {
			resume = addTP(resume, at)
		}
		if r.paused == nil {
			r.paused = map[tp]bool{}
		}
		r.paused[at] = stop
	}
	if len(pause) > 0 {
		r.cl.PauseFetchPartitions(pause)
	}
	if len(resume) > 0 {
		r.cl.ResumeFetchPartitions(resume)
	}
}

// reached pauses partition at once it is read to its bound.
func (r *reader) reached(at tp, pos int64) {
	if r.cl == nil || r.paused[at] {
		return
	}
	if b, ok := r.bounds[at]; ok && pos < b {
		return
	}
	if r.paused == nil {
		r.paused = map[tp]bool{}
	}
	r.paused[at] = true
	r.cl.PauseFetchPartitions(map[string][]int32{at.topic: {at.partition}})
}

func addTP(m map[string][]int32, at tp) map[string][]int32 {
	if m == nil {
		m = map[string][]int32{}
	}
	m[at.topic] = append(m[at.topic], at.partition)
	return m
}

func (r *reader) close() {
	if r.cl != nil {
		r.cl.Close()
	}
}

// Report is the auditor's cumulative verdict, in relay verify's terms.
type Report struct {
	Pipeline string `json:"pipeline"`
	Delivery string `json:"delivery"`
	Check    string `json:"check"`
	// Partitions are the source partitions' verdicts; Lag is the
	// partition's records not judged yet (its end at the newest fence
	// minus the judged watermark).
	Partitions []audit.PartitionReport `json:"partitions"`
	Total      audit.PartitionReport   `json:"total"`
	// Late counts outputs and dead letters read after their record was
	// judged; they are in Duplicated too.
	Late int `json:"late"`
	// OutputRecords are the output and dead-letter records read,
	// Unlabelled those without sharerelay.source.* headers.
	OutputRecords int                 `json:"output_records"`
	Unlabelled    int                 `json:"unlabelled"`
	Replays       *audit.ReplayReport `json:"replays,omitempty"`
	// JudgedAt: every record the share group had acknowledged by then
	// is judged.
	JudgedAt time.Time `json:"judged_at"`
	// Exact is relay verify's verdict but for the lag: nothing lost,
	// duplicated, both, incomplete, unexpected or unlabelled, no dead
	// letter replayed twice. AsPromised is Exact, or, for an
	// at-least-once pipeline, nothing wrong but duplicates.
	Exact      bool `json:"exact"`
	AsPromised bool `json:"as_promised"`
}

// report builds the cumulative report of s.
func (s *state) report(pipeline, delivery string) *Report {
	r := &Report{Pipeline: pipeline, Delivery: delivery, Check: "exactly once per source record",
		JudgedAt: s.judgedAt, OutputRecords: s.outputRecords, Unlabelled: s.unlabelled}
	if s.atMostOnce {
		r.Check = "at most once per source record (the pipeline filters)"
	}
	tot := &r.Total
	tot.Topic, tot.Partition = "total", -1
	for _, at := range slices.SortedFunc(maps.Keys(s.parts), compareTP) {
		p := s.parts[at]
		pr := p.rep
		pr.Lag = max(0, p.end-p.judged)
		pr.LostSample = slices.Clone(pr.LostSample)
		pr.DuplicatedSample = slices.Clone(pr.DuplicatedSample)
		pr.IncompleteSample = slices.Clone(pr.IncompleteSample)
		r.Partitions = append(r.Partitions, pr)
		r.Late += p.late
		tot.AddCounts(pr)
	}
	tot.Unexpected += s.foreign
	if len(s.replays) > 0 {
		rr := &audit.ReplayReport{}
		for _, at := range slices.SortedFunc(maps.Keys(s.replays), func(a, b lineage.Source) int {
			return cmp.Or(compareTP(tp{a.Topic, a.Partition}, tp{b.Topic, b.Partition}), cmp.Compare(a.Offset, b.Offset))
		}) {
			rr.Add(s.replays[at].Judge(), at)
		}
		r.Replays = rr
	}
	replaysOK := r.Replays == nil || r.Replays.Duplicated == 0 && r.Replays.Both == 0
	clean := tot.Lost == 0 && tot.Both == 0 && tot.Incomplete == 0 && tot.Unexpected == 0 && r.Unlabelled == 0
	r.Exact = clean && tot.Duplicated == 0 && replaysOK
	r.AsPromised = r.Exact || delivery == atLeastOnce && clean
	return r
}
