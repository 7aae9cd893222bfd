package openai

import (
	"net/http"
	"strings"

	"github.com/recourse-dev/recourse/codec"
	"github.com/recourse-dev/recourse/codecs/internal/evidence"
	"github.com/recourse-dev/recourse/codecs/internal/openaiwire"
)

// Codec is the OpenAI chat completions codec. The zero value is not usable;
// use [New]. A Codec is immutable after New and safe for concurrent use.
type Codec struct {
	reasoning func(model string) bool
}

var _ codec.Codec = (*Codec)(nil)

// Option configures a [Codec] in [New]. Options are applied in order, so a
// later option overrides an earlier one; a nil Option is ignored.
type Option func(*Codec)

// WithReasoningModel replaces the model-family detection that decides how
// Encode adapts the sampling controls (R14.1). The default is
// [IsReasoningModel]. f is called from Encode, possibly concurrently, and
// must be safe for concurrent use. A nil f keeps the default.
func WithReasoningModel(f func(model string) bool) Option {
	return func(c *Codec) {
		if f != nil {
			c.reasoning = f
		}
	}
}

// New returns an OpenAI codec configured by opts; nil options are ignored.
// Without options, reasoning models are detected by [IsReasoningModel]. The
// returned Codec is immutable and safe for concurrent use.
func New(opts ...Option) *Codec {
	c := &Codec{reasoning: IsReasoningModel}
	for _, o := range opts {
		if o != nil {
			o(c)
		}
	}
	return c
}

// reasoningPrefixes are the model-name prefixes of OpenAI reasoning models.
var reasoningPrefixes = []string{"o1", "o3", "o4", "gpt-5"}

// IsReasoningModel reports whether model names an OpenAI reasoning model: a
// name that starts, ignoring case, with "o1", "o3", "o4" or "gpt-5". It is
// the default detection of a [Codec] and is safe for concurrent use.
func IsReasoningModel(model string) bool {
	for _, p := range reasoningPrefixes {
		if len(model) >= len(p) && strings.EqualFold(model[:len(p)], p) {
			return true
		}
	}
	return false
}

// Provider returns [codec.OpenAI].
func (c *Codec) Provider() codec.Provider { return codec.OpenAI }

// Facts declares a hosted provider: a resend needs no admission, and the
// stream carries no telemetry (the zero codec.Facts).
func (c *Codec) Facts() codec.Facts { return codec.Facts{} }

// ErrorFrame returns the OpenAI in-band stream error event carrying safe
// (codec.ErrorFramer): the form openai-go and go-openai turn into an error.
func (c *Codec) ErrorFrame(safe string) []byte { return openaiwire.ErrorFrame(safe) }

// ErrorFrameCode returns ErrorFrame's event with a "code" member too,
// {"error":{"message":safe,"type":"recourse_error","code":code}}
// (codec.CodedErrorFramer).
func (c *Codec) ErrorFrameCode(code, safe string) []byte {
	return openaiwire.ErrorFrameCode(code, safe)
}

// ErrorDocument returns OpenAI's error response body
// {"error":{"message":safe,"type":"recourse_error","param":null,"code":code}}
// and a newline (codec.ErrorDocumenter): openai-go and go-openai read it as
// an API error with that code.
func (c *Codec) ErrorDocument(code, safe string) []byte { return openaiwire.ErrorDocument(code, safe) }

// Path returns "/v1/chat/completions", the endpoint path relative to a base
// URL given without /v1.
func (c *Codec) Path() string { return "/v1/chat/completions" }

// RequestID returns the value of the x-request-id response header as sent,
// or "" when there is none. A nil h has no request ID.
func (c *Codec) RequestID(h http.Header) string { return h.Get("X-Request-Id") }

// Capability evidence (R15.2), as inspected on evidence.InspectedOn.
const (
	capEndpoint = "POST /v1/chat/completions"
	capDocURL   = "https://platform.openai.com/docs/api-reference/chat/create"
)

// Capabilities returns the R15.2 declaration for POST /v1/chat/completions:
// client abort unknown; remote cancellation, in-flight status and
// idempotency unsupported; exact-attempt termination unknown. Each value
// carries its evidence. The values describe OpenAI's documentation; a custom
// host or proxy may differ. Every call returns new maps, so a caller may
// modify the result.
func (c *Codec) Capabilities() codec.Capabilities {
	doc := codec.CapabilityEvidence{Endpoint: capEndpoint, DocumentationURL: capDocURL, InspectedOn: evidence.InspectedOn}
	var caps codec.Capabilities
	caps.Declare(codec.ClientAbort, codec.Unknown, doc.WithBasis(
		"The create reference describes request parameters and streaming but not how a client aborts; local HTTP abort alone is not provider support."))
	caps.Declare(codec.RequestCancellation, codec.Unsupported, doc.WithBasis(
		"The endpoint documentation describes no remote cancellation facility for chat completions."))
	caps.Declare(codec.RequestStatus, codec.Unsupported, doc.WithBasis(
		"Stored chat completion retrieval is a completed artifact, not in-flight status."))
	caps.Declare(codec.Idempotency, codec.Unsupported, doc.WithBasis(
		"No idempotency facility is documented for this endpoint; no key is sent."))
	caps.Declare(codec.ExactAttemptTermination, codec.Unknown, doc.WithBasis(
		"No documented evidence ties an abort to the end of one attempt's inference."))
	return caps
}
