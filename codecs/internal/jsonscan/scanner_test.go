package jsonscan

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
)

var openAIRules = Rules{
	Content:     [][]string{{"choices", "message", "content"}},
	Reasoning:   [][]string{{"choices", "message", "reasoning_content"}, {"choices", "message", "reasoning"}},
	ToolCalls:   [][]string{{"choices", "message", "tool_calls"}},
	ToolObjects: [][]string{{"choices", "message", "function_call"}},
}

var ollamaRules = Rules{
	Content:   [][]string{{"message", "content"}},
	Reasoning: [][]string{{"message", "thinking"}},
	ToolCalls: [][]string{{"message", "tool_calls"}},
}

// scanAll feeds all of p to a new Scanner for r and returns the Counts, which
// stop at the first syntax error, if any.
func scanAll(r *Rules, p []byte) Counts {
	s := NewScanner(r)
	_ = s.Write(p)
	return s.Counts()
}

// contentRules counts a top-level "content" member, for small examples.
var contentRules = Rules{
	Content:   [][]string{{"content"}},
	Reasoning: [][]string{{"reasoning"}},
	ToolCalls: [][]string{{"tool_calls"}},
	// function_call is a single tool-call object.
	ToolObjects: [][]string{{"function_call"}},
}

const openAIDoc = `{
  "id": "chatcmpl-123",
  "object": "chat.completion",
  "created": 1700000000,
  "model": "gpt-test",
  "system_fingerprint": "content",
  "choices": [
    {
      "index": 0,
      "message": {
        "role": "assistant",
        "reasoning_content": "Let me think: caf\u00e9 \ud83d\ude42.",
        "content": "Hello, w\u00f6rld! 🙂",
        "tool_calls": [
          {"id": "call_1", "type": "function", "function": {"name": "get_weather", "arguments": "{\"content\":\"Paris\"}"}},
          {"id": "call_2", "type": "function", "function": {"name": "get_time", "arguments": "{}"}}
        ]
      },
      "logprobs": null,
      "finish_reason": "tool_calls"
    }
  ],
  "usage": {"prompt_tokens": 10, "completion_tokens": 20, "total_tokens": 30, "content": "x"}
}`

// "Let me think: café 🙂." = 14 + 5 + 1 + 4 + 1 = 25 bytes; "Hello, wörld! 🙂" = 8 + 2 + 5 + 4 = 19.
var openAIWant = Counts{ReasoningBytes: 25, ContentBytes: 19, ToolFragments: 2, CompletedToolCalls: 2}

const ollamaDoc = `{"model":"qwen3","created_at":"2025-01-01T00:00:00Z",` +
	`"message":{"role":"assistant","content":"Sure.","thinking":"Hmm, \"ok\".",` +
	`"tool_calls":[{"function":{"name":"get_weather","arguments":{"city":"Paris","days":3,"content":"nope","thinking":["no"]}}}]},` +
	`"done":true,"done_reason":"stop","total_duration":1.5e9,"eval_count":-12}`

var ollamaWant = Counts{ReasoningBytes: 10, ContentBytes: 5, ToolFragments: 1, CompletedToolCalls: 1}

type docCase struct {
	name  string
	rules *Rules
	doc   string
	want  Counts
}

var docCases = []docCase{
	{"openai", &openAIRules, openAIDoc, openAIWant},
	{"ollama", &ollamaRules, ollamaDoc, ollamaWant},
	{"openai-legacy-function-call", &openAIRules,
		`{"choices":[{"message":{"role":"assistant","content":null,"function_call":{"name":"f","arguments":"{\"a\":1}"}},"finish_reason":"function_call"}]}`,
		Counts{ToolFragments: 1, CompletedToolCalls: 1}},
	{"openai-reasoning-alias", &openAIRules,
		`{"choices":[{"message":{"reasoning":"abc","content":""}}]}`,
		Counts{ReasoningBytes: 3}},
}

