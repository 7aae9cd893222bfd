package responses_test

import (
	"encoding/json"
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/recourse-dev/recourse/chat"
	"github.com/recourse-dev/recourse/codec"
	"github.com/recourse-dev/recourse/codecs/openai/responses"
)

func ptr[T any](v T) *T { return &v }

// richRequest is a conversation with every message kind of R19.2.
func richRequest() *chat.Request {
	return &chat.Request{
		Model: "gpt-4.1",
		Messages: []chat.Message{
			{Role: chat.System, Content: "Be brief."},
			{Role: chat.User, Content: "Weather in Paris?", Images: []chat.Image{{Data: []byte{1, 2, 3}}}},
			{Role: chat.Assistant, Reasoning: "never sent", ToolCalls: []chat.ToolCall{
				{ID: "call_1", Name: "weather", Arguments: json.RawMessage(`{"city":"Paris"}`)},
				{ID: "call_2", Name: "clock", Arguments: json.RawMessage(`"not json{"`)},
			}},
			{Role: chat.Tool, ToolCallID: "call_1", ToolName: "weather", Content: "sunny"},
			{Role: chat.Tool, ToolCallID: "call_2", Content: "noon"},
			{Role: chat.Assistant, Content: "Sunny at noon."},
			{Role: chat.System, Content: "Now in French."},
		},
		Tools:   []chat.ToolSpec{{Name: "weather", Description: "Current weather.", Parameters: json.RawMessage(`{"type": "object"}`)}, {Name: "clock"}},
		Schema:  &chat.Schema{Name: "answer", Schema: json.RawMessage(`{"type":"object"}`), Strict: true},
		Options: chat.Options{MaxTokens: ptr(100), Temperature: ptr(0.5), TopP: ptr(0.9)},
		Stream:  true,
	}
}

// TestR19_2_RequestEncoding: messages become input items in order (system
// stays a system message), tool calls are function_call items and tool
// results function_call_output items with their call_id, tools are flat
// function tools with strict false, a schema is text.format, MaxTokens is
// max_output_tokens; reasoning is never sent.
func TestR19_2_RequestEncoding(t *testing.T) {
	body, err := responses.New().Encode(richRequest())
	require.NoError(t, err)
	want := `{"model":"gpt-4.1","input":[` +
		`{"type":"message","role":"system","content":"Be brief."},` +
		`{"type":"message","role":"user","content":[{"type":"input_text","text":"Weather in Paris?"},{"type":"input_image","image_url":"data:image/png;base64,AQID"}]},` +
		`{"type":"function_call","call_id":"call_1","name":"weather","arguments":"{\"city\":\"Paris\"}"},` +
		`{"type":"function_call","call_id":"call_2","name":"clock","arguments":"not json{"},` +
		`{"type":"function_call_output","call_id":"call_1","output":"sunny"},` +
		`{"type":"function_call_output","call_id":"call_2","output":"noon"},` +
		`{"type":"message","role":"assistant","content":"Sunny at noon."},` +
		`{"type":"message","role":"system","content":"Now in French."}],` +
		`"tools":[{"type":"function","name":"weather","description":"Current weather.","parameters":{"type":"object"},"strict":false},{"type":"function","name":"clock","strict":false}],` +
		`"text":{"format":{"type":"json_schema","name":"answer","schema":{"type":"object"},"strict":true}},` +
		`"max_output_tokens":100,"temperature":0.5,"top_p":0.9,"stream":true}`
	assert.Equal(t, want, string(body))
	assert.NotContains(t, string(body), "never sent")

	info, err := responses.New().Describe(body)
	require.NoError(t, err)
	assert.Equal(t, codec.RequestInfo{Model: "gpt-4.1", Operation: codec.Streaming}, info)
}

