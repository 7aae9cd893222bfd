package responses_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/recourse-dev/recourse/chat"
	"github.com/recourse-dev/recourse/codec"
	"github.com/recourse-dev/recourse/codecs/openai/responses"
)

// decodeStream feeds events to a new decoder in pieces of n bytes (the
// whole stream when n is 0) and returns every frame and End's error.
func decodeStream(t *testing.T, info codec.RequestInfo, n int, evs ...string) ([]codec.Frame, error, *responses.StreamDecoder) {
	t.Helper()
	info.Operation = codec.Streaming
	d, ok := responses.New().NewObserver(info).(*responses.StreamDecoder)
	require.True(t, ok, "a streaming observer is a *StreamDecoder")
	all := strings.Join(evs, "")
	if n <= 0 {
		n = len(all)
	}
	var out []codec.Frame
	for i := 0; i < len(all); i += n {
		d.Write([]byte(all[i:min(i+n, len(all))]))
		for f, ok := d.Next(); ok; f, ok = d.Next() {
			out = append(out, f)
		}
	}
	return out, d.End(), d
}

// TestR19_3_EventClassificationMakesCountsExact: lifecycle events are
// frames without evidence, each output event adds exactly its decoded bytes
// or one fragment, and Observed is the sum of the frames' Semantic counts —
// whatever the split.
func TestR19_3_EventClassificationMakesCountsExact(t *testing.T) {
	evs := []string{
		": keep-alive\n\n",
		evCreated(0), evInProgress(1),
		evReasoningAdded(2, 0), evSummary(3, 0, "Hmm, "), evReasoningText(4, 0, "é🙂"),
		evMessageAdded(5, 1), evPartAdded(6, 1), evText(7, 1, "Hel"), evText(8, 1, "lo"), evTextDone(9, 1, "Hello"),
		evCallAdded(10, 2, "call_1", "weather"), evArgs(11, 2, `{"city":`), evArgs(12, 2, `"Paris"}`),
		evCallDone(13, 2, "call_1", "weather", `{"city":"Paris"}`),
		evCompleted(14),
	}
	type want struct {
		keepalive bool
		sem       codec.Counts
	}
	wants := []want{
		{keepalive: true},
		{}, {},
		{}, {sem: codec.Counts{ReasoningBytes: 5}}, {sem: codec.Counts{ReasoningBytes: 6}},
		{}, {}, {sem: codec.Counts{ContentBytes: 3}}, {sem: codec.Counts{ContentBytes: 2}}, {},
		{sem: codec.Counts{ToolFragments: 1}}, {sem: codec.Counts{ToolFragments: 1}}, {sem: codec.Counts{ToolFragments: 1}},
		{},
		{sem: codec.Counts{CompletedToolCalls: 1}},
	}
	for _, n := range []int{0, 1, 7, 64} {
		frames, end, d := decodeStream(t, codec.RequestInfo{}, n, evs...)
		require.NoError(t, end)
		require.Len(t, frames, len(wants), "one frame per event, split %d", n)
		var sum codec.Counts
		var raw strings.Builder
		for i, f := range frames {
			assert.Equal(t, wants[i].keepalive, f.Keepalive, "frame %d", i)
			assert.Equal(t, wants[i].sem, f.Semantic(), "frame %d split %d", i, n)
			assert.NoError(t, f.Err, "frame %d", i)
			sum = sum.Add(f.Semantic())
			raw.Write(f.Raw)
			if !f.Keepalive {
				assert.Equal(t, i, f.Index, "frames are numbered from 1, keepalives have none")
			}
		}
		assert.Equal(t, sum, d.Observed(), "Observed is the frames' sum")
		assert.Equal(t, strings.Join(evs, ""), raw.String(), "every byte is in exactly one frame's Raw")
		done := frames[len(frames)-1]
		require.True(t, done.Done)
		assert.Equal(t, &chat.Completion{
			Message: chat.Message{Role: chat.Assistant, Content: "Hello", Reasoning: "Hmm, é🙂",
				ToolCalls: []chat.ToolCall{{ID: "call_1", Name: "weather", Arguments: json.RawMessage(`{"city":"Paris"}`)}}},
			FinishReason: "tool_calls", Model: respModel, ID: respID, Usage: &chat.Usage{InputTokens: 12, OutputTokens: 7},
		}, done.Completion)
		assert.Equal(t, respID, d.ResponseID())
		seq, ok := d.DeliveredSequence()
		assert.True(t, ok)
		assert.Equal(t, int64(14), seq)
	}
}

