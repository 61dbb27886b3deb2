// Package demo runs the BookNest pipeline (configs/booknest-packing.yaml) on
// an in-process kfake cluster: the embedded default behind `make demo`. It
// needs nothing but Go, finishes in seconds, and checks its own numbers.
//
// kfake is a demo and unit-test broker, never the proof of a guarantee: the
// real-broker tests in integration/ are.
package demo

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strconv"
	"text/tabwriter"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sharerelay/sharerelay/audit"
	"github.com/sharerelay/sharerelay/config"
	"github.com/sharerelay/sharerelay/configs"
	"github.com/sharerelay/sharerelay/eos"
	"github.com/sharerelay/sharerelay/relay"
)

// BookNest's numbers, from the share-groups tutorial.
const (
	Orders         = 2000
	Partitions     = 3
	BadAddress     = 500 // order_id % 500 == 0 → dead letter
	PrinterJam     = 7   // order_id % 7 == 0 → released on its first delivery
	WantJobs       = Orders - Orders/BadAddress
	WantDeadLetter = Orders / BadAddress
)

// WantRedeliveries is the number of orders released once: multiples of 7 up
// to 2,000 that are not also multiples of 500 (none is).
var WantRedeliveries = func() int {
	n := 0
	for i := 1; i <= Orders; i++ {
		if i%PrinterJam == 0 && i%BadAddress != 0 {
			n++
		}
	}
	return n
}()

// Result is what one demo run measured.
type Result struct {
	Jobs, DeadLetters, Duplicates, Unlabelled int
	Redeliveries                              int
	PerWorker                                 map[string]int
	Lag                                       int64
	Elapsed                                   time.Duration
}

// OK reports whether every number is what BookNest expects.
func (r Result) OK(workers int) bool {
	if r.Jobs != WantJobs || r.DeadLetters != WantDeadLetter || r.Duplicates != 0 ||
		r.Unlabelled != 0 || r.Redeliveries != WantRedeliveries || r.Lag != 0 || len(r.PerWorker) != workers {
		return false
	}
	for _, n := range r.PerWorker {
		if n == 0 {
			return false
		}
	}
	return true
}

// Run starts a kfake cluster, seeds the orders, runs the shipped BookNest
// pipeline until every order is packed or dead-lettered, prints a summary to
// out and returns an error unless the numbers are right.
func Run(ctx context.Context, out io.Writer, log *slog.Logger) error {
	start := time.Now()
	p, err := config.Parse("configs/booknest-packing.yaml", configs.BookNest(), func(string) (string, bool) { return "", false })
	if err != nil {
		return fmt.Errorf("demo: %w", err)
	}
	cluster, err := newCluster(p)
	if err != nil {
		return fmt.Errorf("demo: starting kfake: %w", err)
	}
	defer cluster.Close()
	p.Brokers = cluster.ListenAddrs()
	p.Metrics.Listen = ""

	reg := prometheus.NewRegistry()
	rl, err := relay.New(relay.Options{Pipeline: p, Instance: "demo", Registerer: reg, Logger: log,
		LedgerMarkers: eos.MarkersAtSameOrNextEpoch}) // kfake writes markers at the records' epoch
	if err != nil {
		return fmt.Errorf("demo: %w", err)
	}
	rctx, stop := context.WithCancel(ctx)
	defer stop()
	runErr := make(chan error, 1)
	go func() { runErr <- rl.Run(rctx) }()

	seeds := []kgo.Opt{kgo.SeedBrokers(p.Brokers...)}
	admCl, err := kgo.NewClient(seeds...)
	if err != nil {
		return fmt.Errorf("demo: %w", err)
	}
	defer admCl.Close()
	adm := kadm.NewClient(admCl)

	// Seed once every worker has joined the share group, so the work is
	// shared from the first record on.
	if err := waitMembers(ctx, adm, p.Source.Group, p.Workers, runErr); err != nil {
		return err
	}
	if err := seed(ctx, admCl, p.Source.Topics[0]); err != nil {
		return err
	}

	if err := waitDone(ctx, seeds, adm, p, runErr, log); err != nil {
		return err
	}
	stop()
	if err := <-runErr; err != nil {
		return fmt.Errorf("demo: relay: %w", err)
	}
	// Final numbers, after the relay has flushed its acknowledgements and
	// left the group.
	res, err := measure(ctx, seeds, adm, p)
	if err != nil {
		return fmt.Errorf("demo: %w", err)
	}
	fams, _ := reg.Gather()
	res.Redeliveries = int(sum(fams, "sharerelay_redeliveries_total", ""))
	res.PerWorker = perLabel(fams, "sharerelay_records_polled_total", "worker")
	res.Elapsed = time.Since(start)
	print(out, p, res)
	if !res.OK(p.Workers) {
		return errors.New("demo: the numbers are not what BookNest expects")
	}
	return nil
}

// newCluster starts the one-broker kfake cluster with p's source, output
// and dead-letter topics.
func newCluster(p *config.Pipeline) (*kfake.Cluster, error) {
	return kfake.NewCluster(
		kfake.NumBrokers(1),
		kfake.SeedTopics(Partitions, p.Source.Topics...),
		kfake.SeedTopics(Partitions, p.Output.Topic),
		kfake.SeedTopics(1, p.DeadLetter.Topic),
		// kfake reads only broker-level group.share.* settings (it ignores
		// per-group share configs). A fast heartbeat spreads the
		// partitions over all four workers quickly.
		kfake.BrokerConfigs(map[string]string{
			"group.share.heartbeat.interval.ms": "200",
		}),
	)
}

