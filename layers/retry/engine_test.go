package retry_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/recourse-dev/recourse/codecs/ollama"
	"github.com/recourse-dev/recourse/codecs/openai"
	"github.com/recourse-dev/recourse/codecs/openai/responses"
	"github.com/recourse-dev/recourse/event"
	"github.com/recourse-dev/recourse/layer"
	"github.com/recourse-dev/recourse/layers/retry"
	"github.com/recourse-dev/recourse/recoursetest"
)

// These tests prove the engine's own decisions (retry.New over the
// scripted wire of engine_helpers_test.go, no chain): each runs in a
// synctest bubble with the policy's clocks and sleep left nil, so the
// instants they assert are the default clocks' and timers', and nothing
// waits for real.

func status503() wireStep {
	return answer(503, recoursetest.OpenAIError("server_error", "server_error", "busy"))
}

func status504() wireStep {
	return answer(504, recoursetest.OpenAIError("server_error", "", "gateway timeout"))
}

func okAnswer(content string) wireStep { return answer(200, recoursetest.OpenAIChat(content)) }

// body reads and closes a successful call's response body.
func body(t *testing.T, r engineRun) string {
	t.Helper()
	require.NoError(t, r.err)
	require.NotNil(t, r.resp)
	defer r.resp.Body.Close()
	b, err := io.ReadAll(r.resp.Body)
	require.NoError(t, err)
	return string(b)
}

func TestR11_3_EngineReferenceSequence503ThenSuccess(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		log := newEventLog()
		w := newWire(status503(), okAnswer("hello"))
		r := roundTrip(t, context.Background(), openai.New(),
			retry.Policy{MaxAttempts: 3, Admit: allow, Jitter: one, OnEvent: log.OnEvent}, w, openAIURL, openAIBody)

		assert.Contains(t, body(t, r), `"hello"`)
		assert.Equal(t, "hello", r.call.Result.Completion.Message.Content)
		assert.Equal(t, []string{"attempt_started", "attempt_failed", "admission_pending", "admission_allowed",
			"delay_scheduled", "retry_started", "attempt_started", "attempt_succeeded"}, log.types())
		assert.Equal(t, []time.Duration{0, ms(100)}, w.starts(), "the resend leaves after the 100 ms backoff, on the bubble's clock")
		assert.Equal(t, ms(100), r.took)
		reqs := w.requests()
		require.Len(t, reqs, 2)
		assert.Equal(t, openAIBody, string(reqs[0].body), "R2.3: the request's bytes, taken once")
		assert.Equal(t, reqs[0].body, reqs[1].body, "R2.5: the exact encoded payload")
		assert.Equal(t, reqs[0].header, reqs[1].header)
		assert.Equal(t, []int{1, 2}, []int{reqs[0].wire, reqs[1].wire})
		assert.NotEqual(t, reqs[0].attemptID, reqs[1].attemptID, "R2.5: a new attempt ID per resend")
		evs := log.events()
		for _, e := range evs {
			assert.Equal(t, evs[0].LogicalID, e.LogicalID, "R2.5: one logical ID")
		}
		assert.Equal(t, r.call.Result.LogicalID, evs[0].LogicalID)
		assert.Equal(t, 2, r.call.Result.WireAttempts)
		delays, at := log.of(event.DelayScheduled)
		require.Len(t, delays, 1)
		assert.Equal(t, ms(100), delays[0].Delay)
		assert.Equal(t, 2, delays[0].NextAttempt)
		assert.Equal(t, time.Duration(0), at[0], "delay_scheduled comes before the sleep")
		_, at = log.of(event.RetryStarted)
		assert.Equal(t, []time.Duration{ms(100)}, at, "retry_started comes after it")
	})
}

func TestR11_3_EngineThreeTimeouts504Exhausted15Events(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		log := newEventLog()
		w := newWire(status504(), status504(), status504())
		r := roundTrip(t, context.Background(), openai.New(),
			retry.Policy{MaxAttempts: 3, Admit: allow, Jitter: one, OnEvent: log.OnEvent}, w, openAIURL, openAIBody)

		re := r.recoveryErr(t)
		assert.Equal(t, event.OutcomeExhausted, re.Outcome)
		once := []string{"attempt_started", "attempt_failed", "admission_pending", "admission_allowed", "delay_scheduled", "retry_started"}
		want := append(append(append([]string{}, once...), once...), "attempt_started", "attempt_failed", "exhausted")
		assert.Equal(t, want, log.types())
		assert.Len(t, log.types(), 15)
		require.Len(t, re.History, 3)
		assert.Equal(t, re.History[2].AttemptID, re.Failure.AttemptID, "R10.4: the final failure is the last history entry")
		assert.Equal(t, []time.Duration{0, ms(100), ms(300)}, w.starts())
		assert.Equal(t, ms(300), r.took, "no wait after the last attempt")
		safe, err := json.Marshal(log.events())
		require.NoError(t, err)
		errJSON, err := json.Marshal(re)
		require.NoError(t, err)
		for _, out := range []string{string(safe), string(errJSON), re.Error(), fmt.Sprintf("%v", r.err)} {
			for _, secret := range []string{"engine canary", "sk-engine-test", "gateway timeout"} {
				assert.NotContains(t, out, secret, "R10.5: safe outputs hold no prompt, credential or body text")
			}
		}
	})
}

func TestR11_3_EngineOpenAIWithoutHookHasNoAdmissionEvents(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		log := newEventLog()
		w := newWire(status503(), okAnswer("hello"))
		r := roundTrip(t, context.Background(), openai.New(),
			retry.Policy{MaxAttempts: 2, Jitter: one, OnEvent: log.OnEvent}, w, openAIURL, openAIBody)

		body(t, r)
		assert.Equal(t, []string{"attempt_started", "attempt_failed", "delay_scheduled", "retry_started",
			"attempt_started", "attempt_succeeded"}, log.types())
		assert.Equal(t, []time.Duration{0, ms(100)}, w.starts())
	})
}

func TestR1_2_EngineZeroMaxAttemptsSendsOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		log := newEventLog()
		w := newWire(status503(), okAnswer("never"))
		r := roundTrip(t, context.Background(), openai.New(), retry.Policy{OnEvent: log.OnEvent}, w, openAIURL, openAIBody)

		assert.Equal(t, event.OutcomeExhausted, r.recoveryErr(t).Outcome)
		assert.Len(t, w.requests(), 1)
		assert.Equal(t, []string{"attempt_started", "attempt_failed", "exhausted"}, log.types())
		assert.Equal(t, time.Duration(0), r.took)
	})
}

// TestR6_1_EngineBackoffDoublesUpToTheCeiling: base 100 ms, ceiling 250 ms,
// jitter 1: the resends leave 100, 200, 250 and 250 ms after each failure.
func TestR6_1_EngineBackoffDoublesUpToTheCeiling(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		log := newEventLog()
		w := newWire(status503(), status503(), status503(), status503(), status503())
		r := roundTrip(t, context.Background(), openai.New(), retry.Policy{MaxAttempts: 5, Jitter: one,
			BaseDelay: new(ms(100)), DelayCeiling: new(ms(250)), OnEvent: log.OnEvent}, w, openAIURL, openAIBody)

		assert.Equal(t, event.OutcomeExhausted, r.recoveryErr(t).Outcome)
		assert.Equal(t, []time.Duration{0, ms(100), ms(300), ms(550), ms(800)}, w.starts())
		delays, _ := log.of(event.DelayScheduled)
		var got []time.Duration
		for _, e := range delays {
			got = append(got, e.Delay)
		}
		assert.Equal(t, []time.Duration{ms(100), ms(200), ms(250), ms(250)}, got)
	})
}

