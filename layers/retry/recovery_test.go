package retry_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/recourse-dev/recourse/chat"
	"github.com/recourse-dev/recourse/codecs/openai"
	"github.com/recourse-dev/recourse/event"
	"github.com/recourse-dev/recourse/internal/rigtest"
	"github.com/recourse-dev/recourse/layer"
	"github.com/recourse-dev/recourse/layers/retry"
	"github.com/recourse-dev/recourse/recoursetest"
)

func userRequest() *chat.Request {
	return &chat.Request{Model: "gpt-4o-mini", Messages: []chat.Message{{Role: chat.User, Content: rigtest.Prompt}}}
}

func allow(context.Context, layer.AdmissionRequest) (layer.Decision, error) {
	return layer.Allow, nil
}

func recoveryError(t *testing.T, err error) *layer.RecoveryError {
	t.Helper()
	var re *layer.RecoveryError
	require.ErrorAs(t, err, &re)
	return re
}

func TestR11_3_ReferenceSequence503ThenSuccess(t *testing.T) {
	r := rigtest.New(t, openai.New(), retry.Policy{MaxAttempts: 3, Admit: allow},
		recoursetest.JSON(503, recoursetest.OpenAIError("server_error", "server_error", "busy")),
		recoursetest.JSON(200, recoursetest.OpenAIChat("hello")))
	comp, err := r.Client.Complete(context.Background(), userRequest())
	require.NoError(t, err)
	assert.Equal(t, "hello", comp.Message.Content)
	assert.Equal(t, []string{"attempt_started", "attempt_failed", "admission_pending", "admission_allowed",
		"delay_scheduled", "retry_started", "attempt_started", "attempt_succeeded"}, r.Rec.Types())
	assert.Equal(t, 2, r.Server.Count())
	evs := r.Rec.Events()
	logical := evs[0].LogicalID
	for _, e := range evs {
		assert.Equal(t, logical, e.LogicalID, "R2.5: one logical ID")
	}
	assert.NotEqual(t, evs[0].AttemptID, evs[6].AttemptID, "R2.5: a new attempt ID per resend")
	assert.Equal(t, 1, evs[0].WireAttempt)
	assert.Equal(t, 2, evs[6].WireAttempt)
	reqs := r.Server.Requests()
	assert.Equal(t, reqs[0].Body, reqs[1].Body, "R2.5: the exact encoded payload")
}

func TestR11_3_ThreeTimeouts504Exhausted15Events(t *testing.T) {
	step := recoursetest.JSON(504, recoursetest.OpenAIError("server_error", "", "gateway timeout"))
	r := rigtest.New(t, openai.New(), retry.Policy{MaxAttempts: 3, Admit: allow}, step, step, step)
	_, err := r.Client.Complete(context.Background(), userRequest())
	re := recoveryError(t, err)
	assert.Equal(t, event.OutcomeExhausted, re.Outcome)
	types := r.Rec.Types()
	assert.Len(t, types, 15)
	assert.Equal(t, []string{"attempt_started", "attempt_failed", "exhausted"}, types[12:])
	assert.Len(t, re.History, 3)
	assert.Equal(t, re.History[2].AttemptID, re.Failure.AttemptID, "R10.4: the final failure is the last history entry")
	assert.Equal(t, 3, r.Server.Count())
}

func TestR1_2_EnabledPolicyDefaultsToOneAttempt(t *testing.T) {
	r := rigtest.New(t, openai.New(), retry.Policy{},
		recoursetest.JSON(503, recoursetest.OpenAIError("server_error", "", "busy")),
		recoursetest.JSON(200, recoursetest.OpenAIChat("never")))
	_, err := r.Client.Complete(context.Background(), userRequest())
	re := recoveryError(t, err)
	assert.Equal(t, event.OutcomeExhausted, re.Outcome)
	assert.Equal(t, 1, r.Server.Count())
	assert.Equal(t, []string{"attempt_started", "attempt_failed", "exhausted"}, r.Rec.Types())
}

