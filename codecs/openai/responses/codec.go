package responses

import (
	"net/http"

	"github.com/recourse-dev/recourse/codec"
	"github.com/recourse-dev/recourse/codecs/internal/openaiwire"
	"github.com/recourse-dev/recourse/codecs/openai"
)

// Codec is the OpenAI Responses API codec, POST /v1/responses. The zero
// value is not usable; use [New]. A Codec is immutable after New and safe
// for concurrent use.
type Codec struct {
	reasoning   func(model string) bool
	background  bool
	keepRunning bool
}

var (
	_ codec.Codec       = (*Codec)(nil)
	_ codec.ErrorFramer = (*Codec)(nil)
	_ codec.Resumer     = (*Codec)(nil)
)

// Option configures a [Codec] in [New]. Options are applied in order, so a
// later option overrides an earlier one; a nil Option is ignored.
type Option func(*Codec)

// WithReasoningModel replaces the model-family detection that decides which
// sampling controls Encode takes (R14.1, R19.2). The default is
// [openai.IsReasoningModel], the detection of the chat completions codec. f
// is called from Encode, possibly concurrently, and must be safe for
// concurrent use. A nil f keeps the default.
func WithReasoningModel(f func(model string) bool) Option {
	return func(c *Codec) {
		if f != nil {
			c.reasoning = f
		}
	}
}

// Background makes Encode send every streamed request as a background
// response, "background":true and "store":true (R19.9): the provider keeps
// the response and its event log, so a stream cut after response.created
// is read again from the last event delivered instead of being sent again,
// and a caller that cancels it, or a call that gives up on it while it may
// still run, has it cancelled at the provider (R19.12, R19.15).
// Decision: a request that does not stream stays foreground, because a
// background answer to it is a queued response that would have to be
// polled, which the codec does not do. The default is foreground.
func Background() Option {
	return func(c *Codec) { c.background = true }
}

// KeepRunning leaves a background response running at the provider when
// its caller cancels the call or stops reading the stream, and when the
// call gives up on it (its resumes run out): CancelRequest then returns
// nil, so the engine sends no cancel request (R19.12, R19.15). The
// response can still be retrieved by its ID. The default cancels it.
func KeepRunning() Option {
	return func(c *Codec) { c.keepRunning = true }
}

// New returns a Responses API codec configured by opts; nil options are
// ignored. Without options, reasoning models are detected by
// [openai.IsReasoningModel]. The returned Codec is immutable and safe for
// concurrent use.
func New(opts ...Option) *Codec {
	c := &Codec{reasoning: openai.IsReasoningModel}
	for _, o := range opts {
		if o != nil {
			o(c)
		}
	}
	return c
}

// Provider returns [codec.OpenAI]: the Responses API is OpenAI's, so
// failures, events and spans name the same provider as the chat completions
// codec.
func (c *Codec) Provider() codec.Provider { return codec.OpenAI }

// Facts declares a hosted provider: a resend needs no admission, and the
// stream carries no telemetry (the zero codec.Facts).
func (c *Codec) Facts() codec.Facts { return codec.Facts{} }

// Path returns "/v1/responses", the endpoint path relative to a base URL
// given without /v1.
func (c *Codec) Path() string { return "/v1/responses" }

// RequestID returns the value of the x-request-id response header as sent,
// or "" when there is none. A nil h has no request ID.
func (c *Codec) RequestID(h http.Header) string { return h.Get("X-Request-Id") }

// ErrorFrame returns the Responses API in-band stream error event carrying
// safe (codec.ErrorFramer): an "error" event whose data is the provider's
// error event, {"type":"error","code":"recourse_error","message":safe,
// "param":null}, plus an "error" object with the same type, code and
// message. The provider's own error event has no "error" member, and
// openai-go's stream reader (ssestream) fails a stream only on data that
// has one, so the frame carries both shapes. The stream decoder reads it
// back as a *codec.ProviderError.
func (c *Codec) ErrorFrame(safe string) []byte { return c.ErrorFrameCode("recourse_error", safe) }

