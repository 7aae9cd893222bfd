package anthropic_test

// Recovery on POST /v1/messages through chain.Default and the native
// client, against a loopback server that scripts Anthropic's bytes
// (R22.1, R22.2, R22.4, R22.6).

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/recourse-dev/recourse/chat"
	"github.com/recourse-dev/recourse/client"
	"github.com/recourse-dev/recourse/codecs/anthropic"
	"github.com/recourse-dev/recourse/event"
	"github.com/recourse-dev/recourse/internal/rigtest"
	"github.com/recourse-dev/recourse/layer"
	"github.com/recourse-dev/recourse/layers/fallback"
	"github.com/recourse-dev/recourse/layers/retry"
	"github.com/recourse-dev/recourse/recoursetest"
)

func policy() retry.Policy { return retry.Policy{MaxAttempts: 3, Jitter: func() float64 { return 0 }} }

func claudeCodec() *anthropic.Codec { return anthropic.New(anthropic.WithDefaultMaxTokens(256)) }

func userRequest() *chat.Request {
	return &chat.Request{Model: recoursetest.AnthropicModel, Messages: []chat.Message{{Role: chat.User, Content: rigtest.Prompt}}}
}

func streamRequest() *chat.Request {
	r := userRequest()
	r.Stream = true
	return r
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

func TestR22_1_529IsResentByDefault(t *testing.T) {
	t.Run("complete", func(t *testing.T) {
		r := rigtest.New(t, claudeCodec(), policy(), recoursetest.AnthropicOverloaded(), recoursetest.JSON(200, recoursetest.AnthropicMessage("Hello.")))
		comp, err := r.Client.Complete(context.Background(), userRequest())
		require.NoError(t, err)
		assert.Equal(t, "Hello.", comp.Message.Content)
		require.Equal(t, 2, r.Server.Count())
		reqs := r.Server.Requests()
		assert.Equal(t, recoursetest.AnthropicPath, reqs[0].Path)
		assert.Equal(t, reqs[0].Body, reqs[1].Body, "R2.3: byte-identical resend")
		assert.Equal(t, []string{"attempt_started", "attempt_failed", "delay_scheduled", "retry_started", "attempt_started", "attempt_succeeded"}, r.Rec.Types(),
			"a hosted provider: no admission")
		noCanary(t, r, err)
	})
	t.Run("stream", func(t *testing.T) {
		r := rigtest.New(t, claudeCodec(), policy(), recoursetest.AnthropicOverloaded(), recoursetest.AnthropicStream(recoursetest.AnthropicEvents("Hel", "lo")...))
		text, comp, err := rigtest.Collect(t, r.Client.Stream(context.Background(), streamRequest()))
		require.NoError(t, err)
		assert.Equal(t, "Hello", text)
		assert.Equal(t, &chat.Usage{InputTokens: 12, OutputTokens: 7}, comp.Usage)
		assert.Equal(t, 2, r.Server.Count())
	})
}

func TestR22_1_APolicyWithItsOwnStatusesDecidesAlone(t *testing.T) {
	p := policy()
	p.RetryableStatuses = []int{503}
	r := rigtest.New(t, claudeCodec(), p, recoursetest.AnthropicOverloaded(), recoursetest.JSON(200, recoursetest.AnthropicMessage("Hello.")))
	_, err := r.Client.Complete(context.Background(), userRequest())
	re := rigtest.AsRecoveryError(t, err)
	assert.Equal(t, event.OutcomeInterrupted, re.Outcome)
	assert.Equal(t, 529, re.Failure.HTTPStatus)
	assert.Equal(t, "overloaded_error", re.Failure.ProviderCode)
	assert.Equal(t, 1, r.Server.Count())
}

func TestR22_2_AnOverloadEventBeforeContentIsResentLikeA529(t *testing.T) {
	overload := recoursetest.AnthropicStream(append(recoursetest.AnthropicStart(), recoursetest.AnthropicErrorEvent("overloaded_error", "Overloaded"))...)
	r := rigtest.New(t, claudeCodec(), policy(), overload, recoursetest.AnthropicStream(recoursetest.AnthropicEvents("Hel", "lo")...))
	text, _, err := rigtest.Collect(t, r.Client.Stream(context.Background(), streamRequest()))
	require.NoError(t, err)
	assert.Equal(t, "Hello", text)
	require.Equal(t, 2, r.Server.Count())
	failed := rigtest.EventsOf(r.Rec.Events(), event.AttemptFailed)
	require.Len(t, failed, 1)
	f := failed[0].Failure
	assert.Equal(t, event.CategoryHTTP, f.Category)
	assert.Equal(t, 529, f.HTTPStatus)
	assert.Equal(t, "overloaded_error", f.ProviderCode)
	assert.True(t, f.Classification.Eligible)
	noCanary(t, r, err)
}

func TestR22_2_ErrorEventTypesStandForTheirStatuses(t *testing.T) {
	for typ, want := range map[string]struct {
		status int
		sends  int
	}{
		"rate_limit_error":      {429, 2},
		"api_error":             {500, 2},
		"invalid_request_error": {400, 1},
		"recourse_error":        {0, 1}, // names no status: a provider error object
	} {
		t.Run(typ, func(t *testing.T) {
			first := recoursetest.AnthropicStream(append(recoursetest.AnthropicStart(), recoursetest.AnthropicErrorEvent(typ, "x"))...)
			r := rigtest.New(t, claudeCodec(), policy(), first, recoursetest.AnthropicStream(recoursetest.AnthropicEvents("ok")...))
			_, _, _ = rigtest.Collect(t, r.Client.Stream(context.Background(), streamRequest()))
			assert.Equal(t, want.sends, r.Server.Count())
			f := rigtest.EventsOf(r.Rec.Events(), event.AttemptFailed)[0].Failure
			if want.status != 0 {
				assert.Equal(t, want.status, f.HTTPStatus)
				assert.Equal(t, event.CategoryHTTP, f.Category)
			} else {
				assert.Equal(t, event.CategoryProviderResponse, f.Category)
			}
		})
	}
}

func TestR22_2_AnErrorEventAfterAContentBlockIsNeverResent(t *testing.T) {
	evs := recoursetest.AnthropicEvents("Hel", "lo")
	broken := recoursetest.AnthropicStream(append(evs[:4:4], recoursetest.AnthropicErrorEvent("overloaded_error", "Overloaded"))...)
	r := rigtest.New(t, claudeCodec(), policy(), broken, recoursetest.AnthropicStream(evs...))
	_, _, err := rigtest.Collect(t, r.Client.Stream(context.Background(), streamRequest()))
	re := rigtest.AsRecoveryError(t, err)
	assert.Equal(t, event.OutcomeInterrupted, re.Outcome)
	assert.Equal(t, event.ReasonSemanticOutput, re.Failure.Classification.Reason)
	assert.Equal(t, 1, r.Server.Count())
}

func TestR22_4_ACutAfterMessageStartIsResent(t *testing.T) {
	evs := recoursetest.AnthropicEvents("Hel", "lo")
	r := rigtest.New(t, claudeCodec(), policy(), recoursetest.AnthropicStream(evs...).CutEvents(2), recoursetest.AnthropicStream(evs...))
	text, _, err := rigtest.Collect(t, r.Client.Stream(context.Background(), streamRequest()))
	require.NoError(t, err)
	assert.Equal(t, "Hello", text)
	assert.Equal(t, 2, r.Server.Count())
}

func TestR22_4_ACutAfterAServerToolUseIsInterrupted(t *testing.T) {
	evs := append(recoursetest.AnthropicStart(), recoursetest.AnthropicServerToolUse(0))
	r := rigtest.New(t, claudeCodec(), policy(), recoursetest.AnthropicStream(evs...).CutEvents(3), recoursetest.AnthropicStream(recoursetest.AnthropicEvents("x")...))
	_, _, err := rigtest.Collect(t, r.Client.Stream(context.Background(), streamRequest()))
	re := rigtest.AsRecoveryError(t, err)
	assert.Equal(t, event.OutcomeInterrupted, re.Outcome)
	assert.Equal(t, event.ReasonSemanticOutput, re.Failure.Classification.Reason)
	assert.Equal(t, 1, r.Server.Count(), "the provider already ran and billed the search: never resent")
}

func TestR22_4_EOFWithoutMessageStopIsNeverASuccess(t *testing.T) {
	evs := recoursetest.AnthropicEvents("Hi")
	r := rigtest.New(t, claudeCodec(), policy(), recoursetest.AnthropicStream(evs[:len(evs)-1]...))
	_, _, err := rigtest.Collect(t, r.Client.Stream(context.Background(), streamRequest()))
	re := rigtest.AsRecoveryError(t, err)
	assert.Equal(t, event.OutcomeInterrupted, re.Outcome)
	assert.Equal(t, 1, r.Server.Count())
}

func TestR22_6_RetryAfterIsAMinimum(t *testing.T) {
	limited := recoursetest.JSON(429, recoursetest.AnthropicError("rate_limit_error", "slow"), "retry-after", "3")
	r := rigtest.New(t, claudeCodec(), policy(), limited, recoursetest.JSON(200, recoursetest.AnthropicMessage("ok")))
	_, err := r.Client.Complete(context.Background(), userRequest())
	require.NoError(t, err)
	assert.Equal(t, []time.Duration{3 * time.Second}, r.Clock.Sleeps())
}

func TestR22_6_ShouldRetryFalseIsHonouredWithProviderHints(t *testing.T) {
	p := policy()
	p.ProviderHints = true
	r := rigtest.New(t, claudeCodec(), p, recoursetest.AnthropicOverloaded().WithHeader("x-should-retry", "false"), recoursetest.JSON(200, recoursetest.AnthropicMessage("ok")))
	_, err := r.Client.Complete(context.Background(), userRequest())
	re := rigtest.AsRecoveryError(t, err)
	assert.Equal(t, event.ReasonProviderNoRetry, re.Failure.Classification.Reason)
	assert.Equal(t, 1, r.Server.Count())
}

// TestR22_1_DropInResendIsByteExact: a drop-in body with cache_control
// and fields the codec does not model is resent byte for byte, and the
// client's x-api-key with it.
func TestR22_1_DropInResendIsByteExact(t *testing.T) {
	body := `{"model":"claude-sonnet-4-5","max_tokens":64,"system":[{"type":"text","text":"long","cache_control":{"type":"ephemeral"}}],"metadata":{"user_id":"u"},"tool_choice":{"type":"auto"},"messages":[{"role":"user","content":"hi"}],"stream":true}`
	r := rigtest.New(t, claudeCodec(), policy(), recoursetest.AnthropicOverloaded(), recoursetest.AnthropicStream(recoursetest.AnthropicEvents("Hel", "lo")...))
	req, err := http.NewRequest(http.MethodPost, r.Server.URL+"/v1/messages", strings.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("x-api-key", rigtest.Key)
	req.Header.Set("anthropic-version", "2023-06-01")
	resp, err := r.HTTP.Do(req)
	require.NoError(t, err)
	got, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.NoError(t, err)
	assert.Equal(t, delivered(recoursetest.AnthropicEvents("Hel", "lo")), string(got))
	reqs := r.Server.Requests()
	require.Len(t, reqs, 2)
	for _, q := range reqs {
		assert.Equal(t, body, string(q.Body))
		assert.Equal(t, rigtest.Key, q.Header.Get("x-api-key"))
	}
}

// TestR22_2_ADropInStreamThatFailsEndsWithAnErrorEvent: a cut after
// content reaches a drop-in client as Anthropic's in-band error event
// carrying only the safe text, so an SDK that reads events fails.
func TestR22_2_ADropInStreamThatFailsEndsWithAnErrorEvent(t *testing.T) {
	evs := recoursetest.AnthropicEvents("Hel", "lo")
	r := rigtest.New(t, claudeCodec(), policy(), recoursetest.AnthropicStream(evs...).CutEvents(4))
	req, err := http.NewRequest(http.MethodPost, r.Server.URL+"/v1/messages", strings.NewReader(`{"model":"m","max_tokens":5,"stream":true,"messages":[{"role":"user","content":"`+rigtest.Prompt+`"}]}`))
	require.NoError(t, err)
	req.Header.Set("x-api-key", rigtest.Key)
	resp, err := r.HTTP.Do(req)
	require.NoError(t, err)
	got, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	var re *layer.RecoveryError
	require.True(t, errors.As(err, &re))
	require.True(t, strings.HasPrefix(string(got), delivered(evs[:4])), "body %q", got)
	tail := strings.TrimPrefix(string(got), delivered(evs[:4]))
	assert.True(t, strings.HasPrefix(tail, "event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"recourse_error\""), "tail %q", tail)
	assert.NotContains(t, tail, rigtest.Prompt)
	assert.NotContains(t, tail, rigtest.Key)
}

// TestR22_2_AResentAttemptsErrorEventIsNeverHandedOver: the first
// attempt's in-band overload is resent; the second is cut after content.
// The drop-in body ends with the codec's own error frame, never with the
// first attempt's overload event, and the first attempt's failure keeps
// what message_start said it cost.
func TestR22_2_AResentAttemptsErrorEventIsNeverHandedOver(t *testing.T) {
	evs := recoursetest.AnthropicEvents("Hel", "lo")
	overload := recoursetest.AnthropicStream(append(recoursetest.AnthropicStart(), recoursetest.AnthropicErrorEvent("overloaded_error", "Overloaded"))...)
	r := rigtest.New(t, claudeCodec(), policy(), overload, recoursetest.AnthropicStream(evs...).CutEvents(4))
	req, err := http.NewRequest(http.MethodPost, r.Server.URL+"/v1/messages", strings.NewReader(`{"model":"m","max_tokens":5,"stream":true,"messages":[]}`))
	require.NoError(t, err)
	resp, err := r.HTTP.Do(req)
	require.NoError(t, err)
	got, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	assert.NotContains(t, string(got), "overloaded_error")
	assert.Contains(t, string(got), `"type":"recourse_error"`)
	assert.Equal(t, 2, r.Server.Count())
	f := rigtest.EventsOf(r.Rec.Events(), event.AttemptFailed)[0].Failure
	ev := event.Inspect(f)
	require.NotNil(t, ev.Response.Usage, "the discarded attempt's usage is kept")
	assert.Equal(t, 12, ev.Response.Usage.InputTokens)
}

// TestR22_1_FallbackBetweenClaudeModels: a Claude model overloaded to
// exhaustion falls back to another Claude model (client.WithFallback); the
// target's request names its model and nothing else changes.
func TestR22_1_FallbackBetweenClaudeModels(t *testing.T) {
	primary := rigtest.New(t, claudeCodec(), retry.Policy{MaxAttempts: 2, Jitter: func() float64 { return 0 }},
		recoursetest.AnthropicOverloaded(), recoursetest.AnthropicOverloaded())
	target := rigtest.New(t, claudeCodec(), policy(), recoursetest.JSON(200, recoursetest.AnthropicMessage("From haiku.")))
	cl, err := client.New(primary.Server.URL, primary.Chain, client.WithHeader("x-api-key", rigtest.Key),
		client.WithFallback(fallback.Rules{}, client.FallbackTarget{Client: target.Client, Model: "claude-haiku-4-5"}))
	require.NoError(t, err)
	comp, err := cl.Complete(context.Background(), userRequest())
	require.NoError(t, err)
	assert.Equal(t, "From haiku.", comp.Message.Content)
	assert.Equal(t, 2, primary.Server.Count())
	require.Equal(t, 1, target.Server.Count())
	first, second := string(primary.Server.Requests()[0].Body), string(target.Server.Requests()[0].Body)
	assert.Equal(t, strings.Replace(first, `"model":"`+recoursetest.AnthropicModel+`"`, `"model":"claude-haiku-4-5"`, 1), second)
	assert.Equal(t, rigtest.Key, primary.Server.Requests()[0].Header.Get("x-api-key"))
}

// TestR22_6_RateLimitResetIsAMinimumWithProviderHints: a 429 without
// retry-after whose tokens limit is exhausted waits until that limit's
// reset, with ProviderHints on; without them the reset is not read.
func TestR22_6_RateLimitResetIsAMinimumWithProviderHints(t *testing.T) {
	limited := func() recoursetest.Step {
		return recoursetest.JSON(429, recoursetest.AnthropicError("rate_limit_error", "slow"),
			"anthropic-ratelimit-tokens-remaining", "0",
			"anthropic-ratelimit-tokens-reset", rigtest.Epoch.Add(5*time.Second).Format(time.RFC3339),
			"anthropic-ratelimit-requests-remaining", "10",
			"anthropic-ratelimit-requests-reset", rigtest.Epoch.Add(50*time.Second).Format(time.RFC3339))
	}
	for _, hints := range []bool{true, false} {
		p := policy()
		p.ProviderHints = hints
		r := rigtest.New(t, claudeCodec(), p, limited(), recoursetest.JSON(200, recoursetest.AnthropicMessage("ok")))
		_, err := r.Client.Complete(context.Background(), userRequest())
		require.NoError(t, err)
		want := time.Duration(0)
		if hints {
			want = 5 * time.Second
		}
		assert.Equal(t, []time.Duration{want}, r.Clock.Sleeps(), "hints %v", hints)
		f := rigtest.EventsOf(r.Rec.Events(), event.AttemptFailed)[0].Failure
		if hints {
			assert.Equal(t, "anthropic-ratelimit-tokens-reset", f.RetryAfter.Header)
		} else {
			assert.False(t, f.RetryAfter.Valid())
		}
	}
}

func TestR22_6_ResetHintReadsOnlyExhaustedLimitsOfA429(t *testing.T) {
	c := anthropic.New()
	h := http.Header{}
	h.Set("anthropic-ratelimit-input-tokens-remaining", "0")
	h.Set("anthropic-ratelimit-input-tokens-reset", "2026-12-02T10:00:03Z")
	h.Set("anthropic-ratelimit-output-tokens-remaining", "0")
	h.Set("anthropic-ratelimit-output-tokens-reset", "2026-12-02T10:00:09Z")
	h.Set("anthropic-ratelimit-requests-remaining", "0")
	h.Set("anthropic-ratelimit-requests-reset", "tomorrow")
	at, name, ok := c.ResetHint(429, h)
	assert.True(t, ok)
	assert.Equal(t, "anthropic-ratelimit-output-tokens-reset", name)
	assert.Equal(t, time.Date(2026, 12, 2, 10, 0, 9, 0, time.UTC), at.UTC())
	_, _, ok = c.ResetHint(529, h)
	assert.False(t, ok)
	_, _, ok = c.ResetHint(429, http.Header{})
	assert.False(t, ok)
}

// R13.3: through the native client a max_tokens stop reason followed by
// message_stop stays incomplete_completion (finish length), never resent.
func TestR13_3_NativeClientKeepsIncompleteCompletion(t *testing.T) {
	evs := recoursetest.AnthropicEvents("Hel", "lo")
	i := len(evs) - 2
	evs[i] = strings.Replace(evs[i], `"stop_reason":"end_turn"`, `"stop_reason":"max_tokens"`, 1)
	r := rigtest.New(t, claudeCodec(), policy(), recoursetest.AnthropicStream(evs...), recoursetest.AnthropicStream(recoursetest.AnthropicEvents("x")...))
	_, _, err := rigtest.Collect(t, r.Client.Stream(context.Background(), streamRequest()))
	re := rigtest.AsRecoveryError(t, err)
	ev := event.Inspect(&re.Failure)
	require.NotNil(t, ev)
	var se *layer.StreamError
	require.ErrorAs(t, ev.Cause, &se)
	assert.Equal(t, layer.StreamIncompleteCompletion, se.Reason)
	assert.Equal(t, "length", se.FinishReason)
	assert.Equal(t, 1, r.Server.Count())
}

// delivered returns the bytes a drop-in reader gets of evs, events of
// recoursetest.AnthropicStart then output: the ping, a keepalive that is
// never held, comes before message_start, which is held until the first
// output (R13.9).
func delivered(evs []string) string { return evs[1] + evs[0] + strings.Join(evs[2:], "") }

// TestR22_10_ADiscardedAttemptsUsageIsInItsFailure: message_start's usage
// of an attempt overloaded in-band is in that attempt's failure record,
// both when a later attempt succeeds (attempt_failed) and in the
// RecoveryError's history when none does; the record's JSON holds only
// the counts.
func TestR22_10_ADiscardedAttemptsUsageIsInItsFailure(t *testing.T) {
	overload := func() recoursetest.Step {
		return recoursetest.AnthropicStream(append(recoursetest.AnthropicStart(), recoursetest.AnthropicErrorEvent("overloaded_error", "Overloaded"))...)
	}
	t.Run("resent", func(t *testing.T) {
		r := rigtest.New(t, claudeCodec(), policy(), overload(), recoursetest.AnthropicStream(recoursetest.AnthropicEvents("Hel", "lo")...))
		_, comp, err := rigtest.Collect(t, r.Client.Stream(context.Background(), streamRequest()))
		require.NoError(t, err)
		assert.Equal(t, &chat.Usage{InputTokens: 12, OutputTokens: 7}, comp.Usage)
		failed := rigtest.EventsOf(r.Rec.Events(), event.AttemptFailed)
		require.Len(t, failed, 1)
		require.NotNil(t, failed[0].Failure.Usage)
		assert.Equal(t, chat.Usage{InputTokens: 12, OutputTokens: 1}, *failed[0].Failure.Usage)
		b, err := json.Marshal(failed[0].Failure)
		require.NoError(t, err)
		assert.Contains(t, string(b), `"usage":{"input_tokens":12,"output_tokens":1}`)
		noCanary(t, r, nil)
	})
	t.Run("exhausted", func(t *testing.T) {
		r := rigtest.New(t, claudeCodec(), retry.Policy{MaxAttempts: 2, Jitter: func() float64 { return 0 }}, overload(), overload())
		_, _, err := rigtest.Collect(t, r.Client.Stream(context.Background(), streamRequest()))
		var re *layer.RecoveryError
		require.ErrorAs(t, err, &re)
		assert.Equal(t, event.OutcomeExhausted, re.Outcome)
		require.Len(t, re.History, 2)
		for _, f := range re.History {
			require.NotNil(t, f.Usage)
			assert.Equal(t, 12, f.Usage.InputTokens)
		}
		require.NotNil(t, re.Failure.Usage)
		assert.Equal(t, 12, re.Failure.Usage.InputTokens)
		b, jerr := json.Marshal(re)
		require.NoError(t, jerr)
		assert.Contains(t, string(b), `"usage":{"input_tokens":12,"output_tokens":1}`)
		assert.NotContains(t, string(b), rigtest.Prompt)
		assert.NotContains(t, string(b), rigtest.Key)
		noCanary(t, r, err)
	})
	t.Run("no usage reported", func(t *testing.T) {
		r := rigtest.New(t, claudeCodec(), policy(), recoursetest.AnthropicOverloaded(), recoursetest.AnthropicStream(recoursetest.AnthropicEvents("Hi")...))
		_, _, err := rigtest.Collect(t, r.Client.Stream(context.Background(), streamRequest()))
		require.NoError(t, err)
		failed := rigtest.EventsOf(r.Rec.Events(), event.AttemptFailed)
		require.Len(t, failed, 1)
		assert.Nil(t, failed[0].Failure.Usage, "a 529 before any event reports no usage")
	})
}
