package brokerfloor

import (
	"errors"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"
)

// answer crafts the ApiVersions answer of a broker speaking vs's request
// versions, with the features finalized at the given levels and
// share.version and transaction.version supported up to their 4.2 maxima.
func answer(vs *kversion.Versions, finalized map[string]int16) *kmsg.ApiVersionsResponse {
	resp := kmsg.NewPtrApiVersionsResponse()
	vs.EachMaxKeyVersion(func(k, v int16) {
		ak := kmsg.NewApiVersionsResponseApiKey()
		ak.ApiKey, ak.MaxVersion = k, v
		resp.ApiKeys = append(resp.ApiKeys, ak)
	})
	for name, max := range map[string]int16{"share.version": 1, "transaction.version": 2} {
		sf := kmsg.NewApiVersionsResponseSupportedFeature()
		sf.Name, sf.MaxVersion = name, max
		resp.SupportedFeatures = append(resp.SupportedFeatures, sf)
	}
	for name, level := range finalized {
		ff := kmsg.NewApiVersionsResponseFinalizedFeature()
		ff.Name, ff.MinVersionLevel, ff.MaxVersionLevel = name, level, level
		resp.FinalizedFeatures = append(resp.FinalizedFeatures, ff)
	}
	return resp
}

// without is a copy of vs with key capped at max, or gone when max < 0.
func without(vs *kversion.Versions, key kmsg.Key, max int16) *kversion.Versions {
	vs = kversion.FromApiVersionsResponse(answer(vs, nil))
	vs.SetMaxKeyVersion(key.Int16(), max)
	return vs
}

var on = map[string]int16{"share.version": 1, "transaction.version": 2}

func TestJudgeRefusesBrokersOlderThanTheFloorAndSaysWhatIsMissing(t *testing.T) {
	for _, c := range []struct {
		name        string
		resp        *kmsg.ApiVersionsResponse
		exactlyOnce bool
		// tooOld and noTV2 are substrings the refusals must hold, ""
		// for no refusal.
		tooOld, noTV2 []string
		// notSay is a substring TooOld must not hold.
		notSay string
	}{
		{name: "Kafka 4.2 with share groups and transaction version 2 runs exactly-once",
			resp: answer(kversion.V4_2_0(), on), exactlyOnce: true},
		{name: "Kafka 4.4 runs exactly-once",
			resp: answer(kversion.V4_4_0(), on), exactlyOnce: true},
		{name: "Kafka 4.1 is refused for the share requests 4.2 brought, named with the release guessed and the minimum",
			resp: answer(kversion.V4_1_0(), on), exactlyOnce: true,
			tooOld: []string{"the brokers are too old: they look like Kafka 4.1 (guessed from ApiVersions)",
				"ShareFetch v2 (the record_limit acquire mode, KIP-1206; they answer up to v1)",
				"ShareAcknowledge v2 (renewing record locks, KIP-1222; they answer up to v1)",
				"the relay needs Kafka 4.2 or newer"}},
		{name: "Kafka 4.1 is refused for at-least-once too",
			resp: answer(kversion.V4_1_0(), on), tooOld: []string{"ShareFetch v2", "Kafka 4.2 or newer"}},
		{name: "Kafka 4.0, without share groups, is refused for every share request",
			resp: answer(kversion.V4_0_0(), map[string]int16{"transaction.version": 2}),
			tooOld: []string{"they look like Kafka 4.0", "ShareGroupHeartbeat v1 (share groups, KIP-932; they answer not at all)",
				"ShareFetch v2", "ShareAcknowledge v2", "ListTransactions v2"}},
		{name: "a broker without lock renewal alone is refused for it alone",
			resp:   answer(without(kversion.V4_2_0(), kmsg.ShareAcknowledge, 1), on),
			tooOld: []string{"lack ShareAcknowledge v2 (renewing record locks, KIP-1222; they answer up to v1); the relay"}},
		{name: "a broker without DescribeProducers is refused",
			resp:   answer(without(kversion.V4_2_0(), kmsg.DescribeProducers, -1), on),
			tooOld: []string{"lack DescribeProducers v0 (finding transactions a broker failure left open; they answer not at all)"}},
		{name: "share requests hidden while share.version is 0 point at the feature",
			resp: answer(without(without(without(kversion.V4_2_0(), kmsg.ShareFetch, -1), kmsg.ShareAcknowledge, -1), kmsg.ShareGroupHeartbeat, -1),
				map[string]int16{"transaction.version": 2}),
			tooOld: []string{"ShareFetch v2", "share groups may be off: share.version is finalized at 0 (kafka-features upgrade --feature share.version=1)"}},
		{name: "Kafka 4.1 with share groups off (its default) is told the release, not the feature",
			resp:   answer(kversion.V4_1_0(), map[string]int16{"transaction.version": 2}),
			tooOld: []string{"Kafka 4.2 or newer"}, notSay: "share groups may be off"},
		{name: "transaction version 1 refuses exactly-once, with the command that raises it",
			resp: answer(kversion.V4_2_0(), map[string]int16{"share.version": 1, "transaction.version": 1}), exactlyOnce: true,
			noTV2: []string{"exactly-once needs the cluster's transaction.version at 2: it is finalized at 1", "kafka-features upgrade --feature transaction.version=2", "delivery: at-least-once"}},
		{name: "transaction version 0 (not finalized) refuses exactly-once",
			resp: answer(kversion.V4_2_0(), map[string]int16{"share.version": 1}), exactlyOnce: true,
			noTV2: []string{"finalized at 0"}},
		{name: "transaction version 1 is enough for at-least-once",
			resp: answer(kversion.V4_2_0(), map[string]int16{"share.version": 1, "transaction.version": 1})},
		{name: "Kafka 4.1 at transaction version 1 is refused for both, in one error",
			resp: answer(kversion.V4_1_0(), map[string]int16{"share.version": 1, "transaction.version": 1}), exactlyOnce: true,
			tooOld: []string{"Kafka 4.2 or newer"}, noTV2: []string{"finalized at 1"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			v := Judge(c.resp, c.exactlyOnce)
			check := func(what string, err, sentinel error, want []string) {
				t.Helper()
				if len(want) == 0 {
					if err != nil {
						t.Fatalf("%s: %v; want none", what, err)
					}
					return
				}
				if !errors.Is(err, sentinel) {
					t.Fatalf("%s: %v; want an error wrapping %v", what, err, sentinel)
				}
				for _, w := range want {
					if !strings.Contains(err.Error(), w) {
						t.Errorf("%s: %q\ndoes not say %q", what, err, w)
					}
				}
				if !errors.Is(v.Err(), sentinel) {
					t.Errorf("Err() = %v; want it to carry %v", v.Err(), sentinel)
				}
			}
			check("TooOld", v.TooOld, ErrTooOld, c.tooOld)
			if c.notSay != "" && v.TooOld != nil && strings.Contains(v.TooOld.Error(), c.notSay) {
				t.Errorf("TooOld: %q\nsays %q", v.TooOld, c.notSay)
			}
			check("NoTransactionV2", v.NoTransactionV2, ErrNoTransactionV2, c.noTV2)
			if (len(c.tooOld) == 0 && len(c.noTV2) == 0) != (v.Err() == nil) {
				t.Errorf("Err() = %v with TooOld %v and NoTransactionV2 %v", v.Err(), v.TooOld, v.NoTransactionV2)
			}
		})
	}
}

