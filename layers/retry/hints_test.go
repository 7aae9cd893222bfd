package retry_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/recourse-dev/recourse/codecs/openai"
	"github.com/recourse-dev/recourse/event"
	"github.com/recourse-dev/recourse/internal/rigtest"
	"github.com/recourse-dev/recourse/layers/retry"
	"github.com/recourse-dev/recourse/recoursetest"
)

// The bodies the providers document for these answers.
var (
	// OpenAI's rate limit (429, code rate_limit_exceeded).
	openAIRateLimit = recoursetest.OpenAIError("requests", "rate_limit_exceeded", "Rate limit reached for gpt-4o-mini in organization org-x on requests per min (RPM): Limit 3, Used 3, Requested 1.")
	// OpenAI's exhausted quota: also a 429, type and code insufficient_quota.
	openAIQuota = recoursetest.OpenAIError("insufficient_quota", "insufficient_quota", "You exceeded your current quota, please check your plan and billing details.")
	// Azure OpenAI's 429: the code is the status as a string.
	azureRateLimit = `{"error":{"code":"429","message":"Requests to the ChatCompletions_Create Operation under Azure OpenAI API version 2024-10-21 have exceeded token rate limit of your current OpenAI S0 pricing tier. Please retry after 6 seconds."}}`
)

func hintPolicy(maxAttempts int) retry.Policy {
	return retry.Policy{MaxAttempts: maxAttempts, ProviderHints: true, Jitter: jitterSeq(nil, 0)}
}

// TestProviderHints_MillisecondMinima drives the millisecond hints through a
// 429 and a retry, with the header forms OpenAI (retry-after-ms beside
// retry-after) and Azure OpenAI (retry-after-ms, x-ms-retry-after-ms and
// retry-after together) send. The first valid value in the order
// retry-after-ms, x-ms-retry-after-ms, Retry-After wins.
func TestProviderHints_MillisecondMinima(t *testing.T) {
	for _, tc := range []struct {
		name   string
		body   string
		kv     []string
		kind   event.RetryAfterKind
		header string
		sleep  time.Duration
	}{
		{"OpenAI", openAIRateLimit, []string{"retry-after-ms", "1500", "retry-after", "2"}, event.RetryAfterMilliseconds, "retry-after-ms", 1500 * time.Millisecond},
		{"Azure", azureRateLimit, []string{"retry-after-ms", "6000", "x-ms-retry-after-ms", "6000", "retry-after", "6"}, event.RetryAfterMilliseconds, "retry-after-ms", 6 * time.Second},
		{"x-ms alone", azureRateLimit, []string{"x-ms-retry-after-ms", "250"}, event.RetryAfterMilliseconds, "x-ms-retry-after-ms", 250 * time.Millisecond},
		{"fractional", openAIRateLimit, []string{"retry-after-ms", "12.5"}, event.RetryAfterMilliseconds, "retry-after-ms", 12500 * time.Microsecond},
		{"invalid ms falls back to the next", azureRateLimit, []string{"retry-after-ms", "soon", "x-ms-retry-after-ms", "300", "retry-after", "5"}, event.RetryAfterMilliseconds, "x-ms-retry-after-ms", 300 * time.Millisecond},
		{"invalid ms falls back to Retry-After", openAIRateLimit, []string{"retry-after-ms", "-1", "retry-after", "2"}, event.RetryAfterSeconds, "", 2 * time.Second},
		{"only invalid ms", openAIRateLimit, []string{"retry-after-ms", "1e3"}, event.RetryAfterInvalid, "retry-after-ms", 0},
		{"duplicate ms fields", openAIRateLimit, []string{"retry-after-ms", "10", "retry-after-ms", "20"}, event.RetryAfterInvalid, "retry-after-ms", 0},
		{"Retry-After alone", openAIRateLimit, []string{"retry-after", "3"}, event.RetryAfterSeconds, "", 3 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := rigtest.New(t, openai.New(), hintPolicy(2), recoursetest.JSON(429, tc.body, tc.kv...), okStep("ok"))
			_, err := r.Client.Complete(context.Background(), canaryRequest())
			require.NoError(t, err)
			f := firstFailed(t, r.Rec.Events())
			assert.Equal(t, tc.kind, f.RetryAfter.Kind)
			assert.Equal(t, tc.header, f.RetryAfter.Header)
			assert.Equal(t, []time.Duration{tc.sleep}, r.Clock.Sleeps(), "max(minimum, jittered 0)")
			delays := rigtest.EventsOf(r.Rec.Events(), event.DelayScheduled)
			require.Len(t, delays, 1)
			assert.Equal(t, tc.sleep, delays[0].Delay)
			assert.Equal(t, tc.kind, delays[0].Failure.RetryAfter.Kind, "the hint is in the event's safe failure")
		})
	}
}

