package omlx_test

import (
	"encoding/json"
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/recourse-dev/recourse/chat"
	"github.com/recourse-dev/recourse/codec"
	"github.com/recourse-dev/recourse/codecs/omlx"
)

func ptr[T any](v T) *T { return &v }

func user(text string) chat.Message { return chat.Message{Role: chat.User, Content: text} }

// secret is a canary: no error text may contain it.
const secret = "sk-canary-4f2d"

func TestCodecIdentity(t *testing.T) {
	t.Parallel()
	c := omlx.New()
	if got := c.Provider(); got != codec.OMLX {
		t.Errorf("Provider() = %q, want %q", got, codec.OMLX)
	}
	if got := c.Path(); got != "/v1/chat/completions" {
		t.Errorf("Path() = %q, want /v1/chat/completions", got)
	}
}

func TestR7_2_OMLXLegacyTimeout(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		opts []omlx.Option
		want time.Duration
	}{
		{"default is 300s", nil, 300 * time.Second},
		{"nil option is ignored", []omlx.Option{nil}, omlx.DefaultLegacyTimeout},
		{"overridden", []omlx.Option{omlx.WithLegacyTimeout(90 * time.Second)}, 90 * time.Second},
		{"last option wins", []omlx.Option{omlx.WithLegacyTimeout(time.Second), omlx.WithLegacyTimeout(2 * time.Second)}, 2 * time.Second},
		{"zero means none", []omlx.Option{omlx.WithLegacyTimeout(0)}, 0},
		{"negative means none", []omlx.Option{omlx.WithLegacyTimeout(-time.Second)}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := omlx.New(tt.opts...).LegacyTimeout(); got != tt.want {
				t.Errorf("LegacyTimeout() = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestR14_1_OMLXEncodingGolden(t *testing.T) {
	t.Parallel()
	base := func(mut func(r *chat.Request)) *chat.Request {
		r := &chat.Request{Model: "qwen3", Messages: []chat.Message{user("hi")}}
		if mut != nil {
			mut(r)
		}
		return r
	}
	const head = `{"model":"qwen3","messages":[{"role":"user","content":"hi"}],"stream":false`
	tests := []struct {
		name string
		req  *chat.Request
		want string
	}{
		{"minimal request", base(nil), head + `}`},
		{"stream asks for usage", base(func(r *chat.Request) { r.Stream = true }),
			`{"model":"qwen3","messages":[{"role":"user","content":"hi"}],"stream":true,"stream_options":{"include_usage":true}}`},
		{"no messages is an empty array", &chat.Request{Model: "m"}, `{"model":"m","messages":[],"stream":false}`},
		{"temperature", base(func(r *chat.Request) { r.Options.Temperature = ptr(0.2) }), head + `,"temperature":0.2}`},
		{"top_p", base(func(r *chat.Request) { r.Options.TopP = ptr(0.9) }), head + `,"top_p":0.9}`},
		{"top_k", base(func(r *chat.Request) { r.Options.TopK = ptr(40) }), head + `,"top_k":40}`},
		{"max_tokens, never max_completion_tokens", base(func(r *chat.Request) { r.Options.MaxTokens = ptr(256) }), head + `,"max_tokens":256}`},
		{"stop", base(func(r *chat.Request) { r.Options.Stop = []string{"\n", "END"} }), head + `,"stop":["\n","END"]}`},
		{"empty stop is not sent", base(func(r *chat.Request) { r.Options.Stop = []string{} }), head + `}`},
		{"reasoning_effort", base(func(r *chat.Request) { r.Options.ReasoningEffort = "low" }), head + `,"reasoning_effort":"low"}`},
		{"json_schema response_format", base(func(r *chat.Request) {
			r.Schema = &chat.Schema{Name: "answer", Strict: true, Schema: json.RawMessage(`{ "type": "object" }`)}
		}), head + `,"response_format":{"type":"json_schema","json_schema":{"name":"answer","schema":{"type":"object"},"strict":true}}}`},
		{"unnamed schema is named response; strict false is not sent", base(func(r *chat.Request) {
			r.Schema = &chat.Schema{Schema: json.RawMessage(`{"type":"object"}`)}
		}), head + `,"response_format":{"type":"json_schema","json_schema":{"name":"response","schema":{"type":"object"}}}}`},
		{"json_object response_format", base(func(r *chat.Request) { r.Options.JSONMode = true }), head + `,"response_format":{"type":"json_object"}}`},
		{"schema wins over JSONMode", base(func(r *chat.Request) {
			r.Options.JSONMode = true
			r.Schema = &chat.Schema{Name: "s", Schema: json.RawMessage(`{}`)}
		}), head + `,"response_format":{"type":"json_schema","json_schema":{"name":"s","schema":{}}}}`},
		{"user images are content parts with data URLs", base(func(r *chat.Request) {
			r.Messages[0].Images = []chat.Image{{MIMEType: "image/jpeg", Data: []byte{0xff, 0xd8, 0xff}}, {Data: []byte("PNG?")}}
		}), `{"model":"qwen3","messages":[{"role":"user","content":[{"type":"text","text":"hi"},` +
			`{"type":"image_url","image_url":{"url":"data:image/jpeg;base64,/9j/"}},` +
			`{"type":"image_url","image_url":{"url":"data:image/png;base64,UE5HPw=="}}]}],"stream":false}`},
		{"image without text has no text part", &chat.Request{Model: "m", Messages: []chat.Message{{Role: chat.User, Images: []chat.Image{{Data: []byte{1}}}}}},
			`{"model":"m","messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"data:image/png;base64,AQ=="}}]}],"stream":false}`},
		{"tool calls carry arguments as JSON strings; tool messages carry tool_call_id", base(func(r *chat.Request) {
			r.Messages = append(r.Messages,
				chat.Message{Role: chat.Assistant, Reasoning: "not sent", ToolCalls: []chat.ToolCall{
					{ID: "call_1", Name: "get_weather", Arguments: json.RawMessage(`{"city":"Tokyo"}`)},
				}},
				chat.Message{Role: chat.Tool, Content: "22C", ToolCallID: "call_1", ToolName: "get_weather"},
				chat.Message{Role: chat.Assistant, Content: "It is 22C.", ToolCalls: []chat.ToolCall{{ID: "call_2", Name: "f", Arguments: json.RawMessage(`{}`)}}},
			)
		}), `{"model":"qwen3","messages":[{"role":"user","content":"hi"},` +
			`{"role":"assistant","content":null,"tool_calls":[{"id":"call_1","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Tokyo\"}"}}]},` +
			`{"role":"tool","content":"22C","tool_call_id":"call_1"},` +
			`{"role":"assistant","content":"It is 22C.","tool_calls":[{"id":"call_2","type":"function","function":{"name":"f","arguments":"{}"}}]}],"stream":false}`},
		{"an assistant message of reasoning alone is left out", base(func(r *chat.Request) {
			r.Messages = append(r.Messages, chat.Message{Role: chat.Assistant, Reasoning: "The user says hi."}, user("go on"))
		}), `{"model":"qwen3","messages":[{"role":"user","content":"hi"},{"role":"user","content":"go on"}],"stream":false}`},
		{"tools", base(func(r *chat.Request) {
			r.Tools = []chat.ToolSpec{
				{Name: "get_weather", Description: "Weather for a city.", Parameters: json.RawMessage(`{"type":"object","properties":{"city":{"type":"string"}}}`)},
				{Name: "ping"},
			}
		}), head + `,"tools":[{"type":"function","function":{"name":"get_weather","description":"Weather for a city.","parameters":{"type":"object","properties":{"city":{"type":"string"}}}}},{"type":"function","function":{"name":"ping"}}]}`},
		{"HTML characters travel as written", &chat.Request{Model: "m", Messages: []chat.Message{{Role: chat.System, Content: "<think> & </think>"}}},
			`{"model":"m","messages":[{"role":"system","content":"<think> & </think>"}],"stream":false}`},
		{"every field in stable order", base(func(r *chat.Request) {
			r.Stream = true
			r.Options = chat.Options{ReasoningEffort: "high", JSONMode: true, Stop: []string{"x"}, MaxTokens: ptr(9), TopK: ptr(8), TopP: ptr(0.7), Temperature: ptr(0.0)}
			r.Tools = []chat.ToolSpec{{Name: "t"}}
		}), `{"model":"qwen3","messages":[{"role":"user","content":"hi"}],"stream":true,"stream_options":{"include_usage":true},` +
			`"temperature":0,"top_p":0.7,"top_k":8,"max_tokens":9,"stop":["x"],"tools":[{"type":"function","function":{"name":"t"}}],` +
			`"response_format":{"type":"json_object"},"reasoning_effort":"high"}`},
	}
	c := omlx.New()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := c.Encode(tt.req)
			if err != nil {
				t.Fatalf("Encode: %v", err)
			}
			if string(got) != tt.want {
				t.Errorf("Encode:\n got %s\nwant %s", got, tt.want)
			}
			if strings.Contains(string(got), "max_completion_tokens") {
				t.Error("Encode sent max_completion_tokens")
			}
		})
	}
}