// TestR6_1_EngineZeroBaseDelayResendsAtOnce: a zero base delay gives no
// backoff: every attempt leaves at the instant the one before failed.
func TestR6_1_EngineZeroBaseDelayResendsAtOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newWire(status503().taking(time.Second), status503().taking(time.Second), okAnswer("ok"))
		r := roundTrip(t, context.Background(), openai.New(), retry.Policy{MaxAttempts: 3, BaseDelay: new(time.Duration(0))},
			w, openAIURL, openAIBody)

		body(t, r)
		assert.Equal(t, []time.Duration{0, time.Second, 2 * time.Second}, w.starts())
	})
}

// TestR3_2_EngineJitterSampledOncePerPossibleResendInRetryOrder: a custom
// jitter is called MaxAttempts-1 times before the first attempt starts, and
// sample k scales the backoff after failed attempt k.
func TestR3_2_EngineJitterSampledOncePerPossibleResendInRetryOrder(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		jitter, calls := jitterOf(0.5, 1, 0.25)
		var atFirstStart int
		log := newEventLog()
		onEvent := func(ev event.Event) error {
			if ev.Type == event.AttemptStarted && ev.WireAttempt == 1 {
				atFirstStart = *calls
			}
			return log.OnEvent(ev)
		}
		w := newWire(status503(), status503(), status503(), okAnswer("ok"))
		r := roundTrip(t, context.Background(), openai.New(), retry.Policy{MaxAttempts: 4, Jitter: jitter, OnEvent: onEvent},
			w, openAIURL, openAIBody)

		body(t, r)
		assert.Equal(t, 3, atFirstStart, "every sample is taken before anything is sent")
		assert.Equal(t, 3, *calls, "and never again")
		// 0.5×100 ms, 1×200 ms, 0.25×400 ms.
		assert.Equal(t, []time.Duration{0, ms(50), ms(250), ms(350)}, w.starts())
	})
}

// TestR3_2_EngineJitterSampledEvenWhenTheFirstAttemptSucceeds: the
// MaxAttempts-1 samples are taken per logical call whatever its outcome;
// MaxAttempts 1 takes none.
func TestR3_2_EngineJitterSampledEvenWhenTheFirstAttemptSucceeds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		jitter, calls := jitterOf()
		w := newWire(okAnswer("ok"))
		body(t, roundTrip(t, context.Background(), openai.New(), retry.Policy{MaxAttempts: 5, Jitter: jitter}, w, openAIURL, openAIBody))
		assert.Equal(t, 4, *calls)

		jitter, calls = jitterOf()
		w = newWire(okAnswer("ok"))
		body(t, roundTrip(t, context.Background(), openai.New(), retry.Policy{MaxAttempts: 1, Jitter: jitter}, w, openAIURL, openAIBody))
		assert.Equal(t, 0, *calls, "MaxAttempts 1 samples nothing")
	})
}

// TestR3_2_EngineBadJitterSampleSendsNothing: a bad sample in a later
// position is a PolicyError before any event or send.
func TestR3_2_EngineBadJitterSampleSendsNothing(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		log := newEventLog()
		jitter, _ := jitterOf(0.5, 1.5)
		w := newWire(okAnswer("never"))
		r := roundTrip(t, context.Background(), openai.New(), retry.Policy{MaxAttempts: 3, Jitter: jitter, OnEvent: log.OnEvent},
			w, openAIURL, openAIBody)

		var pe *layer.PolicyError
		require.ErrorAs(t, r.err, &pe)
		assert.Equal(t, "Jitter", pe.Field)
		assert.Empty(t, w.requests())
		assert.Empty(t, log.types())
	})
}

// TestR3_2_EngineDefaultJitterScalesEachDelayWithinItsBackoff: with the
// default randomness, each resend leaves exactly the scheduled delay after
// the failure, and that delay lies within BaseDelay×2^(n-1).
func TestR3_2_EngineDefaultJitterScalesEachDelayWithinItsBackoff(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		log := newEventLog()
		w := newWire(status503(), status503(), status503(), okAnswer("ok"))
		r := roundTrip(t, context.Background(), openai.New(), retry.Policy{MaxAttempts: 4, OnEvent: log.OnEvent}, w, openAIURL, openAIBody)

		body(t, r)
		delays, _ := log.of(event.DelayScheduled)
		require.Len(t, delays, 3)
		starts := w.starts()
		require.Len(t, starts, 4)
		for i, e := range delays {
			assert.Equal(t, starts[i+1]-starts[i], e.Delay, "resend %d leaves after its scheduled delay", i+1)
			assert.GreaterOrEqual(t, e.Delay, time.Duration(0))
			assert.LessOrEqual(t, e.Delay, ms(100<<i), "resend %d", i+1)
		}
	})
}

// TestR5_5_EngineRetryAfterIsAMinimumOfTheBackoff: a valid Retry-After
// longer than the backoff sets the delay; a shorter one never shortens
// the backoff; an invalid one is ignored.
func TestR5_5_EngineRetryAfterIsAMinimumOfTheBackoff(t *testing.T) {
	for _, tc := range []struct {
		value string
		want  time.Duration
		kind  event.RetryAfterKind
	}{
		{"2", 2 * time.Second, event.RetryAfterSeconds},
		{"0", ms(100), event.RetryAfterSeconds},
		{"soon", ms(100), event.RetryAfterInvalid},
	} {
		t.Run(tc.value, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				w := newWire(answer(429, recoursetest.OpenAIError("requests", "rate_limit_exceeded", "slow down"), "Retry-After", tc.value),
					okAnswer("ok"))
				log := newEventLog()
				r := roundTrip(t, context.Background(), openai.New(), retry.Policy{MaxAttempts: 2, Jitter: one, OnEvent: log.OnEvent},
					w, openAIURL, openAIBody)

				body(t, r)
				assert.Equal(t, []time.Duration{0, tc.want}, w.starts())
				failed, _ := log.of(event.AttemptFailed)
				require.Len(t, failed, 1)
				assert.Equal(t, tc.kind, failed[0].Failure.RetryAfter.Kind)
			})
		})
	}
}

// TestR5_1_EngineRetryAfterDateIsReadOnTheDefaultClock: a Retry-After date
// is compared with the default wall clock, the bubble's time.Now.
func TestR5_1_EngineRetryAfterDateIsReadOnTheDefaultClock(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		date := time.Now().Add(3 * time.Second).UTC().Format(http.TimeFormat)
		w := newWire(answer(503, recoursetest.OpenAIError("server_error", "", "busy"), "Retry-After", date), okAnswer("ok"))
		log := newEventLog()
		r := roundTrip(t, context.Background(), openai.New(), retry.Policy{MaxAttempts: 2, Jitter: one, OnEvent: log.OnEvent},
			w, openAIURL, openAIBody)

		body(t, r)
		assert.Equal(t, []time.Duration{0, 3 * time.Second}, w.starts())
		failed, _ := log.of(event.AttemptFailed)
		require.Len(t, failed, 1)
		assert.Equal(t, event.RetryAfterDate, failed[0].Failure.RetryAfter.Kind)
		assert.Equal(t, 3*time.Second, failed[0].Failure.RetryAfter.Delay)
	})
}

