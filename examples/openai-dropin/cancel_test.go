package main

import (
	"context"
	"errors"
	"net/http"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/packages/ssestream"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/recourse-dev/recourse/event"
	"github.com/recourse-dev/recourse/layer"
	"github.com/recourse-dev/recourse/recoursetest"
)

// cancelChatMidStream streams a chat completion with client, cancels the
// context at the first content and returns Stream.Err().
func cancelChatMidStream(t *testing.T, client openai.Client) error {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	st := client.Chat.Completions.NewStreaming(ctx, openai.ChatCompletionNewParams{
		Model:    "gpt-4o-mini",
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hello")},
	})
	defer st.Close()
	contents := 0
	for st.Next() {
		for _, c := range st.Current().Choices {
			if c.Delta.Content != "" {
				contents++
				cancel()
			}
		}
	}
	require.Equal(t, 1, contents, "the stream ran until the caller cancelled")
	return st.Err()
}

// R9.1: cancelling the caller's context in the middle of a chat
// NewStreaming ends the SDK's stream with the context's error, as without
// recourse, not with a *ssestream.StreamError built from an in-band frame;
// errors.As still finds the *layer.RecoveryError.
func TestR9_1_OpenAIGoChatStreamCancelledByTheCaller(t *testing.T) {
	held := func() recoursetest.Step {
		return recoursetest.SSE(recoursetest.OpenAIStream("Hel", "lo")[:2]...).Held()
	}

	plainSrv := start(t, held())
	tr := &http.Transport{}
	defer tr.CloseIdleConnections()
	plain := openai.NewClient(option.WithBaseURL(plainSrv.URL+"/v1/"), option.WithAPIKey("sk-test-key"),
		option.WithHTTPClient(&http.Client{Transport: tr}), option.WithMaxRetries(0))
	require.ErrorIs(t, cancelChatMidStream(t, plain), context.Canceled, "without recourse")

	srv := start(t, held())
	client, err := newClient(srv.URL+"/v1/", "sk-test-key", (&recorder{}).onEvent)
	require.NoError(t, err)
	err = cancelChatMidStream(t, client)
	assert.ErrorIs(t, err, context.Canceled)
	var serr *ssestream.StreamError
	assert.False(t, errors.As(err, &serr), "no in-band frame: %v", err)
	var re *layer.RecoveryError
	require.ErrorAs(t, err, &re)
	assert.Equal(t, event.OutcomeCancelled, re.Outcome)
}
