package responses_test

// Foreground recovery on POST /v1/responses through chain.Default and the
// native client, against a loopback server that scripts the provider's
// bytes (R19.1, R19.3, R19.4, R19.6, R19.7).

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"

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

func zeroJitter() float64 { return 0 }

// policy allows three attempts with no jitter; the rig's clock makes every
// backoff instant.
func policy() retry.Policy { return retry.Policy{MaxAttempts: 3, Jitter: zeroJitter} }

func userRequest() *chat.Request {
	return &chat.Request{Model: "gpt-4.1-mini", Messages: []chat.Message{{Role: chat.User, Content: rigtest.Prompt}}}
}

// noCanary fails when a safe output holds the prompt or the key.
func noCanary(t *testing.T, r *rigtest.Rig, err error) {
	t.Helper()
	if err != nil {
		assert.NotContains(t, err.Error(), rigtest.Prompt)
		assert.NotContains(t, err.Error(), rigtest.Key)
	}
	for _, ev := range r.Rec.Events() {
		b, _ := json.Marshal(ev)
		assert.NotContains(t, string(b), rigtest.Prompt)
		assert.NotContains(t, string(b), rigtest.Key)
	}
}

// TestR19_1_503ThenSuccessIsResentOnce: a 503 before the answer is resent
// once, with the byte-identical body, to /v1/responses, unary and streamed.
func TestR19_1_503ThenSuccessIsResentOnce(t *testing.T) {
	unavailable := recoursetest.JSON(503, recoursetest.OpenAIError("server_error", "", "busy"))
	t.Run("complete", func(t *testing.T) {
		r := rigtest.New(t, responses.New(), policy(), unavailable,
			recoursetest.JSON(200, unary("completed", []any{msgItem(outputText("Hello."))}, nil)))
		comp, err := r.Client.Complete(context.Background(), userRequest())
		require.NoError(t, err)
		assert.Equal(t, "Hello.", comp.Message.Content)
		assert.Equal(t, "stop", comp.FinishReason)
		assert.Equal(t, respID, comp.ID)
		require.Equal(t, 2, r.Server.Count(), "resent once")
		reqs := r.Server.Requests()
		assert.Equal(t, "/v1/responses", reqs[0].Path)
		assert.Equal(t, reqs[0].Body, reqs[1].Body, "R2.3: byte-identical resend")
		assert.Equal(t, []string{"attempt_started", "attempt_failed", "delay_scheduled", "retry_started", "attempt_started", "attempt_succeeded"}, r.Rec.Types(),
			"a hosted provider: no admission (R8.3)")
		noCanary(t, r, err)
	})
	t.Run("stream", func(t *testing.T) {
		r := rigtest.New(t, responses.New(), policy(), unavailable, responsesSSE(textStream("Hel", "lo")...))
		text, comp, err := rigtest.Collect(t, r.Client.Stream(context.Background(), userRequest()))
		require.NoError(t, err)
		assert.Equal(t, "Hello", text)
		require.NotNil(t, comp)
		assert.Equal(t, "Hello", comp.Message.Content)
		assert.Equal(t, &chat.Usage{InputTokens: 12, OutputTokens: 7}, comp.Usage)
		assert.Equal(t, 2, r.Server.Count())
		assert.Contains(t, string(r.Server.Requests()[0].Body), `"stream":true`)
	})
}

// TestR19_3_CutBeforeFirstOutputIsResent: a stream cut after
// response.created, response.in_progress and a message's lifecycle events
// only has no semantic evidence and is resent; the consumer sees the text
// once.
func TestR19_3_CutBeforeFirstOutputIsResent(t *testing.T) {
	before := []string{": keep-alive\n\n", evCreated(0), evInProgress(1), evMessageAdded(2, 0), evPartAdded(3, 0)}
	cut := responsesSSE(before...).Cut(len(strings.Join(before, "")))
	r := rigtest.New(t, responses.New(), policy(), cut, responsesSSE(textStream("Hel", "lo")...))
	var events []client.StreamEvent
	for ev := range r.Client.StreamEvents(context.Background(), userRequest()) {
		events = append(events, ev)
	}
	require.NotEmpty(t, events)
	last := events[len(events)-1]
	require.Equal(t, client.EventDone, last.Type, "%+v", last.Err)
	var text strings.Builder
	for _, ev := range events {
		text.WriteString(ev.Text)
	}
	assert.Equal(t, "Hello", text.String(), "content exactly once")
	assert.Equal(t, 2, r.Server.Count(), "resent once")
	failed := rigtest.EventsOf(r.Rec.Events(), event.AttemptFailed)
	require.Len(t, failed, 1)
	f := failed[0].Failure
	require.NotNil(t, f)
	assert.Equal(t, event.Classification{Eligible: true, Reason: event.ReasonTransient}, f.Classification)
	assert.Equal(t, event.CategoryTransport, f.Category)
	assert.False(t, f.Progress.Observed.Any(), "lifecycle events are no semantic evidence")
	assert.Equal(t, int64(len(strings.Join(before, ""))), f.Progress.RawBytes)
}

