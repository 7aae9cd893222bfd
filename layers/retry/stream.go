package retry

import (
	"io"
	"net/http"
	"sync"
	"sync/atomic"

	"github.com/recourse-dev/recourse/codec"
	"github.com/recourse-dev/recourse/event"
	"github.com/recourse-dev/recourse/internal/attempt"
)

// streamBody is the consumer's view of a recovering stream (R13). It reads
// the current attempt's body, hands over only whole frames, and when the
// attempt fails before any semantic evidence it runs the decision plane and
// continues from a new attempt; after semantic evidence it ends with the
// typed interrupted error. As an io.ReadCloser it returns the frames' exact
// bytes (drop-in use); as a layer.FrameReader it returns typed frames.
type streamBody struct {
	c       *call
	n       int
	a       *attempt.Attempt
	resp    *http.Response
	buf     *[readBufferSize]byte // from readBuffers while reading; back on Close
	readErr error
	err     error // sticky: io.EOF after the terminal frame, or the final error
	raw     []byte
	// state says who may touch the stream: idle, a Read or NextFrame
	// running on the reading goroutine (busy), busy with a Close asked for
	// by another goroutine (closing: the reader finishes it as it
	// returns), or closed.
	state atomic.Int32
	// tail holds the raw bytes of an in-band provider error frame that ended
	// the stream: a drop-in client reads them before the typed error, so it
	// reports the provider's error as it would without recourse.
	tail []byte
	// got holds, while capture is on, the current attempt's last bytes as
	// read (at most about 2×MaxEvidenceBytes): the evidence of a capture
	// failure (R10.5, R12.3).
	got []byte
	// framed says that an in-band error frame (the provider's or the
	// codec's) was handed over: the read error follows.
	framed bool
	// atEOF says that the current attempt's body reached HTTP EOF and its
	// decoder was ended; endErr is the decoder's verdict.
	atEOF  bool
	endErr error
	// held holds, for a drop-in stream, the frames without semantic
	// evidence read since the stream began — its preamble: a chat stream's
	// role chunk, the Responses API's response.created,
	// response.in_progress and the first output item — until the first
	// frame with evidence or the terminal frame comes, so that a resend
	// before output drops them and the reader sees one preamble (R13.9);
	// heldBytes counts their bytes. out holds the frames released, to hand
	// over in order.
	held      []codec.Frame
	heldBytes int
	out       []codec.Frame
	// shown says that a frame with evidence or the terminal frame was
	// handed over, or that the preamble outgrew maxHeld: nothing is held
	// after it.
	shown bool
}

// maxHeld bounds the preamble a drop-in stream holds (R13.9): a provider's
// preamble is a few hundred bytes to a few KiB; beyond this bound it is
// handed over as it stands, and holding ends.
const maxHeld = 1 << 20

func (c *call) openStream(n int, resp *http.Response) *http.Response {
	c.stream = true
	b := &streamBody{c: c, n: n, a: c.cur, resp: resp}
	c.lc.Result.LogicalID, c.lc.Result.Stream = c.logical, b
	out := *resp
	out.Body = b
	out.ContentLength = -1
	return &out
}

// The states of a streamBody.
const (
	idle int32 = iota
	busy
	closing
	closed
)

// enter marks the stream busy for a Read or NextFrame; it reports false
// once the stream is closed.
func (b *streamBody) enter() bool {
	return b.state.CompareAndSwap(idle, busy)
}

// leave marks the stream idle again; when a Close came meanwhile it
// finishes that close here, on the reading goroutine, and reports true.
func (b *streamBody) leave() bool {
	if b.state.CompareAndSwap(busy, idle) {
		return false
	}
	b.state.Store(closed)
	b.finishClose()
	return true
}

// closedErr is what a read of a closed stream returns: its final error, or
// errClosed.
func (b *streamBody) closedErr() error {
	if b.err != nil {
		return b.err
	}
	return errClosed
}

// NextFrame returns the next frame of the stream. For a drop-in stream the
// frames without evidence that open it come with its first frame with
// evidence, or its terminal frame (R13.9); when the stream ends before,
// they are left to Read.
func (b *streamBody) NextFrame() (codec.Frame, error) {
	if !b.enter() {
		return codec.Frame{}, b.closedErr()
	}
	f, err := b.next()
	if b.leave() {
		return codec.Frame{}, errClosed
	}
	return f, err
}

