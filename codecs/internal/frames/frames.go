// Package frames is the frame queue the stream decoders of the codecs
// share: it numbers frames, remembers the end of the stream, and copies
// frame bytes into owned storage without an allocation per small frame.
package frames

import "github.com/recourse-dev/recourse/codec"

// Queue holds decoded frames until the retry layer takes them. The zero
// value is ready to use; a Queue is not safe for concurrent use.
type Queue struct {
	// ErrorRawOnly keeps Raw on error frames only: Push leaves it nil on
	// the others (codec.RequestInfo.TypedFrames).
	ErrorRawOnly bool

	frames []codec.Frame
	head   int
	index  int
	ended  bool
	arena  arena
}

// Push queues f with an owned copy of f.Raw, which may alias the caller's
// buffers (with ErrorRawOnly, a frame without Err gets no Raw at all). A
// frame that is neither a keepalive nor a malformed-frame error takes the
// next Index, counting from 1 (R13.6: indices restart with every attempt's
// decoder; 0 means no index). An error or a Done frame ends the stream.
func (q *Queue) Push(f codec.Frame) {
	if q.ErrorRawOnly && f.Err == nil {
		f.Raw = nil
	} else {
		f.Raw = q.arena.clone(f.Raw)
	}
	if f.Err != nil || f.Done {
		q.ended = true
	}
	if _, malformed := f.Err.(*codec.ProtocolError); !malformed && !f.Keepalive {
		q.index++
		f.Index = q.index
	}
	if q.frames == nil {
		// Room for the frames of a typical read, so a stream's queue
		// grows once rather than at 1, 2, 4 and 8.
		q.frames = make([]codec.Frame, 0, 8)
	}
	q.frames = append(q.frames, f)
}

// Next returns the next queued frame, or ok=false when none is queued.
func (q *Queue) Next() (codec.Frame, bool) {
	if q.head >= len(q.frames) {
		q.frames, q.head = q.frames[:0], 0
		return codec.Frame{}, false
	}
	f := q.frames[q.head]
	q.frames[q.head] = codec.Frame{}
	q.head++
	return f, true
}

// Index returns the Index of the last frame pushed that took one, or 0.
func (q *Queue) Index() int { return q.index }

// Ended reports whether a terminal or error frame was pushed.
func (q *Queue) Ended() bool { return q.ended }

// Raw returns an owned copy of b for a Frame's Raw.
func (q *Queue) Raw(b []byte) []byte { return q.arena.clone(b) }

// arena copies frame bytes. Short frames (keepalives above all) are carved
// from a shared block, so they cost no allocation of their own; each copy is
// a disjoint region whose capacity equals its length, so a Frame still owns
// its Raw: writing to it or appending to it changes no other frame. (One
// shared immutable slice for the common keepalive bytes would break that
// ownership.) A retained Raw keeps at most its block alive.
type arena struct{ block []byte }

const (
	arenaBlock = 4 << 10
	arenaLimit = 512
)

func (a *arena) clone(b []byte) []byte {
	if len(b) == 0 {
		return nil
	}
	if len(b) > arenaLimit {
		c := make([]byte, len(b))
		copy(c, b)
		return c
	}
	if cap(a.block)-len(a.block) < len(b) {
		a.block = make([]byte, 0, arenaBlock)
	}
	n := len(a.block)
	a.block = append(a.block, b...)
	return a.block[n:len(a.block):len(a.block)]
}
