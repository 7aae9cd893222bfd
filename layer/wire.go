package layer

import (
	"context"
	"github.com/recourse-dev/recourse/event"
	"net/http"

	"github.com/recourse-dev/recourse/codec"
	"github.com/recourse-dev/recourse/internal/attemptkey"
)

// Direction says which way a wire snapshot went.
type Direction string

// The directions of a wire snapshot.
const (
	DirectionRequest  Direction = "request"
	DirectionResponse Direction = "response"
)

// WireSnapshot is one sensitive capture (R12): an independent copy of request
// or response bytes and headers. Mutating it cannot change any request.
type WireSnapshot struct {
	// Identity is the identity of the wire attempt the snapshot belongs to.
	event.Identity
	// Direction says whether the snapshot is of the request or of the
	// response.
	Direction Direction
	// Seq is the capture sequence index within the attempt, restarting at 0
	// each attempt (R12.2).
	Seq int
	// Bytes is a copy of the captured bytes: the request body (nil when the
	// request has none); for an ordinary or structured response, the body
	// received; for a stream, the bytes of one received chunk, empty in the
	// end marker (R12.2). It is nil for a response snapshot of a transport
	// failure before headers.
	Bytes []byte
	// Header is a copy of the request headers (request snapshot) or of the
	// response headers (response snapshot); nil when no response arrived.
	Header http.Header
	// Status is the response status, 0 when no response arrived.
	Status int
	// Complete reports, for a response, that the body ended at HTTP EOF.
	Complete bool
}

// WireHook is the sensitive capture hook (R12). Returning an error, or
// panicking, ends the completion with reason capture_failed and never causes
// another request (R12.3).
type WireHook func(ctx context.Context, s WireSnapshot) error

// CaptureError is returned through the wire plane when the capture hook
// failed. Cause is the hook's error or panic value (sensitive); Transport is
// a separate body transport error, when there was one.
type CaptureError struct {
	// Direction says which snapshot's hook call failed: DirectionRequest
	// (the request was then not sent) or DirectionResponse.
	Direction Direction
	// Cause is the error the hook returned or the value it panicked with;
	// sensitive, it may quote captured bytes. It is never nil.
	Cause any
	// Transport is the round trip's own error (a transport failure or a
	// refused redirect) when the failed hook call was the response snapshot
	// of that error, and nil otherwise.
	Transport error
}

// Error returns a safe message.
func (e *CaptureError) Error() string {
	return "recourse: " + string(e.Direction) + " capture failed"
}

// Attempt is what a layer can read of the wire attempt its request belongs
// to. The recovery engine places one in the context of every attempt's
// request, reached with AttemptFrom; outside an engine there is none. Its
// methods are safe for concurrent use.
type Attempt interface {
	// Identity returns the attempt's identity (R10.1).
	Identity() event.Identity
	// Info returns what the codec learned of the request.
	Info() codec.RequestInfo
	// Progress returns a snapshot of what the attempt received so far: raw
	// bytes and the semantic evidence observed and delivered (R13.2).
	Progress() event.Progress
}

// AttemptFrom returns the wire attempt of the request whose context is ctx,
// or nil outside a recovery engine. Wire-plane layers must work (as plain
// pass-through) when it is nil.
func AttemptFrom(ctx context.Context) Attempt {
	a, _ := ctx.Value(attemptkey.Key{}).(Attempt)
	return a
}
