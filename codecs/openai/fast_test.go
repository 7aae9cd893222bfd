package openai

import (
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/recourse-dev/recourse/internal/scripted"
)

// fastSeeds are bodies of every shape for the fast-path tests: the fast
// paths must take the common ones and agree with the reference decoders on
// all of them.
var fastSeeds = []string{
	scripted.OpenAIChat("Hello! How can I help you today?"),
	`{"id":"chatcmpl-1","object":"chat.completion","created":1700000000,"model":"gpt-4o-2024-08-06",
 "choices":[{"index":0,"message":{"role":"assistant","content":"Sunny, é🙂","refusal":null,
   "tool_calls":[{"id":"call_1","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Tokyo\"}"}}]},
   "logprobs":null,"finish_reason":"tool_calls"}],
 "usage":{"prompt_tokens":3,"completion_tokens":5,"total_tokens":8,"prompt_tokens_details":{"cached_tokens":0}},
 "service_tier":"default","system_fingerprint":"fp_1"}`,
	`{"choices":[{"message":{"content":"\u00e9\ud83d\ude42\n\"q\"\ud800\udbff\udc00x"}}]}`,
	`{"choices":[{"message":{"reasoning_content":"","reasoning":"b"}}]}`,
	`{"choices":[{"message":{"reasoning_content":"a","reasoning":7}}]}`,
	`{"choices":[{"message":{"reasoning_content":"","reasoning":7}}]}`,
	`{"choices":[{"message":{"content":null,"tool_calls":[
		{"id":"c1","function":{"name":"a","arguments":"{\"city\":\"Tok"}},
		{"id":"c2","function":{"name":"b","arguments":""}},
		{"id":"c3","function":{"name":"c"}},
		{"id":null,"function":{"name":null,"arguments":null}},
		{"id":"c4","function":{"name":"d","arguments":{"x":1}}},
		{"id":"c5","function":{"name":"e","arguments":" [1, 2] "}},
		{"id":"c6","function":{"name":"f","arguments":"<\u2028>"}}]},"finish_reason":"length"}]}`,
	`{"choices":[{"message":{"tool_calls":[]}}]}`,
	`{"choices":[{"message":{"tool_calls":[null]}}]}`,
	`{"choices":[{"message":{"tool_calls":[{"id":"c"}]}}]}`,
	`{"choices":[{"message":{"content":null,"function_call":{"name":"g","arguments":"{\"city\":\"Oslo\"}"}}}]}`,
	`{"choices":[{"message":{"function_call":[]}}]}`,
	`{"choices":[{"message":{}}],"usage":{}}`,
	`{"choices":[{"message":{}}],"usage":{"prompt_tokens":-0,"completion_tokens":12345678901234567}}`,
	`{"choices":[{"message":{}}],"usage":{"prompt_tokens":1e2}}`,
	`{"choices":[{"message":{}}],"usage":{"prompt_tokens":99999999999999999999}}`,
	`{"choices":[{"message":{}}],"usage":{"prompt_tokens":"1"}}`,
	`{"choices":[{"message":{}}],"usage":[]}`,
	`{"choices":[{"message":{"content":"a"}}],"choices":[{"message":{"content":"b"}}]}`,
	`{"choices":5,"choices":[{"message":{"content":"last wins"}}]}`,
	`{"choices":[{"message":{"content":"a","Content":"b","content":"c"}}]}`,
	`{"ch\u006fices":[{"message":{"content":"escaped key"}}]}`,
	`{"choices":[{"message":{"content":"x"}}],"object":"error"}`,
	`{"choices":[{"message":{"content":"x"}}],"object":"\u0065rror"}`,
	`{"choices":[{"message":{"content":"x"}}],"object":"chat.completion","error":null}`,
	`{"choices":[{"message":{"content":"x"}}],"error":{"code":"server_error"}}`,
	`{"error":"boom"}`,
	`{"choices":[]}`, `{"choices":[null]}`, `{"choices":[{"message":null}]}`, `{"choices":[{}]}`,
	`{"choices":[{"message":"hi"}]}`, `{"choices":[{"message":{"content":5}}]}`,
	`{"id":5,"choices":[{"message":{}}]}`, `{"choices":[{"message":{}, "finish_reason":true}]}`,
	" \r\n\t{\"choices\":[{\"message\":{}}]}\n",
	`null`, `[]`, `"x"`, ``, `{"choices":[{"message":{"content":"cut`,
	strings.Repeat("[", 600) + strings.Repeat("]", 600),
	`{"choices":[{"message":{"content":"deep"}}],"x":` + strings.Repeat("[", 600) + strings.Repeat("]", 600) + `}`,
}

