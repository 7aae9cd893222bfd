package openai_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/recourse-dev/recourse/chat"
	"github.com/recourse-dev/recourse/codec"
	"github.com/recourse-dev/recourse/codecs/openai"
)

var weatherParams = json.RawMessage(`{ "type": "object",
	"properties": { "city": { "type": "string" } }, "required": ["city"] }`)

// TestR14_1_EncodeGolden pins the exact request bytes for each feature of
// the OpenAI encoding that recovery must preserve (R14.1).
func TestR14_1_EncodeGolden(t *testing.T) {
	t.Parallel()
	png := []byte{0x89, 'P', 'N', 'G'} // base64 iVBORw==
	jpeg := []byte{0xFF, 0xD8, 0xFF}   // base64 /9j/
	tests := []struct {
		name string
		req  chat.Request
		want string
	}{{
		name: "minimal",
		req:  chat.Request{Model: "gpt-4o-mini", Messages: []chat.Message{user("Hi")}},
		want: `{"model":"gpt-4o-mini","messages":[{"role":"user","content":"Hi"}]}`,
	}, {
		name: "plain with sampling controls",
		req: chat.Request{
			Model:    "gpt-4o",
			Messages: []chat.Message{{Role: chat.System, Content: "Be brief."}, user("Hi <b> & \"you\"")},
			Options: chat.Options{
				Temperature: ptr(0.2), TopP: ptr(0.9), MaxTokens: ptr(100), Seed: ptr(7),
				Stop: []string{"END", "\n\n"},
			},
		},
		want: `{"model":"gpt-4o","messages":[{"role":"system","content":"Be brief."},` +
			`{"role":"user","content":"Hi <b> & \"you\""}],` +
			`"max_tokens":100,"temperature":0.2,"top_p":0.9,"seed":7,"stop":["END","\n\n"]}`,
	}, {
		name: "zero values of set controls are sent",
		req: chat.Request{
			Model:    "gpt-4o",
			Messages: []chat.Message{user("Hi")},
			Options:  chat.Options{Temperature: ptr(0.0), TopP: ptr(0.0), MaxTokens: ptr(0), Seed: ptr(0)},
		},
		want: `{"model":"gpt-4o","messages":[{"role":"user","content":"Hi"}],` +
			`"max_tokens":0,"temperature":0,"top_p":0,"seed":0}`,
	}, {
		name: "history with assistant tool calls and tool results",
		req: chat.Request{
			Model: "gpt-4o",
			Messages: []chat.Message{
				user("Weather in Tokyo and Paris?"),
				{Role: chat.Assistant, Reasoning: "never sent", ToolCalls: []chat.ToolCall{
					{ID: "call_1", Name: "get_weather", Arguments: json.RawMessage(`{"city":"Tokyo"}`)},
					{ID: "call_2", Name: "get_weather", Arguments: json.RawMessage(`{"city": "Paris"}`)},
				}},
				{Role: chat.Tool, ToolCallID: "call_1", ToolName: "get_weather", Content: `{"temp":21}`},
				{Role: chat.Tool, ToolCallID: "call_2", Content: ""},
				{Role: chat.Assistant, Content: "Checking once more.", ToolCalls: []chat.ToolCall{
					{ID: "call_3", Name: "now"},
				}},
				{Role: chat.Tool, ToolCallID: "call_3", Content: "12:00"},
				{Role: chat.Assistant, Content: ""},
			},
		},
		want: `{"model":"gpt-4o","messages":[` +
			`{"role":"user","content":"Weather in Tokyo and Paris?"},` +
			`{"role":"assistant","tool_calls":[` +
			`{"id":"call_1","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Tokyo\"}"}},` +
			`{"id":"call_2","type":"function","function":{"name":"get_weather","arguments":"{\"city\": \"Paris\"}"}}]},` +
			`{"role":"tool","tool_call_id":"call_1","content":"{\"temp\":21}"},` +
			`{"role":"tool","tool_call_id":"call_2","content":""},` +
			`{"role":"assistant","content":"Checking once more.","tool_calls":[` +
			`{"id":"call_3","type":"function","function":{"name":"now","arguments":"{}"}}]},` +
			`{"role":"tool","tool_call_id":"call_3","content":"12:00"},` +
			`{"role":"assistant","content":""}]}`,
	}, {
		// OpenAI takes no reasoning back: a committed reasoning block alone
		// (R17.3) would be an empty assistant turn, so it is left out.
		name: "an assistant message of reasoning alone is left out",
		req: chat.Request{
			Model:    "gpt-4o",
			Messages: []chat.Message{user("Hi"), {Role: chat.Assistant, Reasoning: "The user says hi."}, user("Go on")},
		},
		want: `{"model":"gpt-4o","messages":[{"role":"user","content":"Hi"},{"role":"user","content":"Go on"}]}`,
	}, {
		name: "tool call arguments kept by Decode as a JSON string round-trip",
		req: chat.Request{
			Model: "gpt-4o",
			Messages: []chat.Message{{Role: chat.Assistant, ToolCalls: []chat.ToolCall{
				{ID: "call_1", Name: "f", Arguments: json.RawMessage(`"{\"city\":\"Tok"`)},
			}}},
		},
		want: `{"model":"gpt-4o","messages":[{"role":"assistant","tool_calls":[` +
			`{"id":"call_1","type":"function","function":{"name":"f","arguments":"{\"city\":\"Tok"}}]}]}`,
	}, {
		name: "images",
		req: chat.Request{
			Model: "gpt-4o",
			Messages: []chat.Message{
				{Role: chat.User, Content: "What is this?", Images: []chat.Image{
					{Data: png}, {MIMEType: "image/jpeg", Data: jpeg},
				}},
				{Role: chat.User, Images: []chat.Image{{MIMEType: "image/png", Data: png}}},
			},
		},
		want: `{"model":"gpt-4o","messages":[{"role":"user","content":[` +
			`{"type":"text","text":"What is this?"},` +
			`{"type":"image_url","image_url":{"url":"data:image/png;base64,iVBORw=="}},` +
			`{"type":"image_url","image_url":{"url":"data:image/jpeg;base64,/9j/"}}]},` +
			`{"role":"user","content":[{"type":"image_url","image_url":{"url":"data:image/png;base64,iVBORw=="}}]}]}`,
	}, {
		name: "tools",
		req: chat.Request{
			Model:    "gpt-4o",
			Messages: []chat.Message{user("Weather?")},
			Tools: []chat.ToolSpec{
				{Name: "get_weather", Description: "Weather <now> & later", Parameters: weatherParams},
				{Name: "now"},
			},
		},
		want: `{"model":"gpt-4o","messages":[{"role":"user","content":"Weather?"}],"tools":[` +
			`{"type":"function","function":{"name":"get_weather","description":"Weather <now> & later",` +
			`"parameters":{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}}},` +
			`{"type":"function","function":{"name":"now"}}]}`,
	}, {
		name: "schema",
		req: chat.Request{
			Model:    "gpt-4o",
			Messages: []chat.Message{user("Name a city.")},
			Schema:   &chat.Schema{Schema: json.RawMessage(`{"type": "object"}`), Strict: true},
		},
		want: `{"model":"gpt-4o","messages":[{"role":"user","content":"Name a city."}],` +
			`"response_format":{"type":"json_schema","json_schema":{"name":"response","schema":{"type":"object"},"strict":true}}}`,
	}, {
		name: "named non-strict schema",
		req: chat.Request{
			Model:    "gpt-4o",
			Messages: []chat.Message{user("Name a city.")},
			Schema:   &chat.Schema{Name: "city", Schema: json.RawMessage(`{"type":"string"}`)},
		},
		want: `{"model":"gpt-4o","messages":[{"role":"user","content":"Name a city."}],` +
			`"response_format":{"type":"json_schema","json_schema":{"name":"city","schema":{"type":"string"},"strict":false}}}`,
	}, {
		name: "json mode",
		req: chat.Request{
			Model:    "gpt-4o",
			Messages: []chat.Message{user("JSON please.")},
			Options:  chat.Options{JSONMode: true},
		},
		want: `{"model":"gpt-4o","messages":[{"role":"user","content":"JSON please."}],"response_format":{"type":"json_object"}}`,
	}, {
		name: "stream",
		req:  chat.Request{Model: "gpt-4o", Messages: []chat.Message{user("Hi")}, Stream: true},
		want: `{"model":"gpt-4o","messages":[{"role":"user","content":"Hi"}],"stream":true,"stream_options":{"include_usage":true}}`,
	}, {
		name: "no messages",
		req:  chat.Request{Model: "gpt-4o"},
		want: `{"model":"gpt-4o","messages":[]}`,
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := mustEncode(t, &tt.req); got != tt.want {
				t.Errorf("Encode =\n%s\nwant\n%s", got, tt.want)
			}
		})
	}
}

