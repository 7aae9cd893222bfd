package recoursetest

import (
	"fmt"

	"github.com/recourse-dev/recourse/internal/scripted"
)

// Step describes how a Server answers one request. Build steps with JSON,
// SSE, NDJSON, Redirect or Reset and refine them with Cut and WithHeader.
// Step values are copied freely: the methods return a changed copy and never
// modify the step they are called on. The zero Step answers HTTP 200 with
// an empty body and no scripted headers.
type Step struct {
	step scripted.Step
}

// JSON returns a step answering status with body as application/json.
// headerKV lists extra header name/value pairs, for example
// JSON(429, body, "Retry-After", "3"); a repeated name adds another value,
// and a Content-Type pair replaces the default. The step sets Content-Length
// to len(body) unless headerKV sets it, so a Cut JSON step is a truncated
// fixed-length body. JSON panics if headerKV has an odd length.
func JSON(status int, body string, headerKV ...string) Step {
	if len(headerKV)%2 != 0 {
		panic(fmt.Sprintf("recoursetest: odd number of header arguments (%d)", len(headerKV)))
	}
	return Step{scripted.JSON(status, body, headerKV...)}
}

// SSE returns an HTTP 200 text/event-stream step in which every event is
// written and flushed as its own chunk, so the client receives the stream
// piece by piece with chunked transfer encoding. Each event must be the
// whole event text including its blank-line terminator, for example
// "data: {...}\n\n"; events are written verbatim. OpenAIStream returns the
// events of a complete OpenAI stream.
func SSE(events ...string) Step {
	return Step{scripted.SSE(events...)}
}

// NDJSON returns an HTTP 200 application/x-ndjson step in which every line
// is written and flushed as its own chunk; "\n" is appended to a line that
// does not already end with one. OllamaStream returns the lines of a
// complete Ollama stream.
func NDJSON(lines ...string) Step {
	return Step{scripted.NDJSON(lines...)}
}

// Redirect returns a step answering status (301, 302, 303, 307 or 308) with
// a Location header set to location and an empty body. Redirect panics if
// status is not a 3xx code.
func Redirect(status int, location string) Step {
	if status < 300 || status > 399 {
		panic(fmt.Sprintf("recoursetest: Redirect status %d is not 3xx", status))
	}
	return Step{scripted.Redirect(status, location)}
}

// Reset returns a step that records the request and then resets the TCP
// connection before any response byte is written, so the client's round
// trip fails with a transport error (typically "connection reset by peer"
// or an unexpected EOF).
func Reset() Step {
	return Step{scripted.Reset()}
}

// Cut returns a copy of s that aborts the connection after exactly n body
// bytes were written and flushed, splitting a chunk if needed, so the
// client reads a truncated body and gets io.ErrUnexpectedEOF. If the body
// is shorter than n the whole body is written and the connection is
// aborted before the response ends: a streamed (chunked) body then lacks
// its final chunk and still fails with io.ErrUnexpectedEOF, while a JSON
// body, whose Content-Length is already satisfied, reads as complete.
// A zero or negative n cancels an earlier Cut.
func (s Step) Cut(n int) Step {
	return Step{s.step.Cut(n)}
}

// WithHeader returns a copy of s whose response header k is set to v,
// replacing any previous values of k, for example
// SSE(events...).WithHeader("X-Request-Id", "req-1").
func (s Step) WithHeader(k, v string) Step {
	return Step{s.step.WithHeader(k, v)}
}
