package ollama_test

import (
	"encoding/json"
	"errors"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/recourse-dev/recourse/chat"
	"github.com/recourse-dev/recourse/codec"
	"github.com/recourse-dev/recourse/codecs/ollama"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestR10_2_OllamaDescribe(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		body string
		want codec.RequestInfo
	}{
		{"no stream key is streaming (Ollama's default)", `{"model":"m","messages":[]}`, codec.RequestInfo{Model: "m", Operation: codec.Streaming}},
		{"stream null is streaming", `{"model":"m","stream":null}`, codec.RequestInfo{Model: "m", Operation: codec.Streaming}},
		{"stream true", `{"model":"m","stream":true}`, codec.RequestInfo{Model: "m", Operation: codec.Streaming}},
		{"stream true with format is streaming", `{"model":"m","stream":true,"format":"json"}`, codec.RequestInfo{Model: "m", Operation: codec.Streaming}},
		{"stream false", `{"model":"m","stream":false}`, codec.RequestInfo{Model: "m", Operation: codec.Ordinary}},
		{"format json", `{"model":"m","stream":false,"format":"json"}`, codec.RequestInfo{Model: "m", Operation: codec.Structured}},
		{"format escaped json", `{"model":"m","stream":false,"format":"\u006ason"}`, codec.RequestInfo{Model: "m", Operation: codec.Structured}},
		{"format schema object", `{"model":"m","stream":false,"format":{"type":"object"}}`, codec.RequestInfo{Model: "m", Operation: codec.Structured}},
		{"format empty string is none", `{"model":"m","stream":false,"format":""}`, codec.RequestInfo{Model: "m", Operation: codec.Ordinary}},
		{"format null is none", `{"model":"m","stream":false,"format":null}`, codec.RequestInfo{Model: "m", Operation: codec.Ordinary}},
		{"surrounding whitespace", " \n{\"stream\":false}\n", codec.RequestInfo{Operation: codec.Ordinary}},
	}
	c := ollama.New()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := c.Describe([]byte(tt.body))
			if err != nil || got != tt.want {
				t.Errorf("Describe = %+v, %v; want %+v", got, err, tt.want)
			}
		})
	}
}

func TestR10_2_OllamaDescribeMalformed(t *testing.T) {
	t.Parallel()
	for _, body := range []string{``, `   `, `{`, `null`, `[]`, `"json"`, `{"model":1}`, `{"stream":"yes"}`, `{"model":"m"} x`} {
		_, err := ollama.New().Describe([]byte(body))
		var pe *codec.ProtocolError
		if !errors.As(err, &pe) {
			t.Errorf("Describe(%q) error = %v, want *codec.ProtocolError", body, err)
		}
	}
}

