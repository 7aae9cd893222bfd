package omlx_test

import (
	"testing"

	"github.com/recourse-dev/recourse/codec"
	"github.com/recourse-dev/recourse/codecs/omlx"
)

var ordinary = codec.RequestInfo{Model: "m", Operation: codec.Ordinary}

func observe(info codec.RequestInfo, chunks ...string) codec.Counts {
	o := omlx.New().NewObserver(info)
	for _, c := range chunks {
		o.Write([]byte(c))
	}
	return o.Observed()
}

func TestR13_2_OMLXObserverCounts(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		body string
		want codec.Counts
	}{
		{"content and reasoning_content in UTF-8 bytes", okBody, codec.Counts{ContentBytes: int64(len("Hello é🙂")), ReasoningBytes: 5}},
		{"reasoning field", `{"choices":[{"message":{"content":"4","reasoning":"2+2"}}]}`, codec.Counts{ContentBytes: 1, ReasoningBytes: 3}},
		{"escaped keys are matched", `{"choices":[{"message":{"reasoning\u005fcontent":"ab"}}]}`, codec.Counts{ReasoningBytes: 2}},
		{"tool calls", `{"choices":[{"message":{"content":null,"tool_calls":[{"id":"a","type":"function","function":{"name":"f","arguments":"{\"content\":\"x\"}"}},{"id":"b","type":"function","function":{"name":"g","arguments":"{}"}}]}}]}`,
			codec.Counts{ToolFragments: 2, CompletedToolCalls: 2}},
		{"legacy function_call is a tool call", `{"choices":[{"message":{"function_call":{"name":"f","arguments":"{}"}}}]}`, codec.Counts{ToolFragments: 1, CompletedToolCalls: 1}},
		{"a cut string counts what arrived", `{"choices":[{"message":{"content":"Hel`, codec.Counts{ContentBytes: 3}},
		{"error body counts nothing", `{"error":{"message":"content","type":"server_error"}}`, codec.Counts{}},
		{"look-alike keys elsewhere count nothing", `{"model":"content","message":{"content":"no"},"choices":[{"delta":{"content":"no"}}]}`, codec.Counts{}},
		{"keep-alive whitespace counts nothing", "     \n   ", codec.Counts{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := observe(ordinary, tt.body); got != tt.want {
				t.Errorf("Observed = %+v, want %+v", got, tt.want)
			}
			if got := observe(codec.RequestInfo{Operation: codec.Structured}, tt.body); got != tt.want {
				t.Errorf("structured Observed = %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestR14_2_OMLXKeepAliveWhitespaceObservesNothing(t *testing.T) {
	t.Parallel()
	// oMLX sends a space at once and one every few seconds before the JSON.
	o := omlx.New().NewObserver(ordinary)
	for range 30 {
		o.Write([]byte(" "))
		if got := o.Observed(); got.Any() {
			t.Fatalf("whitespace was observed as %+v", got)
		}
	}
	o.Write([]byte("\n" + okBody))
	if got := o.Observed(); got.ContentBytes != int64(len("Hello é🙂")) || got.ReasoningBytes != 5 {
		t.Errorf("after the JSON arrived Observed = %+v", got)
	}
}

func TestR13_2_OMLXObserverEveryPrefixIsMonotonic(t *testing.T) {
	t.Parallel()
	body := "   \n  " + `{"id":"x","choices":[{"index":0,"message":{"role":"assistant","content":"é🙂 \"x\"","reasoning_content":"hm\u00e9",` +
		`"tool_calls":[{"id":"a","type":"function","function":{"name":"f","arguments":"{\"k\":\"v\"}"}},{"id":"b","type":"function","function":{"name":"g","arguments":"{}"}}]},"finish_reason":"tool_calls"}],"usage":{"prompt_tokens":1}}`
	want := codec.Counts{ContentBytes: int64(len(`é🙂 "x"`)), ReasoningBytes: 4, ToolFragments: 2, CompletedToolCalls: 2}
	if got := observe(ordinary, body); got != want {
		t.Fatalf("Observed = %+v, want %+v", got, want)
	}
	var prev codec.Counts
	for n := 0; n <= len(body); n++ {
		got := observe(ordinary, body[:n])
		chunks := make([]string, n)
		for i := range n {
			chunks[i] = body[i : i+1]
		}
		if split := observe(ordinary, chunks...); split != got {
			t.Fatalf("prefix %d: byte-by-byte %+v != whole %+v", n, split, got)
		}
		if n <= 6 && got.Any() {
			t.Fatalf("prefix %d of keep-alive whitespace observed %+v", n, got)
		}
		if got.ReasoningBytes < prev.ReasoningBytes || got.ContentBytes < prev.ContentBytes ||
			got.ToolFragments < prev.ToolFragments || got.CompletedToolCalls < prev.CompletedToolCalls {
			t.Fatalf("prefix %d: counts decreased from %+v to %+v", n, prev, got)
		}
		prev = got
	}
	if prev != want {
		t.Errorf("last prefix %+v != %+v", prev, want)
	}
}
