package retry_test

import (
	"context"
	"encoding/json"
	"errors"
	"strconv"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/recourse-dev/recourse/chat"
	"github.com/recourse-dev/recourse/client"
	"github.com/recourse-dev/recourse/codec"
	"github.com/recourse-dev/recourse/codecs/openai"
	"github.com/recourse-dev/recourse/event"
	"github.com/recourse-dev/recourse/internal/rigtest"
	"github.com/recourse-dev/recourse/layer"
	"github.com/recourse-dev/recourse/layers/retry"
	"github.com/recourse-dev/recourse/recoursetest"
)

// sameFailure asserts that two safe failures are the same record.
func sameFailure(t *testing.T, want, got event.Failure) {
	t.Helper()
	wj, err := json.Marshal(want)
	require.NoError(t, err)
	gj, err := json.Marshal(got)
	require.NoError(t, err)
	assert.JSONEq(t, string(wj), string(gj))
}

func TestR10_4_HistoryIsBoundedAndEndsWithTheFinalFailure(t *testing.T) {
	for max := 1; max <= 4; max++ {
		t.Run("exhausted/"+strconv.Itoa(max), func(t *testing.T) {
			r := rigtest.New(t, openai.New(), retry.Policy{MaxAttempts: max, Jitter: zeroJitter}, repeat(statusStep(503), max+2)...)
			_, err := r.Client.Complete(context.Background(), canaryRequest())
			re := asRecoveryError(t, err)
			assert.Equal(t, event.OutcomeExhausted, re.Outcome)
			require.Len(t, re.History, max, "R10.4: one entry per completed HTTP attempt, at most MaxAttempts")
			sameFailure(t, re.History[max-1], re.Failure)
			logical := re.Failure.LogicalID
			_, perr := uuid.Parse(logical)
			assert.NoError(t, perr, "R10.1: the logical ID is a UUID")
			assert.Equal(t, uuid.Version(4), uuid.MustParse(logical).Version())
			seen := map[string]bool{}
			for i, f := range re.History {
				assert.Equal(t, logical, f.LogicalID)
				assert.Equal(t, i+1, f.WireAttempt)
				_, perr := uuid.Parse(f.AttemptID)
				assert.NoError(t, perr, "R10.1: the attempt ID is a UUID")
				assert.False(t, seen[f.AttemptID], "a fresh attempt ID per wire attempt")
				seen[f.AttemptID] = true
			}
			assert.Equal(t, max, r.Server.Count())
		})
	}
	t.Run("interrupted", func(t *testing.T) {
		r := rigtest.New(t, openai.New(), retry.Policy{MaxAttempts: 4, Jitter: zeroJitter}, statusStep(503), statusStep(404), okStep("never"))
		_, err := r.Client.Complete(context.Background(), canaryRequest())
		re := asRecoveryError(t, err)
		assert.Equal(t, event.OutcomeInterrupted, re.Outcome)
		require.Len(t, re.History, 2)
		assert.Equal(t, 503, re.History[0].HTTPStatus)
		assert.Equal(t, 404, re.History[1].HTTPStatus)
		sameFailure(t, re.History[1], re.Failure)
	})
	t.Run("delay ceiling keeps the history", func(t *testing.T) {
		r := rigtest.New(t, openai.New(), retry.Policy{MaxAttempts: 4, Jitter: zeroJitter}, statusStep(503), rateLimited("3600"))
		_, err := r.Client.Complete(context.Background(), canaryRequest())
		re := asRecoveryError(t, err)
		assert.Equal(t, event.OutcomeDelayCeiling, re.Outcome)
		require.Len(t, re.History, 2)
		sameFailure(t, re.History[1], re.Failure)
	})
}

var errRequestCapture = errors.New("request capture store is full")

