package layer_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/recourse-dev/recourse/event"
	"github.com/recourse-dev/recourse/layer"
)

// quota_exhausted is an outcome beside delay_ceiling and deadline: its
// terminal event is exhausted, and its error names the refusing quota.
func TestR18_3_QuotaExhaustedOutcome(t *testing.T) {
	assert.Contains(t, event.Outcomes(), event.OutcomeQuotaExhausted)
	assert.Equal(t, event.Exhausted, event.OutcomeQuotaExhausted.TerminalEvent())
	for _, e := range []event.Type{event.QuotaRefused, event.QuotaUnavailable, event.CooldownWait} {
		assert.Contains(t, event.Types(), e)
	}
	f := event.Failure{Category: event.CategoryHTTP, HTTPStatus: 429, Identity: event.Identity{WireAttempt: 2},
		Classification: event.Classification{Eligible: true, Reason: event.ReasonTransient}}
	re := layer.NewRecoveryError(event.OutcomeQuotaExhausted, f, []event.Failure{f, f}, nil)
	re.Quota = &event.QuotaRefusal{Upstream: "api.openai.com", Resends: 14, Window: time.Minute}
	assert.Equal(t, "recourse: not retried: retry quota for api.openai.com exhausted: 14 resends in the last 60 s; outcome quota_exhausted (HTTP 429, wire attempt 2)", re.Error())
}