// TestR14_1_ReasoningModelUsesMaxCompletionTokens checks the model-specific
// parameter adaptation of R14.1.
func TestR14_1_ReasoningModelUsesMaxCompletionTokens(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		codec *openai.Codec
		req   chat.Request
		want  string
	}{{
		name:  "o3-mini with effort, cap, seed and stop",
		codec: openai.New(),
		req: chat.Request{
			Model:    "o3-mini",
			Messages: []chat.Message{user("Think.")},
			Options: chat.Options{
				MaxTokens: ptr(500), ReasoningEffort: "high", Seed: ptr(1), Stop: []string{"END"},
			},
		},
		want: `{"model":"o3-mini","messages":[{"role":"user","content":"Think."}],` +
			`"reasoning_effort":"high","max_completion_tokens":500,"seed":1,"stop":["END"]}`,
	}, {
		name:  "case-insensitive family",
		codec: openai.New(),
		req: chat.Request{
			Model:    "GPT-5-mini",
			Messages: []chat.Message{user("Think.")},
			Options:  chat.Options{MaxTokens: ptr(64)},
		},
		want: `{"model":"GPT-5-mini","messages":[{"role":"user","content":"Think."}],"max_completion_tokens":64}`,
	}, {
		name:  "override marks a custom model as reasoning",
		codec: openai.New(openai.WithReasoningModel(func(m string) bool { return m == "my-reasoner" })),
		req: chat.Request{
			Model:    "my-reasoner",
			Messages: []chat.Message{user("Think.")},
			Options:  chat.Options{MaxTokens: ptr(8), ReasoningEffort: "low"},
		},
		want: `{"model":"my-reasoner","messages":[{"role":"user","content":"Think."}],` +
			`"reasoning_effort":"low","max_completion_tokens":8}`,
	}, {
		name:  "override marks a default reasoning model as ordinary",
		codec: openai.New(openai.WithReasoningModel(func(string) bool { return false })),
		req: chat.Request{
			Model:    "o1",
			Messages: []chat.Message{user("Hi")},
			Options:  chat.Options{MaxTokens: ptr(8), Temperature: ptr(0.5)},
		},
		want: `{"model":"o1","messages":[{"role":"user","content":"Hi"}],"max_tokens":8,"temperature":0.5}`,
	}, {
		name:  "nil options keep the defaults",
		codec: openai.New(nil, openai.WithReasoningModel(nil)),
		req: chat.Request{
			Model:    "o4-mini",
			Messages: []chat.Message{user("Hi")},
			Options:  chat.Options{MaxTokens: ptr(8)},
		},
		want: `{"model":"o4-mini","messages":[{"role":"user","content":"Hi"}],"max_completion_tokens":8}`,
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := tt.codec.Encode(&tt.req)
			if err != nil {
				t.Fatalf("Encode: %v", err)
			}
			if string(got) != tt.want {
				t.Errorf("Encode =\n%s\nwant\n%s", got, tt.want)
			}
		})
	}
}

