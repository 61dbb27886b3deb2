package audit

import (
	"context"
	"fmt"

	"github.com/twmb/franz-go/pkg/kadm"
)

// ShareGroupLag returns, per topic and partition, the records the share
// group has not finished: the broker's reported lag when it has one,
// otherwise end offset minus share-partition start offset. adm must reach
// the cluster the group and its topics are on: a pipeline's source
// cluster (config.Pipeline.SourceCluster), not the one it writes to.
func ShareGroupLag(ctx context.Context, adm *kadm.Client, group string, topics ...string) (map[string]map[int32]int64, error) {
	ends, err := adm.ListEndOffsets(ctx, topics...)
	if err != nil {
		return nil, fmt.Errorf("listing end offsets of %v: %w", topics, err)
	}
	desc, err := adm.DescribeShareGroupOffsets(ctx, group)
	if err != nil {
		return nil, fmt.Errorf("describing share group %s offsets: %w", group, err)
	}
	d := desc[group]
	if d.Err != nil {
		return nil, fmt.Errorf("describing share group %s offsets: %w", group, d.Err)
	}
	out := make(map[string]map[int32]int64)
	ends.Each(func(o kadm.ListedOffset) {
		if out[o.Topic] == nil {
			out[o.Topic] = make(map[int32]int64)
		}
		lag := o.Offset // nothing consumed yet
		if so, ok := d.Offsets[o.Topic][o.Partition]; ok && so.Err == nil && so.StartOffset >= 0 {
			lag = o.Offset - so.StartOffset
			if so.Lag >= 0 {
				lag = so.Lag
			}
		}
		out[o.Topic][o.Partition] = lag
	})
	return out, nil
}

// TotalLag sums a ShareGroupLag result.
func TotalLag(lag map[string]map[int32]int64) int64 {
	var n int64
	for _, ps := range lag {
		for _, l := range ps {
			n += l
		}
	}
	return n
}
