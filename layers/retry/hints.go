package retry

import (
	"net/http"
	"strings"

	"github.com/recourse-dev/recourse/internal/httpdate"
	"github.com/recourse-dev/recourse/layer"
)

// The millisecond retry hints, in the order they win (Policy.ProviderHints).
var millisHeaders = [...]string{"retry-after-ms", "x-ms-retry-after-ms"}

// providerHints records the provider's resend hints in f when the policy
// honours them (Policy.ProviderHints): a millisecond delay minimum in place
// of Retry-After, "x-should-retry: false", and an exhausted quota on a 429.
// code is the provider's error code exactly as sent. Only safe values reach
// f: a parsed delay, the header's name, a fixed hint.
func (c *call) providerHints(f *layer.Failure, h http.Header, code string) {
	if !c.d.r.hints {
		return
	}
	// The first valid value in the order retry-after-ms,
	// x-ms-retry-after-ms, Retry-After wins.
	invalid := ""
	for _, name := range millisHeaders {
		v := httpdate.ParseMillis(h.Values(name))
		if v.Kind == httpdate.Milliseconds {
			f.RetryAfter = layer.RetryAfter{Kind: layer.RetryAfterMilliseconds, Delay: v.Delay, Header: name}
			invalid = ""
			break
		}
		if v.Kind == httpdate.Invalid && invalid == "" {
			invalid = name
		}
	}
	if invalid != "" && !f.RetryAfter.Valid() && f.RetryAfter.Kind != layer.RetryAfterInvalid {
		// A hint was present but invalid, and no form is valid: the
		// failure says so, as for an invalid Retry-After; it never
		// replaces the jittered delay (R5.5).
		f.RetryAfter = layer.RetryAfter{Kind: layer.RetryAfterInvalid, Header: invalid}
	}
	if vs := h.Values("X-Should-Retry"); len(vs) == 1 && strings.EqualFold(strings.TrimSpace(vs[0]), "false") {
		f.Hint = layer.HintShouldNotRetry
	}
	if f.HTTPStatus == http.StatusTooManyRequests && layer.IsQuotaExhaustedCode(code) {
		f.Hint = layer.HintInsufficientQuota
	}
}
