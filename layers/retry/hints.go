package retry

import (
	"net/http"
	"strings"

	"github.com/recourse-dev/recourse/codec"
	"github.com/recourse-dev/recourse/event"
	"github.com/recourse-dev/recourse/layer"
)

// The millisecond retry hints, in the order they win (Policy.ProviderHints).
var millisHeaders = [...]string{"retry-after-ms", "x-ms-retry-after-ms"}

// providerHints records the provider's resend hints in f when the policy
// honours them (Policy.ProviderHints): a millisecond delay minimum in place
// of Retry-After, "x-should-retry: false", and an exhausted quota on a 429.
// code is the provider's error code exactly as sent. Only safe values reach
// f: a parsed delay, the header's name, a fixed hint.
func (c *call) providerHints(f *event.Failure, h http.Header, code string) {
	if !c.d.r.hints {
		return
	}
	// The first valid value in the order retry-after-ms,
	// x-ms-retry-after-ms, Retry-After wins.
	invalid := ""
	for _, name := range millisHeaders {
		v := parseRetryAfterMillis(h.Values(name))
		if v.Kind == afterMilliseconds {
			f.RetryAfter = event.RetryAfter{Kind: event.RetryAfterMilliseconds, Delay: v.Delay, Header: name}
			invalid = ""
			break
		}
		if v.Kind == afterInvalid && invalid == "" {
			invalid = name
		}
	}
	if invalid != "" && !f.RetryAfter.Valid() && f.RetryAfter.Kind != event.RetryAfterInvalid {
		// A hint was present but invalid, and no form is valid: the
		// failure says so, as for an invalid Retry-After; it never
		// replaces the jittered delay (R5.5).
		f.RetryAfter = event.RetryAfter{Kind: event.RetryAfterInvalid, Header: invalid}
	}
	if rh, ok := c.resetHinter(); ok && !f.RetryAfter.Valid() {
		// A provider's own reset time, when nothing better was sent
		// (R22.6): a minimum like a Retry-After date.
		if at, name, ok := rh.ResetHint(f.HTTPStatus, h); ok {
			d := max(at.Sub(c.d.r.wall()), 0)
			f.RetryAfter = event.RetryAfter{Kind: event.RetryAfterDate, Delay: d, Time: at.UTC(), Header: name}
		}
	}
	if vs := h.Values("X-Should-Retry"); len(vs) == 1 && strings.EqualFold(strings.TrimSpace(vs[0]), "false") {
		f.Hint = event.HintShouldNotRetry
	}
	if f.HTTPStatus == http.StatusTooManyRequests || f.HTTPStatus/100 == 2 {
		// A 429, or a provider error object in a 2xx body.
		c.quotaHint(f, code)
	}
}

// quotaHint records an exhausted quota (Failure.Hint insufficient_quota)
// when the policy honours provider hints and code, a provider error code
// exactly as sent, says that the account's quota or spend limit is
// exhausted (layer.IsQuotaExhaustedCode). The engine asks for it on a 429
// and on a provider error object that came with a 2xx status: a whole body
// in place of a completion, the JSON document answering a streaming
// request, or a stream's in-band error frame ("data: {"error":{…}}" or an
// "event: error"). Such an error object is never eligible anyway (R4.7);
// the hint gives it the reason insufficient_quota in place of permanent,
// as for the 429. After semantic output the hint is not recorded: the
// classification is semantic_output (R4.4), and the code stays visible as
// Failure.ProviderCode.
func (c *call) quotaHint(f *event.Failure, code string) {
	if c.d.r.hints && layer.IsQuotaExhaustedCode(code) && !f.Progress.Observed.Any() && !f.Progress.Delivered.Any() {
		f.Hint = event.HintInsufficientQuota
	}
}

// resetHinter returns the call's codec as a codec.ResetHinter, if it is
// one.
func (c *call) resetHinter() (codec.ResetHinter, bool) {
	if c.t == nil || c.t.l == nil || c.t.l.codec == nil {
		return nil, false
	}
	rh, ok := c.t.l.codec.(codec.ResetHinter)
	return rh, ok
}

// bodyFieldRetryDelay names the error body's delay field in a
// Failure.RetryAfter of kind body.
const bodyFieldRetryDelay = "RetryInfo.retryDelay"

// bodyHints records the resend hints a codec.BodyHinter codec finds in an
// error body (R23.2), under every policy: a delay is a minimum like
// Retry-After and replaces a shorter or absent one, so the longer of the
// two waits is kept; an exhausted quota (a per-day quota) makes the
// failure not eligible, reason insufficient_quota, unless output was
// already seen (then R4.4 names it). Only the parsed delay and a fixed
// field name reach f.
func (c *call) bodyHints(f *event.Failure, body []byte) {
	bh, ok := c.t.l.codec.(codec.BodyHinter)
	if !ok || len(body) == 0 {
		return
	}
	hs := bh.BodyHints(body)
	if hs.HasRetryDelay && hs.RetryDelay >= 0 && (!f.RetryAfter.Valid() || hs.RetryDelay > f.RetryAfter.Delay) {
		f.RetryAfter = event.RetryAfter{Kind: event.RetryAfterBody, Delay: hs.RetryDelay, Header: bodyFieldRetryDelay}
	}
	if hs.QuotaExhausted && !f.Progress.Observed.Any() && !f.Progress.Delivered.Any() {
		f.Hint = event.HintInsufficientQuota
	}
}