// TestR5_5_EngineRetryAfterRefusals: a minimum above the ceiling ends the
// call delay_ceiling, one that does not fit in the budget or before the
// deadline ends it deadline — at the instant of the failure, without
// waiting and without delay_scheduled.
func TestR5_5_EngineRetryAfterRefusals(t *testing.T) {
	for _, tc := range []struct {
		name  string
		value string
		pol   func() retry.Policy
		want  event.Outcome
	}{
		{"default ceiling", "40", func() retry.Policy { return retry.Policy{} }, event.OutcomeDelayCeiling},
		{"custom ceiling", "2", func() retry.Policy { return retry.Policy{DelayCeiling: new(time.Second)} }, event.OutcomeDelayCeiling},
		{"budget", "2", func() retry.Policy { return retry.Policy{Budget: new(time.Second)} }, event.OutcomeDeadline},
		{"deadline", "2", func() retry.Policy { return retry.Policy{Deadline: time.Now().Add(time.Second)} }, event.OutcomeDeadline},
		{"exactly the budget", "1", func() retry.Policy { return retry.Policy{Budget: new(time.Second)} }, event.OutcomeDeadline},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				log := newEventLog()
				p := tc.pol()
				p.MaxAttempts, p.Jitter, p.OnEvent = 3, one, log.OnEvent
				w := newWire(answer(429, recoursetest.OpenAIError("requests", "rate_limit_exceeded", "slow down"), "Retry-After", tc.value),
					okAnswer("never"))
				r := roundTrip(t, context.Background(), openai.New(), p, w, openAIURL, openAIBody)

				re := r.recoveryErr(t)
				assert.Equal(t, tc.want, re.Outcome)
				assert.Equal(t, 429, re.Failure.HTTPStatus)
				assert.Len(t, w.requests(), 1)
				assert.Equal(t, []string{"attempt_started", "attempt_failed", "exhausted"}, log.types())
				assert.Equal(t, time.Duration(0), r.took, "refused at the failure, nothing waited")
			})
		})
	}
}

// TestR5_5_EngineProviderHintsMillisecondMinimum: with ProviderHints on,
// retry-after-ms is the delay minimum (and wins over Retry-After); off, it
// is not read.
func TestR5_5_EngineProviderHintsMillisecondMinimum(t *testing.T) {
	for _, tc := range []struct {
		hints bool
		want  time.Duration
	}{{true, ms(1500)}, {false, 5 * time.Second}} {
		synctest.Test(t, func(t *testing.T) {
			w := newWire(answer(503, recoursetest.OpenAIError("server_error", "", "busy"), "retry-after-ms", "1500", "Retry-After", "5"),
				okAnswer("ok"))
			r := roundTrip(t, context.Background(), openai.New(), retry.Policy{MaxAttempts: 2, Jitter: one, ProviderHints: tc.hints},
				w, openAIURL, openAIBody)
			body(t, r)
			assert.Equal(t, []time.Duration{0, tc.want}, w.starts(), "hints %v", tc.hints)
		})
	}
}

// TestR4_7_EngineShouldRetryFalseIsNotResentWithProviderHints: with
// ProviderHints on, "x-should-retry: false" makes an eligible 503 not
// eligible, reason provider_no_retry.
func TestR4_7_EngineShouldRetryFalseIsNotResentWithProviderHints(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newWire(answer(503, recoursetest.OpenAIError("server_error", "", "busy"), "X-Should-Retry", "false"), okAnswer("never"))
		r := roundTrip(t, context.Background(), openai.New(), retry.Policy{MaxAttempts: 3, Jitter: one, ProviderHints: true},
			w, openAIURL, openAIBody)
		re := r.recoveryErr(t)
		assert.Equal(t, event.OutcomeInterrupted, re.Outcome)
		assert.Equal(t, event.ReasonProviderNoRetry, re.Failure.Classification.Reason)
		assert.Equal(t, event.HintShouldNotRetry, re.Failure.Hint)
		assert.Len(t, w.requests(), 1)
	})
}

// TestR7_1_EngineBudgetStartsAtTheFirstCompletedFailure: a first attempt
// that takes an hour does not consume a one-second budget.
func TestR7_1_EngineBudgetStartsAtTheFirstCompletedFailure(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newWire(status503().taking(time.Hour), okAnswer("ok"))
		r := roundTrip(t, context.Background(), openai.New(), retry.Policy{MaxAttempts: 2, Jitter: one, Budget: new(time.Second)},
			w, openAIURL, openAIBody)
		body(t, r)
		assert.Equal(t, []time.Duration{0, time.Hour + ms(100)}, w.starts())
	})
}

// TestR7_1_EngineBudgetRefusesTheDelayThatDoesNotFit: budget 1 s, base
// 400 ms: the first resend (400 ms) fits, the second (800 ms, with 600 ms
// left) does not, and the call ends deadline when attempt 2 fails.
func TestR7_1_EngineBudgetRefusesTheDelayThatDoesNotFit(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		log := newEventLog()
		w := newWire(status503(), status503(), okAnswer("never"))
		r := roundTrip(t, context.Background(), openai.New(), retry.Policy{MaxAttempts: 5, Jitter: one, Budget: new(time.Second),
			BaseDelay: new(ms(400)), OnEvent: log.OnEvent}, w, openAIURL, openAIBody)

		assert.Equal(t, event.OutcomeDeadline, r.recoveryErr(t).Outcome)
		assert.Equal(t, []time.Duration{0, ms(400)}, w.starts())
		assert.Equal(t, ms(400), r.took)
		assert.Equal(t, []string{"attempt_started", "attempt_failed", "delay_scheduled", "retry_started",
			"attempt_started", "attempt_failed", "exhausted"}, log.types())
	})
}

// TestR7_1_EngineDeadlinePassedDuringTheFirstAttempt: the first attempt is
// made and ends after the deadline; the call ends deadline before
// admission is asked (R6.2) and no resend is scheduled.
func TestR7_1_EngineDeadlinePassedDuringTheFirstAttempt(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		log := newEventLog()
		w := newWire(status503().taking(2*time.Second), okAnswer("never"))
		r := roundTrip(t, context.Background(), openai.New(), retry.Policy{MaxAttempts: 3, Jitter: one, Admit: allow,
			Deadline: time.Now().Add(time.Second), OnEvent: log.OnEvent}, w, openAIURL, openAIBody)

		assert.Equal(t, event.OutcomeDeadline, r.recoveryErr(t).Outcome)
		assert.Len(t, w.requests(), 1)
		assert.Equal(t, 2*time.Second, r.took)
		assert.Equal(t, []string{"attempt_started", "attempt_failed", "exhausted"}, log.types())
	})
}

func TestR7_1_EngineZeroBudgetRefusesEveryResend(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		log := newEventLog()
		w := newWire(status503(), okAnswer("never"))
		r := roundTrip(t, context.Background(), openai.New(), retry.Policy{MaxAttempts: 3, Jitter: one, Budget: new(time.Duration(0)),
			Admit: allow, OnEvent: log.OnEvent}, w, openAIURL, openAIBody)
		assert.Equal(t, event.OutcomeDeadline, r.recoveryErr(t).Outcome)
		assert.Equal(t, []string{"attempt_started", "attempt_failed", "exhausted"}, log.types(), "admission is not asked")
		assert.Len(t, w.requests(), 1)
		assert.Equal(t, time.Duration(0), r.took)
	})
}