// TestR19_3_CutAfterTextDeltaIsInterrupted: one output_text delta is
// semantic output: a cut after it ends interrupted, with no resend, and the
// text already delivered stays delivered.
func TestR19_3_CutAfterTextDeltaIsInterrupted(t *testing.T) {
	kinds := map[string]struct {
		ev   string
		want codec.Counts
	}{
		"text":      {evText(4, 0, "Hel"), codec.Counts{ContentBytes: 3}},
		"refusal":   {evRefusal(4, 0, "No"), codec.Counts{ContentBytes: 2}},
		"summary":   {evSummary(4, 0, "hmm"), codec.Counts{ReasoningBytes: 3}},
		"reasoning": {evReasoningText(4, 0, "hmm"), codec.Counts{ReasoningBytes: 3}},
		"tool call": {evCallAdded(4, 1, "call_1", "weather"), codec.Counts{ToolFragments: 1}},
		"arguments": {evArgs(4, 1, `{"a"`), codec.Counts{ToolFragments: 1}},
	}
	for name, k := range kinds {
		t.Run(name, func(t *testing.T) {
			evs := []string{evCreated(0), evInProgress(1), evMessageAdded(2, 0), evPartAdded(3, 0), k.ev}
			r := rigtest.New(t, responses.New(), policy(), responsesSSE(evs...).Cut(len(strings.Join(evs, ""))), responsesSSE(textStream("never")...))
			text, comp, err := rigtest.Collect(t, r.Client.Stream(context.Background(), userRequest(), client.WithReasoning(), client.WithToolFragments()))
			re := rigtest.AsRecoveryError(t, err)
			assert.Equal(t, event.OutcomeInterrupted, re.Outcome)
			assert.Equal(t, event.Classification{Reason: event.ReasonSemanticOutput}, re.Failure.Classification)
			assert.Equal(t, event.CategoryTransport, re.Failure.Category)
			assert.Equal(t, k.want, re.Failure.Progress.Observed)
			assert.Equal(t, k.want, re.Failure.Progress.Delivered, "delivered before the cut")
			assert.Nil(t, comp, "nothing completed")
			if name == "text" {
				assert.Equal(t, "Hel", text, "the delivered text is kept")
			}
			assert.Equal(t, 1, r.Server.Count(), "never resent")
			noCanary(t, r, err)
		})
	}
	t.Run("event API", func(t *testing.T) {
		evs := []string{evCreated(0), evText(1, 0, "Hel")}
		r := rigtest.New(t, responses.New(), policy(), responsesSSE(evs...).Cut(len(strings.Join(evs, ""))))
		var got []client.StreamEvent
		for ev := range r.Client.StreamEvents(context.Background(), userRequest()) {
			got = append(got, ev)
		}
		require.Len(t, got, 2)
		assert.Equal(t, client.StreamEvent{Type: client.EventContent, Text: "Hel"}, got[0])
		require.Equal(t, client.EventError, got[1].Type)
		assert.Equal(t, layer.StreamInterrupted, got[1].Err.Reason)
		assert.Equal(t, 1, r.Server.Count())
	})
	t.Run("drop-in", func(t *testing.T) {
		evs := []string{evCreated(0), evText(1, 0, "Hel")}
		r := rigtest.New(t, responses.New(), policy(), responsesSSE(evs...).Cut(len(strings.Join(evs, ""))))
		body, err := responses.New().Encode(&chat.Request{Model: "gpt-4.1-mini", Stream: true, Messages: userRequest().Messages})
		require.NoError(t, err)
		req, err := http.NewRequest(http.MethodPost, r.Server.URL+"/v1/responses", strings.NewReader(string(body)))
		require.NoError(t, err)
		resp, err := r.HTTP.Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		got, rerr := io.ReadAll(resp.Body)
		re := rigtest.AsRecoveryError(t, rerr)
		assert.Equal(t, event.OutcomeInterrupted, re.Outcome)
		assert.True(t, strings.HasPrefix(string(got), strings.Join(evs, "")), "the delivered events pass through unchanged")
		assert.True(t, strings.HasSuffix(string(got), string(responses.New().ErrorFrame(re.Error()))), "then the codec's error event with the safe text")
		assert.Equal(t, 1, r.Server.Count())
	})
}

