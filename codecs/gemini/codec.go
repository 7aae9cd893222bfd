package gemini

import (
	"bytes"
	"encoding/json"
	"net/http"

	"github.com/recourse-dev/recourse/codec"
)

// endpointPrefix is the common prefix of the generateContent endpoints,
// relative to the base URL: Path returns it, RoutePath extends it.
const endpointPrefix = "/v1beta/models"

// Codec is the codec of the Gemini API's generateContent and
// streamGenerateContent endpoints. It holds no mutable state: one Codec may
// be shared by any number of goroutines.
type Codec struct {
	version string
}

var (
	_ codec.Codec           = (*Codec)(nil)
	_ codec.Router          = (*Codec)(nil)
	_ codec.BodyHinter      = (*Codec)(nil)
	_ codec.Checker         = (*Codec)(nil)
	_ codec.ErrorFramer     = (*Codec)(nil)
	_ codec.ErrorDocumenter = (*Codec)(nil)
	_ codec.KeyHeader       = (*Codec)(nil)
)

// Option configures a Codec. It cannot fail (R3.5).
type Option func(*Codec)

// WithAPIVersion makes RoutePath and Path use the API version v ("v1"
// instead of the default "v1beta"). An empty v keeps the default. Describe
// accepts both versions whatever the option.
func WithAPIVersion(v string) Option {
	return func(c *Codec) {
		if v != "" {
			c.version = v
		}
	}
}

// New returns a Gemini codec configured by opts. Nil options are ignored.
func New(opts ...Option) *Codec {
	c := &Codec{version: "v1beta"}
	for _, o := range opts {
		if o != nil {
			o(c)
		}
	}
	return c
}

// Provider returns codec.Gemini.
func (c *Codec) Provider() codec.Provider { return codec.Gemini }

// Facts declares a hosted provider whose stream has no comment lines its
// clients skip: go-genai fails a stream on a line that is not a data line,
// so keepalive comments are left out of a drop-in client's body and the
// proxy writes no in-band notice into the stream.
func (c *Codec) Facts() codec.Facts {
	return codec.Facts{HideKeepalives: true, NoStreamComments: true}
}

// Path returns the common prefix of the endpoints, "/v1beta/models" (or
// the version WithAPIVersion set): the full path names the model and the
// operation (RoutePath).
func (c *Codec) Path() string { return "/" + c.version + "/models" }

// KeyHeader returns X-Goog-Api-Key and no prefix: the Gemini API takes its
// key as x-goog-api-key: <key> (codec.KeyHeader).
func (c *Codec) KeyHeader() (name, prefix string) { return "X-Goog-Api-Key", "" }

// RequestID returns "": the Gemini API documents no request ID header.
func (c *Codec) RequestID(http.Header) string { return "" }

// ErrorCode returns the google.rpc.Status status of an error body
// ({"error":{"status":"RESOURCE_EXHAUSTED",…}}, also inside the one-element
// array the OpenAI-compatible endpoint sends, or after an SSE "data:"
// prefix), or, without a status, the reason of its ErrorInfo detail; ""
// when the body holds none.
func (c *Codec) ErrorCode(body []byte) string {
	st, ok := parseStatus(body)
	if !ok {
		return ""
	}
	if st.Status != "" {
		return st.Status
	}
	return st.reason()
}

// BodyHints reads the resend hints of a google.rpc.Status error body
// (codec.BodyHinter, R23.2): the RetryInfo detail's retryDelay ("58s",
// "34.07s", "900ms") as the minimum delay, and an exhausted quota when a
// QuotaFailure violation's quotaId names a per-day quota ("PerDay" or
// "Daily"). Any other body holds no hints.
func (c *Codec) BodyHints(body []byte) codec.BodyHints {
	st, ok := parseStatus(body)
	if !ok {
		return codec.BodyHints{}
	}
	return st.hints()
}

// ErrorFrame returns the stream's in-band error event
// data: {"error":{"code":500,"message":safe,"status":"INTERNAL"}} and its
// blank line (codec.ErrorFramer): the shape the API itself sends when a
// stream fails after its 200.
func (c *Codec) ErrorFrame(safe string) []byte {
	var buf bytes.Buffer
	buf.WriteString("data: ")
	writeStatus(&buf, 500, "INTERNAL", safe)
	buf.WriteString("\n\n")
	return buf.Bytes()
}

// ErrorDocument returns a google.rpc.Status error body
// {"error":{"message":safe,"status":code}} and a newline
// (codec.ErrorDocumenter), the body the Gemini clients turn into their API
// error; an empty code leaves status out.
func (c *Codec) ErrorDocument(code, safe string) []byte {
	var buf bytes.Buffer
	writeStatus(&buf, 0, code, safe)
	buf.WriteByte('\n')
	return buf.Bytes()
}

// writeStatus writes {"error":{…}} with the given fields; a zero code and
// an empty status are left out.
func writeStatus(buf *bytes.Buffer, code int, status, msg string) {
	v := struct {
		Error struct {
			Code    int    `json:"code,omitempty"`
			Message string `json:"message"`
			Status  string `json:"status,omitempty"`
		} `json:"error"`
	}{}
	v.Error.Code, v.Error.Message, v.Error.Status = code, msg, status
	enc := json.NewEncoder(buf)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v)
	buf.Truncate(buf.Len() - 1) // Encode's newline
}

// Capabilities declares the values of R15.2 for the generateContent
// endpoints, as inspected on 2026-12-02: client abort unknown, remote
// cancellation, in-flight status and idempotency unsupported, exact-attempt
// termination unknown. It returns fresh maps on every call.
func (c *Codec) Capabilities() codec.Capabilities {
	doc := codec.CapabilityEvidence{
		Endpoint:         "POST /v1beta/models/{model}:generateContent and :streamGenerateContent",
		DocumentationURL: "https://ai.google.dev/api/generate-content",
		InspectedOn:      "2026-12-02",
	}
	var caps codec.Capabilities
	caps.Declare(codec.ClientAbort, codec.Unknown, doc.WithBasis(
		"The reference describes no effect of closing the connection on generation or billing; a closed stream alone does not justify supported."))
	caps.Declare(codec.RequestCancellation, codec.Unsupported, doc.WithBasis(
		"The reference documents no method or field that cancels a generateContent request in flight."))
	caps.Declare(codec.RequestStatus, codec.Unsupported, doc.WithBasis(
		"A generateContent request has no identifier that a status method can be asked about."))
	caps.Declare(codec.Idempotency, codec.Unsupported, doc.WithBasis(
		"The reference documents no idempotency key or header; a resend generates again and is billed again."))
	caps.Declare(codec.ExactAttemptTermination, codec.Unknown, doc.WithBasis(
		"Nothing in the reference confirms that generation stopped when an attempt's connection ended."))
	return caps
}
