package retry_test

import (
	"bytes"
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/recourse-dev/recourse/codecs/openai"
	"github.com/recourse-dev/recourse/event"
	"github.com/recourse-dev/recourse/internal/rigtest"
	"github.com/recourse-dev/recourse/layer"
	"github.com/recourse-dev/recourse/layers/retry"
	"github.com/recourse-dev/recourse/recoursetest"
)

// checkCancelled asserts the R9 shape: outcome cancelled, exactly one
// cancelled event, the last one, preceded by lastWait.
func checkCancelled(t *testing.T, err error, types []string, lastWait string) *layer.RecoveryError {
	t.Helper()
	re := asRecoveryError(t, err)
	assert.Equal(t, event.OutcomeCancelled, re.Outcome)
	assert.ErrorIs(t, err, context.Canceled)
	assert.Equal(t, 1, count(types, "cancelled"), "R9.2: exactly one cancelled event: %v", types)
	require.GreaterOrEqual(t, len(types), 2)
	assert.Equal(t, "cancelled", types[len(types)-1])
	assert.Equal(t, lastWait, types[len(types)-2], "the wait that was cancelled: %v", types)
	return re
}

func TestR9_1_CancelDuringAdmission(t *testing.T) {
	entered := make(chan struct{})
	sawDone := make(chan struct{})
	hook := func(ctx context.Context, _ layer.AdmissionRequest) (layer.Decision, error) {
		close(entered)
		<-ctx.Done()
		close(sawDone)
		return "", ctx.Err()
	}
	r := rigtest.New(t, openai.New(), retry.Policy{MaxAttempts: 3, Jitter: zeroJitter, Admit: hook}, statusStep(503), okStep("never"))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	_, done := completeAsync(r, ctx)
	<-entered
	cancel()
	err := awaitResult(t, done)

	re := checkCancelled(t, err, r.Rec.Types(), "admission_pending")
	require.Len(t, re.History, 1, "the failed 503 attempt is kept")
	assert.Equal(t, 503, re.History[0].HTTPStatus)
	select {
	case <-sawDone:
	case <-time.After(wait):
		t.Fatal("R8.2: the hook's context was not cancelled")
	}
	assert.Equal(t, 1, r.Server.Count())
}

func TestR9_1_CancelDuringBackoffSleep(t *testing.T) {
	r := rigtest.New(t, openai.New(), retry.Policy{MaxAttempts: 3, Jitter: jitterSeq(nil, 1)}, statusStep(503), okStep("never"))
	r.Clock.Block = true // the sleep never ends by itself
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	_, done := completeAsync(r, ctx)
	require.Eventually(t, func() bool { return len(r.Clock.Sleeps()) == 1 }, wait, time.Millisecond)
	cancel()
	err := awaitResult(t, done)

	re := checkCancelled(t, err, r.Rec.Types(), "delay_scheduled")
	require.Len(t, re.History, 1)
	assert.Equal(t, []string{"attempt_started", "attempt_failed", "delay_scheduled", "cancelled"}, r.Rec.Types())
	assert.Equal(t, 1, r.Server.Count(), "no resend after a cancelled sleep")
}

func TestR9_1_CancelDuringBackoffThroughHTTPClient(t *testing.T) {
	r := rigtest.New(t, openai.New(), retry.Policy{MaxAttempts: 3, Jitter: jitterSeq(nil, 1)}, statusStep(503), okStep("never"))
	r.Clock.Block = true
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, r.Server.URL+completionsPath, bytes.NewReader(encoded(t, canaryRequest())))
	require.NoError(t, err)

	done := make(chan error, 1)
	go func() {
		resp, err := r.HTTP.Do(req)
		if resp != nil {
			resp.Body.Close()
			err = assert.AnError
		}
		done <- err
	}()
	require.Eventually(t, func() bool { return len(r.Clock.Sleeps()) == 1 }, wait, time.Millisecond)
	cancel()
	err = awaitResult(t, done)

	checkCancelled(t, err, r.Rec.Types(), "delay_scheduled")
}

