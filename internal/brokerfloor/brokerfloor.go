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

// SinkMinimum is the oldest release line a sink cluster (JudgeFor Sink)
// can run: the transactions' requests the relay sends came in Kafka 4.1.
const SinkMinimum = "Kafka 4.1"

// ErrTooOld means the brokers lack a request version the relay needs:
// they are older than Minimum, or share groups are off.
var ErrTooOld = errors.New("the brokers are too old")

// ErrNoTransactionV2 means the cluster's finalized transaction.version is
// below 2 (KIP-890), without which a delayed claim write could be credited
// to the writer's next transaction: exactly-once refuses such a cluster.
var ErrNoTransactionV2 = errors.New("exactly-once needs the cluster's transaction.version at 2")

// Role is what the relay uses a cluster for: with source.cluster the
// share group is on one cluster (Source) and the outputs, dead letters and
// claim ledger on another (Sink); otherwise one cluster is Both.
type Role int

// The roles of a cluster.
const (
	Both Role = iota
	Source
	Sink
)

// String names the role as messages do.
func (r Role) String() string {
	switch r {
	case Source:
		return "source cluster"
	case Sink:
		return "sink cluster"
	}
	return "cluster"
}

// need is a request, at a version, the relay cannot do without.
type need struct {
	key     kmsg.Key
	version int16
	// role is the cluster that must answer it: Source for the share
	// group's requests, Sink for the transactions'.
	role Role
	// what the relay uses it for, and where it comes from.
	why string
}

// needs are every request version the relay depends on, oldest first.
// The share group requests decide the floor; the others came earlier and
// are listed so that the rule says everything the relay uses.
var needs = []need{
	{kmsg.DescribeProducers, 0, Sink, "finding transactions a broker failure left open"},
	{kmsg.ListTransactions, 2, Sink, "listing the relay's own transactional ids by pattern, KIP-1152"},
	{kmsg.ShareGroupHeartbeat, 1, Source, "share groups, KIP-932"},
	{kmsg.ShareFetch, 2, Source, "the record_limit acquire mode, KIP-1206"},
	{kmsg.ShareAcknowledge, 2, Source, "renewing record locks, KIP-1222"},
}

// Verdict is what Judge found.
type Verdict struct {
	// Guess is the Kafka release the request versions look like
	// (kversion's guess without its "v": "4.2", "unknown").
	Guess string
	// TransactionVersion and ShareVersion are the finalized levels of
	// the features, 0 when not finalized.
	TransactionVersion, ShareVersion int16
	// TooOld, when not nil, wraps ErrTooOld and says what is missing and
	// the minimum. The relay refuses to start on it whatever the delivery.
	TooOld error
	// NoTransactionV2, when not nil, wraps ErrNoTransactionV2; only for
	// exactly-once.
	NoTransactionV2 error
}

// Err is every refusal of v joined, or nil when the relay can run.
func (v Verdict) Err() error { return errors.Join(v.TooOld, v.NoTransactionV2) }

// releaseRE finds the "v" of kversion's "v4.1" ("between v1.0 and v1.1").
var releaseRE = regexp.MustCompile(`\bv([0-9])`)

// Judge decides, from the ApiVersions answer resp of a broker, whether the
// relay can run on the cluster, for exactly-once when exactlyOnce. The
// answer of one broker stands for the cluster: a rolling upgrade may mix
// releases for a while, and the relay asks again at each start.
func Judge(resp *kmsg.ApiVersionsResponse, exactlyOnce bool) Verdict {
	return JudgeFor(resp, Both, exactlyOnce)
}

// JudgeFor is Judge for a cluster of the given role: a Source cluster
// needs the share group's requests and no transactions (nothing is
// written to it), a Sink cluster the transactions' requests and, for
// exactly-once, transaction.version 2, but no share groups. Messages
// name the role when it is not Both.
func JudgeFor(resp *kmsg.ApiVersionsResponse, role Role, exactlyOnce bool) Verdict {
	vs := kversion.FromApiVersionsResponse(resp)
	v := Verdict{Guess: releaseRE.ReplaceAllString(vs.VersionGuess(), "$1")}
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
		if role != Both && n.role != role {
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
		if !shares && v.ShareVersion < 1 && supported["share.version"] >= 1 {
			hint = "; share groups may be off: share.version is finalized at 0 (kafka-features upgrade --feature share.version=1)"
		}
		who, floor := "", Minimum+" or newer"
		if role != Both {
			who = " (" + role.String() + ")"
		}
		if role == Sink {
			floor = "brokers that answer them (" + SinkMinimum + " or newer) on the cluster it writes to"
		}
		v.TooOld = fmt.Errorf("%w%s: they look like Kafka %s (guessed from ApiVersions) and lack %s; the relay needs %s%s",
			ErrTooOld, who, v.Guess, strings.Join(missing, ", "), floor, hint)
	}
	if exactlyOnce && role != Source && v.TransactionVersion < 2 {
		v.NoTransactionV2 = fmt.Errorf("%w: it is finalized at %d (on Kafka 4.0+: kafka-features upgrade --feature transaction.version=2), or use delivery: at-least-once",
			ErrNoTransactionV2, v.TransactionVersion)
	}
	return v
}
