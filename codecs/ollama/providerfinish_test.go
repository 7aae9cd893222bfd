package ollama_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/recourse-dev/recourse/codec"
	"github.com/recourse-dev/recourse/codecs/ollama"
)

// TestR13_3_ProviderFinishDoneLengthIsTheEnd: with
// RequestInfo.ProviderFinish (a drop-in stream) a done:true line with
// done_reason "length" is the accepted end, keeping its text, metrics and
// usage but no tool call (R13.4); without it the line is the
// incomplete_completion error; an undocumented done_reason stays an error.
func TestR13_3_ProviderFinishDoneLengthIsTheEnd(t *testing.T) {
	in := toolLine(`[{"function":{"name":"f","arguments":{"a":1}}}]`) + contentOf("abc") + doneLine("length")
	decode := func(info codec.RequestInfo, in string) ([]codec.Frame, error, codec.Counts) {
		info.Operation = codec.Streaming
		d := ollama.New().NewObserver(info).(codec.StreamDecoder)
		d.Write([]byte(in))
		var out []codec.Frame
		for f, ok := d.Next(); ok; f, ok = d.Next() {
			out = append(out, f)
		}
		return out, d.End(), d.Observed()
	}
	frames, end, obs := decode(codec.RequestInfo{ProviderFinish: true}, in)
	require.NoError(t, end)
	require.Len(t, frames, 3)
	last := frames[2]
	require.NoError(t, last.Err)
	require.True(t, last.Done)
	assert.Equal(t, "length", last.FinishReason)
	require.NotNil(t, last.Completion)
	assert.Equal(t, "length", last.Completion.FinishReason)
	assert.Equal(t, "abc", last.Completion.Message.Content)
	assert.Empty(t, last.Completion.Message.ToolCalls)
	assert.Zero(t, obs.CompletedToolCalls)
	require.NotNil(t, last.Metrics, "metrics still reported (R13.6)")
	require.NotNil(t, last.Completion.Usage)

	frames, _, _ = decode(codec.RequestInfo{}, in)
	var se *codec.IncompleteError
	require.ErrorAs(t, frames[2].Err, &se)
	assert.Equal(t, "length", se.FinishReason)

	frames, _, _ = decode(codec.RequestInfo{ProviderFinish: true}, contentOf("abc")+doneLine("oom"))
	require.ErrorAs(t, frames[1].Err, &se, "an undocumented done_reason stays incomplete")
}
