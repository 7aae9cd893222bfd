package anthropic_test

import (
	"errors"
	"testing"

	"github.com/recourse-dev/recourse/codec"
	"github.com/recourse-dev/recourse/codecs/anthropic"
)

// decodeInfo writes s at once to a new stream decoder for info and returns
// its frames and End's error.
func decodeInfo(s string, info codec.RequestInfo) ([]codec.Frame, error) {
	d := anthropic.NewStreamDecoder(info)
	d.Write([]byte(s))
	var out []codec.Frame
	for f, ok := d.Next(); ok; f, ok = d.Next() {
		out = append(out, f)
	}
	err := d.End()
	for f, ok := d.Next(); ok; f, ok = d.Next() {
		out = append(out, f)
	}
	return out, err
}

// TestR13_3_ProviderFinishEndsAtMessageStop: for a drop-in or proxy
// client (codec.RequestInfo.ProviderFinish) a max_tokens or
// model_context_window_exceeded stop reason is the provider's answer: no
// error frame, the stream ends at message_stop with a Done frame whose
// finish is length (a codec.DocumentedFinish), with the evidence and no
// tool call; without message_stop it stays an incomplete stream. The
// typed API keeps its incomplete_completion.
func TestR13_3_ProviderFinishEndsAtMessageStop(t *testing.T) {
	provider := codec.RequestInfo{Model: "claude-m", Operation: codec.Streaming, ProviderFinish: true, DropText: true}
	tool := ev("content_block_start", `{"type":"content_block_start","index":1,"content_block":{"type":"tool_use","id":"toolu_1","name":"get","input":{}}}`) +
		ev("content_block_delta", `{"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"{\"a"}}`) +
		ev("content_block_stop", `{"type":"content_block_stop","index":1}`)
	for _, stop := range []string{"max_tokens", "model_context_window_exceeded"} {
		body := ev("message_start", msgStart) + ev("content_block_start", textStart) + ev("content_block_delta", textDelta(0, "Hi")) +
			ev("content_block_stop", blockStop0) + tool + ev("message_delta", msgDelta(stop, 9))
		frames, err := decodeInfo(body+ev("message_stop", msgStop), provider)
		if err != nil {
			t.Fatalf("%s: End = %v", stop, err)
		}
		for _, f := range frames {
			if f.Err != nil {
				t.Fatalf("%s: error frame %+v", stop, f)
			}
		}
		last := frames[len(frames)-1]
		if !last.Done || last.FinishReason != "length" || !codec.DocumentedFinish(last.FinishReason) || last.Completion == nil {
			t.Fatalf("%s: last frame %+v", stop, last)
		}
		if c := last.Completion; c.FinishReason != "length" || c.ID != "msg_1" || c.Usage == nil || c.Usage.OutputTokens != 9 || len(c.Message.ToolCalls) != 0 {
			t.Errorf("%s: completion %+v, want evidence and no tool call", stop, c)
		}
		if last.Semantic().CompletedToolCalls != 0 {
			t.Errorf("%s: a tool call of a length finish is complete", stop)
		}

		// A cut: EOF without message_stop stays an error for everybody.
		frames, err = decodeInfo(body, provider)
		if !errors.Is(err, anthropic.ErrIncomplete) {
			t.Errorf("%s: cut End = %v, want ErrIncomplete", stop, err)
		}
		for _, f := range frames {
			if f.Done || f.Err != nil {
				t.Errorf("%s: cut frame %+v", stop, f)
			}
		}

		// The typed API: incomplete_completion, at once.
		frames, _ = decodeInfo(body+ev("message_stop", msgStop), codec.RequestInfo{Model: "claude-m", Operation: codec.Streaming, TypedFrames: true})
		var ie *codec.IncompleteError
		if !errors.As(frames[len(frames)-1].Err, &ie) || ie.FinishReason != "length" {
			t.Errorf("%s: typed last frame %+v", stop, frames[len(frames)-1])
		}
	}
}