func TestR14_1_OMLXUnsupportedControls(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		opts    chat.Options
		control string
	}{
		{"seed is not documented", chat.Options{Seed: ptr(424242)}, "Seed"},
		{"context length", chat.Options{ContextLength: ptr(313131)}, "ContextLength"},
		{"think", chat.Options{Think: ptr(true)}, "Think"},
		{"think false is still a control", chat.Options{Think: ptr(false)}, "Think"},
		{"keep alive", chat.Options{KeepAlive: secret}, "KeepAlive"},
		{"the first unsupported control is named", chat.Options{KeepAlive: secret, Seed: ptr(1)}, "Seed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			body, err := omlx.New().Encode(&chat.Request{Model: "m", Messages: []chat.Message{user("hi")}, Options: tt.opts})
			if body != nil {
				t.Errorf("Encode returned a body with an error: %s", body)
			}
			var ue *codec.UnsupportedError
			if !errors.As(err, &ue) {
				t.Fatalf("Encode error = %v, want *codec.UnsupportedError", err)
			}
			if ue.Provider != codec.OMLX || ue.Control != tt.control {
				t.Errorf("UnsupportedError = %+v, want provider omlx, control %s", ue, tt.control)
			}
			msg := err.Error()
			if !strings.Contains(msg, tt.control) {
				t.Errorf("Error() = %q does not name %s", msg, tt.control)
			}
			for _, v := range []string{secret, "424242", "313131", "true", "false"} {
				if strings.Contains(msg, v) {
					t.Errorf("Error() = %q contains the value %q", msg, v)
				}
			}
		})
	}
}

