package omlx_test

import (
	"encoding/json"
	"errors"
	"net/http"
	"reflect"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/recourse-dev/recourse/chat"
	"github.com/recourse-dev/recourse/codec"
	"github.com/recourse-dev/recourse/codecs/omlx"
)

func TestR10_2_OMLXDescribe(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		body string
		want codec.RequestInfo
	}{
		{"no stream key is ordinary", `{"model":"m","messages":[]}`, codec.RequestInfo{Model: "m", Operation: codec.Ordinary}},
		{"stream false", `{"model":"m","stream":false}`, codec.RequestInfo{Model: "m", Operation: codec.Ordinary}},
		{"stream null", `{"model":"m","stream":null}`, codec.RequestInfo{Model: "m", Operation: codec.Ordinary}},
		{"stream true", `{"model":"m","stream":true}`, codec.RequestInfo{Model: "m", Operation: codec.Streaming}},
		{"stream true with response_format is streaming", `{"model":"m","stream":true,"response_format":{"type":"json_object"}}`, codec.RequestInfo{Model: "m", Operation: codec.Streaming}},
		{"json_object", `{"model":"m","response_format":{"type":"json_object"}}`, codec.RequestInfo{Model: "m", Operation: codec.Structured}},
		{"json_schema", `{"model":"m","response_format":{"type":"json_schema","json_schema":{"name":"s","schema":{}}}}`, codec.RequestInfo{Model: "m", Operation: codec.Structured}},
		{"text format is ordinary", `{"model":"m","response_format":{"type":"text"}}`, codec.RequestInfo{Model: "m", Operation: codec.Ordinary}},
		{"response_format of another type is ordinary", `{"model":"m","response_format":"json_object"}`, codec.RequestInfo{Model: "m", Operation: codec.Ordinary}},
		{"structured_outputs extension", `{"model":"m","structured_outputs":{"regex":"a+"}}`, codec.RequestInfo{Model: "m", Operation: codec.Structured}},
		{"structured_outputs null", `{"model":"m","structured_outputs":null}`, codec.RequestInfo{Model: "m", Operation: codec.Ordinary}},
	}
	c := omlx.New()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := c.Describe([]byte(tt.body))
			if err != nil || got != tt.want {
				t.Errorf("Describe = %+v, %v; want %+v", got, err, tt.want)
			}
		})
	}
	for _, body := range []string{``, `  `, `{`, `null`, `[]`, `{"model":1}`, `{"stream":"true"}`} {
		_, err := c.Describe([]byte(body))
		var pe *codec.ProtocolError
		if !errors.As(err, &pe) {
			t.Errorf("Describe(%q) error = %v, want *codec.ProtocolError", body, err)
		}
	}
}

func TestR10_2_OMLXDescribeReadsEncode(t *testing.T) {
	t.Parallel()
	c := omlx.New()
	tests := []struct {
		req  chat.Request
		want codec.Operation
	}{
		{chat.Request{Model: "m"}, codec.Ordinary},
		{chat.Request{Model: "m", Stream: true}, codec.Streaming},
		{chat.Request{Model: "m", Options: chat.Options{JSONMode: true}}, codec.Structured},
		{chat.Request{Model: "m", Schema: &chat.Schema{Schema: json.RawMessage(`{}`)}}, codec.Structured},
	}
	for _, tt := range tests {
		body, err := c.Encode(&tt.req)
		if err != nil {
			t.Fatal(err)
		}
		info, err := c.Describe(body)
		if err != nil || info != (codec.RequestInfo{Model: "m", Operation: tt.want}) {
			t.Errorf("Describe(Encode(%+v)) = %+v, %v; want operation %s", tt.req, info, err, tt.want)
		}
	}
}

const okBody = `{"id":"chatcmpl-abc","object":"chat.completion","created":1760000000,"model":"qwen3",` +
	`"choices":[{"index":0,"message":{"role":"assistant","content":"Hello é🙂","reasoning_content":"greet"},"finish_reason":"stop"}],` +
	`"usage":{"prompt_tokens":12,"completion_tokens":5,"total_tokens":17,"cached_tokens":0,"total_time":0.5}}`

