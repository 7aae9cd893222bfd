package gemini_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/recourse-dev/recourse/codec"
	"github.com/recourse-dev/recourse/codecs/gemini"
)

// decodeStream writes wire to a fresh stream decoder in pieces of n bytes
// and returns its frames and End's error.
func decodeStream(t *testing.T, wire string, n int) ([]codec.Frame, error, codec.Counts) {
	t.Helper()
	d := gemini.New().NewObserver(codec.RequestInfo{Model: "m", Operation: codec.Streaming}).(codec.StreamDecoder)
	var out []codec.Frame
	take := func() {
		for {
			f, ok := d.Next()
			if !ok {
				return
			}
			out = append(out, f)
		}
	}
	for i := 0; i < len(wire); i += n {
		d.Write([]byte(wire[i:min(i+n, len(wire))]))
		take()
	}
	err := d.End()
	take()
	return out, err, d.Observed()
}

func ev(data string) string { return "data: " + data + "\r\n\r\n" }

const (
	chunkHel  = `{"candidates":[{"content":{"role":"model","parts":[{"text":"Hel"}]}}],"modelVersion":"gemini-2.5-flash"}`
	chunkLo   = `{"candidates":[{"content":{"role":"model","parts":[{"text":"lo"}]},"finishReason":"STOP"}]}`
	chunkUse  = `{"candidates":[{"content":{"role":"model","parts":[{"text":""}]}}],"usageMetadata":{"promptTokenCount":2,"candidatesTokenCount":3}}`
	chunkCall = `{"candidates":[{"content":{"role":"model","parts":[{"functionCall":{"name":"f","args":{"x":1}}}]},"finishReason":"STOP"}]}`
)

// R23.5: STOP is accepted at EOF, the usage chunk after it included, in
// every split; the Done frame holds the text and the evidence.
func TestR23_5_StopIsAcceptedAtEOF(t *testing.T) {
	wire := ev(chunkHel) + ev(chunkLo) + ev(chunkUse)
	for _, n := range []int{1, 7, len(wire)} {
		frames, err, counts := decodeStream(t, wire, n)
		require.NoError(t, err)
		require.Len(t, frames, 4)
		last := frames[3]
		assert.True(t, last.Done)
		assert.Nil(t, last.Raw)
		assert.Equal(t, "Hello", last.Completion.Message.Content)
		assert.Equal(t, "stop", last.Completion.FinishReason)
		assert.Equal(t, 3, last.Completion.Usage.OutputTokens)
		assert.Equal(t, int64(5), counts.ContentBytes)
		var raw strings.Builder
		for _, f := range frames {
			raw.Write(f.Raw)
		}
		want := wire
		if n == 1 {
			// Inherent to SSE framing: "\r" completes the last event, so a
			// final "\n" written alone belongs to no frame (go-genai and
			// the JS clients read the event without it).
			want = strings.TrimSuffix(wire, "\n")
		}
		assert.Equal(t, want, raw.String(), "the frames' bytes are the stream")
	}
}

// A function call arrives whole: one fragment, one completed call.
func TestStreamFunctionCallIsWhole(t *testing.T) {
	frames, err, counts := decodeStream(t, ev(chunkCall), 5)
	require.NoError(t, err)
	require.Len(t, frames, 2)
	assert.Len(t, frames[0].Fragments, 1)
	assert.Equal(t, int64(1), counts.ToolFragments)
	assert.Equal(t, int64(1), counts.CompletedToolCalls)
	assert.Equal(t, `{"x":1}`, string(frames[1].Completion.Message.ToolCalls[0].Arguments))
}

// MAX_TOKENS and the other finish reasons end the stream at once as an
// incomplete completion (R13.3).
func TestR23_5_MaxTokensIsIncomplete(t *testing.T) {
	for reason, want := range map[string]string{"MAX_TOKENS": "length", "SAFETY": "SAFETY", "RECITATION": "RECITATION"} {
		frames, err, _ := decodeStream(t, ev(chunkHel)+ev(`{"candidates":[{"content":{"parts":[{"text":"x"}]},"finishReason":"`+reason+`"}]}`)+ev(chunkUse), 3)
		require.NoError(t, err)
		require.Len(t, frames, 2, reason)
		var se *codec.IncompleteError
		require.True(t, errors.As(frames[1].Err, &se), reason)
		assert.Equal(t, want, se.FinishReason)
		assert.Equal(t, "x", frames[1].Content, "the frame keeps its content")
		assert.Empty(t, frames[1].Completion.Message.Content, "evidence only")
	}
}

