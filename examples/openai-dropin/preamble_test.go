package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/recourse-dev/recourse/recoursetest"
)

// R13.9: a chat stream cut after its role-only first chunk is resent, and
// openai-go reads one stream: one role chunk, one completion id, and its
// ChatCompletionAccumulator takes every chunk (it refuses a chunk of
// another completion).
func TestR13_9_OpenAIGoChatResendBeforeOutputShowsOneRoleChunk(t *testing.T) {
	second := recoursetest.OpenAIStream("Hel", "lo")
	first := strings.Replace(second[0], recoursetest.OpenAIID, "chatcmpl-first", 1)
	srv := start(t, recoursetest.SSE(first).CutEvents(1), recoursetest.SSE(second...))
	rec := &recorder{}
	client, err := newClient(srv.URL+"/v1/", "sk-test-key", rec.onEvent)
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	st := client.Chat.Completions.NewStreaming(ctx, openai.ChatCompletionNewParams{
		Model:    "gpt-4o-mini",
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hello")},
	})
	defer st.Close()
	var acc openai.ChatCompletionAccumulator
	roles, chunks := 0, 0
	for st.Next() {
		ch := st.Current()
		chunks++
		assert.True(t, acc.AddChunk(ch), "chunk %d belongs to the accumulated completion", chunks)
		for _, c := range ch.Choices {
			if c.Delta.Role != "" {
				roles++
			}
		}
	}
	require.NoError(t, st.Err())
	assert.Equal(t, 1, roles, "one role chunk")
	assert.Equal(t, len(second)-1, chunks, "the resent stream's chunks, each once")
	assert.Equal(t, recoursetest.OpenAIID, acc.ID)
	require.Len(t, acc.Choices, 1)
	assert.Equal(t, "Hello", acc.Choices[0].Message.Content)
	assertStreamPOSTs(t, srv, 2)
}