// describeSeeds are request bodies for the Describe fast-path tests.
var describeSeeds = []string{
	`{"model":"gpt-4o-mini","messages":[{"role":"user","content":"Say hello."}]}`,
	`{"model":"m","stream":true,"stream_options":{"include_usage":true}}`,
	`{"model":"m","stream":false}`, `{"model":"m","stream":null}`, `{"model":"m","stream":"yes"}`,
	`{"model":"m","response_format":{"type":"json_schema","json_schema":{"name":"x","schema":{}}}}`,
	`{"model":"m","response_format":{"type":"json_object"}}`, `{"model":"m","response_format":{"type":"text"}}`,
	`{"model":"m","response_format":{"type":"json_\u006fbject"}}`, `{"model":"m","response_format":{"type":1}}`,
	`{"model":"m","response_format":"json"}`, `{"model":"m","response_format":null}`,
	`{"model":"m","response_format":{"type":null}}`, `{"model":"m","response_format":{}}`,
	`{"model":null,"stream":null,"response_format":null}`, `{"model":4}`, `{"Model":"m","Stream":true}`,
	`{"mod\u0065l":"m","str\u0065am":true}`, `{"model":"a\u00e9\n"}`, "{\"model\":\"\xff\"}",
	`{"model":"a","model":"b"}`, `[1]`, `null`, ``, `{"model":"m"} {}`, `{"model":"gpt-4o","stre`,
	`{"model":"m","x":` + strings.Repeat("[", 600) + strings.Repeat("]", 600) + `}`,
}

// checkDecode fails unless fastDecode agrees with the reference decoder on
// body (valid UTF-8), and reports whether the fast path decided.
func checkDecode(t *testing.T, body []byte) bool {
	t.Helper()
	fast, ok := fastDecode(body)
	if fastCheck(body) != ok {
		t.Fatalf("fastCheck(%.60q) = %v, fastDecode decided %v", body, !ok, ok)
	}
	if !ok {
		return false
	}
	ref, err := decode(body)
	if err != nil {
		t.Fatalf("fastDecode(%.60q) succeeded, decode: %v", body, err)
	}
	if !reflect.DeepEqual(fast, ref) {
		t.Fatalf("fastDecode(%.60q) =\n%#v\ndecode =\n%#v", body, fast, ref)
	}
	return true
}

// checkDescribe is checkDecode for Describe.
func checkDescribe(t *testing.T, body []byte) bool {
	t.Helper()
	fast, ok := fastDescribe(body)
	if !ok {
		return false
	}
	ref, err := describe(body)
	if err != nil || fast != ref {
		t.Fatalf("fastDescribe(%.60q) = %+v, describe = %+v, %v", body, fast, ref, err)
	}
	return true
}

// TestFastDecodeAgrees checks the fast path against the reference decoder,
// and that it decides the common shapes itself.
func TestFastDecodeAgrees(t *testing.T) {
	for i, s := range fastSeeds {
		if !utf8.ValidString(s) {
			continue
		}
		took := checkDecode(t, []byte(s))
		if i < 4 && !took {
			t.Errorf("fastDecode left the common body %.60q to the reference decoder", s)
		}
	}
	c := New()
	for _, s := range fastSeeds {
		if !utf8.ValidString(s) {
			continue
		}
		comp, err := c.Decode([]byte(s))
		ref, rerr := decode([]byte(s))
		if !reflect.DeepEqual(comp, ref) || !reflect.DeepEqual(err, rerr) {
			t.Errorf("Decode(%.60q) = %#v, %#v; want %#v, %#v", s, comp, err, ref, rerr)
		}
	}
}

