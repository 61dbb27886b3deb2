package main

import (
	"context"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sharerelay/sharerelay/config"
)

func lat(c string, p50, p99 float64) latencyResult {
	return latencyResult{Contender: c, Records: 100, P50: p50, P90: p99 / 2, P99: p99, Max: p99 * 2}
}

// The latency goal is on the median of the per-round ratios, each round's
// run against the baseline's beside it, and it is a bound from above.
func TestLatencyGoalIsTheMedianOfPairedRoundsAndABoundFromAbove(t *testing.T) {
	rounds := []latencyRound{
		{Round: 1, Now: []latencyResult{lat("relay-alo", 5, 30)}, Baseline: []latencyResult{lat("relay-alo", 4, 10)}},   // 3.0
		{Round: 2, Now: []latencyResult{lat("relay-alo", 5, 12)}, Baseline: []latencyResult{lat("relay-alo", 4, 10)}},   // 1.2
		{Round: 3, Now: []latencyResult{lat("relay-alo", 5, 100)}, Baseline: []latencyResult{lat("relay-alo", 4, 200)}}, // 0.5
	}
	if got := pairedP99(rounds, "relay-alo"); got != 1.2 {
		t.Fatalf("paired p99 ratio = %v, want 1.2 (the median of 3.0, 1.2 and 0.5)", got)
	}
	now := latencyMedians(rounds, func(r latencyRound) []latencyResult { return r.Now })
	if len(now) != 1 || now[0].P99 != 30 || now[0].Records != 300 {
		t.Fatalf("medians = %+v, want p99 30 over 300 records", now)
	}
	res := results{LatencyRounds: rounds, Latency: now,
		LatencyBaseline: latencyMedians(rounds, func(r latencyRound) []latencyResult { return r.Baseline })}
	g := findGoal(t, goals(res), "latency p99 relay-alo / baseline")
	if !g.AtMost || !g.Met || g.Value != 1.2 {
		t.Fatalf("goal = %+v, want met at 1.2 <= 2", g)
	}
	rounds[1].Now[0].P99 = 25 // 2.5: now the median
	res.Latency = latencyMedians(rounds, func(r latencyRound) []latencyResult { return r.Now })
	if g := findGoal(t, goals(res), "latency p99 relay-alo / baseline"); g.Met {
		t.Fatalf("goal = %+v, want missed at 2.5 > 2", g)
	}
	if got := pairedP99(rounds, "relay-eos"); got != 0 {
		t.Fatalf("paired p99 of a contender without runs = %v, want 0", got)
	}
}

func TestRelayProcessRSSGoal(t *testing.T) {
	res := results{Brokers: []brokerResult{{Throughput: []sizeResult{{Size: 1024, Process: []contenderResult{
		{Name: "relay-alo-bin", PeakRSSMB: 149.9}, {Name: "relay-eos-bin", PeakRSSMB: 150.1}}}}}}}
	gs := goals(res)
	if g := findGoal(t, gs, "1024 B relay-alo-bin peak RSS MB"); !g.Met || !g.AtMost {
		t.Errorf("149.9 MB: %+v, want met", g)
	}
	if g := findGoal(t, gs, "1024 B relay-eos-bin peak RSS MB"); g.Met {
		t.Errorf("150.1 MB: %+v, want missed", g)
	}
}

func findGoal(t *testing.T, gs []goal, what string) goal {
	t.Helper()
	for _, g := range gs {
		if g.What == what {
			return g
		}
	}
	t.Fatalf("no goal %q in %+v", what, gs)
	return goal{}
}

// The relay process's progress is read from its own /metrics: records
// polled over every worker, and only the accepted acknowledgements.
func TestScrapeProgressSumsWorkersAndOnlyAcceptedAcks(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprint(w, `# HELP sharerelay_records_polled_total x
sharerelay_records_polled_total{pipeline="p",worker="0"} 1500
sharerelay_records_polled_total{pipeline="p",worker="1"} 2.5e+03
sharerelay_acks_total{pipeline="p",type="accept",worker="0"} 1000
sharerelay_acks_total{pipeline="p",type="release",worker="0"} 300
sharerelay_acks_total{pipeline="p",type="accept",worker="1"} 2000
sharerelay_records_polled_totally_other 99
`)
	}))
	defer srv.Close()
	polled, accepted, err := scrapeProgress(context.Background(), srv.Client(), srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	if polled != 4000 || accepted != 3000 {
		t.Fatalf("polled %d accepted %d, want 4000 and 3000", polled, accepted)
	}
}

