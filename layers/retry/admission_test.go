package retry_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/recourse-dev/recourse/codecs/openai"
	"github.com/recourse-dev/recourse/event"
	"github.com/recourse-dev/recourse/internal/rigtest"
	"github.com/recourse-dev/recourse/layer"
	"github.com/recourse-dev/recourse/layers/retry"
)

var errHookDenied = errors.New("admission backend unavailable")

type panicValue struct{ what string }

func TestR8_1_OnlyAnExplicitAllowAuthorizesAResend(t *testing.T) {
	pv := &panicValue{"hook exploded"}
	rows := []struct {
		name    string
		hook    layer.AdmissionHook
		outcome event.Outcome // "" = success after the resend
		event   event.Type
		cause   any
	}{
		{"allow", allowHook, "", event.AdmissionAllowed, nil},
		{"reject", func(context.Context, layer.AdmissionRequest) (layer.Decision, error) { return layer.Reject, nil },
			event.OutcomeAdmissionRejected, event.AdmissionRejected, nil},
		{"zero decision", func(context.Context, layer.AdmissionRequest) (layer.Decision, error) { return "", nil },
			event.OutcomeAdmissionNoDecision, event.AdmissionNoDecision, layer.Decision("")},
		{"unknown decision", func(context.Context, layer.AdmissionRequest) (layer.Decision, error) { return "maybe", nil },
			event.OutcomeAdmissionNoDecision, event.AdmissionNoDecision, layer.Decision("maybe")},
		{"Allow spelled differently", func(context.Context, layer.AdmissionRequest) (layer.Decision, error) { return "Allow", nil },
			event.OutcomeAdmissionNoDecision, event.AdmissionNoDecision, layer.Decision("Allow")},
		{"error", func(context.Context, layer.AdmissionRequest) (layer.Decision, error) { return "", errHookDenied },
			event.OutcomeAdmissionNoDecision, event.AdmissionNoDecision, errHookDenied},
		{"allow with an error", func(context.Context, layer.AdmissionRequest) (layer.Decision, error) {
			return layer.Allow, errHookDenied
		},
			event.OutcomeAdmissionNoDecision, event.AdmissionNoDecision, errHookDenied},
		{"reject with an error", func(context.Context, layer.AdmissionRequest) (layer.Decision, error) {
			return layer.Reject, errHookDenied
		},
			event.OutcomeAdmissionNoDecision, event.AdmissionNoDecision, errHookDenied},
		{"panic", func(context.Context, layer.AdmissionRequest) (layer.Decision, error) { panic(pv) },
			event.OutcomeAdmissionNoDecision, event.AdmissionNoDecision, pv},
	}
	for _, tc := range rows {
		t.Run(tc.name, func(t *testing.T) {
			r := rigtest.New(t, openai.New(), retry.Policy{MaxAttempts: 3, Jitter: zeroJitter, Admit: tc.hook},
				statusStep(503), okStep("ok"))

			_, err := r.Client.Complete(context.Background(), canaryRequest())

			if tc.outcome == "" {
				require.NoError(t, err)
				assert.Equal(t, 2, r.Server.Count())
				assert.Equal(t, []string{"attempt_started", "attempt_failed", "admission_pending", "admission_allowed",
					"delay_scheduled", "retry_started", "attempt_started", "attempt_succeeded"}, r.Rec.Types())
				return
			}
			re := asRecoveryError(t, err)
			assert.Equal(t, tc.outcome, re.Outcome)
			assert.Equal(t, 1, r.Server.Count(), "no resend")
			assert.Equal(t, []string{"attempt_started", "attempt_failed", "admission_pending", string(tc.event)}, r.Rec.Types(),
				"R11.2: an admission outcome emits only its own event")
			require.Len(t, re.History, 1, "R8.1: the failure history stays available")
			assert.Equal(t, 503, re.Failure.HTTPStatus)
			ev := event.Inspect(&re.Failure)
			require.NotNil(t, ev)
			if err, ok := tc.cause.(error); ok {
				assert.ErrorIs(t, ev.AdmissionCause.(error), err, "R10.5: the hook's own error value")
			} else {
				assert.Equal(t, tc.cause, ev.AdmissionCause, "R10.5: the panic value or unknown decision")
			}
			if tc.outcome == event.OutcomeAdmissionNoDecision {
				assert.NotEqual(t, event.OutcomeAdmissionRejected, re.Outcome, "R10.6: never a refusal")
			}
		})
	}
}