func TestR2_2_RedirectsAreFailuresNothingFollows(t *testing.T) {
	for _, status := range []int{301, 302, 303, 307, 308} {
		for _, sameOrigin := range []bool{false, true} {
			target := recoursetest.NewTarget()
			loc := target.URL + "/v1/chat/completions"
			if sameOrigin {
				loc = "/elsewhere"
			}
			r := rigtest.New(t, openai.New(), retry.Policy{MaxAttempts: 3, Admit: allow}, recoursetest.Redirect(status, loc))
			_, err := r.Client.Complete(context.Background(), userRequest())
			re := recoveryError(t, err)
			assert.Equal(t, event.CategoryHTTP, re.Failure.Category)
			assert.Equal(t, status, re.Failure.HTTPStatus)
			assert.Equal(t, event.OutcomeInterrupted, re.Outcome)

			// Through an http.Client with its default redirect policy.
			req, _ := http.NewRequest("POST", r.Server.URL+"/v1/chat/completions", strings.NewReader(`{"model":"m","messages":[]}`))
			r.Server.Push(recoursetest.Redirect(status, loc))
			resp, err := r.HTTP.Do(req)
			if resp != nil {
				resp.Body.Close()
			}
			require.Error(t, err)
			assert.Equal(t, event.OutcomeInterrupted, recoveryError(t, err).Outcome)
			assert.Equal(t, 0, target.Hits(), "R2.2: the Location is never contacted")
			assert.Equal(t, 2, r.Server.Count(), "one POST per call")
			target.Close()
		}
	}
}

func TestR9_2_CancelledBeforeStart(t *testing.T) {
	r := rigtest.New(t, openai.New(), retry.Policy{MaxAttempts: 3, OnWire: (&rigtest.Recorder{}).OnWire},
		recoursetest.JSON(200, recoursetest.OpenAIChat("x")))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := r.Client.Complete(ctx, userRequest())
	re := recoveryError(t, err)
	assert.Equal(t, event.OutcomeCancelled, re.Outcome)
	assert.Empty(t, re.History)
	assert.Equal(t, 0, re.Failure.WireAttempt)
	assert.Equal(t, []string{"cancelled"}, r.Rec.Types())
	assert.Equal(t, 0, r.Server.Count())
	assert.True(t, errors.Is(err, context.Canceled))
}

func TestR9_1_CancelDuringHeldRequestReturnsPromptly(t *testing.T) {
	r := rigtest.New(t, openai.New(), retry.Policy{MaxAttempts: 3}, recoursetest.Step{Status: 200}.Held())
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { _, err := r.Client.Complete(ctx, userRequest()); done <- err }()
	require.Eventually(t, func() bool { return r.Server.Count() == 1 }, 5*time.Second, time.Millisecond)
	cancel()
	err := <-done
	re := recoveryError(t, err)
	assert.Equal(t, event.OutcomeCancelled, re.Outcome)
	assert.Equal(t, []string{"attempt_started", "attempt_failed", "cancelled"}, r.Rec.Types())
	assert.Len(t, re.History, 1)
	select {
	case <-r.Server.Left():
	case <-time.After(5 * time.Second):
		t.Fatal("R9.3: the server never saw the local request close")
	}
}

func TestR11_2_CancelledBeforeStartCarriesACompleteIdentity(t *testing.T) {
	r := rigtest.New(t, openai.New(), retry.Policy{MaxAttempts: 2}, recoursetest.JSON(200, recoursetest.OpenAIChat("x")))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := r.Client.Complete(ctx, userRequest())
	re := recoveryError(t, err)
	evs := r.Rec.Events()
	require.Len(t, evs, 1)
	assert.NotEmpty(t, evs[0].LogicalID)
	assert.NotEmpty(t, evs[0].AttemptID)
	assert.Equal(t, 0, evs[0].WireAttempt)
	assert.Equal(t, evs[0].LogicalID, re.Failure.LogicalID)
}
