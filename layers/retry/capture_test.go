package retry_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/recourse-dev/recourse/codecs/openai"
	"github.com/recourse-dev/recourse/event"
	"github.com/recourse-dev/recourse/internal/attempt"
	"github.com/recourse-dev/recourse/internal/rigtest"
	"github.com/recourse-dev/recourse/layer"
	"github.com/recourse-dev/recourse/layers/retry"
	"github.com/recourse-dev/recourse/recoursetest"
)

func TestR12_2_OneRequestAndOneResponseSnapshotPerAttempt(t *testing.T) {
	p := retry.Policy{MaxAttempts: 3, Jitter: zeroJitter}
	rec := wired(&p)
	r := rigtest.New(t, openai.New(), p, statusStep(503), statusStep(502), okStep("hello"))

	_, err := r.Client.Complete(context.Background(), canaryRequest())
	require.NoError(t, err)

	snaps := rec.Wire()
	require.Len(t, snaps, 6, "R12.2: one request and one response snapshot per attempt")
	started := eventsOf(rec.Events(), event.AttemptStarted)
	require.Len(t, started, 3)
	reqs := r.Server.Requests()
	wantStatus := []int{503, 502, 200}
	for i := range 3 {
		q, s := snaps[2*i], snaps[2*i+1]
		assert.Equal(t, layer.DirectionRequest, q.Direction)
		assert.Equal(t, layer.DirectionResponse, s.Direction)
		assert.Equal(t, 0, q.Seq, "R12.2: the sequence restarts per attempt")
		assert.Equal(t, 0, s.Seq, "R12.2: the sequence restarts per attempt")
		assert.Equal(t, started[i].Identity, q.Identity)
		assert.Equal(t, started[i].Identity, s.Identity)
		assert.Equal(t, reqs[i].Body, q.Bytes, "the request snapshot is the bytes sent")
		assert.Equal(t, "Bearer "+rigtest.Key, q.Header.Get("Authorization"))
		assert.Equal(t, wantStatus[i], s.Status)
		assert.True(t, s.Complete)
		assert.NotEmpty(t, s.Header.Get("Content-Type"))
	}
	assert.Equal(t, []byte(recoursetest.OpenAIChat("hello")), snaps[5].Bytes)
}

// R12.3: the semantic evidence of the bytes a response snapshot holds is
// accounted before the capture callback runs, and a failing callback is
// terminal.
func TestR12_3_EvidenceCountedBeforeResponseCapture(t *testing.T) {
	var mu sync.Mutex
	var seen []event.Progress
	p := retry.Policy{MaxAttempts: 3, Jitter: zeroJitter}
	p.OnWire = func(ctx context.Context, s layer.WireSnapshot) error {
		if s.Direction != layer.DirectionResponse {
			return nil
		}
		a := attempt.From(ctx)
		if a == nil {
			return errors.New("no attempt state in the capture context")
		}
		mu.Lock()
		seen = append(seen, a.Progress())
		mu.Unlock()
		return errCaptureHook
	}
	r := rigtest.New(t, openai.New(), p, cutAfterContent(), okStep("never"))

	_, err := r.Client.Complete(context.Background(), canaryRequest())

	re := asRecoveryError(t, err)
	require.Len(t, seen, 1)
	assert.Equal(t, int64(3), seen[0].Observed.ContentBytes, "R12.3: counted before the callback")
	assert.Equal(t, seen[0].RawBytes, re.Failure.Progress.RawBytes)
	assert.Equal(t, int64(3), re.Failure.Progress.Observed.ContentBytes)
	assert.Equal(t, event.ReasonCaptureFailed, re.Failure.Classification.Reason)
	assert.Equal(t, event.OutcomeInterrupted, re.Outcome)
	assert.Equal(t, 1, r.Server.Count(), "R12.3: never another request")
}

func TestR12_3_ResponseCaptureFailureIsTerminal(t *testing.T) {
	for _, st := range []recoursetest.Step{statusStep(503), recoursetest.Reset(), recoursetest.Redirect(307, "/x"), okStep("fine")} {
		p := retry.Policy{MaxAttempts: 3, Jitter: zeroJitter, Admit: allowHook, OnWire: failResponseCapture}
		r := rigtest.New(t, openai.New(), p, st, okStep("never"), okStep("never"))

		_, err := r.Client.Complete(context.Background(), canaryRequest())

		re := asRecoveryError(t, err)
		assert.Equal(t, event.ReasonCaptureFailed, re.Failure.Classification.Reason, "status %d", st.Status)
		assert.Equal(t, event.OutcomeInterrupted, re.Outcome)
		assert.Equal(t, errCaptureHook, event.Inspect(&re.Failure).CaptureCause)
		assert.Equal(t, 1, r.Server.Count(), "R12.3: a capture failure never creates another request")
		assert.Equal(t, []string{"attempt_started", "attempt_failed", "interrupted"}, r.Rec.Types())
	}
}