func TestR8_2_HookThatNeverReturnsIsAbandonedOnCancel(t *testing.T) {
	entered := make(chan struct{})
	release := make(chan struct{})
	returned := make(chan struct{})
	hook := func(context.Context, layer.AdmissionRequest) (layer.Decision, error) {
		defer close(returned)
		close(entered)
		<-release // ignores its context: it never returns by itself
		return layer.Allow, nil
	}
	t.Cleanup(func() {
		close(release)
		<-returned
	})
	r := rigtest.New(t, openai.New(), retry.Policy{MaxAttempts: 3, Jitter: zeroJitter, Admit: hook}, statusStep(503), okStep("never"))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	_, done := completeAsync(r, ctx)
	<-entered
	cancel()
	err := awaitResult(t, done) // R9.1: promptly, without waiting for the hook

	re := asRecoveryError(t, err)
	assert.Equal(t, event.OutcomeCancelled, re.Outcome)
	assert.ErrorIs(t, err, context.Canceled)
	assert.Equal(t, 1, r.Server.Count(), "R8.2: a pending hook never permits a resend")
	assert.Equal(t, []string{"attempt_started", "attempt_failed", "admission_pending", "cancelled"}, r.Rec.Types())
}

func TestR8_3_OpenAIWithoutHookRetries(t *testing.T) {
	r := rigtest.New(t, openai.New(), retry.Policy{MaxAttempts: 3, Jitter: zeroJitter}, statusStep(503), statusStep(429), okStep("ok"))

	comp, err := r.Client.Complete(context.Background(), canaryRequest())

	require.NoError(t, err)
	assert.Equal(t, "ok", comp.Message.Content)
	assert.Equal(t, 3, r.Server.Count())
	assert.Equal(t, []string{"attempt_started", "attempt_failed", "delay_scheduled", "retry_started",
		"attempt_started", "attempt_failed", "delay_scheduled", "retry_started", "attempt_started", "attempt_succeeded"}, r.Rec.Types())
}

func TestR8_4_HookSeesTheSafeFailureAndTheNextAttempt(t *testing.T) {
	var mu sync.Mutex
	var asked []layer.AdmissionRequest
	hook := func(ctx context.Context, req layer.AdmissionRequest) (layer.Decision, error) {
		mu.Lock()
		asked = append(asked, req)
		mu.Unlock()
		if ctx == nil || ctx.Err() != nil {
			return "", errors.New("the hook got no live context")
		}
		return layer.Allow, nil
	}
	r := rigtest.New(t, openai.New(), retry.Policy{MaxAttempts: 3, Jitter: zeroJitter, Admit: hook},
		statusStep(503), statusStep(502), okStep("ok"))

	_, err := r.Client.Complete(context.Background(), canaryRequest())
	require.NoError(t, err)

	evs := r.Rec.Events()
	failed := eventsOf(evs, event.AttemptFailed)
	require.Len(t, asked, 2)
	require.Len(t, failed, 2)
	for i, req := range asked {
		assert.Equal(t, failed[i].Failure.AttemptID, req.Failure.AttemptID)
		assert.Equal(t, failed[i].Failure.WireAttempt, req.Failure.WireAttempt)
		assert.Equal(t, failed[i].Failure.WireAttempt+1, req.NextAttempt, "R8.4: the next attempt number")
		assert.Equal(t, failed[i].Failure.HTTPStatus, req.Failure.HTTPStatus)
		assert.Equal(t, failed[i].Failure.Classification, req.Failure.Classification)
	}
	assert.Equal(t, 1, asked[0].Failure.WireAttempt)
	assert.Equal(t, 2, asked[1].Failure.WireAttempt, "R8.4: the admission wait consumed no wire attempt")
	started := eventsOf(evs, event.AttemptStarted)
	require.Len(t, started, 3)
	for i, e := range started {
		assert.Equal(t, i+1, e.WireAttempt)
	}
	assert.Equal(t, 3, r.Server.Count())
}

// R8.4: time spent waiting for admission is not an attempt: a slow hook
// within MaxAttempts 2 still gets its one resend.
func TestR8_4_AdmissionWaitConsumesNoAttempt(t *testing.T) {
	release := make(chan struct{})
	hook := func(ctx context.Context, _ layer.AdmissionRequest) (layer.Decision, error) {
		select {
		case <-release:
			return layer.Allow, nil
		case <-ctx.Done():
			return "", ctx.Err()
		}
	}
	r := rigtest.New(t, openai.New(), retry.Policy{MaxAttempts: 2, Jitter: zeroJitter, Admit: hook}, statusStep(503), okStep("ok"))

	_, done := completeAsync(r, context.Background())
	require.Eventually(t, func() bool { return len(eventsOf(r.Rec.Events(), event.AdmissionPending)) == 1 }, wait, time.Millisecond)
	r.Clock.Advance(time.Hour) // no budget, no deadline: waiting is free
	close(release)

	require.NoError(t, awaitResult(t, done))
	assert.Equal(t, 2, r.Server.Count())
}
