package main

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sharerelay/sharerelay/config"
	"github.com/sharerelay/sharerelay/eos"
	"github.com/sharerelay/sharerelay/metrics"
)

// durStats accumulates durations.
type durStats struct {
	n        int
	sum, max time.Duration
	// read and wrote are the bytes the responses brought and the
	// requests carried, and errs the requests that failed (requests only).
	read, wrote int64
	errs        int
}

func (d *durStats) add(x time.Duration) {
	d.n++
	d.sum += x
	d.max = max(d.max, x)
}

func (d durStats) mean() time.Duration {
	if d.n == 0 {
		return 0
	}
	return d.sum / time.Duration(d.n)
}

// traceCollector gathers the -trace diagnostics of one contender run: the
// latency of every Kafka request by kind, and for the relay the batches and
// the time spent in the exactly-once claim. Disabled, it does nothing.
type traceCollector struct {
	enabled bool

	mu           sync.Mutex
	requests     map[int16]*durStats
	claim        durStats // eos.Guard.Check: waiting for the ledger reader and earlier claims
	committed    durStats // eos.Guard.Committed
	batches      int64
	batchSeconds float64
	txns         int64
	// CPU used during the run by the local broker's JVMs (every node's
	// summed) and by this process (which runs the relay and the other
	// contenders).
	brokerCPU, selfCPU, jit time.Duration
	records                 int // of the run, for the CPU per record
	brokerPids              []int
	brokerCPU0, selfCPU0    time.Duration
	// idle0/all0 and idle/all are the machine's idle and total CPU
	// ticks (/proc/stat) at the start and during the run: a machine
	// without idle time is CPU-bound, and the contenders' rates are
	// then the inverse of their CPU per record.
	idle0, all0, idle, all int64
	// threads0 and threads are the broker's CPU by thread group (every
	// node's summed) at the start, and used during the run.
	threads0, threads map[string]time.Duration
	// produced sums the record batches written, by topic kind ("ledger"
	// for the claim ledger, "data" for the rest): how many, their records, and
	// their bytes before and after compression.
	produced map[string]*batchStats
}

// batchStats sums produced record batches (kgo.ProduceBatchMetrics).
type batchStats struct {
	batches, records         int
	uncompressed, compressed int64
}

func newTraceCollector(enabled bool, records int) *traceCollector {
	return &traceCollector{enabled: enabled, records: records, requests: make(map[int16]*durStats),
		produced: make(map[string]*batchStats)}
}

// startCPU notes the CPU times of the broker processes brokerPids (none:
// not local) and of this process; stopCPU takes the difference.
func (tc *traceCollector) startCPU(brokerPids []int) {
	if !tc.enabled {
		return
	}
	tc.brokerPids = brokerPids
	tc.brokerCPU0, tc.selfCPU0, tc.threads0 = procsCPU(brokerPids), selfCPU(), threadCPU(brokerPids)
	tc.idle0, tc.all0 = machineCPU()
}

func (tc *traceCollector) stopCPU() {
	if !tc.enabled {
		return
	}
	tc.brokerCPU, tc.selfCPU = procsCPU(tc.brokerPids)-tc.brokerCPU0, selfCPU()-tc.selfCPU0
	tc.threads = threadCPU(tc.brokerPids)
	for name, d := range tc.threads0 {
		tc.threads[name] -= d
	}
	tc.jit = jitOf(tc.threads)
	idle, all := machineCPU()
	tc.idle, tc.all = idle-tc.idle0, all-tc.all0
}

// machineCPU returns the machine's idle (idle and iowait) and total CPU
// ticks from the first line of /proc/stat (Linux), or zeros.
func machineCPU() (idle, all int64) {
	data, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0, 0
	}
	line, _, _ := strings.Cut(string(data), "\n")
	return cpuTicks(line)
}

// cpuTicks parses /proc/stat's "cpu" line: user nice system idle iowait
// irq softirq steal guest guest_nice.
func cpuTicks(line string) (idle, all int64) {
	f := strings.Fields(line)
	if len(f) < 6 || f[0] != "cpu" {
		return 0, 0
	}
	// guest and guest_nice (fields 9 and 10) are counted in user already.
	for i, v := range f[1:min(len(f), 9)] {
		n, _ := strconv.ParseInt(v, 10, 64)
		all += n
		if i == 3 || i == 4 {
			idle += n
		}
	}
	return idle, all
}

// procCPU returns the user+system CPU time of process pid, or of its
// thread task when given, from /proc (Linux), or 0.
func procCPU(pid int, task ...string) time.Duration {
	if pid <= 0 {
		return 0
	}
	path := fmt.Sprintf("/proc/%d/stat", pid)
	if len(task) > 0 {
		path = fmt.Sprintf("/proc/%d/task/%s/stat", pid, task[0])
	}
	return statCPU(path, 14) // utime 14, stime 15
}

