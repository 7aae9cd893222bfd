package responses_test

// Background responses on POST /v1/responses through chain.Default, the
// native client and a drop-in http.Client, against the scripted provider's
// server-side event log (R19.9–R19.13).

import (
	"context"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/recourse-dev/recourse/chat"
	"github.com/recourse-dev/recourse/client"
	"github.com/recourse-dev/recourse/codec"
	"github.com/recourse-dev/recourse/codecs/openai/responses"
	"github.com/recourse-dev/recourse/event"
	"github.com/recourse-dev/recourse/internal/rigtest"
	"github.com/recourse-dev/recourse/layer"
	"github.com/recourse-dev/recourse/layers/retry"
	"github.com/recourse-dev/recourse/recoursetest"
)

const bgID = "resp_bg1"

func streamRequest() *chat.Request {
	r := userRequest()
	r.Stream = true
	return r
}

// bgEvents are the events of a background response whose text is
// "Hello, world!": deltas at sequence numbers 4, 5 and 6.
func bgEvents() []string { return recoursetest.ResponsesEvents(bgID, "Hello", ", world", "!") }

// collectEvents ranges a StreamEvents sequence and returns its text and
// its last event.
func collectEvents(t *testing.T, seq func(func(client.StreamEvent) bool)) (string, client.StreamEvent) {
	t.Helper()
	var text strings.Builder
	var last client.StreamEvent
	for ev := range seq {
		text.WriteString(ev.Text)
		last = ev
	}
	return text.String(), last
}

// TestR19_9_BackgroundCutAfterOutputResumesFromCursor: a background stream
// cut after two text deltas is not sent again: the engine reads the same
// response after the last sequence number it delivered, and the consumer
// sees the whole answer once, with the completion of the whole response.
func TestR19_9_BackgroundCutAfterOutputResumesFromCursor(t *testing.T) {
	evs := bgEvents()
	t.Run("native", func(t *testing.T) {
		r := rigtest.New(t, responses.New(responses.Background()), policy(),
			recoursetest.ResponsesBackground(bgID, evs...).CutEvents(6), recoursetest.ResponsesResume(bgID))
		text, comp, err := rigtest.Collect(t, r.Client.Stream(context.Background(), streamRequest()))
		require.NoError(t, err)
		assert.Equal(t, "Hello, world!", text, "every byte once")
		require.NotNil(t, comp)
		assert.Equal(t, "Hello, world!", comp.Message.Content, "the completion is the whole response")
		assert.Equal(t, bgID, comp.ID)
		assert.Equal(t, "stop", comp.FinishReason)

		reqs := r.Server.Requests()
		require.Len(t, reqs, 2, "one create, one resume read, no resend")
		assert.Equal(t, http.MethodPost, reqs[0].Method)
		assert.Contains(t, string(reqs[0].Body), `"background":true,"store":true`)
		assert.Equal(t, http.MethodGet, reqs[1].Method)
		assert.Equal(t, "/v1/responses/"+bgID, reqs[1].Path)
		assert.Equal(t, "starting_after=5&stream=true", reqs[1].RawQuery)
		assert.Empty(t, reqs[1].Body)
		assert.Equal(t, "Bearer "+rigtest.Key, reqs[1].Header.Get("Authorization"))
		assert.Empty(t, reqs[1].Header.Get("Content-Type"))

		assert.Equal(t, []string{"attempt_started", "attempt_failed", "delay_scheduled", "retry_started", "attempt_started", "attempt_succeeded"}, r.Rec.Types(),
			"a resume read asks no admission")
		started := rigtest.EventsOf(r.Rec.Events(), event.RetryStarted)
		require.Len(t, started, 1)
		require.NotNil(t, started[0].Resume, "the lifecycle event carries the cursor")
		assert.Equal(t, int64(5), started[0].Resume.Cursor)
		require.NotNil(t, started[0].Failure)
		assert.Equal(t, event.CategoryTransport, started[0].Failure.Category, "the failure that caused it")
		assert.Nil(t, rigtest.EventsOf(r.Rec.Events(), event.AttemptStarted)[0].Resume, "the create is no resume read")
		noCanary(t, r, err)
	})
	t.Run("events", func(t *testing.T) {
		r := rigtest.New(t, responses.New(responses.Background()), policy(),
			recoursetest.ResponsesBackground(bgID, evs...).CutEvents(5), recoursetest.ResponsesResume(bgID))
		text, last := collectEvents(t, r.Client.StreamEvents(context.Background(), streamRequest()))
		require.Equal(t, client.EventDone, last.Type, "%+v", last.Err)
		assert.Equal(t, "Hello, world!", text)
		assert.Equal(t, "starting_after=4&stream=true", r.Server.Requests()[1].RawQuery)
	})
	t.Run("drop-in", func(t *testing.T) {
		r := rigtest.New(t, responses.New(), policy(),
			recoursetest.ResponsesBackground(bgID, evs...).CutEvents(6), recoursetest.ResponsesResume(bgID))
		body := `{"model":"gpt-4.1-mini","input":"hi","stream":true,"background":true,"store":true}`
		req, err := http.NewRequestWithContext(context.Background(), http.MethodPost, r.Server.URL+"/v1/responses", strings.NewReader(body))
		require.NoError(t, err)
		req.Header.Set("Content-Type", "application/json")
		resp, err := r.HTTP.Do(req)
		require.NoError(t, err)
		b, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		require.NoError(t, err)
		assert.Equal(t, strings.Join(evs, ""), string(b), "one continuous stream: every event's bytes once")
		require.Equal(t, 2, r.Server.Count())
		assert.Equal(t, "starting_after=5&stream=true", r.Server.Requests()[1].RawQuery)
	})
}

