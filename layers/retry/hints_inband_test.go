package retry_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/recourse-dev/recourse/codecs/openai"
	"github.com/recourse-dev/recourse/event"
	"github.com/recourse-dev/recourse/internal/rigtest"
	"github.com/recourse-dev/recourse/layers/retry"
	"github.com/recourse-dev/recourse/recoursetest"
)

// The exhausted-quota error object as OpenAI sends it (type and code
// insufficient_quota), and the forms in which it reaches a 2xx stream.
const (
	quotaMessage = "You exceeded your current quota, please check your plan and billing details. For more information on this error, read the docs: https://platform.openai.com/docs/guides/error-codes/api-errors."
	quotaObject  = `{"message":"` + quotaMessage + `","type":"insufficient_quota","param":null,"code":"insufficient_quota"}`
	// A Chat Completions stream's in-band error: a data event whose
	// object has "error" (what the OpenAI SDKs raise as an APIError).
	quotaDataFrame = `data: {"error":` + quotaObject + "}\n\n"
	// The same object in an event named "error".
	quotaErrorEvent = "event: error\ndata: {\"error\":" + quotaObject + "}\n\n"
	// The Responses API's error event: code and message at the top.
	quotaResponsesEvent = "event: error\ndata: {\"type\":\"error\",\"code\":\"insufficient_quota\",\"message\":\"" + quotaMessage + "\",\"param\":null,\"sequence_number\":0}\n\n"
	// A role chunk: no semantic output.
	roleChunk = `data: {"id":"chatcmpl-q","object":"chat.completion.chunk","model":"gpt-4o-mini","choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}]}` + "\n\n"
	textChunk = `data: {"id":"chatcmpl-q","object":"chat.completion.chunk","model":"gpt-4o-mini","choices":[{"index":0,"delta":{"content":"Hel"},"finish_reason":null}]}` + "\n\n"
)

// quotaSteps are the 2xx answers to a streaming request that carry the
// exhausted quota before any semantic output.
func quotaSteps() map[string]recoursetest.Step {
	return map[string]recoursetest.Step{
		"data frame":                   recoursetest.SSE(quotaDataFrame, recoursetest.StreamDone),
		"data frame after a keepalive": recoursetest.SSE(": keep-alive\n\n", roleChunk, quotaDataFrame),
		"error event":                  recoursetest.SSE(quotaErrorEvent),
		"Responses error event":        recoursetest.SSE(quotaResponsesEvent),
		"JSON document":                recoursetest.JSON(200, `{"error":`+quotaObject+`}`),
	}
}

// TestProviderHints_InsufficientQuotaInA2xxStream: a 2xx stream whose
// in-band error frame (or the JSON document answering it) says the quota
// is exhausted was never resent — a provider error object is not eligible
// (R4.7) — and with ProviderHints its reason is insufficient_quota, with
// the hint in the safe failure and the events, as for the 429.
func TestProviderHints_InsufficientQuotaInA2xxStream(t *testing.T) {
	for name, step := range quotaSteps() {
		t.Run(name, func(t *testing.T) {
			r := rigtest.New(t, openai.New(), hintPolicy(3), step, okStep("never"), okStep("never"))
			req := canaryRequest()
			req.Stream = true
			text, _, err := collect(t, r.Client.Stream(context.Background(), req))
			re := rigtest.AsRecoveryError(t, err)
			assert.Empty(t, text)
			assert.Equal(t, event.OutcomeInterrupted, re.Outcome)
			assert.Equal(t, event.CategoryProviderResponse, re.Failure.Category)
			assert.Equal(t, event.Classification{Reason: event.ReasonInsufficientQuota}, re.Failure.Classification)
			assert.Equal(t, event.HintInsufficientQuota, re.Failure.Hint)
			assert.Equal(t, 200, re.Failure.HTTPStatus)
			assert.Equal(t, "insufficient_quota", re.Failure.ProviderCode)
			assert.Contains(t, re.Error(), "hint insufficient_quota")
			assert.NotContains(t, re.Error(), "You exceeded", "the provider's message is not safe output")
			require.Equal(t, 1, r.Server.Count(), "one POST")
			interrupted := rigtest.EventsOf(r.Rec.Events(), event.Interrupted)
			require.Len(t, interrupted, 1)
			assert.Equal(t, event.HintInsufficientQuota, interrupted[0].Failure.Hint, "the hint is in the event")
			assert.Empty(t, rigtest.EventsOf(r.Rec.Events(), event.RetryStarted))
		})
	}
}

