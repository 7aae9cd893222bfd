package anthropic_test

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/recourse-dev/recourse/chat"
	"github.com/recourse-dev/recourse/codec"
	"github.com/recourse-dev/recourse/codecs/anthropic"
)

func ptr[T any](v T) *T { return &v }

func TestR22_3_EncodeIsExact(t *testing.T) {
	req := &chat.Request{
		Model: "claude-m",
		Messages: []chat.Message{
			{Role: chat.System, Content: "sys <b>"},
			{Role: chat.User, Content: "look", Images: []chat.Image{{MIMEType: "image/jpeg", Data: []byte{1, 2, 3}}}},
			{Role: chat.Assistant, Reasoning: "think", ReasoningSignature: "sig", Content: "calling", ToolCalls: []chat.ToolCall{
				{ID: "toolu_1", Name: "get", Arguments: json.RawMessage(`{"q":1}`)},
				{ID: "toolu_2", Name: "put"},
			}},
			{Role: chat.Tool, ToolCallID: "toolu_1", Content: "one"},
			{Role: chat.Tool, ToolCallID: "toolu_2", Content: ""},
			{Role: chat.Assistant, Reasoning: "unsigned"},
			{Role: chat.User, Content: "thanks"},
		},
		Tools: []chat.ToolSpec{{Name: "get", Description: "d", Parameters: json.RawMessage(`{"type":"object","properties":{}}`)}, {Name: "put"}},
		Options: chat.Options{
			Temperature: ptr(0.5), TopP: ptr(0.9), TopK: ptr(5), MaxTokens: ptr(100), Stop: []string{"END"}, Think: ptr(true),
		},
		Stream: true,
	}
	got, err := anthropic.New(anthropic.WithThinkingBudget(2048)).Encode(req)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"model":"claude-m","max_tokens":100,"system":[{"type":"text","text":"sys <b>"}],"messages":[` +
		`{"role":"user","content":[{"type":"image","source":{"type":"base64","media_type":"image/jpeg","data":"AQID"}},{"type":"text","text":"look"}]},` +
		`{"role":"assistant","content":[{"type":"thinking","thinking":"think","signature":"sig"},{"type":"text","text":"calling"},` +
		`{"type":"tool_use","id":"toolu_1","name":"get","input":{"q":1}},{"type":"tool_use","id":"toolu_2","name":"put","input":{}}]},` +
		`{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","content":"one"},{"type":"tool_result","tool_use_id":"toolu_2","content":""}]},` +
		`{"role":"user","content":[{"type":"text","text":"thanks"}]}],` +
		`"tools":[{"name":"get","description":"d","input_schema":{"type":"object","properties":{}}},{"name":"put","input_schema":{"type":"object"}}],` +
		`"stop_sequences":["END"],"temperature":0.5,"top_p":0.9,"top_k":5,"thinking":{"type":"enabled","budget_tokens":2048},"stream":true}`
	if string(got) != want {
		t.Errorf("Encode:\n got %s\nwant %s", got, want)
	}
	info, err := anthropic.New().Describe(got)
	if err != nil || info.Model != "claude-m" || info.Operation != codec.Streaming {
		t.Errorf("Describe = %+v, %v", info, err)
	}
}

func TestR22_3_MaxTokensIsRequiredUnlessADefaultIsGiven(t *testing.T) {
	req := &chat.Request{Model: "m", Messages: []chat.Message{{Role: chat.User, Content: "x"}}}
	_, err := anthropic.New().Encode(req)
	var ue *codec.UnsupportedError
	if !errors.As(err, &ue) || ue.Provider != codec.Anthropic {
		t.Fatalf("Encode without MaxTokens = %v, want an *UnsupportedError", err)
	}
	body, err := anthropic.New(anthropic.WithDefaultMaxTokens(77)).Encode(req)
	if err != nil || string(body) != `{"model":"m","max_tokens":77,"messages":[{"role":"user","content":[{"type":"text","text":"x"}]}]}` {
		t.Errorf("Encode with a default = %s, %v", body, err)
	}
}

func TestR22_3_UnsupportedControlsAreRefused(t *testing.T) {
	for name, o := range map[string]chat.Options{
		"Seed":            {Seed: ptr(1)},
		"ContextLength":   {ContextLength: ptr(1)},
		"ReasoningEffort": {ReasoningEffort: "high"},
		"KeepAlive":       {KeepAlive: "5m"},
		"JSONMode":        {JSONMode: true},
		"Think":           {Think: ptr(true)},
	} {
		o.MaxTokens = ptr(10)
		_, err := anthropic.New().Encode(&chat.Request{Model: "m", Options: o, Messages: []chat.Message{{Role: chat.User, Content: "x"}}})
		var ue *codec.UnsupportedError
		if !errors.As(err, &ue) {
			t.Errorf("%s: Encode = %v, want an *UnsupportedError", name, err)
		}
	}
	_, err := anthropic.New().Encode(&chat.Request{Model: "m", Schema: &chat.Schema{Schema: json.RawMessage(`{}`)}, Options: chat.Options{MaxTokens: ptr(1)}, Messages: []chat.Message{{Role: chat.User, Content: "x"}}})
	var ue *codec.UnsupportedError
	if !errors.As(err, &ue) {
		t.Errorf("Schema: Encode = %v, want an *UnsupportedError", err)
	}
}

func TestR22_3_BadMessagesAreTypedErrorsNamingNoValue(t *testing.T) {
	for name, m := range map[string]chat.Message{
		"empty user":         {Role: chat.User},
		"role":               {Role: "x", Content: "secret-canary"},
		"tool without id":    {Role: chat.Tool, Content: "secret-canary"},
		"call without id":    {Role: chat.Assistant, ToolCalls: []chat.ToolCall{{Name: "f"}}},
		"args not an object": {Role: chat.Assistant, ToolCalls: []chat.ToolCall{{ID: "i", Name: "f", Arguments: json.RawMessage(`"secret-canary"`)}}},
		"image type":         {Role: chat.User, Images: []chat.Image{{MIMEType: "image/tiff", Data: []byte{1}}}},
	} {
		_, err := anthropic.New().Encode(&chat.Request{Model: "m", Options: chat.Options{MaxTokens: ptr(1)}, Messages: []chat.Message{m}})
		if err == nil {
			t.Errorf("%s: Encode = nil error", name)
			continue
		}
		if containsCanary(err.Error()) {
			t.Errorf("%s: error %q quotes the request", name, err)
		}
	}
}

func containsCanary(s string) bool {
	for i := 0; i+len("canary") <= len(s); i++ {
		if s[i:i+len("canary")] == "canary" {
			return true
		}
	}
	return false
}

func TestR22_3_DescribeReadsTheOperation(t *testing.T) {
	c := anthropic.New()
	for body, want := range map[string]codec.Operation{
		`{"model":"m","max_tokens":1,"messages":[]}`:                                                codec.Ordinary,
		`{"model":"m","stream":true,"messages":[],"cache_control":{"type":"ephemeral"}}`:            codec.Streaming,
		`{"model":"m","output_format":{"type":"json_schema","schema":{}},"messages":[]}`:            codec.Structured,
		`{"model":"m","output_config":{"format":{"type":"json_schema","schema":{}}},"messages":[]}`: codec.Structured,
	} {
		info, err := c.Describe([]byte(body))
		if err != nil || info.Operation != want || info.Model != "m" {
			t.Errorf("Describe(%s) = %+v, %v; want %s", body, info, err, want)
		}
	}
	for _, bad := range []string{"", "[]", `{"model":1}`, `{"model":"m","stream":"yes"}`} {
		if _, err := c.Describe([]byte(bad)); err == nil {
			t.Errorf("Describe(%q) = nil error", bad)
		}
	}
}

func TestR22_1_WithModelKeepsCacheControlByteForByte(t *testing.T) {
	body := []byte(`{"model":"claude-a","system":[{"type":"text","text":"long","cache_control":{"type":"ephemeral","ttl":"1h"}}],"max_tokens":9,"messages":[]}`)
	out, err := anthropic.New().WithModel(body, "claude-b")
	want := `{"model":"claude-b","system":[{"type":"text","text":"long","cache_control":{"type":"ephemeral","ttl":"1h"}}],"max_tokens":9,"messages":[]}`
	if err != nil || string(out) != want {
		t.Errorf("WithModel = %s, %v", out, err)
	}
}
