package retry

// classify.go holds the eligibility rules of R4 that classify a failed attempt.

import (
	"net/http"

	"github.com/recourse-dev/recourse/layer"
)

// ambiguous reports whether f, a failure of a background create before
// its response ID was known, may have left the response queued at the
// provider (R19.11): only a status answer (an HTTP failure) or a request
// that provably never left shows that nothing was accepted.
func (d *Decider) ambiguous(f *layer.Failure) bool {
	return d.background && f.Acceptance != layer.AcceptanceNo && f.Category != layer.CategoryHTTP
}

// Classify applies the eligibility rules of R4 to f, in order (first match
// wins): cancellation, 400/401/403, a capture failure, semantic output, a
// protocol error, a partial 2xx body of an ordinary or structured call, an
// exhausted quota recorded in f (on a 429 or in a provider error object),
// a provider error object, x-should-retry: false recorded in f (see
// Policy.ProviderHints), then the policy's categories and statuses.
func (d *Decider) Classify(f *layer.Failure, captureFailed, partial bool) layer.Classification {
	no := func(r layer.Reason) layer.Classification { return layer.Classification{Reason: r} }
	switch {
	case f.Category == layer.CategoryCancellation:
		return no(layer.ReasonCancelled)
	case f.HTTPStatus == http.StatusBadRequest || f.HTTPStatus == http.StatusUnauthorized || f.HTTPStatus == http.StatusForbidden:
		return no(layer.ReasonPermanent)
	case captureFailed:
		return no(layer.ReasonCaptureFailed)
	case f.Progress.Observed.Any() || f.Progress.Delivered.Any():
		return no(layer.ReasonSemanticOutput)
	case f.Category == layer.CategoryProtocol:
		return no(layer.ReasonMalformed)
	case partial && f.HTTPStatus/100 == 2:
		// The provider accepted the request and its answer was cut, even
		// before the first body byte: resending could duplicate inference,
		// so an ordinary or structured call fails closed (R4.6).
		return no(layer.ReasonPartialResponse)
	case f.Hint == layer.HintInsufficientQuota:
		// Before the provider error object's permanent: an exhausted
		// quota sent in a 2xx error object keeps the reason it has on a
		// 429.
		return no(layer.ReasonInsufficientQuota)
	case f.Category == layer.CategoryProviderResponse:
		return no(layer.ReasonPermanent)
	case f.Hint == layer.HintShouldNotRetry:
		return no(layer.ReasonProviderNoRetry)
	}
	selected := false
	for _, k := range d.r.categories {
		if k == f.Category {
			selected = true
		}
	}
	if selected && f.Category == layer.CategoryHTTP {
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
		return layer.Classification{Eligible: true, Reason: layer.ReasonTransient}
	}
	return no(layer.ReasonPermanent)
}