// -relay-client and -relay-compression become one client: section of
// the pipeline file, which the relay's own parser accepts.
func TestRelayClientSettingsReachThePipelineFile(t *testing.T) {
	opts, err := parseFlags([]string{"-relay-client", "consumer.fetch_max_bytes=4194304", "-relay-compression", "lz4"})
	if err != nil {
		t.Fatal(err)
	}
	b := &bench{opts: opts, br: &broker{seeds: []string{"127.0.0.1:9092"}}}
	tr := trial{c: relayEOS, name: "p", source: "s", output: "o", dlq: "d", workers: 2}
	y := b.pipelineYAMLOf(tr)
	if !strings.Contains(y, "client:\n  consumer:\n    fetch_max_bytes: 4194304\n  producer:\n    compression: lz4\n") {
		t.Fatalf("pipeline file:\n%s", y)
	}
	p, err := config.Parse("p.yaml", []byte(y), nil)
	if err != nil {
		t.Fatal(err)
	}
	if p.Client.Consumer.FetchMaxBytes != 4194304 || p.Client.Producer.Compression != "lz4" {
		t.Fatalf("parsed client settings %+v", p.Client)
	}
	if _, err := parseFlags([]string{"-relay-client", "fetch_max_bytes=1"}); err == nil {
		t.Fatal("-relay-client without a section: no error")
	}
}

func TestCPUTicksCountIdleAndIOWaitOfTheMachine(t *testing.T) {
	idle, all := cpuTicks("cpu  100 5 50 800 20 3 2 0 40 0")
	if idle != 820 || all != 980 {
		t.Fatalf("cpuTicks = idle %d of %d, want 820 of 980 (guest is in user already)", idle, all)
	}
	if idle, all := cpuTicks("intr 1 2 3"); idle != 0 || all != 0 {
		t.Fatalf("cpuTicks of another line = %d, %d; want zeros", idle, all)
	}
}

// The relay's own process runs print exactly-once over at-least-once
// beside their table, paired run by run.
func TestProcessRunsPrintExactlyOnceOverAtLeastOnce(t *testing.T) {
	run := func(i int, rate float64) runResult { return runResult{Run: i, RecPerSec: rate} }
	alo := []runResult{run(1, 100), run(2, 200), run(3, 300)}
	eos := []runResult{run(1, 90), run(2, 100), run(3, 240)} // 0.9, 0.5, 0.8
	sr := sizeResult{Size: 200, Records: 10,
		Process: []contenderResult{summarize("relay-alo-bin", alo), summarize("relay-eos-bin", eos)}}
	sr.ProcessEOSOverALO, sr.ProcessEOSOverALOMedian = pairedAndOfMedians(eos, alo)
	if sr.ProcessEOSOverALO != 0.8 || sr.ProcessEOSOverALOMedian != 0.5 {
		t.Fatalf("paired %v, of medians %v; want 0.8 (median of 0.9, 0.5, 0.8) and 0.5 (100/200)", sr.ProcessEOSOverALO, sr.ProcessEOSOverALOMedian)
	}
	var b strings.Builder
	printSize(&b, "stock", sr)
	if want := "relay-eos-bin/relay-alo-bin: 0.80 paired (0.50 of the medians)"; !strings.Contains(b.String(), want) {
		t.Fatalf("printed:\n%s\nwant a line %q", b.String(), want)
	}
	if p, m := pairedAndOfMedians(eos, nil); p != 0 || m != 0 {
		t.Fatalf("without at-least-once runs: %v, %v; want 0, 0 (and no line)", p, m)
	}
}