func TestR10_4_RequestCaptureFailureSendsNothing(t *testing.T) {
	p := retry.Policy{MaxAttempts: 3, Jitter: zeroJitter}
	p.OnWire = func(_ context.Context, s layer.WireSnapshot) error {
		if s.Direction == layer.DirectionRequest {
			return errRequestCapture
		}
		return nil
	}
	r := rigtest.New(t, openai.New(), p, okStep("never"))

	_, err := r.Client.Complete(context.Background(), canaryRequest())

	re := asRecoveryError(t, err)
	assert.Equal(t, 0, r.Server.Count(), "R12.3: a request-capture failure sends nothing")
	assert.Equal(t, event.OutcomeInterrupted, re.Outcome)
	assert.Equal(t, event.ReasonCaptureFailed, re.Failure.Classification.Reason)
	assert.False(t, re.Failure.Classification.Eligible)
	assert.Equal(t, 0, re.Failure.WireAttempt, "R10.4: wire attempt 0")
	assert.Equal(t, event.AcceptanceNo, re.Failure.Acceptance)
	assert.Empty(t, re.History, "R10.4: empty history")
	assert.Equal(t, []string{"interrupted"}, r.Rec.Types())
	ev := event.Inspect(&re.Failure)
	require.NotNil(t, ev)
	assert.ErrorIs(t, ev.Cause, errRequestCapture, "R10.5: Cause is the original error value")
	assert.Same(t, errRequestCapture, ev.Cause)
	assert.Equal(t, errRequestCapture, ev.CaptureCause)
	assert.NotContains(t, err.Error(), errRequestCapture.Error(), "R10.5: no original message in the safe text")
}

func TestR10_4_RequestCapturePanicSendsNothing(t *testing.T) {
	p := retry.Policy{MaxAttempts: 3, Jitter: zeroJitter}
	p.OnWire = func(_ context.Context, s layer.WireSnapshot) error { panic("capture panicked") }
	r := rigtest.New(t, openai.New(), p, okStep("never"))

	_, err := r.Client.Complete(context.Background(), canaryRequest())

	re := asRecoveryError(t, err)
	assert.Equal(t, 0, r.Server.Count())
	assert.Equal(t, event.ReasonCaptureFailed, re.Failure.Classification.Reason)
	assert.Equal(t, "capture panicked", event.Inspect(&re.Failure).CaptureCause)
}

// R12.3 / R10.5: a response-capture failure keeps the hook's cause apart
// from the body transport cause.
func TestR10_5_ResponseCaptureCauseKeptApartFromTransportCause(t *testing.T) {
	p := retry.Policy{MaxAttempts: 3, Jitter: zeroJitter, OnWire: failResponseCapture}
	r := rigtest.New(t, openai.New(), p, cutAfterContent(), okStep("never"))

	_, err := r.Client.Complete(context.Background(), canaryRequest())

	re := asRecoveryError(t, err)
	assert.Equal(t, event.ReasonCaptureFailed, re.Failure.Classification.Reason)
	assert.Equal(t, 1, r.Server.Count())
	ev := event.Inspect(&re.Failure)
	require.NotNil(t, ev)
	assert.Equal(t, errCaptureHook, ev.CaptureCause)
	require.Error(t, ev.Cause, "the body transport cause is kept")
	assert.NotErrorIs(t, ev.Cause, errCaptureHook)
}

func TestR10_3_ProviderCodes(t *testing.T) {
	rows := []struct {
		name    string
		status  int
		code    string
		prompt  string
		apiKey  string
		kept    bool
		outcome event.Outcome
	}{
		{"known code kept", 429, "rate_limit_exceeded", rigtest.Prompt, rigtest.Key, true, event.OutcomeExhausted},
		{"known code in a 2xx provider error", 200, "invalid_request_error", rigtest.Prompt, rigtest.Key, true, event.OutcomeInterrupted},
		{"arbitrary code dropped", 429, "weird_code", rigtest.Prompt, rigtest.Key, false, event.OutcomeExhausted},
		{"code echoing the prompt", 503, "server_error", rigtest.Prompt + " server_error", rigtest.Key, false, event.OutcomeExhausted},
		{"code echoing the credential", 503, "overloaded_error", rigtest.Prompt, "sk-overloaded_error-1", false, event.OutcomeExhausted},
		{"prompt as code", 400, rigtest.Prompt, rigtest.Prompt, rigtest.Key, false, event.OutcomeInterrupted},
	}
	for _, tc := range rows {
		t.Run(tc.name, func(t *testing.T) {
			r := rigtest.New(t, openai.New(), retry.Policy{MaxAttempts: 1},
				recoursetest.JSON(tc.status, recoursetest.OpenAIError("error", tc.code, "message")))
			cl, err := client.New(r.Server.URL, r.Chain, client.WithAPIKey(tc.apiKey))
			require.NoError(t, err)
			req := canaryRequest()
			req.Messages[0].Content = tc.prompt

			_, err = cl.Complete(context.Background(), req)

			re := asRecoveryError(t, err)
			assert.Equal(t, tc.outcome, re.Outcome)
			if tc.kept {
				assert.Equal(t, tc.code, re.Failure.ProviderCode)
			} else {
				assert.Empty(t, re.Failure.ProviderCode, "R10.3")
			}
			assert.Equal(t, tc.code, event.Inspect(&re.Failure).Response.Code, "R10.3: reachable by inspection")
		})
	}
}