func TestR14_2_OMLXDecode(t *testing.T) {
	t.Parallel()
	hello := &chat.Completion{
		Message:      chat.Message{Role: chat.Assistant, Content: "Hello é🙂", Reasoning: "greet"},
		FinishReason: "stop", Model: "qwen3", ID: "chatcmpl-abc", Usage: &chat.Usage{InputTokens: 12, OutputTokens: 5},
	}
	tests := []struct {
		name string
		body string
		want *chat.Completion
	}{
		{"success with reasoning_content and usage", okBody, hello},
		{"keep-alive whitespace before the JSON", "     \n \n" + okBody, hello},
		{"whitespace on both sides", "\t " + okBody + "\r\n", hello},
		{"reasoning field of other compatible servers", `{"model":"m","choices":[{"message":{"role":"assistant","content":"4","reasoning":"2+2"},"finish_reason":"stop"}]}`,
			&chat.Completion{Message: chat.Message{Role: chat.Assistant, Content: "4", Reasoning: "2+2"}, FinishReason: "stop", Model: "m"}},
		{"reasoning_content wins over reasoning", `{"choices":[{"message":{"content":"4","reasoning_content":"a","reasoning":"b"}}]}`,
			&chat.Completion{Message: chat.Message{Role: chat.Assistant, Content: "4", Reasoning: "a"}}},
		{"empty reasoning_content falls back to reasoning", `{"choices":[{"message":{"content":"4","reasoning_content":"","reasoning":"b"}}]}`,
			&chat.Completion{Message: chat.Message{Role: chat.Assistant, Content: "4", Reasoning: "b"}}},
		{"finish_reason length", `{"model":"m","choices":[{"message":{"role":"assistant","content":"Once upon"},"finish_reason":"length"}],"usage":{"prompt_tokens":3,"completion_tokens":2}}`,
			&chat.Completion{Message: chat.Message{Role: chat.Assistant, Content: "Once upon"}, FinishReason: "length", Model: "m", Usage: &chat.Usage{InputTokens: 3, OutputTokens: 2}}},
		{"tool calls decode argument strings", `{"choices":[{"message":{"role":"assistant","content":null,"tool_calls":[` +
			`{"id":"call_a","type":"function","function":{"name":"get_weather","arguments":"{\"city\": \"Tokyo\"}"}},` +
			`{"id":"call_b","type":"function","function":{"name":"ping","arguments":""}},` +
			`{"id":"call_c","type":"function","function":{"name":"pong"}}]},"finish_reason":"tool_calls"}]}`,
			&chat.Completion{Message: chat.Message{Role: chat.Assistant, ToolCalls: []chat.ToolCall{
				{ID: "call_a", Name: "get_weather", Arguments: json.RawMessage(`{"city": "Tokyo"}`)},
				{ID: "call_b", Name: "ping", Arguments: json.RawMessage(`{}`)},
				{ID: "call_c", Name: "pong", Arguments: json.RawMessage(`{}`)},
			}}, FinishReason: "tool_calls"}},
		{"legacy function_call", `{"choices":[{"message":{"role":"assistant","content":null,"function_call":{"name":"f","arguments":"{\"a\":1}"}},"finish_reason":"function_call"}]}`,
			&chat.Completion{Message: chat.Message{Role: chat.Assistant, ToolCalls: []chat.ToolCall{{Name: "f", Arguments: json.RawMessage(`{"a":1}`)}}}, FinishReason: "function_call"}},
		{"null finish_reason and usage", `{"choices":[{"message":{"content":"x"},"finish_reason":null}],"usage":null}`,
			&chat.Completion{Message: chat.Message{Role: chat.Assistant, Content: "x"}}},
		{"first choice is used", `{"choices":[{"message":{"content":"a"}},{"message":{"content":"b"}}]}`,
			&chat.Completion{Message: chat.Message{Role: chat.Assistant, Content: "a"}}},
		{"error null is no error", `{"error":null,"choices":[{"message":{"content":"x"}}]}`,
			&chat.Completion{Message: chat.Message{Role: chat.Assistant, Content: "x"}}},
	}
	c := omlx.New()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := c.Decode([]byte(tt.body))
			if err != nil {
				t.Fatalf("Decode: %v", err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("Decode:\n got %+v\nwant %+v", got, tt.want)
			}
		})
	}
}

func TestR4_7_OMLXDecodeErrorBodies(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		body string
		code string
		msg  string
	}{
		{"not found (4xx body)", `{"error":{"message":"Model '` + secret + `' not found. Available models: a","type":"not_found_error","param":null,"code":null}}`,
			"", "Model '" + secret + "' not found. Available models: a"},
		{"string code", `{"error":{"message":"slow down","type":"rate_limit_error","param":null,"code":"rate_limit_exceeded"}}`, "rate_limit_exceeded", "slow down"},
		{"arbitrary code kept as sent", `{"error":{"message":"m","type":"t","code":"` + secret + `"}}`, secret, "m"},
		{"numeric code is no code", `{"error":{"message":"m","type":"t","code":507}}`, "", "m"},
		{"error in a 2xx body after keep-alive spaces", "   " + `{"error":{"message":"Internal server error","type":"server_error"}}`, "", "Internal server error"},
		{"error beside choices", `{"choices":[{"message":{"content":"x"}}],"error":{"message":"late"}}`, "", "late"},
		{"error string", `{"error":"boom"}`, "", "boom"},
	}
	c := omlx.New()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := c.Decode([]byte(tt.body))
			if got != nil {
				t.Errorf("Decode returned a completion with an error: %+v", got)
			}
			var pe *codec.ProviderError
			if !errors.As(err, &pe) {
				t.Fatalf("Decode error = %v, want *codec.ProviderError", err)
			}
			if pe.Code != tt.code || pe.Message != tt.msg {
				t.Errorf("ProviderError = {Code:%q Message:%q}, want {Code:%q Message:%q}", pe.Code, pe.Message, tt.code, tt.msg)
			}
			if strings.Contains(err.Error(), secret) {
				t.Errorf("Error() quotes the body: %q", err)
			}
			if got := c.ErrorCode([]byte(tt.body)); got != tt.code {
				t.Errorf("ErrorCode = %q, want %q", got, tt.code)
			}
		})
	}
}

