package codec

import "net/http"

// ResumePoint is where a background stream can be read again (R19.9): the
// provider's response ID and the cursor, the sequence number of the last
// event handed to the consumer.
type ResumePoint struct {
	// ResponseID names the response at the provider. It is an opaque
	// provider identifier; safe records leave it out all the same (R10.3).
	ResponseID string
	// Cursor is the sequence number of the last event handed over, or -1
	// when none carried one: a resume read asks for the events after it.
	Cursor int64
	// Token is the provider's checkpoint token, for a codec whose streams
	// continue from a checkpoint by sending the same request with the
	// token (Gemini's continuationToken, R23.9), or "". It is opaque; safe
	// records leave it out all the same (R10.3).
	Token string
}

// Resumer is implemented by a codec whose background streams can be read
// again from a position instead of being sent again (R19.9): the engine
// asks it, when a stream fails, whether the stream is resumable and how to
// read it, and never hard-codes an endpoint. A codec whose foreground
// streams continue from a provider's checkpoint (Gemini, R23.9) implements
// it too: the engine asks ResumePoint of every stream it decodes, and a
// ResumeRequest may then carry a body (the same request with the
// checkpoint's token). A codec without it has no
// resume: an interrupted stream ends as R13 says. Implementations must be
// safe for concurrent use; the Observers they return are used by one
// attempt.
type Resumer interface {
	// Background reports whether the encoded request body creates a
	// background response: the provider keeps it, so a failure before its
	// ID is known may have been accepted (R19.11). The engine then sets
	// RequestInfo.Background for the call's attempts.
	Background(body []byte) bool
	// ResumePoint returns the position of the stream decoded by obs (an
	// Observer this codec returned), and ok=false when that stream cannot
	// be resumed: a foreground request, or no response ID yet.
	ResumePoint(obs Observer) (p ResumePoint, ok bool)
	// ResumeRequest returns the read of the stream after p, derived from
	// create, the request that created it or a read of the same response
	// (its URL and headers; create is not modified): a GET without a body.
	// Its context is create's.
	ResumeRequest(create *http.Request, p ResumePoint) *http.Request
	// ResumeObserver returns the stream decoder of a resume read after p: it
	// continues obs (the text, tool calls and response ID decoded so far)
	// and drops every event whose sequence number is at or below p.Cursor,
	// so the consumer sees each event once.
	ResumeObserver(obs Observer, p ResumePoint) Observer
	// CancelRequest returns the request that cancels response id, derived
	// from create like ResumeRequest (R19.12), or nil when the codec keeps
	// cancelled responses running.
	CancelRequest(create *http.Request, id string) *http.Request
	// ReadOf reports whether req, whose body is body (a client may put
	// "stream":true there, as openai-go's GetStreaming does), is a read of
	// a stored response rather than a create (R19.13): a retrieve (stream
	// false) or a stream read after p.Cursor (stream true). ok is false
	// for any other request. The
	// engine recovers a read without admission and, for a stream read,
	// resumes it like a background stream; a request to the provider that
	// is neither a create nor a read (a cancel, a delete) passes through
	// once, unjudged.
	ReadOf(req *http.Request, body []byte) (p ResumePoint, stream, ok bool)
	// Creates reports whether req creates a response (a completion): the
	// codec's endpoint, POST.
	Creates(req *http.Request) bool
}