func TestR10_3_ProviderRequestIDs(t *testing.T) {
	u := uuid.NewString()
	rows := []struct {
		name   string
		id     string
		prompt string
		header string // a request header value the caller sets
		kept   bool
	}{
		{"req_ UUID kept", "req_" + u, rigtest.Prompt, "", true},
		{"bare UUID kept", u, rigtest.Prompt, "", true},
		{"not a UUID", "req_abc123", rigtest.Prompt, "", false},
		{"UUID with trailing text", u + "x", rigtest.Prompt, "", false},
		{"UUID echoing a request header", u, rigtest.Prompt, u, false},
		{"req_ UUID whose UUID echoes a request header", "req_" + u, rigtest.Prompt, u, false},
		{"UUID echoing the prompt", u, rigtest.Prompt + " " + u, "", false},
	}
	for _, tc := range rows {
		t.Run(tc.name, func(t *testing.T) {
			r := rigtest.New(t, openai.New(), retry.Policy{MaxAttempts: 1},
				recoursetest.JSON(503, recoursetest.OpenAIError("server_error", "server_error", "busy"), "X-Request-Id", tc.id))
			opts := []client.Option{client.WithAPIKey(rigtest.Key)}
			if tc.header != "" {
				opts = append(opts, client.WithHeader("X-Correlation-Id", tc.header))
			}
			cl, err := client.New(r.Server.URL, r.Chain, opts...)
			require.NoError(t, err)
			req := canaryRequest()
			req.Messages[0].Content = tc.prompt

			_, err = cl.Complete(context.Background(), req)

			re := asRecoveryError(t, err)
			if tc.kept {
				assert.Equal(t, tc.id, re.Failure.ProviderRequestID)
			} else {
				assert.Empty(t, re.Failure.ProviderRequestID, "R10.3")
			}
			assert.Equal(t, tc.id, event.Inspect(&re.Failure).Response.RequestID, "R10.3: reachable by inspection")
		})
	}
}

func TestR10_5_InspectReturnsDefensiveCopies(t *testing.T) {
	body := recoursetest.OpenAIError("server_error", "server_error", "busy")
	r := rigtest.New(t, openai.New(), retry.Policy{MaxAttempts: 1}, recoursetest.JSON(503, body, "X-Request-Id", "req_abc"))

	_, err := r.Client.Complete(context.Background(), canaryRequest())
	re := asRecoveryError(t, err)

	first := event.Inspect(&re.Failure)
	require.NotNil(t, first)
	assert.Equal(t, []byte(body), first.Bytes)
	assert.Equal(t, "req_abc", first.Headers.Get("X-Request-Id"))
	for i := range first.Bytes {
		first.Bytes[i] = 'X'
	}
	first.Bytes = append(first.Bytes, "more"...)
	first.Headers.Set("X-Request-Id", "mutated")
	first.Headers.Set("X-Added", "1")

	second := event.Inspect(&re.Failure)
	assert.Equal(t, []byte(body), second.Bytes, "R10.5: defensive copy of Bytes")
	assert.Equal(t, "req_abc", second.Headers.Get("X-Request-Id"), "R10.5: defensive copy of Headers")
	assert.Empty(t, second.Headers.Get("X-Added"))
	// The history entry and the event copies hold the same evidence.
	assert.Equal(t, []byte(body), event.Inspect(&re.History[0]).Bytes)
	assert.Equal(t, []byte(body), event.Inspect(firstFailedPtr(t, r.Rec.Events())).Bytes)
}

func firstFailedPtr(t *testing.T, evs []event.Event) *event.Failure {
	f := firstFailed(t, evs)
	return &f
}

func TestR10_5_InspectKeepsSuccessfulEvidenceOutOfFailures(t *testing.T) {
	r := rigtest.New(t, openai.New(), retry.Policy{MaxAttempts: 1}, statusStep(503))
	_, err := r.Client.Complete(context.Background(), canaryRequest())
	re := asRecoveryError(t, err)
	ev := event.Inspect(&re.Failure)
	require.NotNil(t, ev)
	assert.Nil(t, event.Inspect(nil))
	assert.Nil(t, event.Inspect(&event.Failure{}))
}