func TestJudgeForARoleAsksOnlyWhatThatClusterIsUsedFor(t *testing.T) {
	txnV2 := map[string]int16{"transaction.version": 2}
	// A Kafka 4.1 cluster has transactions v2 but no record_limit share
	// fetches: a sink, not a source.
	if err := JudgeFor(answer(kversion.V4_1_0(), txnV2), Sink, true).Err(); err != nil {
		t.Errorf("4.1 as the sink of exactly-once: %v", err)
	}
	err := JudgeFor(answer(kversion.V4_1_0(), txnV2), Source, true).Err()
	if !errors.Is(err, ErrTooOld) || !strings.Contains(err.Error(), "(source cluster)") || !strings.Contains(err.Error(), "Kafka 4.2 or newer") {
		t.Errorf("4.1 as the source: %v, want too old naming the source cluster and the floor", err)
	}
	// A source needs no transactions: transaction.version 1 is no
	// refusal there, and is one on the sink of exactly-once.
	share := map[string]int16{"share.version": 1, "transaction.version": 1}
	if err := JudgeFor(answer(kversion.V4_2_0(), share), Source, true).Err(); err != nil {
		t.Errorf("source with transaction.version 1: %v", err)
	}
	if err := JudgeFor(answer(kversion.V4_2_0(), share), Sink, true).Err(); !errors.Is(err, ErrNoTransactionV2) {
		t.Errorf("sink with transaction.version 1: %v, want ErrNoTransactionV2", err)
	}
	// The sink's own requests are still asked of it.
	err = JudgeFor(answer(without(kversion.V4_2_0(), kmsg.DescribeProducers, -1), txnV2), Sink, true).Err()
	if !errors.Is(err, ErrTooOld) || !strings.Contains(err.Error(), "DescribeProducers") || !strings.Contains(err.Error(), "(sink cluster)") {
		t.Errorf("sink without DescribeProducers: %v", err)
	}
}
