package sse

import (
	"strings"

	"github.com/recourse-dev/recourse/codec"
)

// MaxDocument bounds the bytes of a plain JSON answer a Front keeps for its
// decoder's End: 64 KiB.
const MaxDocument = 64 << 10

// Front is the front end every SSE stream decoder shares (R13.10). It
// tells a plain JSON document (a provider's error answer sent in place of
// an event stream) from an event stream, keeps the first MaxDocument bytes
// of such a document, frames the stream and hands each complete event to
// its decoder. The zero value is ready to use: it reads an answer starting
// with "{" as a document and frames with the default event limit
// (DefaultMaxEventBytes), taking its line buffer at its first Write. A
// Front is not safe for concurrent use.
//
// The answer is a plain document when its first byte other than JSON
// whitespace (space, tab, "\r", "\n") is one of the Front's openers. Only
// JSON whitespace is skipped, because a JSON document may start only after
// those four bytes (RFC 8259): after any other byte, such as "\v", "\f"
// or U+00A0 (which unicode.IsSpace counts as space), the answer cannot
// parse as a document, so it is read as an event stream and nothing is
// kept for a document.
type Front struct {
	framer *Framer // nil until the first Write
	// openers are the bytes that start a plain document; "" means "{".
	openers string
	// sniffed: a byte other than JSON whitespace arrived; plain: it was
	// one of openers, and the first bytes of the answer are kept in doc.
	sniffed, plain bool
	doc            []byte
}

// NewFront returns a Front that reads an answer starting with one of the
// bytes of openers as a plain document ("{" for an object, "{[" for an
// object or an array; "" is "{", as in the zero Front).
func NewFront(openers string) Front {
	return Front{openers: openers}
}

// Write sniffs, keeps and frames p, then calls event with each complete
// event, in wire order, for as long as event returns true. The Event's
// slices are valid only during the call. When the stream cannot be framed
// (an event or a line over the limit), Write returns a *codec.ProtocolError
// ("oversized SSE event") whose Err is the *FrameError, once per Write; the
// framer's error is sticky, so the decoder ends its stream with it. Write
// calls event only from its own goroutine, before it returns, and keeps no
// reference to it.
func (f *Front) Write(p []byte, event func(Event) (more bool)) error {
	if !f.sniffed {
		for _, c := range p {
			if c == ' ' || c == '\t' || c == '\r' || c == '\n' {
				continue
			}
			openers := f.openers
			if openers == "" {
				openers = "{"
			}
			f.sniffed, f.plain = true, strings.IndexByte(openers, c) >= 0
			break
		}
	}
	if f.plain && len(f.doc) < MaxDocument {
		f.doc = append(f.doc, p[:min(len(p), MaxDocument-len(f.doc))]...)
	}
	if f.framer == nil {
		f.framer = NewFramer(0)
	}
	f.framer.Write(p)
	for {
		ev, ok, err := f.framer.Next()
		if err != nil {
			return &codec.ProtocolError{What: "oversized SSE event", Err: err}
		}
		if !ok || !event(ev) {
			return nil
		}
	}
}

// Decode is a stream decoder's Write: it does nothing once ended reports
// the stream over (its terminal or error frame is queued), and otherwise
// writes p as Write does and calls event with each complete event, in wire
// order, until ended reports true, so that bytes after the terminal frame
// are ignored. Its error is Write's ("oversized SSE event"), for the
// decoder to queue as an error frame. Decode keeps no reference to ended or
// event.
func (f *Front) Decode(p []byte, ended func() bool, event func(Event)) error {
	if ended() {
		return nil
	}
	return f.Write(p, func(ev Event) bool {
		event(ev)
		return !ended()
	})
}

// Document returns the kept first bytes (at most MaxDocument) of a plain
// document answer and true, or nil and false when the answer is an event
// stream or nothing but JSON whitespace arrived yet.
func (f *Front) Document() ([]byte, bool) {
	if !f.plain {
		return nil, false
	}
	return f.doc, true
}

// Free gives the framer's line buffer back for another stream's decoder
// (Framer.Free); the kept document stays. A Write afterwards takes a new
// buffer.
func (f *Front) Free() {
	if f.framer != nil {
		f.framer.Free()
	}
}