// waitDone measures every 200ms, for up to 60s, until every order is packed
// or dead-lettered and the share group has no lag; it fails when the relay
// stops first.
func waitDone(ctx context.Context, seeds []kgo.Opt, adm *kadm.Client, p *config.Pipeline, runErr <-chan error, log *slog.Logger) error {
	var res Result
	deadline := time.NewTimer(60 * time.Second)
	defer deadline.Stop()
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case err := <-runErr:
			return fmt.Errorf("demo: relay stopped early: %w", err)
		case <-deadline.C:
			return fmt.Errorf("demo: not done after 60s: %+v", res)
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
		}
		var err error
		if res, err = measure(ctx, seeds, adm, p); err != nil {
			log.Debug("measuring", "err", err)
			continue
		}
		if res.Jobs+res.DeadLetters >= Orders && res.Lag == 0 {
			return nil
		}
	}
}

func waitMembers(ctx context.Context, adm *kadm.Client, group string, n int, runErr <-chan error) error {
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case err := <-runErr:
			return fmt.Errorf("demo: relay stopped early: %w", err)
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
		d, err := adm.DescribeShareGroups(ctx, group)
		if err == nil && len(d[group].Members) >= n {
			return nil
		}
	}
	return fmt.Errorf("demo: %d workers did not join share group %s within 30s", n, group)
}

func seed(ctx context.Context, cl *kgo.Client, topic string) error {
	recs := make([]*kgo.Record, 0, Orders)
	for i := 1; i <= Orders; i++ {
		recs = append(recs, &kgo.Record{
			Topic: topic,
			Key:   strconv.AppendInt(nil, int64(i), 10),
			Value: fmt.Appendf(nil, `{"order_id": %d}`, i),
		})
	}
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		return fmt.Errorf("demo: seeding %s: %w", topic, err)
	}
	return nil
}

func measure(ctx context.Context, seeds []kgo.Opt, adm *kadm.Client, p *config.Pipeline) (Result, error) {
	var res Result
	mctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	jobs, err := audit.ReadCommitted(mctx, seeds, p.Output.Topic)
	if err != nil {
		return res, err
	}
	dlq, err := audit.ReadCommitted(mctx, seeds, p.DeadLetter.Topic)
	if err != nil {
		return res, err
	}
	lag, err := audit.ShareGroupLag(mctx, adm, p.Source.Group, p.Source.Topics...)
	if err != nil {
		return res, err
	}
	res.Jobs, res.DeadLetters = jobs.Records, dlq.Records
	res.Duplicates = len(jobs.Duplicates()) + len(dlq.Duplicates())
	for s := range dlq.BySource {
		if jobs.BySource[s] > 0 {
			res.Duplicates++ // in both: counted as a duplicate
		}
	}
	res.Unlabelled = jobs.Unlabelled + dlq.Unlabelled
	res.Lag = audit.TotalLag(lag)
	return res, nil
}

func print(out io.Writer, p *config.Pipeline, r Result) {
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "BookNest on an embedded kfake cluster: %d orders, %d partitions, %d workers (%s)\n\n", Orders, Partitions, p.Workers, p.Delivery)
	fmt.Fprintln(tw, "\texpected\tgot\t")
	row := func(name string, want, got any) {
		mark := "ok"
		if fmt.Sprint(want) != fmt.Sprint(got) {
			mark = "MISMATCH"
		}
		fmt.Fprintf(tw, "%s\t%v\t%v\t%s\n", name, want, got, mark)
	}
	row("packing jobs ("+p.Output.Topic+")", WantJobs, r.Jobs)
	row("dead letters ("+p.DeadLetter.Topic+")", WantDeadLetter, r.DeadLetters)
	row("redeliveries (printer jams)", WantRedeliveries, r.Redeliveries)
	row("duplicates by source record", 0, r.Duplicates)
	row("share-group lag", 0, r.Lag)
	busy := 0
	for _, n := range r.PerWorker {
		if n > 0 {
			busy++
		}
	}
	row("workers that did work", p.Workers, busy)
	for w := 0; w < p.Workers; w++ {
		fmt.Fprintf(tw, "  worker %d deliveries\t\t%d\t\n", w, r.PerWorker[strconv.Itoa(w)])
	}
	fmt.Fprintf(tw, "\nelapsed %s\n", r.Elapsed.Round(10*time.Millisecond))
	tw.Flush()
}

func sum(fams []*dto.MetricFamily, name, _ string) float64 {
	var s float64
	for _, f := range fams {
		if f.GetName() != name {
			continue
		}
		for _, m := range f.Metric {
			s += m.GetCounter().GetValue()
		}
	}
	return s
}

func perLabel(fams []*dto.MetricFamily, name, label string) map[string]int {
	out := make(map[string]int)
	for _, f := range fams {
		if f.GetName() != name {
			continue
		}
		for _, m := range f.Metric {
			for _, l := range m.Label {
				if l.GetName() == label {
					out[l.GetValue()] += int(m.GetCounter().GetValue())
				}
			}
		}
	}
	return out
}
