package lineage

import (
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sharerelay/sharerelay/transform"
)

// Output is the record written for output index of the count outputs the
// transform chain made of source record src: o's topic (defaultTopic when
// o names none), key, value and headers, labelled with the lineage headers
// (Label). The worker, `relay test` and the dead-letter replay all build
// outputs with it, so what a pipeline test shows is what the relay writes.
func Output(o *transform.Record, defaultTopic string, src Source, index, count int) kgo.Record {
	hs := make([]kgo.RecordHeader, len(o.Headers))
	for j, h := range o.Headers {
		hs[j] = kgo.RecordHeader{Key: h.Key, Value: h.Value}
	}
	topic := o.Topic
	if topic == "" {
		topic = defaultTopic
	}
	return kgo.Record{Topic: topic, Key: o.Key, Value: o.Value, Headers: Label(hs, src, index, count)}
}