func TestFastDescribeAgrees(t *testing.T) {
	for i, s := range describeSeeds {
		took := checkDescribe(t, []byte(s))
		if i < 2 && !took {
			t.Errorf("fastDescribe left the common body %.60q to the reference", s)
		}
	}
}

// TestFastDecodeAllocations pins the allocations of decoding a small
// completion: one for the completion and its usage, one for its text.
func TestFastDecodeAllocations(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector adds allocations")
	}
	body := []byte(fastSeeds[0])
	c := New()
	if n := testing.AllocsPerRun(100, func() { _, _ = c.Decode(body) }); n > 2 {
		t.Errorf("Decode allocates %v times, want at most 2", n)
	}
	req := []byte(describeSeeds[0])
	if n := testing.AllocsPerRun(100, func() { _, _ = c.Describe(req) }); n != 0 {
		t.Errorf("Describe of a repeated model allocates %v times, want 0", n)
	}
}

// TestDescribeModelRepeats checks that the model Describe remembers is
// returned only for a raw name that spells it: an escaped name is decoded
// whatever came before.
func TestDescribeModelRepeats(t *testing.T) {
	c := New()
	for _, tc := range []struct{ body, model string }{
		{`{"model":"gpt-4o","messages":[]}`, "gpt-4o"},
		{`{"model":"gpt-4o","messages":[]}`, "gpt-4o"},
		{`{"model":"a\\b","messages":[]}`, `a\b`},
		{`{"model":"a\b","messages":[]}`, "a\b"}, // a backspace, not the remembered backslash
		{`{"model":"gpt-\u0034o","messages":[]}`, "gpt-4o"},
		{`{"model":"other","messages":[]}`, "other"},
		{`{"model":"gpt-4o","messages":[]}`, "gpt-4o"},
	} {
		info, err := c.Describe([]byte(tc.body))
		if err != nil {
			t.Fatalf("Describe(%s): %v", tc.body, err)
		}
		if info.Model != tc.model {
			t.Errorf("Describe(%s).Model = %q, want %q", tc.body, info.Model, tc.model)
		}
	}
}

// The differential fuzz targets also run the FuzzDecode corpus.
func addCorpus(f *testing.F, seeds []string) {
	for _, s := range seeds {
		f.Add([]byte(s))
	}
	files, _ := filepath.Glob(filepath.Join("testdata", "fuzz", "FuzzDecode", "*"))
	for _, name := range files {
		if b, err := os.ReadFile(name); err == nil {
			if s, ok := corpusBytes(string(b)); ok {
				f.Add([]byte(s))
			}
		}
	}
}

// corpusBytes extracts the []byte value of a one-value corpus file.
func corpusBytes(file string) (string, bool) {
	_, rest, ok := strings.Cut(file, "[]byte(")
	if !ok {
		return "", false
	}
	rest = strings.TrimSpace(rest)
	rest = strings.TrimSuffix(rest, ")")
	s, err := strconv.Unquote(rest)
	return s, err == nil
}

func FuzzFastDecode(f *testing.F) {
	addCorpus(f, fastSeeds)
	f.Fuzz(func(t *testing.T, body []byte) {
		if utf8.Valid(body) {
			checkDecode(t, body)
		}
	})
}

func FuzzFastDescribe(f *testing.F) {
	addCorpus(f, describeSeeds)
	f.Fuzz(func(t *testing.T, body []byte) { checkDescribe(t, body) })
}