// TestR7_2_EngineAdmittedResendSucceedsAfterTheDeadline: a resend that
// started in time is never cut by the deadline.
func TestR7_2_EngineAdmittedResendSucceedsAfterTheDeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newWire(status503(), okAnswer("late").taking(5*time.Second))
		r := roundTrip(t, context.Background(), openai.New(), retry.Policy{MaxAttempts: 3, Jitter: one, Admit: allow,
			Deadline: time.Now().Add(time.Second)}, w, openAIURL, openAIBody)
		assert.Contains(t, body(t, r), `"late"`)
		assert.Equal(t, []time.Duration{0, ms(100)}, w.starts())
		assert.Equal(t, 5*time.Second+ms(100), r.took)
	})
}

// TestR7_2_EngineStallErrorBeforeOutputIsAResentTransportFailure: a
// per-attempt stall limit that ends an attempt before any output is a
// transport failure naming the limit, resent after the backoff.
func TestR7_2_EngineStallErrorBeforeOutputIsAResentTransportFailure(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		log := newEventLog()
		stall := wireStep{err: &layer.StallError{Limit: event.StallHeader, After: 5 * time.Second}, connected: true}.taking(5 * time.Second)
		w := newWire(stall, okAnswer("ok"))
		r := roundTrip(t, context.Background(), openai.New(), retry.Policy{MaxAttempts: 2, Jitter: one, OnEvent: log.OnEvent},
			w, openAIURL, openAIBody)

		body(t, r)
		assert.Equal(t, []time.Duration{0, 5*time.Second + ms(100)}, w.starts())
		failed, _ := log.of(event.AttemptFailed)
		require.Len(t, failed, 1)
		f := failed[0].Failure
		assert.Equal(t, event.CategoryTransport, f.Category)
		assert.Equal(t, event.StallHeader, f.Stall)
		assert.Equal(t, event.AcceptanceUnknown, f.Acceptance)
		assert.True(t, f.Classification.Eligible)
	})
}

// blockingHook is an admission hook that waits for its context, as a
// well-behaved hook does, and reports the instant it saw it end.
func blockingHook(ended chan<- time.Duration, start time.Time) layer.AdmissionHook {
	return func(ctx context.Context, _ layer.AdmissionRequest) (layer.Decision, error) {
		<-ctx.Done()
		ended <- time.Since(start)
		return "", ctx.Err()
	}
}

// TestR7_3_EngineAdmissionWaitEndsAtTheTimeLeft: a hook that never decides
// is abandoned exactly when the budget or the deadline runs out, on the
// engine's own timer; the call ends deadline and the hook's context is
// cancelled.
func TestR7_3_EngineAdmissionWaitEndsAtTheTimeLeft(t *testing.T) {
	for _, tc := range []struct {
		name string
		pol  func() retry.Policy
	}{
		{"budget", func() retry.Policy { return retry.Policy{Budget: new(time.Second)} }},
		{"deadline", func() retry.Policy { return retry.Policy{Deadline: time.Now().Add(time.Second)} }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				log := newEventLog()
				ended := make(chan time.Duration, 1)
				p := tc.pol()
				p.MaxAttempts, p.Jitter, p.OnEvent, p.Admit = 3, one, log.OnEvent, blockingHook(ended, time.Now())
				w := newWire(status503(), okAnswer("never"))
				r := roundTrip(t, context.Background(), openai.New(), p, w, openAIURL, openAIBody)

				assert.Equal(t, event.OutcomeDeadline, r.recoveryErr(t).Outcome)
				assert.Equal(t, time.Second, r.took)
				assert.Equal(t, time.Second, <-ended, "R8.2: the hook's context ends with the wait")
				assert.Len(t, w.requests(), 1)
				assert.Equal(t, []string{"attempt_started", "attempt_failed", "admission_pending", "exhausted"}, log.types())
			})
		})
	}
}

// TestR8_4_EngineAdmissionWaitConsumesNoAttemptAndPrecedesTheBackoff: the
// hook is asked about wire attempt 2 and takes 5 s to allow; the backoff
// runs after it, and the wait uses no attempt.
func TestR8_4_EngineAdmissionWaitConsumesNoAttemptAndPrecedesTheBackoff(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		log := newEventLog()
		var asked []layer.AdmissionRequest
		hook := func(ctx context.Context, req layer.AdmissionRequest) (layer.Decision, error) {
			asked = append(asked, req)
			time.Sleep(5 * time.Second)
			return layer.Allow, nil
		}
		w := newWire(status503(), okAnswer("ok"))
		r := roundTrip(t, context.Background(), openai.New(), retry.Policy{MaxAttempts: 2, Jitter: one, Admit: hook, OnEvent: log.OnEvent},
			w, openAIURL, openAIBody)

		body(t, r)
		require.Len(t, asked, 1)
		assert.Equal(t, 2, asked[0].NextAttempt)
		assert.Equal(t, 503, asked[0].Failure.HTTPStatus)
		assert.Equal(t, []time.Duration{0, 5*time.Second + ms(100)}, w.starts())
		assert.Equal(t, 2, r.call.Result.WireAttempts)
		_, at := log.of(event.AdmissionAllowed)
		assert.Equal(t, []time.Duration{5 * time.Second}, at)
	})
}

// TestR8_1_EngineOnlyAnExplicitAllowAuthorizesAResend: Reject ends the
// call admission_rejected; no decision, an unknown one, an error or a
// panic end it admission_no_decision with the cause kept private.
func TestR8_1_EngineOnlyAnExplicitAllowAuthorizesAResend(t *testing.T) {
	broken := errors.New("admission store down")
	for _, tc := range []struct {
		name  string
		hook  layer.AdmissionHook
		want  event.Outcome
		event string
		cause any
	}{
		{"reject", func(context.Context, layer.AdmissionRequest) (layer.Decision, error) { return layer.Reject, nil },
			event.OutcomeAdmissionRejected, "admission_rejected", nil},
		{"no decision", func(context.Context, layer.AdmissionRequest) (layer.Decision, error) { return "", nil },
			event.OutcomeAdmissionNoDecision, "admission_no_decision", layer.Decision("")},
		{"unknown", func(context.Context, layer.AdmissionRequest) (layer.Decision, error) { return "maybe", nil },
			event.OutcomeAdmissionNoDecision, "admission_no_decision", layer.Decision("maybe")},
		{"error", func(context.Context, layer.AdmissionRequest) (layer.Decision, error) { return layer.Allow, broken },
			event.OutcomeAdmissionNoDecision, "admission_no_decision", broken},
		{"panic", func(context.Context, layer.AdmissionRequest) (layer.Decision, error) { panic("hook broke") },
			event.OutcomeAdmissionNoDecision, "admission_no_decision", "hook broke"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				log := newEventLog()
				w := newWire(status503(), okAnswer("never"))
				r := roundTrip(t, context.Background(), openai.New(), retry.Policy{MaxAttempts: 3, Jitter: one, Admit: tc.hook,
					OnEvent: log.OnEvent}, w, openAIURL, openAIBody)

				re := r.recoveryErr(t)
				assert.Equal(t, tc.want, re.Outcome)
				assert.Len(t, re.History, 1)
				assert.Len(t, w.requests(), 1)
				assert.Equal(t, []string{"attempt_started", "attempt_failed", "admission_pending", tc.event}, log.types())
				ev := event.Inspect(&re.Failure)
				require.NotNil(t, ev)
				assert.Equal(t, tc.cause, ev.AdmissionCause)
				assert.Equal(t, time.Duration(0), r.took)
			})
		})
	}
}

