package layer_test

import (
	"testing"

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
	} {
		if got := layer.NewRecoveryError(tc.o, tc.f, nil, nil).Error(); got != tc.want {
			t.Errorf("got  %q\nwant %q", got, tc.want)
		}
	}
}
