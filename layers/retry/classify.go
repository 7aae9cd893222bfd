package retry

// classify.go holds the eligibility rules of R4 that classify a failed attempt.

import (
	"net/http"

	"github.com/recourse-dev/recourse/event"
)

// ambiguous reports whether f, a failure of a background create before
// its response ID was known, may have left the response queued at the
// provider (R19.11): only a status answer (an HTTP failure) or a request
// that provably never left shows that nothing was accepted.
func (d *Decider) ambiguous(f *event.Failure) bool {
	return d.background && f.Acceptance != event.AcceptanceNo && f.Category != event.CategoryHTTP
}

// Classify applies the eligibility rules of R4 to f, in order (first match
// wins): cancellation, 400/401/403, a capture failure, semantic output, a
// protocol error, a partial 2xx body of an ordinary or structured call, an
// exhausted quota recorded in f (on a 429 or in a provider error object),
// a provider error object, x-should-retry: false recorded in f (see
// Policy.ProviderHints), then the policy's categories and statuses.
func (d *Decider) Classify(f *event.Failure, captureFailed, partial bool) event.Classification {
	no := func(r event.Reason) event.Classification { return event.Classification{Reason: r} }
	switch {
	case f.Category == event.CategoryCancellation:
		return no(event.ReasonCancelled)
	case f.HTTPStatus == http.StatusBadRequest || f.HTTPStatus == http.StatusUnauthorized || f.HTTPStatus == http.StatusForbidden:
		return no(event.ReasonPermanent)
	case captureFailed:
		return no(event.ReasonCaptureFailed)
	case f.Progress.Observed.Any() || f.Progress.Delivered.Any():
		return no(event.ReasonSemanticOutput)
	case f.Category == event.CategoryProtocol:
		return no(event.ReasonMalformed)
	case partial && f.HTTPStatus/100 == 2:
		// The provider accepted the request and its answer was cut, even
		// before the first body byte: resending could duplicate inference,
		// so an ordinary or structured call fails closed (R4.6).
		return no(event.ReasonPartialResponse)
	case f.Hint == event.HintInsufficientQuota:
		// Before the provider error object's permanent: an exhausted
		// quota sent in a 2xx error object keeps the reason it has on a
		// 429.
		return no(event.ReasonInsufficientQuota)
	case f.Category == event.CategoryProviderResponse:
		return no(event.ReasonPermanent)
	case f.Hint == event.HintShouldNotRetry:
		return no(event.ReasonProviderNoRetry)
	}
	selected := false
	for _, k := range d.r.categories {
		if k == f.Category {
			selected = true
		}
	}
	if selected && f.Category == event.CategoryHTTP {
		selected = false
		statuses := d.r.statuses
		if statuses == nil {
			statuses = defaultStatuses
			// A codec's overload status (Anthropic's 529) is eligible
			// like a 503 under the default statuses (R22.1).
			selected = d.facts.OverloadStatus != 0 && f.HTTPStatus == int(d.facts.OverloadStatus)
		}
		for _, s := range statuses {
			if s == f.HTTPStatus {
				selected = true
			}
		}
	}
	if selected {
		return event.Classification{Eligible: true, Reason: event.ReasonTransient}
	}
	return no(event.ReasonPermanent)
}
