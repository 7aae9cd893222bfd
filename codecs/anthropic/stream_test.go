package anthropic_test

import (
	"errors"
	"testing"

	"github.com/recourse-dev/recourse/chat"
	"github.com/recourse-dev/recourse/codec"
	"github.com/recourse-dev/recourse/codecs/anthropic"
)

func TestR22_4_AWholeStreamIsAccepted(t *testing.T) {
	for _, n := range []int{0, 1, 7} {
		frames, d, err := decode(t, textStream(), n)
		if err != nil {
			t.Fatalf("split %d: End = %v", n, err)
		}
		last := frames[len(frames)-1]
		if !last.Done || last.Err != nil || last.Completion.Message.Content != "Hello" || last.FinishReason != "stop" {
			t.Fatalf("split %d: last frame %+v", n, last)
		}
		if u := last.Completion.Usage; u == nil || *u != (chat.Usage{InputTokens: 15, OutputTokens: 7}) {
			t.Errorf("split %d: usage %+v", n, u)
		}
		if last.Completion.ID != "msg_1" || last.Completion.Model != "claude-m" || d.MessageID() != "msg_1" {
			t.Errorf("split %d: id/model %+v", n, last.Completion)
		}
		if len(frames) != 8 || !frames[1].Keepalive {
			t.Errorf("split %d: %d frames, ping keepalive %v", n, len(frames), frames[1].Keepalive)
		}
	}
}