// -source-batch-bytes must hold one record of the largest size.
func TestSourceBatchBytesMustHoldARecord(t *testing.T) {
	if _, err := parseFlags([]string{"-sizes", "200,1024", "-source-batch-bytes", "2048"}); err != nil {
		t.Fatalf("2048 for 1024 B values: %v", err)
	}
	if _, err := parseFlags([]string{"-sizes", "200,1024", "-source-batch-bytes", "1500"}); err == nil || !strings.Contains(err.Error(), "-source-batch-bytes") {
		t.Fatalf("1500 for 1024 B values: %v, want an error naming -source-batch-bytes", err)
	}
}

// The hand-written contenders poll as many records as the relay by
// default, and classic-eos is reported over classic-alo, its loop without
// the transaction.
func TestHandWrittenContendersPollAsManyAsTheRelay(t *testing.T) {
	o, err := parseFlags(nil)
	if err != nil {
		t.Fatal(err)
	}
	if o.handMaxRecords != config.DefaultMaxRecords {
		t.Fatalf("-hand-max-records defaults to %d, want the relay's batch.max_records %d", o.handMaxRecords, config.DefaultMaxRecords)
	}
	if o, err := parseFlags([]string{"-hand-max-records", "500"}); err != nil || o.handMaxRecords != 500 {
		t.Fatalf("-hand-max-records 500: %d, %v", o.handMaxRecords, err)
	}
	for _, bad := range []string{"0", strconv.Itoa(config.MaxMaxRecords + 1)} {
		if _, err := parseFlags([]string{"-hand-max-records", bad}); err == nil || !strings.Contains(err.Error(), "-hand-max-records") {
			t.Fatalf("-hand-max-records %s: %v, want an error naming the flag", bad, err)
		}
	}
	if _, err := parseFlags([]string{"-contenders", "classic-eos,classic-alo"}); err != nil {
		t.Fatalf("classic-alo is a contender: %v", err)
	}
	if !slices.Contains(ratioPairs, ratioPair{classicEOS.name, classicALO.name}) {
		t.Fatalf("ratioPairs %v: want classic-eos/classic-alo", ratioPairs)
	}
}

func TestCPUPerRecordIsTheMedianOfTheRuns(t *testing.T) {
	if got := cpuMicrosPerRecord(0.38, 100000); got < 3.7999 || got > 3.8001 {
		t.Fatalf("0.38 s over 100,000 records = %v µs, want 3.8", got)
	}
	if got := cpuMicrosPerRecord(1, 0); got != 0 {
		t.Fatalf("over no records = %v, want 0", got)
	}
	run := func(rate, cpu float64) runResult { return runResult{RecPerSec: rate, CPUMicrosPerRecord: cpu} }
	if c := summarize("relay-eos", []runResult{run(100, 5), run(300, 3), run(200, 9)}); c.CPUMicrosPerRecord != 5 {
		t.Fatalf("median CPU of 5, 3, 9 = %v, want 5", c.CPUMicrosPerRecord)
	}
	if c := summarize("relay-eos", []runResult{run(100, 4), run(300, 2)}); c.CPUMicrosPerRecord != 3 {
		t.Fatalf("median CPU of 4, 2 = %v, want 3", c.CPUMicrosPerRecord)
	}
}