func TestR10_3_OMLXErrorCode(t *testing.T) {
	t.Parallel()
	tests := []struct {
		body string
		want string
	}{
		{`{"error":{"code":"insufficient_quota"}}`, "insufficient_quota"},
		{" \n" + `{"error":{"code":"server_error"}}`, "server_error"},
		{`{"error":{"code":"x\u0079"}}`, "xy"},
		{`{"error":{"code":null,"type":"server_error"}}`, ""},
		{`{"error":{"code":429}}`, ""},
		{`{"error":"rate_limit_exceeded"}`, ""},
		{`{"code":"rate_limit_exceeded"}`, ""},
		{`{"error":{"code":"rate_limit_exceeded"`, ""},
		{`not json`, ""},
		{``, ""},
		{`[]`, ""},
	}
	c := omlx.New()
	for _, tt := range tests {
		if got := c.ErrorCode([]byte(tt.body)); got != tt.want {
			t.Errorf("ErrorCode(%q) = %q, want %q", tt.body, got, tt.want)
		}
	}
}

func TestR10_3_OMLXRequestID(t *testing.T) {
	t.Parallel()
	c := omlx.New()
	if got := c.RequestID(http.Header{}); got != "" {
		t.Errorf("RequestID(no header) = %q, want \"\"", got)
	}
	h := http.Header{}
	h.Set("x-request-id", "req_123e4567-e89b-12d3-a456-426614174000")
	if got := c.RequestID(h); got != "req_123e4567-e89b-12d3-a456-426614174000" {
		t.Errorf("RequestID = %q", got)
	}
	// The value is returned as sent, even when it is no UUID: the recovery
	// layers decide what to keep (R10.3).
	if got := c.RequestID(http.Header{"X-Request-Id": {"abc"}}); got != "abc" {
		t.Errorf("RequestID = %q, want abc (as sent)", got)
	}
}

func TestR4_5_OMLXDecodeMalformed(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		body string
	}{
		{"empty", ``},
		{"keep-alive whitespace only", "     "},
		{"keep-alive newlines only", "\n\n\n"},
		{"keep-alive then cut", "   " + `{"id":"x","choices":[{"message":{"content":"` + secret},
		{"SSE body", ": keep-alive\n\ndata: {\"choices\":[]}\n\ndata: [DONE]\n\n"},
		{"non-breaking space before the JSON", "\u00a0" + okBody},
		{"invalid UTF-8", "{\"choices\":[{\"message\":{\"content\":\"\xc3\x28\"}}]}"},
		{"not JSON", `<html>` + secret},
		{"trailing garbage", okBody + `x`},
		{"top-level array", `[` + okBody + `]`},
		{"no choices", `{"id":"x","model":"m"}`},
		{"empty choices", `{"choices":[]}`},
		{"no message", `{"choices":[{"finish_reason":"stop"}]}`},
		{"content of another type", `{"choices":[{"message":{"content":{"type":"text"}}}]}`},
		{"vLLM error shape has no choices", `{"object":"error","message":"bad","type":"BadRequestError","code":400}`},
		{"tool call without function", `{"choices":[{"message":{"tool_calls":[{"id":"c"}]}}]}`},
		{"tool call without name", `{"choices":[{"message":{"tool_calls":[{"id":"c","function":{"arguments":"{}"}}]}}]}`},
		{"tool call arguments not JSON", `{"choices":[{"message":{"tool_calls":[{"id":"c","function":{"name":"f","arguments":"{\"a\":"}}]}}]}`},
		{"tool call arguments an array", `{"choices":[{"message":{"tool_calls":[{"id":"c","function":{"name":"f","arguments":"[1]"}}]}}]}`},
		{"tool call arguments an object, not a string", `{"choices":[{"message":{"tool_calls":[{"id":"c","function":{"name":"f","arguments":{}}}]}}]}`},
		{"error of another type", `{"error":true}`},
	}
	c := omlx.New()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := c.Decode([]byte(tt.body))
			if got != nil {
				t.Errorf("Decode returned a completion: %+v", got)
			}
			var pe *codec.ProtocolError
			if !errors.As(err, &pe) {
				t.Fatalf("Decode error = %v, want *codec.ProtocolError", err)
			}
			if strings.Contains(err.Error(), secret) {
				t.Errorf("Error() quotes the body: %q", err)
			}
		})
	}
}

