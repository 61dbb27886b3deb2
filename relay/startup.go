package relay

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"golang.org/x/sync/errgroup"

	"github.com/sharerelay/sharerelay/config"
	"github.com/sharerelay/sharerelay/internal/brokerfloor"
	"github.com/sharerelay/sharerelay/sharegroup"
)

// startUp runs the start-up checks before any worker starts: the brokers
// are new enough (brokerfloor), the topics exist and their batch limits
// are known, the share group's configs are
// set (when the relay manages them) and in effect, and the delivery
// limits the workers depend on are read. It returns the source topics'
// IDs.
//
// With source.cluster the checks go to the cluster they concern: the
// brokers' floor, the source topics and the share group to the source
// cluster, the brokers' floor, the outputs and their batch limits to the
// sink; an error names the side it came from.
func (r *Relay) startUp(ctx context.Context) (map[string][16]byte, error) {
	src, err := kgo.NewClient(r.sourceClientOpts()...)
	if err != nil {
		return nil, fmt.Errorf("relay: creating admin client: %w", err)
	}
	defer src.Close()
	sink := src
	if r.p.CrossCluster() {
		if sink, err = kgo.NewClient(r.clientOpts()...); err != nil {
			return nil, fmt.Errorf("relay: creating admin client: %w", err)
		}
		defer sink.Close()
		if err := r.checkBrokers(ctx, src, brokerfloor.Source); err != nil {
			return nil, err
		}
		if err := r.checkBrokers(ctx, sink, brokerfloor.Sink); err != nil {
			return nil, err
		}
		if err := r.checkDistinct(ctx, src, sink); err != nil {
			return nil, err
		}
	} else if err := r.checkBrokers(ctx, src, brokerfloor.Both); err != nil {
		return nil, err
	}
	td, err := r.checkPipelineTopics(ctx, src, sink)
	if err != nil {
		return nil, err
	}
	ids := make(map[string][16]byte)
	parts := 0
	for _, t := range r.p.Source.Topics {
		ids[t] = td[t].ID
		parts += len(td[t].Partitions)
	}
	cl := src // the share group's checks, from here on
	if r.p.Source.ManageGroupConfig == nil || *r.p.Source.ManageGroupConfig {
		if err := r.setGroupConfigs(ctx, cl); err != nil {
			return nil, r.onSource(err)
		}
	} else {
		r.log.Info("share group configs left alone (source.manage_group_config: false)", "group", r.p.Source.Group)
	}
	l, err := sharegroup.EffectiveLimits(ctx, cl, r.p.Source.Group)
	if err != nil {
		r.log.Warn("could not read the share group's delivery limit; assuming Kafka's default", "limit", l.DeliveryCountLimit, "err", err)
	}
	r.setLimits(l)
	r.sizeConsumers(ctx, cl, l, parts)
	mode, why := r.p.Batch.Acquire()
	r.wholeBatches = mode == config.AcquireBatchOptimized
	if r.wholeBatches {
		r.m.AcquireWholeBatches.Set(1) // 0 until then
	}
	r.log.Info("acquire mode "+mode, "why", why, "record_locks", l.RecordLocks, "partitions", parts)
	if err := checkBrokerDLQ(ctx, cl, r.p, r.log); err != nil {
		return nil, fmt.Errorf("relay: %w", r.onSource(err))
	}
	r.log.Info("delivery limits", "delivery_count_limit", l.DeliveryCountLimit, "from", l.From, "workers", r.p.Workers, "consumers", r.wantSize().consumers, "max_records", r.wantSize().maxRecords,
		"max_attempts", r.limits.attempts(), "lock_duration_ms", l.LockDurationMs, "delivery", r.p.Delivery)
	if r.p.Delivery == config.ExactlyOnce && r.p.Output.TransactionTimeout >= time.Duration(l.LockDurationMs)*time.Millisecond {
		r.log.Warn("output.transaction_timeout is not below the share lock duration: a crashed worker's claim may outlive the lock of the records it blocks",
			"transaction_timeout", r.p.Output.TransactionTimeout, "lock_duration_ms", l.LockDurationMs)
	}
	return ids, nil
}