// TestR19_9_ForegroundCutAfterOutputIsStillInterrupted: without background
// mode nothing is resumed: a cut after output ends interrupted (R13).
func TestR19_9_ForegroundCutAfterOutputIsStillInterrupted(t *testing.T) {
	r := rigtest.New(t, responses.New(), policy(), recoursetest.SSE(bgEvents()...).CutEvents(6))
	_, _, err := rigtest.Collect(t, r.Client.Stream(context.Background(), streamRequest()))
	re := rigtest.AsRecoveryError(t, err)
	assert.Equal(t, event.OutcomeInterrupted, re.Outcome)
	assert.Equal(t, 1, r.Server.Count())
	assert.NotContains(t, string(r.Server.Requests()[0].Body), `"background"`)
}

// TestR19_10_ResumesAreBoundedByThePolicy: every resume read is a wire
// attempt: a response whose reads keep being cut ends exhausted after
// MaxAttempts, each read after the cursor the consumer had.
func TestR19_10_ResumesAreBoundedByThePolicy(t *testing.T) {
	evs := bgEvents()
	r := rigtest.New(t, responses.New(responses.Background()), policy(),
		recoursetest.ResponsesBackground(bgID, evs...).CutEvents(5),
		recoursetest.ResponsesResume(bgID).CutEvents(1),
		recoursetest.ResponsesResume(bgID).CutEvents(0),
		recoursetest.ResponsesCancel(bgID))
	text, _, err := rigtest.Collect(t, r.Client.Stream(context.Background(), streamRequest()))
	re := rigtest.AsRecoveryError(t, err)
	assert.Equal(t, event.OutcomeExhausted, re.Outcome)
	assert.Equal(t, "Hello, world", text, "what arrived, once")
	require.Eventually(t, func() bool { return r.Server.Cancelled(bgID) }, 5*time.Second, time.Millisecond, "given up on: cancelled (R19.15)")
	reqs := r.Server.Requests()
	require.Len(t, reqs, 4)
	assert.Equal(t, "starting_after=4&stream=true", reqs[1].RawQuery)
	assert.Equal(t, "starting_after=5&stream=true", reqs[2].RawQuery, "the cursor moves with what was delivered")
	var cursors []int64
	for _, ev := range rigtest.EventsOf(r.Rec.Events(), event.RetryStarted) {
		require.NotNil(t, ev.Resume)
		cursors = append(cursors, ev.Resume.Cursor)
	}
	assert.Equal(t, []int64{4, 5}, cursors)
}

// TestR19_10_ResumeReadAnswered404IsInterrupted: a resume read answered
// 404 (the response is gone) ends with a typed outcome, never a resend of
// the create.
func TestR19_10_ResumeReadAnswered404IsInterrupted(t *testing.T) {
	for _, status := range []int{http.StatusNotFound, http.StatusGone} {
		r := rigtest.New(t, responses.New(responses.Background()), policy(),
			recoursetest.ResponsesBackground(bgID, bgEvents()...).CutEvents(5),
			recoursetest.JSON(status, recoursetest.OpenAIError("invalid_request_error", "", "gone")))
		_, _, err := rigtest.Collect(t, r.Client.Stream(context.Background(), streamRequest()))
		re := rigtest.AsRecoveryError(t, err)
		assert.Equal(t, event.OutcomeInterrupted, re.Outcome)
		assert.Equal(t, status, re.Failure.HTTPStatus)
		assert.Equal(t, 2, r.Server.Count())
		assert.Equal(t, http.MethodGet, r.Server.Requests()[1].Method)
	}
}

