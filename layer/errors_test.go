package layer_test

import (
	"testing"
	"time"

	"github.com/recourse-dev/recourse/layer"
)

// A permanent HTTP or provider failure says what the provider said, in
// safe terms; every other outcome names the recovery outcome.
func TestRecoveryErrorText(t *testing.T) {
	perm := layer.Classification{Reason: layer.ReasonPermanent}
	for _, tc := range []struct {
		o    layer.Outcome
		f    layer.Failure
		want string
	}{
		{layer.OutcomeInterrupted, layer.Failure{Category: layer.CategoryHTTP, HTTPStatus: 404, ProviderCode: "model_not_found",
			Identity: layer.Identity{WireAttempt: 1}, Classification: perm},
			"recourse: the provider answered HTTP 404 (model_not_found), a permanent failure: not retried (wire attempt 1)"},
		{layer.OutcomeInterrupted, layer.Failure{Category: layer.CategoryProviderResponse, HTTPStatus: 200,
			Identity: layer.Identity{WireAttempt: 2}, Classification: perm},
			"recourse: the provider returned an error in HTTP 200, a permanent failure: not retried (wire attempt 2)"},
		{layer.OutcomeExhausted, layer.Failure{Category: layer.CategoryHTTP, HTTPStatus: 503, Identity: layer.Identity{WireAttempt: 3},
			Classification: layer.Classification{Eligible: true, Reason: layer.ReasonTransient}},
			"recourse: recovery exhausted (http/transient, HTTP 503, wire attempt 3)"},
		{layer.OutcomeInterrupted, layer.Failure{Category: layer.CategoryTransport, HTTPStatus: 200, Identity: layer.Identity{WireAttempt: 1},
			Classification: layer.Classification{Reason: layer.ReasonSemanticOutput}},
			"recourse: recovery interrupted (transport/semantic_output, HTTP 200, wire attempt 1)"},
		{layer.OutcomeInterrupted, layer.Failure{Category: layer.CategoryHTTP, HTTPStatus: 307, Identity: layer.Identity{WireAttempt: 1}, Classification: perm},
			"recourse: the provider answered HTTP 307, a redirect: refused, its Location never contacted (wire attempt 1)"},
		{layer.OutcomeDelayCeiling, layer.Failure{Category: layer.CategoryHTTP, HTTPStatus: 503, Identity: layer.Identity{WireAttempt: 1},
			RetryAfter: layer.RetryAfter{Kind: layer.RetryAfterSeconds, Delay: time.Hour}, Classification: layer.Classification{Eligible: true, Reason: layer.ReasonTransient}},
			"recourse: no retry: the provider asked to wait 1h0m0s (Retry-After), above the delay ceiling; outcome delay_ceiling (HTTP 503, wire attempt 1)"},
		{layer.OutcomeDeadline, layer.Failure{Category: layer.CategoryTransport, Identity: layer.Identity{WireAttempt: 2},
			Classification: layer.Classification{Eligible: true, Reason: layer.ReasonTransient}},
			"recourse: no retry: the recovery budget or deadline ran out; outcome deadline (wire attempt 2)"},
	} {
		if got := layer.NewRecoveryError(tc.o, tc.f, nil, nil).Error(); got != tc.want {
			t.Errorf("got  %q\nwant %q", got, tc.want)
		}
	}
}