func TestR4_6_OMLXDecodeEveryTruncatedPrefixFails(t *testing.T) {
	t.Parallel()
	c := omlx.New()
	body := "  \n" + okBody
	for n := range len(body) {
		got, err := c.Decode([]byte(body[:n]))
		var pe *codec.ProtocolError
		if got != nil || !errors.As(err, &pe) {
			t.Fatalf("Decode(prefix %d) = %v, %v; want *codec.ProtocolError", n, got, err)
		}
	}
}

// TestR13_2_OMLXDecodeRejectsWhatTheObserverCannotScan checks that a body
// nested deeper than the observer scans (a 600-deep array before choices)
// is malformed, as the OpenAI codec's is, so that Decode never returns
// content the observer did not count; the same body 100 deep decodes, and
// its content is counted.
func TestR13_2_OMLXDecodeRejectsWhatTheObserverCannotScan(t *testing.T) {
	t.Parallel()
	deep := func(n int) []byte {
		return []byte(`  {"x":` + strings.Repeat("[", n) + strings.Repeat("]", n) + `,"choices":[{"message":{"content":"deep"}}]}`)
	}
	info := codec.RequestInfo{Model: "m", Operation: codec.Ordinary}
	c := omlx.New()

	comp, err := c.Decode(deep(100))
	require.NoError(t, err)
	assert.Equal(t, "deep", comp.Message.Content)
	assert.EqualValues(t, 4, observe(info, string(deep(100))).ContentBytes, "what Decode returns was observed")

	comp, err = c.Decode(deep(600))
	assert.Nil(t, comp, "no completion with the error")
	var pe *codec.ProtocolError
	require.ErrorAs(t, err, &pe)
	assert.Contains(t, pe.What, "nested too deeply")
	assert.Zero(t, observe(info, string(deep(600))).ContentBytes, "the observer cannot count what lies past its depth")
}

// TestR13_2_OMLXDecodeRefusesNestingTheObserverCannotScan checks that a
// reply nested deeper than the observer scans is malformed also when the
// nesting comes before choices, so that everything Decode returns was also
// observed.
func TestR13_2_OMLXDecodeRefusesNestingTheObserverCannotScan(t *testing.T) {
	t.Parallel()
	deep := func(n int) []byte {
		return []byte(`{"x":` + strings.Repeat("[", n) + strings.Repeat("]", n) + `,"choices":[{"message":{"content":"deep"}}]}`)
	}
	c := omlx.New()
	got, err := c.Decode(deep(100))
	require.NoError(t, err)
	assert.Equal(t, "deep", got.Message.Content)
	got, err = c.Decode(deep(600))
	assert.Nil(t, got)
	var pe *codec.ProtocolError
	require.ErrorAs(t, err, &pe)
	assert.Contains(t, pe.What, "nested too deeply")
	assert.Zero(t, observe(codec.RequestInfo{Operation: codec.Ordinary}, string(deep(600))).ContentBytes,
		"the observer counts nothing of a body it cannot scan")
}

// TestR13_2_OMLXDecodeMatchesKeysAsTheObserverDoes checks that Decode
// matches keys exactly after unescaping, as the observer counts them: a key
// that differs only in case is not the member, and an escaped key is.
func TestR13_2_OMLXDecodeMatchesKeysAsTheObserverDoes(t *testing.T) {
	t.Parallel()
	c := omlx.New()
	for _, body := range []string{
		`{"Choices":[{"message":{"content":"hidden"}}]}`,
		`{"choices":[{"Message":{"content":"hidden"}}]}`,
	} {
		got, err := c.Decode([]byte(body))
		assert.Nil(t, got, body)
		var pe *codec.ProtocolError
		assert.ErrorAs(t, err, &pe, body)
	}
	body := `{"choices":[{"message":{"Content":"hidden","con\u0074ent":"seen","REASONING":"r"}}]}`
	got, err := c.Decode([]byte(body))
	require.NoError(t, err)
	assert.Equal(t, chat.Message{Role: chat.Assistant, Content: "seen"}, got.Message)
	counts := observe(codec.RequestInfo{Operation: codec.Ordinary}, body)
	assert.Equal(t, int64(len("seen")), counts.ContentBytes)
	assert.Zero(t, counts.ReasoningBytes)
}
