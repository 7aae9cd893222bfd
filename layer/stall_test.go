package layer_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/recourse-dev/recourse/event"
	"github.com/recourse-dev/recourse/layer"
)

func TestStallErrorTextNamesTheLimitAndItsValue(t *testing.T) {
	for _, tc := range []struct {
		err  layer.StallError
		want string
		text string
	}{
		{layer.StallError{Limit: event.StallHeader, After: 30 * time.Second}, "recourse: header timeout: no response headers within 30s", "header timeout"},
		{layer.StallError{Limit: event.StallFirstOutput, After: 5 * time.Minute}, "recourse: first-output timeout: no reasoning, content or tool output within 5m0s of the headers", "first-output timeout"},
		{layer.StallError{Limit: event.StallIdle, After: 500 * time.Millisecond}, "recourse: idle timeout: no byte for 500ms", "idle timeout"},
		{layer.StallError{Limit: "other"}, "recourse: stall", "stall"},
	} {
		assert.Equal(t, tc.want, tc.err.Error())
		assert.Equal(t, tc.text, tc.err.Limit.Text())
	}
}

func TestFailureRecordsTheStallAndTheHint(t *testing.T) {
	f := event.Failure{Category: event.CategoryTransport, Stall: event.StallIdle,
		Classification: event.Classification{Eligible: true, Reason: event.ReasonTransient}}
	b, err := json.Marshal(f)
	require.NoError(t, err)
	assert.Contains(t, string(b), `"stall":"idle_timeout"`)
	re := layer.NewRecoveryError(event.OutcomeExhausted, f, []event.Failure{f}, nil)
	assert.Equal(t, "recourse: recovery exhausted (transport/transient, idle_timeout, wire attempt 0)", re.Error())

	q := event.Failure{Category: event.CategoryHTTP, HTTPStatus: 429, Hint: event.HintInsufficientQuota,
		Classification: event.Classification{Reason: event.ReasonInsufficientQuota}}
	b, err = json.Marshal(q)
	require.NoError(t, err)
	assert.Contains(t, string(b), `"hint":"insufficient_quota"`)
	assert.Equal(t, "recourse: recovery interrupted (http/insufficient_quota, HTTP 429, hint insufficient_quota, wire attempt 0)",
		layer.NewRecoveryError(event.OutcomeInterrupted, q, nil, nil).Error())

	plain, err := json.Marshal(event.Failure{})
	require.NoError(t, err)
	assert.NotContains(t, string(plain), "stall")
	assert.NotContains(t, string(plain), "hint")
}

func TestRetryAfterMillisecondsIsAValidMinimum(t *testing.T) {
	ra := event.RetryAfter{Kind: event.RetryAfterMilliseconds, Delay: 1500 * time.Millisecond, Header: "retry-after-ms"}
	assert.True(t, ra.Valid())
	assert.Equal(t, "retry-after-ms", ra.HeaderName())
	assert.Equal(t, "Retry-After", event.RetryAfter{Kind: event.RetryAfterSeconds}.HeaderName())
	b, err := json.Marshal(ra)
	require.NoError(t, err)
	assert.JSONEq(t, `{"kind":"milliseconds","delay_ms":1500,"header":"retry-after-ms"}`, string(b))
	for _, code := range []string{"insufficient_quota", "credit_balance_exhausted", "organization_spend_limit_exceeded", "project_spend_limit_exceeded", "organization_usage_limit_exceeded"} {
		assert.True(t, layer.IsQuotaExhaustedCode(code), code)
	}
	for _, code := range []string{"rate_limit_exceeded", "", "Insufficient_Quota"} {
		assert.False(t, layer.IsQuotaExhaustedCode(code), code)
	}
}