// TestProviderHints_MillisecondsAreHeldToTheCeilingAndTheBudget: a
// millisecond minimum above the ceiling refuses the retry (delay_ceiling),
// one above the time left refuses it (deadline) — never shortened (R5.5).
func TestProviderHints_MillisecondsAreHeldToTheCeilingAndTheBudget(t *testing.T) {
	step := recoursetest.JSON(429, openAIRateLimit, "retry-after-ms", "1500")

	p := hintPolicy(3)
	p.DelayCeiling = new(time.Second)
	r := rigtest.New(t, openai.New(), p, step, okStep("never"))
	_, err := r.Client.Complete(context.Background(), canaryRequest())
	re := rigtest.AsRecoveryError(t, err)
	assert.Equal(t, event.OutcomeDelayCeiling, re.Outcome)
	assert.Equal(t, 1500*time.Millisecond, re.Failure.RetryAfter.Delay)
	assert.Contains(t, re.Error(), "(retry-after-ms), above the delay ceiling")
	assert.Equal(t, 1, r.Server.Count())
	assert.Empty(t, r.Clock.Sleeps())

	p = hintPolicy(3)
	p.Budget = new(time.Second)
	r = rigtest.New(t, openai.New(), p, step, okStep("never"))
	_, err = r.Client.Complete(context.Background(), canaryRequest())
	re = rigtest.AsRecoveryError(t, err)
	assert.Equal(t, event.OutcomeDeadline, re.Outcome)
	assert.Equal(t, 1, r.Server.Count())
	assert.Empty(t, r.Clock.Sleeps())
}

// TestProviderHints_OffByDefault: the default policy reads Retry-After
// alone; the other hints change nothing (R1.1, the default chain is
// unchanged).
func TestProviderHints_OffByDefault(t *testing.T) {
	p := hintPolicy(2)
	p.ProviderHints = false
	r := rigtest.New(t, openai.New(), p,
		recoursetest.JSON(429, openAIQuota, "retry-after-ms", "1500", "x-ms-retry-after-ms", "1500", "x-should-retry", "false"), okStep("ok"))
	_, err := r.Client.Complete(context.Background(), canaryRequest())
	require.NoError(t, err, "without hints an insufficient_quota 429 is an ordinary 429")
	f := firstFailed(t, r.Rec.Events())
	assert.Equal(t, event.RetryAfterAbsent, f.RetryAfter.Kind)
	assert.Empty(t, f.RetryAfter.Header)
	assert.Equal(t, event.HintNone, f.Hint)
	assert.Equal(t, event.Classification{Eligible: true, Reason: event.ReasonTransient}, f.Classification)
	assert.Equal(t, []time.Duration{0}, r.Clock.Sleeps())
	assert.Equal(t, 2, r.Server.Count())
}

