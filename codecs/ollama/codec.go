package ollama

import (
	"bytes"
	"encoding/json"
	"net/http"

	"github.com/recourse-dev/recourse/codec"
	"github.com/recourse-dev/recourse/codecs/internal/evidence"
)

// endpointPath is the path of Ollama's native chat API, relative to the
// base URL.
const endpointPath = "/api/chat"

// Codec is the codec of Ollama's native POST /api/chat. It holds no mutable
// state: one Codec may be shared by any number of goroutines.
type Codec struct{}

var _ codec.Codec = (*Codec)(nil)

// Option configures a Codec. It cannot fail (R3.5); only this package can
// set a Codec's fields. There are none yet; New accepts them so that adding
// one does not change its signature.
type Option func(*Codec)

// New returns an Ollama codec configured by opts. Nil options are ignored.
func New(opts ...Option) *Codec {
	c := &Codec{}
	for _, o := range opts {
		if o != nil {
			o(c)
		}
	}
	return c
}

// Provider returns codec.Ollama.
func (c *Codec) Provider() codec.Provider { return codec.Ollama }

// Facts declares that Ollama runs inference on a server the caller operates
// (a resend needs admission, R8.3), that its stream frames carry progress and
// metrics (R13.6), and that its blank keepalive lines are left out of the
// body a drop-in client reads (the official client fails on them), and that
// its NDJSON stream has no comment lines.
func (c *Codec) Facts() codec.Facts {
	return codec.Facts{LocalInference: true, FrameTelemetry: true, HideKeepalives: true, NoStreamComments: true}
}

// ErrorDocument returns Ollama's error response body {"error":safe} and a
// newline (codec.ErrorDocumenter), the body the official client returns
// as an error. Ollama's errors have no code field, so code is left out.
func (c *Codec) ErrorDocument(code, safe string) []byte { return c.ErrorFrame(safe) }

// ErrorFrame returns Ollama's in-band stream error line {"error":safe}
// (codec.ErrorFramer): the official client returns its text as an error.
func (c *Codec) ErrorFrame(safe string) []byte {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(struct {
		Error string `json:"error"`
	}{safe})
	return buf.Bytes() // Encode ends the line with "\n"
}

// Path returns "/api/chat".
func (c *Codec) Path() string { return endpointPath }

// ErrorCode returns "": Ollama's error bodies ({"error":"message"}) carry a
// message and no code, so there is never a provider code to keep.
func (c *Codec) ErrorCode([]byte) string { return "" }

// RequestID returns "": Ollama sends no request ID header.
func (c *Codec) RequestID(http.Header) string { return "" }

// Capabilities declares the values of R15.2 for POST /api/chat, as inspected
// on 2026-10-17: client abort unknown, remote cancellation, in-flight status
// and idempotency unsupported, exact-attempt termination unknown. It returns
// fresh maps on every call, so a caller may modify the result.
func (c *Codec) Capabilities() codec.Capabilities {
	doc := codec.CapabilityEvidence{
		Endpoint:         "POST /api/chat",
		DocumentationURL: "https://github.com/ollama/ollama/blob/main/docs/api.md#generate-a-chat-completion",
		InspectedOn:      evidence.InspectedOn,
	}
	var caps codec.Capabilities
	caps.Declare(codec.ClientAbort, codec.Unknown, doc.WithBasis(
		"The chat reference describes streaming, keep_alive and response fields without an abort facility; closing the local request alone does not justify supported."))
	caps.Declare(codec.RequestCancellation, codec.Unsupported, doc.WithBasis(
		"The chat reference documents no endpoint or field that cancels a request in flight."))
	caps.Declare(codec.RequestStatus, codec.Unsupported, doc.WithBasis(
		"The chat reference documents no way to ask for the status of a request in flight."))
	caps.Declare(codec.Idempotency, codec.Unsupported, doc.WithBasis(
		"The chat reference documents no idempotency key or header; a resend runs inference again."))
	caps.Declare(codec.ExactAttemptTermination, codec.Unknown, doc.WithBasis(
		"Model unload, loaded-model lists and aggregate activity are not attempt evidence, so the end of one attempt's inference cannot be confirmed."))
	return caps
}