// statCPU returns the sum of the CPU times in fields user and user+1 of
// the stat file at path (proc(5): 14 and 15 are the process's own user
// and system time, 16 and 17 its waited-for children's), or 0.
func statCPU(path string, user int) time.Duration {
	data, err := os.ReadFile(path)
	if err != nil {
		return 0
	}
	// Fields after the command name, which is in parentheses and may
	// hold spaces: the first of them, the state, is field 3.
	i := strings.LastIndexByte(string(data), ')')
	if i < 0 {
		return 0
	}
	f := strings.Fields(string(data[i+1:]))
	if len(f) < user-1 {
		return 0
	}
	ut, _ := strconv.ParseInt(f[user-3], 10, 64)
	st, _ := strconv.ParseInt(f[user-2], 10, 64)
	const ticksPerSecond = 100 // USER_HZ on Linux
	return time.Duration(ut+st) * time.Second / ticksPerSecond
}

func selfCPU() time.Duration { return procCPU(os.Getpid()) }

// procsCPU returns the user+system CPU time of the processes pids
// together: a local cluster's nodes.
func procsCPU(pids []int) time.Duration {
	var sum time.Duration
	for _, pid := range pids {
		sum += procCPU(pid)
	}
	return sum
}

// threadCPU returns the CPU time each group of the processes pids'
// threads has used, by thread name (/proc/<pid>/task/*/comm, which Linux
// cuts to 15 bytes) with digits folded to "N", the processes' groups of
// one name summed: the JVM names its threads by job ("data-plane-kafk"
// request handlers, "TxnMarkerSende", "C2 CompilerThre", …), so the
// groups tell where a broker's CPU goes without a profiler.
func threadCPU(pids []int) map[string]time.Duration {
	if len(pids) == 0 {
		return nil
	}
	out := make(map[string]time.Duration)
	for _, pid := range pids {
		addThreadCPU(out, pid)
	}
	return out
}

// addThreadCPU adds the CPU time of process pid's threads to out, by
// thread group (threadCPU).
func addThreadCPU(out map[string]time.Duration, pid int) {
	if pid <= 0 {
		return
	}
	tasks, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	if err != nil {
		return
	}
	for _, t := range tasks {
		comm, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%s/comm", pid, t.Name()))
		if err != nil {
			continue
		}
		name := strings.Map(func(r rune) rune {
			if r >= '0' && r <= '9' {
				return 'N'
			}
			return r
		}, strings.TrimSpace(string(comm)))
		out[name] += procCPU(pid, t.Name())
	}
}

// jitCPU returns the CPU time the JVMs pids' JIT compiler threads (named
// "C1 CompilerThre…" and "C2 CompilerThre…" by HotSpot) have used, or 0.
// A broker still compiling its hot paths spends a large share of a
// 2-core machine on it: measured throughput is then the JIT's, not the
// contender's.
func jitCPU(pids []int) time.Duration {
	return jitOf(threadCPU(pids))
}

func jitOf(threads map[string]time.Duration) time.Duration {
	var sum time.Duration
	for name, d := range threads {
		if strings.Contains(name, "CompilerThre") {
			sum += d
		}
	}
	return sum
}

// hooks returns the client option that reports requests to tc (no hooks
// when tracing is off).
func (tc *traceCollector) hooks() kgo.Opt {
	if !tc.enabled {
		return kgo.WithHooks()
	}
	return kgo.WithHooks(tc)
}

// OnBrokerE2E implements kgo.HookBrokerE2E.
func (tc *traceCollector) OnBrokerE2E(_ kgo.BrokerMetadata, key int16, e2e kgo.BrokerE2E) {
	tc.mu.Lock()
	defer tc.mu.Unlock()
	d := entry(tc.requests, key)
	d.wrote += int64(e2e.BytesWritten)
	if e2e.Err() != nil {
		d.errs++
		return
	}
	d.add(e2e.DurationE2E())
	d.read += int64(e2e.BytesRead)
}

// OnProduceBatchWritten implements kgo.HookProduceBatchWritten.
func (tc *traceCollector) OnProduceBatchWritten(_ kgo.BrokerMetadata, topic string, _ int32, m kgo.ProduceBatchMetrics) {
	kind := "data"
	if strings.HasSuffix(topic, config.DefaultLedgerSuffix) {
		kind = "ledger"
	}
	tc.mu.Lock()
	defer tc.mu.Unlock()
	s := entry(tc.produced, kind)
	s.batches++
	s.records += m.NumRecords
	s.uncompressed += int64(m.UncompressedBytes)
	s.compressed += int64(m.CompressedBytes)
}

// entry returns m's value at k, adding a zero one first if there is none.
func entry[K comparable, V any](m map[K]*V, k K) *V {
	v := m[k]
	if v == nil {
		v = new(V)
		m[k] = v
	}
	return v
}

func (tc *traceCollector) record(d *durStats, x time.Duration) {
	tc.mu.Lock()
	d.add(x)
	tc.mu.Unlock()
}

