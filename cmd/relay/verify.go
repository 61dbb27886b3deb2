package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/sharerelay/sharerelay/audit"
	"github.com/sharerelay/sharerelay/config"
	"github.com/sharerelay/sharerelay/internal/kafkaopts"
	"github.com/sharerelay/sharerelay/transform"
)

// cmdVerify audits a pipeline after the fact: every source record must be
// in the output or the dead letters exactly once. Exit 0 only when exact.
func cmdVerify(c *command, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet(c.name, flag.ContinueOnError)
	cfg := cfgFlag(fs)
	asJSON := fs.Bool("json", false, "print the report as JSON")
	timeout := fs.Duration("timeout", 5*time.Minute, "give up after this long")
	pos, code, ok := c.parse(fs, args, stdout, stderr)
	if !ok {
		return code
	}
	p, kafka, code := c.loadPipeline(*cfg, pos, true, stderr)
	if code != exitOK {
		return code
	}
	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()
	rep, err := audit.Verify(ctx, verifyConfig(p, kafka))
	if err != nil {
		// Not exact as far as anyone can tell: the audit could not be
		// done, which is no usage or configuration error.
		fmt.Fprintln(stderr, "relay verify:", err)
		return exitFailed
	}
	if *asJSON {
		if err := printJSON(stdout, rep); err != nil {
			fmt.Fprintln(stderr, "relay verify:", err)
			return exitFailed
		}
	} else {
		printReport(stdout, p.Name, rep)
	}
	if !rep.Exact {
		return exitFailed
	}
	return exitOK
}

// verifyConfig derives what to audit from a pipeline: its sources (read
// with the group's isolation level), every topic a route may write to, the
// dead-letter topic and the share group. kafka are the client options of
// the pipeline's clusters (kafkaopts), so that the audit connects as the
// relay does: the sources and the group on the source cluster, the rest
// on the sink cluster.
func verifyConfig(p *config.Pipeline, kafka *kafkaopts.Clusters) audit.VerifyConfig {
	var outputs []string
	for _, t := range p.OutputTopics() {
		if t != p.DeadLetter.Topic {
			outputs = append(outputs, t)
		}
	}
	var ledger string
	if p.Delivery == config.ExactlyOnce {
		ledger = p.Ledger.Topic
	}
	var clusters *audit.Clusters
	if p.CrossCluster() {
		clusters = &audit.Clusters{
			Source: strings.Join(p.SourceCluster().Brokers, ","),
			Sink:   strings.Join(p.SinkCluster().Brokers, ","),
		}
	}
	return audit.VerifyConfig{
		Ledger:           ledger,
		Generation:       int64(p.Ledger.Generation),
		ClientOpts:       kafka.Sink.Opts(),
		SourceClientOpts: kafka.Source.Opts(),
		Clusters:         clusters,
		Sources:          p.Source.Topics,
		SourceCommitted:  p.Source.IsolationLevel != "read_uncommitted",
		Outputs:          outputs,
		DeadLetter:       p.DeadLetter.Topic,
		Group:            p.Source.Group,
		AtMostOnce:       transform.MayDrop(p.Transforms),
	}
}

func printReport(w io.Writer, name string, r *audit.Report) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(w, "pipeline %s — check: %s\n\n", name, r.Check)
	fmt.Fprintln(tw, "source partition\trecords\toutput\tdead-lettered\tlost\tincomplete\tfiltered\tduplicated\tboth\tunexpected\tlag\t")
	row := func(pr audit.PartitionReport, label string) {
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t\n", label, pr.Sources, pr.Output, pr.DeadLettered,
			pr.Lost, pr.Incomplete, pr.Filtered, pr.Duplicated, pr.Both, pr.Unexpected, pr.Lag)
	}
	for _, pr := range r.Partitions {
		row(pr, fmt.Sprintf("%s[%d]", pr.Topic, pr.Partition))
	}
	row(r.Total, "total")
	tw.Flush()
	fmt.Fprintf(w, "\noutput and dead-letter records (read_committed): %d; aborted writes (read_uncommitted only): %d; unlabelled: %d; beyond the source snapshot: %d\n",
		r.OutputRecords, r.AbortedRecords, r.Unlabelled, r.BeyondSnapshot)
	printSamples(w, r.Partitions, r.Replays)
	if l := r.Ledger; l != nil {
		fmt.Fprintf(w, "claim ledger: %d claims; %d orphaned (their marker was lost), settled %d committed / %d aborted; %d pending; %d unsettled\n",
			l.Claims, l.Orphaned, l.SettledCommitted, l.SettledAborted, l.Pending, len(l.Unsettled))
		for _, u := range l.Unsettled {
			fmt.Fprintf(w, "unsettled claim (its records stay blocked): %s\n", u)
		}
	}
	if c := r.Clusters; c != nil {
		fmt.Fprintf(w, "read from two clusters: sources and share group on the source cluster %s, outputs, dead letters and ledger on the sink cluster %s\n", c.Source, c.Sink)
	}
	verdict := "EXACT"
	if !r.Exact {
		verdict = "NOT EXACT"
	}
	fmt.Fprintf(w, "verdict: %s (%s)\n", verdict, r.Elapsed)
}

// printSamples prints the sample offsets of each partition's anomalies
// and what replays of dead letters wrote: the lines relay verify and
// relay audit --once share.
func printSamples(w io.Writer, parts []audit.PartitionReport, rr *audit.ReplayReport) {
	for _, pr := range parts {
		if len(pr.LostSample) > 0 {
			fmt.Fprintf(w, "lost in %s[%d], e.g. offsets %v\n", pr.Topic, pr.Partition, pr.LostSample)
		}
		if len(pr.DuplicatedSample) > 0 {
			fmt.Fprintf(w, "duplicated in %s[%d], e.g. offsets %v\n", pr.Topic, pr.Partition, pr.DuplicatedSample)
		}
		if len(pr.IncompleteSample) > 0 {
			fmt.Fprintf(w, "fan-outs missing outputs in %s[%d], e.g. offsets %v\n", pr.Topic, pr.Partition, pr.IncompleteSample)
		}
	}
	if rr == nil {
		return
	}
	fmt.Fprintf(w, "replayed dead letters (relay dlq replay): %d: %d to the output (%d records), %d dead-lettered again; %d replayed more than once, %d both\n",
		rr.DeadLetters, rr.Output, rr.Outputs, rr.DeadLettered, rr.Duplicated, rr.Both)
	if len(rr.DuplicatedSample) > 0 {
		fmt.Fprintf(w, "dead letters replayed more than once, e.g. %v\n", rr.DuplicatedSample)
	}
}