// TestProviderHints_ShouldRetryFalse: "x-should-retry: false" is the
// provider's explicit "do not resend".
func TestProviderHints_ShouldRetryFalse(t *testing.T) {
	for _, v := range []string{"false", "False", " false "} {
		r := rigtest.New(t, openai.New(), hintPolicy(3),
			recoursetest.JSON(503, recoursetest.OpenAIError("server_error", "server_error", "The server is overloaded."), "x-should-retry", v), okStep("never"))
		_, err := r.Client.Complete(context.Background(), canaryRequest())
		re := rigtest.AsRecoveryError(t, err)
		assert.Equal(t, event.OutcomeInterrupted, re.Outcome, v)
		assert.Equal(t, event.Classification{Reason: event.ReasonProviderNoRetry}, re.Failure.Classification)
		assert.Equal(t, event.HintShouldNotRetry, re.Failure.Hint)
		assert.Equal(t, 1, r.Server.Count())
		assert.Equal(t, []string{"attempt_started", "attempt_failed", "interrupted"}, r.Rec.Types())
		assert.Equal(t, event.HintShouldNotRetry, r.Rec.Events()[1].Failure.Hint, "the hint is in the attempt_failed event")
	}
	// "true" changes nothing: the policy's statuses decide.
	r := rigtest.New(t, openai.New(), hintPolicy(2),
		recoursetest.JSON(503, recoursetest.OpenAIError("server_error", "server_error", "busy"), "x-should-retry", "true"), okStep("ok"))
	_, err := r.Client.Complete(context.Background(), canaryRequest())
	require.NoError(t, err)
	assert.Equal(t, event.HintNone, firstFailed(t, r.Rec.Events()).Hint)
}

// TestProviderHints_InsufficientQuota: a 429 whose code says the quota is
// exhausted is not a rate limit; a 429 rate_limit_exceeded still is.
func TestProviderHints_InsufficientQuota(t *testing.T) {
	for _, code := range []string{"insufficient_quota", "organization_spend_limit_exceeded"} {
		r := rigtest.New(t, openai.New(), hintPolicy(3),
			recoursetest.JSON(429, recoursetest.OpenAIError("insufficient_quota", code, "You exceeded your current quota, please check your plan and billing details."), "retry-after-ms", "20"),
			okStep("never"))
		_, err := r.Client.Complete(context.Background(), canaryRequest())
		re := rigtest.AsRecoveryError(t, err)
		assert.Equal(t, event.OutcomeInterrupted, re.Outcome, code)
		assert.Equal(t, event.Classification{Reason: event.ReasonInsufficientQuota}, re.Failure.Classification)
		assert.Equal(t, event.HintInsufficientQuota, re.Failure.Hint)
		assert.Equal(t, 429, re.Failure.HTTPStatus)
		assert.Equal(t, 1, r.Server.Count())
		assert.Contains(t, re.Error(), "insufficient_quota")
	}
	r := rigtest.New(t, openai.New(), hintPolicy(3), recoursetest.JSON(429, openAIQuota), okStep("never"))
	_, err := r.Client.Complete(context.Background(), canaryRequest())
	re := rigtest.AsRecoveryError(t, err)
	assert.Equal(t, "insufficient_quota", re.Failure.ProviderCode, "a known code (R10.3)")

	r = rigtest.New(t, openai.New(), hintPolicy(2), recoursetest.JSON(429, openAIRateLimit), okStep("ok"))
	_, err = r.Client.Complete(context.Background(), canaryRequest())
	require.NoError(t, err, "a rate limit is still retried")

	// The quota code on another status is no quota hint.
	r = rigtest.New(t, openai.New(), hintPolicy(2), recoursetest.JSON(503, openAIQuota), okStep("ok"))
	_, err = r.Client.Complete(context.Background(), canaryRequest())
	require.NoError(t, err)
}

// TestProviderHints_Streaming: a streaming request's refused 429 is read
// like an ordinary one.
func TestProviderHints_Streaming(t *testing.T) {
	r := rigtest.New(t, openai.New(), hintPolicy(3), recoursetest.JSON(429, openAIQuota), okStep("never"))
	_, _, err := collect(t, r.Client.Stream(context.Background(), canaryRequest()))
	re := rigtest.AsRecoveryError(t, err)
	assert.Equal(t, event.ReasonInsufficientQuota, re.Failure.Classification.Reason)
	assert.Equal(t, 1, r.Server.Count())
}
