package config

import "slices"

// SinkCluster returns the cluster the relay writes to: the pipeline's
// brokers, tls, sasl and client. The outputs, the routes' topics, the
// dead letters, the claim ledger and its snapshots live there, and so do
// the transactional producers that tie them together.
func (p *Pipeline) SinkCluster() Cluster {
	return Cluster{Brokers: p.Brokers, TLS: p.TLS, SASL: p.SASL, Client: p.Client}
}

// SourceCluster returns the cluster the source topics and the share group
// live on: source.cluster when the file sets it, else the sink cluster.
// The share consumers, their acknowledgements, the group's configs and
// the source topics' checks use it; nothing is written to it.
func (p *Pipeline) SourceCluster() Cluster {
	if p.Source.Cluster != nil {
		return *p.Source.Cluster
	}
	return p.SinkCluster()
}

// CrossCluster reports whether the source is on a cluster of its own
// (source.cluster is set). A topic name then means a different topic on
// each side: an output may carry its source's name.
func (p *Pipeline) CrossCluster() bool { return p.Source.Cluster != nil }

// inheritClient fills the keys of c left out of the file (zero and not
// explicit under prefix) from the pipeline's client, which is defaulted
// already: the tuning is the relay's, whichever cluster it talks to. The
// producer keys are not taken: nothing is produced to the source cluster.
func (c *Client) inheritClient(from Client, prefix string, explicit func(string) bool) {
	if c.ID == "" && !explicit(prefix+".id") {
		c.ID = from.ID
	}
	if c.Rack == "" && !explicit(prefix+".rack") {
		c.Rack = from.Rack
	}
	if c.RequestTimeout == 0 && !explicit(prefix+".request_timeout") {
		c.RequestTimeout = from.RequestTimeout
	}
	if c.Consumer.FetchMaxBytes == 0 && !explicit(prefix+".consumer.fetch_max_bytes") {
		c.Consumer.FetchMaxBytes = from.Consumer.FetchMaxBytes
	}
	if c.Consumer.FetchMaxWait == 0 && !explicit(prefix+".consumer.fetch_max_wait") {
		c.Consumer.FetchMaxWait = from.Consumer.FetchMaxWait
	}
}

// sameBrokers reports whether a and b name the same seed brokers, in any
// order.
func sameBrokers(a, b []string) bool {
	return slices.Equal(slices.Sorted(slices.Values(a)), slices.Sorted(slices.Values(b)))
}

// sourceClusterPath is the YAML path of Source.Cluster.
const sourceClusterPath = "source.cluster"

// sourceCluster checks source.cluster: a cluster of its own, validated as
// the top-level one is.
func (v *validator) sourceCluster() {
	c := v.p.Source.Cluster
	if c == nil {
		if v.explicit(sourceClusterPath) {
			v.add(sourceClusterPath, "is empty: give the source cluster's brokers, or leave source.cluster out to read the source from brokers")
		}
		return
	}
	v.brokers(sourceClusterPath+".brokers", c.Brokers)
	v.tls(sourceClusterPath+".tls", c.TLS)
	v.sasl(sourceClusterPath+".sasl", c.SASL, c.TLS.Enabled)
	v.client(sourceClusterPath+".client", c.Client)
	if len(c.Brokers) > 0 && sameBrokers(c.Brokers, v.p.Brokers) {
		v.warn(sourceClusterPath+".brokers", "names the same brokers as brokers: one cluster needs no source.cluster, leave it out")
	}
}