// TestProviderHints_InsufficientQuotaInA2xxStreamWithoutHints: without
// ProviderHints (the default) the same answers stay what they were: not
// eligible, reason permanent, no hint, one POST.
func TestProviderHints_InsufficientQuotaInA2xxStreamWithoutHints(t *testing.T) {
	for name, step := range quotaSteps() {
		t.Run(name, func(t *testing.T) {
			r := rigtest.New(t, openai.New(), retry.Policy{MaxAttempts: 3, Jitter: zeroJitter}, step, okStep("never"))
			req := canaryRequest()
			req.Stream = true
			_, _, err := collect(t, r.Client.Stream(context.Background(), req))
			re := rigtest.AsRecoveryError(t, err)
			assert.Equal(t, event.Classification{Reason: event.ReasonPermanent}, re.Failure.Classification)
			assert.Equal(t, event.HintNone, re.Failure.Hint)
			assert.Equal(t, "insufficient_quota", re.Failure.ProviderCode)
			require.Equal(t, 1, r.Server.Count())
		})
	}
}

// TestProviderHints_InsufficientQuotaAfterOutput: the error frame after
// semantic output interrupts the stream (semantic_output decides, R4.4);
// no hint is recorded because none decided, and the code stays visible.
func TestProviderHints_InsufficientQuotaAfterOutput(t *testing.T) {
	r := rigtest.New(t, openai.New(), hintPolicy(3), recoursetest.SSE(roleChunk, textChunk, quotaDataFrame), okStep("never"))
	req := canaryRequest()
	req.Stream = true
	text, _, err := collect(t, r.Client.Stream(context.Background(), req))
	re := rigtest.AsRecoveryError(t, err)
	assert.Equal(t, "Hel", text)
	assert.Equal(t, event.Classification{Reason: event.ReasonSemanticOutput}, re.Failure.Classification)
	assert.Equal(t, event.HintNone, re.Failure.Hint)
	assert.Equal(t, "insufficient_quota", re.Failure.ProviderCode)
	require.Equal(t, 1, r.Server.Count())
}

// TestProviderHints_InsufficientQuotaInA2xxBody: an ordinary call answered
// in a 2xx with the exhausted-quota error object has the same reason.
func TestProviderHints_InsufficientQuotaInA2xxBody(t *testing.T) {
	r := rigtest.New(t, openai.New(), hintPolicy(3), recoursetest.JSON(200, `{"error":`+quotaObject+`}`), okStep("never"))
	_, err := r.Client.Complete(context.Background(), canaryRequest())
	re := rigtest.AsRecoveryError(t, err)
	assert.Equal(t, event.CategoryProviderResponse, re.Failure.Category)
	assert.Equal(t, event.Classification{Reason: event.ReasonInsufficientQuota}, re.Failure.Classification)
	assert.Equal(t, event.HintInsufficientQuota, re.Failure.Hint)
	require.Equal(t, 1, r.Server.Count())

	// Another provider error object in a 2xx keeps its reason.
	r = rigtest.New(t, openai.New(), hintPolicy(3), recoursetest.JSON(200, recoursetest.OpenAIError("invalid_request_error", "model_not_found", "no such model")), okStep("never"))
	_, err = r.Client.Complete(context.Background(), canaryRequest())
	re = rigtest.AsRecoveryError(t, err)
	assert.Equal(t, event.Classification{Reason: event.ReasonPermanent}, re.Failure.Classification)
	assert.Equal(t, event.HintNone, re.Failure.Hint)
}
