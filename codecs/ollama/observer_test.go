package ollama_test

import (
	"testing"

	"github.com/recourse-dev/recourse/codec"
	"github.com/recourse-dev/recourse/codecs/ollama"
)

var ordinary = codec.RequestInfo{Model: "m", Operation: codec.Ordinary}

// observe feeds body to a fresh ordinary observer in one Write.
func observe(info codec.RequestInfo, body string) codec.Counts {
	o := ollama.New().NewObserver(info)
	o.Write([]byte(body))
	return o.Observed()
}

func TestR13_2_OllamaObserverCounts(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		body string
		want codec.Counts
	}{
		{"content in UTF-8 bytes", okBody, codec.Counts{ContentBytes: int64(len("Hello é🙂"))}},
		{"thinking is reasoning", `{"message":{"role":"assistant","content":"4","thinking":"2+2"},"done":true}`, codec.Counts{ReasoningBytes: 3, ContentBytes: 1}},
		{"escaped content counts decoded bytes", `{"message":{"content":"\u00e9\ud83d\ude42"},"done":true}`, codec.Counts{ContentBytes: 6}},
		{"escaped keys are matched", `{"m\u0065ssage":{"con\u0074ent":"ab"}}`, codec.Counts{ContentBytes: 2}},
		{"tool calls", `{"message":{"content":"","tool_calls":[{"function":{"name":"a","arguments":{"content":"not counted"}}},{"function":{"name":"b","arguments":{}}}]},"done":true}`,
			codec.Counts{ToolFragments: 2, CompletedToolCalls: 2}},
		{"a cut tool call is a fragment", `{"message":{"tool_calls":[{"function":{"name":"a"`, codec.Counts{ToolFragments: 1}},
		{"a cut string counts what arrived", `{"message":{"content":"Hel`, codec.Counts{ContentBytes: 3}},
		{"error body counts nothing", `{"error":"model 'content' not found"}`, codec.Counts{}},
		{"look-alike keys elsewhere count nothing", `{"model":"content","x":{"message":{"content":"no"}},"message_content":"no"}`, codec.Counts{}},
		{"whitespace counts nothing", " \n\t ", codec.Counts{}},
		{"garbage freezes the counts", `{"message":{"content":"ab"} oops "content":"cd"}`, codec.Counts{ContentBytes: 2}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := observe(ordinary, tt.body); got != tt.want {
				t.Errorf("Observed = %+v, want %+v", got, tt.want)
			}
			structured := codec.RequestInfo{Operation: codec.Structured}
			if got := observe(structured, tt.body); got != tt.want {
				t.Errorf("structured Observed = %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestR13_2_OllamaObserverEveryPrefixIsMonotonic(t *testing.T) {
	t.Parallel()
	body := `{"model":"m","message":{"role":"assistant","content":"é🙂 \"x\"","thinking":"hmm\u00e9",` +
		`"tool_calls":[{"function":{"name":"a","arguments":{"k":"v"}}},{"id":"c","function":{"name":"b","arguments":{}}}]},"done":true,"eval_count":3}`
	full := observe(ordinary, body)
	want := codec.Counts{ContentBytes: int64(len(`é🙂 "x"`)), ReasoningBytes: 5, ToolFragments: 2, CompletedToolCalls: 2}
	if full != want {
		t.Fatalf("Observed = %+v, want %+v", full, want)
	}
	var prev codec.Counts
	for n := 0; n <= len(body); n++ {
		// One Write of the prefix, and the same prefix byte by byte.
		got := observe(ordinary, body[:n])
		o := ollama.New().NewObserver(ordinary)
		for i := range n {
			o.Write([]byte{body[i]})
		}
		if split := o.Observed(); split != got {
			t.Fatalf("prefix %d: byte-by-byte %+v != whole %+v", n, split, got)
		}
		if got.ReasoningBytes < prev.ReasoningBytes || got.ContentBytes < prev.ContentBytes ||
			got.ToolFragments < prev.ToolFragments || got.CompletedToolCalls < prev.CompletedToolCalls {
			t.Fatalf("prefix %d: counts decreased from %+v to %+v", n, prev, got)
		}
		if got.CompletedToolCalls > got.ToolFragments {
			t.Fatalf("prefix %d: more completed calls than fragments: %+v", n, got)
		}
		prev = got
	}
	if prev != full {
		t.Errorf("last prefix %+v != full %+v", prev, full)
	}
}

func TestR13_2_OllamaObserversAreIndependent(t *testing.T) {
	t.Parallel()
	c := ollama.New()
	a, b := c.NewObserver(ordinary), c.NewObserver(ordinary)
	a.Write([]byte(`{"message":{"content":"abc"`))
	if got := b.Observed(); got.Any() {
		t.Errorf("second observer saw the first one's bytes: %+v", got)
	}
}