// ErrorFrameCode returns ErrorFrame's event with code in place of
// "recourse_error" as the event's and the error object's code
// (codec.CodedErrorFramer).
func (c *Codec) ErrorFrameCode(code, safe string) []byte {
	msg := openaiwire.AppendJSONString(nil, safe)
	cd := openaiwire.AppendJSONString(nil, code)
	b := []byte("event: error\ndata: {\"type\":\"error\",\"code\":")
	b = append(b, cd...)
	b = append(b, ",\"message\":"...)
	b = append(b, msg...)
	b = append(b, ",\"param\":null,\"error\":{\"type\":\"recourse_error\",\"code\":"...)
	b = append(b, cd...)
	b = append(b, ",\"message\":"...)
	b = append(b, msg...)
	return append(b, "}}\n\n"...)
}

// ErrorDocument returns OpenAI's error response body
// {"error":{"message":safe,"type":"recourse_error","param":null,"code":code}}
// and a newline (codec.ErrorDocumenter), the same for the Responses API as
// for chat completions.
func (c *Codec) ErrorDocument(code, safe string) []byte { return openaiwire.ErrorDocument(code, safe) }

// Capability evidence (R15.1, R19.8), as inspected on 2026-12-01.
const (
	capInspectedOn = "2026-12-01"
	capCreate      = "POST /v1/responses"
	capCreateURL   = "https://platform.openai.com/docs/api-reference/responses/create"
	capRetrieve    = "GET /v1/responses/{response_id}"
	capRetrieveURL = "https://platform.openai.com/docs/api-reference/responses/get"
	capCancel      = "POST /v1/responses/{response_id}/cancel"
	capCancelURL   = "https://platform.openai.com/docs/api-reference/responses/cancel"
	// capBackgroundURL is the provider's guide to background mode, the
	// basis of the retrieval and cancellation values.
	capBackgroundURL = "https://platform.openai.com/docs/guides/background"
)

// Capabilities returns the R19.8 declaration for POST /v1/responses: client
// abort unknown; remote cancellation and request status supported (the
// provider documents POST /v1/responses/{id}/cancel for background
// responses and GET /v1/responses/{id} for stored ones); idempotency
// unsupported; exact-attempt termination unknown. Each value carries its
// evidence. The values describe OpenAI's documentation; a custom host or
// proxy may differ. The codec uses retrieval and cancellation for
// background responses only (R19.9, R19.12). Every call returns new
// maps, so a caller may modify the result.
func (c *Codec) Capabilities() codec.Capabilities {
	create := codec.CapabilityEvidence{Endpoint: capCreate, DocumentationURL: capCreateURL, InspectedOn: capInspectedOn}
	cancel := codec.CapabilityEvidence{Endpoint: capCancel, DocumentationURL: capCancelURL, InspectedOn: capInspectedOn}
	retrieve := codec.CapabilityEvidence{Endpoint: capRetrieve, DocumentationURL: capRetrieveURL, InspectedOn: capInspectedOn}
	var caps codec.Capabilities
	caps.Declare(codec.ClientAbort, codec.Unknown, create.WithBasis(
		"The create reference describes streaming and background mode but not what closing the connection of a foreground response does; local HTTP abort alone is not provider support."))
	caps.Declare(codec.RequestCancellation, codec.Supported, cancel.WithBasis(
		"The cancel reference documents cancelling a response by ID; the background guide ("+capBackgroundURL+") limits it to responses created with background set to true."))
	caps.Declare(codec.RequestStatus, codec.Supported, retrieve.WithBasis(
		"The retrieve reference documents the status (queued, in_progress, completed, incomplete, failed, cancelled) of a stored response by ID, and the background guide ("+capBackgroundURL+") documents polling it and resuming its event stream with starting_after."))
	caps.Declare(codec.Idempotency, codec.Unsupported, create.WithBasis(
		"No idempotency facility is documented for this endpoint; no key is sent."))
	caps.Declare(codec.ExactAttemptTermination, codec.Unknown, create.WithBasis(
		"No documented evidence ties an abort to the end of one attempt's inference."))
	return caps
}
