package ollama_test

import (
	"encoding/json"
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/recourse-dev/recourse/chat"
	"github.com/recourse-dev/recourse/codec"
	"github.com/recourse-dev/recourse/codecs/ollama"
)

func ptr[T any](v T) *T { return &v }

func user(text string) chat.Message { return chat.Message{Role: chat.User, Content: text} }

// secret is a canary: no error text may contain it.
const secret = "sk-canary-4f2d"

func TestCodecIdentity(t *testing.T) {
	t.Parallel()
	c := ollama.New()
	if got := c.Provider(); got != codec.Ollama {
		t.Errorf("Provider() = %q, want %q", got, codec.Ollama)
	}
	if got := c.Path(); got != "/api/chat" {
		t.Errorf("Path() = %q, want /api/chat", got)
	}
	if c2 := ollama.New(nil); c2 == nil {
		t.Error("New(nil) = nil")
	}
}

func TestR14_1_OllamaEncodingGolden(t *testing.T) {
	t.Parallel()
	base := func(mut func(r *chat.Request)) *chat.Request {
		r := &chat.Request{Model: "llama3.2", Messages: []chat.Message{user("hi")}}
		if mut != nil {
			mut(r)
		}
		return r
	}
	const head = `{"model":"llama3.2","messages":[{"role":"user","content":"hi"}],"stream":false`
	tests := []struct {
		name string
		req  *chat.Request
		want string
	}{
		{"minimal request sends stream false explicitly", base(nil), head + `}`},
		{"stream true", base(func(r *chat.Request) { r.Stream = true }),
			`{"model":"llama3.2","messages":[{"role":"user","content":"hi"}],"stream":true}`},
		{"no messages is an empty array", &chat.Request{Model: "m"}, `{"model":"m","messages":[],"stream":false}`},
		{"temperature", base(func(r *chat.Request) { r.Options.Temperature = ptr(0.2) }), head + `,"options":{"temperature":0.2}}`},
		{"top_p", base(func(r *chat.Request) { r.Options.TopP = ptr(0.9) }), head + `,"options":{"top_p":0.9}}`},
		{"top_k", base(func(r *chat.Request) { r.Options.TopK = ptr(40) }), head + `,"options":{"top_k":40}}`},
		{"num_ctx from ContextLength", base(func(r *chat.Request) { r.Options.ContextLength = ptr(8192) }), head + `,"options":{"num_ctx":8192}}`},
		{"num_predict from MaxTokens", base(func(r *chat.Request) { r.Options.MaxTokens = ptr(128) }), head + `,"options":{"num_predict":128}}`},
		{"stop", base(func(r *chat.Request) { r.Options.Stop = []string{"\n\n", "END"} }), head + `,"options":{"stop":["\n\n","END"]}}`},
		{"empty stop is not sent", base(func(r *chat.Request) { r.Options.Stop = []string{} }), head + `}`},
		{"seed", base(func(r *chat.Request) { r.Options.Seed = ptr(7) }), head + `,"options":{"seed":7}}`},
		{"zero values that are set are sent", base(func(r *chat.Request) {
			r.Options.Temperature = ptr(0.0)
			r.Options.Seed = ptr(0)
		}), head + `,"options":{"temperature":0,"seed":0}}`},
		{"all options in stable order", base(func(r *chat.Request) {
			r.Options = chat.Options{Seed: ptr(1), Stop: []string{"x"}, MaxTokens: ptr(2), ContextLength: ptr(3), TopK: ptr(4), TopP: ptr(0.5), Temperature: ptr(0.6)}
		}), head + `,"options":{"temperature":0.6,"top_p":0.5,"top_k":4,"num_ctx":3,"num_predict":2,"stop":["x"],"seed":1}}`},
		{"format schema is the schema object itself", base(func(r *chat.Request) {
			r.Schema = &chat.Schema{Name: "answer", Strict: true, Schema: json.RawMessage(`{ "type": "object", "properties": {"a": {"type":"string"}} }`)}
		}), head + `,"format":{"type":"object","properties":{"a":{"type":"string"}}}}`},
		{"format json from JSONMode", base(func(r *chat.Request) { r.Options.JSONMode = true }), head + `,"format":"json"}`},
		{"schema wins over JSONMode", base(func(r *chat.Request) {
			r.Options.JSONMode = true
			r.Schema = &chat.Schema{Schema: json.RawMessage(`{"type":"object"}`)}
		}), head + `,"format":{"type":"object"}}`},
		{"think true", base(func(r *chat.Request) { r.Options.Think = ptr(true) }), head + `,"think":true}`},
		{"think false is sent", base(func(r *chat.Request) { r.Options.Think = ptr(false) }), head + `,"think":false}`},
		{"keep_alive", base(func(r *chat.Request) { r.Options.KeepAlive = "5m" }), head + `,"keep_alive":"5m"}`},
		{"images are standard base64 without data prefix", base(func(r *chat.Request) {
			r.Messages[0].Images = []chat.Image{{MIMEType: "image/jpeg", Data: []byte{0xff, 0xd8, 0xff}}, {Data: []byte("PNG?")}}
		}), `{"model":"llama3.2","messages":[{"role":"user","content":"hi","images":["/9j/","UE5HPw=="]}],"stream":false}`},
		{"assistant reasoning alone is sent as thinking", base(func(r *chat.Request) {
			r.Messages = append(r.Messages, chat.Message{Role: chat.Assistant, Reasoning: "The user says hi."},
				chat.Message{Role: chat.User, Content: "go on", Reasoning: "not sent on a user message"})
		}), `{"model":"llama3.2","messages":[{"role":"user","content":"hi"},` +
			`{"role":"assistant","content":"","thinking":"The user says hi."},{"role":"user","content":"go on"}],"stream":false}`},
		{"assistant tool calls carry argument objects and optional ids", base(func(r *chat.Request) {
			r.Messages = append(r.Messages,
				chat.Message{Role: chat.Assistant, Reasoning: "Both cities.", ToolCalls: []chat.ToolCall{
					{Name: "get_weather", Arguments: json.RawMessage(`{ "city": "Tokyo" }`)},
					{ID: "call_1", Name: "get_time", Arguments: json.RawMessage(`{}`)},
				}},
				chat.Message{Role: chat.Tool, Content: "22C", ToolName: "get_weather"},
				chat.Message{Role: chat.Tool, Content: "noon", ToolName: "get_time", ToolCallID: "call_1"},
			)
		}), `{"model":"llama3.2","messages":[{"role":"user","content":"hi"},` +
			`{"role":"assistant","content":"","thinking":"Both cities.","tool_calls":[{"function":{"name":"get_weather","arguments":{"city":"Tokyo"}}},{"id":"call_1","function":{"name":"get_time","arguments":{}}}]},` +
			`{"role":"tool","content":"22C","tool_name":"get_weather"},` +
			`{"role":"tool","content":"noon","tool_name":"get_time","tool_call_id":"call_1"}],"stream":false}`},
		{"tools", base(func(r *chat.Request) {
			r.Tools = []chat.ToolSpec{
				{Name: "get_weather", Description: "Weather for a city.", Parameters: json.RawMessage(`{"type":"object","required":["city"],"properties":{"city":{"type":"string"}}}`)},
				{Name: "ping"},
			}
		}), head + `,"tools":[{"type":"function","function":{"name":"get_weather","description":"Weather for a city.","parameters":{"type":"object","required":["city"],"properties":{"city":{"type":"string"}}}}},{"type":"function","function":{"name":"ping"}}]}`},
		{"system message and HTML characters travel as written", &chat.Request{Model: "m", Messages: []chat.Message{
			{Role: chat.System, Content: "use <think> & \"quotes\""},
		}}, `{"model":"m","messages":[{"role":"system","content":"use <think> & \"quotes\""}],"stream":false}`},
		{"every field in stable order", base(func(r *chat.Request) {
			r.Stream = true
			r.Options = chat.Options{KeepAlive: "1h", Think: ptr(true), Temperature: ptr(1.0), JSONMode: true}
			r.Tools = []chat.ToolSpec{{Name: "t"}}
		}), `{"model":"llama3.2","messages":[{"role":"user","content":"hi"}],"stream":true,"format":"json","options":{"temperature":1},"tools":[{"type":"function","function":{"name":"t"}}],"think":true,"keep_alive":"1h"}`},
	}
	c := ollama.New()
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
			if !json.Valid(got) {
				t.Error("Encode produced invalid JSON")
			}
		})
	}
}

