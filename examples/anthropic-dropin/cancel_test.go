package main

import (
	"context"
	"errors"
	"net/http"
	"testing"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/recourse-dev/recourse/event"
	"github.com/recourse-dev/recourse/layer"
	"github.com/recourse-dev/recourse/recoursetest"
)

// cancelMidStream streams a message with client, cancels the context at
// the first text delta and returns the stream's Err.
func cancelMidStream(t *testing.T, client anthropic.Client) error {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	s := client.Messages.NewStreaming(ctx, params())
	defer s.Close()
	deltas := 0
	for s.Next() {
		if ev := s.Current(); ev.Type == "content_block_delta" && ev.Delta.Text != "" {
			deltas++
			cancel()
		}
	}
	require.Equal(t, 1, deltas, "the stream ran until the caller cancelled")
	return s.Err()
}

// R9.1: cancelling the caller's context in the middle of NewStreaming
// ends anthropic-sdk-go's stream with the context's error, as without
// recourse, not with an *anthropic.Error built from an in-band error
// event; errors.As still finds the *layer.RecoveryError.
func TestR9_1_SDKStreamCancelledByTheCaller(t *testing.T) {
	held := func() recoursetest.Step {
		return recoursetest.AnthropicStream(recoursetest.AnthropicEvents("Hel", "lo")[:4]...).Held()
	}

	plainSrv := recoursetest.NewServer(held())
	defer plainSrv.Close()
	tr := &http.Transport{}
	defer tr.CloseIdleConnections()
	plain := anthropic.NewClient(option.WithBaseURL(plainSrv.URL), option.WithAPIKey("sk-ant-test-key"),
		option.WithHTTPClient(&http.Client{Transport: tr}), option.WithMaxRetries(0))
	require.ErrorIs(t, cancelMidStream(t, plain), context.Canceled, "without recourse")

	m := newMatrix(t, held())
	err := cancelMidStream(t, m.client)
	assert.ErrorIs(t, err, context.Canceled)
	var aerr *anthropic.Error
	assert.False(t, errors.As(err, &aerr), "no in-band error event: %v", err)
	var re *layer.RecoveryError
	require.ErrorAs(t, err, &re)
	assert.Equal(t, event.OutcomeCancelled, re.Outcome)
}
