package preflight

import (
	"context"
	"crypto/x509"
	"encoding/pem"
	"os"
	"slices"
	"strings"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kversion"

	"github.com/sharerelay/sharerelay/config"
	"github.com/sharerelay/sharerelay/internal/brokerfloor"
)

// crossCluster runs the checks of a pipeline with source.cluster: those of
// the source cluster (its share group and source topics) with sourceOpts,
// then those of the sink cluster (the topics the relay writes, the
// transactions) with sinkOpts, each line named with its cluster. A cluster
// out of reach skips its own checks, not the other's. With both reached,
// one line compares their cluster ids.
func (c *checker) crossCluster(ctx context.Context, sinkOpts, sourceOpts []kgo.Opt) {
	c.src = &side{of: c.p.SourceCluster(), role: brokerfloor.Source, rep: c.rep}
	c.sink = &side{of: c.p.SinkCluster(), role: brokerfloor.Sink, rep: c.rep}
	if c.open(ctx, c.src, sourceOpts) {
		defer c.src.cl.Close()
		c.features(c.src)
		c.topics(ctx, c.src)
		c.group(ctx)
		c.cluster(ctx, c.src)
		c.shareGroupLimits(ctx)
		c.brokerDLQ()
	}
	if c.open(ctx, c.sink, sinkOpts) {
		defer c.sink.cl.Close()
		c.features(c.sink)
		c.topics(ctx, c.sink)
		c.replication(ctx)
		c.transactionalIDs(ctx)
		c.cluster(ctx, c.sink)
	}
	if c.src.cl != nil && c.sink.cl != nil {
		c.clusterIDs()
	}
	c.acquireMode()
}

// clusterIDs compares the two clusters' ids, by the rule the relay starts
// by: source.cluster naming the sink cluster under other addresses is one
// cluster read and written through two connections, a warning, and a
// failure when a topic the relay writes has a source topic's name, for
// the pipeline would then consume its own output.
func (c *checker) clusterIDs() {
	const check = "cluster ids"
	src, sink := c.src.clusterID, c.sink.clusterID
	switch {
	case src == "" || sink == "":
		c.rep.add(Warn, check, "not compared: the source cluster's is %q, the sink cluster's %q; the relay takes clusters without one for two", src, sink)
		return
	case src != sink:
		c.rep.add(OK, check, "two clusters: the source cluster is %s, the sink cluster %s", src, sink)
		return
	}
	var same []string
	for _, t := range c.p.OutputTopics() {
		if slices.Contains(c.p.Source.Topics, t) {
			same = append(same, c.writtenRole(t)+" topic "+t)
		}
	}
	if len(same) > 0 {
		c.rep.add(Fail, check, "source.cluster is the sink cluster (both are %s) and %s is a source topic too: the pipeline would consume its own output; point source.cluster at the cluster the source topics live on, or rename the topic", src, strings.Join(same, " and "))
		return
	}
	c.rep.add(Warn, check, "source.cluster is the sink cluster (both are %s): one cluster needs no source.cluster, leave it out", src)
}

// writtenRole names what the relay writes to topic t: "output",
// "dead-letter" or "route".
func (c *checker) writtenRole(t string) string {
	switch t {
	case c.p.Output.Topic:
		return "output"
	case c.p.DeadLetter.Topic:
		return "dead-letter"
	}
	return "route"
}

// side is one cluster the checks ask, and what they learn of it.
type side struct {
	// of is the cluster's settings, for the brokers line.
	of config.Cluster
	// role is what the cluster is to the pipeline, which decides the
	// requests it must answer (brokerfloor.JudgeFor). The name of each
	// check of a Source or Sink cluster ends with it, "(source
	// cluster)"; those of the one cluster (Both) keep their names.
	role brokerfloor.Role
	rep  *Report

	cl       *kgo.Client
	versions *kversion.Versions
	// floor is brokerfloor's verdict on the cluster, the relay's own.
	floor brokerfloor.Verdict
	// brokers is how many brokers Metadata listed.
	brokers int
	// clusterID is Metadata's cluster id, "" when the broker gives none.
	clusterID string
}

// add adds a result of a check of the cluster, named with it when the
// pipeline has two.
func (s *side) add(st Status, check, format string, args ...any) {
	if s.role != brokerfloor.Both {
		check += " (" + s.role.String() + ")"
	}
	s.rep.add(st, check, format, args...)
}

// open connects to the cluster of s with opts and checks the connection
// (connect), adding a skipped line for the cluster's other checks when it
// fails. It reports whether s.cl is connected; the caller closes it then,
// and s.cl stays nil otherwise.
func (c *checker) open(ctx context.Context, s *side, opts []kgo.Opt) bool {
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		s.add(Fail, "client", "%v", err)
		return false
	}
	s.cl = cl
	if !c.connect(ctx, s) {
		cl.Close()
		s.cl = nil
		s.add(Skipped, "everything else", "no connection to the %s", s.role)
		return false
	}
	return true
}

// certCN is the common name of the first certificate in the PEM file at
// path, "" when there is none or it cannot be read (the client options
// have read it already, and said so).
func certCN(path string) string {
	if path == "" {
		return ""
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	for {
		var b *pem.Block
		if b, data = pem.Decode(data); b == nil {
			return ""
		}
		if b.Type != "CERTIFICATE" {
			continue
		}
		cert, err := x509.ParseCertificate(b.Bytes)
		if err != nil {
			return ""
		}
		return cert.Subject.CommonName
	}
}