// TestR19_13_ResumeReadIsRetriedOn503WithoutAdmission: a resume read
// answered 503 with Retry-After is read again after at least that delay,
// and no admission hook is asked, even one that rejects everything.
func TestR19_13_ResumeReadIsRetriedOn503WithoutAdmission(t *testing.T) {
	var asked atomic.Int32
	p := policy()
	p.MaxAttempts = 4
	p.Admit = func(context.Context, layer.AdmissionRequest) (layer.Decision, error) {
		asked.Add(1)
		return layer.Reject, nil
	}
	r := rigtest.New(t, responses.New(responses.Background()), p,
		recoursetest.ResponsesBackground(bgID, bgEvents()...).CutEvents(6),
		recoursetest.JSON(503, recoursetest.OpenAIError("server_error", "", "busy"), "Retry-After", "7"),
		recoursetest.ResponsesResume(bgID))
	text, _, err := rigtest.Collect(t, r.Client.Stream(context.Background(), streamRequest()))
	require.NoError(t, err)
	assert.Equal(t, "Hello, world!", text)
	assert.Zero(t, asked.Load(), "reads need no admission")
	require.Equal(t, 3, r.Server.Count())
	assert.Equal(t, r.Server.Requests()[1].RawQuery, r.Server.Requests()[2].RawQuery, "the same cursor again")
	sleeps := r.Clock.Sleeps()
	require.Len(t, sleeps, 2)
	assert.GreaterOrEqual(t, sleeps[1], 7*time.Second, "Retry-After is a minimum")
}

// TestR19_11_BackgroundFailureBeforeIDIsAmbiguous: a background create cut
// after its headers, before response.created, may have been queued: it is
// not sent again without an admission hook, and is with one that allows
// it. A status answer (503) shows nothing was accepted and is resent.
func TestR19_11_BackgroundFailureBeforeIDIsAmbiguous(t *testing.T) {
	cut := recoursetest.ResponsesBackground(bgID, bgEvents()...).CutEvents(0)
	t.Run("no hook", func(t *testing.T) {
		r := rigtest.New(t, responses.New(responses.Background()), policy(), cut, recoursetest.ResponsesBackground(bgID, bgEvents()...))
		_, _, err := rigtest.Collect(t, r.Client.Stream(context.Background(), streamRequest()))
		re := rigtest.AsRecoveryError(t, err)
		assert.Equal(t, event.OutcomeAdmissionRequired, re.Outcome)
		assert.Equal(t, 1, r.Server.Count(), "never resent")
	})
	t.Run("hook allows", func(t *testing.T) {
		p := policy()
		p.Admit = rigtest.Allow
		r := rigtest.New(t, responses.New(responses.Background()), p, cut, recoursetest.ResponsesBackground(bgID, bgEvents()...))
		text, _, err := rigtest.Collect(t, r.Client.Stream(context.Background(), streamRequest()))
		require.NoError(t, err)
		assert.Equal(t, "Hello, world!", text)
		assert.Equal(t, 2, r.Server.Count())
		assert.Contains(t, r.Rec.Types(), string(event.AdmissionAllowed))
	})
	t.Run("503 is resent", func(t *testing.T) {
		r := rigtest.New(t, responses.New(responses.Background()), policy(),
			recoursetest.JSON(503, recoursetest.OpenAIError("server_error", "", "busy")), recoursetest.ResponsesBackground(bgID, bgEvents()...))
		text, _, err := rigtest.Collect(t, r.Client.Stream(context.Background(), streamRequest()))
		require.NoError(t, err)
		assert.Equal(t, "Hello, world!", text)
		assert.Equal(t, 2, r.Server.Count())
		assert.NotContains(t, r.Rec.Types(), string(event.AdmissionRequired))
	})
	t.Run("foreground cut is resent", func(t *testing.T) {
		r := rigtest.New(t, responses.New(), policy(), recoursetest.SSE(bgEvents()...).CutEvents(0), recoursetest.SSE(bgEvents()...))
		_, _, err := rigtest.Collect(t, r.Client.Stream(context.Background(), streamRequest()))
		require.NoError(t, err)
		assert.Equal(t, 2, r.Server.Count())
	})
}