// TestR8_3_EngineOllamaWithoutHookNeedsAdmissionUnlessNothingWasSent: an
// eligible Ollama failure is an ambiguous local execution and ends
// admission_required; a refused connection (nothing sent) is resent
// without admission.
func TestR8_3_EngineOllamaWithoutHookNeedsAdmissionUnlessNothingWasSent(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		log := newEventLog()
		w := newWire(answer(503, recoursetest.OllamaError("busy")), answer(200, recoursetest.OllamaChat("never")))
		r := roundTrip(t, context.Background(), ollama.New(), retry.Policy{MaxAttempts: 3, Jitter: one, OnEvent: log.OnEvent},
			w, ollamaURL, ollamaBody)
		re := r.recoveryErr(t)
		assert.Equal(t, event.OutcomeAdmissionRequired, re.Outcome)
		assert.Equal(t, event.AcceptanceUnknown, re.Failure.Acceptance)
		assert.Len(t, w.requests(), 1)
		assert.Equal(t, []string{"attempt_started", "attempt_failed", "admission_required"}, log.types())

		w = newWire(refused(), answer(200, recoursetest.OllamaChat("ok")))
		r = roundTrip(t, context.Background(), ollama.New(), retry.Policy{MaxAttempts: 3, Jitter: one}, w, ollamaURL, ollamaBody)
		assert.Contains(t, body(t, r), `"ok"`)
		assert.Equal(t, []time.Duration{0, ms(100)}, w.starts())
	})
}

// TestR4_6_EngineCutOrdinaryBodyIsNeverResent: a 2xx ordinary body cut
// before its end was accepted by the provider: not eligible, partial
// before any content, semantic output after it (R4.4), one request.
func TestR4_6_EngineCutOrdinaryBodyIsNeverResent(t *testing.T) {
	full := recoursetest.OpenAIChat("a long answer")
	for _, tc := range []struct {
		name   string
		at     int
		reason event.Reason
	}{
		{"before the first byte", 0, event.ReasonPartialResponse},
		{"before the content", strings.Index(full, `"content"`), event.ReasonPartialResponse},
		{"inside the content", strings.Index(full, "long"), event.ReasonSemanticOutput},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				w := newWire(okAnswer("a long answer").cut(tc.at, io.ErrUnexpectedEOF), okAnswer("never"))
				r := roundTrip(t, context.Background(), openai.New(), retry.Policy{MaxAttempts: 3, Jitter: one, Admit: allow},
					w, openAIURL, openAIBody)
				re := r.recoveryErr(t)
				assert.Equal(t, event.OutcomeInterrupted, re.Outcome)
				assert.Equal(t, tc.reason, re.Failure.Classification.Reason)
				assert.Equal(t, event.AcceptanceYes, re.Failure.Acceptance)
				assert.Len(t, w.requests(), 1)
			})
		})
	}
}

// streamCall sends a streaming request through the engine as a drop-in
// call and reads the whole body, returning what the consumer read and the
// read's error.
func streamCall(t *testing.T, ctx context.Context, p retry.Policy, w *wire) (string, error, engineRun) {
	t.Helper()
	r := roundTripCall(t, ctx, openai.New(), p, w, openAIURL, openAIStreamBody, &layer.Call{})
	require.NoError(t, r.err)
	defer r.resp.Body.Close()
	b, err := io.ReadAll(r.resp.Body)
	return string(b), err, r
}

// TestR13_1_EngineStreamWithContentIsNeverResent: a stream cut after a
// content delta ends interrupted with semantic output; what was delivered
// stays delivered and nothing is sent again.
func TestR13_1_EngineStreamWithContentIsNeverResent(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		evs := recoursetest.OpenAIStream("Hel", "lo")
		cutAt := len(evs[0]) + len(evs[1])
		w := newWire(events(evs...).cut(cutAt, io.ErrUnexpectedEOF), events(evs...))
		got, err, r := streamCall(t, context.Background(), retry.Policy{MaxAttempts: 3, Jitter: one}, w)

		var re *layer.RecoveryError
		require.ErrorAs(t, err, &re)
		assert.Equal(t, event.OutcomeInterrupted, re.Outcome)
		assert.Equal(t, event.ReasonSemanticOutput, re.Failure.Classification.Reason)
		assert.True(t, strings.HasPrefix(got, evs[0]+evs[1]), "the delivered frames stay delivered")
		assert.Len(t, w.requests(), 1)
		assert.Same(t, re, r.call.Result.Err)
	})
}

// TestR4_8_EngineKeepaliveOnlyStreamIsResentAtTheBackoffInstant: a stream
// that failed after keepalives only is replaced by a resend 100 ms later;
// the consumer reads the whole frames it was handed (the keepalives), then
// the resend's.
func TestR4_8_EngineKeepaliveOnlyStreamIsResentAtTheBackoffInstant(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		evs := recoursetest.OpenAIStream("Hello")
		keepalive := ": keepalive\n\n"
		w := newWire(events(keepalive, keepalive).cut(2*len(keepalive), io.ErrUnexpectedEOF), events(evs...))
		got, err, _ := streamCall(t, context.Background(), retry.Policy{MaxAttempts: 3, Jitter: one}, w)

		require.NoError(t, err)
		assert.Equal(t, keepalive+keepalive+strings.Join(evs, ""), got, "the keepalives read, then the resend's frames")
		assert.Equal(t, []time.Duration{0, ms(100)}, w.starts())
	})
}

// TestR9_1_EngineCancelDuringBackoffEndsAtTheInstantOfCancel: a caller
// that cancels 3 s into a 10 s Retry-After wait gets cancelled at 3 s.
func TestR9_1_EngineCancelDuringBackoffEndsAtTheInstantOfCancel(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		log := newEventLog()
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		time.AfterFunc(3*time.Second, cancel)
		w := newWire(answer(503, recoursetest.OpenAIError("server_error", "", "busy"), "Retry-After", "10"), okAnswer("never"))
		r := roundTrip(t, ctx, openai.New(), retry.Policy{MaxAttempts: 3, Jitter: one, OnEvent: log.OnEvent}, w, openAIURL, openAIBody)

		re := r.recoveryErr(t)
		assert.Equal(t, event.OutcomeCancelled, re.Outcome)
		assert.ErrorIs(t, r.err, context.Canceled)
		assert.Equal(t, 3*time.Second, r.took)
		assert.Equal(t, []string{"attempt_started", "attempt_failed", "delay_scheduled", "cancelled"}, log.types())
		require.Len(t, re.History, 1, "the failed 503 stays in the history")
		assert.Len(t, w.requests(), 1)
	})
}

