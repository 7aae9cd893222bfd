package codec

import (
	"errors"
	"net/http"
	"regexp"
	"slices"
	"time"

	"github.com/recourse-dev/recourse/chat"
)

// RequestInfo is what a codec learns from an encoded request body.
type RequestInfo struct {
	// Model is the requested model.
	Model string
	// Operation is ordinary, structured (a schema or JSON format was asked
	// for) or streaming.
	Operation Operation
	// DropText reports that nobody reads the text a stream accumulates: a
	// drop-in stream, whose consumer reads the frames' bytes. A stream
	// decoder may then leave the Content and Reasoning of its terminal
	// frame's Completion empty, so that a stream holds O(1) memory however
	// long it runs; the frames, their counts and the rest of the Completion
	// (model, usage, finish reason, tool calls) are unchanged. The engine
	// sets it for every call whose *Call does not ask for TypedErrors; it is
	// false otherwise.
	DropText bool
	// TypedFrames reports that a stream's consumer reads typed frames (the
	// native client), never their bytes: a stream decoder may then leave
	// Raw nil on every frame but an error frame, whose Raw is the failure's
	// evidence, and so copy no bytes for the others. The engine sets it for
	// every call whose *Call asks for TypedErrors; it is false otherwise.
	TypedFrames bool
	// ProviderFinish reports that the stream's consumer takes a documented
	// finish other than an accepted one — a length or content-filter
	// finish, the Responses API's response.incomplete — as the provider's
	// answer, as a drop-in client does (R13.3): a stream decoder then ends
	// such a stream where the provider ends it (after [DONE], at the
	// response.incomplete event, at Ollama's done:true line) with a Done
	// frame whose Completion keeps that finish reason and the provider's
	// evidence but no tool call, instead of an incomplete_completion error
	// frame. The engine sets it for every call whose *Call does not ask for
	// TypedErrors, as DropText; it is false otherwise.
	ProviderFinish bool
	// Background reports that the request creates a background response
	// the provider keeps and can stream again (the Responses API's
	// "background":true, R19.9). Codecs without background mode leave it
	// false.
	Background bool
}

// Checker is implemented by a Codec that can judge a complete 2xx response
// body without decoding it: Check returns exactly the error Decode returns
// for body, nil when Decode succeeds, and builds no completion. The engine
// calls it instead of Decode for an ordinary call that nobody can read the
// result of (a drop-in call whose context carries no *Call), where the
// decoded text would be thrown away; a codec without it is asked to Decode.
// Check must be safe for concurrent use.
type Checker interface {
	Check(body []byte) error
}

// Observer accounts the semantic evidence in a response body as its bytes
// arrive (R13.2). Write must accept any split of the body and never fail;
// Observed returns the evidence seen so far, including in a body that is cut
// before it is complete. An Observer is used by one attempt only and is not
// safe for concurrent use.
type Observer interface {
	Write(p []byte)
	Observed() Counts
}

// Codec translates between the provider-neutral chat model and one
// provider's wire format, and tells the recovery layers what a body means.
// Implementations must be safe for concurrent use.
type Codec interface {
	// Provider names the provider family, for failures, events and spans.
	Provider() Provider
	// Facts declares what recovery must know of the provider's behaviour
	// (the admission default of R8.3, stream telemetry of R13.6).
	Facts() Facts
	// Capabilities declares what the endpoint can and cannot do (R15).
	Capabilities() Capabilities
	// Path is the endpoint path relative to the base URL, for example "/v1/chat/completions".
	Path() string
	// Encode encodes a request once (R2.3). A control the provider does not
	// support is an *UnsupportedError, never silently dropped (R14.1).
	Encode(req *chat.Request) ([]byte, error)
	// Describe reads an encoded request body.
	Describe(body []byte) (RequestInfo, error)
	// Decode decodes a complete 2xx ordinary or structured response body. It
	// returns a *ProviderError for an error object inside the body and a
	// *ProtocolError for a body that is not a valid response.
	Decode(body []byte) (*chat.Completion, error)
	// ErrorCode returns the provider error code found in an error body, as
	// sent (it may be arbitrary; the recovery layers keep only known codes).
	ErrorCode(body []byte) string
	// RequestID returns the provider request ID found in response headers, as sent.
	RequestID(h http.Header) string
	// NewObserver returns an Observer for the response body of one attempt.
	NewObserver(info RequestInfo) Observer
}