// The resume position counts only frames that Next handed over.
func TestR19_3_DeliveredSequenceFollowsNext(t *testing.T) {
	d := responses.NewStreamDecoder(codec.RequestInfo{Operation: codec.Streaming})
	_, ok := d.DeliveredSequence()
	assert.False(t, ok)
	assert.Equal(t, "", d.ResponseID())
	d.Write([]byte(evCreated(5) + ": ping\n\n" + evText(6, 0, "a") + evText(7, 0, "b")))
	assert.Equal(t, respID, d.ResponseID(), "known once response.created is decoded")
	_, ok = d.DeliveredSequence()
	assert.False(t, ok, "nothing handed over yet")
	f, ok := d.Next()
	require.True(t, ok)
	assert.False(t, f.Keepalive)
	seq, ok := d.DeliveredSequence()
	assert.Equal(t, []any{int64(5), true}, []any{seq, ok})
	seq, ok = d.FrameSequence()
	assert.Equal(t, []any{int64(5), true}, []any{seq, ok}, "the frame Next just returned")
	_, _ = d.Next() // the keepalive carries no sequence number
	_, ok = d.FrameSequence()
	assert.False(t, ok, "a keepalive has no sequence number")
	seq, _ = d.DeliveredSequence()
	assert.Equal(t, int64(5), seq, "the last one handed over stays")
	_, _ = d.Next()
	seq, _ = d.DeliveredSequence()
	assert.Equal(t, int64(6), seq, "the frame of sequence 7 is still queued")
	_, _ = d.Next()
	seq, _ = d.DeliveredSequence()
	assert.Equal(t, int64(7), seq)
}

// TestR19_4_StreamEnds: completed is accepted, incomplete is an
// incomplete_completion with the mapped finish reason and evidence only, a
// missing terminal event or [DONE] fails closed.
func TestR19_4_StreamEnds(t *testing.T) {
	t.Run("incomplete", func(t *testing.T) {
		for reason, finish := range map[string]string{"max_output_tokens": "length", "content_filter": "content_filter", "": "incomplete"} {
			frames, end, _ := decodeStream(t, codec.RequestInfo{}, 0, evCreated(0), evText(1, 0, "Once"), evIncomplete(2, reason))
			require.NoError(t, end)
			last := frames[len(frames)-1]
			var ie *codec.IncompleteError
			require.ErrorAs(t, last.Err, &ie)
			assert.Equal(t, codec.IncompleteError{FinishReason: finish}, *ie)
			assert.Equal(t, &chat.Completion{FinishReason: finish, Model: respModel, ID: respID, Usage: &chat.Usage{InputTokens: 12, OutputTokens: 7}}, last.Completion,
				"evidence only: no message")
			assert.False(t, last.Done)
		}
	})
	t.Run("missing terminal", func(t *testing.T) {
		frames, end, _ := decodeStream(t, codec.RequestInfo{}, 0, textStream("Hi")[:6]...)
		assert.ErrorIs(t, end, responses.ErrIncomplete)
		for _, f := range frames {
			assert.False(t, f.Done)
		}
	})
	t.Run("terminal without its blank line", func(t *testing.T) {
		evs := textStream("Hi")
		last := evs[len(evs)-1]
		evs[len(evs)-1] = last[:len(last)-1]
		_, end, _ := decodeStream(t, codec.RequestInfo{}, 0, evs...)
		assert.ErrorIs(t, end, responses.ErrIncomplete)
	})
	t.Run("done sentinel", func(t *testing.T) {
		frames, end, _ := decodeStream(t, codec.RequestInfo{}, 0, evCreated(0), evText(1, 0, "Hi"), "data: [DONE]\n\n")
		require.NoError(t, end)
		var pe *codec.ProtocolError
		assert.ErrorAs(t, frames[len(frames)-1].Err, &pe)
	})
	t.Run("drop text", func(t *testing.T) {
		frames, end, _ := decodeStream(t, codec.RequestInfo{DropText: true, TypedFrames: true}, 0, textStream("Hel", "lo")...)
		require.NoError(t, end)
		last := frames[len(frames)-1]
		require.True(t, last.Done)
		assert.Equal(t, "", last.Completion.Message.Content)
		assert.Equal(t, "stop", last.FinishReason)
		for _, f := range frames {
			assert.Nil(t, f.Raw, "typed frames carry no Raw")
		}
	})
	t.Run("refusal", func(t *testing.T) {
		frames, end, _ := decodeStream(t, codec.RequestInfo{}, 0, evCreated(0), evRefusal(1, 0, "No."), evCompleted(2))
		require.NoError(t, end)
		assert.Equal(t, codec.Counts{ContentBytes: 3}, frames[1].Semantic())
		last := frames[len(frames)-1]
		require.True(t, last.Done)
		assert.Equal(t, "refusal", last.Completion.FinishReason)
		assert.Equal(t, "No.", last.Completion.Message.Content)
	})
	t.Run("bytes after the end are ignored", func(t *testing.T) {
		frames, end, _ := decodeStream(t, codec.RequestInfo{}, 0, append(textStream("Hi"), evText(9, 0, "more"), "garbage")...)
		require.NoError(t, end)
		assert.True(t, frames[len(frames)-1].Done)
	})
}

