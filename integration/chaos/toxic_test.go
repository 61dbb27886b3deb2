package chaos

import (
	"encoding/binary"
	"sync/atomic"

	"github.com/Shopify/toxiproxy/v2/stream"
	"github.com/Shopify/toxiproxy/v2/toxics"
)

// endTxnCut is a Toxiproxy toxic for the upstream (client → broker)
// stream that understands just enough of the Kafka protocol to find
// request frames (int32 size, int16 api key): on every Every-th EndTxn
// request (api key 26) it forwards the whole request and then closes the
// connection, so the broker processes the commit (or abort) while its
// answer has nowhere to go — an ambiguous commit made by the network, not
// by a failpoint. What the client does next (retry EndTxn on a new
// connection, or report the outcome unknown) is the client's real
// behaviour.
type endTxnCut struct {
	Every int64 `json:"every"`
	seen  atomic.Int64
}

// cutsDone counts the connections endTxnCut has cut, for the report.
var cutsDone atomic.Int64

const apiKeyEndTxn = 26

func init() { toxics.Register("kafka_endtxn_cut", new(endTxnCut)) }

// frameParser follows request frames across chunks.
type frameParser struct {
	hdr    [6]byte
	nh     int
	remain int64 // bytes of the current frame after the header
	key    int16
}

func (t *endTxnCut) NewState() interface{} { return new(frameParser) }

// feed consumes data and returns the offsets just past the end of every
// EndTxn request that completes within it.
func (p *frameParser) feed(data []byte) []int {
	var ends []int
	for i := 0; i < len(data); {
		if p.nh < len(p.hdr) {
			p.hdr[p.nh] = data[i]
			p.nh++
			i++
			if p.nh == len(p.hdr) {
				size := int64(int32(binary.BigEndian.Uint32(p.hdr[:4])))
				p.key = int16(binary.BigEndian.Uint16(p.hdr[4:]))
				p.remain = size - 2
				if p.remain <= 0 {
					p.nh = 0
					if p.key == apiKeyEndTxn {
						ends = append(ends, i)
					}
				}
			}
			continue
		}
		n := min(p.remain, int64(len(data)-i))
		i += int(n)
		p.remain -= n
		if p.remain == 0 {
			p.nh = 0
			if p.key == apiKeyEndTxn {
				ends = append(ends, i)
			}
		}
	}
	return ends
}

func (t *endTxnCut) Pipe(stub *toxics.ToxicStub) {
	p := stub.State.(*frameParser)
	every := max(t.Every, 1)
	for {
		select {
		case <-stub.Interrupt:
			return
		case c := <-stub.Input:
			if c == nil {
				stub.Close()
				return
			}
			for _, end := range p.feed(c.Data) {
				if t.seen.Add(1)%every != 0 {
					continue
				}
				// Forward the request, then cut: the link writes the
				// bytes before it sees the closed channel.
				stub.Output <- &stream.StreamChunk{Data: c.Data[:end], Timestamp: c.Timestamp}
				cutsDone.Add(1)
				stub.Close()
				go drain(stub.Input)
				return
			}
			stub.Output <- c
		}
	}
}

// drain keeps reading a closed-off stub's input so the toxic before it
// does not block forever, until the link closes it.
func drain(in <-chan *stream.StreamChunk) {
	for c := range in {
		if c == nil {
			return
		}
	}
}