func TestR19_2_FormatsAndReasoning(t *testing.T) {
	c := responses.New()
	body, err := c.Encode(&chat.Request{Model: "gpt-4.1", Options: chat.Options{JSONMode: true}})
	require.NoError(t, err)
	assert.Equal(t, `{"model":"gpt-4.1","input":[],"text":{"format":{"type":"json_object"}}}`, string(body))
	info, err := c.Describe(body)
	require.NoError(t, err)
	assert.Equal(t, codec.Structured, info.Operation)

	body, err = c.Encode(&chat.Request{Model: "gpt-4.1", Schema: &chat.Schema{Schema: json.RawMessage(`{}`)}})
	require.NoError(t, err)
	assert.Contains(t, string(body), `"text":{"format":{"type":"json_schema","name":"response","schema":{},"strict":false}}`)

	body, err = c.Encode(&chat.Request{Model: "o3", Options: chat.Options{ReasoningEffort: "high", MaxTokens: ptr(9)}})
	require.NoError(t, err)
	assert.Equal(t, `{"model":"o3","input":[],"reasoning":{"effort":"high"},"max_output_tokens":9}`, string(body))
	info, err = c.Describe(body)
	require.NoError(t, err)
	assert.Equal(t, codec.Ordinary, info.Operation)

	// WithReasoningModel overrides the detection; nil keeps the default.
	body, err = responses.New(responses.WithReasoningModel(func(string) bool { return true }), nil).
		Encode(&chat.Request{Model: "local", Options: chat.Options{ReasoningEffort: "low"}})
	require.NoError(t, err)
	assert.Contains(t, string(body), `"reasoning":{"effort":"low"}`)
	_, err = responses.New(responses.WithReasoningModel(nil)).Encode(&chat.Request{Model: "gpt-4.1", Options: chat.Options{ReasoningEffort: "low"}})
	var ue *codec.UnsupportedError
	require.ErrorAs(t, err, &ue)
}

func TestR19_2_UnsupportedControlsAreTypedErrors(t *testing.T) {
	rows := []struct {
		model, control string
		o              chat.Options
	}{
		{"gpt-4.1", "TopK", chat.Options{TopK: ptr(3)}},
		{"gpt-4.1", "Seed", chat.Options{Seed: ptr(3)}},
		{"gpt-4.1", "Stop", chat.Options{Stop: []string{"x"}}},
		{"gpt-4.1", "ContextLength", chat.Options{ContextLength: ptr(3)}},
		{"gpt-4.1", "Think", chat.Options{Think: ptr(true)}},
		{"gpt-4.1", "KeepAlive", chat.Options{KeepAlive: "5m"}},
		{"gpt-4.1", "ReasoningEffort with non-reasoning models", chat.Options{ReasoningEffort: "low"}},
		{"o4-mini", "Temperature with reasoning models", chat.Options{Temperature: ptr(0.1)}},
		{"o4-mini", "TopP with reasoning models", chat.Options{TopP: ptr(0.1)}},
		{"o4-mini", "ReasoningEffort other than low, medium or high", chat.Options{ReasoningEffort: "max"}},
	}
	for _, r := range rows {
		t.Run(r.control, func(t *testing.T) {
			_, err := responses.New().Encode(&chat.Request{Model: r.model, Options: r.o})
			var ue *codec.UnsupportedError
			require.ErrorAs(t, err, &ue)
			assert.Equal(t, codec.UnsupportedError{Provider: codec.OpenAI, Control: r.control}, *ue)
		})
	}
}

