package responses_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/recourse-dev/recourse/chat"
	"github.com/recourse-dev/recourse/codec"
	"github.com/recourse-dev/recourse/codecs/openai/responses"
)

func decode(t *testing.T, body string) (*chat.Completion, error) {
	t.Helper()
	comp, err := responses.New().Decode([]byte(body))
	if err != nil {
		assert.Nil(t, comp, "never a completion and an error")
	}
	return comp, err
}

// TestR19_5_UnaryOutputItems: a completed response's output items become
// one assistant message; model, ID and usage are kept.
func TestR19_5_UnaryOutputItems(t *testing.T) {
	body := unary("completed", []any{
		reasoningItem("Thinking about it."),
		msgItem(outputText("Hello, "), outputText("world.")),
	}, nil)
	comp, err := decode(t, body)
	require.NoError(t, err)
	assert.Equal(t, &chat.Completion{
		Message:      chat.Message{Role: chat.Assistant, Content: "Hello, world.", Reasoning: "Thinking about it."},
		FinishReason: "stop", Model: respModel, ID: respID,
		Usage: &chat.Usage{InputTokens: 12, OutputTokens: 7},
	}, comp)

	// The observer counts the same text while the body arrives.
	o := responses.New().NewObserver(codec.RequestInfo{Operation: codec.Ordinary})
	for i := range len(body) {
		o.Write([]byte{body[i]})
	}
	assert.Equal(t, codec.Counts{ContentBytes: int64(len("Hello, world.")), ReasoningBytes: int64(len("Thinking about it."))}, o.Observed())
}

func TestR19_5_UnaryFinishReasons(t *testing.T) {
	rows := []struct {
		name, body, finish, content string
	}{
		{"completed", unary("completed", []any{msgItem(outputText("hi"))}, nil), "stop", "hi"},
		{"refusal", unary("completed", []any{msgItem(refusalPart("I can't help with that."))}, nil), "refusal", "I can't help with that."},
		{"length", unary("incomplete", []any{msgItem(outputText("Once upon"))}, map[string]any{"incomplete_details": map[string]any{"reason": "max_output_tokens"}}), "length", "Once upon"},
		{"content_filter", unary("incomplete", []any{msgItem(outputText("x"))}, map[string]any{"incomplete_details": map[string]any{"reason": "content_filter"}}), "content_filter", "x"},
		{"no reason", unary("incomplete", nil, nil), "incomplete", ""},
		{"no status", `{"id":"r","output":[{"type":"message","content":[{"type":"output_text","text":"ok"}]}]}`, "stop", "ok"},
	}
	for _, r := range rows {
		t.Run(r.name, func(t *testing.T) {
			comp, err := decode(t, r.body)
			require.NoError(t, err)
			assert.Equal(t, r.finish, comp.FinishReason)
			assert.Equal(t, r.content, comp.Message.Content)
		})
	}
}

// TestR19_7_UnaryToolCallsKeepCallID: a function_call item is a tool call
// whose ID is its call_id, not the item id; arguments that are not valid
// JSON are kept as a JSON string.
func TestR19_7_UnaryToolCallsKeepCallID(t *testing.T) {
	body := unary("completed", []any{
		msgItem(outputText("Let me check.")),
		callItem("call_abc", "weather", `{"city":"Paris"}`),
		map[string]any{"id": "fc_2", "type": "function_call", "call_id": "call_def", "name": "clock", "arguments": `{"tz":`},
		map[string]any{"id": "ws_1", "type": "web_search_call", "status": "completed"},
	}, nil)
	comp, err := decode(t, body)
	require.NoError(t, err)
	assert.Equal(t, "tool_calls", comp.FinishReason)
	assert.Equal(t, "Let me check.", comp.Message.Content)
	assert.Equal(t, []chat.ToolCall{
		{ID: "call_abc", Name: "weather", Arguments: json.RawMessage(`{"city":"Paris"}`)},
		{ID: "call_def", Name: "clock", Arguments: json.RawMessage(`"{\"tz\":"`)},
	}, comp.Message.ToolCalls)

	// Decoded history encodes back to the same call and arguments text.
	req := &chat.Request{Model: "gpt-4.1", Messages: []chat.Message{comp.Message}}
	enc, err := responses.New().Encode(req)
	require.NoError(t, err)
	assert.Contains(t, string(enc), `{"type":"function_call","call_id":"call_def","name":"clock","arguments":"{\"tz\":"}`)
}

