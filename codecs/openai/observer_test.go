package openai_test

import (
	"testing"

	"github.com/recourse-dev/recourse/codec"
	"github.com/recourse-dev/recourse/codecs/openai"
)

var ordinaryInfo = codec.RequestInfo{Model: "gpt-4o", Operation: codec.Ordinary}

// observerBody carries every kind of evidence: 6 content bytes, 3 reasoning
// bytes, two tool_calls elements and one legacy function_call. The tool
// arguments mention "content", which must not count.
const observerBody = `{"id":"content","choices":[{"index":0,"message":{"role":"assistant",` +
	`"content":"é🙂","reasoning_content":"ab","reasoning":"c",` +
	`"tool_calls":[{"id":"1","type":"function","function":{"name":"f","arguments":"{\"content\":\"zz\"}"}},{"id":"2","function":{"name":"h"}}],` +
	`"function_call":{"name":"g","arguments":"{}"}},"finish_reason":"tool_calls"}],` +
	`"usage":{"prompt_tokens":1,"completion_tokens":2}}`

var observerWant = codec.Counts{ContentBytes: 6, ReasoningBytes: 3, ToolFragments: 3, CompletedToolCalls: 3}

func observe(info codec.RequestInfo, writes ...string) codec.Counts {
	o := openai.New().NewObserver(info)
	for _, w := range writes {
		o.Write([]byte(w))
	}
	return o.Observed()
}

// TestR13_2_ObserverCounts checks the semantic evidence counted in complete
// bodies.
func TestR13_2_ObserverCounts(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		info codec.RequestInfo
		body string
		want codec.Counts
	}{
		{"every kind of evidence", ordinaryInfo, observerBody, observerWant},
		{"structured", codec.RequestInfo{Operation: codec.Structured}, observerBody, observerWant},
		{"é🙂 counts 6", ordinaryInfo, `{"choices":[{"message":{"content":"é🙂"}}]}`, codec.Counts{ContentBytes: 6}},
		{"escaped é🙂 counts 6", ordinaryInfo, `{"choices":[{"message":{"content":"\u00e9\ud83d\ude42"}}]}`, codec.Counts{ContentBytes: 6}},
		{"escaped keys", ordinaryInfo, `{"ch\u006fices":[{"m\u0065ssage":{"con\u0074ent":"abc","reas\u006fning":"d"}}]}`,
			codec.Counts{ContentBytes: 3, ReasoningBytes: 1}},
		{"keys are matched exactly", ordinaryInfo,
			`{"choices":[{"message":{"Content":"xx","content":"y","text":"content"}}],"content":"zz","x":"\"content\": \"zz\""}`,
			codec.Counts{ContentBytes: 1}},
		{"null content and empty tool_calls", ordinaryInfo, `{"choices":[{"message":{"content":null,"tool_calls":[]}}]}`, codec.Counts{}},
		{"error body", ordinaryInfo, `{"error":{"message":"content","code":"server_error"}}`, codec.Counts{}},
		{"leading keepalive whitespace", ordinaryInfo, "  \n{\"choices\":[{\"message\":{\"content\":\"hi\"}}]}", codec.Counts{ContentBytes: 2}},
		{"streaming counts SSE deltas", codec.RequestInfo{Operation: codec.Streaming},
			`data: {"choices":[{"delta":{"content":"hi"}}]}` + "\n\n" + `: keep-alive` + "\n\n" +
				`  data: {"choices":[{"delta":{"reasoning_content":"é🙂","tool_calls":[{"index":0,"id":"c","function":{"name":"f","arguments":""}}]}}]}` + "\n\n",
			codec.Counts{ContentBytes: 2, ReasoningBytes: 6, ToolFragments: 1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := observe(tt.info, tt.body); got != tt.want {
				t.Errorf("Observed = %+v, want %+v", got, tt.want)
			}
		})
	}
}