func TestFullDocuments(t *testing.T) {
	for _, tc := range docCases {
		t.Run(tc.name, func(t *testing.T) {
			if !json.Valid([]byte(tc.doc)) {
				t.Fatal("test document is not valid JSON")
			}
			s := NewScanner(tc.rules)
			if err := s.Write([]byte(tc.doc)); err != nil {
				t.Fatalf("Write: %v", err)
			}
			if got := s.Counts(); got != tc.want {
				t.Errorf("Counts = %+v, want %+v", got, tc.want)
			}
			if !s.Complete() {
				t.Error("Complete() = false after the whole document")
			}
			if got := oracleCounts(t, tc.rules, []byte(tc.doc)); got != tc.want {
				t.Errorf("oracle = %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestTruncatedAtEveryOffset(t *testing.T) {
	for _, tc := range docCases {
		t.Run(tc.name, func(t *testing.T) {
			var prev Counts
			for i := 0; i <= len(tc.doc); i++ {
				s := NewScanner(tc.rules)
				if err := s.Write([]byte(tc.doc[:i])); err != nil {
					t.Fatalf("prefix %d: Write: %v", i, err)
				}
				got := s.Counts()
				if got.ContentBytes < prev.ContentBytes || got.ReasoningBytes < prev.ReasoningBytes ||
					got.ToolFragments < prev.ToolFragments || got.CompletedToolCalls < prev.CompletedToolCalls {
					t.Fatalf("prefix %d: counts decreased: %+v after %+v", i, got, prev)
				}
				if got.CompletedToolCalls > got.ToolFragments {
					t.Fatalf("prefix %d: more completed than started: %+v", i, got)
				}
				if s.Complete() != (i == len(tc.doc)) {
					t.Fatalf("prefix %d: Complete() = %v", i, s.Complete())
				}
				if g := scanAll(tc.rules, []byte(tc.doc[:i])); g != got {
					t.Fatalf("prefix %d: Scan = %+v, Scanner = %+v", i, g, got)
				}
				prev = got
			}
			if prev != tc.want {
				t.Errorf("final counts %+v, want %+v", prev, tc.want)
			}
		})
	}
}

func TestEverySplitEqualsOneWrite(t *testing.T) {
	for _, tc := range docCases {
		t.Run(tc.name, func(t *testing.T) {
			doc := []byte(tc.doc)
			for i := 0; i <= len(doc); i++ {
				s := NewScanner(tc.rules)
				if err := s.Write(doc[:i]); err != nil {
					t.Fatalf("split %d: first Write: %v", i, err)
				}
				if err := s.Write(doc[i:]); err != nil {
					t.Fatalf("split %d: second Write: %v", i, err)
				}
				if got := s.Counts(); got != tc.want {
					t.Fatalf("split %d: Counts = %+v, want %+v", i, got, tc.want)
				}
				if !s.Complete() {
					t.Fatalf("split %d: not complete", i)
				}
			}
			// One byte per Write.
			s := NewScanner(tc.rules)
			for i := range doc {
				if err := s.Write(doc[i : i+1]); err != nil {
					t.Fatalf("byte %d: %v", i, err)
				}
			}
			if got := s.Counts(); got != tc.want || !s.Complete() {
				t.Fatalf("bytewise: Counts = %+v complete=%v, want %+v", got, s.Complete(), tc.want)
			}
		})
	}
}

func TestStrings(t *testing.T) {
	long := strings.Repeat("k", maxKeyLen)
	tooLong := strings.Repeat("k", maxKeyLen+1)
	cases := []struct {
		name  string
		rules *Rules
		doc   string
		want  Counts
	}{
		{"raw utf8", &contentRules, `{"content":"é🙂"}`, Counts{ContentBytes: 6}},
		{"escaped utf8", &contentRules, `{"content":"\u00e9\ud83d\ude42"}`, Counts{ContentBytes: 6}},
		{"upper hex", &contentRules, `{"content":"\u00E9\uD83D\uDE42"}`, Counts{ContentBytes: 6}},
		{"simple escapes", &contentRules, `{"content":"\"\\\/\b\f\n\r\t"}`, Counts{ContentBytes: 8}},
		{"empty", &contentRules, `{"content":""}`, Counts{}},
		{"null", &contentRules, `{"content":null}`, Counts{}},
		{"number", &contentRules, `{"content":12345}`, Counts{}},
		{"bool", &contentRules, `{"content":true}`, Counts{}},
		{"object value", &contentRules, `{"content":{"content":"x"}}`, Counts{}},
		{"array of strings", &contentRules, `{"content":["ab","c",null,{"t":"xx"}]}`, Counts{ContentBytes: 3}},
		{"lone high surrogate", &contentRules, `{"content":"\ud83d"}`, Counts{ContentBytes: 3}},
		{"lone low surrogate", &contentRules, `{"content":"\ude42"}`, Counts{ContentBytes: 3}},
		{"high then plain", &contentRules, `{"content":"\ud83dx"}`, Counts{ContentBytes: 4}},
		{"high then simple escape", &contentRules, `{"content":"\ud83d\n"}`, Counts{ContentBytes: 4}},
		{"high high low", &contentRules, `{"content":"\ud83d\ud83d\ude42"}`, Counts{ContentBytes: 7}},
		{"high plain low", &contentRules, `{"content":"\ud83dx\ude42"}`, Counts{ContentBytes: 7}},
		{"high simple escape low", &contentRules, `{"content":"\ud83d\n\ude42"}`, Counts{ContentBytes: 7}},
		{"high then bmp escape", &contentRules, `{"content":"\ud83d\u0041"}`, Counts{ContentBytes: 4}},
		{"low high", &contentRules, `{"content":"\ude42\ud83d"}`, Counts{ContentBytes: 6}},
		{"invalid raw utf8 counts raw", &contentRules, "{\"content\":\"a\xff\xfeb\xe2\x82\"}", Counts{ContentBytes: 6}},
		{"repeated key counts both", &contentRules, `{"content":"ab","content":"cd"}`, Counts{ContentBytes: 4}},
		{"escaped key", &contentRules, `{"con\u0074ent":"abc"}`, Counts{ContentBytes: 3}},
		{"escaped nested keys", &openAIRules, `{"\u0063hoices":[{"mess\u0061ge":{"reasoning\u005fcontent":"ab"}}]}`, Counts{ReasoningBytes: 2}},
		{"key with surrogate pair", &Rules{Content: [][]string{{"🙂"}}}, `{"\ud83d\ude42":"ab","\ud83d":"x"}`, Counts{ContentBytes: 2}},
		{"key with lone surrogate", &Rules{Content: [][]string{{"\uFFFD"}}}, `{"\ud83d\ude42":"ab","\ud83d":"x"}`, Counts{ContentBytes: 1}},
		{"key is case sensitive", &contentRules, `{"Content":"abc"}`, Counts{}},
		{"key of max length", &Rules{Content: [][]string{{long}}}, `{"` + long + `":"ab"}`, Counts{ContentBytes: 2}},
		{"key too long", &Rules{Content: [][]string{{tooLong}}}, `{"` + tooLong + `":"ab"}`, Counts{}},
		{"key too long is not truncated", &Rules{Content: [][]string{{long}}}, `{"` + tooLong + `":"ab"}`, Counts{}},
		{"escaped key too long is not truncated", &Rules{Content: [][]string{{long}}}, `{"` + long + `\u00e9":"ab"}`, Counts{}},
		{"long key then match", &contentRules, `{"` + strings.Repeat("\\u00e9", 300) + `":"x","content":"yz"}`, Counts{ContentBytes: 2}},
		{"root string", &Rules{Content: [][]string{{}}}, `"abc"`, Counts{ContentBytes: 3}},
		{"content and reasoning on one path", &Rules{Content: [][]string{{"a"}}, Reasoning: [][]string{{"a"}}}, `{"a":"xy"}`, Counts{ContentBytes: 2, ReasoningBytes: 2}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			checkAllSplits(t, tc.rules, []byte(tc.doc), tc.want)
		})
	}
}

// checkAllSplits checks that doc is complete, yields want, and yields want
// when split at every byte.
func checkAllSplits(t *testing.T, r *Rules, doc []byte, want Counts) {
	t.Helper()
	for i := 0; i <= len(doc); i++ {
		s := NewScanner(r)
		err1 := s.Write(doc[:i])
		err2 := s.Write(doc[i:])
		if err1 != nil || err2 != nil {
			t.Fatalf("split %d: errors %v, %v", i, err1, err2)
		}
		if got := s.Counts(); got != want {
			t.Fatalf("split %d: Counts = %+v, want %+v", i, got, want)
		}
		if !s.Complete() {
			t.Fatalf("split %d: not complete", i)
		}
	}
}

func TestLookAlikesNeverCount(t *testing.T) {
	cases := []struct {
		name  string
		rules *Rules
		doc   string
	}{
		{"quoted in other value", &contentRules, `{"content_filter":"\"content\": \"x\""}`},
		{"value equals key name", &contentRules, `{"id":"content","type":"tool_calls","x":"function_call"}`},
		{"key prefix", &contentRules, `{"contents":"abc","conten":"abc"}`},
		{"nested deeper", &contentRules, `{"a":{"content":"abc"},"b":[{"content":"abc"}]}`},
		{"inside tool arguments", &openAIRules, `{"choices":[{"message":{"role":"\"content\":\"x\"","refusal":"{\"tool_calls\":[{}]}"}}]}`},
		{"wrong level", &openAIRules, `{"message":{"content":"abc","tool_calls":[{}]},"choices":[{"content":"abc"}]}`},
		{"tool_calls not an array", &openAIRules, `{"choices":[{"message":{"tool_calls":{"id":"x"}}}]}`},
		{"tool_calls non-object elements", &openAIRules, `{"choices":[{"message":{"tool_calls":[null,1,"x",[]]}}]}`},
		{"function_call string", &openAIRules, `{"choices":[{"message":{"function_call":"auto"}}]}`},
		{"nil rules", nil, openAIDoc},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			checkAllSplits(t, tc.rules, []byte(tc.doc), Counts{})
		})
	}
}

func TestToolCalls(t *testing.T) {
	cases := []struct {
		name string
		doc  string
		want Counts
	}{
		{"two calls", `{"tool_calls":[{"a":1},{"b":{"c":[{}]}}]}`, Counts{ToolFragments: 2, CompletedToolCalls: 2}},
		{"empty objects", `{"tool_calls":[{},{}]}`, Counts{ToolFragments: 2, CompletedToolCalls: 2}},
		{"truncated in second", `{"tool_calls":[{"a":1},{"b":`, Counts{ToolFragments: 2, CompletedToolCalls: 1}},
		{"just started", `{"tool_calls":[{`, Counts{ToolFragments: 1}},
		{"array only", `{"tool_calls":[`, Counts{}},
		{"nested array elements", `{"tool_calls":[[{}]]}`, Counts{ToolFragments: 1, CompletedToolCalls: 1}},
		{"function_call", `{"function_call":{"name":"f","arguments":"{}"}}`, Counts{ToolFragments: 1, CompletedToolCalls: 1}},
		{"function_call truncated", `{"function_call":{"name":"f","argu`, Counts{ToolFragments: 1}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := NewScanner(&contentRules)
			if err := s.Write([]byte(tc.doc)); err != nil {
				t.Fatal(err)
			}
			if got := s.Counts(); got != tc.want {
				t.Errorf("Counts = %+v, want %+v", got, tc.want)
			}
		})
	}
	// A path in both ToolCalls and ToolObjects counts an object once.
	both := &Rules{ToolCalls: [][]string{{"t"}}, ToolObjects: [][]string{{"t"}}}
	if got, want := scanAll(both, []byte(`{"t":[{},{}],"x":0}`)), (Counts{ToolFragments: 2, CompletedToolCalls: 2}); got != want {
		t.Errorf("overlapping rules: Counts = %+v, want %+v", got, want)
	}
}

func TestWhitespacePrefix(t *testing.T) {
	s := NewScanner(&openAIRules)
	for range 50 {
		if err := s.Write([]byte("  ")); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Write([]byte("\r\n\t")); err != nil {
		t.Fatal(err)
	}
	if got := s.Counts(); got != (Counts{}) || s.Complete() {
		t.Fatalf("whitespace only: Counts = %+v, Complete = %v", got, s.Complete())
	}
	if err := s.Write([]byte(openAIDoc + "\n  ")); err != nil {
		t.Fatal(err)
	}
	if got := s.Counts(); got != openAIWant || !s.Complete() {
		t.Fatalf("after document: Counts = %+v, Complete = %v", got, s.Complete())
	}
}

func TestSyntaxErrors(t *testing.T) {
	cases := []struct {
		doc    string
		offset int64
	}{
		{`{"a":}`, 5},
		{`{"a" 1}`, 5},
		{`{"a":1,}`, 7},
		{`{,}`, 1},
		{`{"a":1 "b":2}`, 7},
		{`{"a":1]`, 6},
		{`[1,]`, 3},
		{`[1}`, 2},
		{`[1 2]`, 3},
		{`]`, 0},
		{`}`, 0},
		{`{1:2}`, 1},
		{`"\x"`, 2},
		{`"\u12G4"`, 5},
		{"\"a\x01\"", 2},
		{"\"a\nb\"", 2},
		{`tru e`, 3},
		{`nul`, -1},
		{`nulll`, 4},
		{`01`, 1},
		{`-a`, 1},
		{`1.e5`, 2},
		{`1e`, -1},
		{`1e+`, -1},
		{`1e+x`, 3},
		{`1.5.5`, 3},
		{`1e5e1`, 3},
		{`1e5.0`, 3},
		{`0e`, -1},
		{`-01`, 2},
		{`+1`, 0},
		{`.5`, 0},
		{`{"a":1}x`, 7},
		{`{"a":1} {}`, 8},
		{`1 2`, 2},
		{`@`, 0},
		{"\xef\xbb\xbf{}", 0}, // a byte order mark is not JSON
		{`'a'`, 0},
		{`{"a":NaN}`, 5},
		{`[-]`, 2},
	}
	for _, tc := range cases {
		t.Run(fmt.Sprintf("%q", tc.doc), func(t *testing.T) {
			if tc.offset >= 0 && json.Valid([]byte(tc.doc)) {
				t.Fatal("test document is valid JSON")
			}
			s := NewScanner(&contentRules)
			err := s.Write([]byte(tc.doc))
			if tc.offset < 0 {
				if err != nil {
					t.Fatalf("truncated document: unexpected error %v", err)
				}
				if s.Complete() {
					t.Fatal("truncated document reported complete")
				}
				return
			}
			var se *SyntaxError
			if !errors.As(err, &se) {
				t.Fatalf("Write error = %v, want *SyntaxError", err)
			}
			if se.Offset != tc.offset {
				t.Errorf("Offset = %d, want %d (%v)", se.Offset, tc.offset, err)
			}
			if s.Complete() {
				t.Error("Complete() after error")
			}
			if err2 := s.Write([]byte(" ")); err2 != err {
				t.Errorf("second Write = %v, want the same error", err2)
			}
			// Split: same error, same offset.
			for i := 0; i <= len(tc.doc); i++ {
				s2 := NewScanner(&contentRules)
				e := s2.Write([]byte(tc.doc[:i]))
				if e == nil {
					e = s2.Write([]byte(tc.doc[i:]))
				}
				if !errors.As(e, &se) || se.Offset != tc.offset {
					t.Fatalf("split %d: error %v, want offset %d", i, e, tc.offset)
				}
			}
		})
	}
}

func TestErrorMessageHasNoDocumentBytes(t *testing.T) {
	err := NewScanner(nil).Write([]byte(`{"a":§}`))
	if err == nil {
		t.Fatal("no error")
	}
	msg := err.Error()
	if strings.Contains(msg, "§") || strings.ContainsRune(msg, '\xc2') || !strings.HasPrefix(msg, "jsonscan: ") || !strings.HasSuffix(msg, " at offset 5") {
		t.Fatalf("unexpected message %q", msg)
	}
	err = NewScanner(nil).Write([]byte(`"secret` + "\x01"))
	if msg := err.Error(); strings.Contains(msg, "secret") || strings.Contains(msg, "\x01") {
		t.Fatalf("message leaks document bytes: %q", msg)
	}
}

func TestCountsFrozenAfterError(t *testing.T) {
	s := NewScanner(&contentRules)
	err := s.Write([]byte(`{"content":"ab","x":}`))
	if err == nil {
		t.Fatal("no error")
	}
	want := Counts{ContentBytes: 2}
	if got := s.Counts(); got != want {
		t.Fatalf("Counts = %+v, want %+v", got, want)
	}
	if err2 := s.Write([]byte(`,"content":"cdef"}`)); err2 != err {
		t.Fatalf("Write after error = %v", err2)
	}
	if got := s.Counts(); got != want {
		t.Fatalf("Counts changed after error: %+v", got)
	}
	// The error is reported at a byte inside a counted string: bytes before
	// it count, nothing after.
	if got := scanAll(&contentRules, []byte("{\"content\":\"abc\x00def\"}")); got != (Counts{ContentBytes: 3}) {
		t.Fatalf("Counts = %+v", got)
	}
}

func TestDepthLimit(t *testing.T) {
	ok := strings.Repeat("[", MaxDepth) + strings.Repeat("]", MaxDepth)
	s := NewScanner(nil)
	if err := s.Write([]byte(ok)); err != nil || !s.Complete() {
		t.Fatalf("depth %d: err %v, complete %v", MaxDepth, err, s.Complete())
	}

	tooDeep := strings.Repeat(`{"a":`, MaxDepth) + "["
	s = NewScanner(&contentRules)
	err := s.Write([]byte(tooDeep))
	var se *SyntaxError
	if !errors.As(err, &se) || se.Offset != int64(len(tooDeep)-1) {
		t.Fatalf("depth %d: err %v", MaxDepth+1, err)
	}
	if !strings.Contains(err.Error(), "depth") {
		t.Errorf("message %q does not mention depth", err)
	}
	if cap(s.stack) > 2*MaxDepth {
		t.Errorf("stack capacity %d", cap(s.stack))
	}
}

func TestComplete(t *testing.T) {
	cases := []struct {
		doc  string
		want bool
	}{
		{``, false},
		{`   `, false},
		{`{`, false},
		{`{}`, true},
		{` {} `, true},
		{"{}\n", true},
		{`[]`, true},
		{`[1,2`, false},
		{`"abc"`, true},
		{`"abc`, false},
		{`"abc\`, false},
		{`true`, true},
		{`tru`, false},
		{`null `, true},
		{`0`, true},
		{`123`, true},
		{`-`, false},
		{`-0`, true},
		{`1.`, false},
		{`1.5`, true},
		{`1e`, false},
		{`1e-`, false},
		{`1e-7`, true},
		{`{"a":1}`, true},
		{`{"a":1`, false},
		{`{"a":1}}`, false}, // syntax error
	}
	for _, tc := range cases {
		s := NewScanner(nil)
		_ = s.Write([]byte(tc.doc))
		if got := s.Complete(); got != tc.want {
			t.Errorf("%q: Complete() = %v, want %v", tc.doc, got, tc.want)
		}
	}
}

func TestReset(t *testing.T) {
	s := NewScanner(&openAIRules)
	if err := s.Write([]byte(`{"x":}`)); err == nil {
		t.Fatal("no error")
	}
	s.Reset()
	if s.Complete() || s.Counts() != (Counts{}) {
		t.Fatal("Reset did not clear state")
	}
	if err := s.Write([]byte(openAIDoc)); err != nil {
		t.Fatal(err)
	}
	if s.Counts() != openAIWant || !s.Complete() {
		t.Fatalf("after Reset: %+v", s.Counts())
	}
	s.Reset()
	// Offsets restart at zero after Reset.
	var se *SyntaxError
	if err := s.Write([]byte(`[}`)); !errors.As(err, &se) || se.Offset != 1 {
		t.Fatalf("after Reset: err %v", err)
	}
}

func TestRulesAreCopied(t *testing.T) {
	r := Rules{Content: [][]string{{"content"}}}
	s := NewScanner(&r)
	r.Content[0][0] = "other"
	r.Content = append(r.Content, []string{"x"})
	if err := s.Write([]byte(`{"content":"ab","x":"cd"}`)); err != nil {
		t.Fatal(err)
	}
	if got := s.Counts(); got != (Counts{ContentBytes: 2}) {
		t.Fatalf("Counts = %+v", got)
	}
}

func TestScanAllocations(t *testing.T) {
	s := NewScanner(&openAIRules)
	doc := []byte(openAIDoc)
	allocs := testing.AllocsPerRun(100, func() {
		s.Reset()
		if err := s.Write(doc); err != nil {
			t.Fatal(err)
		}
	})
	if allocs != 0 {
		t.Fatalf("%v allocations per scan, want 0", allocs)
	}
}

func BenchmarkScanOpenAI(b *testing.B) {
	doc := []byte(openAIDoc)
	s := NewScanner(&openAIRules)
	b.ReportAllocs()
	b.SetBytes(int64(len(doc)))
	for b.Loop() {
		s.Reset()
		if err := s.Write(doc); err != nil {
			b.Fatal(err)
		}
	}
}

// oracleCounts computes the Counts of a valid JSON document with
// encoding/json's tokenizer, independently of the Scanner. It is exact only
// for documents that are valid UTF-8 (encoding/json replaces invalid bytes
// with U+FFFD, the Scanner counts them raw).
func oracleCounts(t testing.TB, r *Rules, doc []byte) Counts {
	t.Helper()
	match := func(paths [][]string, path []string) bool {
		for _, p := range paths {
			if len(p) == len(path) {
				eq := true
				for i := range p {
					if p[i] != path[i] {
						eq = false
						break
					}
				}
				if eq {
					return true
				}
			}
		}
		return false
	}
	if r == nil {
		r = &Rules{}
	}
	type ctr struct {
		array     bool
		tool      bool
		keyLen    int // len(path) of the container
		expectKey bool
	}
	var (
		c     Counts
		path  []string
		stack []ctr
	)
	dec := json.NewDecoder(bytes.NewReader(doc))
	dec.UseNumber()
	// valueStarted is called for every value and returns after it is
	// accounted for; for objects members pushing keys happens on keys.
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("oracle: %v", err)
		}
		inArray := len(stack) > 0 && stack[len(stack)-1].array
		if len(stack) > 0 && !inArray && stack[len(stack)-1].expectKey {
			if d, ok := tok.(json.Delim); ok && d == '}' {
				// close handled below
			} else {
				key := tok.(string)
				top := &stack[len(stack)-1]
				path = append(path[:top.keyLen], key)
				top.expectKey = false
				continue
			}
		}
		// tok is a value (or a closing delimiter).
		switch v := tok.(type) {
		case json.Delim:
			switch v {
			case '{', '[':
				tool := false
				if v == '{' {
					tool = match(r.ToolObjects, path) || (inArray && match(r.ToolCalls, path))
					if tool {
						c.ToolFragments++
					}
				}
				stack = append(stack, ctr{array: v == '[', tool: tool, keyLen: len(path), expectKey: v == '{'})
				continue
			case '}', ']':
				top := stack[len(stack)-1]
				stack = stack[:len(stack)-1]
				if top.tool {
					c.CompletedToolCalls++
				}
				path = path[:top.keyLen]
			}
		case string:
			if match(r.Content, path) {
				c.ContentBytes += int64(len(v))
			}
			if match(r.Reasoning, path) {
				c.ReasoningBytes += int64(len(v))
			}
		}
		// A value ended: the enclosing object expects a key next.
		if len(stack) > 0 && !stack[len(stack)-1].array {
			top := &stack[len(stack)-1]
			top.expectKey = true
			path = path[:top.keyLen]
		}
	}
	return c
}