// TestFastRandomShapes builds many bodies from parts of every shape the fast
// paths read (fields of each type, duplicates, escaped and look-alike keys)
// and checks that the fast paths agree with the reference decoders.
func TestFastRandomShapes(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	pick := func(xs ...string) string { return xs[r.IntN(len(xs))] }
	str := func() string {
		return pick(`"x"`, `""`, `"a\nb"`, `"\u00e9\ud83d\ude42"`, `"\ud800"`, `"é🙂"`, `"{\"a\":1}"`, `"[1,"`, `"error"`, `"\u0065rror"`)
	}
	scalar := func() string {
		return pick(str(), str(), `null`, `1`, `-0`, `1.5`, `1e3`, `true`, `[]`, `{}`, `[1,"x"]`)
	}
	members := func(keys []string, val func(k string) string) string {
		var b strings.Builder
		b.WriteByte('{')
		n := r.IntN(len(keys) + 2)
		for i := range n {
			if i > 0 {
				b.WriteString(pick(",", " , "))
			}
			k := keys[r.IntN(len(keys))]
			b.WriteString(`"` + k + `":` + pick("", " ") + val(k))
		}
		b.WriteString(pick("}", " }"))
		return b.String()
	}
	function := func() string {
		return members([]string{"name", "arguments", "Name", "n\\u0061me"}, func(string) string {
			return pick(scalar(), `{"x":[1]}`, `"{\"city\":\"Tok"`)
		})
	}
	call := func() string {
		return pick(`null`, `{"function":{}}`, members([]string{"id", "function", "function", "type", "Function"}, func(k string) string {
			if k == "function" {
				return pick(function(), function(), scalar())
			}
			return scalar()
		}))
	}
	array := func(elem func() string) string {
		n := r.IntN(3)
		parts := make([]string, n)
		for i := range parts {
			parts[i] = elem()
		}
		return "[" + strings.Join(parts, ",") + "]"
	}
	message := func() string {
		return members([]string{"content", "reasoning_content", "reasoning", "tool_calls", "function_call", "role", "Content"},
			func(k string) string {
				switch k {
				case "tool_calls":
					return pick(array(call), array(call), scalar())
				case "function_call":
					return pick(function(), `null`, scalar())
				}
				return pick(str(), str(), str(), `null`, scalar())
			})
	}
	choice := func() string {
		return pick(`null`, `{"message":{}}`, members([]string{"message", "message", "finish_reason", "index", "m\\u0065ssage"}, func(k string) string {
			if k == "message" {
				return pick(message(), message(), message(), scalar())
			}
			return pick(str(), str(), `null`, scalar())
		}))
	}
	usage := func() string {
		return members([]string{"prompt_tokens", "completion_tokens", "total_tokens"}, func(string) string {
			return pick(`1`, `0`, `-3`, `12345678901234567`, `123456789012345678901`, `1.0`, `1e2`, `null`, `"1"`)
		})
	}
	body := func() string {
		return members([]string{"id", "model", "choices", "choices", "usage", "error", "object", "ch\\u006fices", "Choices"},
			func(k string) string {
				switch k {
				case "choices":
					return pick(array(choice), array(choice), array(choice), scalar())
				case "usage":
					return pick(usage(), usage(), scalar())
				case "error":
					return pick(`null`, `null`, `{"code":"server_error"}`, scalar())
				}
				return pick(str(), str(), `null`, scalar())
			})
	}
	fast := 0
	for range 20000 {
		b := []byte(body())
		if !utf8.Valid(b) {
			continue
		}
		if checkDecode(t, b) {
			fast++
		}
	}
	t.Logf("%d random bodies took the fast path", fast)
	if fast < 200 {
		t.Errorf("only %d random bodies took the fast path", fast)
	}
	fast = 0
	for range 8000 {
		b := []byte(members([]string{"model", "stream", "response_format", "messages", "Model", "str\\u0065am"}, func(k string) string {
			switch k {
			case "stream":
				return pick(`true`, `false`, `null`, scalar())
			case "response_format":
				return pick(members([]string{"type", "json_schema", "Type"}, func(string) string {
					return pick(`"json_schema"`, `"json_object"`, `"text"`, scalar())
				}), scalar())
			}
			return scalar()
		}))
		if checkDescribe(t, b) {
			fast++
		}
	}
	t.Logf("%d random requests took the fast path", fast)
	if fast < 1000 {
		t.Errorf("only %d random requests took the fast path", fast)
	}
}