// TestR19_4_MissingTerminalEventFailsClosed: a stream that delivered text
// and reached EOF without response.completed is never a success.
func TestR19_4_MissingTerminalEventFailsClosed(t *testing.T) {
	evs := textStream("Hel", "lo")
	r := rigtest.New(t, responses.New(), policy(), responsesSSE(evs[:len(evs)-1]...), responsesSSE(textStream("never")...))
	text, comp, err := rigtest.Collect(t, r.Client.Stream(context.Background(), userRequest()))
	re := rigtest.AsRecoveryError(t, err)
	assert.Equal(t, event.OutcomeInterrupted, re.Outcome)
	assert.Equal(t, event.CategoryTransport, re.Failure.Category, "R13.3: an incomplete stream")
	assert.Equal(t, event.ReasonSemanticOutput, re.Failure.Classification.Reason)
	assert.Equal(t, "Hello", text)
	assert.Nil(t, comp, "no Done chunk")
	assert.Equal(t, 1, r.Server.Count())
	ev := event.Inspect(&re.Failure)
	require.NotNil(t, ev)
	assert.True(t, errors.Is(ev.Cause, responses.ErrIncomplete), "cause %v", ev.Cause)
}

// TestR19_4_IncompleteIsALengthFinish: response.incomplete for
// max_output_tokens ends the stream with incomplete_completion and finish
// length, never resent; a unary incomplete body finishes "length".
func TestR19_4_IncompleteIsALengthFinish(t *testing.T) {
	t.Run("stream", func(t *testing.T) {
		r := rigtest.New(t, responses.New(), policy(),
			responsesSSE(evCreated(0), evText(1, 0, "Once upon"), evIncomplete(2, "max_output_tokens")), responsesSSE(textStream("never")...))
		var got []client.StreamEvent
		for ev := range r.Client.StreamEvents(context.Background(), userRequest()) {
			got = append(got, ev)
		}
		require.NotEmpty(t, got)
		last := got[len(got)-1]
		require.Equal(t, client.EventError, last.Type)
		assert.Equal(t, "length", last.Err.FinishReason)
		re := last.Err.Recovery
		require.NotNil(t, re)
		ev := event.Inspect(&re.Failure)
		require.NotNil(t, ev)
		var se *layer.StreamError
		require.ErrorAs(t, ev.Cause, &se)
		assert.Equal(t, layer.StreamError{Reason: layer.StreamIncompleteCompletion, FinishReason: "length"}, *se)
		assert.Equal(t, 1, r.Server.Count(), "never resent")
	})
	t.Run("complete", func(t *testing.T) {
		r := rigtest.New(t, responses.New(), policy(), recoursetest.JSON(200, unary("incomplete", []any{msgItem(outputText("Once upon"))},
			map[string]any{"incomplete_details": map[string]any{"reason": "max_output_tokens"}})))
		comp, err := r.Client.Complete(context.Background(), userRequest())
		require.NoError(t, err)
		assert.Equal(t, "length", comp.FinishReason)
		assert.Equal(t, "Once upon", comp.Message.Content)
		assert.Equal(t, 1, r.Server.Count())
	})
}