// checkBrokers refuses a cluster too old for what the pipeline uses it
// for (brokerfloor.JudgeFor role, the rule relay check reports by) before
// the relay sets a group config or creates a topic: a refusal is no
// transient error, so the relay stops with it.
func (r *Relay) checkBrokers(ctx context.Context, cl *kgo.Client, role brokerfloor.Role) error {
	req := kmsg.NewPtrApiVersionsRequest()
	req.ClientSoftwareName, req.ClientSoftwareVersion = "sharerelay", "run"
	resp, err := req.RequestWith(ctx, cl)
	if err == nil {
		err = kerr.ErrorForCode(resp.ErrorCode)
	}
	if err != nil {
		return fmt.Errorf("relay: %w", r.onCluster(role.String(), fmt.Errorf("ApiVersions: %w", err)))
	}
	v := brokerfloor.JudgeFor(resp, role, r.p.Delivery == config.ExactlyOnce)
	if err := v.Err(); err != nil {
		return fmt.Errorf("relay: %w", err)
	}
	r.log.Info("brokers", "cluster", role.String(), "kafka_version_guess", v.Guess, "transaction_version", v.TransactionVersion, "share_version", v.ShareVersion)
	return nil
}

// checkDistinct refuses a source.cluster that is the sink cluster under
// other addresses when a topic the relay writes is also a source topic:
// config.Load allows that name across clusters, and on one cluster the
// pipeline would consume its own output. Two clusters are told apart by
// their cluster id; a cluster that reports none is taken as distinct.
func (r *Relay) checkDistinct(ctx context.Context, src, sink *kgo.Client) error {
	srcID, err := clusterID(ctx, src)
	if err != nil {
		return fmt.Errorf("relay: %w", r.onSource(err))
	}
	sinkID, err := clusterID(ctx, sink)
	if err != nil {
		return fmt.Errorf("relay: %w", r.onSink(err))
	}
	r.log.Info("two clusters", "source_cluster_id", srcID, "sink_cluster_id", sinkID)
	if srcID == "" || srcID != sinkID {
		return nil
	}
	var loops []string
	for _, t := range r.p.OutputTopics() {
		if slices.Contains(r.p.Source.Topics, t) {
			loops = append(loops, t)
		}
	}
	if len(loops) > 0 {
		return fmt.Errorf("relay: %w: source.cluster is the sink cluster (cluster id %s), and %v are both source and output topics: the pipeline would consume its own output", errSameCluster, srcID, loops)
	}
	r.log.Warn("source.cluster is the sink cluster (the same cluster id): leave source.cluster out", "cluster_id", srcID)
	return nil
}

// errSameCluster marks a source.cluster that is the sink cluster, with a
// topic read and written; no retry cures it.
var errSameCluster = errors.New("one cluster named twice")

// clusterID is the cluster id the brokers of cl report.
func clusterID(ctx context.Context, cl *kgo.Client) (string, error) {
	req := kmsg.NewPtrMetadataRequest()
	req.Topics = []kmsg.MetadataRequestTopic{} // none: the brokers and the cluster id
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return "", fmt.Errorf("metadata: %w", err)
	}
	if resp.ClusterID == nil {
		return "", nil
	}
	return *resp.ClusterID, nil
}

// checkPipelineTopics checks that the source topics (on src) and the
// output topics (on sink) exist and the principal may describe them, and
// stores the outputs' batch limits. On one cluster src and sink are the
// same client, asked once.
func (r *Relay) checkPipelineTopics(ctx context.Context, src, sink *kgo.Client) (map[string]kadm.TopicDetail, error) {
	if src == sink {
		names := append(append([]string{}, r.p.Source.Topics...), r.p.OutputTopics()...)
		td, err := checkTopics(ctx, src, dedupe(names), topicGrace)
		if err != nil {
			return nil, fmt.Errorf("relay: %w", err)
		}
		return td, r.checkSizes(ctx, sink)
	}
	var td map[string]kadm.TopicDetail
	var srcErr, sinkErr error
	var wg sync.WaitGroup
	wg.Go(func() { td, srcErr = checkTopics(ctx, src, r.p.Source.Topics, topicGrace) })
	wg.Go(func() { _, sinkErr = checkTopics(ctx, sink, r.p.OutputTopics(), topicGrace) })
	wg.Wait()
	if err := errors.Join(r.onSource(srcErr), r.onSink(sinkErr)); err != nil {
		return nil, fmt.Errorf("relay: %w", err)
	}
	return td, r.checkSizes(ctx, sink)
}

