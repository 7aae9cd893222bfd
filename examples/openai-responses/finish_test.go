package main

import (
	"context"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/responses"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/recourse-dev/recourse/recoursetest"
)

// R19.4: a foreground NewStreaming that ends with response.incomplete (a
// client's max_output_tokens) reaches openai-go as sent: every event, the
// last one response.incomplete with its reason, Err() nil, one POST.
func TestR19_4_OpenAIGoResponsesIncompletePassesThrough(t *testing.T) {
	evs := recoursetest.ResponsesIncompleteEvents(id, "max_output_tokens", "Hel", "lo")
	srv, client, _ := rig(t, recoursetest.SSE(evs...), recoursetest.SSE(textEvents()...))
	stream := client.Responses.NewStreaming(context.Background(), responses.ResponseNewParams{
		Model: "gpt-4.1-mini", Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("hi")},
		MaxOutputTokens: openai.Int(2),
	})
	defer stream.Close()
	var last responses.ResponseStreamEventUnion
	var text string
	n := 0
	for stream.Next() {
		last = stream.Current()
		n++
		if last.Type == "response.output_text.delta" {
			text += last.Delta
		}
	}
	require.NoError(t, stream.Err(), "the provider's answer, not an error")
	assert.Equal(t, len(evs), n)
	assert.Equal(t, "Hello", text)
	assert.Equal(t, "response.incomplete", last.Type)
	assert.Equal(t, responses.ResponseStatusIncomplete, last.Response.Status)
	assert.Equal(t, "max_output_tokens", string(last.Response.IncompleteDetails.Reason))
	assert.Equal(t, 1, srv.Count())
}
