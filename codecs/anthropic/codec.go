package anthropic

import (
	"net/http"
	"strings"
	"time"

	"github.com/recourse-dev/recourse/codec"
	"github.com/recourse-dev/recourse/codecs/internal/jsonmember"
	"github.com/recourse-dev/recourse/codecs/internal/openaiwire"
)

// OverloadStatus is the status Anthropic answers when its API is
// overloaded (error type overloaded_error): 529, outside the standard set.
const OverloadStatus = 529

// Codec is the codec of Claude's Messages API, POST /v1/messages. The
// zero value is not usable; use [New]. A Codec is immutable after New and
// safe for concurrent use.
type Codec struct {
	maxTokens int
	budget    int
}

var (
	_ codec.Codec            = (*Codec)(nil)
	_ codec.Checker          = (*Codec)(nil)
	_ codec.ErrorFramer      = (*Codec)(nil)
	_ codec.CodedErrorFramer = (*Codec)(nil)
	_ codec.ErrorDocumenter  = (*Codec)(nil)
	_ codec.ModelRewriter    = (*Codec)(nil)
	_ codec.ResetHinter      = (*Codec)(nil)
	_ codec.KeyHeader        = (*Codec)(nil)
)

// Option configures a [Codec] in [New]. Options are applied in order, so a
// later option overrides an earlier one; a nil Option is ignored.
type Option func(*Codec)

// WithDefaultMaxTokens makes Encode send max_tokens n for a request whose
// Options.MaxTokens is not set. The Messages API requires max_tokens, and
// without this option such a request is refused with a
// *codec.UnsupportedError naming MaxTokens, so that no output bound is
// chosen silently. An n that is not positive keeps the refusal.
func WithDefaultMaxTokens(n int) Option {
	return func(c *Codec) { c.maxTokens = max(n, 0) }
}

// WithThinkingBudget makes Encode turn extended thinking on for a request
// whose Options.Think is true: "thinking":{"type":"enabled",
// "budget_tokens":n}. Without it (or with an n that is not positive) Think
// true is refused with a *codec.UnsupportedError, since the API needs a
// budget the request does not carry. Think false or unset sends nothing.
func WithThinkingBudget(n int) Option {
	return func(c *Codec) { c.budget = max(n, 0) }
}

// New returns a Messages API codec configured by opts; nil options are
// ignored. Without options a request must set Options.MaxTokens and may
// not ask for thinking. The returned Codec is immutable and safe for
// concurrent use.
func New(opts ...Option) *Codec {
	c := &Codec{}
	for _, o := range opts {
		if o != nil {
			o(c)
		}
	}
	return c
}

// Provider returns [codec.Anthropic].
func (c *Codec) Provider() codec.Provider { return codec.Anthropic }

// Facts declares a hosted provider whose overload status is 529: a resend
// needs no admission, the stream carries no telemetry, and a 529 is
// eligible under the policy's default statuses (R22.1).
func (c *Codec) Facts() codec.Facts { return codec.Facts{OverloadStatus: OverloadStatus} }

// Path returns "/v1/messages", the endpoint path relative to a base URL
// given without /v1.
func (c *Codec) Path() string { return "/v1/messages" }

// KeyHeader returns X-Api-Key and no prefix: the Messages API takes its
// key as x-api-key: <key>, not as a bearer token (codec.KeyHeader).
func (c *Codec) KeyHeader() (name, prefix string) { return "X-Api-Key", "" }

// RequestID returns the value of the request-id response header as sent,
// or "" when there is none. A nil h has no request ID.
func (c *Codec) RequestID(h http.Header) string { return h.Get("Request-Id") }

// WithModel returns a copy of body, a request body of POST /v1/messages,
// whose top-level "model" member names model (codec.ModelRewriter): every
// other byte is kept, cache_control marks included. body is never
// modified; a body that is not a JSON object is an error. A fallback
// target of the same wire uses it (R20.1).
func (*Codec) WithModel(body []byte, model string) ([]byte, error) {
	return jsonmember.SetString(body, "model", model)
}

// ErrorFrame returns Anthropic's in-band stream error event carrying safe
// (codec.ErrorFramer): "event: error" with data {"type":"error","error":
// {"type":"recourse_error","message":safe}}. Anthropic's SDKs turn an
// error event into an API error. Its type names no status, so the stream
// decoder reads it back as a *codec.ProviderError that is never resent.
func (c *Codec) ErrorFrame(safe string) []byte { return c.ErrorFrameCode("recourse_error", safe) }

