package layer_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/recourse-dev/recourse/layer"
)

// quota_exhausted is an outcome beside delay_ceiling and deadline: its
// terminal event is exhausted, and its error names the refusing quota.
func TestR18_3_QuotaExhaustedOutcome(t *testing.T) {
	assert.Contains(t, layer.Outcomes(), layer.OutcomeQuotaExhausted)
	assert.Equal(t, layer.EventExhausted, layer.OutcomeQuotaExhausted.TerminalEvent())
	for _, e := range []layer.EventType{layer.EventQuotaRefused, layer.EventQuotaUnavailable, layer.EventCooldownWait} {
		assert.Contains(t, layer.EventTypes(), e)
	}
	f := layer.Failure{Category: layer.CategoryHTTP, HTTPStatus: 429, Identity: layer.Identity{WireAttempt: 2},
		Classification: layer.Classification{Eligible: true, Reason: layer.ReasonTransient}}
	re := layer.NewRecoveryError(layer.OutcomeQuotaExhausted, f, []layer.Failure{f, f}, nil)
	re.Quota = &layer.QuotaRefusal{Upstream: "api.openai.com", Resends: 14, Window: time.Minute}
	assert.Equal(t, "recourse: not retried: retry quota for api.openai.com exhausted: 14 resends in the last 60 s; outcome quota_exhausted (HTTP 429, wire attempt 2)", re.Error())
}

func TestQuotaRefusalText(t *testing.T) {
	for _, tc := range []struct {
		r    *layer.QuotaRefusal
		want string
	}{
		{&layer.QuotaRefusal{Upstream: "api.openai.com", Resends: 14, Window: time.Minute}, "retry quota for api.openai.com exhausted: 14 resends in the last 60 s"},
		{&layer.QuotaRefusal{Upstream: "127.0.0.1:11434", Resends: 1, Window: 1500 * time.Millisecond, Fleet: true}, "fleet retry quota for 127.0.0.1:11434 exhausted: 1 resend in the last 1500 ms"},
		{nil, "retry quota exhausted"},
	} {
		assert.Equal(t, tc.want, tc.r.Text())
	}
}
