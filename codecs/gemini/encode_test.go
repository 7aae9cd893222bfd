package gemini_test

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/recourse-dev/recourse/chat"
	"github.com/recourse-dev/recourse/codec"
	"github.com/recourse-dev/recourse/codecs/gemini"
)

// A whole conversation encodes to the GenerateContentRequest the API
// takes: system instruction, user text and image, a model turn with a
// function call, its result, tools, schema and generation config.
func TestEncodeConversation(t *testing.T) {
	temp, maxTok, think := 0.5, 100, true
	body, err := gemini.New().Encode(&chat.Request{
		Model: "gemini-2.5-pro",
		Messages: []chat.Message{
			{Role: chat.System, Content: "Be brief."},
			{Role: chat.User, Content: "Weather <here>?", Images: []chat.Image{{MIMEType: "image/png", Data: []byte{1, 2, 3}}}},
			{Role: chat.Assistant, ToolCalls: []chat.ToolCall{{ID: "c1", Name: "weather", Arguments: json.RawMessage(`{"city":"Paris"}`)}, {ID: "gemini_call_1", Name: "time", Arguments: nil}}},
			{Role: chat.Tool, ToolCallID: "c1", Content: `{"temp":21}`},
			{Role: chat.Tool, ToolCallID: "gemini_call_1", ToolName: "time", Content: "noon"},
		},
		Tools:   []chat.ToolSpec{{Name: "weather", Description: "d", Parameters: json.RawMessage(`{"type":"object"}`)}},
		Schema:  &chat.Schema{Schema: json.RawMessage(`{"type":"object"}`)},
		Options: chat.Options{Temperature: &temp, MaxTokens: &maxTok, Stop: []string{"END"}, Think: &think},
	})
	require.NoError(t, err)
	want := `{"contents":[` +
		`{"role":"user","parts":[{"text":"Weather <here>?"},{"inlineData":{"mimeType":"image/png","data":"AQID"}}]},` +
		`{"role":"model","parts":[{"functionCall":{"id":"c1","name":"weather","args":{"city":"Paris"}}},{"functionCall":{"name":"time","args":{}}}]},` +
		`{"role":"user","parts":[{"functionResponse":{"id":"c1","name":"weather","response":{"temp":21}}},{"functionResponse":{"name":"time","response":{"output":"noon"}}}]}],` +
		`"systemInstruction":{"parts":[{"text":"Be brief."}]},` +
		`"tools":[{"functionDeclarations":[{"name":"weather","description":"d","parametersJsonSchema":{"type":"object"}}]}],` +
		`"generationConfig":{"temperature":0.5,"maxOutputTokens":100,"stopSequences":["END"],"responseMimeType":"application/json","responseJsonSchema":{"type":"object"},"thinkingConfig":{"includeThoughts":true}}}`
	assert.Equal(t, want, string(body))
	info, err := gemini.New().Describe(body)
	require.NoError(t, err)
	assert.Equal(t, codec.Structured, info.Operation)
}

// R14.1: controls the API does not take are refused by name.
func TestR14_1_GeminiRefusesUnsupportedControls(t *testing.T) {
	ctx := 10
	for control, o := range map[string]chat.Options{
		"ReasoningEffort": {ReasoningEffort: "high"},
		"ContextLength":   {ContextLength: &ctx},
		"KeepAlive":       {KeepAlive: "5m"},
	} {
		_, err := gemini.New().Encode(&chat.Request{Model: "m", Messages: []chat.Message{{Role: chat.User, Content: "x"}}, Options: o})
		var ue *codec.UnsupportedError
		require.True(t, errors.As(err, &ue), control)
		assert.Equal(t, control, ue.Control)
		assert.Equal(t, codec.Gemini, ue.Provider)
	}
}

// Invalid values are plain errors that quote nothing.
func TestEncodeRefusesInvalidValues(t *testing.T) {
	for name, req := range map[string]*chat.Request{
		"nil":          nil,
		"no model":     {Messages: []chat.Message{{Role: chat.User, Content: "x"}}},
		"bad args":     {Model: "m", Messages: []chat.Message{{Role: chat.Assistant, ToolCalls: []chat.ToolCall{{Name: "f", Arguments: json.RawMessage(`"secret"`)}}}}},
		"no tool name": {Model: "m", Messages: []chat.Message{{Role: chat.Tool, ToolCallID: "x", Content: "secret"}}},
		"empty image":  {Model: "m", Messages: []chat.Message{{Role: chat.User, Images: []chat.Image{{}}}}},
		"role":         {Model: "m", Messages: []chat.Message{{Role: "secret", Content: "x"}}},
	} {
		_, err := gemini.New().Encode(req)
		require.Error(t, err, name)
		assert.NotContains(t, err.Error(), "secret", name)
	}
}
