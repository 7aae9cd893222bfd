package responses_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/recourse-dev/recourse/codec"
)

// TestR19_4_ProviderFinishIncompleteIsTheEnd: with
// RequestInfo.ProviderFinish (a drop-in stream) response.incomplete is the
// Done frame, its finish mapped as in R19.4 (max_output_tokens → length),
// the text kept and no tool call (R13.4); without it, the
// incomplete_completion error.
func TestR19_4_ProviderFinishIncompleteIsTheEnd(t *testing.T) {
	evs := []string{evCreated(0), evCallAdded(1, 0, "call_1", "f"), evArgs(2, 0, `{"a":`),
		evMessageAdded(3, 1), evPartAdded(4, 1), evText(5, 1, "abc"), evIncomplete(6, "max_output_tokens")}
	frames, end, d := decodeStream(t, codec.RequestInfo{ProviderFinish: true}, 0, evs...)
	require.NoError(t, end)
	last := frames[len(frames)-1]
	require.NoError(t, last.Err)
	require.True(t, last.Done)
	assert.Equal(t, "length", last.FinishReason)
	require.NotNil(t, last.Completion)
	assert.Equal(t, "length", last.Completion.FinishReason)
	assert.Equal(t, "abc", last.Completion.Message.Content)
	assert.Empty(t, last.Completion.Message.ToolCalls, "a partial tool call never completes")
	assert.Zero(t, d.Observed().CompletedToolCalls)

	frames, _, _ = decodeStream(t, codec.RequestInfo{}, 0, evs...)
	var se *codec.IncompleteError
	require.ErrorAs(t, frames[len(frames)-1].Err, &se)
	assert.Equal(t, "length", se.FinishReason)
}