// TestR19_12_CallerCancelCancelsTheBackgroundResponse: a consumer that
// stops reading a background stream has the response cancelled at the
// provider (POST /v1/responses/{id}/cancel, with the call's credential),
// without waiting for it; with KeepRunning nothing is sent.
func TestR19_12_CallerCancelCancelsTheBackgroundResponse(t *testing.T) {
	evs := bgEvents()
	t.Run("cancelled", func(t *testing.T) {
		r := rigtest.New(t, responses.New(responses.Background()), policy(),
			recoursetest.ResponsesBackground(bgID, evs[:5]...).Held(), recoursetest.ResponsesCancel(bgID))
		for ev := range r.Client.StreamEvents(context.Background(), streamRequest()) {
			if ev.Text != "" {
				break // the consumer stops
			}
		}
		require.Eventually(t, func() bool { return r.Server.Cancelled(bgID) }, 5*time.Second, time.Millisecond)
		reqs := r.Server.Requests()
		require.Len(t, reqs, 2)
		assert.Equal(t, http.MethodPost, reqs[1].Method)
		assert.Equal(t, "/v1/responses/"+bgID+"/cancel", reqs[1].Path)
		assert.Empty(t, reqs[1].Body)
		assert.Equal(t, "Bearer "+rigtest.Key, reqs[1].Header.Get("Authorization"))
		assert.Equal(t, string(event.Cancelled), r.Rec.Types()[len(r.Rec.Types())-1])
	})
	t.Run("context", func(t *testing.T) {
		r := rigtest.New(t, responses.New(responses.Background()), policy(),
			recoursetest.ResponsesBackground(bgID, evs[:5]...).Held(), recoursetest.ResponsesCancel(bgID))
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		var err error
		for ev := range r.Client.StreamEvents(ctx, streamRequest()) {
			if ev.Text != "" {
				cancel()
			}
			if ev.Err != nil {
				err = ev.Err
			}
		}
		re := rigtest.AsRecoveryError(t, err)
		assert.Equal(t, event.OutcomeCancelled, re.Outcome)
		require.Eventually(t, func() bool { return r.Server.Cancelled(bgID) }, 5*time.Second, time.Millisecond)
	})
	t.Run("keep running", func(t *testing.T) {
		r := rigtest.New(t, responses.New(responses.Background(), responses.KeepRunning()), policy(),
			recoursetest.ResponsesBackground(bgID, evs[:5]...).Held(), recoursetest.ResponsesCancel(bgID))
		for ev := range r.Client.StreamEvents(context.Background(), streamRequest()) {
			if ev.Text != "" {
				break
			}
		}
		assert.Never(t, func() bool { return r.Server.Count() > 1 }, 100*time.Millisecond, 5*time.Millisecond)
		assert.False(t, r.Server.Cancelled(bgID))
	})
	t.Run("foreground sends nothing", func(t *testing.T) {
		r := rigtest.New(t, responses.New(), policy(), recoursetest.SSE(evs[:5]...).Held(), recoursetest.ResponsesCancel(bgID))
		for ev := range r.Client.StreamEvents(context.Background(), streamRequest()) {
			if ev.Text != "" {
				break
			}
		}
		assert.Never(t, func() bool { return r.Server.Count() > 1 }, 100*time.Millisecond, 5*time.Millisecond)
	})
}

// dropIn sends method to path on the rig's chain as a drop-in client would
// and returns the status, the body as read and the read error.
func dropIn(t *testing.T, r *rigtest.Rig, method, path string) (*http.Response, string, error) {
	t.Helper()
	req, err := http.NewRequestWithContext(context.Background(), method, r.Server.URL+path, nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+rigtest.Key)
	resp, err := r.HTTP.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, rerr := io.ReadAll(resp.Body)
	return resp, string(b), rerr
}

// TestR19_13_RetrieveIsARead: GET /v1/responses/{id} is retried on 503
// without asking admission, and its body — a response still in progress —
// is handed over as it is, not judged like a completion.
func TestR19_13_RetrieveIsARead(t *testing.T) {
	p := policy()
	p.Admit = func(context.Context, layer.AdmissionRequest) (layer.Decision, error) { return layer.Reject, nil }
	r := rigtest.New(t, responses.New(), p,
		recoursetest.ResponsesBackground(bgID, bgEvents()[:5]...),
		recoursetest.JSON(503, recoursetest.OpenAIError("server_error", "", "busy")),
		recoursetest.ResponsesRetrieve(bgID))
	// The create, to give the scripted provider its log.
	body := `{"model":"gpt-4.1-mini","input":"hi","stream":true,"background":true}`
	req, err := http.NewRequestWithContext(context.Background(), http.MethodPost, r.Server.URL+"/v1/responses", strings.NewReader(body))
	require.NoError(t, err)
	raw, err := http.DefaultClient.Do(req) // not through the chain: the log only
	require.NoError(t, err)
	_, _ = io.Copy(io.Discard, raw.Body)
	raw.Body.Close()

	resp, got, err := dropIn(t, r, http.MethodGet, "/v1/responses/"+bgID)
	require.NoError(t, err)
	assert.Equal(t, http.StatusOK, resp.StatusCode)
	assert.Contains(t, got, `"status":"in_progress"`)
	assert.Equal(t, 3, r.Server.Count(), "one 503, then the read")
	assert.NotContains(t, r.Rec.Types(), string(event.AdmissionPending))
	assert.NotContains(t, r.Rec.Types(), string(event.AdmissionRejected))
}

