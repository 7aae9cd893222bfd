package anthropic_test

import (
	"errors"
	"net/http"
	"testing"

	"github.com/recourse-dev/recourse/chat"
	"github.com/recourse-dev/recourse/codec"
	"github.com/recourse-dev/recourse/codecs/anthropic"
)

func TestR22_5_DecodeReadsBlocksStopReasonAndUsage(t *testing.T) {
	body := `{"id":"msg_1","type":"message","role":"assistant","model":"claude-m","content":[` +
		`{"type":"thinking","thinking":"hmm","signature":"SIG"},{"type":"text","text":"Hi "},` +
		`{"type":"server_tool_use","id":"srvtoolu_1","name":"web_search","input":{"query":"x"}},` +
		`{"type":"text","text":"there"},{"type":"tool_use","id":"toolu_1","name":"get","input":{"a":1}}],` +
		`"stop_reason":"tool_use","stop_sequence":null,"usage":{"input_tokens":3,"cache_creation_input_tokens":4,"cache_read_input_tokens":5,"output_tokens":6}}`
	comp, err := anthropic.New().Decode([]byte(body))
	if err != nil {
		t.Fatal(err)
	}
	m := comp.Message
	if m.Role != chat.Assistant || m.Content != "Hi there" || m.Reasoning != "hmm" || m.ReasoningSignature != "SIG" {
		t.Errorf("message = %+v", m)
	}
	if len(m.ToolCalls) != 1 || m.ToolCalls[0].ID != "toolu_1" || m.ToolCalls[0].Name != "get" || string(m.ToolCalls[0].Arguments) != `{"a":1}` {
		t.Errorf("tool calls = %+v", m.ToolCalls)
	}
	if comp.FinishReason != "tool_calls" || comp.Model != "claude-m" || comp.ID != "msg_1" || *comp.Usage != (chat.Usage{InputTokens: 12, OutputTokens: 6}) {
		t.Errorf("completion = %+v usage %+v", comp, comp.Usage)
	}
	if err := anthropic.New().Check([]byte(body)); err != nil {
		t.Errorf("Check = %v", err)
	}
}

func TestR22_5_StopReasonsMapToFinishReasons(t *testing.T) {
	for stop, want := range map[string]string{
		"end_turn": "stop", "stop_sequence": "stop", "tool_use": "tool_calls", "max_tokens": "length",
		"model_context_window_exceeded": "length", "pause_turn": "pause_turn", "refusal": "refusal",
	} {
		body := `{"id":"m","type":"message","role":"assistant","model":"x","content":[],"stop_reason":"` + stop + `"}`
		comp, err := anthropic.New().Decode([]byte(body))
		if err != nil || comp.FinishReason != want {
			t.Errorf("%s: %+v, %v; want %s", stop, comp, err, want)
		}
	}
}

func TestR22_5_ErrorBodyAndRequestID(t *testing.T) {
	body := []byte(`{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"},"request_id":"req_011CSHoEeqs5C35K2UUqR7Fy"}`)
	c := anthropic.New()
	if got := c.ErrorCode(body); got != "overloaded_error" {
		t.Errorf("ErrorCode = %q", got)
	}
	_, err := c.Decode(body)
	var pe *codec.ProviderError
	if !errors.As(err, &pe) || pe.Code != "overloaded_error" || pe.Message != "Overloaded" || pe.Status != 529 {
		t.Errorf("Decode error = %#v", err)
	}
	h := http.Header{}
	h.Set("request-id", "req_011CSHoEeqs5C35K2UUqR7Fy")
	if got := c.RequestID(h); got != "req_011CSHoEeqs5C35K2UUqR7Fy" {
		t.Errorf("RequestID = %q", got)
	}
	for typ, want := range map[string]int{"overloaded_error": 529, "rate_limit_error": 429, "api_error": 500, "invalid_request_error": 400, "timeout_error": 504, "something_new": 0} {
		if got := anthropic.ErrorStatus(typ); got != want {
			t.Errorf("ErrorStatus(%s) = %d, want %d", typ, got, want)
		}
	}
}

func TestR22_5_DecodeRefusesWhatIsNotAMessage(t *testing.T) {
	for _, body := range []string{
		`{"type":"message","content":"x","stop_reason":"end_turn"}`,
		`{"type":"message","content":[{"type":"text","text":1}],"stop_reason":"end_turn"}`,
		`{"type":"message","content":[{"type":"tool_use","id":"i","name":"f","input":"x"}],"stop_reason":"end_turn"}`,
		`{"type":"message","content":[]}`,
		`{"type":"completion"}`,
		`{"type":"message","content":[],"stop_reason":"end_turn","usage":{"input_tokens":-1}}`,
	} {
		_, err := anthropic.New().Decode([]byte(body))
		var pe *codec.ProtocolError
		if !errors.As(err, &pe) {
			t.Errorf("Decode(%s) = %v, want a *ProtocolError", body, err)
		}
	}
}

func TestR22_9_ErrorFrameAndDocumentAreAnthropicShapes(t *testing.T) {
	c := anthropic.New()
	if got := string(c.ErrorDocument("upstream_unreachable", `say "hi"`)); got != `{"type":"error","error":{"type":"upstream_unreachable","message":"say \"hi\""}}`+"\n" {
		t.Errorf("ErrorDocument = %s", got)
	}
	if got := string(c.ErrorDocument("", "x")); got != `{"type":"error","error":{"type":"api_error","message":"x"}}`+"\n" {
		t.Errorf("ErrorDocument without a code = %s", got)
	}
	fr := c.ErrorFrame("recourse: not retried")
	if string(fr) != "event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"recourse_error\",\"message\":\"recourse: not retried\"}}\n\n" {
		t.Errorf("ErrorFrame = %q", fr)
	}
	if got := string(c.ErrorFrameCode("shutdown", "bye")); got != "event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"shutdown\",\"message\":\"bye\"}}\n\n" {
		t.Errorf("ErrorFrameCode = %q", got)
	}
	frames, _, _ := decode(t, ev("message_start", msgStart)+string(fr), 0)
	last := frames[len(frames)-1]
	var pe *codec.ProviderError
	if !errors.As(last.Err, &pe) || pe.Code != "recourse_error" || pe.Status != 0 {
		t.Errorf("the frame reads back as %#v, want a provider error that names no status", last.Err)
	}
}
