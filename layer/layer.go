package layer

import "net/http"

// Kind places a layer in the chain. Layers must appear in increasing Kind
// order, outermost first (see the package documentation for why).
type Kind int

// The layer kinds, outermost first.
const (
	KindTracing       Kind = iota + 1 // otelbridge: logical span, attempt spans
	KindRetry                         // the attempt loop, classification, backoff
	KindAdmission                     // decision plane: asks the application before a resend
	KindCapture                       // sensitive OnWire snapshots
	KindProgress                      // raw/observed/delivered counters
	KindRedirectGuard                 // 3xx is a failure that nothing follows
	KindSender                        // exactly one POST per attempt
)

// String returns the kind's name as used in chain errors and Example output.
func (k Kind) String() string {
	switch k {
	case KindTracing:
		return "tracing"
	case KindRetry:
		return "retry"
	case KindAdmission:
		return "admission"
	case KindCapture:
		return "capture"
	case KindProgress:
		return "progress"
	case KindRedirectGuard:
		return "redirectguard"
	case KindSender:
		return "sender"
	}
	return "unknown"
}

// Layer is one typed layer of a chain. Wrap returns a RoundTripper that
// keeps the standard library's contract: it does not modify the caller's
// request (it clones before changing one), returns either a response or an
// error, closes bodies it consumes, and is safe for concurrent use.
// Decision-plane layers (admission) return next unchanged from Wrap and
// configure the retry layer instead (see Gate).
type Layer interface {
	Kind() Kind
	Wrap(next http.RoundTripper) http.RoundTripper
}
