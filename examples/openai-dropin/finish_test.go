package main

import (
	"context"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/recourse-dev/recourse/layer"
	"github.com/recourse-dev/recourse/recoursetest"
)

// R13.3: a chat stream that ends on the provider's own limit (a client's
// max_tokens: finish_reason "length", then the usage chunk and [DONE])
// reaches openai-go as sent: every chunk, Err() nil, the finish reason in
// its accumulator, one POST; the call succeeds with that finish in its
// evidence.
func TestR13_3_OpenAIGoChatLengthFinishPassesThrough(t *testing.T) {
	srv := start(t, recoursetest.SSE(recoursetest.OpenAIStreamFinish("length", "Hel", "lo")...), recoursetest.SSE(recoursetest.OpenAIStream("never")...))
	client, err := newClient(srv.URL+"/v1/", "sk-test-key", (&recorder{}).onEvent)
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	lc := &layer.Call{}
	st := client.Chat.Completions.NewStreaming(layer.WithCall(ctx, lc), openai.ChatCompletionNewParams{
		Model:     "gpt-4o-mini",
		Messages:  []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hello")},
		MaxTokens: openai.Int(2),
	})
	defer st.Close()
	var acc openai.ChatCompletionAccumulator
	for st.Next() {
		require.True(t, acc.AddChunk(st.Current()))
	}
	require.NoError(t, st.Err(), "the provider's answer, not an error")
	require.Len(t, acc.Choices, 1)
	assert.Equal(t, "Hello", acc.Choices[0].Message.Content)
	assert.Equal(t, "length", acc.Choices[0].FinishReason)
	assert.Equal(t, int64(7), acc.Usage.CompletionTokens)
	assert.Nil(t, lc.Result.Err)
	assert.Equal(t, "length", lc.Result.Response.FinishReason)
	assertStreamPOSTs(t, srv, 1)
}
