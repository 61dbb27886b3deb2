package brokerfloor

import (
	"errors"
	"fmt"
	"regexp"
	"strings"

	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"
)

// Minimum is the oldest Apache Kafka release line the relay runs on, as
// its messages name it.
const Minimum = "Kafka 4.2"

// ErrTooOld means the brokers lack a request version the relay needs:
// they are older than Minimum, or share groups are off.
var ErrTooOld = errors.New("the brokers are too old")

// ErrNoTransactionV2 means the cluster's finalized transaction.version is
// below 2 (KIP-890), without which a delayed claim write could be credited
// to the writer's next transaction: exactly-once refuses such a cluster.
var ErrNoTransactionV2 = errors.New("exactly-once needs the cluster's transaction.version at 2")

// Role is what a cluster is to a pipeline, which decides the requests it
// must answer. A pipeline without source.cluster has one cluster, Whole;
// with it, the share group lives on the Source cluster, where nothing is
// written, and the transactions on the Sink cluster, which needs no share
// groups.
type Role int8

const (
	// Whole is the one cluster of a pipeline without source.cluster: it
	// must answer every request the relay sends.
	Whole Role = iota
	// Source is the cluster of source.cluster: the share group, its
	// fetches and acknowledgements.
	Source
	// Sink is the cluster the relay writes to when the source is on
	// another: the transactions, their outputs and the claim ledger.
	Sink
)

// need is a request, at a version, the relay cannot do without.
type need struct {
	key     kmsg.Key
	version int16
	// what the relay uses it for, and where it comes from.
	why string
	// role is the cluster that must answer it: Source or Sink.
	role Role
	// since is the first Kafka release that answers it.
	since string
}

// needs are every request version the relay depends on, oldest first.
// The share group requests decide the floor; the others came earlier and
// are listed so that the rule says everything the relay uses.
var needs = []need{
	{kmsg.DescribeProducers, 0, "finding transactions a broker failure left open", Sink, "Kafka 2.8"},
	{kmsg.ListTransactions, 2, "listing the relay's own transactional ids by pattern, KIP-1152", Sink, "Kafka 4.1"},
	{kmsg.ShareGroupHeartbeat, 1, "share groups, KIP-932", Source, "Kafka 4.1"},
	{kmsg.ShareFetch, 2, "the record_limit acquire mode, KIP-1206", Source, "Kafka 4.2"},
	{kmsg.ShareAcknowledge, 2, "renewing record locks, KIP-1222", Source, "Kafka 4.2"},
}

// of reports whether a cluster of role r must answer n.
func (n need) of(r Role) bool { return r == Whole || n.role == r }

// Minimum is the oldest Kafka release line a cluster of role r can be:
// the release of the newest request it must answer. Whole's is Minimum.
func (r Role) Minimum() string {
	m := ""
	for _, n := range needs {
		if n.of(r) {
			m = n.since
		}
	}
	return m
}

// Verdict is what Judge found.
type Verdict struct {
	// Guess is the Kafka release the request versions look like
	// (kversion's guess without its "v": "4.2", "unknown").
	Guess string
	// Minimum is the oldest release the cluster can be for its role
	// (Role.Minimum), as the messages name it.
	Minimum string
	// TransactionVersion and ShareVersion are the finalized levels of
	// the features, 0 when not finalized.
	TransactionVersion, ShareVersion int16
	// TooOld, when not nil, wraps ErrTooOld and says what is missing and
	// the minimum. The relay refuses to start on it whatever the delivery.
	TooOld error
	// NoTransactionV2, when not nil, wraps ErrNoTransactionV2; only for
	// exactly-once, on a cluster the relay writes to (Whole or Sink).
	NoTransactionV2 error
}

// Err is every refusal of v joined, or nil when the relay can run.
func (v Verdict) Err() error { return errors.Join(v.TooOld, v.NoTransactionV2) }

// releaseRE finds the "v" of kversion's "v4.1" ("between v1.0 and v1.1").
var releaseRE = regexp.MustCompile(`\bv([0-9])`)

// Judge decides, from the ApiVersions answer resp of a broker, whether the
// relay can run on the cluster, for exactly-once when exactlyOnce. The
// answer of one broker stands for the cluster: a rolling upgrade may mix
// releases for a while, and the relay asks again at each start. It judges
// the one cluster of a pipeline without source.cluster: JudgeFor with
// Whole.
func Judge(resp *kmsg.ApiVersionsResponse, exactlyOnce bool) Verdict {
	return JudgeFor(resp, exactlyOnce, Whole)
}

// JudgeFor is Judge for a cluster of role r: a Source cluster is asked
// only for the share group requests and never for transaction.version
// (nothing is written to it), a Sink cluster only for the transactions'
// requests and transaction.version (it may have share groups off).
func JudgeFor(resp *kmsg.ApiVersionsResponse, exactlyOnce bool, r Role) Verdict {
	vs := kversion.FromApiVersionsResponse(resp)
	v := Verdict{Guess: releaseRE.ReplaceAllString(vs.VersionGuess(), "$1"), Minimum: r.Minimum()}
	supported := map[string]int16{}
	for _, f := range resp.SupportedFeatures {
		supported[f.Name] = f.MaxVersion
	}
	for _, f := range resp.FinalizedFeatures {
		switch f.Name {
		case "transaction.version":
			v.TransactionVersion = f.MaxVersionLevel
		case "share.version":
			v.ShareVersion = f.MaxVersionLevel
		}
	}

	var missing []string
	for _, n := range needs {
		if !n.of(r) {
			continue
		}
		if max, ok := vs.LookupMaxKeyVersion(n.key.Int16()); !ok || max < n.version {
			have := "not at all"
			if ok {
				have = fmt.Sprintf("up to v%d", max)
			}
			missing = append(missing, fmt.Sprintf("%s v%d (%s; they answer %s)", n.key.Name(), n.version, n.why, have))
		}
	}
	if len(missing) > 0 {
		// A broker that could run share groups but has them off hides
		// their requests: the release is not what to change then.
		hint := ""
		_, shares := vs.LookupMaxKeyVersion(kmsg.ShareGroupHeartbeat.Int16())
		if r != Sink && !shares && v.ShareVersion < 1 && supported["share.version"] >= 1 {
			hint = "; share groups may be off: share.version is finalized at 0 (kafka-features upgrade --feature share.version=1)"
		}
		v.TooOld = fmt.Errorf("%w: they look like Kafka %s (guessed from ApiVersions) and lack %s; the relay needs %s or newer%s",
			ErrTooOld, v.Guess, strings.Join(missing, ", "), v.Minimum, hint)
	}
	if exactlyOnce && r != Source && v.TransactionVersion < 2 {
		v.NoTransactionV2 = fmt.Errorf("%w: it is finalized at %d (on Kafka 4.0+: kafka-features upgrade --feature transaction.version=2), or use delivery: at-least-once",
			ErrNoTransactionV2, v.TransactionVersion)
	}
	return v
}