func TestR14_1_IsReasoningModel(t *testing.T) {
	t.Parallel()
	for model, want := range map[string]bool{
		"o1": true, "o1-mini": true, "O3": true, "o3-pro": true, "o4-mini": true,
		"gpt-5": true, "GPT-5-nano": true, "gpt-5.1": true,
		"gpt-4o": false, "gpt-4.1": false, "o2": false, "": false, "o": false,
		"gpt-": false, "ft:o3-mini": false, "llama3": false,
	} {
		if got := openai.IsReasoningModel(model); got != want {
			t.Errorf("IsReasoningModel(%q) = %v, want %v", model, got, want)
		}
	}
}

// TestR14_1_UnsupportedControlsAreErrors checks that a control OpenAI (or
// the model family) does not take is an *codec.UnsupportedError naming the
// control and never its value, not a silent drop.
func TestR14_1_UnsupportedControlsAreErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		model   string
		opts    chat.Options
		control string
		value   string // must not appear in Error()
	}{
		{"TopK", "gpt-4o", chat.Options{TopK: ptr(4217)}, "TopK", "4217"},
		{"ContextLength", "gpt-4o", chat.Options{ContextLength: ptr(8193)}, "ContextLength", "8193"},
		{"Think", "o3", chat.Options{Think: ptr(true)}, "Think", "true"},
		{"KeepAlive", "gpt-4o", chat.Options{KeepAlive: "17m"}, "KeepAlive", "17m"},
		{"Temperature on reasoning model", "o1-mini", chat.Options{Temperature: ptr(0.731)}, "Temperature", "0.731"},
		{"TopP on reasoning model", "gpt-5", chat.Options{TopP: ptr(0.912)}, "TopP", "0.912"},
		{"unknown ReasoningEffort", "o3", chat.Options{ReasoningEffort: "ultra"}, "ReasoningEffort", "ultra"},
		{"ReasoningEffort on non-reasoning model", "gpt-4o", chat.Options{ReasoningEffort: "medium"}, "ReasoningEffort", "medium"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			req := &chat.Request{Model: tt.model, Messages: []chat.Message{user("Hi")}, Options: tt.opts}
			b, err := openai.New().Encode(req)
			if b != nil {
				t.Errorf("Encode returned bytes with an error")
			}
			var ue *codec.UnsupportedError
			if !errors.As(err, &ue) {
				t.Fatalf("error = %#v, want *codec.UnsupportedError", err)
			}
			if ue.Provider != codec.OpenAI {
				t.Errorf("Provider = %q, want %q", ue.Provider, codec.OpenAI)
			}
			if !strings.HasPrefix(ue.Control, tt.control) {
				t.Errorf("Control = %q, want it to start with %q", ue.Control, tt.control)
			}
			msg := err.Error()
			if !strings.Contains(msg, tt.control) {
				t.Errorf("Error() = %q does not name %q", msg, tt.control)
			}
			if strings.Contains(msg, tt.value) {
				t.Errorf("Error() = %q contains the value %q", msg, tt.value)
			}
		})
	}
}