// ErrorFrameCode returns the in-band error event of ErrorFrame whose
// error type is code (codec.CodedErrorFramer): the recovery proxy ends a
// stream it cuts at its shutdown with code "shutdown" (R21.10). An empty
// code is "recourse_error".
func (c *Codec) ErrorFrameCode(code, safe string) []byte {
	if code == "" {
		code = "recourse_error"
	}
	b := []byte("event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":")
	b = openaiwire.AppendJSONString(b, code)
	b = append(b, `,"message":`...)
	b = openaiwire.AppendJSONString(b, safe)
	return append(b, "}}\n\n"...)
}

// ErrorDocument returns Anthropic's error response body
// {"type":"error","error":{"type":code,"message":safe}} and a newline
// (codec.ErrorDocumenter): the error's type is its code, "api_error" when
// code is empty.
func (c *Codec) ErrorDocument(code, safe string) []byte {
	if code == "" {
		code = "api_error"
	}
	b := []byte(`{"type":"error","error":{"type":`)
	b = openaiwire.AppendJSONString(b, code)
	b = append(b, `,"message":`...)
	b = openaiwire.AppendJSONString(b, safe)
	return append(b, "}}\n"...)
}

// Capability evidence (R15.1, R22.8), as inspected on 2026-12-02.
const (
	capInspectedOn = "2026-12-02"
	capCreate      = "POST /v1/messages"
	capCreateURL   = "https://docs.claude.com/en/api/messages"
	capErrorsURL   = "https://docs.claude.com/en/api/errors"
	capStreamURL   = "https://docs.claude.com/en/docs/build-with-claude/streaming"
)

// Capabilities returns the R22.8 declaration for POST /v1/messages: client
// abort unknown, remote cancellation unsupported, request status
// unsupported, idempotency unsupported, exact-attempt termination
// unknown, each with its evidence. The values describe Anthropic's
// documentation; a custom host or proxy may differ. Every call returns new
// maps, so a caller may modify the result.
func (c *Codec) Capabilities() codec.Capabilities {
	ev := codec.CapabilityEvidence{Endpoint: capCreate, DocumentationURL: capCreateURL, InspectedOn: capInspectedOn}
	var caps codec.Capabilities
	caps.Declare(codec.ClientAbort, codec.Unknown, ev.WithBasis(
		"The streaming guide ("+capStreamURL+") documents the event stream but not what closing the connection does to generation or billing; local HTTP abort alone is not provider support."))
	caps.Declare(codec.RequestCancellation, codec.Unsupported, ev.WithBasis(
		"No cancel endpoint is documented for a message; only message batches can be cancelled."))
	caps.Declare(codec.RequestStatus, codec.Unsupported, ev.WithBasis(
		"No retrieval of an in-flight message is documented; a message has no stored status."))
	caps.Declare(codec.Idempotency, codec.Unsupported, ev.WithBasis(
		"No idempotency key is documented for this endpoint ("+capErrorsURL+" lists the request-id header for support only); none is sent."))
	caps.Declare(codec.ExactAttemptTermination, codec.Unknown, ev.WithBasis(
		"No documented evidence ties an abort to the end of one attempt's inference."))
	return caps
}

// rateLimits are the limits whose anthropic-ratelimit-<limit>-remaining
// and -reset headers ResetHint reads.
var rateLimits = [...]string{"requests", "tokens", "input-tokens", "output-tokens"}

// ResetHint returns, for a 429, the latest reset of the rate limits the
// response says are exhausted: anthropic-ratelimit-<limit>-reset (RFC
// 3339) of each limit whose -remaining is 0, for requests, tokens,
// input-tokens and output-tokens (codec.ResetHinter). It reports false
// for any other status, or when no exhausted limit names a valid reset.
// The engine reads it only with retry.Policy.ProviderHints on, and only
// when the response has no valid retry-after (R22.6).
func (c *Codec) ResetHint(status int, h http.Header) (at time.Time, header string, ok bool) {
	if status != http.StatusTooManyRequests {
		return time.Time{}, "", false
	}
	for _, l := range rateLimits {
		prefix := "anthropic-ratelimit-" + l
		if strings.TrimSpace(h.Get(prefix+"-remaining")) != "0" {
			continue
		}
		t, err := time.Parse(time.RFC3339, strings.TrimSpace(h.Get(prefix+"-reset")))
		if err != nil {
			continue
		}
		if !ok || t.After(at) {
			at, header, ok = t, prefix+"-reset", true
		}
	}
	return at, header, ok
}
