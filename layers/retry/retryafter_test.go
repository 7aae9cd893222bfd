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

// rateLimited is a 429 carrying the given Retry-After values (each its own
// header field).
var rateLimited = rigtest.RateLimited

// TestR5_RetryAfterThroughTheEngine drives every Retry-After form through a
// 429 and a retry. The rig's wall clock stands at Sat, 10 Oct 2026 00:00:00
// GMT; the backoff of failed attempt 1 is jitter * 100 ms.
func TestR5_RetryAfterThroughTheEngine(t *testing.T) {
	rows := []struct {
		name   string
		values []string
		jitter float64
		kind   event.RetryAfterKind
		delay  time.Duration // Failure.RetryAfter.Delay
		sleep  time.Duration
	}{
		{"seconds", []string{"3"}, 0, event.RetryAfterSeconds, 3 * time.Second, 3 * time.Second},
		{"seconds below jitter", []string{"0"}, 1, event.RetryAfterSeconds, 0, 100 * time.Millisecond},
		{"IMF-fixdate", []string{"Sat, 10 Oct 2026 00:00:02 GMT"}, 0, event.RetryAfterDate, 2 * time.Second, 2 * time.Second},
		{"RFC 850", []string{"Saturday, 10-Oct-26 00:00:02 GMT"}, 0, event.RetryAfterDate, 2 * time.Second, 2 * time.Second},
		{"asctime", []string{"Sat Oct 10 00:00:02 2026"}, 0, event.RetryAfterDate, 2 * time.Second, 2 * time.Second},
		{"past date", []string{"Fri, 09 Oct 2026 23:59:00 GMT"}, 1, event.RetryAfterDate, 0, 100 * time.Millisecond},
		{"fractional", []string{"1.5"}, 0.5, event.RetryAfterInvalid, 0, 50 * time.Millisecond},
		{"negative", []string{"-3"}, 0.5, event.RetryAfterInvalid, 0, 50 * time.Millisecond},
		{"ISO", []string{"2026-10-10T00:00:02Z"}, 0.5, event.RetryAfterInvalid, 0, 50 * time.Millisecond},
		{"empty", []string{""}, 0.5, event.RetryAfterInvalid, 0, 50 * time.Millisecond},
		{"overflowing", []string{"99999999999999999999999"}, 0.5, event.RetryAfterInvalid, 0, 50 * time.Millisecond},
		{"duplicate fields", []string{"3", "4"}, 0.5, event.RetryAfterInvalid, 0, 50 * time.Millisecond},
		{"malformed weekday", []string{"Sa, 10 Oct 2026 00:00:02 GMT"}, 0.5, event.RetryAfterInvalid, 0, 50 * time.Millisecond},
		{"absent", nil, 0.5, event.RetryAfterAbsent, 0, 50 * time.Millisecond},
	}
	for _, tc := range rows {
		t.Run(tc.name, func(t *testing.T) {
			r := rigtest.New(t, openai.New(), retry.Policy{MaxAttempts: 2, Jitter: jitterSeq(nil, tc.jitter)},
				rateLimited(tc.values...), okStep("ok"))

			_, err := r.Client.Complete(context.Background(), canaryRequest())
			require.NoError(t, err)

			f := firstFailed(t, r.Rec.Events())
			assert.Equal(t, tc.kind, f.RetryAfter.Kind, "R5.5: explicit parse result")
			assert.Equal(t, tc.delay, f.RetryAfter.Delay)
			if tc.kind == event.RetryAfterDate {
				assert.True(t, f.RetryAfter.Time.Equal(time.Date(2026, 10, 10, 0, 0, 2, 0, time.UTC)) || tc.delay == 0)
			}
			assert.Equal(t, []time.Duration{tc.sleep}, r.Clock.Sleeps(), "R5.5: max(retryAfter, jittered)")
			ds := eventsOf(r.Rec.Events(), event.DelayScheduled)
			require.Len(t, ds, 1)
			assert.Equal(t, tc.sleep, ds[0].Delay)
			assert.Equal(t, 2, r.Server.Count())
		})
	}
}