// relayBatches reads the relay's batch histogram and committed
// transactions.
func (tc *traceCollector) relayBatches(m *metrics.Metrics, workers int) {
	if !tc.enabled {
		return
	}
	var h dto.Metric
	if m.BatchSeconds.Write(&h) == nil {
		tc.batches = int64(h.GetHistogram().GetSampleCount())
		tc.batchSeconds = h.GetHistogram().GetSampleSum()
	}
	var committed []prometheus.Counter
	for i := range workers {
		committed = append(committed, m.Transactions.WithLabelValues(strconv.Itoa(i), metrics.TxnCommitted))
	}
	tc.txns = sumCounters(committed)
}

// print writes the collected diagnostics to stderr.
func (tc *traceCollector) print(name string) {
	if !tc.enabled {
		return
	}
	tc.mu.Lock()
	defer tc.mu.Unlock()
	if tc.batches > 0 {
		mean := time.Duration(tc.batchSeconds / float64(tc.batches) * float64(time.Second))
		fmt.Fprintf(os.Stderr, "    trace %s: %d batches, %d committed transactions, mean batch %s",
			name, tc.batches, tc.txns, mean.Round(10*time.Microsecond))
		if tc.claim.n > 0 {
			fmt.Fprintf(os.Stderr, "; claim Check mean %s (waiting for the ledger reader), max %s; Committed mean %s",
				tc.claim.mean().Round(10*time.Microsecond), tc.claim.max.Round(10*time.Microsecond), tc.committed.mean().Round(time.Microsecond))
		}
		fmt.Fprintln(os.Stderr)
	}
	if len(tc.brokerPids) > 0 || tc.selfCPU > 0 {
		fmt.Fprintf(os.Stderr, "    trace %s cpu (whole run): broker %s (of it JIT compiling %s), bench process %s", name,
			tc.brokerCPU.Round(10*time.Millisecond), tc.jit.Round(10*time.Millisecond), tc.selfCPU.Round(10*time.Millisecond))
		if tc.records > 0 {
			perRec := func(d time.Duration) float64 { return float64(d.Microseconds()) / float64(tc.records) }
			fmt.Fprintf(os.Stderr, "; per record: broker %.2fµs without the JIT, bench process %.2fµs, together %.2fµs",
				perRec(tc.brokerCPU-tc.jit), perRec(tc.selfCPU), perRec(tc.brokerCPU-tc.jit+tc.selfCPU))
		}
		if tc.all > 0 {
			fmt.Fprintf(os.Stderr, "; machine idle %.0f%%", 100*float64(tc.idle)/float64(tc.all))
		}
		fmt.Fprintln(os.Stderr)
		if len(tc.threads) > 0 {
			names := slices.SortedFunc(maps.Keys(tc.threads), func(a, b string) int { return cmp.Compare(tc.threads[b], tc.threads[a]) })
			var parts []string
			for _, n := range names[:min(len(names), 12)] {
				if d := tc.threads[n]; d >= 10*time.Millisecond {
					parts = append(parts, fmt.Sprintf("%s %s", n, d.Round(10*time.Millisecond)))
				}
			}
			fmt.Fprintf(os.Stderr, "    trace %s broker threads: %s\n", name, strings.Join(parts, "; "))
		}
	}
	keys := make([]int16, 0, len(tc.requests))
	for k := range tc.requests {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var parts []string
	for _, k := range keys {
		d := tc.requests[k]
		part := fmt.Sprintf("%s n=%d mean=%s max=%s", kmsg.NameForKey(k), d.n,
			d.mean().Round(10*time.Microsecond), d.max.Round(10*time.Microsecond))
		if d.read >= 1<<20 {
			part += fmt.Sprintf(" read=%.1fMB", float64(d.read)/1e6)
		}
		if d.wrote >= 1<<20 {
			part += fmt.Sprintf(" wrote=%.1fMB", float64(d.wrote)/1e6)
		}
		if d.errs > 0 {
			part += fmt.Sprintf(" failed=%d", d.errs)
		}
		parts = append(parts, part)
	}
	for _, kind := range slices.Sorted(maps.Keys(tc.produced)) {
		s := tc.produced[kind]
		fmt.Fprintf(os.Stderr, "    trace %s produced %s: %d batches, %d records (%.0f a batch), %.1fMB, %.1fMB compressed\n",
			name, kind, s.batches, s.records, float64(s.records)/float64(max(s.batches, 1)),
			float64(s.uncompressed)/1e6, float64(s.compressed)/1e6)
	}
	if len(parts) > 0 {
		fmt.Fprintf(os.Stderr, "    trace %s requests: %s\n", name, strings.Join(parts, "; "))
	}
}

// timedGuard times the delivery protocol's calls for -trace. It changes
// nothing in what they do.
type timedGuard struct {
	eos.Guard
	tc *traceCollector
}

func (g *timedGuard) Committed(srcs []eos.Source) []bool {
	start := time.Now()
	out := g.Guard.Committed(srcs)
	g.tc.record(&g.tc.committed, time.Since(start))
	return out
}

func (g *timedGuard) Check(ctx context.Context) ([]bool, error) {
	start := time.Now()
	out, err := g.Guard.Check(ctx)
	g.tc.record(&g.tc.claim, time.Since(start))
	return out, err
}
