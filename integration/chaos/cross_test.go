package chaos

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/sharerelay/sharerelay/audit"
	"github.com/sharerelay/sharerelay/integration/harness"
)

// The cross-cluster scenarios: the source topic and the share group on one
// single-node KRaft cluster, the outputs, dead letters and claim ledger on
// another (the pipeline's source.cluster), each reached by every relay
// slot through proxies of its own, so that a fault can cut the relays off
// from one cluster while the other stays in reach. The window they aim at
// is the one a second cluster opens: a transaction committed on the sink
// whose records' acknowledgements never reach the source, so the records
// come back and the claim ledger must show them committed.

// cross reports whether the scenario runs across two clusters.
func (s *scenario) cross() bool { return s.src != s.env }

// envs returns the scenario's clusters: the sink, and the source when it
// is another.
func (s *scenario) envs() []*env {
	if s.cross() {
		return []*env{s.src, s.env}
	}
	return []*env{s.env}
}

// side picks the cluster a network fault goes toward: in a cross-cluster
// scenario the one fewer faults went toward so far (either on a tie), so
// that even a short run cuts each; else the one cluster, without drawing
// from the schedule, so that the seeds of one cluster replay as before.
func (s *scenario) side() *env {
	if !s.cross() {
		return s.env
	}
	s.faultMu.Lock()
	src, sink := s.toward[0], s.toward[1]
	s.faultMu.Unlock()
	switch {
	case src < sink:
		return s.src
	case sink < src:
		return s.env
	}
	return s.envs()[s.intn(2)]
}

// moveSource puts the pipeline's source topic on the source cluster:
// harness.NewPipeline created every topic on the sink (sinkSeeds) and
// wrote a file of one cluster. The sink's copy is deleted, so that a relay
// reading the source from the wrong cluster fails instead of waiting on
// an empty topic, and the file gets a source.cluster whose brokers each
// relay process takes from CHAOS_SOURCE_BROKERS (its slot's proxies).
func moveSource(ctx context.Context, p *harness.Pipeline, sinkSeeds, sourceSeeds []string, partitions int32) error {
	if err := harness.DeleteTopics(ctx, sinkSeeds, p.Source); err != nil {
		return fmt.Errorf("moving %s to the source cluster: %w", p.Source, err)
	}
	if err := harness.CreateTopics(ctx, sourceSeeds, harness.Topic{Name: p.Source, Partitions: partitions}); err != nil {
		return fmt.Errorf("moving %s to the source cluster: %w", p.Source, err)
	}
	b, err := os.ReadFile(p.Path)
	if err != nil {
		return fmt.Errorf("adding source.cluster: %w", err)
	}
	b, err = withSourceCluster(b, `"${CHAOS_SOURCE_BROKERS}"`)
	if err != nil {
		return fmt.Errorf("adding source.cluster to %s: %w", p.Path, err)
	}
	return os.WriteFile(p.Path, b, 0o644)
}

// withSourceCluster returns the pipeline file b with source.cluster.brokers
// set to brokers (a YAML flow sequence's items).
func withSourceCluster(b []byte, brokers string) ([]byte, error) {
	const key = "\nsource:\n"
	if bytes.Count(b, []byte(key)) != 1 {
		return nil, fmt.Errorf("no single top-level source: section")
	}
	return bytes.Replace(b, []byte(key), []byte(key+"  cluster:\n    brokers: ["+brokers+"]\n"), 1), nil
}

// crossBrokerNemesis bounces the two clusters' brokers in turn, one at a
// time, until end: first each killed -9 once, in a random order, at about
// 15 % and 45 % of the faults; then one every 30–60 s while 30 s of faults
// remain, killed -9 two times in three, else stopped cleanly.
func (s *scenario) crossBrokerNemesis(start, end time.Time) {
	sides := s.envs()
	if s.intn(2) == 0 {
		sides[0], sides[1] = sides[1], sides[0]
	}
	dur := end.Sub(start)
	for i := 0; !s.stopping.Load(); i++ {
		var at time.Time
		switch i {
		case 0:
			at = start.Add(dur*15/100 + s.between(0, dur/20))
		case 1:
			at = start.Add(dur*45/100 + s.between(0, dur/20))
		default:
			at = time.Now().Add(s.between(30*time.Second, 60*time.Second))
			if end.Sub(at) < 30*time.Second {
				return
			}
		}
		s.sleep(time.Until(at))
		if s.stopping.Load() {
			return
		}
		hard := i < 2 || s.intn(3) != 0
		if err := s.bounce(sides[i%2], hard, s.between(0, 3*time.Second)); err != nil {
			s.t.Error(err)
			return
		}
	}
}

// relayVerify runs `relay verify --json` on the pipeline file, as an
// operator would across the two clusters: the sink and the source through
// their direct listeners. It fails the test when the command cannot say
// (an exit other than 0, exact, or 1, not exact, or no report).
func (s *scenario) relayVerify() *audit.Report {
	s.t.Helper()
	c := harness.Command{Name: "relay verify", Path: relayBin, Args: []string{"verify", "-c", s.p.Path, "--json", "--timeout", "5m"},
		LogPath: filepath.Join(s.dir, "verify.log"), StdoutPath: filepath.Join(s.dir, "verify.json")}
	src, sink := strings.Join(s.src.direct, ","), strings.Join(s.env.direct, ",")
	c.Env = []string{"CHAOS_BROKERS=" + sink, "CHAOS_SOURCE_BROKERS=" + src, "CHAOS_METRICS_ADDR="}
	pr, err := harness.Start(c)
	if err != nil {
		s.t.Fatalf("relay verify: %v", err)
	}
	code, err := pr.Wait(6 * time.Minute)
	if err != nil {
		pr.Kill()
	}
	out, _ := os.ReadFile(c.StdoutPath)
	var rep audit.Report
	jerr := json.Unmarshal(out, &rep)
	if err != nil || jerr != nil || code != 0 && code != 1 || rep.Exact != (code == 0) {
		s.t.Fatalf("relay verify: exit %d (%v), report %v:\n%s\n%s", code, err, jerr, out, pr.LogTail(3000))
	}
	// The report names where it read each side: a verify that read
	// the source from the sink would find no source topic there, or
	// another one.
	if c := rep.Clusters; c == nil || c.Source != src || c.Sink != sink {
		s.t.Fatalf("relay verify read from clusters %+v, want source %s and sink %s", c, src, sink)
	}
	verdict := "EXACT"
	if !rep.Exact {
		verdict = "NOT EXACT"
	}
	s.t.Logf("relay verify across the clusters (source %s, sink %s): %s, exit %d", src, sink, verdict, code)
	return &rep
}
