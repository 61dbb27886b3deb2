package sharegroup

import (
	"context"
	"fmt"
	"sort"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Keys of the share-group configs the relay depends on (KIP-932 group
// configs).
const (
	AutoOffsetReset    = "share.auto.offset.reset"
	IsolationLevel     = "share.isolation.level"
	DeliveryCountLimit = "share.delivery.count.limit"
	LockDuration       = "share.record.lock.duration.ms"

	// RecordLocks bounds the records the whole group holds locked
	// at once in one share partition (KIP-932). Above it, share fetches
	// come back with what is left: small polls, and small transactions.
	RecordLocks = "share.partition.max.record.locks"
)

// Keys of the brokers' configs for share groups: the defaults a group
// without its own config gets, and the most a group may set.
const (
	brokerRecordLocks    = "group.share.partition.max.record.locks"     // the broker's default for groups
	brokerMaxRecordLocks = "group.share.max.partition.max.record.locks" // the most a group may set
	// maxRecordLocksAllowed is the highest brokerMaxRecordLocks Kafka
	// accepts (its range is 2,000 to 10,000).
	maxRecordLocksAllowed    = 10000
	brokerDeliveryCountLimit = "group.share.delivery.count.limit"
	// the most a group may set its delivery limit to
	brokerMaxDeliveryCountLimit = "group.share.max.delivery.count.limit"
	brokerLockDuration          = "group.share.record.lock.duration.ms"
)

// SetConfigs sets the share group's configs with IncrementalAlterConfigs
// on the GROUP resource (kadm has no helper for that resource type).
func SetConfigs(ctx context.Context, cl *kgo.Client, group string, cfgs map[string]string) error {
	if len(cfgs) == 0 {
		return nil
	}
	req := kmsg.NewPtrIncrementalAlterConfigsRequest()
	res := kmsg.NewIncrementalAlterConfigsRequestResource()
	res.ResourceType = kmsg.ConfigResourceTypeGroupConfig
	res.ResourceName = group
	keys := make([]string, 0, len(cfgs))
	for k := range cfgs {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		c := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
		c.Name = k
		v := cfgs[k]
		c.Value = &v
		c.Op = kmsg.IncrementalAlterConfigOpSet
		res.Configs = append(res.Configs, c)
	}
	req.Resources = append(req.Resources, res)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return fmt.Errorf("setting configs of share group %s: %w", group, err)
	}
	for _, r := range resp.Resources {
		if err := kerr.ErrorForCode(r.ErrorCode); err != nil {
			msg := ""
			if r.ErrorMessage != nil {
				msg = ": " + *r.ErrorMessage
			}
			return fmt.Errorf("setting configs of share group %s: %w%s", group, err, msg)
		}
	}
	return nil
}

// WaitConfigs waits until the broker reports every config of want on
// the group (configs propagate asynchronously), for up to 15 s.
func WaitConfigs(ctx context.Context, cl *kgo.Client, group string, want map[string]string) error {
	deadline := time.Now().Add(15 * time.Second)
	for {
		got, err := Configs(ctx, cl, group)
		missing := ""
		if err == nil {
			for k, v := range want {
				if got[k] != v {
					missing = fmt.Sprintf("%s=%q (broker reports %q)", k, v, got[k])
					break
				}
			}
			if missing == "" {
				return nil
			}
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return fmt.Errorf("share group %s: configs not in effect after 15s: %s %v", group, missing, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// Configs returns the share group's config values as the broker
// reports them (defaults included on real brokers).
func Configs(ctx context.Context, cl *kgo.Client, group string) (map[string]string, error) {
	req := kmsg.NewPtrDescribeConfigsRequest()
	res := kmsg.NewDescribeConfigsRequestResource()
	res.ResourceType = kmsg.ConfigResourceTypeGroupConfig
	res.ResourceName = group
	req.Resources = append(req.Resources, res)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return nil, fmt.Errorf("describing configs of share group %s: %w", group, err)
	}
	out := make(map[string]string)
	for _, r := range resp.Resources {
		if err := kerr.ErrorForCode(r.ErrorCode); err != nil {
			return nil, fmt.Errorf("describing configs of share group %s: %w", group, err)
		}
		for _, c := range r.Configs {
			if c.Value != nil {
				out[c.Name] = *c.Value
			}
		}
	}
	return out, nil
}

// BrokerConfig returns the broker-level values of names, from any broker.
// It describes brokers by id: described without one, Kafka answers with
// the cluster-wide dynamic overrides only, without the values a broker
// runs with (server.properties, defaults). It needs DESCRIBE_CONFIGS on
// the cluster.
func BrokerConfig(ctx context.Context, adm *kadm.Client, names ...string) (map[string]string, error) {
	brokers, err := adm.ListBrokers(ctx)
	if err != nil {
		return nil, fmt.Errorf("listing brokers: %w", err)
	}
	rcs, err := adm.DescribeBrokerConfigs(ctx, brokers.NodeIDs()...)
	if err != nil {
		return nil, fmt.Errorf("describing broker configs: %w", err)
	}
	out := make(map[string]string)
	for _, rc := range rcs {
		if rc.Err != nil {
			continue
		}
		for _, c := range rc.Configs {
			for _, n := range names {
				if c.Key == n && c.Value != nil {
					out[n] = *c.Value
				}
			}
		}
		if len(out) == len(names) {
			break
		}
	}
	return out, nil
}
