package recoursetest

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"
)

// Content types set by the Step constructors.
const (
	// ContentTypeJSON is the Content-Type that JSON sets by default.
	ContentTypeJSON = "application/json"
	// ContentTypeSSE is the Content-Type that SSE sets by default.
	ContentTypeSSE = "text/event-stream"
	// ContentTypeNDJSON is the Content-Type that NDJSON sets by default.
	ContentTypeNDJSON = "application/x-ndjson"
)

// Step describes how a Server answers one request.
//
// Build steps with JSON, SSE, NDJSON, Redirect or Reset and refine them with
// WithHeader, Cut, CutEvents, Held and Gated. The fields are exported so
// that a test can compose an unusual answer directly, for example
// Step{Status: 200, Chunks: [][]byte{[]byte(`{"id":`)}}.Held(). Step values
// are copied freely: the methods return a changed copy and never modify the
// step they are called on. The zero Step answers HTTP 200 with an empty
// body and no scripted headers.
//
// The handler plays a step in this order: record the request, optionally
// reset the connection (ResetBeforeHeaders), optionally wait for Gate when
// GateAt is negative, write the status and headers, then write each chunk
// (waiting for Gate before chunk GateAt and aborting once CutAfter bytes have
// been written), then wait for Gate when GateAt equals len(Chunks), then hold
// the connection open if Hold is set.
type Step struct {
	// Status is the response status code; zero means 200.
	Status int
	// Header holds the response headers. When it has no Content-Type the
	// server sends none (content sniffing is suppressed) so the client sees
	// exactly the scripted headers plus the ones net/http always adds (Date,
	// and Content-Length or Transfer-Encoding).
	Header http.Header
	// Chunks is the body, written chunk by chunk; every chunk is followed by a
	// Flush, so a response with chunks and without Content-Length uses
	// chunked transfer encoding.
	Chunks [][]byte
	// Gate makes the handler, when it is non-nil, wait before writing chunk index
	// GateAt until Gate is closed, the client goes away or the server closes.
	// Headers are flushed before waiting. A negative GateAt waits before the
	// status and headers are written (a slow first byte); GateAt equal to
	// len(Chunks) waits after the last chunk, before the response ends; a
	// GateAt greater than len(Chunks) never waits. If the client goes away or
	// the server closes instead, the connection is aborted.
	Gate <-chan struct{}
	// GateAt is the index of the chunk that Gate delays; see Gate.
	GateAt int
	// CutAfter makes the handler, when it is positive, abort the connection after
	// exactly CutAfter body bytes were written and flushed, splitting a chunk
	// if needed, so the client reads a truncated body and gets
	// io.ErrUnexpectedEOF. If the body is shorter than CutAfter the whole body
	// is written and the connection is aborted before the response is
	// properly terminated: a chunked body then lacks its final chunk (the
	// client still gets io.ErrUnexpectedEOF), while a body whose
	// Content-Length was already satisfied reads as complete.
	CutAfter int
	// ResetBeforeHeaders makes the handler hijack the connection and close it
	// with SO_LINGER 0 (a TCP RST) before writing any response byte.
	ResetBeforeHeaders bool
	// Hold makes the handler keep the response open after writing the headers
	// and chunks until the client goes away or the server closes, then aborts
	// the connection. A departure of the client observed by a Hold step (also
	// while it waits for its Gate) is reported on Server.Left.
	Hold bool
	// EndWithoutTerminator documents that the script deliberately ends a
	// stream without its protocol terminator (no "data: [DONE]" or no
	// "done":true line). It changes nothing: the chunks simply end.
	EndWithoutTerminator bool

	// dynamic, when set, builds the step to play from the request and the
	// server's state (the Responses API steps).
	dynamic func(s *Server, r Request) Step
	// cutEvents is 1 + the number of chunks after which CutEvents aborts,
	// or 0.
	cutEvents int
	// cutBeforeBody aborts the connection right after the headers.
	cutBeforeBody bool
}