func TestR14_1_OMLXEncodeRejectsInvalidRequests(t *testing.T) {
	t.Parallel()
	withCall := func(args string) *chat.Request {
		return &chat.Request{Model: "m", Messages: []chat.Message{{Role: chat.Assistant, ToolCalls: []chat.ToolCall{{ID: "c", Name: "f", Arguments: json.RawMessage(args)}}}}}
	}
	withImage := func(role chat.Role, im chat.Image) *chat.Request {
		return &chat.Request{Model: "m", Messages: []chat.Message{{Role: role, Content: secret, Images: []chat.Image{im}}}}
	}
	tests := []struct {
		name string
		req  *chat.Request
	}{
		{"nil request", nil},
		{"empty model", &chat.Request{Messages: []chat.Message{user(secret)}}},
		{"unknown reasoning effort", &chat.Request{Model: "m", Options: chat.Options{ReasoningEffort: secret}}},
		{"arguments array", withCall(`["` + secret + `"]`)},
		{"arguments empty", withCall(``)},
		{"arguments invalid JSON", withCall(`{"a":"` + secret + `"`)},
		{"tool call without name", &chat.Request{Model: "m", Messages: []chat.Message{{Role: chat.Assistant, ToolCalls: []chat.ToolCall{{Arguments: json.RawMessage(`{}`)}}}}}},
		{"image on an assistant message", withImage(chat.Assistant, chat.Image{Data: []byte{1}})},
		{"image on a system message", withImage(chat.System, chat.Image{Data: []byte{1}})},
		{"empty image", withImage(chat.User, chat.Image{})},
		{"MIME type without subtype", withImage(chat.User, chat.Image{MIMEType: "image", Data: []byte{1}})},
		{"MIME type that breaks the data URL", withImage(chat.User, chat.Image{MIMEType: "image/png;base64,x", Data: []byte{1}})},
		{"schema not an object", &chat.Request{Model: "m", Schema: &chat.Schema{Schema: json.RawMessage(`"` + secret + `"`)}}},
		{"schema empty", &chat.Request{Model: "m", Schema: &chat.Schema{}}},
		{"tool without name", &chat.Request{Model: "m", Tools: []chat.ToolSpec{{Description: secret}}}},
		{"tool parameters not an object", &chat.Request{Model: "m", Tools: []chat.ToolSpec{{Name: "f", Parameters: json.RawMessage(`true`)}}}},
		{"temperature NaN", &chat.Request{Model: "m", Options: chat.Options{Temperature: ptr(math.NaN())}}},
		{"top_p infinite", &chat.Request{Model: "m", Options: chat.Options{TopP: ptr(math.Inf(-1))}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			body, err := omlx.New().Encode(tt.req)
			if err == nil {
				t.Fatalf("Encode succeeded: %s", body)
			}
			var ue *codec.UnsupportedError
			if errors.As(err, &ue) {
				t.Errorf("Encode error is an UnsupportedError: %v", err)
			}
			if strings.Contains(err.Error(), secret) {
				t.Errorf("Error() quotes a value: %q", err)
			}
		})
	}
}

