package main

import (
	"errors"
	"net/http"

	"github.com/recourse-dev/recourse/chat"
	"github.com/recourse-dev/recourse/codec"
	"github.com/recourse-dev/recourse/codecs/openai"
)

// Gateway is the provider name the gateway codec declares. It names the
// provider in failures, events and spans; recovery never reads it (it reads
// the codec's Facts).
const Gateway codec.Provider = "gateway"

// gatewayPath is the gateway's chat endpoint, relative to its base URL.
const gatewayPath = "/openai/v1/chat"

// gatewayRequestID is the response header in which the gateway sends its own
// request ID.
const gatewayRequestID = "X-Gateway-Request-Id"

// GatewayCodec is the codec of a fictional OpenAI-compatible gateway that
// serves chat completions at POST /openai/v1/chat. Its bodies are OpenAI's,
// so it delegates encoding, decoding and observing to codecs/openai; what
// makes it a codec of its own is what it declares: its provider name, its
// path, its capabilities and its facts. It is written against the public API
// only, the way a codec outside this module would be. A GatewayCodec is
// immutable and safe for concurrent use.
type GatewayCodec struct {
	// wire is the OpenAI codec that reads and writes the bodies. It is a
	// field, not an embedded type, so that every method of the interface is
	// a deliberate decision of this codec.
	wire *openai.Codec
}

var _ codec.Codec = (*GatewayCodec)(nil)

// NewGatewayCodec returns the gateway codec.
func NewGatewayCodec() *GatewayCodec { return &GatewayCodec{wire: openai.New()} }

// Provider returns Gateway.
func (c *GatewayCodec) Provider() codec.Provider { return Gateway }

// Facts declares a hosted provider: the zero codec.Facts. The gateway is a
// service the caller does not operate, like OpenAI behind it, so an eligible
// failure (a 503, a reset connection) is resent without an admission hook;
// its streams are OpenAI server-sent events, which carry no progress or
// metrics frames and whose keepalive comments a drop-in client handles
// itself. A gateway in front of a model server the caller runs would set
// LocalInference instead, and every ambiguous resend would then need an
// admission hook (R8.3).
func (c *GatewayCodec) Facts() codec.Facts { return codec.Facts{} }

// Path returns "/openai/v1/chat", the endpoint path relative to the
// gateway's base URL.
func (c *GatewayCodec) Path() string { return gatewayPath }

// Encode encodes req as an OpenAI chat completions body. A control the
// gateway does not support is an *codec.UnsupportedError that names the
// gateway (not OpenAI), so that the caller sees which endpoint refused it.
func (c *GatewayCodec) Encode(req *chat.Request) ([]byte, error) {
	b, err := c.wire.Encode(req)
	var ue *codec.UnsupportedError
	if errors.As(err, &ue) {
		return nil, &codec.UnsupportedError{Provider: Gateway, Control: ue.Control}
	}
	return b, err
}

// Describe reads the model and the operation from an encoded body.
func (c *GatewayCodec) Describe(body []byte) (codec.RequestInfo, error) {
	return c.wire.Describe(body)
}

// Decode decodes a complete 2xx body: an OpenAI chat.completion.
func (c *GatewayCodec) Decode(body []byte) (*chat.Completion, error) { return c.wire.Decode(body) }

// ErrorCode returns the code of an OpenAI error body, which the gateway
// relays unchanged.
func (c *GatewayCodec) ErrorCode(body []byte) string { return c.wire.ErrorCode(body) }

// RequestID returns the gateway's own request ID (X-Gateway-Request-Id) or,
// when it sent none, the upstream's x-request-id as relayed.
func (c *GatewayCodec) RequestID(h http.Header) string {
	if id := h.Get(gatewayRequestID); id != "" {
		return id
	}
	return c.wire.RequestID(h)
}

// NewObserver returns OpenAI's observer, which counts the semantic evidence
// of a body (and decodes the frames of a stream) as it arrives.
func (c *GatewayCodec) NewObserver(info codec.RequestInfo) codec.Observer {
	return c.wire.NewObserver(info)
}

// The capability evidence of the gateway (R15.1). The gateway and its
// documentation are made up for this example; a real codec records the
// endpoint it inspected, the page it read, the day it read it and why each
// value follows from that page.
const (
	capEndpoint    = "POST " + gatewayPath
	capDocURL      = "https://gateway.example/docs/chat"
	capInspectedOn = "2026-12-01"
)

// Capabilities declares the five capabilities of POST /openai/v1/chat, each
// with its evidence: client abort and exact-attempt termination unknown;
// remote cancellation, in-flight status and idempotency unsupported. Every
// call returns new maps, so a caller may modify the result. Capabilities
// describe the endpoint; they never change what recovery resends.
func (c *GatewayCodec) Capabilities() codec.Capabilities {
	doc := codec.CapabilityEvidence{Endpoint: capEndpoint, DocumentationURL: capDocURL, InspectedOn: capInspectedOn}
	var caps codec.Capabilities
	caps.Declare(codec.ClientAbort, codec.Unknown, doc.WithBasis(
		"The chat page does not say whether the gateway stops its upstream request when the client disconnects; closing the local request alone proves nothing."))
	caps.Declare(codec.RequestCancellation, codec.Unsupported, doc.WithBasis(
		"The chat page documents no endpoint or header that cancels a request in flight."))
	caps.Declare(codec.RequestStatus, codec.Unsupported, doc.WithBasis(
		"The chat page documents no way to ask about a request in flight; X-Gateway-Request-Id is for support tickets only."))
	caps.Declare(codec.Idempotency, codec.Unsupported, doc.WithBasis(
		"The chat page documents no idempotency key; the gateway forwards every signed request it accepts to its upstream."))
	caps.Declare(codec.ExactAttemptTermination, codec.Unknown, doc.WithBasis(
		"Nothing on the chat page ties a client abort to the end of one attempt's inference upstream."))
	return caps
}
