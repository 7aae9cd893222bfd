package gemini_test

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/recourse-dev/recourse/chat"
	"github.com/recourse-dev/recourse/codec"
	"github.com/recourse-dev/recourse/codecs/gemini"
)

func TestDecodeAnswer(t *testing.T) {
	body := `{"candidates":[{"content":{"role":"model","parts":[{"text":"plan","thought":true},{"text":"Hello"},{"functionCall":{"name":"f","args":{"a":1}}}]},"finishReason":"STOP"}],
		"usageMetadata":{"promptTokenCount":3,"candidatesTokenCount":4,"thoughtsTokenCount":2},"modelVersion":"gemini-2.5-flash","responseId":"r1"}`
	comp, err := gemini.New().Decode([]byte(body))
	require.NoError(t, err)
	assert.Equal(t, &chat.Completion{
		Message:      chat.Message{Role: chat.Assistant, Content: "Hello", Reasoning: "plan", ToolCalls: []chat.ToolCall{{ID: "gemini_call_0", Name: "f", Arguments: []byte(`{"a":1}`)}}},
		FinishReason: "stop", Model: "gemini-2.5-flash", ID: "r1", Usage: &chat.Usage{InputTokens: 3, OutputTokens: 6},
	}, comp)
	assert.NoError(t, gemini.New().Check([]byte(body)))
}

// A :streamGenerateContent without alt=sse answers one JSON array: it is
// decoded whole, its parts joined.
func TestDecodeArrayOfResponses(t *testing.T) {
	comp, err := gemini.New().Decode([]byte(`[{"candidates":[{"content":{"parts":[{"text":"Hel"}]}}]},{"candidates":[{"content":{"parts":[{"text":"lo"}]},"finishReason":"MAX_TOKENS"}]}]`))
	require.NoError(t, err)
	assert.Equal(t, "Hello", comp.Message.Content)
	assert.Equal(t, "length", comp.FinishReason)
}

func TestDecodeErrorsAreTyped(t *testing.T) {
	_, err := gemini.New().Decode([]byte(`{"error":{"code":503,"message":"overloaded","status":"UNAVAILABLE"}}`))
	var pe *codec.ProviderError
	require.True(t, errors.As(err, &pe))
	assert.Equal(t, "UNAVAILABLE", pe.Code)
	assert.Equal(t, 503, pe.Status)
	for _, bad := range []string{`{}`, `{"candidates":[{"content":{"parts":[{"functionCall":{"args":{}}}]}}]}`, `{"candidates":[{"content":{"parts":[{"functionCall":{"name":"f","args":"x"}}]}}]}`} {
		_, err := gemini.New().Decode([]byte(bad))
		var pr *codec.ProtocolError
		assert.True(t, errors.As(err, &pr), bad)
	}
	comp, err := gemini.New().Decode([]byte(`{"promptFeedback":{"blockReason":"SAFETY"}}`))
	require.NoError(t, err)
	assert.Equal(t, "SAFETY", comp.FinishReason)
}

// R23.2: the wait and the per-day quota are read from the body; the
// status is the error code.
func TestR23_2_ErrorBodyHints(t *testing.T) {
	c := gemini.New()
	perMinute := `{"error":{"code":429,"message":"Please retry in 58.2s.","status":"RESOURCE_EXHAUSTED","details":[
		{"@type":"type.googleapis.com/google.rpc.QuotaFailure","violations":[{"quotaMetric":"generativelanguage.googleapis.com/generate_content_free_tier_requests","quotaId":"GenerateRequestsPerMinutePerProjectPerModel-FreeTier"}]},
		{"@type":"type.googleapis.com/google.rpc.Help","links":[]},
		{"@type":"type.googleapis.com/google.rpc.RetryInfo","retryDelay":"58s"}]}}`
	assert.Equal(t, "RESOURCE_EXHAUSTED", c.ErrorCode([]byte(perMinute)))
	assert.Equal(t, codec.BodyHints{RetryDelay: 58 * time.Second, HasRetryDelay: true}, c.BodyHints([]byte(perMinute)))
	perDay := `{"error":{"code":429,"status":"RESOURCE_EXHAUSTED","details":[{"@type":"type.googleapis.com/google.rpc.QuotaFailure","violations":[{"quotaId":"GenerateRequestsPerDayPerProjectPerModel-FreeTier"}]},{"@type":"type.googleapis.com/google.rpc.RetryInfo","retryDelay":"34.07s"}]}}`
	assert.Equal(t, codec.BodyHints{RetryDelay: 34070 * time.Millisecond, HasRetryDelay: true, QuotaExhausted: true}, c.BodyHints([]byte(perDay)))
	assert.Equal(t, codec.BodyHints{RetryDelay: 900 * time.Millisecond, HasRetryDelay: true},
		c.BodyHints([]byte(`data: {"error":{"details":[{"@type":"type.googleapis.com/google.rpc.RetryInfo","retryDelay":"900ms"}]}}`)))
	for _, none := range []string{``, `{}`, `[`, `{"error":{"details":[{"@type":"x.RetryInfo","retryDelay":"-5s"}]}}`, `{"error":{"details":[{"@type":"x.RetryInfo","retryDelay":"soon"}]}}`} {
		assert.Equal(t, codec.BodyHints{}, c.BodyHints([]byte(none)), none)
	}
	assert.Equal(t, "RATE_LIMIT_EXCEEDED", c.ErrorCode([]byte(`[{"error":{"details":[{"@type":"type.googleapis.com/google.rpc.ErrorInfo","reason":"RATE_LIMIT_EXCEEDED"}]}}]`)))
}