// Facts are what a codec declares about its provider that recovery
// depends on. Recovery code reads these facts, never a provider's name, so a
// new codec needs no change in the layers. The zero value describes a hosted
// provider (OpenAI): resends need no admission, streams carry no telemetry,
// every frame is handed to a drop-in client and the stream (SSE) has comment
// lines.
type Facts struct {
	// LocalInference says that an ambiguous failure may leave inference
	// running on a server the caller operates (Ollama, oMLX), so a resend
	// could duplicate it: without an admission hook, an eligible failure
	// stops with admission_required unless nothing was provably sent (R8.3).
	LocalInference bool
	// FrameTelemetry says that the stream's frames carry progress and
	// metrics that the engine reports as progress and metrics events
	// (R13.6: Ollama).
	FrameTelemetry bool
	// HideKeepalives says that keepalive frames are left out of the body a
	// drop-in client reads: they mean nothing, and the provider's own
	// client fails on them (Ollama's blank NDJSON lines).
	HideKeepalives bool
	// NoStreamComments says that the stream format has no comment lines
	// (Ollama's NDJSON), so nothing can be written into a stream that the
	// provider's clients would ignore: the proxy writes no in-band retry
	// notice into such a stream and never commits it before the chain
	// answers (R21.6). False, the zero value, is SSE, whose ": …" lines
	// every client skips.
	NoStreamComments bool
	// OverloadStatus is a status outside the standard set that the
	// provider answers when it is overloaded (Anthropic's 529), or 0. A
	// policy whose RetryableStatuses is the default (nil) treats it as
	// eligible like a 503; a policy with statuses of its own decides alone
	// (R22.1). It is an int16, which holds every HTTP status, to keep
	// Facts (copied into every call) small.
	OverloadStatus int16
}

// ErrorFramer is implemented by a codec whose stream format has an in-band
// error frame that the provider's own clients turn into an error. When a
// recovering stream read by a drop-in client ends with a recovery error, the
// engine hands the client ErrorFrame(safe) — safe being the error's Error
// text, nothing of the body, headers or prompt — as the body's last bytes,
// before the read error: a client that reads only frames and ignores its
// reader's error still learns that the stream failed. A codec without one
// ends the body with the read error alone.
type ErrorFramer interface {
	// ErrorFrame returns one whole frame carrying message safe.
	ErrorFrame(safe string) []byte
}

// CodedErrorFramer is implemented by a codec whose in-band error frame can
// carry a machine-readable code beside its message, as its error document
// does (ErrorDocumenter): the recovery proxy ends a stream it cuts at its
// own shutdown with code "shutdown", so that a client tells it from a
// failure of the provider (R21.10). A dialect without a code field does not
// implement it; the message then says what happened.
type CodedErrorFramer interface {
	// ErrorFrameCode returns one whole frame carrying code and message
	// safe, both written as JSON strings, escaped, whatever they hold.
	ErrorFrameCode(code, safe string) []byte
}

// ErrorDocumenter is implemented by a codec that can write an error
// response body in its provider's dialect, the body the provider's own
// clients parse into an error: the recovery proxy answers its own failures
// with it (R21.6) instead of knowing each provider's error shape.
type ErrorDocumenter interface {
	// ErrorDocument returns one whole error body, ending in a newline,
	// carrying the machine-readable code and the message safe; both are
	// written as JSON strings, escaped, whatever they hold. A dialect
	// without a code field leaves code out.
	ErrorDocument(code, safe string) []byte
}

// ModelRewriter is implemented by a codec that can name another model in a
// request body it encoded or described, without touching anything else of
// it: the fallback of a drop-in call uses it to send an SDK's request to
// another model of the same wire (R20.1). WithModel returns a new body and
// never modifies body; a body that is not a JSON object is an error. It
// must be safe for concurrent use.
type ModelRewriter interface {
	WithModel(body []byte, model string) ([]byte, error)
}

// ResetHinter is implemented by a codec whose provider says, in response
// headers of its own, when an exhausted rate limit resets (Anthropic's
// anthropic-ratelimit-*-reset). With retry.Policy.ProviderHints on, the
// engine asks it about a 429 that carries no valid Retry-After or
// millisecond hint: the reset is then a minimum delay of kind date, held
// to the ceiling and the time left like a Retry-After date (R22.6).
type ResetHinter interface {
	// ResetHint returns the instant a resend of a failure with status and
	// response headers h may succeed at, and the name of the header it
	// came from; ok is false when the headers name none. It must be safe
	// for concurrent use and must not keep h.
	ResetHint(status int, h http.Header) (at time.Time, header string, ok bool)
}

