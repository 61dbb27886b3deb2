package preflight

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"

	"github.com/sharerelay/sharerelay/config"
	"github.com/sharerelay/sharerelay/eos"
	"github.com/sharerelay/sharerelay/internal/brokerfloor"
	"github.com/sharerelay/sharerelay/sharegroup"
)

// Status is the outcome of one check.
type Status int8

const (
	// OK: the pipeline has what it needs here.
	OK Status = iota
	// Warn: it runs, but something is worth a look.
	Warn
	// Fail: the relay would stop, or wait, or lose its guarantee.
	Fail
	// Skipped: not checked, because an earlier check failed.
	Skipped
)

var statusWords = [...]string{OK: "ok", Warn: "warn", Fail: "FAIL", Skipped: "skipped"}

// String is the word relay check prints for s.
func (s Status) String() string { return statusWords[s] }

// Result is the outcome of one check.
type Result struct {
	Status Status
	// Check names what was checked, e.g. "output topic jobs".
	Check string
	// Detail says what was found, and for a failure what to change.
	Detail string
}

// String is the result's line: "ok: brokers: …", "FAIL: …", "warn: …".
func (r Result) String() string { return r.Status.String() + ": " + r.Check + ": " + r.Detail }

// Report is every check's result, in the order they ran.
type Report struct {
	Results []Result
}

// Failed reports whether any check failed.
func (r *Report) Failed() bool {
	return slices.ContainsFunc(r.Results, func(x Result) bool { return x.Status == Fail })
}

// Print writes one line per result.
func (r *Report) Print(w io.Writer) {
	for _, x := range r.Results {
		fmt.Fprintln(w, x)
	}
}

func (r *Report) add(s Status, check, format string, args ...any) {
	r.Results = append(r.Results, Result{Status: s, Check: check, Detail: fmt.Sprintf(format, args...)})
}

// Check runs every check of pipeline p (valid, from config.Load) on its
// clusters. sinkOpts are the client options of the cluster the relay
// writes to, the one cluster of a pipeline without source.cluster;
// sourceOpts those of source.cluster, used only when p.CrossCluster().
// Both are the relay's own (kafkaopts.Clusters). The pipeline's schema
// registries are checked last, whether or not the clusters answered. It
// returns when every check has run, or ctx ends; a check cut short by ctx
// fails.
func Check(ctx context.Context, p *config.Pipeline, sinkOpts, sourceOpts []kgo.Opt, opts ...Option) *Report {
	c := &checker{p: p, rep: &Report{}}
	for _, o := range opts {
		o(c)
	}
	if p.CrossCluster() {
		c.crossCluster(ctx, sinkOpts, sourceOpts)
	} else {
		c.oneCluster(ctx, sinkOpts)
	}
	c.registries(ctx)
	return c.rep
}

// oneCluster runs the checks of a pipeline whose source and outputs are
// on one cluster, with the client options opts.
func (c *checker) oneCluster(ctx context.Context, opts []kgo.Opt) {
	s := &side{of: c.p.SinkCluster(), role: brokerfloor.Both, rep: c.rep}
	c.src, c.sink = s, s
	if !c.open(ctx, s, opts) {
		return
	}
	defer s.cl.Close()
	c.features(s)
	c.topics(ctx, s)
	c.replication(ctx)
	c.group(ctx)
	c.transactionalIDs(ctx)
	c.cluster(ctx, s)
	c.shareGroupLimits(ctx)
	c.acquireMode()
	c.brokerDLQ()
}

// checker holds what one run learns as it goes.
type checker struct {
	p   *config.Pipeline
	rep *Report

	// src is the cluster of the source topics and the share group, sink
	// the one the relay writes to: one side for both without
	// source.cluster.
	src, sink *side

	// groupConfigs are the share group's configs as the broker reports
	// them, nil when they could not be read.
	groupConfigs map[string]string
	// plan is what the relay would set on the group at start (zero when
	// it leaves the group's configs alone).
	plan sharegroup.Plan
	// sourceParts are the partitions of the source topics the topic
	// check found (0 when it found none).
	sourceParts int
	// written are the topics the relay writes that the topic check
	// found, or found it may create, for the replication check.
	written []written
	// instances is the fleet being planned (WithInstances); 0 checks
	// for the relay instances in the group now and this one.
	instances int
}

// Option changes what Check checks.
type Option func(*checker)

// WithInstances checks a planned fleet of n relay instances of the
// pipeline: each instance's poll size is sized for n instances sharing
// the group's record locks, and a fleet line says whether the
// delivery-limit and lock-budget rules hold for it.
func WithInstances(n int) Option { return func(c *checker) { c.instances = n } }

// shareGroupLimits checks what the share group's settings allow the
// relay: the record lock duration, the delivery limit's spares, the share
// consumers a worker runs and their polls' size.
func (c *checker) shareGroupLimits(ctx context.Context) {
	c.lockDuration(ctx)
	limit, from := c.deliveryLimit(ctx)
	c.deadLetterSpares(limit, from)
	c.shareConsumers(limit, from)
	c.pollSize(ctx, limit, from)
}