// R9.1: the caller's context is authoritative in the capture hooks too. A
// request-capture hook that waits for its context and returns its error has
// not failed: the call was cancelled, before anything was sent (R9.2).
func TestR9_1_CancelDuringRequestCapture(t *testing.T) {
	entered := make(chan struct{})
	p := retry.Policy{MaxAttempts: 3, Jitter: zeroJitter}
	p.OnWire = func(ctx context.Context, s layer.WireSnapshot) error {
		if s.Direction == layer.DirectionRequest {
			close(entered)
			<-ctx.Done()
			return ctx.Err()
		}
		return nil
	}
	r := rigtest.New(t, openai.New(), p, okStep("never"))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	_, done := completeAsync(r, ctx)
	<-entered
	cancel()
	err := awaitResult(t, done)

	re := asRecoveryError(t, err)
	assert.Equal(t, event.OutcomeCancelled, re.Outcome, "R9.1/R4.1: cancellation wins over capture_failed")
	assert.Equal(t, event.ReasonCancelled, re.Failure.Classification.Reason)
	assert.ErrorIs(t, err, context.Canceled)
	assert.Empty(t, re.History, "R9.2: nothing was sent")
	assert.Equal(t, 0, re.Failure.WireAttempt)
	assert.Equal(t, []string{"cancelled"}, r.Rec.Types())
	assert.Equal(t, 0, r.Server.Count())
}

// A response-capture hook cancelled the same way: the attempt was sent, so
// it is recorded before the one cancelled event (R9.2).
func TestR9_1_CancelDuringResponseCapture(t *testing.T) {
	entered := make(chan struct{})
	p := retry.Policy{MaxAttempts: 3, Jitter: zeroJitter}
	p.OnWire = func(ctx context.Context, s layer.WireSnapshot) error {
		if s.Direction == layer.DirectionResponse {
			close(entered)
			<-ctx.Done()
			return ctx.Err()
		}
		return nil
	}
	r := rigtest.New(t, openai.New(), p, statusStep(503), okStep("never"))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	_, done := completeAsync(r, ctx)
	<-entered
	cancel()
	err := awaitResult(t, done)

	re := checkCancelled(t, err, r.Rec.Types(), "attempt_failed")
	assert.Equal(t, event.ReasonCancelled, re.Failure.Classification.Reason)
	assert.Equal(t, []string{"attempt_started", "attempt_failed", "cancelled"}, r.Rec.Types())
	assert.Equal(t, 1, r.Server.Count())
}

func TestR9_2_CancelledBeforeStartThroughHTTPClient(t *testing.T) {
	p := retry.Policy{MaxAttempts: 3}
	rec := wired(&p)
	r := rigtest.New(t, openai.New(), p, okStep("never"))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, r.Server.URL+completionsPath, bytes.NewReader(encoded(t, canaryRequest())))
	require.NoError(t, err)

	resp, err := r.HTTP.Do(req)
	if resp != nil {
		resp.Body.Close()
	}

	re := asRecoveryError(t, err)
	assert.Equal(t, event.OutcomeCancelled, re.Outcome)
	assert.Equal(t, event.AcceptanceNo, re.Failure.Acceptance, "nothing was sent")
	assert.Empty(t, re.History)
	assert.Equal(t, []string{"event:cancelled"}, rec.Log(), "no capture")
	assert.Equal(t, 0, r.Server.Count())
}

func TestR9_3_CancelDuringAttemptKeepsRemoteTerminationUnconfirmed(t *testing.T) {
	r := rigtest.New(t, openai.New(), retry.Policy{MaxAttempts: 3}, recoursetest.Step{Status: 200}.Held())
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	_, done := completeAsync(r, ctx)
	require.Eventually(t, func() bool { return r.Server.Count() == 1 }, wait, time.Millisecond)
	cancel()
	err := awaitResult(t, done)

	re := checkCancelled(t, err, r.Rec.Types(), "attempt_failed")
	require.Len(t, re.History, 1)
	assert.Equal(t, event.CategoryCancellation, re.History[0].Category)
	assert.False(t, re.History[0].RemoteTerminationConfirmed, "R9.3")
	assert.False(t, re.Failure.RemoteTerminationConfirmed, "R9.3")
}
