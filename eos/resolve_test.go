package eos

import "testing"

// The resolver reads an orphaned claim's outputs. CI's broker-kill scenario
// (seed 1796101055044167887) duplicated 100 records: producer 4006's
// epoch-141 transaction, aborted when its worker replaced its producer,
// lost its marker in jobs[0]; the same producer's later transactions
// followed, and the resolver credited the claim with the epoch-165 COMMIT
// that ended one of them. Only a marker at the transaction's own epoch
// (E+1 on Apache Kafka) may settle it.
func TestResolverNeverCreditsAClaimWithALaterTransactionsMarkerInTheOutputs(t *testing.T) {
	const pid = 4006
	c := ClaimInfo{ProducerID: pid, Epoch: 141, At: 1000}
	commit, abort := []byte{0, 0, 0, 1}, []byte{0, 0, 0, 0}
	data := func(off int64, epoch int16) outputRecord {
		return outputRecord{offset: off, producerID: pid, epoch: epoch, timestamp: 1000}
	}
	marker := func(off int64, epoch int16, key []byte) outputRecord {
		return outputRecord{offset: off, producerID: pid, epoch: epoch, control: true, key: key, timestamp: 1000}
	}
	other := outputRecord{offset: 0, producerID: 9, epoch: 1, timestamp: 1000}

	cases := []struct {
		name    string
		markers MarkerEpochs
		recs    []outputRecord
		// want: -1 no verdict, 0 abort, 1 commit
		want int8
	}{
		{"the transaction's own marker at E+1", MarkersAtNextEpoch,
			[]outputRecord{data(10, 141), other, data(12, 141), marker(13, 142, commit)}, 1},
		{"marker lost here; a later transaction's COMMIT follows (the CI duplicate)", MarkersAtNextEpoch,
			[]outputRecord{data(18946, 141), data(19000, 165), marker(19199, 165, commit)}, -1},
		{"marker lost here; a later transaction's marker at E+1 of nothing else", MarkersAtNextEpoch,
			[]outputRecord{data(10, 141), data(11, 164), marker(12, 165, abort), data(13, 165), marker(14, 166, commit)}, -1},
		{"marker lost, then completed by hand at E+1 after later records", MarkersAtNextEpoch,
			[]outputRecord{data(10, 141), data(11, 165), marker(12, 166, commit), marker(13, 142, abort)}, 0},
		{"kfake writes its markers at E", MarkersAtSameOrNextEpoch,
			[]outputRecord{data(10, 141), marker(11, 141, commit)}, 1},
		{"a marker at E is not Kafka's", MarkersAtNextEpoch,
			[]outputRecord{data(10, 141), marker(11, 141, commit)}, -1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			v := &partVerdict{dataAt: -1, marker: -1}
			for _, r := range tc.recs {
				if v.observe(c, tc.markers, 5000, r) {
					break
				}
			}
			if v.marker != tc.want {
				t.Fatalf("verdict %d (%s), want %d", v.marker, v, tc.want)
			}
		})
	}
}