// TestR22_4_OutputStartsAtTheFirstContentBlock checks, event by event,
// when the decoder says output was observed.
func TestR22_4_OutputStartsAtTheFirstContentBlock(t *testing.T) {
	for name, tc := range map[string]struct {
		events string
		output bool
	}{
		"message_start":       {ev("message_start", msgStart), false},
		"ping":                {ev("message_start", msgStart) + ev("ping", ping), false},
		"unknown event":       {ev("message_start", msgStart) + ev("future_event", `{"type":"future_event","x":1}`), false},
		"comment":             {": keepalive\n\n", false},
		"empty text start":    {ev("message_start", msgStart) + ev("content_block_start", textStart), true},
		"empty thinking":      {ev("content_block_start", `{"type":"content_block_start","index":0,"content_block":{"type":"thinking","thinking":"","signature":""}}`), true},
		"server_tool_use":     {ev("content_block_start", `{"type":"content_block_start","index":0,"content_block":{"type":"server_tool_use","id":"srvtoolu_1","name":"web_search","input":{}}}`), true},
		"web_search_result":   {ev("content_block_start", `{"type":"content_block_start","index":0,"content_block":{"type":"web_search_tool_result","tool_use_id":"srvtoolu_1","content":[]}}`), true},
		"redacted_thinking":   {ev("content_block_start", `{"type":"content_block_start","index":0,"content_block":{"type":"redacted_thinking","data":"x"}}`), true},
		"tool_use":            {ev("content_block_start", `{"type":"content_block_start","index":0,"content_block":{"type":"tool_use","id":"toolu_1","name":"f","input":{}}}`), true},
		"citations_delta":     {ev("content_block_start", textStart) + ev("content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"citations_delta","citation":{}}}`), true},
		"unknown block start": {ev("content_block_start", `{"type":"content_block_start","index":0,"content_block":{"type":"future_block"}}`), true},
	} {
		_, d, _ := decode(t, tc.events, 0)
		if got := d.Observed().Any(); got != tc.output {
			t.Errorf("%s: output observed %v, want %v (%+v)", name, got, tc.output, d.Observed())
		}
	}
}

func TestR22_4_LengthFinishEndsAtOnce(t *testing.T) {
	for _, stop := range []string{"max_tokens", "model_context_window_exceeded"} {
		s := ev("message_start", msgStart) + ev("content_block_start", textStart) + ev("content_block_delta", textDelta(0, "Hi")) +
			ev("content_block_stop", blockStop0) + ev("message_delta", msgDelta(stop, 9))
		frames, _, err := decode(t, s, 0)
		last := frames[len(frames)-1]
		var se *codec.IncompleteError
		if err != nil || !errors.As(last.Err, &se) || se.FinishReason != "length" {
			t.Fatalf("%s: last %+v, End %v", stop, last, err)
		}
		if last.Completion == nil || last.Completion.Message.Content != "" || last.Completion.Usage.OutputTokens != 9 {
			t.Errorf("%s: evidence %+v", stop, last.Completion)
		}
	}
}

func TestR22_4_EOFWithoutMessageStopFails(t *testing.T) {
	// A stop reason arrived, message_stop did not: still incomplete.
	s := ev("message_start", msgStart) + ev("content_block_start", textStart) + ev("content_block_delta", textDelta(0, "Hi")) +
		ev("content_block_stop", blockStop0) + ev("message_delta", msgDelta("end_turn", 2))
	frames, _, err := decode(t, s, 0)
	if !errors.Is(err, anthropic.ErrIncomplete) {
		t.Errorf("End = %v, want ErrIncomplete", err)
	}
	for _, f := range frames {
		if f.Done {
			t.Error("a frame is Done without message_stop")
		}
	}
}

func TestR22_4_MessageStopWithoutStopReasonIsMalformed(t *testing.T) {
	frames, _, _ := decode(t, ev("message_start", msgStart)+ev("message_stop", msgStop), 0)
	var pe *codec.ProtocolError
	if !errors.As(frames[len(frames)-1].Err, &pe) {
		t.Errorf("last frame %+v, want a protocol error", frames[len(frames)-1])
	}
}

func TestR22_2_ErrorEventNamesItsStatus(t *testing.T) {
	frames, _, err := decode(t, ev("message_start", msgStart)+ev("ping", ping)+ev("error", overloaded), 3)
	last := frames[len(frames)-1]
	var pe *codec.ProviderError
	if err != nil || !errors.As(last.Err, &pe) || pe.Code != "overloaded_error" || pe.Status != 529 {
		t.Fatalf("last %+v, End %v", last, err)
	}
	if string(last.Raw) != ev("error", overloaded) {
		t.Errorf("error frame raw %q", last.Raw)
	}
}

func TestR22_4_ToolCallsCompleteOnlyAtTheEnd(t *testing.T) {
	s := ev("message_start", msgStart) +
		ev("content_block_start", `{"type":"content_block_start","index":0,"content_block":{"type":"thinking","thinking":"","signature":""}}`) +
		ev("content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"plan"}}`) +
		ev("content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"signature_delta","signature":"SIG"}}`) +
		ev("content_block_stop", blockStop0) +
		ev("content_block_start", `{"type":"content_block_start","index":1,"content_block":{"type":"tool_use","id":"toolu_1","name":"get","input":{}}}`) +
		ev("content_block_delta", `{"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"{\"a\":"}}`) +
		ev("content_block_delta", `{"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"1}"}}`) +
		ev("content_block_stop", `{"type":"content_block_stop","index":1}`) +
		ev("message_delta", msgDelta("tool_use", 3)) + ev("message_stop", msgStop)
	frames, d, err := decode(t, s, 5)
	if err != nil {
		t.Fatal(err)
	}
	if text, sig := d.ClosedReasoning(); text != "plan" || sig != "SIG" {
		t.Errorf("ClosedReasoning = %q, %q", text, sig)
	}
	frags, signed := 0, 0
	for _, f := range frames[:len(frames)-1] {
		frags += len(f.Fragments)
		if f.ReasoningSignature == "SIG" {
			signed++
		}
	}
	if signed != 1 {
		t.Errorf("%d frames carry the closed thinking block's signature, want 1 (its content_block_stop)", signed)
	}
	last := frames[len(frames)-1].Completion
	if frags != 3 || last.FinishReason != "tool_calls" || len(last.Message.ToolCalls) != 1 || string(last.Message.ToolCalls[0].Arguments) != `{"a":1}` {
		t.Errorf("fragments %d, completion %+v", frags, last)
	}
	if last.Message.Reasoning != "plan" || last.Message.ReasoningSignature != "SIG" {
		t.Errorf("reasoning %q signature %q", last.Message.Reasoning, last.Message.ReasoningSignature)
	}
}

func TestR22_7_AnOpenThinkingBlockIsNeverClosedReasoning(t *testing.T) {
	s := ev("message_start", msgStart) +
		ev("content_block_start", `{"type":"content_block_start","index":0,"content_block":{"type":"thinking","thinking":"","signature":""}}`) +
		ev("content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"half"}}`)
	_, d, _ := decode(t, s, 0)
	if text, sig := d.ClosedReasoning(); text != "" || sig != "" {
		t.Errorf("ClosedReasoning of an open block = %q, %q", text, sig)
	}
}

func TestR22_4_PlainErrorDocumentInPlaceOfAStream(t *testing.T) {
	_, _, err := decode(t, `{"type":"error","error":{"type":"rate_limit_error","message":"slow"}}`, 0)
	var pe *codec.ProviderError
	if !errors.As(err, &pe) || pe.Code != "rate_limit_error" {
		t.Errorf("End = %v", err)
	}
}

func TestR22_4_MalformedEventsAreProtocolErrors(t *testing.T) {
	for _, s := range []string{
		ev("content_block_delta", textDelta(0, "x")), // no open block
		ev("content_block_start", `{"type":"content_block_start","content_block":{"type":"text","text":""}}`),
		ev("message_start", `{"type":"message_start","message":"x"}`),
		"data: not json\n\n",
		ev("message_delta", `{"type":"message_delta","delta":{"stop_reason":1}}`),
	} {
		frames, _, _ := decode(t, s, 0)
		var pe *codec.ProtocolError
		if len(frames) == 0 || !errors.As(frames[len(frames)-1].Err, &pe) {
			t.Errorf("%q: frames %+v, want a protocol error", s, frames)
		}
	}
}

func TestR22_4_DropTextKeepsNoText(t *testing.T) {
	d := anthropic.NewStreamDecoder(codec.RequestInfo{Operation: codec.Streaming, DropText: true, TypedFrames: true})
	d.Write([]byte(textStream()))
	var last codec.Frame
	for f, ok := d.Next(); ok; f, ok = d.Next() {
		if f.Raw != nil {
			t.Error("a typed frame carries Raw")
		}
		last = f
	}
	if !last.Done || last.Completion.Message.Content != "" {
		t.Errorf("last %+v", last)
	}
}