// ProviderError is an error object a provider returned inside a response
// body (R4.7: never eligible when it arrives in a 2xx body). Its Error text is
// safe: it holds the code only when the code is in the known set.
type ProviderError struct {
	// Code is the provider's error code as sent; sensitive (it may echo input).
	Code string
	// Message is the provider's message; sensitive.
	Message string
	// Status is the HTTP status the error object names, for a wire whose
	// in-band stream errors carry one (Gemini's
	// data: {"error":{"code":503,…}}), or the status the provider
	// documents for the error's type (Anthropic's overloaded_error is 529,
	// R22.2), or 0. An in-band error that names a status and arrives
	// before any semantic output is a failure of that status, judged as
	// the status would be (R23.3, R22.2), so an overload is resent like
	// the status answer it stands for; 0 keeps R4.7.
	Status int
}

// Error returns a safe message.
func (e *ProviderError) Error() string {
	if IsKnownProviderCode(e.Code) {
		return "recourse: provider error " + e.Code
	}
	return "recourse: provider error"
}

// ProtocolError is a malformed response: invalid JSON, SSE or NDJSON, invalid
// UTF-8 or a body that does not match the provider's schema (R4.5).
type ProtocolError struct {
	// What says, without quoting the body, what was wrong.
	What string
	// Err is the underlying decode error; sensitive (it may quote bytes).
	Err error
}

// Error returns a safe message.
func (e *ProtocolError) Error() string { return "recourse: malformed response: " + e.What }

// Unwrap returns nil: the decode error may quote the body and is reachable
// only through Inspect.
func (e *ProtocolError) Unwrap() error { return nil }

// UnsupportedError reports a request control that a codec's provider does not
// support (R14.1).
type UnsupportedError struct {
	// Provider is the provider of the codec that refused the request.
	Provider Provider
	// Control names the refused control; the project's codecs use the
	// chat.Options field name, sometimes with the condition that makes it
	// unsupported, for example "TopK" or "Temperature with reasoning
	// models".
	Control string
}

// Error returns a safe message naming the control.
func (e *UnsupportedError) Error() string {
	return "recourse: " + string(e.Provider) + " does not support " + e.Control
}

// KnownProviderCodes returns the fixed set of provider error codes that
// safe failure records may keep (R10.3): the privacy allow-list. Each call
// returns a new slice; changing it changes nothing else.
func KnownProviderCodes() []string { return slices.Clone(knownProviderCodes) }

// knownProviderCodes is the allow-list KnownProviderCodes copies; nothing
// outside this package can reach it.
var knownProviderCodes = []string{
	"rate_limit_exceeded",
	"server_error",
	"invalid_request_error",
	"invalid_api_key",
	"model_not_found",
	"insufficient_quota",
	"overloaded_error",
	// Codes that name why a request was refused, never what it held: a
	// fallback rule may name them (R20.2), and the caller sees them.
	"context_length_exceeded",
	"content_policy_violation",
	// The google.rpc.Code names a Gemini error's status carries (R23.2).
	"RESOURCE_EXHAUSTED",
	"UNAVAILABLE",
	"INTERNAL",
	"DEADLINE_EXCEEDED",
	"INVALID_ARGUMENT",
	"FAILED_PRECONDITION",
	"PERMISSION_DENIED",
	"UNAUTHENTICATED",
	"NOT_FOUND",
}

// IsKnownProviderCode reports whether code is in KnownProviderCodes.
func IsKnownProviderCode(code string) bool { return slices.Contains(knownProviderCodes, code) }

var requestIDPattern = regexp.MustCompile(`^(req_)?[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$`)

// IsValidRequestID reports whether id is a UUID, optionally "req_"-prefixed (R10.3).
func IsValidRequestID(id string) bool { return requestIDPattern.MatchString(id) }

// Support is a capability value (R15.1).
type Support string

// The capability values of R15.1.
const (
	Supported   Support = "supported"
	Unsupported Support = "unsupported"
	Unknown     Support = "unknown"
)

// Capability names one of the five capabilities of R15.1.
type Capability string

// The five capabilities every codec declares (R15.1).
const (
	ClientAbort             Capability = "client_abort"
	RequestCancellation     Capability = "request_cancellation"
	RequestStatus           Capability = "request_status"
	Idempotency             Capability = "idempotency"
	ExactAttemptTermination Capability = "exact_attempt_termination"
)