// checkSizes reads and stores the outputs' batch limits from the sink.
func (r *Relay) checkSizes(ctx context.Context, sink *kgo.Client) error {
	sizes, err := maxMessageBytes(ctx, kadm.NewClient(sink), r.p.OutputTopics())
	if err != nil {
		return fmt.Errorf("relay: %w", r.onSink(err))
	}
	r.storeSizes(sizes)
	r.log.Info("largest record batches the topics take (max.message.bytes)", "bytes", sizes)
	return nil
}

// setGroupConfigs sets the share group's configs the relay manages
// (sharegroup.ConfigsToSet) and waits until they are in effect.
func (r *Relay) setGroupConfigs(ctx context.Context, cl *kgo.Client) error {
	plan := sharegroup.ConfigsToSet(ctx, cl, r.p)
	for _, note := range plan.Notes {
		r.log.Info("share group "+note, "group", r.p.Source.Group)
	}
	cfgs := plan.Configs
	r.limits.attemptsFrom = plan.AttemptsLimit
	if err := sharegroup.SetConfigs(ctx, cl, r.p.Source.Group, cfgs); err != nil {
		return fmt.Errorf("relay: %w", err)
	}
	// Group configs propagate through the metadata log: reading the
	// delivery limit too early would see the old one, and a relay that
	// believes in a higher limit than the broker's lets the broker
	// archive records silently.
	if err := sharegroup.WaitConfigs(ctx, cl, r.p.Source.Group, cfgs); err != nil {
		return fmt.Errorf("relay: %w", err)
	}
	r.log.Info("share group configs set", "group", r.p.Source.Group, "configs", cfgs)
	return nil
}

// sizeConsumers chooses the share consumers each worker runs and the
// records each asks for a poll (sharegroup.Size): below the group's
// delivery limit (sharegroup.ConsumersPerWorker), and within the record
// locks the group can give this instance on its parts source partitions,
// shared with the other relay instances it finds in the group. It logs
// what it chose and why, and warns when the workers alone reach the
// delivery limit, batch.consumers was lowered for it, or what the file
// sets asks for more records than the group can lock.
func (r *Relay) sizeConsumers(ctx context.Context, cl *kgo.Client, l sharegroup.Limits, parts int) {
	d, others, err := r.demand(ctx, cl, l, parts)
	capped := d.ConsumersCap
	switch {
	case r.p.Workers >= l.DeliveryCountLimit:
		r.log.Warn("workers reach the group's delivery limit: a crash of this instance can cost a record it held one delivery for each of the instance's share consumers, so a crash alone can make the broker archive a record without output or dead letter; run more instances with fewer workers, or raise share.delivery.count.limit",
			"workers", r.p.Workers, "consumers", capped, "delivery_count_limit", l.DeliveryCountLimit)
	case capped < r.p.Batch.Consumers:
		r.log.Warn("batch.consumers lowered: a crash of this instance can cost a record it held one delivery for each of the instance's share consumers, and workers × consumers must stay below the group's delivery limit so that a crash alone never makes the broker archive a record; raise share.delivery.count.limit or run more instances with fewer workers",
			"batch_consumers", r.p.Batch.Consumers, "consumers", capped, "workers", r.p.Workers, "delivery_count_limit", l.DeliveryCountLimit)
	}
	if err != nil {
		r.log.Warn("could not read the share group's members; sizing for this instance alone", "err", err)
	}
	if others > 0 {
		r.log.Info("the share group has members that are not relay instances; their record locks are not counted", "members", others)
	}
	r.parts, r.instances = parts, d.Instances
	s := sharegroup.Size(d)
	r.target.Store(&size{s.Consumers, s.MaxRecords})
	if s.Short {
		r.log.Warn("record locks short: "+s.Why+"; share fetches come back with fewer records, and exactly-once, which holds every record through its commit, makes each piece a transaction of its own; "+sharegroup.ShortAdvice,
			"consumers", s.Consumers, "max_records", s.MaxRecords)
		return
	}
	r.log.Info("share consumers sized: "+s.Why, "consumers", s.Consumers, "max_records", s.MaxRecords)
}

