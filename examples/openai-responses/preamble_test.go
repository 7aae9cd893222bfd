package main

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/responses"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/recourse-dev/recourse/recoursetest"
)

// R13.9, R19.3: a foreground NewStreaming cut after its preamble
// (response.created, response.in_progress, output_item.added,
// content_part.added) is resent, and openai-go reads one stream: one
// response.created, one response id, sequence numbers that never go back,
// every event taken by the SDK's ResponseAccumulator (which refuses an
// event of another response).
func TestR13_9_OpenAIGoResponsesResendBeforeOutputShowsOnePreamble(t *testing.T) {
	first := recoursetest.ResponsesEvents("resp_first", "Hello")
	second := recoursetest.ResponsesEvents("resp_second", "Hel", "lo")
	srv, client, _ := rig(t, recoursetest.SSE(first...).CutEvents(4), recoursetest.SSE(second...))
	stream := client.Responses.NewStreaming(context.Background(), responses.ResponseNewParams{
		Model: "gpt-4.1-mini", Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("hi")},
	})
	defer stream.Close()
	var acc responses.ResponseAccumulator
	var seqs []int64
	created := 0
	for stream.Next() {
		ev := stream.Current()
		seqs = append(seqs, ev.SequenceNumber)
		if ev.Type == "response.created" {
			created++
		}
		var sev responses.ResponsesServerEventUnion
		require.NoError(t, json.Unmarshal([]byte(ev.RawJSON()), &sev))
		assert.NoError(t, acc.AddEvent(sev), "event %s (sequence %d)", ev.Type, ev.SequenceNumber)
	}
	require.NoError(t, stream.Err())
	assert.Equal(t, 1, created, "one preamble")
	want := make([]int64, len(second))
	for i := range want {
		want[i] = int64(i)
	}
	assert.Equal(t, want, seqs, "sequence numbers never go back")
	snap := acc.Snapshot()
	assert.Equal(t, "resp_second", snap.ResponseID)
	assert.Equal(t, "Hello", snap.OutputText())
	res, err := acc.ReconstructedResponse()
	require.NoError(t, err)
	assert.Equal(t, responses.ResponseStatusCompleted, res.Status)
	assert.Equal(t, 2, srv.Count())
}
