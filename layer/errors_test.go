package layer_test

import (
	"testing"
	"time"

	"github.com/recourse-dev/recourse/event"
	"github.com/recourse-dev/recourse/layer"
)

// A permanent HTTP or provider failure says what the provider said, in
// safe terms; every other outcome names the recovery outcome.
func TestRecoveryErrorText(t *testing.T) {
	perm := event.Classification{Reason: event.ReasonPermanent}
	for _, tc := range []struct {
		o    event.Outcome
		f    event.Failure
		want string
	}{
		{event.OutcomeInterrupted, event.Failure{Category: event.CategoryHTTP, HTTPStatus: 404, ProviderCode: "model_not_found",
			Identity: event.Identity{WireAttempt: 1}, Classification: perm},
			"recourse: the provider answered HTTP 404 (model_not_found), a permanent failure: not retried (wire attempt 1)"},
		{event.OutcomeInterrupted, event.Failure{Category: event.CategoryProviderResponse, HTTPStatus: 200,
			Identity: event.Identity{WireAttempt: 2}, Classification: perm},
			"recourse: the provider returned an error in HTTP 200, a permanent failure: not retried (wire attempt 2)"},
		{event.OutcomeExhausted, event.Failure{Category: event.CategoryHTTP, HTTPStatus: 503, Identity: event.Identity{WireAttempt: 3},
			Classification: event.Classification{Eligible: true, Reason: event.ReasonTransient}},
			"recourse: recovery exhausted (http/transient, HTTP 503, wire attempt 3)"},
		{event.OutcomeInterrupted, event.Failure{Category: event.CategoryTransport, HTTPStatus: 200, Identity: event.Identity{WireAttempt: 1},
			Classification: event.Classification{Reason: event.ReasonSemanticOutput}},
			"recourse: recovery interrupted (transport/semantic_output, HTTP 200, wire attempt 1)"},
		{event.OutcomeInterrupted, event.Failure{Category: event.CategoryHTTP, HTTPStatus: 307, Identity: event.Identity{WireAttempt: 1}, Classification: perm},
			"recourse: the provider answered HTTP 307, a redirect: refused, its Location never contacted (wire attempt 1)"},
		{event.OutcomeDelayCeiling, event.Failure{Category: event.CategoryHTTP, HTTPStatus: 503, Identity: event.Identity{WireAttempt: 1},
			RetryAfter: event.RetryAfter{Kind: event.RetryAfterSeconds, Delay: time.Hour}, Classification: event.Classification{Eligible: true, Reason: event.ReasonTransient}},
			"recourse: no retry: the provider asked to wait 1h0m0s (Retry-After), above the delay ceiling; outcome delay_ceiling (HTTP 503, wire attempt 1)"},
		{event.OutcomeDeadline, event.Failure{Category: event.CategoryTransport, Identity: event.Identity{WireAttempt: 2},
			Classification: event.Classification{Eligible: true, Reason: event.ReasonTransient}},
			"recourse: no retry: the recovery budget or deadline ran out; outcome deadline (wire attempt 2)"},
	} {
		if got := layer.NewRecoveryError(tc.o, tc.f, nil, nil).Error(); got != tc.want {
			t.Errorf("got  %q\nwant %q", got, tc.want)
		}
	}
}