// The throughput table says which broker setting it was measured on,
// prints every contender's CPU a record, and each variant's ratio to the
// contender it varies.
func TestThroughputTablePrintsTheSettingCPUAndVariants(t *testing.T) {
	run := func(i int, rate, cpu float64) runResult {
		return runResult{Run: i, Workers: 2, RecPerSec: rate, CPUMicrosPerRecord: cpu}
	}
	v := relayEOS.variant(map[string]string{"consumers": "1", "max_records": "4000"}, 1)
	runs := map[string][]runResult{
		rawShare.name:     {run(1, 400, 1.1), run(2, 400, 1.3)},
		relayEOS.name:     {run(1, 100, 3.8), run(2, 200, 4.0)},
		v.name:            {run(1, 125, 4.2), run(2, 200, 4.4)}, // 1.25 and 1.0
		classicEOS.name:   {run(1, 150, 1.4), run(2, 150, 1.4)},
		copier.name:       {run(1, 300, 2.0), run(2, 300, 2.0)},
		relayALO.name:     {run(1, 200, 3.0), run(2, 200, 3.0)},
		copierStrict.name: {run(1, 300, 2.0), run(2, 300, 2.0)},
		classicALO.name:   {run(1, 300, 1.0), run(2, 300, 1.0)},
	}
	b := &bench{opts: options{variants: []contender{v}}}
	sr := sizeResult{Size: 200, Records: 1000}
	summarizeSize(&sr, b.contenders(), runs)
	var out strings.Builder
	printSize(&out, limitsLabel(true, 0, 4000), sr)
	s := out.String()
	for _, want := range []string{
		"throughput: 1000 records of 200 B values; broker: Kafka's default share-group limits (4,000 record locks a partition)\n",
		"µs/rec CPU",
		"relay-eos{consumers=1,max_records=4000}/relay-eos: 1.12 paired (1.08 of the medians)",
	} {
		if !strings.Contains(s, want) {
			t.Errorf("printed:\n%s\nwant %q", s, want)
		}
	}
	for _, row := range []struct{ name, cpu string }{{"relay-eos ", "3.90"}, {"relay-eos{consumers=1,max_records=4000} ", "4.30"}, {"classic-eos ", "1.40"}} {
		if !slices.ContainsFunc(strings.Split(s, "\n"), func(l string) bool {
			return strings.HasPrefix(l, "200 B   "+row.name) && strings.Contains(l, " "+row.cpu+" ")
		}) {
			t.Errorf("printed:\n%s\nwant a row of %s with %s µs/rec CPU", s, row.name, row.cpu)
		}
	}
}

func TestLimitsLabelSaysWhichBrokerSettingATableRanOn(t *testing.T) {
	for _, tc := range []struct {
		local         bool
		set, reported int
		want          string
	}{
		{true, 0, 4000, "Kafka's default share-group limits (4,000 record locks a partition)"},
		{true, 0, 0, "Kafka's default share-group limits"},
		{true, 10000, 10000, "share-group record locks raised to 10,000 a partition"},
		{true, 2000, 2000, "share-group record locks lowered to 2,000 a partition"},
		{false, 0, 6000, "the cluster's own share-group limits (6,000 record locks a partition)"},
	} {
		if got := limitsLabel(tc.local, tc.set, tc.reported); got != tc.want {
			t.Errorf("limitsLabel(%v, %d, %d) = %q, want %q", tc.local, tc.set, tc.reported, got, tc.want)
		}
	}
}

// The goals are per broker setting: relay-eos over classic-eos at the
// table's workers and over relay-alo per size, over its best variant, and
// relay-eos over classic-eos at the other worker counts reported without a
// target.
func TestGoalsArePerBrokerSetting(t *testing.T) {
	run := func(i int, rate float64) runResult { return runResult{Run: i, RecPerSec: rate} }
	v1 := relayEOS.variant(map[string]string{"consumers": "2"}, 1)
	v2 := relayEOS.variant(map[string]string{"consumers": "1"}, 2)
	alo := relayALO.variant(map[string]string{"consumers": "1"}, 3)
	size := func(eos, best float64) sizeResult {
		return sizeResult{Size: 200,
			Paired: map[string]float64{"relay-eos/classic-eos": 1.01, "relay-eos/relay-alo": 0.85},
			Ratios: map[string]float64{"relay-eos/classic-eos": 1.02, "relay-eos/relay-alo": 0.86},
			Contenders: []contenderResult{
				{Name: relayEOS.name, Runs: []runResult{run(1, eos)}},
				{Name: v1.name, Base: v1.base, Runs: []runResult{run(1, eos)}},
				{Name: v2.name, Base: v2.base, Runs: []runResult{run(1, best)}},
				{Name: alo.name, Base: alo.base, Runs: []runResult{run(1, 10*eos)}},
			}}
	}
	res := results{Workers: 2, Brokers: []brokerResult{
		{Setting: "stock", Throughput: []sizeResult{size(96, 100)}, Classic: []classicResult{{Workers: 3, Size: 200, Paired: 0.6, Ratio: 0.58}}},
		{Setting: "raised", Throughput: []sizeResult{size(94, 100)}},
	}}
	// The scaling table ran on the first setting only.
	res.Scaling = &scalingResult{Relay: []contenderResult{{Workers: 6}}, Ratios: []float64{2.0}, Describe: []string{"classic-eos", "relay-eos, 6 workers"}}
	gs := goals(res)
	find := func(broker, what string) goal {
		t.Helper()
		for _, g := range gs {
			if g.Broker == broker && g.What == what {
				return g
			}
		}
		t.Fatalf("no goal %q on %q in %+v", what, broker, gs)
		return goal{}
	}
	if g := find("stock", "200 B relay-eos/classic-eos at 2 workers"); !g.Met || g.Target != 1.0 {
		t.Errorf("%+v, want met at 1.01 >= 1.0", g)
	}
	if g := find("raised", "200 B relay-eos/relay-alo"); g.Met || g.Target != 0.9 {
		t.Errorf("%+v, want missed at 0.85 < 0.9", g)
	}
	best := "200 B relay-eos/best variant (relay-eos{consumers=1})"
	if g := find("stock", best); !g.Met || g.Value != 0.96 || g.Target != 0.95 {
		t.Errorf("%+v, want met at 0.96 >= 0.95 (the at-least-once variant is no rival)", g)
	}
	if g := find("raised", best); g.Met {
		t.Errorf("%+v, want missed at 0.94", g)
	}
	if g := find("stock", "200 B relay-eos/classic-eos at 3 workers"); !g.ReportOnly || g.Value != 0.6 {
		t.Errorf("%+v, want reported without a target", g)
	}
	if g := find("stock", "scaling: relay-eos at 6 workers / classic-eos"); !g.Met {
		t.Errorf("%+v, want met at 2.0 >= 1.8, on the first setting", g)
	}
	var out strings.Builder
	printGoals(&out, gs)
	s := out.String()
	if strings.Count(s, "goals, broker: ") != 2 || !strings.Contains(s, "goals, broker: raised") {
		t.Errorf("printed:\n%s\nwant one list per broker setting, the scaling goal in the first's", s)
	}
	if !strings.Contains(s, "reported, no target") {
		t.Errorf("printed:\n%s\nwant the 3-worker ratio reported without a target", s)
	}
}