// TestR19_6_FailedAndErrorEventsAreProviderErrors: response.failed, an
// error event and a failed unary body are provider errors, passed on and
// never resent — also before any output.
func TestR19_6_FailedAndErrorEventsAreProviderErrors(t *testing.T) {
	for name, ev := range map[string]string{
		"failed": evFailed(2, "server_error", "The model failed."),
		"error":  evError(2, "server_error", "Internal error."),
	} {
		t.Run(name, func(t *testing.T) {
			r := rigtest.New(t, responses.New(), policy(), responsesSSE(evCreated(0), evInProgress(1), ev), responsesSSE(textStream("never")...))
			_, comp, err := rigtest.Collect(t, r.Client.Stream(context.Background(), userRequest()))
			re := rigtest.AsRecoveryError(t, err)
			assert.Nil(t, comp)
			assert.Equal(t, event.CategoryProviderResponse, re.Failure.Category)
			assert.False(t, re.Failure.Classification.Eligible)
			assert.Equal(t, "server_error", re.Failure.ProviderCode)
			assert.Equal(t, 1, r.Server.Count(), "never resent")
			assert.NotContains(t, err.Error(), "failed.")
			noCanary(t, r, err)
		})
	}
	t.Run("drop-in passes the provider's event on", func(t *testing.T) {
		ev := evFailed(2, "server_error", "The model failed.")
		r := rigtest.New(t, responses.New(), policy(), responsesSSE(evCreated(0), evInProgress(1), ev))
		req, err := http.NewRequest(http.MethodPost, r.Server.URL+"/v1/responses", strings.NewReader(`{"model":"m","input":[],"stream":true}`))
		require.NoError(t, err)
		resp, err := r.HTTP.Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		got, rerr := io.ReadAll(resp.Body)
		require.Error(t, rerr)
		assert.True(t, strings.HasSuffix(string(got), ev), "the provider's failed event is the last bytes")
		assert.Equal(t, 1, r.Server.Count())
	})
	t.Run("complete", func(t *testing.T) {
		r := rigtest.New(t, responses.New(), policy(),
			recoursetest.JSON(200, unary("failed", nil, map[string]any{"error": map[string]any{"code": "server_error", "message": "boom"}})),
			recoursetest.JSON(200, unary("completed", []any{msgItem(outputText("never"))}, nil)))
		comp, err := r.Client.Complete(context.Background(), userRequest())
		re := rigtest.AsRecoveryError(t, err)
		assert.Nil(t, comp)
		assert.Equal(t, event.CategoryProviderResponse, re.Failure.Category)
		assert.Equal(t, 1, r.Server.Count())
	})
}

// TestR19_7_ToolCallsThroughTheClient: a streamed function call reaches the
// consumer as fragments and the Done chunk carries it with its call_id and
// arguments; a unary one decodes the same.
func TestR19_7_ToolCallsThroughTheClient(t *testing.T) {
	want := []chat.ToolCall{{ID: "call_1", Name: "weather", Arguments: json.RawMessage(`{"city":"Paris"}`)}}
	req := userRequest()
	req.Tools = []chat.ToolSpec{{Name: "weather", Parameters: json.RawMessage(`{"type":"object"}`)}}
	t.Run("stream", func(t *testing.T) {
		r := rigtest.New(t, responses.New(), policy(), responsesSSE(evCreated(0), evCallAdded(1, 0, "call_1", "weather"),
			evArgs(2, 0, `{"city":`), evArgs(3, 0, `"Paris"}`), evCallDone(4, 0, "call_1", "weather", `{"city":"Paris"}`), evCompleted(5)))
		var frags []chat.ToolCallFragment
		var done *chat.Completion
		for ch, err := range r.Client.Stream(context.Background(), req, client.WithToolFragments()) {
			require.NoError(t, err)
			frags = append(frags, ch.ToolCallFragments...)
			if ch.Done {
				done = ch.Completion
			}
		}
		assert.Equal(t, []chat.ToolCallFragment{{Index: 0, ID: "call_1", Name: "weather"}, {Index: 0, Arguments: `{"city":`}, {Index: 0, Arguments: `"Paris"}`}}, frags)
		require.NotNil(t, done)
		assert.Equal(t, "tool_calls", done.FinishReason)
		assert.Equal(t, want, done.Message.ToolCalls)
		assert.Contains(t, string(r.Server.Requests()[0].Body), `"tools":[{"type":"function","name":"weather","parameters":{"type":"object"},"strict":false}]`)
	})
	t.Run("complete", func(t *testing.T) {
		r := rigtest.New(t, responses.New(), policy(), recoursetest.JSON(200, unary("completed", []any{callItem("call_1", "weather", `{"city":"Paris"}`)}, nil)))
		comp, err := r.Client.Complete(context.Background(), req)
		require.NoError(t, err)
		assert.Equal(t, "tool_calls", comp.FinishReason)
		assert.Equal(t, want, comp.Message.ToolCalls)
	})
}