// R23.5: a long decode's CONTINUATION is neither an incomplete finish nor a
// failure: the hop is accepted at EOF, and a checkpoint chunk (a token
// without a finish) is an ordinary frame.
func TestR23_5_ContinuationIsNeitherAFinishNorAFailure(t *testing.T) {
	checkpoint := `{"candidates":[{"content":{"parts":[{"text":"part"}]},"continuationToken":"Q0tQVA=="}]}`
	hop := `{"candidates":[{"content":{"parts":[{"text":" one"}]},"finishReason":"CONTINUATION","continuationToken":"SE9Q"}]}`
	frames, err, _ := decodeStream(t, ev(checkpoint)+ev(hop), 4)
	require.NoError(t, err)
	require.Len(t, frames, 3)
	assert.NoError(t, frames[0].Err)
	assert.NoError(t, frames[1].Err)
	assert.True(t, frames[2].Done)
	assert.Equal(t, "CONTINUATION", frames[2].Completion.FinishReason)
	assert.Equal(t, "part one", frames[2].Completion.Message.Content)
	_, err, _ = decodeStream(t, ev(checkpoint), 4)
	assert.ErrorIs(t, err, gemini.ErrIncompleteStream, "a checkpoint is not an end")
}

// R23.3: an in-band error event is a provider error naming its status.
func TestR23_3_InBandErrorNamesItsStatus(t *testing.T) {
	frames, err, _ := decodeStream(t, ev(chunkHel)+ev(`{"error":{"code":503,"message":"The model is overloaded.","status":"UNAVAILABLE"}}`), 9)
	require.NoError(t, err)
	require.Len(t, frames, 2)
	var pe *codec.ProviderError
	require.True(t, errors.As(frames[1].Err, &pe))
	assert.Equal(t, 503, pe.Status)
	assert.Equal(t, "UNAVAILABLE", pe.Code)
	assert.NotEmpty(t, frames[1].Raw, "the error frame keeps its evidence")
}

// EOF before a finish reason, garbage and a JSON error document in place of
// the stream are failures, never an accepted end.
func TestStreamFailures(t *testing.T) {
	_, err, _ := decodeStream(t, ev(chunkHel), 2)
	assert.ErrorIs(t, err, gemini.ErrIncompleteStream)
	_, err, _ = decodeStream(t, ev(chunkHel)+"data: "+chunkLo, 2)
	assert.ErrorIs(t, err, gemini.ErrIncompleteStream, "a finish without its blank line was cut")
	frames, _, _ := decodeStream(t, ev(`{"candidates":[`), 2)
	var pr *codec.ProtocolError
	require.Len(t, frames, 1)
	assert.True(t, errors.As(frames[0].Err, &pr))
	_, err, _ = decodeStream(t, `{"error":{"code":429,"status":"RESOURCE_EXHAUSTED"}}`, 5)
	var pe *codec.ProviderError
	require.True(t, errors.As(err, &pe))
	assert.Equal(t, "RESOURCE_EXHAUSTED", pe.Code)
	frames, err, _ = decodeStream(t, ": keepalive\n\n"+ev(chunkLo), 3)
	require.NoError(t, err)
	assert.True(t, frames[0].Keepalive)
}

// Events are decoded, not pattern-matched (R14.2): an escaped key means
// what it decodes to, a member of the wrong type is a protocol error.
func TestStreamChunksAreDecodedNotMatched(t *testing.T) {
	frames, err, _ := decodeStream(t, ev(`{"candidates":[{"content":{"parts":[{"te\u0078t":"a\u00e9"},{"text":"\"text\":\"x\""}]},"finishReason":"STOP"}]}`), 4)
	require.NoError(t, err)
	assert.Equal(t, `aé"text":"x"`, frames[0].Content)
	for _, bad := range []string{`{"candidates":"x"}`, `{"candidates":[{"content":{"parts":[{"text":5}]}}]}`, `{"usageMetadata":{"promptTokenCount":1.5}}`, `{"candidates":[{"content":{"parts":[{"thought":"yes"}]}}]}`, `{"error":"x"}`} {
		frames, _, _ := decodeStream(t, ev(bad), 7)
		require.Len(t, frames, 1, bad)
		var pr *codec.ProtocolError
		assert.True(t, errors.As(frames[0].Err, &pr), bad)
	}
}