// TestR13_2_ObserverCountsTruncatedPrefixes feeds every prefix of a
// complete response and checks that evidence in a body cut off in transfer
// is counted (Decode rejects such a body), that counts never decrease, and
// that they reach the full counts.
func TestR13_2_ObserverCountsTruncatedPrefixes(t *testing.T) {
	t.Parallel()
	for _, body := range []string{observerBody, fullResponse} {
		var prev codec.Counts
		for i := 0; i <= len(body); i++ {
			got := observe(ordinaryInfo, body[:i])
			if got.ContentBytes < prev.ContentBytes || got.ReasoningBytes < prev.ReasoningBytes ||
				got.ToolFragments < prev.ToolFragments || got.CompletedToolCalls < prev.CompletedToolCalls {
				t.Fatalf("prefix %d: counts decreased from %+v to %+v", i, prev, got)
			}
			if got.CompletedToolCalls > got.ToolFragments {
				t.Fatalf("prefix %d: %+v completes more tool calls than started", i, got)
			}
			prev = got
		}
	}
	if got := observe(ordinaryInfo, observerBody); got != observerWant {
		t.Errorf("full body: Observed = %+v, want %+v", got, observerWant)
	}

	// A body cut inside the content string: Decode fails, the observer
	// still sees the bytes that arrived.
	cut := `{"choices":[{"message":{"content":"é🙂 and mo`
	if _, err := openai.New().Decode([]byte(cut)); err == nil {
		t.Fatal("Decode accepted a truncated body")
	}
	if got := observe(ordinaryInfo, cut); got.ContentBytes != 13 {
		t.Errorf("truncated body: ContentBytes = %d, want 13", got.ContentBytes)
	}
	cutTool := `{"choices":[{"message":{"content":null,"tool_calls":[{"id":"c","function":{"name":"f","argu`
	if got := observe(ordinaryInfo, cutTool); got != (codec.Counts{ToolFragments: 1}) {
		t.Errorf("body cut inside a tool call: Observed = %+v, want one fragment", got)
	}
}

// TestR13_2_ObserverIgnoresSplits checks that counts do not depend on how
// the body is split across writes.
func TestR13_2_ObserverIgnoresSplits(t *testing.T) {
	t.Parallel()
	for i := 0; i <= len(observerBody); i++ {
		if got := observe(ordinaryInfo, observerBody[:i], observerBody[i:]); got != observerWant {
			t.Fatalf("split at %d: Observed = %+v, want %+v", i, got, observerWant)
		}
	}
	writes := make([]string, len(observerBody))
	for i := 0; i < len(observerBody); i++ {
		writes[i] = observerBody[i : i+1]
	}
	if got := observe(ordinaryInfo, writes...); got != observerWant {
		t.Errorf("byte by byte: Observed = %+v, want %+v", got, observerWant)
	}
}

// TestR13_2_ObserverFreezesOnSyntaxError checks that garbage after evidence
// neither panics nor loses what was counted.
func TestR13_2_ObserverFreezesOnSyntaxError(t *testing.T) {
	t.Parallel()
	got := observe(ordinaryInfo, `{"choices":[{"message":{"content":"ab"}}]}`, `}{"choices":[{"message":{"content":"cd"}}]}`)
	if got != (codec.Counts{ContentBytes: 2}) {
		t.Errorf("Observed = %+v, want ContentBytes 2", got)
	}
	if got := observe(ordinaryInfo, "<html>", `{"choices":[{"message":{"content":"ab"}}]}`); got != (codec.Counts{}) {
		t.Errorf("Observed after a non-JSON start = %+v, want nothing", got)
	}
}

// TestR13_2_ObserverAgreesWithDecode checks that what Decode returns from a
// complete body was also counted by the observer.
func TestR13_2_ObserverAgreesWithDecode(t *testing.T) {
	t.Parallel()
	for _, body := range []string{observerBody, fullResponse} {
		comp, err := openai.New().Decode([]byte(body))
		if err != nil {
			t.Fatal(err)
		}
		got := observe(ordinaryInfo, body)
		if got.ContentBytes != int64(len(comp.Message.Content)) {
			t.Errorf("ContentBytes = %d, decoded %d", got.ContentBytes, len(comp.Message.Content))
		}
		if got.CompletedToolCalls != int64(len(comp.Message.ToolCalls)) {
			t.Errorf("CompletedToolCalls = %d, decoded %d", got.CompletedToolCalls, len(comp.Message.ToolCalls))
		}
	}
}
