package main

import (
	"context"
	"errors"
	"net/http"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/packages/ssestream"
	"github.com/openai/openai-go/v3/responses"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/recourse-dev/recourse/event"
	"github.com/recourse-dev/recourse/layer"
	"github.com/recourse-dev/recourse/recoursetest"
)

// cancelMidStream streams a foreground response with client, cancels the
// context at the first delta and returns Stream.Err().
func cancelMidStream(t *testing.T, client openai.Client) error {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	stream := client.Responses.NewStreaming(ctx, responses.ResponseNewParams{
		Model: "gpt-4.1-mini", Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("hi")},
	})
	defer stream.Close()
	deltas := 0
	for stream.Next() {
		if stream.Current().Type == "response.output_text.delta" {
			deltas++
			cancel()
		}
	}
	require.Equal(t, 1, deltas, "the stream ran until the caller cancelled")
	return stream.Err()
}

// R9.1: cancelling the caller's context in the middle of NewStreaming ends
// the SDK's stream with the context's error, as without recourse:
// errors.Is(err, context.Canceled), no *ssestream.StreamError built from an
// in-band frame, and the *layer.RecoveryError (outcome cancelled) reachable
// with errors.As.
func TestR9_1_OpenAIGoResponsesStreamCancelledByTheCaller(t *testing.T) {
	held := func() recoursetest.Step { return recoursetest.SSE(textEvents()[:5]...).Held() }

	plainSrv := recoursetest.NewServer(held())
	t.Cleanup(plainSrv.Close)
	tr := &http.Transport{}
	defer tr.CloseIdleConnections()
	plain := openai.NewClient(option.WithBaseURL(plainSrv.URL+"/v1/"), option.WithAPIKey("sk-test"),
		option.WithHTTPClient(&http.Client{Transport: tr}), option.WithMaxRetries(0))
	require.ErrorIs(t, cancelMidStream(t, plain), context.Canceled, "without recourse")

	_, client, _ := rig(t, held())
	err := cancelMidStream(t, client)
	assert.ErrorIs(t, err, context.Canceled)
	var serr *ssestream.StreamError
	assert.False(t, errors.As(err, &serr), "no in-band frame: %v", err)
	var re *layer.RecoveryError
	require.ErrorAs(t, err, &re)
	assert.Equal(t, event.OutcomeCancelled, re.Outcome)
}