func TestR5_5_RetryAfterAboveCeilingRefusesWithDelayCeiling(t *testing.T) {
	r := rigtest.New(t, openai.New(), retry.Policy{MaxAttempts: 3, Jitter: zeroJitter}, rateLimited("3600"), okStep("never"))

	_, err := r.Client.Complete(context.Background(), canaryRequest())

	re := asRecoveryError(t, err)
	assert.Equal(t, event.OutcomeDelayCeiling, re.Outcome)
	assert.Equal(t, time.Hour, re.Failure.RetryAfter.Delay, "never shortened")
	assert.Empty(t, r.Clock.Sleeps(), "no sleep")
	assert.Equal(t, 1, r.Server.Count())
	assert.Equal(t, []string{"attempt_started", "attempt_failed", "exhausted"}, r.Rec.Types(), "R11.2: delay_ceiling → exhausted")
}

func TestR5_5_RetryAfterAboveCustomCeiling(t *testing.T) {
	r := rigtest.New(t, openai.New(), retry.Policy{MaxAttempts: 3, Jitter: zeroJitter, DelayCeiling: new(2 * time.Second)},
		rateLimited("Sat, 10 Oct 2026 00:00:03 GMT"), okStep("never"))

	_, err := r.Client.Complete(context.Background(), canaryRequest())

	assert.Equal(t, event.OutcomeDelayCeiling, asRecoveryError(t, err).Outcome)
	assert.Empty(t, r.Clock.Sleeps())
}

func TestR5_5_RetryAfterAboveRemainingBudgetRefusesWithDeadline(t *testing.T) {
	r := rigtest.New(t, openai.New(), retry.Policy{MaxAttempts: 3, Jitter: zeroJitter, Budget: new(time.Second)},
		rateLimited("2"), okStep("never"))

	_, err := r.Client.Complete(context.Background(), canaryRequest())

	re := asRecoveryError(t, err)
	assert.Equal(t, event.OutcomeDeadline, re.Outcome)
	assert.Equal(t, 2*time.Second, re.Failure.RetryAfter.Delay)
	assert.Empty(t, r.Clock.Sleeps(), "no sleep")
	assert.Equal(t, 1, r.Server.Count())
	assert.Equal(t, []string{"attempt_started", "attempt_failed", "exhausted"}, r.Rec.Types(), "R11.2: deadline → exhausted")
}

func TestR5_5_RetryAfterAboveRemainingDeadlineRefusesWithDeadline(t *testing.T) {
	r := rigtest.New(t, openai.New(), retry.Policy{MaxAttempts: 3, Jitter: zeroJitter, Deadline: rigtest.Epoch.Add(time.Second)},
		rateLimited("Sat, 10 Oct 2026 00:00:05 GMT"), okStep("never"))

	_, err := r.Client.Complete(context.Background(), canaryRequest())

	assert.Equal(t, event.OutcomeDeadline, asRecoveryError(t, err).Outcome)
	assert.Empty(t, r.Clock.Sleeps())
	assert.Equal(t, 1, r.Server.Count())
}

func TestR5_1_RetryAfterParsedOnEveryFailureWithHeaders(t *testing.T) {
	// A 503 (not only 429) and an ineligible 400 both carry the parse result.
	for _, status := range []int{503, 400} {
		r := rigtest.New(t, openai.New(), retry.Policy{MaxAttempts: 1},
			recoursetest.JSON(status, recoursetest.OpenAIError("server_error", "", "x"), "Retry-After", "7"))
		_, err := r.Client.Complete(context.Background(), canaryRequest())
		re := asRecoveryError(t, err)
		assert.Equal(t, event.RetryAfter{Kind: event.RetryAfterSeconds, Delay: 7 * time.Second}, re.Failure.RetryAfter, "HTTP %d", status)
	}
	// No response headers at all: absent.
	r := rigtest.New(t, openai.New(), retry.Policy{MaxAttempts: 1}, recoursetest.Reset())
	_, err := r.Client.Complete(context.Background(), canaryRequest())
	assert.Equal(t, event.RetryAfterAbsent, asRecoveryError(t, err).Failure.RetryAfter.Kind)
}