func TestR19_2_BadRequestsAreErrorsThatQuoteNothing(t *testing.T) {
	secret := "SECRET-CONTENT"
	rows := map[string]*chat.Request{
		"nil":               nil,
		"empty model":       {},
		"unknown role":      {Model: "m", Messages: []chat.Message{{Role: "robot", Content: secret}}},
		"images on system":  {Model: "m", Messages: []chat.Message{{Role: chat.System, Images: []chat.Image{{Data: []byte(secret)}}}}},
		"calls on user":     {Model: "m", Messages: []chat.Message{{Role: chat.User, ToolCalls: []chat.ToolCall{{ID: "a", Name: "b"}}}}},
		"call without id":   {Model: "m", Messages: []chat.Message{{Role: chat.Assistant, ToolCalls: []chat.ToolCall{{Name: "b"}}}}},
		"call without name": {Model: "m", Messages: []chat.Message{{Role: chat.Assistant, ToolCalls: []chat.ToolCall{{ID: "a"}}}}},
		"bad arguments":     {Model: "m", Messages: []chat.Message{{Role: chat.Assistant, ToolCalls: []chat.ToolCall{{ID: "a", Name: "b", Arguments: json.RawMessage(secret)}}}}},
		"tool without id":   {Model: "m", Messages: []chat.Message{{Role: chat.Tool, Content: secret}}},
		"tool without name": {Model: "m", Tools: []chat.ToolSpec{{Description: secret}}},
		"bad parameters":    {Model: "m", Tools: []chat.ToolSpec{{Name: "t", Parameters: json.RawMessage(secret)}}},
		"bad schema":        {Model: "m", Schema: &chat.Schema{Schema: json.RawMessage(secret)}},
		"schema and json":   {Model: "m", Schema: &chat.Schema{Schema: json.RawMessage(`{}`)}, Options: chat.Options{JSONMode: true}},
		"nan temperature":   {Model: "m", Options: chat.Options{Temperature: ptr(math.NaN())}},
		"infinite top_p":    {Model: "m", Options: chat.Options{TopP: ptr(math.Inf(1))}},
	}
	for name, req := range rows {
		t.Run(name, func(t *testing.T) {
			body, err := responses.New().Encode(req)
			require.Error(t, err)
			assert.Nil(t, body)
			var ue *codec.UnsupportedError
			assert.False(t, errors.As(err, &ue), "a request that cannot be encoded is not an unsupported control")
			assert.True(t, strings.HasPrefix(err.Error(), "recourse: openai responses: "), err.Error())
			assert.NotContains(t, err.Error(), secret)
		})
	}
}

// The encoded body does not alias the request: mutating the request after
// Encode changes nothing in the bytes.
func TestR19_2_EncodeDoesNotAliasTheRequest(t *testing.T) {
	req := richRequest()
	body, err := responses.New().Encode(req)
	require.NoError(t, err)
	want := string(body)
	req.Messages[0].Content = "MUTATED"
	req.Tools[0].Parameters[2] = 'X'
	assert.Equal(t, want, string(body))
}

func TestR19_2_DescribeRejectsMalformedRequests(t *testing.T) {
	for _, body := range []string{``, `[]`, `null`, `{"model":1}`, `{"stream":"yes"}`, `{"text":1}`, `{"text":{"format":[]}}`, `{"text":{"format":{"type":2}}}`} {
		_, err := responses.New().Describe([]byte(body))
		var pe *codec.ProtocolError
		assert.ErrorAs(t, err, &pe, body)
	}
}

// An assistant message that holds only reasoning (the broker commits one
// when a stream broke after a closed reasoning block) would be an empty
// assistant turn: the Responses API takes no reasoning text back, so it is
// left out. An empty assistant message without reasoning is still sent.
func TestR19_2_ReasoningOnlyAssistantMessageIsLeftOut(t *testing.T) {
	body, err := responses.New().Encode(&chat.Request{Model: "gpt-4.1", Messages: []chat.Message{
		{Role: chat.User, Content: "Hi"},
		{Role: chat.Assistant, Reasoning: "closed block"},
		{Role: chat.User, Content: "Go on"},
	}})
	require.NoError(t, err)
	assert.Equal(t, `{"model":"gpt-4.1","input":[{"type":"message","role":"user","content":"Hi"},{"type":"message","role":"user","content":"Go on"}]}`, string(body))
}