func TestR10_5_RecoveryErrorJSON(t *testing.T) {
	body := recoursetest.OpenAIError("server_error", "server_error", "busy busy busy")
	r := rigtest.New(t, openai.New(), retry.Policy{MaxAttempts: 2, Jitter: zeroJitter}, repeat(recoursetest.JSON(503, body), 2)...)

	_, err := r.Client.Complete(context.Background(), canaryRequest())
	re := asRecoveryError(t, err)

	js, jerr := json.Marshal(err)
	require.NoError(t, jerr)
	var top map[string]json.RawMessage
	require.NoError(t, json.Unmarshal(js, &top))
	assert.Contains(t, top, "outcome")
	assert.Contains(t, top, "failure")
	assert.Contains(t, top, "history")
	assert.JSONEq(t, `"exhausted"`, string(top["outcome"]))
	var hist []map[string]json.RawMessage
	require.NoError(t, json.Unmarshal(top["history"], &hist))
	assert.Len(t, hist, 2)
	for _, k := range []string{"bytes", "headers", "cause", "body"} {
		assert.NotContains(t, string(js), `"`+k+`":`, "R10.5: no private evidence in JSON")
	}
	assert.NotContains(t, string(js), "busy busy")
	assert.NotContains(t, re.Error(), "busy busy")
	var f map[string]any
	require.NoError(t, json.Unmarshal(top["failure"], &f))
	for _, k := range []string{"logical_request_id", "attempt_id", "wire_attempt", "provider", "operation", "category", "http_status",
		"acceptance", "progress", "retry_after", "classification", "remote_termination_confirmed"} {
		assert.Contains(t, f, k, "R10.2: the failure records %s", k)
	}
	assert.Equal(t, false, f["remote_termination_confirmed"])
}

var errObserver = errors.New("observer store failed")

// TestR11_4_ObserverErrorPropagatesAndIsNeverARetry fails OnEvent on each
// event type of a 503-then-success call in turn.
func TestR11_4_ObserverErrorPropagatesAndIsNeverARetry(t *testing.T) {
	rows := []struct {
		on    event.Type
		posts int
	}{
		{event.AttemptStarted, 0},
		{event.AttemptFailed, 1},
		{event.AdmissionPending, 1},
		{event.AdmissionAllowed, 1},
		{event.DelayScheduled, 1},
		{event.RetryStarted, 1},
		{event.AttemptSucceeded, 2},
	}
	for _, tc := range rows {
		t.Run(string(tc.on), func(t *testing.T) {
			rec := &rigtest.Recorder{}
			p := retry.Policy{MaxAttempts: 3, Jitter: zeroJitter, Admit: allowHook}
			p.OnEvent = func(ev event.Event) error {
				_ = rec.OnEvent(ev)
				if ev.Type == tc.on {
					return errObserver
				}
				return nil
			}
			r := rigtest.New(t, openai.New(), p, statusStep(503), okStep("ok"), okStep("never"))

			comp, err := r.Client.Complete(context.Background(), canaryRequest())

			assert.Nil(t, comp)
			require.ErrorIs(t, err, errObserver, "R11.4: the observer's error propagates")
			var re *layer.RecoveryError
			assert.False(t, errors.As(err, &re), "an observer failure is not a recovery outcome")
			assert.Equal(t, tc.posts, r.Server.Count(), "R11.4: never a retry")
			types := rec.Types()
			require.NotEmpty(t, types)
			assert.Equal(t, string(tc.on), types[len(types)-1], "no event after the failing one")
		})
	}
}

// TestR11_4_ObserverPanicPropagates: a panicking OnEvent reaches the caller
// (recovered here); the goroutine check of TestMain proves nothing leaks.
func TestR11_4_ObserverPanicPropagates(t *testing.T) {
	rows := []struct {
		on    event.Type
		posts int
	}{
		{event.AttemptStarted, 0},
		{event.AttemptFailed, 1},
		{event.AdmissionPending, 1},
		{event.DelayScheduled, 1},
		{event.RetryStarted, 1},
		{event.AttemptSucceeded, 2},
		{event.Exhausted, 1},
	}
	for _, tc := range rows {
		t.Run(string(tc.on), func(t *testing.T) {
			pv := &panicValue{"observer " + string(tc.on)}
			p := retry.Policy{MaxAttempts: 3, Jitter: zeroJitter, Admit: allowHook}
			steps := []recoursetest.Step{statusStep(503), okStep("ok")}
			if tc.on == event.Exhausted {
				p.MaxAttempts = 1
			}
			p.OnEvent = func(ev event.Event) error {
				if ev.Type == tc.on {
					panic(pv)
				}
				return nil
			}
			r := rigtest.New(t, openai.New(), p, steps...)

			var got any
			func() {
				defer func() { got = recover() }()
				_, _ = r.Client.Complete(context.Background(), canaryRequest())
			}()

			assert.Same(t, pv, got, "R11.4: the observer's panic reaches the caller")
			assert.Equal(t, tc.posts, r.Server.Count(), "R11.4: never a retry")
		})
	}
}