// A relay process is scraped often where the timed span starts and ends,
// and seldom in between, where a scrape only costs it CPU.
func TestRelayProcessIsScrapedOftenOnlyNearTheEndsOfTheRun(t *testing.T) {
	for _, tc := range []struct {
		name       string
		accepted   int64
		sinceFirst time.Duration
		want       time.Duration
	}{
		{"before the first record", 0, 0, fastScrape},
		{"records polled, none accepted yet", 0, time.Second, fastScrape},
		{"a tenth done in a second: 9 s left", 100_000, time.Second, slowScrape},
		{"nine tenths done in 9 s: 1 s left", 900_000, 9 * time.Second, 125 * time.Millisecond},
		{"all but 1,000 done in 10 s: 10 ms left", 999_000, 10 * time.Second, fastScrape},
		{"all done: nothing left to time", 1_000_000, 10 * time.Second, slowScrape},
	} {
		if got := scrapeInterval(1_000_000, tc.accepted, tc.sinceFirst); got != tc.want {
			t.Errorf("%s: %s, want %s", tc.name, got, tc.want)
		}
	}
}

// The brokers' CPU a record is the median of the runs' and sits in the
// throughput table beside the contender's own, each in its column.
func TestBrokerCPUPerRecordIsPrintedBesideTheContenders(t *testing.T) {
	run := func(i int, cpu, broker float64) runResult {
		return runResult{Run: i, Workers: 2, RecPerSec: 100, CPUMicrosPerRecord: cpu, BrokerCPUMicrosPerRecord: broker}
	}
	runs := map[string][]runResult{
		relayEOS.name:   {run(1, 2.5, 9.0), run(2, 2.7, 7.0), run(3, 2.6, 8.0)},
		classicEOS.name: {run(1, 1.6, 4.5), run(2, 1.7, 4.1)},
	}
	b := &bench{opts: options{only: []string{relayEOS.name, classicEOS.name}}}
	sr := sizeResult{Size: 200, Records: 1000}
	summarizeSize(&sr, b.contenders(), runs)
	if got := sr.Contenders[0].BrokerCPUMicrosPerRecord; got != 8 {
		t.Fatalf("relay-eos broker CPU median of 9, 7, 8 = %v, want 8", got)
	}
	var out strings.Builder
	printSize(&out, "stock", sr)
	lines := strings.Split(out.String(), "\n")
	header := slices.IndexFunc(lines, func(l string) bool { return strings.Contains(l, "broker µs/rec") })
	if header < 0 {
		t.Fatalf("printed:\n%s\nwant a broker µs/rec column", out.String())
	}
	for _, row := range []struct{ name, cpu, broker string }{{"relay-eos ", "2.60", "8.00"}, {"classic-eos ", "1.65", "4.30"}} {
		if !slices.ContainsFunc(lines, func(l string) bool {
			f := strings.Fields(l)
			return strings.HasPrefix(l, "200 B   "+row.name) && len(f) >= 3 && f[len(f)-3] == row.cpu && f[len(f)-2] == row.broker
		}) {
			t.Errorf("printed:\n%s\nwant a row of %s with %s µs/rec CPU then %s broker µs/rec", out.String(), row.name, row.cpu, row.broker)
		}
	}
}