// TestR19_13_StreamReadIsResumedFromItsOwnCursor: a drop-in client's own
// stream read (openai-go's GetStreaming) cut again is resumed after the
// last event it delivered, and the client reads every event once.
func TestR19_13_StreamReadIsResumedFromItsOwnCursor(t *testing.T) {
	evs := bgEvents()
	r := rigtest.New(t, responses.New(), policy(),
		recoursetest.ResponsesBackground(bgID, evs...).CutEvents(3),
		recoursetest.ResponsesResume(bgID).CutEvents(2),
		recoursetest.ResponsesResume(bgID))
	body := `{"model":"gpt-4.1-mini","input":"hi","stream":true,"background":true}`
	req, err := http.NewRequestWithContext(context.Background(), http.MethodPost, r.Server.URL+"/v1/responses", strings.NewReader(body))
	require.NoError(t, err)
	raw, err := http.DefaultClient.Do(req) // not through the chain: the log only
	require.NoError(t, err)
	_, _ = io.Copy(io.Discard, raw.Body)
	raw.Body.Close()

	resp, got, err := dropIn(t, r, http.MethodGet, "/v1/responses/"+bgID+"?stream=true&starting_after=2")
	require.NoError(t, err)
	assert.Equal(t, http.StatusOK, resp.StatusCode)
	assert.Equal(t, strings.Join(evs[3:], ""), got, "every event after the client's cursor, once")
	reqs := r.Server.Requests()
	require.Len(t, reqs, 3)
	assert.Equal(t, "starting_after=2&stream=true", reqs[1].RawQuery)
	assert.Equal(t, "/v1/responses/"+bgID, reqs[2].Path)
	assert.Equal(t, "starting_after=4&stream=true", reqs[2].RawQuery)
}

// TestR19_13_CancelAndDeletePassThroughOnce: requests that are neither a
// create nor a read go out once, unjudged: a 503 is the client's.
func TestR19_13_CancelAndDeletePassThroughOnce(t *testing.T) {
	busy := recoursetest.JSON(503, recoursetest.OpenAIError("server_error", "", "busy"))
	r := rigtest.New(t, responses.New(), policy(), busy, busy)
	resp, _, err := dropIn(t, r, http.MethodPost, "/v1/responses/"+bgID+"/cancel")
	require.NoError(t, err)
	assert.Equal(t, http.StatusServiceUnavailable, resp.StatusCode)
	resp, _, err = dropIn(t, r, http.MethodDelete, "/v1/responses/"+bgID)
	require.NoError(t, err)
	assert.Equal(t, http.StatusServiceUnavailable, resp.StatusCode)
	assert.Equal(t, 2, r.Server.Count())
	assert.Empty(t, r.Rec.Types(), "no lifecycle: nothing was recovered")
}

// TestR19_13_StreamFlagInTheBodyMakesAStreamRead: openai-go's GetStreaming
// sends GET …?starting_after=N with {"stream":true} as its body; that is a
// stream read, resumed like one.
func TestR19_13_StreamFlagInTheBodyMakesAStreamRead(t *testing.T) {
	evs := bgEvents()
	r := rigtest.New(t, responses.New(), policy(),
		recoursetest.ResponsesBackground(bgID, evs...),
		recoursetest.ResponsesResume(bgID).CutEvents(2), recoursetest.ResponsesResume(bgID))
	raw, err := http.Post(r.Server.URL+"/v1/responses", "application/json", strings.NewReader(`{"background":true}`))
	require.NoError(t, err) // not through the chain: the log only
	_, _ = io.Copy(io.Discard, raw.Body)
	raw.Body.Close()

	req, err := http.NewRequestWithContext(context.Background(), http.MethodGet,
		r.Server.URL+"/v1/responses/"+bgID+"?starting_after=2", strings.NewReader(`{"stream":true}`))
	require.NoError(t, err)
	resp, err := r.HTTP.Do(req)
	require.NoError(t, err)
	b, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.NoError(t, err)
	assert.Equal(t, strings.Join(evs[3:], ""), string(b), "every event after the cursor, once")
	reqs := r.Server.Requests()
	require.Len(t, reqs, 3)
	assert.Equal(t, "starting_after=2&stream=true", reqs[1].RawQuery)
	assert.Equal(t, "starting_after=4&stream=true", reqs[2].RawQuery)
}

// TestR19_9_NoSequenceNumbersNoResume: a background stream whose events
// carry no sequence_number has no cursor: a cut after output is not
// resumed (a read could repeat what the consumer had) and ends
// interrupted.
func TestR19_9_NoSequenceNumbersNoResume(t *testing.T) {
	var evs []string
	for _, e := range bgEvents() {
		evs = append(evs, strings.Replace(e, `"sequence_number":`, `"seq_unused":`, 1))
	}
	r := rigtest.New(t, responses.New(responses.Background()), policy(),
		recoursetest.ResponsesBackground(bgID, evs...).CutEvents(6), recoursetest.ResponsesResume(bgID))
	_, _, err := rigtest.Collect(t, r.Client.Stream(context.Background(), streamRequest()))
	re := rigtest.AsRecoveryError(t, err)
	assert.Equal(t, event.OutcomeInterrupted, re.Outcome)
	assert.Equal(t, event.ReasonSemanticOutput, re.Failure.Classification.Reason)
	assert.Equal(t, 1, r.Server.Count())
}