func TestR2_3_OMLXEncodeIsDeterministicAndDetached(t *testing.T) {
	t.Parallel()
	req := &chat.Request{
		Model: "m",
		Messages: []chat.Message{
			{Role: chat.User, Content: "look", Images: []chat.Image{{MIMEType: "image/png", Data: []byte{1, 2, 3}}}},
			{Role: chat.Assistant, ToolCalls: []chat.ToolCall{{ID: "c", Name: "f", Arguments: json.RawMessage(`{"a":1}`)}}},
			{Role: chat.Tool, Content: "ok", ToolCallID: "c"},
		},
		Tools:   []chat.ToolSpec{{Name: "f", Parameters: json.RawMessage(`{"type":"object"}`)}},
		Schema:  &chat.Schema{Name: "s", Schema: json.RawMessage(`{"type":"object"}`)},
		Options: chat.Options{Temperature: ptr(0.5), TopK: ptr(3), MaxTokens: ptr(10), Stop: []string{"x"}, ReasoningEffort: "medium"},
		Stream:  true,
	}
	c := omlx.New()
	first, err := c.Encode(req)
	if err != nil {
		t.Fatal(err)
	}
	want := string(first)
	if second, err := c.Encode(req); err != nil || string(second) != want {
		t.Fatalf("second Encode = %s, %v; want %s", second, err, want)
	}
	req.Model = "other"
	req.Messages[0].Content = "changed"
	req.Messages[0].Images[0].Data[0] = 9
	req.Messages[1].ToolCalls[0].Arguments[5] = '7'
	req.Messages[2].ToolCallID = "d"
	req.Tools[0].Parameters[2] = 'T'
	req.Schema.Schema[2] = 'T'
	*req.Options.Temperature = 1.5
	*req.Options.MaxTokens = 99
	req.Options.Stop[0] = "y"
	if string(first) != want {
		t.Errorf("an earlier encoding changed after the request was mutated:\n got %s\nwant %s", first, want)
	}
}