// R11.2: every event carries the complete identity.
func TestR11_2_EveryEventCarriesTheIdentity(t *testing.T) {
	r := rigtest.New(t, openai.New(), retry.Policy{MaxAttempts: 3, Jitter: zeroJitter, Admit: allowHook},
		statusStep(503), statusStep(503), statusStep(503))
	_, err := r.Client.Complete(context.Background(), canaryRequest())
	asRecoveryError(t, err)
	evs := r.Rec.Events()
	require.Len(t, evs, 15, "R11.3")
	for _, e := range evs {
		assert.Equal(t, evs[0].LogicalID, e.LogicalID)
		assert.NotEmpty(t, e.AttemptID, "%s", e.Type)
		assert.Positive(t, e.WireAttempt, "%s", e.Type)
		assert.Equal(t, 3, e.MaxAttempts)
		assert.Equal(t, codec.OpenAI, e.Provider)
		assert.Equal(t, codec.Ordinary, e.Operation)
		switch e.Type {
		case event.AttemptStarted, event.AttemptSucceeded:
		default:
			assert.NotNil(t, e.Failure, "R11.2: %s carries the failure", e.Type)
		}
	}
	for _, e := range eventsOf(evs, event.AttemptFailed) {
		assert.Equal(t, e.Progress, e.Failure.Progress)
		assert.True(t, e.Progress.HeadersReceived)
	}
}

// A request-capture failure on a resend: the first attempt stays the only
// completed HTTP attempt, nothing more is sent, the reason is capture_failed.
func TestR10_4_RequestCaptureFailureOnAResend(t *testing.T) {
	p := retry.Policy{MaxAttempts: 3, Jitter: zeroJitter}
	requests := 0
	p.OnWire = func(_ context.Context, s layer.WireSnapshot) error {
		if s.Direction == layer.DirectionRequest {
			requests++
			if requests == 2 {
				return errRequestCapture
			}
		}
		return nil
	}
	r := rigtest.New(t, openai.New(), p, statusStep(503), okStep("never"))

	_, err := r.Client.Complete(context.Background(), canaryRequest())

	re := asRecoveryError(t, err)
	assert.Equal(t, 1, r.Server.Count())
	assert.Equal(t, event.OutcomeInterrupted, re.Outcome)
	assert.Equal(t, event.ReasonCaptureFailed, re.Failure.Classification.Reason)
	require.Len(t, re.History, 1, "only completed HTTP attempts")
	assert.Equal(t, 1, re.Failure.WireAttempt, "one wire attempt was made")
	assert.Equal(t, event.AcceptanceNo, re.Failure.Acceptance)
	assert.ErrorIs(t, event.Inspect(&re.Failure).Cause, errRequestCapture)
	assert.Equal(t, []string{"attempt_started", "attempt_failed", "delay_scheduled", "retry_started", "interrupted"}, r.Rec.Types())
}

// R10.5: a structured answer refused for its content keeps the response
// evidence (finish reason, model, usage) for inspection.
func TestR10_5_RefusedStructuredAnswerKeepsResponseEvidence(t *testing.T) {
	r := rigtest.New(t, openai.New(), retry.Policy{MaxAttempts: 2}, okStep("not json"))

	_, err := r.Client.CompleteStructured(context.Background(), canaryRequest(), chat.Schema{Schema: json.RawMessage(`{"type":"object"}`)})

	re := asRecoveryError(t, err)
	assert.Equal(t, event.CategoryProtocol, re.Failure.Category)
	ev := event.Inspect(&re.Failure)
	require.NotNil(t, ev)
	assert.Equal(t, "stop", ev.Response.FinishReason)
	assert.Equal(t, recoursetest.OpenAIModel, ev.Response.Model)
	assert.Equal(t, &chat.Usage{InputTokens: 12, OutputTokens: 7}, ev.Response.Usage)
}