func TestR10_2_OllamaDescribeReadsEncode(t *testing.T) {
	t.Parallel()
	c := ollama.New()
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

const okBody = `{"model":"llama3.2","created_at":"2026-10-17T10:00:00.123456Z","message":{"role":"assistant","content":"Hello é🙂"},` +
	`"done":true,"done_reason":"stop","total_duration":5191566416,"load_duration":2154458,"prompt_eval_count":26,` +
	`"prompt_eval_duration":383809000,"eval_count":298,"eval_duration":4799921000}`

func TestR14_2_OllamaDecode(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		body string
		want *chat.Completion
	}{
		{"success with usage", okBody, &chat.Completion{
			Message:      chat.Message{Role: chat.Assistant, Content: "Hello é🙂"},
			FinishReason: "stop", Model: "llama3.2", Usage: &chat.Usage{InputTokens: 26, OutputTokens: 298},
		}},
		{"thinking becomes reasoning", `{"model":"qwen3","message":{"role":"assistant","content":"4","thinking":"2+2"},"done":true,"done_reason":"stop"}`,
			&chat.Completion{Message: chat.Message{Role: chat.Assistant, Content: "4", Reasoning: "2+2"}, FinishReason: "stop", Model: "qwen3"}},
		{"done_reason length", `{"model":"m","message":{"role":"assistant","content":"Once upon"},"done":true,"done_reason":"length","eval_count":2}`,
			&chat.Completion{Message: chat.Message{Role: chat.Assistant, Content: "Once upon"}, FinishReason: "length", Model: "m", Usage: &chat.Usage{OutputTokens: 2}}},
		{"tool calls keep raw argument objects and optional ids", `{"model":"m","message":{"role":"assistant","content":"","tool_calls":[` +
			`{"function":{"index":0,"name":"get_weather","arguments":{"city": "Tokyo"}}},` +
			`{"id":"call_9","function":{"index":1,"name":"get_time","arguments":{}}},` +
			`{"function":{"name":"ping","arguments":null}},` +
			`{"function":{"name":"pong"}}]},"done":true,"done_reason":"stop"}`,
			&chat.Completion{Message: chat.Message{Role: chat.Assistant, ToolCalls: []chat.ToolCall{
				{Name: "get_weather", Arguments: json.RawMessage(`{"city": "Tokyo"}`)},
				{ID: "call_9", Name: "get_time", Arguments: json.RawMessage(`{}`)},
				{Name: "ping", Arguments: json.RawMessage(`{}`)},
				{Name: "pong", Arguments: json.RawMessage(`{}`)},
			}}, FinishReason: "stop", Model: "m"}},
		{"missing role defaults to assistant; surrounding whitespace", "\n {\"message\":{\"content\":\"x\"},\"done\":true} \n",
			&chat.Completion{Message: chat.Message{Role: chat.Assistant, Content: "x"}}},
		{"error null is no error", `{"error":null,"message":{"role":"assistant","content":"x"},"done":true}`,
			&chat.Completion{Message: chat.Message{Role: chat.Assistant, Content: "x"}}},
		{"escaped keys are keys", `{"m\u0065ssage":{"role":"assistant","con\u0074ent":"x"},"done":true}`,
			&chat.Completion{Message: chat.Message{Role: chat.Assistant, Content: "x"}}},
	}
	c := ollama.New()
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

func TestR4_7_OllamaDecodeErrorBodies(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		body string
		msg  string
	}{
		{"not found (4xx body)", `{"error":"model '` + secret + `' not found"}`, "model '" + secret + "' not found"},
		{"busy (503 body)", `{"error":"server busy, please try again.  maximum pending requests exceeded"}`, "server busy, please try again.  maximum pending requests exceeded"},
		{"error in a 2xx body with other fields", `{"model":"m","message":{"role":"assistant","content":"x"},"done":true,"error":"boom"}`, "boom"},
		{"error with whitespace", "  {\"error\":\"boom\"}\n", "boom"},
		{"error object from a proxy", `{"error":{"message":"bad","type":"invalid_request_error","code":"x"}}`, "bad"},
		{"empty error string", `{"error":""}`, ""},
	}
	c := ollama.New()
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
			if pe.Message != tt.msg || pe.Code != "" {
				t.Errorf("ProviderError = {Code:%q Message:%q}, want {Code:\"\" Message:%q}", pe.Code, pe.Message, tt.msg)
			}
			if strings.Contains(err.Error(), secret) {
				t.Errorf("Error() quotes the body: %q", err)
			}
			if code := c.ErrorCode([]byte(tt.body)); code != "" {
				t.Errorf("ErrorCode = %q, want \"\" (Ollama has no codes)", code)
			}
		})
	}
}

func TestR4_5_OllamaDecodeMalformed(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		body string
	}{
		{"empty", ``},
		{"whitespace only", " \n\t"},
		{"not JSON", `<html>` + secret + `</html>`},
		{"truncated", `{"model":"m","message":{"role":"assistant","content":"` + secret},
		{"trailing garbage", `{"message":{"content":"x"},"done":true}{}`},
		{"two NDJSON lines", "{\"message\":{\"content\":\"x\"},\"done\":false}\n{\"message\":{\"content\":\"\"},\"done\":true}\n"},
		{"invalid UTF-8 in content", "{\"message\":{\"role\":\"assistant\",\"content\":\"\xff\xfe\"},\"done\":true}"},
		{"invalid UTF-8 in an ignored field", "{\"x\":\"\xc3\",\"message\":{\"content\":\"x\"},\"done\":true}"},
		{"top-level array", `[{"message":{"content":"x"},"done":true}]`},
		{"top-level null", `null`},
		{"missing message", `{"model":"m","done":true,"done_reason":"stop"}`},
		{"null message", `{"message":null,"done":true}`},
		{"done false (a stream chunk)", `{"message":{"role":"assistant","content":"x"},"done":false}`},
		{"done missing", `{"message":{"role":"assistant","content":"x"}}`},
		{"done not a boolean", `{"message":{"content":"x"},"done":"true"}`},
		{"content not a string", `{"message":{"content":7},"done":true}`},
		{"eval_count not an integer", `{"message":{"content":"x"},"done":true,"eval_count":1.5}`},
		{"tool call without function", `{"message":{"tool_calls":[{"id":"x"}]},"done":true}`},
		{"tool call without name", `{"message":{"tool_calls":[{"function":{"arguments":{}}}]},"done":true}`},
		{"tool call arguments as a string", `{"message":{"tool_calls":[{"function":{"name":"f","arguments":"{\"a\":1}"}}]},"done":true}`},
		{"tool call arguments as an array", `{"message":{"tool_calls":[{"function":{"name":"f","arguments":[1]}}]},"done":true}`},
		{"error of another type", `{"error":42}`},
	}
	c := ollama.New()
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