// TestR19_6_StreamProviderErrors: response.failed and an error event are
// in-band provider errors with the code and message as sent.
func TestR19_6_StreamProviderErrors(t *testing.T) {
	rows := map[string]struct {
		ev   string
		want codec.ProviderError
	}{
		"failed":             {evFailed(2, "server_error", "The model failed."), codec.ProviderError{Code: "server_error", Message: "The model failed."}},
		"error event":        {evError(2, "rate_limit_exceeded", "Slow down."), codec.ProviderError{Code: "rate_limit_exceeded", Message: "Slow down."}},
		"data type error":    {`data: {"type":"error","code":"c","message":"m"}` + "\n\n", codec.ProviderError{Code: "c", Message: "m"}},
		"nested error":       {"event: error\ndata: {\"error\":{\"code\":\"c\",\"message\":\"m\"}}\n\n", codec.ProviderError{Code: "c", Message: "m"}},
		"error without data": {"event: error\n\n", codec.ProviderError{}},
		"error not json":     {"event: error\ndata: upstream died\n\n", codec.ProviderError{}},
		"own error frame":    {string(responses.New().ErrorFrame("recourse: stream interrupted_stream")), codec.ProviderError{Code: "recourse_error", Message: "recourse: stream interrupted_stream"}},
	}
	for name, r := range rows {
		t.Run(name, func(t *testing.T) {
			frames, end, _ := decodeStream(t, codec.RequestInfo{}, 0, evCreated(0), evInProgress(1), r.ev, evCompleted(3))
			require.NoError(t, end, "the error frame ends the stream")
			last := frames[len(frames)-1]
			var pe *codec.ProviderError
			require.ErrorAs(t, last.Err, &pe)
			assert.Equal(t, r.want, *pe)
			assert.Equal(t, r.ev, string(last.Raw), "an error frame keeps its Raw")
		})
	}
	t.Run("plain JSON error answer", func(t *testing.T) {
		_, end, _ := decodeStream(t, codec.RequestInfo{}, 3, `{"error":{"code":"server_error","message":"x"}}`)
		var pe *codec.ProviderError
		require.ErrorAs(t, end, &pe)
		assert.Equal(t, "server_error", pe.Code)
	})
}

// TestR19_7_StreamToolCalls: output_item.added starts a call with its
// call_id and name, argument deltas are fragments of the same index, and
// the Done frame carries the assembled calls in output order; the done
// item's arguments win.
func TestR19_7_StreamToolCalls(t *testing.T) {
	frames, end, d := decodeStream(t, codec.RequestInfo{}, 5,
		evCreated(0),
		evCallAdded(1, 1, "call_b", "clock"), evArgs(2, 1, `{}`),
		evCallAdded(3, 0, "call_a", "weather"), evArgs(4, 0, `{"city"`), evArgs(5, 0, `:"Paris"}`),
		evCallDone(6, 1, "call_b", "clock", `{"tz":"UTC"}`),
		evCompleted(7))
	require.NoError(t, end)
	assert.Equal(t, []chat.ToolCallFragment{{Index: 1, ID: "call_b", Name: "clock"}}, frames[1].Fragments)
	assert.Equal(t, []chat.ToolCallFragment{{Index: 1, Arguments: "{}"}}, frames[2].Fragments)
	assert.Equal(t, []chat.ToolCallFragment{{Index: 0, Arguments: `:"Paris"}`}}, frames[5].Fragments)
	last := frames[len(frames)-1]
	require.True(t, last.Done)
	assert.Equal(t, "tool_calls", last.FinishReason)
	assert.Equal(t, []chat.ToolCall{
		{ID: "call_a", Name: "weather", Arguments: json.RawMessage(`{"city":"Paris"}`)},
		{ID: "call_b", Name: "clock", Arguments: json.RawMessage(`{"tz":"UTC"}`)},
	}, last.Completion.Message.ToolCalls)
	assert.Equal(t, codec.Counts{ToolFragments: 5, CompletedToolCalls: 2}, d.Observed())
}