// TestEncodeRejectsInvalidRequests checks the plain (not unsupported)
// errors, and that none of them quotes request content.
func TestEncodeRejectsInvalidRequests(t *testing.T) {
	t.Parallel()
	const secret = "s3cr3t"
	ok := []chat.Message{user("Hi")}
	tests := []struct {
		name string
		req  *chat.Request
	}{
		{"nil request", nil},
		{"empty model", &chat.Request{Messages: ok}},
		{"unknown role", &chat.Request{Model: "m", Messages: []chat.Message{{Role: "developer", Content: secret}}}},
		{"empty role", &chat.Request{Model: "m", Messages: []chat.Message{{Content: secret}}}},
		{"invalid tool parameters", &chat.Request{Model: "m", Messages: ok,
			Tools: []chat.ToolSpec{{Name: "f", Parameters: json.RawMessage(`{"` + secret)}}}},
		{"empty tool name", &chat.Request{Model: "m", Messages: ok, Tools: []chat.ToolSpec{{Description: secret}}}},
		{"invalid tool call arguments", &chat.Request{Model: "m", Messages: []chat.Message{{Role: chat.Assistant,
			ToolCalls: []chat.ToolCall{{ID: "c", Name: "f", Arguments: json.RawMessage(`{"a":"` + secret)}}}}}},
		{"tool call without ID", &chat.Request{Model: "m", Messages: []chat.Message{{Role: chat.Assistant,
			ToolCalls: []chat.ToolCall{{Name: "f"}}}}}},
		{"tool call without name", &chat.Request{Model: "m", Messages: []chat.Message{{Role: chat.Assistant,
			ToolCalls: []chat.ToolCall{{ID: "c"}}}}}},
		{"tool calls on a user message", &chat.Request{Model: "m", Messages: []chat.Message{{Role: chat.User,
			ToolCalls: []chat.ToolCall{{ID: "c", Name: "f"}}}}}},
		{"images on an assistant message", &chat.Request{Model: "m", Messages: []chat.Message{{Role: chat.Assistant,
			Images: []chat.Image{{Data: []byte(secret)}}}}}},
		{"images on a system message", &chat.Request{Model: "m", Messages: []chat.Message{{Role: chat.System,
			Images: []chat.Image{{Data: []byte(secret)}}}}}},
		{"tool message without tool call ID", &chat.Request{Model: "m", Messages: []chat.Message{{Role: chat.Tool, Content: secret}}}},
		{"invalid schema", &chat.Request{Model: "m", Messages: ok, Schema: &chat.Schema{Schema: json.RawMessage(secret)}}},
		{"empty schema", &chat.Request{Model: "m", Messages: ok, Schema: &chat.Schema{Name: secret}}},
		{"schema and JSON mode", &chat.Request{Model: "m", Messages: ok,
			Schema: &chat.Schema{Schema: json.RawMessage(`{}`)}, Options: chat.Options{JSONMode: true}}},
		{"NaN temperature", &chat.Request{Model: "m", Messages: ok, Options: chat.Options{Temperature: ptr(math.NaN())}}},
		{"infinite top_p", &chat.Request{Model: "m", Messages: ok, Options: chat.Options{TopP: ptr(math.Inf(1))}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			b, err := openai.New().Encode(tt.req)
			if err == nil {
				t.Fatalf("Encode = %s, want an error", b)
			}
			if b != nil {
				t.Errorf("Encode returned bytes with an error")
			}
			var ue *codec.UnsupportedError
			if errors.As(err, &ue) {
				t.Errorf("error = %v, want a plain error, not *codec.UnsupportedError", err)
			}
			if strings.Contains(err.Error(), secret) {
				t.Errorf("Error() = %q quotes request content", err)
			}
		})
	}
}