// retryFor bounds the retries of a request that fails with a retriable
// error: a coordinator being elected, internal topics being created.
const retryFor = 10 * time.Second

// request issues req, retrying retriable errors for up to retryFor.
func request[R kmsg.Response](ctx context.Context, cl *kgo.Client, req kmsg.Request) (R, error) {
	deadline := time.Now().Add(retryFor)
	for {
		resp, err := cl.Request(ctx, req)
		if err == nil {
			return resp.(R), nil
		}
		if !kerr.IsRetriable(err) || time.Now().After(deadline) || ctx.Err() != nil {
			var zero R
			return zero, err
		}
		select {
		case <-ctx.Done():
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// connect checks that the brokers of s answer and accept the credentials.
func (c *checker) connect(ctx context.Context, s *side) bool {
	brokers := strings.Join(s.of.Brokers, ",")
	req := kmsg.NewPtrApiVersionsRequest()
	req.ClientSoftwareName, req.ClientSoftwareVersion = "sharerelay", "check"
	resp, err := request[*kmsg.ApiVersionsResponse](ctx, s.cl, req)
	if err == nil {
		err = kerr.ErrorForCode(resp.ErrorCode)
	}
	if err != nil {
		s.add(Fail, "brokers", "cannot connect to %s: %s", brokers, explainConnect(err))
		return false
	}
	meta, err := request[*kmsg.MetadataResponse](ctx, s.cl, kmsg.NewPtrMetadataRequest())
	if err != nil {
		s.add(Fail, "brokers", "ApiVersions answered but Metadata failed: %s", explainConnect(err))
		return false
	}
	s.versions = kversion.FromApiVersionsResponse(resp)
	s.brokers = len(meta.Brokers)
	if meta.ClusterID != nil {
		s.clusterID = *meta.ClusterID
	}
	s.floor = brokerfloor.JudgeFor(resp, s.role, c.p.Delivery == config.ExactlyOnce)
	s.add(OK, "brokers", "%d in the cluster, reached through %s%s", len(meta.Brokers), brokers, s.how())
	return true
}

// how says how the client connects, for the brokers line. A cluster of
// two names the principal of its client certificate too: each cluster
// authorizes its own principal.
func (s *side) how() string {
	var parts []string
	if t := s.of.TLS; t.Enabled {
		parts = append(parts, "TLS")
		if t.CertFile != "" {
			cert := "client certificate"
			if cn := certCN(t.CertFile); s.role != brokerfloor.Both && cn != "" {
				cert += " CN=" + cn
			}
			parts = append(parts, cert)
		}
	}
	switch m := s.of.SASL.Mechanism; {
	case m == "":
	case s.of.SASL.Username != "":
		parts = append(parts, "SASL "+m+" as "+s.of.SASL.Username)
	default:
		parts = append(parts, "SASL "+m)
	}
	if len(parts) == 0 {
		return " (plaintext, no authentication)"
	}
	return " (" + strings.Join(parts, ", ") + ")"
}

// explainConnect adds the likely fix to a connection error. Errors never
// carry credentials: franz-go's and the broker's messages name the
// mechanism, not the password.
func explainConnect(err error) string {
	msg := err.Error()
	switch {
	case errors.Is(err, kerr.SaslAuthenticationFailed):
		return msg + " (check sasl.username and sasl.password, or the token)"
	case errors.Is(err, kerr.UnsupportedSaslMechanism) || errors.Is(err, kerr.IllegalSaslState):
		return msg + " (check sasl.mechanism against the listener's sasl.enabled.mechanisms)"
	case strings.Contains(msg, "x509:") || strings.Contains(msg, "tls:"):
		return msg + " (check tls.ca_file, tls.server_name and the client certificate)"
	}
	return msg
}

// features reports the Kafka version of s and the finalized features the
// relay depends on there, judged by the rule the relay refuses to start
// on (brokerfloor), in its words: transaction.version on the cluster the
// relay writes to, share groups on the one it reads from.
func (c *checker) features(s *side) {
	if s.floor.TooOld != nil {
		s.add(Fail, "kafka version", "%v", s.floor.TooOld)
	} else {
		floor := brokerfloor.Minimum
		if s.role == brokerfloor.Sink {
			floor = brokerfloor.SinkMinimum
		}
		s.add(OK, "kafka version", "%s (guessed from ApiVersions); the relay needs %s or newer", s.floor.Guess, floor)
	}

	if s.role != brokerfloor.Source {
		tv := s.floor.TransactionVersion
		switch {
		case s.floor.NoTransactionV2 != nil:
			s.add(Fail, "transaction.version", "%v", s.floor.NoTransactionV2)
		case c.p.Delivery == config.ExactlyOnce:
			s.add(OK, "transaction.version", "finalized at %d", tv)
		default:
			s.add(OK, "transaction.version", "finalized at %d (at-least-once does not need 2)", tv)
		}
	}
	if s.role == brokerfloor.Sink {
		return
	}

	sv := s.floor.ShareVersion
	_, fetch := s.versions.LookupMaxKeyVersion(kmsg.ShareFetch.Int16())
	switch {
	case sv >= 1 && fetch:
		s.add(OK, "share groups", "share.version finalized at %d", sv)
	case fetch:
		s.add(Warn, "share groups", "the brokers speak ShareFetch but share.version is %d: share groups may be off (Kafka 4.2+ enables them by default)", sv)
	default:
		s.add(Fail, "share groups", "the brokers do not speak ShareFetch: share groups need %s or newer", brokerfloor.Minimum)
	}
}

// need is a topic's role in the pipeline and the operations it needs.
type need struct {
	role string
	ops  []kmsg.ACLOperation
	// creatable: the relay creates the topic when it is missing.
	creatable bool
}

// topics checks that every topic of the pipeline on s exists (or, for
// the ledger's, can be created) and that the principal may do what the
// relay does with it: the source topics on the cluster it reads, the
// topics it writes on the one it writes to.
func (c *checker) topics(ctx context.Context, s *side) {
	var names []string
	needs := make(map[string][]need)
	add := func(t string, n need) {
		if _, seen := needs[t]; !seen {
			names = append(names, t)
		}
		needs[t] = append(needs[t], n)
	}
	reads, writes := s.role != brokerfloor.Sink, s.role != brokerfloor.Source
	if reads {
		for _, t := range c.p.Source.Topics {
			add(t, need{role: "source", ops: []kmsg.ACLOperation{kmsg.ACLOperationRead}})
		}
	}
	if writes {
		for _, t := range c.p.OutputTopics() {
			role := "output"
			if t == c.p.DeadLetter.Topic {
				role = "dead-letter"
			}
			add(t, need{role: role, ops: []kmsg.ACLOperation{kmsg.ACLOperationWrite, kmsg.ACLOperationDescribeConfigs}})
		}
	}
	if writes && c.p.Delivery == config.ExactlyOnce {
		rw := []kmsg.ACLOperation{kmsg.ACLOperationRead, kmsg.ACLOperationWrite}
		add(c.p.Ledger.Topic, need{role: "ledger", ops: rw, creatable: true})
		add(eos.SnapshotTopic(c.p.Ledger.Topic), need{role: "ledger snapshots", ops: rw, creatable: true})
	}

	req := kmsg.NewPtrMetadataRequest()
	req.IncludeTopicAuthorizedOperations = true
	for _, n := range names {
		t := kmsg.NewMetadataRequestTopic()
		t.Topic = kmsg.StringPtr(n)
		req.Topics = append(req.Topics, t)
	}
	resp, err := request[*kmsg.MetadataResponse](ctx, s.cl, req)
	if err != nil {
		s.add(Fail, "topics", "Metadata: %v", err)
		return
	}
	byName := make(map[string]kmsg.MetadataResponseTopic, len(resp.Topics))
	for _, t := range resp.Topics {
		if t.Topic != nil {
			byName[*t.Topic] = t
		}
	}
	for _, name := range names {
		ns := needs[name]
		var roles []string
		var ops []kmsg.ACLOperation
		creatable := false
		for _, n := range ns {
			roles = append(roles, n.role)
			ops = append(ops, n.ops...)
			creatable = creatable || n.creatable
		}
		slices.Sort(ops)
		ops = slices.Compact(ops)
		check := strings.Join(roles, " and ") + " topic " + name
		t, ok := byName[name]
		err := kerr.ErrorForCode(t.ErrorCode)
		switch {
		case !ok:
			s.add(Fail, check, "not in the Metadata answer")
		case errors.Is(err, kerr.UnknownTopicOrPartition) && creatable:
			if c.creatable(ctx, s, check, name) {
				c.written = append(c.written, written{name: name, check: check, role: roles[0], create: true})
			}
		case errors.Is(err, kerr.UnknownTopicOrPartition):
			s.add(Fail, check, "does not exist (create it first)")
		case errors.Is(err, kerr.TopicAuthorizationFailed) && creatable:
			s.add(Fail, check, "not authorized to describe it (TOPIC_AUTHORIZATION_FAILED): the relay needs %s on it, and CREATE while it does not exist", opNames(ops))
		case errors.Is(err, kerr.TopicAuthorizationFailed):
			s.add(Fail, check, "not authorized to describe it (TOPIC_AUTHORIZATION_FAILED): the relay needs %s on it", opNames(ops))
		case err != nil:
			s.add(Fail, check, "%v", err)
		default:
			allowed(s, check, partitions(len(t.Partitions)), t.AuthorizedOperations, ops)
			if reads && slices.Contains(c.p.Source.Topics, name) {
				c.sourceParts += len(t.Partitions)
			}
			if w, ok := writtenTopic(name, check, roles, t.Partitions); ok {
				c.written = append(c.written, w)
			}
		}
	}
}

// creatable checks with CreateTopics validate_only that the relay may
// create a missing ledger topic, replicated as it would
// (eos.LedgerReplication), and reports whether it may.
func (c *checker) creatable(ctx context.Context, s *side, check, name string) bool {
	req := kmsg.NewPtrCreateTopicsRequest()
	req.ValidateOnly = true
	req.TimeoutMillis = 10000
	t := kmsg.NewCreateTopicsRequestTopic()
	rf, cfgs := eos.LedgerReplication(s.brokers)
	t.Topic, t.NumPartitions, t.ReplicationFactor = name, 1, rf
	for _, k := range slices.Sorted(maps.Keys(cfgs)) {
		tc := kmsg.NewCreateTopicsRequestTopicConfig()
		tc.Name, tc.Value = k, kmsg.StringPtr(cfgs[k])
		t.Configs = append(t.Configs, tc)
	}
	req.Topics = append(req.Topics, t)
	resp, err := request[*kmsg.CreateTopicsResponse](ctx, s.cl, req)
	if err == nil && len(resp.Topics) == 1 {
		err = kerr.ErrorForCode(resp.Topics[0].ErrorCode)
	}
	switch {
	case err == nil:
		s.add(OK, check, "does not exist yet; the relay will create it (CREATE allowed, validated only; READ and WRITE are checked once it exists)")
		return true
	case errors.Is(err, kerr.TopicAuthorizationFailed) || errors.Is(err, kerr.ClusterAuthorizationFailed):
		s.add(Fail, check, "does not exist and this principal may not create it (%s): grant CREATE on the topic (or the cluster), or create it first", shortErr(err))
	default:
		s.add(Fail, check, "does not exist and cannot be created: %v", err)
	}
	return false
}

// allowed reports whether the authorized operations ops include every op
// of want, as a check of s.
func allowed(s *side, check, found string, authorized int32, want []kmsg.ACLOperation) {
	if authorized == math.MinInt32 {
		s.add(Warn, check, "%s; the broker did not report this principal's permissions (needs %s)", found, opNames(want))
		return
	}
	var missing []kmsg.ACLOperation
	for _, op := range want {
		if !hasOp(authorized, op) {
			missing = append(missing, op)
		}
	}
	if len(missing) > 0 {
		s.add(Fail, check, "%s; not authorized to %s (allowed: %s)", found, opNames(missing), opNames(ops(authorized)))
		return
	}
	s.add(OK, check, "%s; %s allowed", found, opNames(want))
}

// group checks the share group: READ, and its configs readable and, when
// the relay manages them, writable.
func (c *checker) group(ctx context.Context) {
	g := c.p.Source.Group
	check := "share group " + g

	// A ShareFetch that closes a session nobody opened: the broker checks
	// READ on the group first, then finds no session, and changes
	// nothing. (ShareGroupDescribe reports authorized operations only for
	// a group that exists.)
	sf := kmsg.NewPtrShareFetchRequest()
	sf.GroupID = kmsg.StringPtr(g)
	sf.MemberID = kmsg.StringPtr("sharerelay-check-member")
	sf.ShareSessionEpoch = -1
	resp, err := request[*kmsg.ShareFetchResponse](ctx, c.src.cl, sf)
	if err == nil {
		err = kerr.ErrorForCode(resp.ErrorCode)
	}
	switch {
	case errors.Is(err, kerr.GroupAuthorizationFailed):
		c.src.add(Fail, check, "not authorized to READ it (GROUP_AUTHORIZATION_FAILED): share consumers could not join")
	case err == nil || errors.Is(err, kerr.ShareSessionNotFound) || errors.Is(err, kerr.InvalidShareSessionEpoch) || errors.Is(err, kerr.InvalidRequest):
		c.src.add(OK, check, "READ allowed")
	default:
		c.src.add(Warn, check, "READ not checked: %v", err)
	}

	cfgs, err := describeGroup(ctx, c.src.cl, g)
	switch {
	case errors.Is(err, kerr.GroupAuthorizationFailed):
		c.src.add(Fail, check+" configs", "not authorized to read them (needs DESCRIBE_CONFIGS, or ALTER_CONFIGS): the relay could not learn the delivery limit and lock duration")
	case err != nil:
		c.src.add(Fail, check+" configs", "cannot read them: %v", err)
	default:
		c.groupConfigs = cfgs
		c.src.add(OK, check+" configs", "readable (%s=%s, %s=%s, %s=%s)",
			sharegroup.DeliveryCountLimit, orUnset(cfgs[sharegroup.DeliveryCountLimit]),
			sharegroup.LockDuration, orUnset(cfgs[sharegroup.LockDuration]),
			sharegroup.IsolationLevel, orUnset(cfgs[sharegroup.IsolationLevel]))
	}

	if !c.managed() {
		c.src.add(OK, check+" configs", "left alone (source.manage_group_config: false), so ALTER_CONFIGS is not needed")
		return
	}
	c.plan = sharegroup.ConfigsToSet(ctx, c.src.cl, c.p)
	set := c.plan.Configs
	err = validateGroupConfigs(ctx, c.src.cl, g, set)
	keys := slices.Sorted(func(yield func(string) bool) {
		for k := range set {
			if !yield(k + "=" + set[k]) {
				return
			}
		}
	})
	switch {
	case errors.Is(err, kerr.GroupAuthorizationFailed):
		c.src.add(Fail, check+" configs", "not authorized to set them (needs ALTER_CONFIGS; the relay sets %s at start)", strings.Join(keys, ", "))
	case err != nil:
		c.src.add(Fail, check+" configs", "the broker refuses %s: %v", strings.Join(keys, ", "), err)
	default:
		c.src.add(OK, check+" configs", "ALTER_CONFIGS allowed; the broker accepts %s (validated only)", strings.Join(keys, ", "))
	}
}

// managed reports whether the relay sets the group's configs.
func (c *checker) managed() bool {
	return c.p.Source.ManageGroupConfig == nil || *c.p.Source.ManageGroupConfig
}

// transactionalIDs checks WRITE on the pipeline's transactional ids with an
// AddPartitionsToTxn (v3, the last version clients send) for an id of the
// prefix that no relay uses and no producer id: the broker checks WRITE on
// the id, then on the topics, then finds that the id has no transaction,
// and changes nothing.
func (c *checker) transactionalIDs(ctx context.Context) {
	prefix := "sharerelay-" + c.p.Name + "-"
	check := "transactional ids " + prefix + "*"
	if v, ok := c.sink.versions.LookupMaxKeyVersion(kmsg.AddPartitionsToTxn.Int16()); !ok || v < 3 {
		c.sink.add(Warn, check, "not checked: the broker has no AddPartitionsToTxn v3 (WRITE on the prefix is needed)")
		return
	}
	req := kmsg.NewPtrAddPartitionsToTxnRequest()
	req.Version = 3
	req.TransactionalID = prefix + "relay-check"
	req.ProducerID, req.ProducerEpoch = -1, -1
	t := kmsg.NewAddPartitionsToTxnRequestTopic()
	t.Topic, t.Partitions = c.p.Output.Topic, []int32{0}
	req.Topics = append(req.Topics, t)
	resp, err := request[*kmsg.AddPartitionsToTxnResponse](ctx, c.sink.cl, req)
	if err == nil {
		for _, rt := range resp.Topics {
			for _, rp := range rt.Partitions {
				if e := kerr.ErrorForCode(rp.ErrorCode); errors.Is(e, kerr.TransactionalIDAuthorizationFailed) {
					err = e
				}
			}
		}
	}
	switch {
	case errors.Is(err, kerr.TransactionalIDAuthorizationFailed):
		c.sink.add(Fail, check, "not authorized to WRITE them (TRANSACTIONAL_ID_AUTHORIZATION_FAILED): grant WRITE on the PREFIXED transactional id %q", prefix)
	case err != nil:
		c.sink.add(Warn, check, "WRITE not checked: %v", err)
	default:
		c.sink.add(OK, check, "WRITE allowed")
	}
}

// cluster reports the principal's operations on the cluster s, for
// information: the relay needs none. (Idempotent producers need no
// IDEMPOTENT_WRITE: since KIP-679, WRITE on a topic is enough; the
// secured real-broker tests grant no cluster permission.)
func (c *checker) cluster(ctx context.Context, s *side) {
	req := kmsg.NewPtrDescribeClusterRequest()
	req.IncludeClusterAuthorizedOperations = true
	resp, err := request[*kmsg.DescribeClusterResponse](ctx, s.cl, req)
	if err == nil {
		err = kerr.ErrorForCode(resp.ErrorCode)
	}
	switch {
	case err != nil:
		s.add(OK, "cluster", "none needed (DescribeCluster: %s)", shortErr(err))
	case resp.ClusterAuthorizedOperations == math.MinInt32 || resp.ClusterAuthorizedOperations == 0:
		s.add(OK, "cluster", "none needed (this principal's cluster operations are visible only with DESCRIBE on the cluster)")
	default:
		s.add(OK, "cluster", "none needed; allowed: %s", opNames(ops(resp.ClusterAuthorizedOperations)))
	}
}

// lockDuration checks that a transaction ends before the record locks of
// its batch expire.
func (c *checker) lockDuration(ctx context.Context) {
	const check = "lock duration"
	ms, from := c.groupSetting(ctx, sharegroup.LockDuration, "group.share.record.lock.duration.ms")
	if ms <= 0 {
		c.src.add(Warn, check, "unknown (neither the group's configs nor the broker's are readable); output.transaction_timeout %s must stay below it", c.p.Output.TransactionTimeout)
		return
	}
	lock := time.Duration(ms) * time.Millisecond
	switch {
	case c.p.Output.TransactionTimeout < lock:
		c.src.add(OK, check, "%s (from %s), above output.transaction_timeout %s", lock, from, c.p.Output.TransactionTimeout)
	case c.p.Delivery == config.ExactlyOnce:
		c.src.add(Fail, check, "%s (from %s) is not above output.transaction_timeout %s: a crashed worker's claim may outlive the locks of the records it blocks; lower the timeout or raise %s", lock, from, c.p.Output.TransactionTimeout, sharegroup.LockDuration)
	default:
		c.src.add(Warn, check, "%s (from %s) is not above output.transaction_timeout %s: a slow transaction writes duplicates", lock, from, c.p.Output.TransactionTimeout)
	}
}

// plannedSetting is groupSetting, except that a limit the relay raises at
// start (the group plan, when it manages the group's configs and the file
// does not set it) comes first.
func (c *checker) plannedSetting(ctx context.Context, key, brokerKey string) (int, string) {
	if _, own := c.p.Source.GroupConfigs[key]; !own && c.managed() {
		if v := atoi(c.plan.Configs[key]); v > 0 {
			return v, "the relay, which raises it at start"
		}
	}
	return c.groupSetting(ctx, key, brokerKey)
}

// groupSetting returns a share group setting the relay will run with, and
// where it comes from: the pipeline's group_configs (when the relay manages
// them), else the group's config, else the broker's default (brokerKey);
// 0 when none is readable.
func (c *checker) groupSetting(ctx context.Context, key, brokerKey string) (int, string) {
	if v, ok := c.p.Source.GroupConfigs[key]; ok && c.managed() {
		return atoi(v), "source.group_configs"
	}
	if v := atoi(c.groupConfigs[key]); v > 0 {
		return v, "the group's config"
	}
	if bc, err := sharegroup.BrokerConfig(ctx, kadm.NewClient(c.src.cl), brokerKey); err == nil {
		if v := atoi(bc[brokerKey]); v > 0 {
			return v, "the broker's " + brokerKey
		}
	}
	return 0, ""
}

// deliveryLimit is the group's delivery limit the relay will find, and
// where it comes from (Kafka's default of 5 when nothing says).
func (c *checker) deliveryLimit(ctx context.Context) (int, string) {
	limit, from := c.plannedSetting(ctx, sharegroup.DeliveryCountLimit, "group.share.delivery.count.limit")
	if limit <= 0 {
		return 5, "Kafka's default"
	}
	return limit, from
}

// deadLetterSpares checks that the group's delivery limit leaves enough
// deliveries after the relay's attempts for a crash during the last one:
// a crash can cost a record one delivery per share consumer of the
// instance, and two with one (sharegroup.ConsumersPerWorker,
// config.DefaultMaxAttempts); with fewer spares the broker may archive a
// failing record without its dead letter.
func (c *checker) deadLetterSpares(limit int, from string) {
	const check = "dead-letter spares"
	attempts := c.attempts(limit)
	need, sessions := 2, 0
	if c.p.Workers > 0 && c.p.Batch.Consumers > 0 {
		sessions = c.p.Workers * sharegroup.ConsumersPerWorker(c.p.Workers, c.p.Batch.Consumers, limit)
		need = max(2, sessions)
	}
	switch spare := limit - attempts; {
	case spare >= need:
		c.src.add(OK, check, "%d attempts, delivery limit %d (from %s): %d spare deliveries", attempts, limit, from, spare)
	case sessions > 2:
		c.src.add(Warn, check, "%d attempts, delivery limit %d (from %s): %d spare deliveries; a crash of an instance of %d share consumers can cost a record %d, and the broker then archives it without a dead letter (raise %s to %d, or lower dead_letter.max_attempts)", attempts, limit, from, max(0, spare), sessions, need, sharegroup.DeliveryCountLimit, attempts+need)
	default:
		c.src.add(Warn, check, "%d attempts, delivery limit %d (from %s): %d spare deliveries; a crash can cost a record two, and the broker then archives it without a dead letter (raise %s to %d)", attempts, limit, from, max(0, spare), sharegroup.DeliveryCountLimit, attempts+2)
	}
}

// shareConsumers says how many share consumers each worker will run: the
// relay lowers batch.consumers at start so that workers × consumers stays
// below the group's delivery limit (sharegroup.ConsumersPerWorker), since
// a crash of an instance can cost a record one delivery per share
// consumer.
func (c *checker) shareConsumers(limit int, from string) {
	const check = "share consumers"
	workers, want := c.p.Workers, c.p.Batch.Consumers
	if workers <= 0 || want <= 0 {
		return // not set: the pipeline was not loaded with its defaults
	}
	got := sharegroup.ConsumersPerWorker(workers, want, limit)
	switch {
	case workers >= limit:
		c.src.add(Warn, check, "%d workers reach the delivery limit %d (from %s): a crash of an instance can cost a record one delivery per share consumer, and the broker then archives it without output or dead letter; run more instances with fewer workers, or raise %s to %d",
			workers, limit, from, sharegroup.DeliveryCountLimit, workers*want+1)
	case got < want:
		c.src.add(Warn, check, "batch.consumers %d is lowered to %d at start: %d workers × consumers must stay below the delivery limit %d (from %s), since a crash of an instance can cost a record one delivery per share consumer; raise %s to %d to keep %d, or run more instances with fewer workers",
			want, got, workers, limit, from, sharegroup.DeliveryCountLimit, workers*want+1, want)
	default:
		c.src.add(OK, check, "workers × consumers = %d × %d, below the delivery limit %d (from %s)", workers, want, limit, from)
	}
}

// pollSize says how many share consumers a worker will run and how many
// records each asks for a poll, and why: the relay sizes what the file
// leaves to it to the record locks the group can give an instance
// (sharegroup.Size), shared with the relay instances in the group now
// and the one being checked, or with the planned fleet (WithInstances),
// whose rules it then judges (fleet). limit is the delivery limit
// (shareConsumers).
func (c *checker) pollSize(ctx context.Context, limit int, from string) {
	check := "poll size"
	workers, want := c.p.Workers, c.p.Batch.Consumers
	if workers <= 0 || want <= 0 {
		return
	}
	cset, mset := c.p.Batch.Explicit()
	locks, locksFrom := c.plannedSetting(ctx, sharegroup.RecordLocks, "group.share.partition.max.record.locks")
	d := sharegroup.Demand{Workers: workers, Consumers: want, MaxRecords: c.p.Batch.MaxRecords, ConsumersSet: cset, MaxRecordsSet: mset,
		ConsumersCap: sharegroup.ConsumersPerWorker(workers, want, limit), Partitions: c.sourceParts, RecordLocks: locks, Instances: 1}
	if c.instances > 0 {
		d.Instances = c.instances
		check = fmt.Sprintf("poll size for %s", plural(c.instances, "instance"))
	} else if ids, err := sharegroup.Members(ctx, kadm.NewClient(c.src.cl), c.p.Source.Group); err == nil {
		d.Instances, _ = sharegroup.InstancesOf(ids, "")
	}
	s := sharegroup.Size(d)
	if s.Short {
		c.src.add(Warn, check, "record locks short: %s (the record lock limit from %s): share fetches come back with fewer records, and exactly-once makes each piece a transaction; %s",
			s.Why, locksFrom, sharegroup.ShortAdvice)
	} else {
		c.src.add(OK, check, "%s", s.Why)
	}
	if c.instances > 0 {
		c.fleet(d, s, limit, from, locksFrom)
	}
}

// fleet judges a planned fleet of c.instances instances, each sized s for
// demand d, by the two rules a fleet must keep:
//   - the delivery limit: a crash of one instance can cost a record one
//     delivery per share consumer of the instance (workers × consumers),
//     which the spares past the dead-letter attempts must cover, whatever
//     the fleet's size;
//   - the lock budget: what the fleet holds at once (instances × workers
//     × consumers × records a poll) fits the group's record locks over
//     the source partitions, or fetches come back in pieces.
func (c *checker) fleet(d sharegroup.Demand, s sharegroup.Sizing, limit int, from, locksFrom string) {
	check := fmt.Sprintf("fleet of %s", plural(c.instances, "instance"))
	held := c.instances * d.Workers * s.Consumers * s.MaxRecords
	consumers := d.Workers * s.Consumers
	spare := limit - c.attempts(limit)
	var broken []string
	lockRule := "the group's record locks are unknown"
	if d.Partitions > 0 && d.RecordLocks > 0 {
		budget := d.Partitions * d.RecordLocks
		lockRule = fmt.Sprintf("%d records held at most (%d × %d workers × %d × %d), of the group's %d record locks (%s × %d, from %s)",
			held, c.instances, d.Workers, s.Consumers, s.MaxRecords, budget, plural(d.Partitions, "partition"), d.RecordLocks, locksFrom)
		if held > budget {
			broken = append(broken, "lock budget")
			lockRule += ": short, fetches come back in pieces (" + sharegroup.ShortAdvice + ")"
		}
	}
	deliveryRule := fmt.Sprintf("a crash of one instance costs a record at most %d deliveries (%d workers × %d consumers), covered by the %d spares of delivery limit %d (from %s)",
		consumers, d.Workers, s.Consumers, spare, limit, from)
	if spare < max(2, consumers) {
		broken = append(broken, "delivery limit")
		deliveryRule = fmt.Sprintf("a crash of one instance can cost a record %d deliveries (%d workers × %d consumers), more than the %d spares of delivery limit %d (from %s): raise %s to %d",
			max(2, consumers), d.Workers, s.Consumers, spare, limit, from, sharegroup.DeliveryCountLimit, limit-spare+max(2, consumers))
	}
	if len(broken) > 0 {
		c.src.add(Warn, check, "%s broken: %s; %s", strings.Join(broken, " and "), lockRule, deliveryRule)
		return
	}
	c.src.add(OK, check, "delivery-limit and lock-budget rules hold: %s; %s", lockRule, deliveryRule)
}

// attempts is the dead-letter attempts the relay will give a failing
// record under the group's delivery limit limit (deadLetterSpares).
func (c *checker) attempts(limit int) int {
	if a := c.p.DeadLetter.MaxAttempts; a > 0 {
		return a
	}
	base := limit
	if c.plan.AttemptsLimit > 0 {
		base = min(limit, c.plan.AttemptsLimit)
	}
	return config.DefaultMaxAttempts(base)
}

// plural is n and word, with an s when n is not 1.
func plural(n int, word string) string {
	if n == 1 {
		return "1 " + word
	}
	return fmt.Sprintf("%d %ss", n, word)
}

// acquireMode says which acquire mode the relay will run with
// (config.Batch.Acquire).
func (c *checker) acquireMode() {
	mode, why := c.p.Batch.Acquire()
	c.rep.add(OK, "acquire mode", "%s (%s)", mode, why)
}

// brokerDLQ judges dead_letter.ack against a broker-side dead-letter
// queue on the group (KIP-1191), as the relay does at start
// (sharegroup.CheckBrokerDLQ).
func (c *checker) brokerDLQ() {
	const check = "broker-side dead-letter queue"
	if c.groupConfigs == nil {
		c.src.add(Skipped, check, "the share group's configs could not be read")
		return
	}
	note, warn, err := sharegroup.CheckBrokerDLQ(c.p.DeadLetter, c.p.Source.Group, c.groupConfigs)
	switch {
	case err != nil:
		c.src.add(Fail, check, "%v", err)
	case warn:
		c.src.add(Warn, check, "%s", note)
	case note != "":
		c.src.add(OK, check, "%s", note)
	default:
		c.src.add(OK, check, "none on share group %s (%s unset)", c.p.Source.Group, sharegroup.DLQTopic)
	}
}

// describeGroup returns the share group's configs (DescribeConfigs GROUP).
func describeGroup(ctx context.Context, cl *kgo.Client, group string) (map[string]string, error) {
	req := kmsg.NewPtrDescribeConfigsRequest()
	res := kmsg.NewDescribeConfigsRequestResource()
	res.ResourceType, res.ResourceName = kmsg.ConfigResourceTypeGroupConfig, group
	req.Resources = append(req.Resources, res)
	resp, err := request[*kmsg.DescribeConfigsResponse](ctx, cl, req)
	if err != nil {
		return nil, err
	}
	out := make(map[string]string)
	for _, r := range resp.Resources {
		if err := kerr.ErrorForCode(r.ErrorCode); err != nil {
			return nil, err
		}
		for _, c := range r.Configs {
			if c.Value != nil {
				out[c.Name] = *c.Value
			}
		}
	}
	return out, nil
}

// validateGroupConfigs asks the broker to validate, not apply, setting cfgs
// on the share group.
func validateGroupConfigs(ctx context.Context, cl *kgo.Client, group string, cfgs map[string]string) error {
	req := kmsg.NewPtrIncrementalAlterConfigsRequest()
	req.ValidateOnly = true
	res := kmsg.NewIncrementalAlterConfigsRequestResource()
	res.ResourceType, res.ResourceName = kmsg.ConfigResourceTypeGroupConfig, group
	for _, k := range slices.Sorted(func(yield func(string) bool) {
		for k := range cfgs {
			if !yield(k) {
				return
			}
		}
	}) {
		c := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
		c.Name, c.Value, c.Op = k, kmsg.StringPtr(cfgs[k]), kmsg.IncrementalAlterConfigOpSet
		res.Configs = append(res.Configs, c)
	}
	req.Resources = append(req.Resources, res)
	resp, err := request[*kmsg.IncrementalAlterConfigsResponse](ctx, cl, req)
	if err != nil {
		return err
	}
	for _, r := range resp.Resources {
		if err := kerr.ErrorForCode(r.ErrorCode); err != nil {
			if r.ErrorMessage != nil && *r.ErrorMessage != "" && !errors.Is(err, kerr.GroupAuthorizationFailed) {
				return fmt.Errorf("%w: %s", err, *r.ErrorMessage)
			}
			return err
		}
	}
	return nil
}

// hasOp reports whether the authorized-operations bit field has op.
func hasOp(field int32, op kmsg.ACLOperation) bool { return field&(1<<uint(op)) != 0 }

// ops lists the operations of an authorized-operations bit field.
func ops(field int32) []kmsg.ACLOperation {
	var out []kmsg.ACLOperation
	for op := kmsg.ACLOperationRead; op <= kmsg.ACLOperationDescribeTokens; op++ {
		if hasOp(field, op) {
			out = append(out, op)
		}
	}
	return out
}

// opNames is "READ, WRITE", or "nothing".
func opNames(ops []kmsg.ACLOperation) string {
	if len(ops) == 0 {
		return "nothing"
	}
	s := make([]string, len(ops))
	for i, op := range ops {
		s[i] = op.String()
	}
	return strings.Join(s, ", ")
}

// shortErr is a Kafka error's name, or the error.
func shortErr(err error) string {
	var ke *kerr.Error
	if errors.As(err, &ke) {
		return ke.Message
	}
	return err.Error()
}

func partitions(n int) string {
	if n == 1 {
		return "1 partition"
	}
	return strconv.Itoa(n) + " partitions"
}

func orUnset(v string) string {
	if v == "" {
		return "unset"
	}
	return v
}

func atoi(s string) int {
	n, err := strconv.Atoi(s)
	if err != nil {
		return 0
	}
	return n
}