// Unknown output events fail closed: observed, not delivered.
func TestR19_3_UnknownOutputEventsAreObserved(t *testing.T) {
	frames, _, d := decodeStream(t, codec.RequestInfo{}, 0, evCreated(0),
		sseEvent("response.audio.transcript.delta", 1, map[string]any{"delta": "abc"}),
		sseEvent("response.output_item.added", 2, map[string]any{"output_index": 1, "item": map[string]any{"type": "web_search_call"}}),
		sseEvent("response.something_new", 3, map[string]any{"x": 1}))
	for _, f := range frames {
		assert.False(t, f.Semantic().Any(), "nothing unknown is delivered")
		assert.NoError(t, f.Err)
	}
	assert.Equal(t, codec.Counts{ContentBytes: 3, ToolFragments: 1}, d.Observed())
}

func TestR19_3_MalformedEventsAreProtocolErrors(t *testing.T) {
	rows := map[string]string{
		"not json":          "data: {\n\n",
		"not an object":     "data: [1]\n\n",
		"not utf8":          "data: {\"type\":\"response.output_text.delta\",\"delta\":\"\xff\"}\n\n",
		"no type":           "data: {\"delta\":\"x\"}\n\n",
		"type not string":   "data: {\"type\":1}\n\n",
		"bad sequence":      "data: {\"type\":\"response.created\",\"sequence_number\":\"1\"}\n\n",
		"negative sequence": "data: {\"type\":\"response.created\",\"sequence_number\":-1}\n\n",
		"delta not string":  "data: {\"type\":\"response.output_text.delta\",\"delta\":1}\n\n",
		"response not obj":  "data: {\"type\":\"response.created\",\"response\":1}\n\n",
		"response id":       "data: {\"type\":\"response.created\",\"response\":{\"id\":1}}\n\n",
		"item not object":   "data: {\"type\":\"response.output_item.added\",\"item\":1}\n\n",
		"call name":         "data: {\"type\":\"response.output_item.added\",\"output_index\":0,\"item\":{\"type\":\"function_call\",\"name\":1}}\n\n",
		"call index":        "data: {\"type\":\"response.output_item.added\",\"output_index\":-1,\"item\":{\"type\":\"function_call\"}}\n\n",
		"args index":        "data: {\"type\":\"response.function_call_arguments.delta\",\"output_index\":\"0\",\"delta\":\"\"}\n\n",
		"done item args":    "data: {\"type\":\"response.output_item.done\",\"output_index\":0,\"item\":{\"type\":\"function_call\",\"arguments\":{}}}\n\n",
		"completed usage":   "data: {\"type\":\"response.completed\",\"response\":{\"status\":\"completed\",\"usage\":{\"input_tokens\":\"1\"}}}\n\n",
		"oversized event":   "data: \"" + strings.Repeat("x", 8<<20) + "\"\n\n",
	}
	for name, ev := range rows {
		t.Run(name, func(t *testing.T) {
			frames, end, d := decodeStream(t, codec.RequestInfo{}, 0, evCreated(0), ev, evCompleted(9))
			require.NoError(t, end)
			last := frames[len(frames)-1]
			var pe *codec.ProtocolError
			require.ErrorAs(t, last.Err, &pe)
			assert.Equal(t, 0, last.Index, "a malformed frame has no index")
			assert.False(t, d.Observed().Any())
			assert.False(t, errors.Is(last.Err, responses.ErrIncomplete))
		})
	}
}

// The codec's own error frame is one SSE event whose data is valid JSON
// with both the provider's error-event members and an "error" object.
func TestR19_6_ErrorFrameShape(t *testing.T) {
	safe := `recourse: stream interrupted_stream "quoted" <html>`
	frame := string(responses.New().ErrorFrame(safe))
	require.True(t, strings.HasPrefix(frame, "event: error\ndata: "))
	require.True(t, strings.HasSuffix(frame, "\n\n"))
	var data struct {
		Type    string `json:"type"`
		Code    string `json:"code"`
		Message string `json:"message"`
		Error   struct {
			Type, Code, Message string
		} `json:"error"`
	}
	payload := strings.TrimSuffix(strings.TrimPrefix(frame, "event: error\ndata: "), "\n\n")
	require.NotContains(t, payload, "\n", "one data line")
	require.NoError(t, json.Unmarshal([]byte(payload), &data))
	assert.Equal(t, "error", data.Type)
	assert.Equal(t, "recourse_error", data.Code)
	assert.Equal(t, safe, data.Message)
	assert.Equal(t, "recourse_error", data.Error.Code)
	assert.Equal(t, safe, data.Error.Message)
}