// TestR19_10_ResumeIsBoundedByTheDeadline: a resume read waits with the
// backoff like a resend, and one that would wait past the deadline is not
// made: the call ends deadline.
func TestR19_10_ResumeIsBoundedByTheDeadline(t *testing.T) {
	p := policy()
	p.BaseDelay, p.Jitter = new(10*time.Second), func() float64 { return 1 }
	r := rigtest.New(t, responses.New(responses.Background()), retry.Policy{}, recoursetest.ResponsesBackground(bgID, bgEvents()...).CutEvents(6),
		recoursetest.ResponsesCancel(bgID))
	p.WallClock, p.MonotonicClock, p.Sleep, p.OnEvent = r.Clock.Now, r.Clock.Mono, r.Clock.Sleep, r.Rec.OnEvent
	p.Deadline = r.Clock.Now().Add(5 * time.Second)
	ctx := retry.WithPolicy(context.Background(), &p)
	_, _, err := rigtest.Collect(t, r.Client.Stream(ctx, streamRequest()))
	re := rigtest.AsRecoveryError(t, err)
	assert.Equal(t, event.OutcomeDeadline, re.Outcome)
	require.Eventually(t, func() bool { return r.Server.Cancelled(bgID) }, 5*time.Second, time.Millisecond, "given up on: cancelled (R19.15)")
	assert.Equal(t, 2, r.Server.Count(), "no read past the deadline, then the cancel")
	assert.Equal(t, http.MethodPost, r.Server.Requests()[1].Method)
	assert.Empty(t, r.Clock.Sleeps())
}

// TestR19_10_ResumedStreamThatFailsEndsTyped: a resume read whose stream
// ends with response.failed ends interrupted with the provider's error;
// nothing is sent again.
func TestR19_10_ResumedStreamThatFailsEndsTyped(t *testing.T) {
	evs := bgEvents()
	failed := `event: response.failed` + "\n" + `data: {"type":"response.failed","sequence_number":6,"response":{"id":"` + bgID +
		`","object":"response","status":"failed","model":"m","output":[],"error":{"code":"server_error","message":"boom"}}}` + "\n\n"
	r := rigtest.New(t, responses.New(responses.Background()), policy(),
		recoursetest.ResponsesBackground(bgID, append(evs[:6:6], failed)...).CutEvents(6), recoursetest.ResponsesResume(bgID))
	text, _, err := rigtest.Collect(t, r.Client.Stream(context.Background(), streamRequest()))
	re := rigtest.AsRecoveryError(t, err)
	assert.Equal(t, event.OutcomeInterrupted, re.Outcome)
	assert.Equal(t, event.CategoryProviderResponse, re.Failure.Category)
	assert.Equal(t, "server_error", re.Failure.ProviderCode)
	assert.Equal(t, "Hello, world", text)
	assert.Equal(t, 2, r.Server.Count())
}

// TestR19_14_BackgroundCreateAnsweredQueuedIsAccepted: a drop-in unary
// background create is answered queued; the body reaches the client as
// sent, and the same object without "background":true is still refused.
func TestR19_14_BackgroundCreateAnsweredQueuedIsAccepted(t *testing.T) {
	queued := `{"id":"` + bgID + `","object":"response","status":"queued","background":true,"model":"gpt-4.1-mini","output":[]}`
	r := rigtest.New(t, responses.New(), policy(), recoursetest.JSON(503, recoursetest.OpenAIError("server_error", "", "busy")), recoursetest.JSON(200, queued))
	body := `{"model":"gpt-4.1-mini","input":"hi","background":true}`
	req, err := http.NewRequestWithContext(context.Background(), http.MethodPost, r.Server.URL+"/v1/responses", strings.NewReader(body))
	require.NoError(t, err)
	resp, err := r.HTTP.Do(req)
	require.NoError(t, err)
	b, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.NoError(t, err)
	assert.Equal(t, http.StatusOK, resp.StatusCode)
	assert.Equal(t, queued, string(b))
	assert.Equal(t, 2, r.Server.Count(), "the 503 was a status answer: resent")

	comp, err := responses.New().Decode([]byte(queued))
	require.NoError(t, err)
	assert.Equal(t, bgID, comp.ID)
	assert.Equal(t, "queued", comp.FinishReason)
	assert.Empty(t, comp.Message.Content)
	_, err = responses.New().Decode([]byte(strings.Replace(queued, `"background":true,`, ``, 1)))
	var pe *codec.ProtocolError
	require.ErrorAs(t, err, &pe, "a foreground answer that is not finished stays refused")
}

