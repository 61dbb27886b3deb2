package relay

import (
	"encoding/binary"
	"testing"
)

// batchHeader returns a magic-2 record batch of size bytes (header and a
// body of zeros) spanning span offsets.
func batchHeader(size, span int, control bool) []byte {
	b := make([]byte, size)
	binary.BigEndian.PutUint32(b[8:], uint32(size-12))
	b[16] = 2
	if control {
		binary.BigEndian.PutUint16(b[21:], 0x20)
	}
	binary.BigEndian.PutUint32(b[23:], uint32(span-1))
	return b
}

func TestLargestBatchSkipsMarkersAndACutBatch(t *testing.T) {
	var b []byte
	b = append(b, batchHeader(100, 80, false)...)
	b = append(b, batchHeader(61, 1, true)...) // a transaction marker
	b = append(b, batchHeader(400, 350, false)...)
	b = append(b, batchHeader(70, 5, false)...)
	if got := largestBatch(b); got != 350 {
		t.Fatalf("largestBatch = %d; want 350", got)
	}
	// A fetch cut inside a batch: the partial batch is not read.
	cut := append(append([]byte{}, batchHeader(100, 80, false)...), batchHeader(5000, 4000, false)[:300]...)
	if got := largestBatch(cut); got != 80 {
		t.Fatalf("largestBatch(cut) = %d; want 80", got)
	}
	if got := largestBatch(batchHeader(61, 1, true)); got != 0 {
		t.Fatalf("largestBatch(markers only) = %d; want 0", got)
	}
	if got := largestBatch(nil); got != 0 {
		t.Fatalf("largestBatch(nil) = %d; want 0", got)
	}
}