// AllCapabilities returns the five capabilities of R15.1, in order. Each
// call returns a new slice; changing it changes nothing else.
func AllCapabilities() []Capability { return slices.Clone(allCapabilities) }

var allCapabilities = []Capability{ClientAbort, RequestCancellation, RequestStatus, Idempotency, ExactAttemptTermination}

// CapabilityEvidence is the basis of one capability value (R15.1).
type CapabilityEvidence struct {
	// Endpoint is the exact endpoint inspected, for example "POST /v1/chat/completions".
	Endpoint string `json:"endpoint"`
	// DocumentationURL is the provider documentation that was read.
	DocumentationURL string `json:"documentation_url"`
	// InspectedOn is the inspection date, YYYY-MM-DD.
	InspectedOn string `json:"inspected_on"`
	// Basis says why the value was chosen.
	Basis string `json:"basis"`
}

// WithBasis returns a copy of e whose Basis is basis: the evidence of one
// value when several share the endpoint, documentation and inspection date
// of e. e itself is not changed.
func (e CapabilityEvidence) WithBasis(basis string) CapabilityEvidence {
	e.Basis = basis
	return e
}

// Capabilities declares what a provider endpoint can and cannot do (R15).
// Values describe the inspected endpoint's documentation; a custom host or
// proxy may differ. Capabilities never change eligibility or admission.
type Capabilities struct {
	// Values maps each capability to its declared value. A capability
	// missing from the map (or a nil map) is not declared: Get returns ""
	// for it and Validate fails.
	Values map[Capability]Support `json:"values"`
	// Evidence holds, for each capability, the basis of its value; Validate
	// requires a complete entry for every capability.
	Evidence map[Capability]CapabilityEvidence `json:"evidence"`
}

// Get returns the value of c, or "" when it is not declared.
func (c Capabilities) Get(k Capability) Support { return c.Values[k] }

// Declare sets the value of capability k to v, with its evidence ev,
// making c's maps when they are nil; a later Declare of the same k
// replaces the earlier one. It is how a codec's Capabilities method builds
// its declaration, one line a capability, without repeating the maps'
// construction (R15.1). Declare checks nothing (Validate does) and is not
// safe for concurrent use with anything that reads or writes c.
func (c *Capabilities) Declare(k Capability, v Support, ev CapabilityEvidence) {
	if c.Values == nil {
		c.Values = make(map[Capability]Support, len(allCapabilities))
	}
	if c.Evidence == nil {
		c.Evidence = make(map[Capability]CapabilityEvidence, len(allCapabilities))
	}
	c.Values[k] = v
	c.Evidence[k] = ev
}

// Validate reports an error unless all five values are declared with a valid
// Support value and a complete evidence entry (R15.1).
func (c Capabilities) Validate() error {
	var errs []error
	for _, k := range allCapabilities {
		switch c.Values[k] {
		case Supported, Unsupported, Unknown:
		default:
			errs = append(errs, errors.New("recourse: capability "+string(k)+" is not declared"))
			continue
		}
		ev, ok := c.Evidence[k]
		if !ok || ev.Endpoint == "" || ev.DocumentationURL == "" || ev.InspectedOn == "" || ev.Basis == "" {
			errs = append(errs, errors.New("recourse: capability "+string(k)+" has no complete evidence"))
		}
	}
	return errors.Join(errs...)
}

// KeyHeader is implemented by a codec whose provider takes its API key in
// a header of its own rather than as Authorization: Bearer <key>
// (Anthropic's x-api-key, Gemini's x-goog-api-key). A proxy that holds the
// upstream's key sends it as the header name with the value prefix then
// the key (R21.12); a codec that does not implement it takes
// Authorization with the prefix "Bearer ", which AuthHeader reports.
type KeyHeader interface {
	// KeyHeader returns the canonical name of the header that carries the
	// key and the text that goes before the key in its value. It must be
	// safe for concurrent use.
	KeyHeader() (name, prefix string)
}

// AuthHeader returns the header c's provider takes its API key in and the
// text before the key in its value: c's own KeyHeader when it implements
// one, Authorization and "Bearer " otherwise, also for a nil c.
func AuthHeader(c Codec) (name, prefix string) {
	if k, ok := c.(KeyHeader); ok {
		return k.KeyHeader()
	}
	return "Authorization", "Bearer "
}