// TestR9_1_EngineCancelDuringAdmissionEndsAtTheInstantOfCancel: the call
// ends cancelled when the caller cancels, 2 s into a wait the budget would
// bound at an hour, and the hook's context ends at that instant (R8.2).
func TestR9_1_EngineCancelDuringAdmissionEndsAtTheInstantOfCancel(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		log := newEventLog()
		ended := make(chan time.Duration, 1)
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		time.AfterFunc(2*time.Second, cancel)
		w := newWire(status503(), okAnswer("never"))
		r := roundTrip(t, ctx, openai.New(), retry.Policy{MaxAttempts: 3, Jitter: one, Budget: new(time.Hour),
			Admit: blockingHook(ended, time.Now()), OnEvent: log.OnEvent}, w, openAIURL, openAIBody)

		assert.Equal(t, event.OutcomeCancelled, r.recoveryErr(t).Outcome)
		assert.ErrorIs(t, r.err, context.Canceled)
		assert.Equal(t, 2*time.Second, r.took)
		assert.Equal(t, 2*time.Second, <-ended)
		assert.Equal(t, []string{"attempt_started", "attempt_failed", "admission_pending", "cancelled"}, log.types())
	})
}

// TestR9_1_EngineCancelDuringAStalledBodyEndsAtTheInstantOfCancel: the
// attempt in flight is recorded as cancelled before the one cancelled
// event.
func TestR9_1_EngineCancelDuringAStalledBodyEndsAtTheInstantOfCancel(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		log := newEventLog()
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		time.AfterFunc(7*time.Second, cancel)
		w := newWire(okAnswer("never").stalled(5), okAnswer("never"))
		r := roundTrip(t, ctx, openai.New(), retry.Policy{MaxAttempts: 3, Jitter: one, OnEvent: log.OnEvent}, w, openAIURL, openAIBody)

		re := r.recoveryErr(t)
		assert.Equal(t, event.OutcomeCancelled, re.Outcome)
		assert.Equal(t, 7*time.Second, r.took)
		require.Len(t, re.History, 1)
		assert.Equal(t, event.CategoryCancellation, re.History[0].Category)
		assert.False(t, re.Failure.RemoteTerminationConfirmed, "R9.3")
		assert.Equal(t, []string{"attempt_started", "attempt_failed", "cancelled"}, log.types())
		assert.Len(t, w.requests(), 1)
	})
}

// TestR9_2_EngineContextDoneBeforeTheFirstSendSendsNothing: nothing sent,
// empty history, wire attempt 0, events exactly [cancelled] with a logical
// and an attempt ID.
func TestR9_2_EngineContextDoneBeforeTheFirstSendSendsNothing(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		log := newEventLog()
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		w := newWire(okAnswer("never"))
		r := roundTrip(t, ctx, openai.New(), retry.Policy{MaxAttempts: 3, Jitter: one, OnEvent: log.OnEvent}, w, openAIURL, openAIBody)

		re := r.recoveryErr(t)
		assert.Equal(t, event.OutcomeCancelled, re.Outcome)
		assert.Empty(t, re.History)
		assert.Equal(t, 0, re.Failure.WireAttempt)
		assert.Equal(t, event.AcceptanceNo, re.Failure.Acceptance)
		assert.Empty(t, w.requests())
		assert.Equal(t, []string{"cancelled"}, log.types())
		evs := log.events()
		assert.NotEmpty(t, evs[0].LogicalID)
		assert.NotEmpty(t, evs[0].AttemptID)
	})
}

// TestR11_4_EngineObserverErrorOnAttemptStartedSendsNothing: an observer
// error ends the call with that error, is never a retry, and the request
// it was told about is not sent.
func TestR11_4_EngineObserverErrorOnAttemptStartedSendsNothing(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		stop := errors.New("observer says stop")
		w := newWire(okAnswer("never"))
		r := roundTrip(t, context.Background(), openai.New(), retry.Policy{MaxAttempts: 3, Jitter: one,
			OnEvent: func(ev event.Event) error {
				if ev.Type == event.AttemptStarted {
					return stop
				}
				return nil
			}}, w, openAIURL, openAIBody)

		var oe *layer.ObserverError
		require.ErrorAs(t, r.err, &oe)
		assert.ErrorIs(t, r.err, stop)
		assert.Empty(t, w.requests())
	})
}

// TestR18_4_EngineFirstAttemptWaitsForTheSharedHorizon: a first attempt
// waits for the upstream's cooldown horizon when it is within the delay
// ceiling and the deadline (cooldown_wait, then the send at the horizon),
// and is sent at once when the horizon lies beyond either.
func TestR18_4_EngineFirstAttemptWaitsForTheSharedHorizon(t *testing.T) {
	for _, tc := range []struct {
		name     string
		in       time.Duration
		deadline time.Duration
		first    time.Duration
		types    []string
	}{
		{"within the ceiling", 2 * time.Second, 0, 2 * time.Second, []string{"cooldown_wait", "attempt_started", "attempt_succeeded"}},
		{"beyond the ceiling", time.Minute, 0, 0, []string{"attempt_started", "attempt_succeeded"}},
		{"beyond the deadline", 2 * time.Second, time.Second, 0, []string{"attempt_started", "attempt_succeeded"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				log := newEventLog()
				g := &scriptGate{horizon: time.Now().Add(tc.in)}
				w := newWire(okAnswer("ok"))
				p := retry.Policy{MaxAttempts: 3, Jitter: one, OnEvent: log.OnEvent}
				if tc.deadline > 0 {
					p.Deadline = time.Now().Add(tc.deadline)
				}
				r := roundTripCall(t, context.Background(), openai.New(), p,
					w, openAIURL, openAIBody, &layer.Call{TypedErrors: true, Gate: g})

				body(t, r)
				assert.Equal(t, []time.Duration{tc.first}, w.starts())
				assert.Equal(t, tc.types, log.types())
				if waits, _ := log.of(event.CooldownWait); len(waits) == 1 {
					assert.Equal(t, tc.in, waits[0].Delay)
				}
				deposits, _, _, _, _ := g.record()
				assert.Equal(t, 1, deposits, "every call deposits")
			})
		})
	}
}

// TestR20_5_EngineOpenCircuitEndsBeforeAnySend: with SkipOpenCircuit, a
// horizon beyond the ceiling ends the call delay_ceiling at once, nothing
// sent.
func TestR20_5_EngineOpenCircuitEndsBeforeAnySend(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		log := newEventLog()
		g := &scriptGate{horizon: time.Now().Add(time.Minute)}
		w := newWire(okAnswer("never"))
		r := roundTripCall(t, context.Background(), openai.New(), retry.Policy{MaxAttempts: 3, OnEvent: log.OnEvent},
			w, openAIURL, openAIBody, &layer.Call{TypedErrors: true, Gate: g, SkipOpenCircuit: true})

		re := r.recoveryErr(t)
		assert.Equal(t, event.OutcomeDelayCeiling, re.Outcome)
		assert.Equal(t, 0, re.Failure.WireAttempt)
		assert.Equal(t, event.AcceptanceNo, re.Failure.Acceptance)
		assert.Empty(t, w.requests())
		assert.Equal(t, []string{"exhausted"}, log.types())
		assert.Equal(t, time.Duration(0), r.took)
	})
}

