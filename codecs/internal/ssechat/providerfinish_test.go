package ssechat_test

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/recourse-dev/recourse/codec"
	"github.com/recourse-dev/recourse/codecs/internal/ssechat"
)

// decodeAll writes in to a decoder for info in one Write and returns its
// frames and End.
func decodeAll(info codec.RequestInfo, in []byte) ([]codec.Frame, error, codec.Counts) {
	d := ssechat.NewFor(info)
	d.Write(in)
	var out []codec.Frame
	for f, ok := d.Next(); ok; f, ok = d.Next() {
		out = append(out, f)
	}
	end := d.End()
	return out, end, d.Observed()
}

// TestR13_3_ProviderFinishEndsAtDone: with RequestInfo.ProviderFinish (a
// drop-in stream) a length or content-filter finish is an ordinary frame
// and [DONE] ends the stream with a Done frame that keeps the finish, the
// usage and the text, and no tool call: a partial call never completes
// (R13.4). Without it the finish is the incomplete_completion error; an
// undocumented finish stays an error either way; and EOF before [DONE] is
// an incomplete stream, as after "stop".
func TestR13_3_ProviderFinishEndsAtDone(t *testing.T) {
	tool := openai(`{"tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"f","arguments":"{\"a\":"}}]}`)
	for _, reason := range []string{"length", "content_filter"} {
		in := openai(`{"role":"assistant","content":""}`) + tool + openai(`{"content":"abc"}`) + finish(reason) + usage + done
		frames, end, obs := decodeAll(codec.RequestInfo{Operation: codec.Streaming, ProviderFinish: true}, []byte(in))
		require.NoError(t, end)
		require.Len(t, frames, 6)
		for _, f := range frames {
			require.NoError(t, f.Err)
		}
		last := frames[len(frames)-1]
		require.True(t, last.Done, reason)
		assert.Equal(t, reason, last.FinishReason)
		require.NotNil(t, last.Completion)
		assert.Equal(t, reason, last.Completion.FinishReason)
		assert.Equal(t, "abc", last.Completion.Message.Content)
		assert.Empty(t, last.Completion.Message.ToolCalls, "a partial tool call never completes")
		assert.Zero(t, obs.CompletedToolCalls)
		require.NotNil(t, last.Completion.Usage)
		assert.Equal(t, 2, last.Completion.Usage.OutputTokens)
		assert.Equal(t, []byte(in), concatRaw(frames), "every byte as sent")

		typed, end, _ := decodeAll(codec.RequestInfo{Operation: codec.Streaming}, []byte(in))
		require.NoError(t, end)
		var se *codec.IncompleteError
		require.ErrorAs(t, typed[len(typed)-1].Err, &se, "without ProviderFinish: %s", reason)

		noDone := bytes.TrimSuffix([]byte(in), []byte(done))
		_, end, _ = decodeAll(codec.RequestInfo{Operation: codec.Streaming, ProviderFinish: true}, noDone)
		assert.ErrorIs(t, end, ssechat.ErrIncomplete)
		assert.ErrorIs(t, end, codec.ErrNoEndMarker, "judged as after an accepted finish")
	}
	frames, _, _ := decodeAll(codec.RequestInfo{Operation: codec.Streaming, ProviderFinish: true},
		[]byte(openai(`{"content":"abc"}`)+finish("abort")+done))
	var se *codec.IncompleteError
	require.ErrorAs(t, frames[len(frames)-1].Err, &se, "an undocumented finish stays incomplete")
	assert.Equal(t, "abort", se.FinishReason)
}

// FuzzProviderFinish decodes arbitrary bytes with and without
// RequestInfo.ProviderFinish and checks that the decoder never panics, that
// both agree on every frame before the one where the typed decoder reports
// an incomplete completion, and that a Done frame of the drop-in decoder
// whose finish is not an accepted one carries a documented finish and no
// tool call.
func FuzzProviderFinish(f *testing.F) {
	f.Add([]byte(openai(`{"content":"a"}`) + finish("length") + usage + done))
	f.Add([]byte(openai(`{"tool_calls":[{"index":0,"id":"c","function":{"name":"f","arguments":"{"}}]}`) + finish("content_filter") + done))
	f.Add([]byte(omlx(`{"content":"a"}`) + omlxFinish("length") + done))
	f.Add([]byte(openai(`{"content":"a"}`) + finish("abort") + done))
	f.Fuzz(func(t *testing.T, data []byte) {
		pass, _, _ := decodeAll(codec.RequestInfo{Operation: codec.Streaming, ProviderFinish: true}, data)
		typed, _, _ := decodeAll(codec.RequestInfo{Operation: codec.Streaming}, data)
		for i, f := range typed {
			var se *codec.IncompleteError
			if isStreamError(f.Err, &se) {
				break
			}
			require.Less(t, i, len(pass))
			require.Equal(t, viewOf(f), viewOf(pass[i]), "frame %d", i)
		}
		for _, f := range pass {
			if !f.Done || f.FinishReason == "stop" || f.FinishReason == "tool_calls" || f.FinishReason == "function_call" {
				continue
			}
			require.True(t, codec.DocumentedFinish(f.FinishReason), "finish %q", f.FinishReason)
			require.NotNil(t, f.Completion)
			require.Empty(t, f.Completion.Message.ToolCalls)
		}
	})
}

func isStreamError(err error, se **codec.IncompleteError) bool {
	s, ok := err.(*codec.IncompleteError)
	if ok {
		*se = s
	}
	return ok
}