// R12.4 / R2.3: mutating snapshots cannot change a later request.
func TestR12_4_MutatingSnapshotsChangesNoLaterRequest(t *testing.T) {
	p := retry.Policy{MaxAttempts: 3, Jitter: zeroJitter}
	var mu sync.Mutex
	var captured [][]byte
	p.OnWire = func(_ context.Context, s layer.WireSnapshot) error {
		mu.Lock()
		defer mu.Unlock()
		if s.Direction == layer.DirectionRequest {
			captured = append(captured, append([]byte(nil), s.Bytes...))
		}
		for i := range s.Bytes {
			s.Bytes[i] = 'X'
		}
		s.Header.Set("Authorization", "Bearer stolen")
		s.Header.Set("Content-Type", "text/plain")
		s.Header.Set("X-Injected", "1")
		return nil
	}
	r := rigtest.New(t, openai.New(), p, statusStep(503), statusStep(503), okStep("hello"))

	comp, err := r.Client.Complete(context.Background(), canaryRequest())
	require.NoError(t, err)
	assert.Equal(t, "hello", comp.Message.Content, "mutating the response snapshot changes nothing either")

	reqs := r.Server.Requests()
	require.Len(t, reqs, 3)
	for i, q := range reqs {
		assert.Equal(t, encoded(t, canaryRequest()), q.Body, "attempt %d", i+1)
		assert.Equal(t, captured[i], q.Body)
		assert.Equal(t, "Bearer "+rigtest.Key, q.Header.Get("Authorization"))
		assert.Equal(t, "application/json", q.Header.Get("Content-Type"))
		assert.Empty(t, q.Header.Get("X-Injected"))
		assert.Equal(t, reqs[0].Header, q.Header)
	}
}

// R12.1: capture is opt-in; a call without OnWire captures nothing and a
// recovery-disabled call never calls the hook.
func TestR12_1_CaptureIsOptIn(t *testing.T) {
	p := retry.Policy{MaxAttempts: 2, Jitter: zeroJitter}
	rec := wired(&p)
	r := rigtest.New(t, openai.New(), p, okStep("a"), okStep("b"))
	_, err := r.Client.Complete(context.Background(), canaryRequest())
	require.NoError(t, err)
	assert.Len(t, rec.Wire(), 2)

	_, err = r.Client.Complete(retry.WithPolicy(context.Background(), nil), canaryRequest())
	require.NoError(t, err)
	assert.Len(t, rec.Wire(), 2, "no capture when recovery is off for the call")

	// Through a plain http.Client too.
	req, err := http.NewRequest(http.MethodPost, r.Server.URL+completionsPath, strings.NewReader(string(encoded(t, canaryRequest()))))
	require.NoError(t, err)
	r.Server.Push(okStep("c"))
	resp, err := r.HTTP.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	assert.Len(t, rec.Wire(), 4)
}

// R12.1/R12.2: a cancelled attempt still gets its one (incomplete) response
// snapshot, so every actual attempt's capture ends.
func TestR12_2_CancelledAttemptIsCaptured(t *testing.T) {
	p := retry.Policy{MaxAttempts: 3}
	rec := wired(&p)
	r := rigtest.New(t, openai.New(), p, recoursetest.Step{Status: 200, Chunks: [][]byte{[]byte(`{"id":`)}}.Held())
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	_, done := completeAsync(r, ctx)
	require.Eventually(t, func() bool { return r.Server.Count() == 1 }, wait, time.Millisecond)
	cancel()
	err := awaitResult(t, done)

	assert.Equal(t, event.OutcomeCancelled, asRecoveryError(t, err).Outcome)
	snaps := rec.Wire()
	require.Len(t, snaps, 2)
	assert.Equal(t, layer.DirectionResponse, snaps[1].Direction)
	assert.False(t, snaps[1].Complete)
	// Status 200 when the cancel found the headers received, 0 before them.
	assert.Contains(t, []int{0, 200}, snaps[1].Status)
}
