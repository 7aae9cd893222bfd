package omlx

import (
	"net/http"
	"time"

	"github.com/recourse-dev/recourse/codec"
	"github.com/recourse-dev/recourse/codecs/internal/evidence"
	"github.com/recourse-dev/recourse/codecs/internal/openaiwire"
)

// endpointPath is the path of oMLX's chat endpoint, relative to the base URL.
const endpointPath = "/v1/chat/completions"

// DefaultLegacyTimeout is the ordinary-request timeout of recovery-disabled
// calls when WithLegacyTimeout is not given.
const DefaultLegacyTimeout = 300 * time.Second

// Codec is the codec of oMLX's POST /v1/chat/completions. It is immutable
// after New: one Codec may be shared by any number of goroutines.
type Codec struct {
	legacyTimeout time.Duration
}

var _ codec.Codec = (*Codec)(nil)

// Option configures a Codec. It cannot fail (R3.5); only this package can
// set a Codec's fields.
type Option func(*Codec)

// WithLegacyTimeout sets the ordinary-request timeout that applies only when
// recovery is disabled. The default is DefaultLegacyTimeout (300 s); zero or
// a negative d means no legacy timeout. Recovery-enabled calls never apply it
// (R7.2).
func WithLegacyTimeout(d time.Duration) Option {
	return func(c *Codec) { c.legacyTimeout = max(d, 0) }
}

// New returns an oMLX codec configured by opts, applied in order. Nil
// options are ignored.
func New(opts ...Option) *Codec {
	c := &Codec{legacyTimeout: DefaultLegacyTimeout}
	for _, o := range opts {
		if o != nil {
			o(c)
		}
	}
	return c
}

// LegacyTimeout returns the timeout of an ordinary (non-streaming) request
// made with recovery disabled: DefaultLegacyTimeout (300 s) unless
// WithLegacyTimeout changed it, and 0 for none. The chain applies it only
// when recovery is disabled; a recovery-enabled call never times out active
// generation (R7.2).
func (c *Codec) LegacyTimeout() time.Duration { return c.legacyTimeout }

// Provider returns codec.OMLX.
func (c *Codec) Provider() codec.Provider { return codec.OMLX }

// Facts declares that oMLX runs inference on a server the caller operates,
// so a resend needs admission (R8.3); its stream carries no telemetry.
func (c *Codec) Facts() codec.Facts { return codec.Facts{LocalInference: true} }

// ErrorFrame returns the OpenAI-compatible in-band stream error event
// carrying safe (codec.ErrorFramer).
func (c *Codec) ErrorFrame(safe string) []byte { return openaiwire.ErrorFrame(safe) }

// ErrorFrameCode returns ErrorFrame's event with a "code" member too
// (codec.CodedErrorFramer).
func (c *Codec) ErrorFrameCode(code, safe string) []byte {
	return openaiwire.ErrorFrameCode(code, safe)
}

// ErrorDocument returns the OpenAI-compatible error response body
// {"error":{"message":safe,"type":"recourse_error","param":null,"code":code}}
// and a newline (codec.ErrorDocumenter).
func (c *Codec) ErrorDocument(code, safe string) []byte { return openaiwire.ErrorDocument(code, safe) }

// Path returns "/v1/chat/completions".
func (c *Codec) Path() string { return endpointPath }

// ErrorCode returns error.code of an OpenAI-shaped error body
// ({"error":{"message","type","param","code"}}) when it is a string, as
// sent, and "" otherwise (no error object, a null or non-string code, or a
// body that is not a JSON object). Surrounding whitespace is accepted. It
// never panics and is safe for concurrent use.
func (c *Codec) ErrorCode(body []byte) string { return dialect.ErrorCode(body) }

// RequestID returns the X-Request-Id response header, as sent, or "" when
// it is absent. oMLX itself sends none; a proxy in front of it may.
func (c *Codec) RequestID(h http.Header) string { return h.Get("X-Request-Id") }

// Capabilities declares the values of R15.2 for POST /v1/chat/completions
// on oMLX, as inspected on 2026-10-17: client abort unknown, remote
// cancellation, in-flight status and idempotency unsupported, exact-attempt
// termination unknown. It returns fresh maps on every call, so a caller may
// modify the result.
func (c *Codec) Capabilities() codec.Capabilities {
	doc := codec.CapabilityEvidence{
		Endpoint:         "POST /v1/chat/completions",
		DocumentationURL: "https://github.com/jundot/omlx#api-compatibility",
		InspectedOn:      evidence.InspectedOn,
	}
	var caps codec.Capabilities
	caps.Declare(codec.ClientAbort, codec.Unknown, doc.WithBasis(
		"The API Compatibility section lists streaming Chat Completions without documenting client abort; closing the local request alone does not justify supported."))
	caps.Declare(codec.RequestCancellation, codec.Unsupported, doc.WithBasis(
		"The API Compatibility section documents no endpoint or field that cancels a chat completion in flight."))
	caps.Declare(codec.RequestStatus, codec.Unsupported, doc.WithBasis(
		"The API Compatibility section documents no way to ask for the status of a chat completion in flight."))
	caps.Declare(codec.Idempotency, codec.Unsupported, doc.WithBasis(
		"The API Compatibility section documents no idempotency key or header; a resend runs inference again."))
	caps.Declare(codec.ExactAttemptTermination, codec.Unknown, doc.WithBasis(
		"Model unload, loaded-model lists and aggregate activity are not attempt evidence, so the end of one attempt's inference cannot be confirmed."))
	return caps
}