func TestR14_1_OllamaUnsupportedControls(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		opts    chat.Options
		control string
	}{
		{"reasoning effort (think levels are not mapped)", chat.Options{ReasoningEffort: secret}, "ReasoningEffort"},
		{"reasoning effort high", chat.Options{ReasoningEffort: "high", Think: ptr(true)}, "ReasoningEffort"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			body, err := ollama.New().Encode(&chat.Request{Model: "m", Messages: []chat.Message{user("hi")}, Options: tt.opts})
			if body != nil {
				t.Errorf("Encode returned a body with an error: %s", body)
			}
			var ue *codec.UnsupportedError
			if !errors.As(err, &ue) {
				t.Fatalf("Encode error = %v, want *codec.UnsupportedError", err)
			}
			if ue.Provider != codec.Ollama || ue.Control != tt.control {
				t.Errorf("UnsupportedError = %+v, want provider ollama, control %s", ue, tt.control)
			}
			if msg := err.Error(); !strings.Contains(msg, tt.control) || strings.Contains(msg, secret) {
				t.Errorf("Error() = %q: must name %s and no value", msg, tt.control)
			}
		})
	}
}

func TestR14_1_OllamaEncodeRejectsInvalidRequests(t *testing.T) {
	t.Parallel()
	withCall := func(args string) *chat.Request {
		return &chat.Request{Model: "m", Messages: []chat.Message{{Role: chat.Assistant, ToolCalls: []chat.ToolCall{{Name: "f", Arguments: json.RawMessage(args)}}}}}
	}
	tests := []struct {
		name string
		req  *chat.Request
	}{
		{"nil request", nil},
		{"empty model", &chat.Request{Messages: []chat.Message{user(secret)}}},
		{"arguments array", withCall(`["` + secret + `"]`)},
		{"arguments string", withCall(`"{\"a\":\"` + secret + `\"}"`)},
		{"arguments null", withCall(`null`)},
		{"arguments empty", withCall(``)},
		{"arguments invalid JSON", withCall(`{"a":"` + secret + `"`)},
		{"tool call without name", &chat.Request{Model: "m", Messages: []chat.Message{{Role: chat.Assistant, ToolCalls: []chat.ToolCall{{Arguments: json.RawMessage(`{}`)}}}}}},
		{"empty image", &chat.Request{Model: "m", Messages: []chat.Message{{Role: chat.User, Content: secret, Images: []chat.Image{{}}}}}},
		{"schema not an object", &chat.Request{Model: "m", Schema: &chat.Schema{Schema: json.RawMessage(`"` + secret + `"`)}}},
		{"schema invalid JSON", &chat.Request{Model: "m", Schema: &chat.Schema{Schema: json.RawMessage(`{` + secret)}}},
		{"schema empty", &chat.Request{Model: "m", Schema: &chat.Schema{}}},
		{"tool without name", &chat.Request{Model: "m", Tools: []chat.ToolSpec{{Description: secret}}}},
		{"tool parameters not an object", &chat.Request{Model: "m", Tools: []chat.ToolSpec{{Name: "f", Parameters: json.RawMessage(`[1]`)}}}},
		{"temperature NaN", &chat.Request{Model: "m", Options: chat.Options{Temperature: ptr(math.NaN())}}},
		{"top_p infinite", &chat.Request{Model: "m", Options: chat.Options{TopP: ptr(math.Inf(1))}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			body, err := ollama.New().Encode(tt.req)
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

func TestR2_3_OllamaEncodeIsDeterministicAndDetached(t *testing.T) {
	t.Parallel()
	req := &chat.Request{
		Model: "m",
		Messages: []chat.Message{
			{Role: chat.User, Content: "look", Images: []chat.Image{{Data: []byte{1, 2, 3}}}},
			{Role: chat.Assistant, ToolCalls: []chat.ToolCall{{ID: "c", Name: "f", Arguments: json.RawMessage(`{"a":1}`)}}},
			{Role: chat.Tool, Content: "ok", ToolName: "f", ToolCallID: "c"},
		},
		Tools:   []chat.ToolSpec{{Name: "f", Parameters: json.RawMessage(`{"type":"object"}`)}},
		Schema:  &chat.Schema{Schema: json.RawMessage(`{"type":"object"}`)},
		Options: chat.Options{Temperature: ptr(0.5), TopK: ptr(3), Stop: []string{"x"}, Think: ptr(true), KeepAlive: "5m"},
	}
	c := ollama.New()
	first, err := c.Encode(req)
	if err != nil {
		t.Fatal(err)
	}
	want := string(first)
	second, err := c.Encode(req)
	if err != nil || string(second) != want {
		t.Fatalf("second Encode = %s, %v; want %s", second, err, want)
	}

	// Mutate everything reachable from req, in place.
	req.Model = "other"
	req.Messages[0].Content = "changed"
	req.Messages[0].Images[0].Data[0] = 9
	req.Messages[1].ToolCalls[0].Arguments[5] = '7'
	req.Messages[2].ToolName = "g"
	req.Tools[0].Parameters[2] = 'T'
	req.Schema.Schema[2] = 'T'
	*req.Options.Temperature = 1.5
	*req.Options.TopK = 99
	req.Options.Stop[0] = "y"
	*req.Options.Think = false

	if string(first) != want {
		t.Errorf("an earlier encoding changed after the request was mutated:\n got %s\nwant %s", first, want)
	}
}