func TestR4_6_OllamaDecodeEveryTruncatedPrefixFails(t *testing.T) {
	t.Parallel()
	c := ollama.New()
	for n := range len(okBody) {
		got, err := c.Decode([]byte(okBody[:n]))
		var pe *codec.ProtocolError
		if got != nil || !errors.As(err, &pe) {
			t.Fatalf("Decode(prefix %d) = %v, %v; want *codec.ProtocolError", n, got, err)
		}
	}
}

func TestR10_3_OllamaHasNoCodesOrRequestIDs(t *testing.T) {
	t.Parallel()
	c := ollama.New()
	h := http.Header{}
	h.Set("X-Request-Id", "123e4567-e89b-12d3-a456-426614174000")
	if id := c.RequestID(h); id != "" {
		t.Errorf("RequestID = %q, want \"\"", id)
	}
	if code := c.ErrorCode([]byte(`{"error":{"code":"rate_limit_exceeded"}}`)); code != "" {
		t.Errorf("ErrorCode = %q, want \"\"", code)
	}
}

func TestR13_6_OllamaDecodeMetrics(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		body string
		want codec.Metrics
	}{
		{"done object", okBody, codec.Metrics{
			TotalDuration: 5191566416 * time.Nanosecond, LoadDuration: 2154458 * time.Nanosecond,
			PromptEvalCount: 26, PromptEvalDuration: 383809 * time.Microsecond,
			EvalCount: 298, EvalDuration: 4799921 * time.Microsecond,
		}},
		{"absent fields are zero (Ollama omits zero values)", `{"done":true,"eval_count":3}`, codec.Metrics{EvalCount: 3}},
		{"length done", `{"done":true,"done_reason":"length","total_duration":1000}`, codec.Metrics{TotalDuration: time.Microsecond}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := ollama.DecodeMetrics([]byte(tt.body))
			if err != nil || got == nil || *got != tt.want {
				t.Errorf("DecodeMetrics = %+v, %v; want %+v", got, err, tt.want)
			}
		})
	}
	for _, body := range []string{``, `{`, `[]`, "{\"x\":\"\xff\"}", `{"total_duration":1.5}`, `{"eval_count":"3"}`} {
		got, err := ollama.DecodeMetrics([]byte(body))
		var pe *codec.ProtocolError
		if got != nil || !errors.As(err, &pe) {
			t.Errorf("DecodeMetrics(%q) = %v, %v; want *codec.ProtocolError", body, got, err)
		}
	}
}

// TestR13_2_OllamaDecodeRejectsWhatTheObserverCannotScan: a unary answer
// nested deeper than the observer scans (a 600-deep array before the
// message) is malformed, as the OpenAI and oMLX codecs' are, so that Decode
// never returns content the observer did not count; 100 deep decodes, and
// its content is counted.
func TestR13_2_OllamaDecodeRejectsWhatTheObserverCannotScan(t *testing.T) {
	t.Parallel()
	deep := func(n int) string {
		return `{"x":` + strings.Repeat("[", n) + strings.Repeat("]", n) + `,"model":"m","message":{"role":"assistant","content":"deep"},"done":true}`
	}
	info := codec.RequestInfo{Model: "m", Operation: codec.Ordinary}
	c := ollama.New()

	comp, err := c.Decode([]byte(deep(100)))
	require.NoError(t, err)
	assert.Equal(t, "deep", comp.Message.Content)
	assert.EqualValues(t, 4, observe(info, deep(100)).ContentBytes, "what Decode returns was observed")

	comp, err = c.Decode([]byte(deep(600)))
	assert.Nil(t, comp, "no completion with the error")
	var pe *codec.ProtocolError
	require.ErrorAs(t, err, &pe)
	assert.Contains(t, pe.What, "nested too deeply")
	assert.Zero(t, observe(info, deep(600)).ContentBytes, "the observer cannot count what lies past its depth")
}
