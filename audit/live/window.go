package live

import (
	"github.com/sharerelay/sharerelay/audit"
)

// A source partition's unjudged offsets are held in chunks of chunkSize
// consecutive offsets: per offset one byte of marks (outputs and dead
// letters naming it) and one bit (is it a record), about 1.13 bytes; a
// chunk's fan-out states (16 bytes per offset) only once an output in it
// is numbered. Chunks wholly below the judged watermark are freed.
const (
	chunkShift = 12
	chunkSize  = 1 << chunkShift
)

// chunk is what the auditor knows of chunkSize consecutive offsets.
type chunk struct {
	marks  [chunkSize]audit.Marks
	record [chunkSize / 64]uint64
	fan    *[chunkSize]audit.FanOut
}

func (c *chunk) isRecord(i int) bool { return c.record[i/64]&(1<<(i%64)) != 0 }
func (c *chunk) setRecord(i int)     { c.record[i/64] |= 1 << (i % 64) }

// fanOut returns offset i's fan-out state, allocating the chunk's.
func (c *chunk) fanOut(i int) *audit.FanOut {
	if c.fan == nil {
		c.fan = new([chunkSize]audit.FanOut)
	}
	return &c.fan[i]
}

// fanAt returns offset i's fan-out state, the zero one when none.
func (c *chunk) fanAt(i int) audit.FanOut {
	if c.fan == nil {
		return audit.FanOut{}
	}
	return c.fan[i]
}

// window holds a source partition's offsets from base on, chunk by chunk;
// a nil chunk is one nothing is known of yet (no record read, nothing
// naming it).
type window struct {
	base   int64 // first offset of chunks[0], a multiple of chunkSize
	chunks []*chunk
}

// newWindow returns an empty window starting at the chunk holding from.
func newWindow(from int64) window { return window{base: from &^ (chunkSize - 1)} }

// at returns the chunk holding offset o and o's index in it; with alloc
// a missing chunk is made, else it is nil. o must not be below base.
func (w *window) at(o int64, alloc bool) (*chunk, int) {
	k := int((o - w.base) >> chunkShift)
	i := int(o & (chunkSize - 1))
	if k >= len(w.chunks) {
		if !alloc {
			return nil, i
		}
		w.chunks = append(w.chunks, make([]*chunk, k+1-len(w.chunks))...)
	}
	if w.chunks[k] == nil && alloc {
		w.chunks[k] = new(chunk)
	}
	return w.chunks[k], i
}

// advance frees the chunks wholly below offset to.
func (w *window) advance(to int64) {
	k := int((to - w.base) >> chunkShift)
	if k <= 0 {
		return
	}
	if k >= len(w.chunks) {
		w.chunks = w.chunks[:0]
	} else {
		clear(w.chunks[:k])
		w.chunks = w.chunks[k:]
	}
	w.base += int64(k) << chunkShift
}

// bytes is the memory the window holds: its chunks and their fan-out
// states.
func (w *window) bytes() int {
	n := cap(w.chunks) * 8
	for _, c := range w.chunks {
		if c != nil {
			n += chunkBytes
			if c.fan != nil {
				n += fanBytes
			}
		}
	}
	return n
}

const (
	chunkBytes = chunkSize + chunkSize/8
	fanBytes   = chunkSize * 16
)