// TestR19_12_CancelNeverHoldsUpTheCaller: the cancel request of a response
// whose cancel endpoint never answers does not hold up the caller: the
// consumer's loop is over (well within retry.CancelTimeout) while the
// cancel still waits for its answer.
func TestR19_12_CancelNeverHoldsUpTheCaller(t *testing.T) {
	never := make(chan struct{})
	r := rigtest.New(t, responses.New(responses.Background()), policy(),
		recoursetest.ResponsesBackground(bgID, bgEvents()[:5]...).Held(),
		recoursetest.JSON(200, `{}`).Gated(-1, never))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() {
		var err error
		for ev := range r.Client.StreamEvents(ctx, streamRequest()) {
			if ev.Text != "" {
				cancel()
			}
			if ev.Err != nil {
				err = ev.Err
			}
		}
		done <- err
	}()
	var err error
	select {
	case err = <-done:
	case <-time.After(retry.CancelTimeout / 2):
		t.Fatal("the caller was held up by the cancel request")
	}
	assert.Equal(t, event.OutcomeCancelled, rigtest.AsRecoveryError(t, err).Outcome)
	require.Eventually(t, func() bool { return r.Server.Count() == 2 }, 5*time.Second, time.Millisecond)
	assert.Equal(t, "/v1/responses/"+bgID+"/cancel", r.Server.Requests()[1].Path, "sent, and never answered")
}

// TestR19_9_ResumeReadThatRepeatsEventsDeliversEachOnce: a resume read
// whose provider ignores starting_after and sends the response from its
// first event again still hands over every byte once: events at or below
// the cursor are dropped, text deltas (the decoder's fast path) included.
func TestR19_9_ResumeReadThatRepeatsEventsDeliversEachOnce(t *testing.T) {
	evs := bgEvents()
	r := rigtest.New(t, responses.New(responses.Background()), policy(),
		recoursetest.ResponsesBackground(bgID, evs...).CutEvents(6), recoursetest.SSE(evs...))
	text, comp, err := rigtest.Collect(t, r.Client.Stream(context.Background(), streamRequest()))
	require.NoError(t, err)
	assert.Equal(t, "Hello, world!", text, "every byte once")
	require.NotNil(t, comp)
	assert.Equal(t, "Hello, world!", comp.Message.Content)
	require.Equal(t, 2, r.Server.Count(), "one create, one resume read")
	assert.Equal(t, http.MethodGet, r.Server.Requests()[1].Method)
}

// TestR19_9_RepeatedSequenceNumbersAreHandedOverOnce: a provider that sends
// an event twice — in the first stream, or in a resume read above the
// cursor — still hands each event's text over once: an event whose
// sequence number is at or below the highest one read is dropped.
func TestR19_9_RepeatedSequenceNumbersAreHandedOverOnce(t *testing.T) {
	evs := bgEvents()
	// evs[6] is the second text delta (", world"): send it twice.
	twice := append(append(append([]string{}, evs[:7]...), evs[6]), evs[7:]...)
	t.Run("first stream", func(t *testing.T) {
		r := rigtest.New(t, responses.New(), policy(), recoursetest.SSE(twice...))
		text, comp, err := rigtest.Collect(t, r.Client.Stream(context.Background(), streamRequest()))
		require.NoError(t, err)
		assert.Equal(t, "Hello, world!", text)
		require.NotNil(t, comp)
		assert.Equal(t, "Hello, world!", comp.Message.Content)
	})
	t.Run("resume read", func(t *testing.T) {
		r := rigtest.New(t, responses.New(responses.Background()), policy(),
			recoursetest.ResponsesBackground(bgID, evs...).CutEvents(6), recoursetest.SSE(twice...))
		text, comp, err := rigtest.Collect(t, r.Client.Stream(context.Background(), streamRequest()))
		require.NoError(t, err)
		assert.Equal(t, "Hello, world!", text, "every byte once")
		require.NotNil(t, comp)
		assert.Equal(t, "Hello, world!", comp.Message.Content)
		assert.Equal(t, 2, r.Server.Count())
	})
}