// TestR18_2_EngineQuotaPeekRefusalEndsBeforeAdmission: a quota that
// refuses at the peek ends the call quota_exhausted; the admission hook is
// never asked and nothing is reserved.
func TestR18_2_EngineQuotaPeekRefusalEndsBeforeAdmission(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		log := newEventLog()
		refusal := &event.QuotaRefusal{Upstream: "api.openai.test", Resends: 3, Window: time.Minute}
		g := &scriptGate{peek: layer.GateVerdict{Refusal: refusal}}
		asked := 0
		hook := func(context.Context, layer.AdmissionRequest) (layer.Decision, error) {
			asked++
			return layer.Allow, nil
		}
		w := newWire(status503(), okAnswer("never"))
		r := roundTripCall(t, context.Background(), openai.New(), retry.Policy{MaxAttempts: 3, Jitter: one, Admit: hook, OnEvent: log.OnEvent},
			w, openAIURL, openAIBody, &layer.Call{TypedErrors: true, Gate: g})

		re := r.recoveryErr(t)
		assert.Equal(t, event.OutcomeQuotaExhausted, re.Outcome)
		assert.Same(t, refusal, re.Quota)
		assert.Equal(t, 0, asked)
		assert.Equal(t, []string{"attempt_started", "attempt_failed", "quota_refused", "exhausted"}, log.types())
		_, peeks, reserves, _, _ := g.record()
		assert.Equal(t, 1, peeks)
		assert.Equal(t, 0, reserves)
		assert.Len(t, w.requests(), 1)
	})
}

// TestR18_4_EngineResendWaitsForTheHorizonAndSettles: a failure's
// Retry-After raises the shared horizon (read on the wall clock); the
// resend waits until the horizon the reservation read, when it is further
// than the backoff; a resend that failed stays counted and one that
// succeeded is refunded (R18.2).
func TestR18_4_EngineResendWaitsForTheHorizonAndSettles(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		g := &scriptGate{reserve: layer.GateVerdict{Horizon: start.Add(3 * time.Second)}}
		w := newWire(answer(503, recoursetest.OpenAIError("server_error", "", "busy"), "Retry-After", "2"), status503(), okAnswer("ok"))
		r := roundTripCall(t, context.Background(), openai.New(), retry.Policy{MaxAttempts: 3, Jitter: one},
			w, openAIURL, openAIBody, &layer.Call{TypedErrors: true, Gate: g})

		body(t, r)
		// Resend 1 waits for the reserved horizon (3 s > Retry-After 2 s);
		// resend 2's horizon has passed, so its 200 ms backoff decides.
		assert.Equal(t, []time.Duration{0, 3 * time.Second, 3*time.Second + ms(200)}, w.starts())
		_, peeks, reserves, settled, cooldowns := g.record()
		assert.Equal(t, []time.Time{start.Add(2 * time.Second)}, cooldowns, "the Retry-After raised the horizon")
		assert.Equal(t, 2, peeks)
		assert.Equal(t, 2, reserves)
		assert.Equal(t, []bool{false, true}, settled, "the failed resend stays counted, the successful one is refunded")
	})
}

const (
	responsesURL  = "https://api.openai.test/v1/responses"
	responsesBody = `{"model":"gpt-4.1-mini","input":"engine canary","stream":true,"background":true,"store":true}`
	responseID    = "resp_engine1"
)

// TestR19_9_EngineCutBackgroundStreamIsReadAgainAfterTheBackoff: a
// background stream cut after output is not sent again: 100 ms later the
// engine reads the same response after the last sequence number it
// delivered (a GET with the create's headers and no body), asking no
// admission, and a drop-in consumer reads every event's bytes once.
func TestR19_9_EngineCutBackgroundStreamIsReadAgainAfterTheBackoff(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		evs := recoursetest.ResponsesEvents(responseID, "Hello", ", world", "!") // deltas at 4, 5, 6
		first := strings.Join(evs[:6], "")
		w := newWire(events(evs...).cut(len(first), io.ErrUnexpectedEOF), events(evs[6:]...))
		log := newEventLog()
		reject := func(context.Context, layer.AdmissionRequest) (layer.Decision, error) { return layer.Reject, nil }
		r := roundTripCall(t, context.Background(), responses.New(), retry.Policy{MaxAttempts: 3, Jitter: one, Admit: reject,
			OnEvent: log.OnEvent}, w, responsesURL, responsesBody, &layer.Call{})
		require.NoError(t, r.err)
		b, err := io.ReadAll(r.resp.Body)
		r.resp.Body.Close()
		require.NoError(t, err)

		assert.Equal(t, strings.Join(evs, ""), string(b), "one continuous stream")
		reqs := w.requests()
		require.Len(t, reqs, 2, "one create, one resume read, no resend")
		assert.Equal(t, http.MethodPost, reqs[0].method)
		assert.Equal(t, http.MethodGet, reqs[1].method)
		assert.Equal(t, responsesURL+"/"+responseID+"?starting_after=5&stream=true", reqs[1].url)
		assert.Empty(t, reqs[1].body)
		assert.Equal(t, "Bearer sk-engine-test", reqs[1].header.Get("Authorization"))
		assert.Equal(t, []time.Duration{0, ms(100)}, w.starts(), "the read waits the backoff of a resend")
		assert.Equal(t, []string{"attempt_started", "attempt_failed", "delay_scheduled", "retry_started",
			"attempt_started", "attempt_succeeded"}, log.types(), "a resume read asks no admission")
	})
}

// TestR19_12_EngineCancelRequestIsBoundedByCancelTimeout: a caller that
// cancels a background stream has the response cancelled at the provider
// on the engine's own goroutine: the call ends at the instant of the
// cancel, and a provider that never answers the cancel is given up
// CancelTimeout later.
func TestR19_12_EngineCancelRequestIsBoundedByCancelTimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		evs := recoursetest.ResponsesEvents(responseID, "Hello", ", world", "!")
		w := newWire(events(evs...).stalled(len(strings.Join(evs[:5], ""))), answer(200, "{}").taking(time.Hour))
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		time.AfterFunc(time.Second, cancel)
		r := roundTripCall(t, ctx, responses.New(), retry.Policy{MaxAttempts: 3, Jitter: one}, w, responsesURL, responsesBody, &layer.Call{})
		require.NoError(t, r.err)
		_, err := io.ReadAll(r.resp.Body)
		r.resp.Body.Close()
		assert.ErrorIs(t, err, context.Canceled)
		assert.Equal(t, time.Second, time.Since(w.start), "the caller is not held up by the cancel request")

		time.Sleep(time.Minute) // the cancel request's goroutine gives up meanwhile
		reqs := w.requests()
		require.Len(t, reqs, 2)
		assert.Equal(t, http.MethodPost, reqs[1].method)
		assert.Equal(t, responsesURL+"/"+responseID+"/cancel", reqs[1].url)
		assert.Empty(t, reqs[1].body)
		assert.Equal(t, time.Second, reqs[1].at)
		assert.Equal(t, []time.Duration{time.Second + retry.CancelTimeout}, w.gaveUp())
	})
}

// TestR10_4_EngineDropInGetsTheFinalFailureResponseMarked: a drop-in call
// that ends on a complete HTTP failure gets that response as the provider
// sent it, marked so that no SDK retries on top, with the typed error in
// the call's result; a 2xx the engine judged a failure is never handed
// over.
func TestR10_4_EngineDropInGetsTheFinalFailureResponseMarked(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		busy := recoursetest.OpenAIError("server_error", "server_error", "busy")
		w := newWire(answer(503, busy), answer(503, busy))
		lc := &layer.Call{}
		r := roundTripCall(t, context.Background(), openai.New(), retry.Policy{MaxAttempts: 2, Jitter: one}, w, openAIURL, openAIBody, lc)
		require.NoError(t, r.err)
		defer r.resp.Body.Close()
		assert.Equal(t, 503, r.resp.StatusCode)
		assert.Equal(t, "false", r.resp.Header.Get(retry.HeaderShouldRetry))
		assert.Equal(t, string(event.OutcomeExhausted), r.resp.Header.Get(retry.HeaderOutcome))
		b, err := io.ReadAll(r.resp.Body)
		require.NoError(t, err)
		assert.Equal(t, busy, string(b), "the provider's body as sent")
		require.NotNil(t, lc.Result.Err)
		assert.Equal(t, event.OutcomeExhausted, lc.Result.Err.Outcome)
		assert.Equal(t, []time.Duration{0, ms(100)}, w.starts())

		w = newWire(answer(200, recoursetest.OpenAIError("server_error", "server_error", "broke")))
		lc = &layer.Call{}
		r = roundTripCall(t, context.Background(), openai.New(), retry.Policy{MaxAttempts: 2, Jitter: one}, w, openAIURL, openAIBody, lc)
		assert.Nil(t, r.resp)
		re := r.recoveryErr(t)
		assert.Equal(t, event.OutcomeInterrupted, re.Outcome)
		assert.Equal(t, event.CategoryProviderResponse, re.Failure.Category)
		assert.Len(t, w.requests(), 1, "a provider error object is never resent (R4.7)")
	})
}