// demand is what this instance would ask its share group for
// (sharegroup.Demand), with the relay instances found among the group's
// members, with whom the budget of record locks is shared, and the number
// of members that are not relay instances. A group that cannot be
// described counts this instance alone, and err says why.
func (r *Relay) demand(ctx context.Context, cl *kgo.Client, l sharegroup.Limits, parts int) (d sharegroup.Demand, others int, err error) {
	cset, mset := r.p.Batch.Explicit()
	d = sharegroup.Demand{
		Workers: r.p.Workers, Consumers: r.p.Batch.Consumers, MaxRecords: r.p.Batch.MaxRecords,
		ConsumersSet: cset, MaxRecordsSet: mset, Partitions: parts, RecordLocks: l.RecordLocks, Instances: 1,
		ConsumersCap: sharegroup.ConsumersPerWorker(r.p.Workers, r.p.Batch.Consumers, l.DeliveryCountLimit),
	}
	ids, err := sharegroup.Members(ctx, kadm.NewClient(cl), r.p.Source.Group)
	if err != nil {
		return d, 0, err
	}
	d.Instances, others = sharegroup.InstancesOf(ids, r.transactionalIDPrefix())
	return d, others, nil
}

// setLimits derives the attempts a failing record gets from the group's
// limits, and publishes them to the workers.
func (r *Relay) setLimits(l sharegroup.Limits) {
	a := int32(r.p.DeadLetter.MaxAttempts)
	if a == 0 {
		// Keep the broker's last deliveries as spares: a crash during
		// the last attempt then still leaves a delivery, which
		// dead-letters the record instead of the broker archiving it.
		a = int32(config.DefaultMaxAttempts(r.limits.attemptsLimit(l.DeliveryCountLimit)))
	}
	switch spare := l.DeliveryCountLimit - int(a); {
	case spare <= 0:
		r.log.Warn("dead_letter.max_attempts leaves no spare delivery: a crash during the last attempt lets the broker archive the record without a dead letter",
			"max_attempts", a, "delivery_count_limit", l.DeliveryCountLimit)
	case spare == 1:
		r.log.Warn("dead_letter.max_attempts leaves one spare delivery: a crash can cost a record two (the one it held, and one a share fetch left waiting in the broker acquires for the dead connection), so the broker may archive it without a dead letter; raise share.delivery.count.limit to 4 or more",
			"max_attempts", a, "delivery_count_limit", l.DeliveryCountLimit)
	}
	r.groupLimits.Store(&l)
	r.limits.limitV.Store(int32(l.DeliveryCountLimit))
	r.limits.lockMs.Store(int64(l.LockDurationMs))
	r.m.LockDuration.Set(float64(l.LockDurationMs) / 1000)
	if old := r.limits.attemptsV.Swap(a); old != 0 && old != a {
		r.log.Info("share group delivery limit changed", "delivery_count_limit", l.DeliveryCountLimit, "max_attempts", a)
	}
}

// refreshLimits re-reads the group's delivery limit every interval, so an
// operator lowering share.delivery.count.limit while the relay runs does
// not make the broker archive records the relay still means to retry;
// and the outputs' batch limits, from the sink.
func (r *Relay) refreshLimits(ctx context.Context, interval time.Duration) error {
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() error {
		return r.every(gctx, interval, r.sourceClientOpts, func(cl *kgo.Client) error {
			if l, err := sharegroup.EffectiveLimits(gctx, cl, r.p.Source.Group); err == nil {
				r.setLimits(l)
			}
			return nil
		})
	})
	g.Go(func() error {
		return r.every(gctx, interval, r.clientOpts, func(cl *kgo.Client) error {
			if sizes, err := maxMessageBytes(gctx, kadm.NewClient(cl), r.p.OutputTopics()); err == nil {
				r.storeSizes(sizes)
			}
			return nil
		})
	})
	return g.Wait()
}
