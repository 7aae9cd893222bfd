package openai_test

import (
	"encoding/json"
	"errors"
	"net/http"
	"reflect"
	"strings"
	"testing"

	"github.com/recourse-dev/recourse/chat"
	"github.com/recourse-dev/recourse/codec"
	"github.com/recourse-dev/recourse/codecs/openai"
)

// TestR10_2_DescribeOperation checks the operation Describe reads from an
// encoded request, for bodies the codec produced and for hand-written ones.
func TestR10_2_DescribeOperation(t *testing.T) {
	t.Parallel()
	c := openai.New()
	encoded := func(req chat.Request) string {
		t.Helper()
		b, err := c.Encode(&req)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	msgs := []chat.Message{user("Hi")}
	tests := []struct {
		name string
		body string
		want codec.RequestInfo
	}{
		{"encoded ordinary", encoded(chat.Request{Model: "gpt-4o", Messages: msgs}),
			codec.RequestInfo{Model: "gpt-4o", Operation: codec.Ordinary}},
		{"encoded schema", encoded(chat.Request{Model: "gpt-4o", Messages: msgs, Schema: &chat.Schema{Schema: json.RawMessage(`{}`)}}),
			codec.RequestInfo{Model: "gpt-4o", Operation: codec.Structured}},
		{"encoded json mode", encoded(chat.Request{Model: "o3", Messages: msgs, Options: chat.Options{JSONMode: true}}),
			codec.RequestInfo{Model: "o3", Operation: codec.Structured}},
		{"encoded stream", encoded(chat.Request{Model: "gpt-4o", Messages: msgs, Stream: true}),
			codec.RequestInfo{Model: "gpt-4o", Operation: codec.Streaming}},
		{"streamed schema is streaming", encoded(chat.Request{Model: "gpt-4o", Messages: msgs, Stream: true,
			Schema: &chat.Schema{Schema: json.RawMessage(`{}`)}}),
			codec.RequestInfo{Model: "gpt-4o", Operation: codec.Streaming}},
		{"text response_format is ordinary", `{"model":"m","response_format":{"type":"text"}}`,
			codec.RequestInfo{Model: "m", Operation: codec.Ordinary}},
		{"stream false", `{"model":"m","stream":false}`, codec.RequestInfo{Model: "m", Operation: codec.Ordinary}},
		{"nulls", `{"model":null,"stream":null,"response_format":null}`, codec.RequestInfo{Operation: codec.Ordinary}},
		{"escaped keys", `{"mod\u0065l":"m","str\u0065am":true}`, codec.RequestInfo{Model: "m", Operation: codec.Streaming}},
		{"keys are case-sensitive", `{"Model":"m","Stream":true}`, codec.RequestInfo{Operation: codec.Ordinary}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := c.Describe([]byte(tt.body))
			if err != nil {
				t.Fatalf("Describe: %v", err)
			}
			if got != tt.want {
				t.Errorf("Describe = %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestR4_5_DescribeMalformed(t *testing.T) {
	t.Parallel()
	tests := []struct{ name, body, what string }{
		{"empty", ``, "not valid JSON"},
		{"truncated", `{"model":"gpt-4o","stre`, "not valid JSON"},
		{"trailing data", `{"model":"m"} {}`, "not valid JSON"},
		{"array", `[1]`, "not a JSON object"},
		{"model not a string", `{"model":4}`, "model"},
		{"stream not a boolean", `{"model":"m","stream":"yes"}`, "stream"},
		{"response_format not an object", `{"model":"m","response_format":"json"}`, "response_format"},
		{"response_format type not a string", `{"model":"m","response_format":{"type":1}}`, "response_format type"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			info, err := openai.New().Describe([]byte(tt.body))
			wantProtocolError(t, err, tt.what)
			if info != (codec.RequestInfo{}) {
				t.Errorf("Describe = %+v with an error, want the zero value", info)
			}
		})
	}
}

// fullResponse is a complete response as OpenAI sends it, with every field
// Decode reads.
const fullResponse = `{"id":"chatcmpl-1","object":"chat.completion","created":1700000000,"model":"gpt-4o-2024-08-06",
 "choices":[{"index":0,"message":{"role":"assistant","content":"Sunny, é🙂","refusal":null,
   "tool_calls":[{"id":"call_1","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Tokyo\"}"}}]},
   "logprobs":null,"finish_reason":"tool_calls"}],
 "usage":{"prompt_tokens":3,"completion_tokens":5,"total_tokens":8,"prompt_tokens_details":{"cached_tokens":0}},
 "service_tier":"default","system_fingerprint":"fp_1"}`

func TestR14_2_Decode(t *testing.T) {
	t.Parallel()
	msg := func(content string) chat.Message { return chat.Message{Role: chat.Assistant, Content: content} }
	tests := []struct {
		name string
		body string
		want chat.Completion
	}{{
		name: "full response",
		body: fullResponse,
		want: chat.Completion{
			Message: chat.Message{Role: chat.Assistant, Content: "Sunny, é🙂", ToolCalls: []chat.ToolCall{
				{ID: "call_1", Name: "get_weather", Arguments: json.RawMessage(`{"city":"Tokyo"}`)},
			}},
			FinishReason: "tool_calls", Model: "gpt-4o-2024-08-06", ID: "chatcmpl-1",
			Usage: &chat.Usage{InputTokens: 3, OutputTokens: 5},
		},
	}, {
		name: "content only, no usage",
		body: `{"choices":[{"message":{"role":"assistant","content":"Hello"},"finish_reason":"stop"}]}`,
		want: chat.Completion{Message: msg("Hello"), FinishReason: "stop"},
	}, {
		name: "finish length keeps the truncated content",
		body: `{"model":"gpt-4o","choices":[{"message":{"content":"Once upon a"},"finish_reason":"length"}],
			"usage":{"prompt_tokens":10,"completion_tokens":3}}`,
		want: chat.Completion{Message: msg("Once upon a"), FinishReason: "length", Model: "gpt-4o",
			Usage: &chat.Usage{InputTokens: 10, OutputTokens: 3}},
	}, {
		name: "reasoning_content",
		body: `{"choices":[{"message":{"content":"4","reasoning_content":"2+2"}}]}`,
		want: chat.Completion{Message: chat.Message{Role: chat.Assistant, Content: "4", Reasoning: "2+2"}},
	}, {
		name: "reasoning",
		body: `{"choices":[{"message":{"content":"4","reasoning":"two and two"}}]}`,
		want: chat.Completion{Message: chat.Message{Role: chat.Assistant, Content: "4", Reasoning: "two and two"}},
	}, {
		name: "reasoning_content wins over reasoning",
		body: `{"choices":[{"message":{"reasoning":"b","reasoning_content":"a"}}]}`,
		want: chat.Completion{Message: chat.Message{Role: chat.Assistant, Reasoning: "a"}},
	}, {
		name: "empty reasoning_content falls back to reasoning",
		body: `{"choices":[{"message":{"reasoning_content":"","reasoning":"b"}}]}`,
		want: chat.Completion{Message: chat.Message{Role: chat.Assistant, Reasoning: "b"}},
	}, {
		name: "null content with parallel tool calls",
		body: `{"choices":[{"message":{"content":null,"tool_calls":[
			{"id":"c1","type":"function","function":{"name":"a","arguments":"{}"}},
			{"id":"c2","type":"function","function":{"name":"b","arguments":" [1, 2] "}}]},"finish_reason":"tool_calls"}]}`,
		want: chat.Completion{Message: chat.Message{Role: chat.Assistant, ToolCalls: []chat.ToolCall{
			{ID: "c1", Name: "a", Arguments: json.RawMessage(`{}`)},
			{ID: "c2", Name: "b", Arguments: json.RawMessage(` [1, 2] `)},
		}}, FinishReason: "tool_calls"},
	}, {
		name: "invalid JSON arguments are kept as a JSON string",
		body: `{"choices":[{"message":{"tool_calls":[
			{"id":"c1","function":{"name":"a","arguments":"{\"city\":\"Tok"}},
			{"id":"c2","function":{"name":"b","arguments":""}},
			{"id":"c3","function":{"name":"c"}},
			{"id":"c4","function":{"name":"d","arguments":{"x":1}}}]},"finish_reason":"length"}]}`,
		want: chat.Completion{Message: chat.Message{Role: chat.Assistant, ToolCalls: []chat.ToolCall{
			{ID: "c1", Name: "a", Arguments: json.RawMessage(`"{\"city\":\"Tok"`)},
			{ID: "c2", Name: "b", Arguments: json.RawMessage(`""`)},
			{ID: "c3", Name: "c"},
			{ID: "c4", Name: "d", Arguments: json.RawMessage(`{"x":1}`)},
		}}, FinishReason: "length"},
	}, {
		name: "legacy function_call",
		body: `{"choices":[{"message":{"content":null,"function_call":{"name":"get_weather","arguments":"{\"city\":\"Oslo\"}"}},
			"finish_reason":"function_call"}]}`,
		want: chat.Completion{Message: chat.Message{Role: chat.Assistant, ToolCalls: []chat.ToolCall{
			{Name: "get_weather", Arguments: json.RawMessage(`{"city":"Oslo"}`)},
		}}, FinishReason: "function_call"},
	}, {
		name: "escaped keys",
		body: `{"ch\u006fices":[{"m\u0065ssage":{"con\u0074ent":"hi","reasoning\u005fcontent":"r",
			"tool\u005fcalls":[{"\u0069d":"c","function":{"n\u0061me":"f","arguments":"{}"}}]},
			"finish\u005freason":"stop"}],"\u0075sage":{"prompt\u005ftokens":1,"completion\u005ftokens":2}}`,
		want: chat.Completion{Message: chat.Message{Role: chat.Assistant, Content: "hi", Reasoning: "r",
			ToolCalls: []chat.ToolCall{{ID: "c", Name: "f", Arguments: json.RawMessage(`{}`)}}},
			FinishReason: "stop", Usage: &chat.Usage{InputTokens: 1, OutputTokens: 2}},
	}, {
		name: "keys are case-sensitive",
		body: `{"choices":[{"message":{"Content":"no","content":"yes","CONTENT":"no"}}]}`,
		want: chat.Completion{Message: msg("yes")},
	}, {
		name: "escaped string values",
		body: `{"choices":[{"message":{"content":"\u00e9\ud83d\ude42\n\"q\""}}]}`,
		want: chat.Completion{Message: msg("é🙂\n\"q\"")},
	}, {
		name: "only the first choice",
		body: `{"choices":[{"message":{"content":"first"}},{"message":{"content":"second"}}]}`,
		want: chat.Completion{Message: msg("first")},
	}, {
		name: "null error is not an error",
		body: `{"error":null,"choices":[{"message":{"content":"ok"}}]}`,
		want: chat.Completion{Message: msg("ok")},
	}, {
		name: "whitespace around the body",
		body: " \r\n\t{\"choices\":[{\"message\":{}}]}\n",
		want: chat.Completion{Message: chat.Message{Role: chat.Assistant}},
	}, {
		name: "null usage",
		body: `{"choices":[{"message":{"content":"x"}}],"usage":null}`,
		want: chat.Completion{Message: msg("x")},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := openai.New().Decode([]byte(tt.body))
			if err != nil {
				t.Fatalf("Decode: %v", err)
			}
			if !reflect.DeepEqual(*got, tt.want) {
				t.Errorf("Decode =\n%#v\nwant\n%#v", *got, tt.want)
			}
		})
	}
}

func TestR4_7_DecodeProviderError(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		body string
		want codec.ProviderError
	}{
		{"code string", `{"error":{"message":"Rate limit reached","type":"requests","param":null,"code":"rate_limit_exceeded"}}`,
			codec.ProviderError{Code: "rate_limit_exceeded", Message: "Rate limit reached"}},
		{"code null", `{"error":{"message":"The server had an error","type":"server_error","param":null,"code":null}}`,
			codec.ProviderError{Message: "The server had an error"}},
		{"code absent", `{"error":{"message":"m","type":"t"}}`, codec.ProviderError{Message: "m"}},
		{"code not a string", `{"error":{"message":"m","code":429}}`, codec.ProviderError{Message: "m"}},
		{"error beside choices", `{"choices":[{"message":{"content":"x"}}],"error":{"code":"server_error"}}`,
			codec.ProviderError{Code: "server_error"}},
		{"error as a string", `{"error":"model not loaded"}`, codec.ProviderError{Message: "model not loaded"}},
		{"empty error object", `{"error":{}}`, codec.ProviderError{}},
		{"escaped error key", `{"\u0065rror":{"c\u006fde":"server_error"}}`, codec.ProviderError{Code: "server_error"}},
		{"vLLM", `{"object":"error","message":"This model's maximum context length is 4096 tokens.","type":"BadRequestError","param":null,"code":400}`,
			codec.ProviderError{Message: "This model's maximum context length is 4096 tokens."}},
		{"vLLM string code", `{"object":"error","message":"m","code":"model_not_found"}`,
			codec.ProviderError{Code: "model_not_found", Message: "m"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			comp, err := openai.New().Decode([]byte(tt.body))
			if comp != nil {
				t.Errorf("Decode returned a completion with an error")
			}
			var pe *codec.ProviderError
			if !errors.As(err, &pe) {
				t.Fatalf("error = %#v, want *codec.ProviderError", err)
			}
			if *pe != tt.want {
				t.Errorf("ProviderError = %+v, want %+v", *pe, tt.want)
			}
		})
	}
}

func TestR4_5_DecodeMalformed(t *testing.T) {
	t.Parallel()
	tests := []struct{ name, body, what string }{
		{"empty", ``, "not valid JSON"},
		{"truncated", fullResponse[:len(fullResponse)/2], "not valid JSON"},
		{"truncated after the object", `{"choices":[{"message":{"content":"x"}}]`, "not valid JSON"},
		{"trailing garbage", `{"choices":[{"message":{"content":"x"}}]}x`, "not valid JSON"},
		{"two documents", `{"choices":[{"message":{}}]}{}`, "not valid JSON"},
		{"invalid UTF-8 in content", "{\"choices\":[{\"message\":{\"content\":\"a\xffb\"}}]}", "UTF-8"},
		{"invalid UTF-8 in an error", "{\"error\":{\"message\":\"\xc3\"}}", "UTF-8"},
		{"not an object", `[]`, "not a JSON object"},
		{"string", `"hello"`, "not a JSON object"},
		{"null", `null`, "no choices"},
		{"missing choices", `{"id":"x","object":"chat.completion"}`, "no choices"},
		{"null choices", `{"choices":null}`, "no choices"},
		{"empty choices", `{"choices":[]}`, "no choices"},
		{"choices not an array", `{"choices":{"message":{}}}`, "choices"},
		{"choice not an object", `{"choices":[1]}`, "choice"},
		{"null choice", `{"choices":[null]}`, "no message"},
		{"missing message", `{"choices":[{"index":0,"finish_reason":"stop"}]}`, "no message"},
		{"null message", `{"choices":[{"message":null}]}`, "no message"},
		{"message not an object", `{"choices":[{"message":"hi"}]}`, "message"},
		{"content not a string", `{"choices":[{"message":{"content":[{"type":"text","text":"x"}]}}]}`, "content"},
		{"reasoning not a string", `{"choices":[{"message":{"reasoning":1}}]}`, "reasoning"},
		{"finish_reason not a string", `{"choices":[{"message":{},"finish_reason":1}]}`, "finish_reason"},
		{"model not a string", `{"model":1,"choices":[{"message":{}}]}`, "model"},
		{"tool_calls not an array", `{"choices":[{"message":{"tool_calls":{}}}]}`, "tool_calls"},
		{"tool call not an object", `{"choices":[{"message":{"tool_calls":["x"]}}]}`, "tool call"},
		{"null tool call", `{"choices":[{"message":{"tool_calls":[null]}}]}`, "tool call"},
		{"tool call without function", `{"choices":[{"message":{"tool_calls":[{"id":"c","type":"custom"}]}}]}`, "function"},
		{"tool call name not a string", `{"choices":[{"message":{"tool_calls":[{"function":{"name":1}}]}}]}`, "name"},
		{"function_call not an object", `{"choices":[{"message":{"function_call":"f"}}]}`, "function_call"},
		{"usage not an object", `{"choices":[{"message":{}}],"usage":7}`, "usage"},
		{"usage tokens not integers", `{"choices":[{"message":{}}],"usage":{"prompt_tokens":1.5}}`, "prompt_tokens"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			comp, err := openai.New().Decode([]byte(tt.body))
			if comp != nil {
				t.Errorf("Decode returned a completion with an error")
			}
			wantProtocolError(t, err, tt.what)
		})
	}
}

// TestR10_5_DecodeErrorsAreSafe checks that the safe Error() text of a
// decode failure quotes nothing of the body.
func TestR10_5_DecodeErrorsAreSafe(t *testing.T) {
	t.Parallel()
	const secret = "sk-SECRET"
	for _, body := range []string{
		`{"choices":[{"message":{"content":"` + secret,
		`{"choices":[{"message":{"content":["` + secret + `"]}}]}`,
		`{"error":{"message":"` + secret + `","code":"` + secret + `"}}`,
		`{"choices":[{"message":{"tool_calls":[{"function":{"name":["` + secret + `"]}}]}}]}`,
		"\xff" + secret,
	} {
		_, err := openai.New().Decode([]byte(body))
		if err == nil {
			t.Fatalf("Decode(%q): no error", body)
		}
		if s := err.Error(); strings.Contains(s, "SECRET") {
			t.Errorf("Error() = %q quotes the body", s)
		}
	}
}

func TestR10_3_ErrorCode(t *testing.T) {
	t.Parallel()
	tests := []struct{ name, body, want string }{
		{"rate limit", `{"error":{"message":"m","type":"requests","param":null,"code":"rate_limit_exceeded"}}`, "rate_limit_exceeded"},
		{"quota", `{"error":{"message":"m","type":"insufficient_quota","param":null,"code":"insufficient_quota"}}`, "insufficient_quota"},
		{"unknown code as sent", `{"error":{"code":"organization_spend_limit_exceeded"}}`, "organization_spend_limit_exceeded"},
		{"code null does not fall back to type", `{"error":{"message":"m","type":"server_error","code":null}}`, ""},
		{"code absent does not fall back to type", `{"error":{"type":"invalid_request_error"}}`, ""},
		{"code number", `{"error":{"code":429}}`, ""},
		{"escaped keys", `{"\u0065rror":{"cod\u0065":"server_error"}}`, "server_error"},
		{"vLLM integer code", `{"object":"error","message":"m","type":"BadRequestError","code":400}`, ""},
		{"vLLM string code", `{"object":"error","code":"model_not_found"}`, "model_not_found"},
		{"error as a string", `{"error":"boom"}`, ""},
		{"no error", `{"choices":[]}`, ""},
		{"top-level code without an error", `{"code":"server_error"}`, ""},
		{"truncated", `{"error":{"code":"rate_limit_exceeded"`, ""},
		{"not JSON", `<html>502 Bad Gateway</html>`, ""},
		{"empty", ``, ""},
		{"array (R23.7: its first element)", `[{"error":{"code":"x"}}]`, "x"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := openai.New().ErrorCode([]byte(tt.body)); got != tt.want {
				t.Errorf("ErrorCode = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestR10_3_RequestID(t *testing.T) {
	t.Parallel()
	c := openai.New()
	tests := []struct {
		name string
		h    http.Header
		want string
	}{
		{"canonical", http.Header{"X-Request-Id": {"req_0123456789abcdef0123456789abcdef"}}, "req_0123456789abcdef0123456789abcdef"},
		{"set with lower case", func() http.Header {
			h := http.Header{}
			h.Set("x-request-id", "abc")
			return h
		}(), "abc"},
		{"as sent, not validated", http.Header{"X-Request-Id": {" not a uuid "}}, " not a uuid "},
		{"first of several", http.Header{"X-Request-Id": {"a", "b"}}, "a"},
		{"absent", http.Header{"Openai-Organization": {"org"}}, ""},
		{"nil", nil, ""},
	}
	for _, tt := range tests {
		if got := c.RequestID(tt.h); got != tt.want {
			t.Errorf("%s: RequestID = %q, want %q", tt.name, got, tt.want)
		}
	}
}

// TestR13_2_DecodeRejectsWhatTheObserverCannotScan checks that a body
// nested deeper than the observer scans is malformed, so that Decode never
// returns evidence the observer did not count.
func TestR13_2_DecodeRejectsWhatTheObserverCannotScan(t *testing.T) {
	t.Parallel()
	deep := func(n int) string {
		return `{"x":` + strings.Repeat("[", n) + strings.Repeat("]", n) + `,"choices":[{"message":{"content":"deep"}}]}`
	}
	if _, err := openai.New().Decode([]byte(deep(100))); err != nil {
		t.Fatalf("Decode of 100 levels: %v", err)
	}
	comp, err := openai.New().Decode([]byte(deep(600)))
	if comp != nil {
		t.Errorf("Decode returned a completion with an error")
	}
	wantProtocolError(t, err, "nested too deeply")
}
