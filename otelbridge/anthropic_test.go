package otelbridge_test

import (
	"context"
	"io"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/recourse-dev/recourse/codecs/anthropic"
	"github.com/recourse-dev/recourse/layers/retry"
	"github.com/recourse-dev/recourse/recoursetest"
)

// TestR22_2_AnthropicStreamSpans: a Messages API stream overloaded in-band
// before content, then answered, has gen_ai.provider.name "anthropic",
// two attempt spans (the first's error.type "529") and the usage of the
// answer; no span holds the prompt or the key.
func TestR22_2_AnthropicStreamSpans(t *testing.T) {
	overload := recoursetest.AnthropicStream(append(recoursetest.AnthropicStart(), recoursetest.AnthropicErrorEvent("overloaded_error", "Overloaded"))...)
	f := newFixture(t, anthropic.New(anthropic.WithDefaultMaxTokens(64)), retry.Policy{MaxAttempts: 2}, nil,
		overload, recoursetest.AnthropicStream(recoursetest.AnthropicEvents("Hi")...))
	req := request(recoursetest.AnthropicModel)
	req.Stream = true
	resp, err := f.http.Do(f.post(context.Background(), f.endpoint(), req))
	require.NoError(t, err)
	_, err = io.Copy(io.Discard, resp.Body)
	require.NoError(t, err)
	require.NoError(t, resp.Body.Close())
	logical, attempts := f.tree()
	la := attrs(logical.Attributes())
	assert.Equal(t, "anthropic", la["gen_ai.provider.name"].AsString())
	assert.Equal(t, "success", la["recourse.outcome"].AsString())
	assert.Equal(t, int64(12), la["gen_ai.usage.input_tokens"].AsInt64())
	assert.Equal(t, int64(7), la["gen_ai.usage.output_tokens"].AsInt64())
	require.Len(t, attempts, 2)
	assert.Equal(t, "529", attrs(attempts[0].Attributes())["error.type"].AsString())
	for _, s := range append(attempts, logical) {
		for _, kv := range s.Attributes() {
			assert.NotContains(t, kv.Value.Emit(), "CANARY")
		}
	}
}

// TestR22_10_ADiscardedAttemptSpanCarriesItsUsage: the span of an attempt
// overloaded in-band after message_start carries the usage that
// message_start reported, under the names the logical span uses; the
// answered attempt's span carries none of its own.
func TestR22_10_ADiscardedAttemptSpanCarriesItsUsage(t *testing.T) {
	overload := recoursetest.AnthropicStream(append(recoursetest.AnthropicStart(), recoursetest.AnthropicErrorEvent("overloaded_error", "Overloaded"))...)
	f := newFixture(t, anthropic.New(anthropic.WithDefaultMaxTokens(64)), retry.Policy{MaxAttempts: 2}, nil,
		overload, recoursetest.AnthropicStream(recoursetest.AnthropicEvents("Hi")...))
	req := request(recoursetest.AnthropicModel)
	req.Stream = true
	resp, err := f.http.Do(f.post(context.Background(), f.endpoint(), req))
	require.NoError(t, err)
	_, err = io.Copy(io.Discard, resp.Body)
	require.NoError(t, err)
	require.NoError(t, resp.Body.Close())
	_, attempts := f.tree()
	require.Len(t, attempts, 2)
	first := attrs(attempts[0].Attributes())
	_, ok := first["gen_ai.usage.input_tokens"]
	require.True(t, ok, "the discarded attempt's span has its input tokens")
	assert.Equal(t, int64(12), first["gen_ai.usage.input_tokens"].AsInt64())
	assert.Equal(t, int64(1), first["gen_ai.usage.output_tokens"].AsInt64())
	_, ok = attrs(attempts[1].Attributes())["gen_ai.usage.input_tokens"]
	assert.False(t, ok, "the answered attempt's usage is on the logical span")
}
