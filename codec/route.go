package codec

import (
	"net/url"
	"time"
)

// Router is implemented by a codec whose wire names the model and the
// operation in the request's URL path instead of its body: Gemini's
// POST /v1beta/models/{model}:generateContent and
// …:streamGenerateContent. Its Path is then only the common prefix of its
// endpoints. The engine, the fallback, the progress layer and the quota
// describe a request of such a codec with DescribeRequest, and the native
// client posts to RoutePath; a codec without it names both in the body and
// keeps one fixed Path. Implementations must be safe for concurrent use.
type Router interface {
	// DescribeURL reads a request from its URL and its encoded body: the
	// model and the operation from the path, the rest (structured output)
	// from the body. A path that is not one of the codec's endpoints is an
	// error.
	DescribeURL(u *url.URL, body []byte) (RequestInfo, error)
	// RoutePath returns the endpoint path, relative to the base URL, of a
	// request for model with operation op, query included when the wire
	// needs one (Gemini's "?alt=sse"). model is escaped as a path segment.
	RoutePath(model string, op Operation) string
	// WithModelURL returns a copy of u whose path names model instead, its
	// operation, query and every other part kept: the fallback to another
	// model of the same wire (R20.1, R23.1). u is never modified; a path
	// that names no model of the codec's endpoints is an error.
	WithModelURL(u *url.URL, model string) (*url.URL, error)
}

// DescribeRequest describes a request of codec c sent to u with body: with
// a Router and a non-nil u, its DescribeURL; otherwise c.Describe(body).
// It is how every stage that must know a request's model or operation
// reads it (R23.1).
func DescribeRequest(c Codec, u *url.URL, body []byte) (RequestInfo, error) {
	if r, ok := c.(Router); ok && u != nil {
		return r.DescribeURL(u, body)
	}
	return c.Describe(body)
}

// BodyHints are the resend hints a provider wrote into an error body
// instead of its headers (R23.2). The zero value holds none.
type BodyHints struct {
	// RetryDelay is the provider's minimum wait before a resend (Gemini's
	// RetryInfo.retryDelay); it is meaningful only when HasRetryDelay.
	RetryDelay time.Duration
	// HasRetryDelay reports that the body carried a valid delay.
	HasRetryDelay bool
	// QuotaExhausted reports that the body says the quota is spent for a
	// long period (a per-day quota): a resend within the call's time cannot
	// succeed.
	QuotaExhausted bool
}

// BodyHinter is implemented by a codec whose provider writes resend hints
// into its error bodies (R23.2). The engine reads them from a failed
// response's body (never from a 2xx): a delay has the force of a
// Retry-After header, a minimum held to the delay ceiling and the budget;
// an exhausted quota makes the failure not eligible, reason
// insufficient_quota. Unlike the header hints of retry.Policy.ProviderHints
// these are read under every policy: they are the wire's own way of saying
// Retry-After. BodyHints must accept any bytes, never fail and be safe for
// concurrent use.
type BodyHinter interface {
	BodyHints(body []byte) BodyHints
}