// next returns the next frame for the consumer. A drop-in stream (whose
// frames carry their bytes) holds the frames without semantic evidence
// that open it until the first frame with evidence or the terminal frame,
// then hands them over before it, in order; a resend drops them (fail).
// Keepalives are never held: they keep a client's idle timer from
// expiring while the preamble waits. A preamble that outgrows maxHeld is
// handed over as it stands, and nothing is held after it.
func (b *streamBody) next() (codec.Frame, error) {
	for {
		if len(b.out) > 0 {
			f := b.out[0]
			b.out[0] = codec.Frame{}
			b.out = b.out[1:]
			return f, nil
		}
		f, err := b.nextFrame()
		if err != nil || b.shown || f.Keepalive || b.c.in.info.TypedFrames {
			return f, err
		}
		if !f.Done && !f.Semantic().Any() {
			b.held = append(b.held, f)
			b.heldBytes += len(f.Raw)
			if b.heldBytes > maxHeld {
				b.shown = true
				b.out, b.held, b.heldBytes = b.held, nil, 0
			}
			continue
		}
		b.shown = true
		if len(b.held) == 0 {
			return f, nil
		}
		b.out = append(b.held, f)
		b.held, b.heldBytes = nil, 0
	}
}

// takeHeld returns the bytes of the held frames, in order, and drops them.
func (b *streamBody) takeHeld() []byte {
	var raw []byte
	if b.heldBytes > 0 {
		raw = make([]byte, 0, b.heldBytes)
	}
	for _, f := range b.held {
		raw = append(raw, f.Raw...)
	}
	clear(b.held)
	b.held, b.heldBytes = b.held[:0], 0
	return raw
}

func (b *streamBody) nextFrame() (codec.Frame, error) {
	for {
		if b.err != nil {
			return codec.Frame{}, b.err
		}
		if b.c.ctx.Err() != nil {
			// Abort wins over queued content and completion (R13.5).
			b.fail(event.CategoryCancellation, b.c.ctx.Err(), nil, nil)
			continue
		}
		if f, ok := b.a.NextFrame(); ok {
			if b.frame(&f) {
				return f, nil
			}
			continue
		}
		if b.readErr != nil {
			err := b.readErr
			if err == io.EOF && !b.atEOF {
				// The decoder may queue the frames of a final line left
				// without its terminator as it ends (R13.3): they are
				// handled before its verdict.
				b.atEOF, b.endErr = true, b.a.EndStream()
				continue
			}
			b.readErr = nil
			b.ended(err)
			continue
		}
		if b.buf == nil {
			b.buf = readBuffers.Get().(*[readBufferSize]byte)
		}
		n, err := b.resp.Body.Read(b.buf[:])
		if b.a.OnWire != nil {
			b.got = append(b.got, b.buf[:n]...)
			if len(b.got) > 2*MaxEvidenceBytes {
				// Bounded: only the last MaxEvidenceBytes are evidence.
				b.got = append([]byte(nil), b.got[len(b.got)-MaxEvidenceBytes:]...)
			}
		}
		if err != nil {
			if captureError(err) != nil {
				// The capture of the bytes just read failed: the frames
				// they completed are never handed over (R12.3). Every
				// earlier frame was taken before this read.
				b.discard()
				b.ended(err)
				continue
			}
			b.readErr = err
		}
	}
}

// discard drops the frames queued in the current attempt's decoder.
func (b *streamBody) discard() {
	for {
		if _, ok := b.a.NextFrame(); !ok {
			return
		}
	}
}

// Deliver records evidence handed to the consumer.
func (b *streamBody) Deliver(cnt codec.Counts) { b.a.Deliver(cnt) }

// readBufferSize is the size of a stream body's read buffer.
const readBufferSize = 4 << 10

// readBuffers holds the read buffers of closed stream bodies for the next
// streams, so that a stream's read buffer costs no allocation in steady
// state.
var readBuffers = sync.Pool{New: func() any { return new([readBufferSize]byte) }}
