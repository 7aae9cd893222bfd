package main

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/genai"

	"github.com/recourse-dev/recourse/recoursetest"
)

// R13.3: a stream that ends on the provider's own limit (finishReason
// MAX_TOKENS) reaches go-genai as sent: every chunk, the finish reason,
// no error, one request.
func TestR13_3_GenAIMaxTokensPassesThrough(t *testing.T) {
	evs := recoursetest.GeminiStream("Hel", "lo")
	for i, ev := range evs {
		evs[i] = strings.Replace(ev, `"finishReason":"STOP"`, `"finishReason":"MAX_TOKENS"`, 1)
	}
	h := newHarness(t, recoursetest.SSE(evs...), recoursetest.SSE(recoursetest.GeminiStream("never")...))
	var text strings.Builder
	var last genai.FinishReason
	for resp, err := range h.client.Models.GenerateContentStream(t.Context(), model, genai.Text("hello"), nil) {
		require.NoError(t, err, "the provider's answer, not an error")
		text.WriteString(resp.Text())
		if len(resp.Candidates) > 0 && resp.Candidates[0].FinishReason != "" {
			last = resp.Candidates[0].FinishReason
		}
	}
	assert.Equal(t, "Hello", text.String())
	assert.Equal(t, genai.FinishReasonMaxTokens, last)
	assert.Equal(t, 1, h.srv.Count())
}