// TestR2_1_EngineSecondSendIsNotTransient: a layer below the engine that
// sent one attempt twice, or sent a request it detached from the attempt,
// would meet the same layer on a resend: the failure is permanent, never
// resent.
func TestR2_1_EngineSecondSendIsNotTransient(t *testing.T) {
	for _, cause := range []error{layer.ErrSecondSend, layer.ErrDetachedRequest} {
		synctest.Test(t, func(t *testing.T) {
			w := newWire(wireStep{err: cause, connected: true}, okAnswer("never"))
			r := roundTrip(t, context.Background(), openai.New(), retry.Policy{MaxAttempts: 3, Jitter: one}, w, openAIURL, openAIBody)
			re := r.recoveryErr(t)
			assert.Equal(t, event.OutcomeInterrupted, re.Outcome, "%v", cause)
			assert.Equal(t, event.ReasonPermanent, re.Failure.Classification.Reason)
			assert.Len(t, w.requests(), 1)
		})
	}
}

// TestR18_4_EngineResendWaitsForTheLocalHorizonToo: a horizon that the
// gate's local copy learnt after the first attempt (another chain's
// cooldown) delays the resend as much as one the reservation read.
func TestR18_4_EngineResendWaitsForTheLocalHorizonToo(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := &scriptGate{raiseOnPeek: 4 * time.Second}
		w := newWire(status503(), okAnswer("ok"))
		r := roundTripCall(t, context.Background(), openai.New(), retry.Policy{MaxAttempts: 2, Jitter: one},
			w, openAIURL, openAIBody, &layer.Call{TypedErrors: true, Gate: g})
		body(t, r)
		assert.Equal(t, []time.Duration{0, 4 * time.Second}, w.starts())
	})
}

// withFinish returns the events of an OpenAI stream of content whose
// finish is finish, without [DONE] unless done.
func withFinish(finish string, done bool, content ...string) []string {
	evs := recoursetest.OpenAIStream(content...)
	out := make([]string, 0, len(evs))
	for _, e := range evs {
		if e == recoursetest.StreamDone && !done {
			continue
		}
		out = append(out, strings.Replace(e, `"finish_reason":"stop"`, `"finish_reason":"`+finish+`"`, 1))
	}
	return out
}

// TestR13_3_EngineLengthFinishIsTerminalAndNeverResent: for the typed
// API, a finish other than stop or tool_calls ends the stream at once,
// without [DONE], as an incomplete completion that is never resent. The
// body stalls after the length frame: an engine that waited for [DONE]
// would block the bubble. (A drop-in reader gets the provider's answer as
// sent: TestR13_3_DropInDocumentedFinishPassesThrough.)
func TestR13_3_EngineLengthFinishIsTerminalAndNeverResent(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newWire(events(withFinish("length", false, "Hel")...).stalled(len(strings.Join(withFinish("length", false, "Hel"), ""))),
			events(recoursetest.OpenAIStream("never")...))
		r := roundTripCall(t, context.Background(), openai.New(), retry.Policy{MaxAttempts: 3, Jitter: one}, w, openAIURL, openAIStreamBody,
			&layer.Call{TypedErrors: true})
		require.NoError(t, r.err)
		defer r.resp.Body.Close()
		_, err := io.ReadAll(r.resp.Body)

		var re *layer.RecoveryError
		require.ErrorAs(t, err, &re)
		assert.Equal(t, event.OutcomeInterrupted, re.Outcome)
		assert.Contains(t, re.Error(), "incomplete completion (finish length)")
		ev := event.Inspect(&re.Failure)
		require.NotNil(t, ev)
		var se *layer.StreamError
		require.ErrorAs(t, ev.Cause, &se)
		assert.Equal(t, "length", se.FinishReason)
		assert.Len(t, w.requests(), 1)
	})
}

// TestR13_3_EngineEOFBeforeTheTerminalFrameIsAnIncompleteStream: HTTP EOF
// before the terminal frame is a transport failure: resent when nothing
// semantic was observed (only the role chunk), interrupted after content.
func TestR13_3_EngineEOFBeforeTheTerminalFrameIsAnIncompleteStream(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		evs := recoursetest.OpenAIStream("Hello")
		w := newWire(events(evs[0]), events(evs...))
		got, err, _ := streamCall(t, context.Background(), retry.Policy{MaxAttempts: 3, Jitter: one}, w)
		require.NoError(t, err)
		assert.Equal(t, strings.Join(evs, ""), got, "the resend's frames alone: the cut attempt's role chunk was held, then dropped (R13.9)")
		assert.Equal(t, []time.Duration{0, ms(100)}, w.starts())

		w = newWire(events(evs[:2]...), events(evs...))
		_, err, _ = streamCall(t, context.Background(), retry.Policy{MaxAttempts: 3, Jitter: one}, w)
		var re *layer.RecoveryError
		require.ErrorAs(t, err, &re)
		assert.Equal(t, event.OutcomeInterrupted, re.Outcome)
		require.Len(t, re.History, 1)
		assert.Equal(t, event.CategoryTransport, re.Failure.Category)
		assert.Equal(t, event.ReasonSemanticOutput, re.Failure.Classification.Reason)
		assert.Len(t, w.requests(), 1)
	})
}

// TestR7_1_EngineAdmissionWaitConsumesTheBudget: time spent waiting for
// admission counts against the budget: a hook that allows 950 ms into a
// one-second budget leaves no room for the 100 ms backoff, and the call
// ends deadline at that instant.
func TestR7_1_EngineAdmissionWaitConsumesTheBudget(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		log := newEventLog()
		slowAllow := func(ctx context.Context, _ layer.AdmissionRequest) (layer.Decision, error) {
			time.Sleep(ms(950))
			return layer.Allow, nil
		}
		w := newWire(status503(), okAnswer("never"))
		r := roundTrip(t, context.Background(), openai.New(), retry.Policy{MaxAttempts: 3, Jitter: one, Budget: new(time.Second),
			Admit: slowAllow, OnEvent: log.OnEvent}, w, openAIURL, openAIBody)

		assert.Equal(t, event.OutcomeDeadline, r.recoveryErr(t).Outcome)
		assert.Equal(t, ms(950), r.took)
		assert.Equal(t, []string{"attempt_started", "attempt_failed", "admission_pending", "admission_allowed", "exhausted"}, log.types())
		assert.Len(t, w.requests(), 1)
	})
}