// A bench of some contenders (-contenders) prints and checks the ratios
// of those that ran, not a 0 for every pair with one that did not.
func TestRatiosOfContendersThatDidNotRunAreLeftOut(t *testing.T) {
	run := func(i int, rate float64) runResult {
		return runResult{Run: i, Workers: 2, RecPerSec: rate, CPUMicrosPerRecord: 2, BrokerCPUMicrosPerRecord: 5}
	}
	runs := map[string][]runResult{
		relayEOS.name: {run(1, 80), run(2, 90)},
		relayALO.name: {run(1, 100), run(2, 100)},
		copier.name:   {run(1, 200), run(2, 200)},
	}
	b := &bench{opts: options{only: []string{copier.name, relayALO.name, relayEOS.name}}}
	sr := sizeResult{Size: 200, Records: 1000}
	summarizeSize(&sr, b.contenders(), runs)
	if _, ok := sr.Paired["relay-eos/classic-eos"]; ok {
		t.Fatalf("paired ratios %v: relay-eos/classic-eos without classic-eos", sr.Paired)
	}
	if got := sr.Paired["relay-eos/relay-alo"]; math.Abs(got-0.85) > 1e-9 {
		t.Fatalf("relay-eos/relay-alo paired = %v, want 0.85", got)
	}
	var out strings.Builder
	printSize(&out, "stock", sr)
	s := out.String()
	for _, absent := range []string{"classic-eos", "raw-share", "copier-strict", " 0.00"} {
		if strings.Contains(s, absent) {
			t.Errorf("printed:\n%s\nwant no %q", s, absent)
		}
	}
	if !strings.Contains(s, "relay-eos/relay-alo 0.85") {
		t.Errorf("printed:\n%s\nwant relay-eos/relay-alo 0.85", s)
	}
	gs := brokerGoals(brokerResult{Setting: "stock", Throughput: []sizeResult{sr}}, 2)
	var whats []string
	for _, g := range gs {
		whats = append(whats, g.What)
	}
	want := []string{"200 B relay-eos/relay-alo", "200 B relay-alo/copier", "200 B relay-eos/copier"}
	if !slices.Equal(whats, want) {
		t.Fatalf("goals %q, want %q (none of classic-eos, which did not run)", whats, want)
	}
	var sum strings.Builder
	if g := printSummary(&sum, "stock", []sizeResult{{Size: 1024, Ratios: map[string]float64{}}}); g != 0 || sum.Len() != 0 {
		t.Fatalf("summary without relay-alo = %v, printed %q; want 0 and nothing", g, sum.String())
	}
}

