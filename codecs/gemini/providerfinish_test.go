package gemini_test

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/recourse-dev/recourse/codec"
	"github.com/recourse-dev/recourse/codecs/gemini"
)

// TestR13_3_GeminiProviderFinishMaxTokensIsTheEnd: with
// RequestInfo.ProviderFinish (a drop-in stream) MAX_TOKENS is the
// provider's answer: the stream, its usage chunk included, is accepted at
// EOF with finish reason "length", the text kept and no tool call complete
// (R13.4); SAFETY stays an incomplete completion.
func TestR13_3_GeminiProviderFinishMaxTokensIsTheEnd(t *testing.T) {
	decode := func(wire string) ([]codec.Frame, error, codec.Counts) {
		d := gemini.New().NewObserver(codec.RequestInfo{Model: "m", Operation: codec.Streaming, ProviderFinish: true}).(codec.StreamDecoder)
		d.Write([]byte(wire))
		end := d.End()
		var out []codec.Frame
		for f, ok := d.Next(); ok; f, ok = d.Next() {
			out = append(out, f)
		}
		return out, end, d.Observed()
	}
	call := `{"candidates":[{"content":{"role":"model","parts":[{"functionCall":{"name":"f","args":{"x":1}}}]}}]}`
	maxTokens := `{"candidates":[{"content":{"parts":[{"text":"x"}]},"finishReason":"MAX_TOKENS"}]}`
	frames, err, counts := decode(ev(chunkHel) + ev(call) + ev(maxTokens) + ev(chunkUse))
	require.NoError(t, err)
	require.Len(t, frames, 5)
	for _, f := range frames {
		require.NoError(t, f.Err)
	}
	last := frames[4]
	require.True(t, last.Done)
	assert.Equal(t, "length", last.FinishReason)
	assert.Equal(t, "length", last.Completion.FinishReason)
	assert.Equal(t, "Helx", last.Completion.Message.Content)
	assert.Empty(t, last.Completion.Message.ToolCalls)
	assert.Zero(t, counts.CompletedToolCalls)
	require.NotNil(t, last.Completion.Usage)
	assert.Equal(t, 3, last.Completion.Usage.OutputTokens)

	frames, _, _ = decode(ev(chunkHel) + ev(`{"candidates":[{"content":{"parts":[{"text":"x"}]},"finishReason":"SAFETY"}]}`))
	var se *codec.IncompleteError
	require.True(t, errors.As(frames[len(frames)-1].Err, &se))
	assert.Equal(t, "SAFETY", se.FinishReason)
}