// TestR2_3_EncodeIsDeterministicAndDoesNotAlias checks that a request
// encodes to the same bytes every time and that bytes already produced do
// not change when the request is mutated afterwards.
func TestR2_3_EncodeIsDeterministicAndDoesNotAlias(t *testing.T) {
	t.Parallel()
	params := append(json.RawMessage(nil), weatherParams...)
	args := json.RawMessage(`{"city":"Tokyo"}`)
	schema := json.RawMessage(`{"type":"object"}`)
	img := []byte{1, 2, 3, 4}
	temp := 0.5
	req := &chat.Request{
		Model: "gpt-4o",
		Messages: []chat.Message{
			{Role: chat.System, Content: "sys"},
			{Role: chat.User, Content: "look", Images: []chat.Image{{Data: img}}},
			{Role: chat.Assistant, ToolCalls: []chat.ToolCall{{ID: "c1", Name: "get_weather", Arguments: args}}},
			{Role: chat.Tool, ToolCallID: "c1", Content: "21"},
		},
		Tools:   []chat.ToolSpec{{Name: "get_weather", Parameters: params}},
		Schema:  &chat.Schema{Name: "out", Schema: schema, Strict: true},
		Options: chat.Options{Temperature: &temp, Stop: []string{"x"}},
		Stream:  true,
	}
	c := openai.New()
	first, err := c.Encode(req)
	if err != nil {
		t.Fatal(err)
	}
	saved := bytes.Clone(first)
	for range 10 {
		again, err := c.Encode(req)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(again, first) {
			t.Fatalf("second Encode =\n%s\nfirst\n%s", again, first)
		}
	}

	req.Model = "other"
	req.Messages[0].Content = "changed"
	req.Messages[1].Content = "changed"
	img[0] = 99
	args[2] = 'X'
	params[0] = ' '
	schema[2] = 'X'
	temp = 0.9
	req.Options.Stop[0] = "y"
	req.Tools[0].Name = "changed"
	req.Messages = append(req.Messages, user("more"))
	if !bytes.Equal(first, saved) {
		t.Errorf("bytes changed after the request was mutated:\n%s\nwas\n%s", first, saved)
	}
}

// TestEncodeIsSafeForConcurrentUse runs Encode from many goroutines (run
// with -race).
func TestEncodeIsSafeForConcurrentUse(t *testing.T) {
	t.Parallel()
	c := openai.New()
	req := &chat.Request{Model: "o3", Messages: []chat.Message{user("Hi")}, Options: chat.Options{MaxTokens: ptr(3)}}
	want := mustEncode(t, req)
	done := make(chan string)
	for range 8 {
		go func() {
			b, _ := c.Encode(req)
			done <- string(b)
		}()
	}
	for range 8 {
		if got := <-done; got != want {
			t.Errorf("concurrent Encode = %s, want %s", got, want)
		}
	}
}