// With -cross, relay-eos-cross sits beside relay-eos: its paired ratio
// among the table's ratios, and a table of its own giving both rows'
// medians, cross over same (paired, and of the medians) and the CPU a
// record, with a goal reported without a target. Without it, none of it.
func TestCrossClusterIsComparedWithRelayEOSSideBySide(t *testing.T) {
	run := func(i int, rate, cpu, broker float64) runResult {
		return runResult{Run: i, Workers: 2, RecPerSec: rate, CPUMicrosPerRecord: cpu, BrokerCPUMicrosPerRecord: broker}
	}
	runs := map[string][]runResult{
		relayEOS.name:      {run(1, 100, 3.0, 10), run(2, 200, 3.2, 12), run(3, 300, 3.1, 11)},
		relayEOSCross.name: {run(1, 90, 3.6, 14), run(2, 120, 3.4, 13), run(3, 270, 3.5, 15)}, // 0.9, 0.6, 0.9
	}
	b := &bench{opts: options{cross: true, only: []string{relayEOS.name}}}
	sr := sizeResult{Size: 1024, Records: 1000}
	summarizeSize(&sr, b.contenders(), runs)
	want := crossResult{Size: 1024, SameRecPerSec: 200, CrossRecPerSec: 120, Paired: 0.9, OfMedians: 0.6,
		SameCPU: 3.1, CrossCPU: 3.5, SameBrokerCPU: 11, CrossBrokerCPU: 14}
	got := sr.CrossCluster
	if got == nil || got.Size != want.Size || got.SameRecPerSec != want.SameRecPerSec || got.CrossRecPerSec != want.CrossRecPerSec ||
		math.Abs(got.Paired-want.Paired) > 1e-9 || math.Abs(got.OfMedians-want.OfMedians) > 1e-9 ||
		got.SameCPU != want.SameCPU || got.CrossCPU != want.CrossCPU || got.SameBrokerCPU != want.SameBrokerCPU || got.CrossBrokerCPU != want.CrossBrokerCPU {
		t.Fatalf("cross-cluster result %+v, want %+v", got, want)
	}
	if p := sr.Paired["relay-eos-cross/relay-eos"]; math.Abs(p-0.9) > 1e-9 {
		t.Fatalf("paired ratios %v, want relay-eos-cross/relay-eos 0.9", sr.Paired)
	}

	var table strings.Builder
	printSize(&table, "stock", sr)
	for _, w := range []string{"relay-eos-cross/relay-eos 0.60", "relay-eos-cross/relay-eos 0.90", crossNote} {
		if !strings.Contains(table.String(), w) {
			t.Errorf("throughput table:\n%s\nwant %q", table.String(), w)
		}
	}
	var out strings.Builder
	printCross(&out, "stock", []sizeResult{sr})
	lines := strings.Split(out.String(), "\n")
	if !strings.Contains(out.String(), "exactly-once across two clusters (relay-eos-cross) against one (relay-eos); broker: stock\n") {
		t.Errorf("printed:\n%s\nwant the title with the broker setting", out.String())
	}
	row := slices.IndexFunc(lines, func(l string) bool { return strings.HasPrefix(l, "1024 B ") })
	if row < 0 || !slices.Equal(strings.Fields(lines[row]), []string{"1024", "B", "200", "120", "0.60", "0.90", "3.10", "3.50", "11.00", "14.00"}) {
		t.Errorf("printed:\n%s\nwant the row 1024 B: same 200, cross 120 rec/s, 0.60 of the medians, 0.90 paired, CPU 3.10 and 3.50, brokers 11.00 and 14.00", out.String())
	}

	g := findGoal(t, goals(results{Brokers: []brokerResult{{Setting: "stock", Throughput: []sizeResult{sr}}}}), "1024 B relay-eos-cross/relay-eos")
	if !g.ReportOnly || !g.Met || math.Abs(g.Value-0.9) > 1e-9 || math.Abs(g.OfMedians-0.6) > 1e-9 || g.Broker != "stock" {
		t.Fatalf("goal %+v, want reported without a target at 0.90 paired (0.60 of the medians) on stock", g)
	}

	delete(runs, relayEOSCross.name)
	plain := sizeResult{Size: 1024, Records: 1000}
	summarizeSize(&plain, (&bench{opts: options{only: []string{relayEOS.name}}}).contenders(), runs)
	out.Reset()
	printCross(&out, "stock", []sizeResult{plain})
	if plain.CrossCluster != nil || out.Len() > 0 {
		t.Fatalf("without -cross: %+v, printed %q; want no comparison", plain.CrossCluster, out.String())
	}
	for _, g := range goals(results{Brokers: []brokerResult{{Setting: "stock", Throughput: []sizeResult{plain}}}}) {
		if strings.Contains(g.What, relayEOSCross.name) {
			t.Fatalf("without -cross: goal %+v", g)
		}
	}
}