// JSON returns a step answering status with body as application/json.
// headerKV lists extra header name/value pairs, for example
// JSON(429, body, "Retry-After", "3"); a repeated name adds another value. The
// step sets Content-Length to len(body) unless headerKV sets it, so a Cut JSON
// step is a truncated fixed-length body. JSON panics if headerKV has an odd
// length.
func JSON(status int, body string, headerKV ...string) Step {
	h := headerPairs(headerKV)
	setDefault(h, "Content-Type", ContentTypeJSON)
	setDefault(h, "Content-Length", strconv.Itoa(len(body)))
	st := Step{Status: status, Header: h}
	if body != "" {
		st.Chunks = [][]byte{[]byte(body)}
	}
	return st
}

// SSE returns a 200 text/event-stream step in which every event is written
// and flushed as its own chunk. Each event must be the whole event text
// including its blank-line terminator, for example "data: {...}\n\n"; events
// are written verbatim.
func SSE(events ...string) Step {
	st := Step{Status: http.StatusOK, Header: http.Header{"Content-Type": {ContentTypeSSE}}}
	for _, e := range events {
		st.Chunks = append(st.Chunks, []byte(e))
	}
	return st
}

// NDJSON returns a 200 application/x-ndjson step in which every line is
// written and flushed as its own chunk; "\n" is appended to a line that does
// not already end with one.
func NDJSON(lines ...string) Step {
	st := Step{Status: http.StatusOK, Header: http.Header{"Content-Type": {ContentTypeNDJSON}}}
	for _, l := range lines {
		if !strings.HasSuffix(l, "\n") {
			l += "\n"
		}
		st.Chunks = append(st.Chunks, []byte(l))
	}
	return st
}

// Redirect returns a step answering status (301, 302, 303, 307 or 308) with
// a Location header and an empty body. Redirect panics if status is not a 3xx
// code.
func Redirect(status int, location string) Step {
	if status < 300 || status > 399 {
		panic(fmt.Sprintf("recoursetest: Redirect status %d is not 3xx", status))
	}
	return Step{Status: status, Header: http.Header{"Location": {location}}}
}

// Reset returns a step that records the request and then resets the
// connection before any response byte is written.
func Reset() Step {
	return Step{ResetBeforeHeaders: true}
}

// WithHeader returns a copy of s whose header k is set to v, replacing any
// previous values of k. The original step is not modified.
func (s Step) WithHeader(k, v string) Step {
	s.Header = s.Header.Clone()
	if s.Header == nil {
		s.Header = http.Header{}
	}
	s.Header.Set(k, v)
	return s
}

// Cut returns a copy of s that aborts the connection after exactly n body
// bytes; see Step.CutAfter.
func (s Step) Cut(n int) Step {
	s.CutAfter = n
	return s
}

// Held returns a copy of s that holds the response open until the client goes
// away or the server closes; see Step.Hold.
func (s Step) Held() Step {
	s.Hold = true
	return s
}

// Gated returns a copy of s that waits for ch to be closed before writing
// chunk index at; see Step.Gate.
func (s Step) Gated(at int, ch <-chan struct{}) Step {
	s.GateAt = at
	s.Gate = ch
	return s
}

// headerPairs builds a header from name/value pairs.
func headerPairs(kv []string) http.Header {
	if len(kv)%2 != 0 {
		panic(fmt.Sprintf("recoursetest: odd number of header arguments (%d)", len(kv)))
	}
	h := http.Header{}
	for i := 0; i < len(kv); i += 2 {
		h.Add(kv[i], kv[i+1])
	}
	return h
}

// setDefault sets k to v unless h already has a value for k.
func setDefault(h http.Header, k, v string) {
	if _, ok := h[http.CanonicalHeaderKey(k)]; !ok {
		h.Set(k, v)
	}
}
