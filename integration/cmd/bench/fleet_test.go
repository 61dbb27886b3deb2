package main

import (
	"strings"
	"testing"
	"time"
)

// fleetRun makes the samples of a schedule whose output rate at second t
// is rate(t), one sample a second until end, with one CPU-second of relay
// time a second.
func fleetRun(end time.Duration, instances func(t time.Duration) int, rate func(t time.Duration) float64) []fleetSample {
	var out []fleetSample
	total := 0.0
	for t := time.Second; t <= end; t += time.Second {
		total += rate(t)
		out = append(out, fleetSample{At: t, Instances: instances(t), Output: int64(total), RelayCPU: t, BrokerCPU: t / 2, Lag: 50_000})
	}
	return out
}

func TestPlateauStatsGivesEachPlateauItsRateRatioAndTimeToReachIt(t *testing.T) {
	// One instance at 100/s for 60 s, then two that reach 190/s after a
	// 10 s ramp, then one again, down at once. The first sample is a
	// second in, so the first plateau's first window ends at 6 s.
	changes := []fleetChange{{0, 1}, {60 * time.Second, 2}, {120 * time.Second, 1}}
	inst := func(t time.Duration) int {
		switch {
		case t < 60*time.Second:
			return 1
		case t < 120*time.Second:
			return 2
		}
		return 1
	}
	rate := func(t time.Duration) float64 {
		switch {
		case t <= 60*time.Second:
			return 100
		case t <= 70*time.Second:
			return 100 + 9*float64(t/time.Second-60)
		case t <= 120*time.Second:
			return 190
		}
		return 100
	}
	stats := plateauStats(fleetRun(180*time.Second, inst, rate), changes, 180*time.Second, 5*time.Second)
	if len(stats) != 3 {
		t.Fatalf("%d plateaus, want 3", len(stats))
	}
	for i, want := range []struct {
		median, ratio float64
		to            time.Duration
	}{{100, 1, 6 * time.Second}, {190, 0.95, 10 * time.Second}, {100, 1, 5 * time.Second}} {
		s := stats[i]
		if s.Median != want.median || abs(s.Ratio-want.ratio) > 0.001 || s.ToPlateau != want.to {
			t.Errorf("plateau %d: median %.1f ratio %.3f to plateau %s, want %.1f %.3f %s", i+1, s.Median, s.Ratio, s.ToPlateau, want.median, want.ratio, want.to)
		}
		if cores := s.RelayCPU.Seconds() / (s.End - s.Start).Seconds(); abs(cores-1) > 0.01 {
			t.Errorf("plateau %d: relay CPU %.2f cores, want 1", i+1, cores)
		}
	}
}

func TestPlateauStatsSaysWhenAPlateauIsNeverReached(t *testing.T) {
	// The rate climbs all through the second plateau: its early windows
	// are far from the median of its second half.
	changes := []fleetChange{{0, 1}, {20 * time.Second, 2}}
	rate := func(t time.Duration) float64 {
		if t <= 20*time.Second {
			return 100
		}
		return 100 * float64(t/time.Second-19)
	}
	stats := plateauStats(fleetRun(40*time.Second, func(time.Duration) int { return 1 }, rate), changes, 40*time.Second, 5*time.Second)
	if got := stats[1].ToPlateau; got < 10*time.Second {
		t.Errorf("a climbing plateau reached in %s", got)
	}
}

func TestSumMetricsAddsEachNameOverItsLabels(t *testing.T) {
	text := `# HELP sharerelay_poll_records x
sharerelay_poll_records{worker="0"} 750
sharerelay_poll_records{worker="1"} 750
sharerelay_released_on_last_delivery_total{worker="0"} 0
sharerelay_poll_records_other 3
`
	got, err := sumMetrics(strings.NewReader(text), "sharerelay_released_on_last_delivery_total", "sharerelay_poll_records", "absent")
	if err != nil || got[0] != 0 || got[1] != 1500 || got[2] != 0 {
		t.Fatalf("sumMetrics = %v, %v; want [0 1500 0]", got, err)
	}
}

func TestFleetFlagsAreCheckedTogether(t *testing.T) {
	for _, c := range []struct {
		args []string
		err  string
	}{
		{[]string{"-fleet"}, "-relay-bin"},
		{[]string{"-fleet", "-relay-bin", "x", "-fleet-schedule", "1,0"}, "-fleet-schedule"},
		{[]string{"-fleet", "-relay-bin", "x", "-fleet-plateau", "5s"}, "-fleet-plateau"},
		{[]string{"-fleet", "-relay-bin", "x", "-nodes", "3"}, "one broker"},
		{[]string{"-fleet", "-relay-bin", "x", "-fleet-schedule", "1,2", "-fleet-plateau", "30s"}, ""},
	} {
		o, err := parseFlags(c.args)
		switch {
		case c.err == "" && err != nil:
			t.Errorf("%v: %v", c.args, err)
		case c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)):
			t.Errorf("%v: error %v, want one naming %s", c.args, err, c.err)
		case c.err == "" && (len(o.fleetOpts.schedule) != 2 || o.fleetOpts.plateau != 30*time.Second):
			t.Errorf("%v: schedule %v plateau %s", c.args, o.fleetOpts.schedule, o.fleetOpts.plateau)
		}
	}
}