// TestR19_15_GivingUpCancelsTheBackgroundResponse: a call that gives up on
// a background response it started while the response may still run —
// resume reads exhausted by 503s, a malformed event after output — sends
// its cancel once, with the call's credential; one whose response is over
// (a resume read answered 404, a response.failed event) or that keeps it
// running (KeepRunning) sends nothing more.
func TestR19_15_GivingUpCancelsTheBackgroundResponse(t *testing.T) {
	evs := bgEvents()
	busy := recoursetest.JSON(503, recoursetest.OpenAIError("server_error", "", "busy"))
	malformed := "event: response.output_text.delta\ndata: {\"type\":\"response.output_text.delta\",\"sequence_number\":6,\"delta\":\n\n"
	cancelled := func(t *testing.T, r *rigtest.Rig, want event.Outcome, err error) {
		t.Helper()
		assert.Equal(t, want, rigtest.AsRecoveryError(t, err).Outcome)
		require.Eventually(t, func() bool { return r.Server.Cancelled(bgID) }, 5*time.Second, time.Millisecond)
		reqs := r.Server.Requests()
		last := reqs[len(reqs)-1]
		assert.Equal(t, http.MethodPost, last.Method)
		assert.Equal(t, "/v1/responses/"+bgID+"/cancel", last.Path)
		assert.Equal(t, "Bearer "+rigtest.Key, last.Header.Get("Authorization"))
		n := 0
		for _, q := range reqs {
			if strings.HasSuffix(q.Path, "/cancel") {
				n++
			}
		}
		assert.Equal(t, 1, n, "one cancel")
	}
	t.Run("resume reads exhausted", func(t *testing.T) {
		r := rigtest.New(t, responses.New(responses.Background()), policy(),
			recoursetest.ResponsesBackground(bgID, evs...).CutEvents(5), busy, busy, recoursetest.ResponsesCancel(bgID))
		_, _, err := rigtest.Collect(t, r.Client.Stream(context.Background(), streamRequest()))
		cancelled(t, r, event.OutcomeExhausted, err)
		assert.Equal(t, 4, r.Server.Count())
	})
	t.Run("malformed event after output", func(t *testing.T) {
		r := rigtest.New(t, responses.New(responses.Background()), policy(),
			recoursetest.ResponsesBackground(bgID, append(evs[:6:6], malformed)...), recoursetest.ResponsesCancel(bgID))
		text, _, err := rigtest.Collect(t, r.Client.Stream(context.Background(), streamRequest()))
		cancelled(t, r, event.OutcomeInterrupted, err)
		assert.Equal(t, "Hello, world", text)
		assert.Equal(t, 2, r.Server.Count())
	})
	t.Run("drop-in", func(t *testing.T) {
		r := rigtest.New(t, responses.New(), policy(),
			recoursetest.ResponsesBackground(bgID, evs...).CutEvents(5), busy, busy, recoursetest.ResponsesCancel(bgID))
		body := `{"model":"gpt-4.1-mini","input":"hi","stream":true,"background":true}`
		req, err := http.NewRequestWithContext(context.Background(), http.MethodPost, r.Server.URL+"/v1/responses", strings.NewReader(body))
		require.NoError(t, err)
		resp, err := r.HTTP.Do(req)
		require.NoError(t, err)
		_, err = io.ReadAll(resp.Body)
		resp.Body.Close()
		require.Error(t, err)
		require.Eventually(t, func() bool { return r.Server.Cancelled(bgID) }, 5*time.Second, time.Millisecond)
		assert.Equal(t, 4, r.Server.Count())
	})
	over := []struct {
		name  string
		steps []recoursetest.Step
	}{
		{"resume read answered 404", []recoursetest.Step{recoursetest.ResponsesBackground(bgID, evs...).CutEvents(5),
			recoursetest.JSON(404, recoursetest.OpenAIError("invalid_request_error", "", "gone"))}},
		{"response failed", []recoursetest.Step{recoursetest.ResponsesBackground(bgID, append(evs[:6:6],
			"event: response.failed\ndata: {\"type\":\"response.failed\",\"sequence_number\":6,\"response\":{\"id\":\""+bgID+
				"\",\"object\":\"response\",\"status\":\"failed\",\"model\":\"m\",\"output\":[],\"error\":{\"code\":\"server_error\",\"message\":\"boom\"}}}\n\n")...)}},
	}
	for _, tc := range over {
		t.Run(tc.name, func(t *testing.T) {
			r := rigtest.New(t, responses.New(responses.Background()), policy(), append(tc.steps, recoursetest.ResponsesCancel(bgID))...)
			_, _, err := rigtest.Collect(t, r.Client.Stream(context.Background(), streamRequest()))
			assert.Equal(t, event.OutcomeInterrupted, rigtest.AsRecoveryError(t, err).Outcome)
			n := len(tc.steps)
			assert.Never(t, func() bool { return r.Server.Count() > n }, 100*time.Millisecond, 5*time.Millisecond, "the response is over: no cancel")
		})
	}
	t.Run("keep running", func(t *testing.T) {
		r := rigtest.New(t, responses.New(responses.Background(), responses.KeepRunning()), policy(),
			recoursetest.ResponsesBackground(bgID, evs...).CutEvents(5), busy, busy, recoursetest.ResponsesCancel(bgID))
		_, _, err := rigtest.Collect(t, r.Client.Stream(context.Background(), streamRequest()))
		assert.Equal(t, event.OutcomeExhausted, rigtest.AsRecoveryError(t, err).Outcome)
		assert.Never(t, func() bool { return r.Server.Count() > 3 }, 100*time.Millisecond, 5*time.Millisecond)
		assert.False(t, r.Server.Cancelled(bgID))
	})
}