// TestR19_6_UnaryProviderErrors: a failed or cancelled response and an
// error object are provider errors with the code and message as sent.
func TestR19_6_UnaryProviderErrors(t *testing.T) {
	rows := []struct {
		name, body string
		want       codec.ProviderError
	}{
		{"failed", unary("failed", nil, map[string]any{"error": map[string]any{"code": "server_error", "message": "boom"}}), codec.ProviderError{Code: "server_error", Message: "boom"}},
		{"failed without error", unary("failed", nil, nil), codec.ProviderError{}},
		{"cancelled", unary("cancelled", nil, nil), codec.ProviderError{Code: "cancelled"}},
		{"error body", `{"error":{"message":"bad key","type":"invalid_request_error","param":null,"code":"invalid_api_key"}}`, codec.ProviderError{Code: "invalid_api_key", Message: "bad key"}},
		{"error string", `{"error":"nope"}`, codec.ProviderError{Message: "nope"}},
	}
	for _, r := range rows {
		t.Run(r.name, func(t *testing.T) {
			_, err := decode(t, r.body)
			var pe *codec.ProviderError
			require.ErrorAs(t, err, &pe)
			assert.Equal(t, r.want, *pe)
			assert.NotContains(t, err.Error(), "boom")
		})
	}
	assert.Equal(t, "invalid_api_key", responses.New().ErrorCode([]byte(rows[3].body)))
	assert.Equal(t, "", responses.New().ErrorCode([]byte(`{"error":{"type":"x","code":1}}`)))
	assert.Equal(t, "", responses.New().ErrorCode([]byte("\xff")))
}

func TestR19_5_UnaryMalformedBodiesAreProtocolErrors(t *testing.T) {
	rows := map[string]string{
		"not utf8":        "{\"output\":[],\"status\":\"completed\",\"id\":\"\xff\"}",
		"not an object":   `[1]`,
		"null":            `null`,
		"queued":          unary("queued", nil, nil),
		"in_progress":     unary("in_progress", nil, nil),
		"unknown status":  unary("thinking", nil, nil),
		"no status":       `{"id":"r"}`,
		"status type":     `{"status":1}`,
		"output type":     `{"status":"completed","output":{}}`,
		"item type":       `{"status":"completed","output":[1]}`,
		"content type":    `{"status":"completed","output":[{"type":"message","content":"x"}]}`,
		"text type":       `{"status":"completed","output":[{"type":"message","content":[{"type":"output_text","text":1}]}]}`,
		"summary type":    `{"status":"completed","output":[{"type":"reasoning","summary":[{"type":"summary_text","text":1}]}]}`,
		"call_id type":    `{"status":"completed","output":[{"type":"function_call","call_id":1}]}`,
		"arguments type":  `{"status":"completed","output":[{"type":"function_call","arguments":{}}]}`,
		"usage type":      `{"status":"completed","output":[],"usage":[]}`,
		"tokens type":     `{"status":"completed","output":[],"usage":{"input_tokens":"1"}}`,
		"model type":      `{"status":"completed","output":[],"model":1}`,
		"nested too deep": `{"status":"completed","output":[],"x":` + strings.Repeat("[", 600) + strings.Repeat("]", 600) + `}`,
	}
	for name, body := range rows {
		t.Run(name, func(t *testing.T) {
			_, err := decode(t, body)
			var pe *codec.ProtocolError
			require.ErrorAs(t, err, &pe)
		})
	}
}
