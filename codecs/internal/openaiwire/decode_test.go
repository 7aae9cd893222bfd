package openaiwire

import (
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/recourse-dev/recourse/codec"
	"github.com/recourse-dev/recourse/recoursetest"
)

// decodeDialects are the readings of a reply the decoder is checked in:
// the zero (lenient) Dialect, the OpenAI and oMLX codecs' readings, and
// every decoding flag at once.
var decodeDialects = map[string]*Dialect{
	"zero":   {},
	"openai": {VLLMError: true},
	"omlx":   {Objects: true, StrictError: true},
	"all":    {Objects: true, StrictError: true, VLLMError: true},
}

// decodeSeeds are bodies of every shape for the decoder's tests; the
// fuzz target also runs the codecs' FuzzDecode corpora.
var decodeSeeds = []string{
	recoursetest.OpenAIChat("Hello! How can I help you today?"),
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
	// oMLX's shapes: keepalive whitespace, strict arguments, errors of other types.
	"     \n \n" + `{"id":"chatcmpl-abc","model":"qwen3","choices":[{"message":{"role":"assistant","content":"Hello","reasoning_content":"greet"},"finish_reason":"stop"}],"usage":{"prompt_tokens":12,"completion_tokens":5}}`,
	"     ", "\n\n\n", "\u00a0{}",
	`{"choices":[{"message":{"tool_calls":[{"id":"a","function":{"name":"f","arguments":"{\"a\":[1,{}]}"}},{"id":"b","function":{"name":"g","arguments":"  "}},{"id":"c","function":{"name":"h"}}]}}]}`,
	`{"choices":[{"message":{"tool_calls":[{"id":"c","function":{"name":"f","arguments":"[1]"}}]}}]}`,
	`{"choices":[{"message":{"tool_calls":[{"id":"c","function":{"name":"f","arguments":{}}}]}}]}`,
	`{"choices":[{"message":{"tool_calls":[{"id":"c","function":{"arguments":"{}"}}]}}]}`,
	`{"choices":[{"message":{"tool_calls":[{"id":"c","function":{"name":"f","arguments":" {\"a\":1} "}}]}}]}`,
	`{"error":true}`, `{"error":[]}`, `{"error":5,"choices":[{"message":{}}]}`,
	`{"object":"error","message":"bad","type":"BadRequestError","code":400}`,
	`{"object":"error","message":"bad","code":"c"}`,
	`{"error":{"m\u0065ssage":"m","code":"a","code":"b"}}`,
	`{"ch\u006fices":[{"m\u0065ssage":{"con\u0074ent":"\ud83d\ude42\ud800","tool\u005fcalls":[{"\u0069d":"i","f\u0075nction":{"n\u0061me":"f","\u0061rguments":"{}"}}]},"finish\u005freason":"stop"}],"\u0075sage":{"prompt\u005ftokens":1}}`,
	`{"choices":[{"message":{}}],"usage":{"prompt_tokens":1,"prompt_tokens":"x"}}`,
	`{"choices":[{"message":{}}],"usage":{"prompt_tokens":-1234567890123456789}}`,
	`{"choices":[{"message":{}}],"usage":{"prompt_tokens":1.0}}`,
	`{"x":` + strings.Repeat("[", 511) + strings.Repeat("]", 511) + `,"choices":[{"message":{}}]}`,
	`{"x":` + strings.Repeat("[", 512) + strings.Repeat("]", 512) + `,"choices":[{"message":{}}]}`,
	`{"choices":[{"message":{"content":"x"}}]}` + strings.Repeat(" ", 3),
}

// checkDecode fails unless Decode, Check and ErrorCode of every dialect
// agree with the oracle on body, and reports whether some dialect decoded
// a completion.
func checkDecode(t *testing.T, body []byte) bool {
	t.Helper()
	decoded := false
	for name, d := range decodeDialects {
		got, err := d.Decode(body)
		want, werr := oracleDecode(d, body)
		if !reflect.DeepEqual(got, want) || !sameError(err, werr) {
			t.Fatalf("%s: Decode(%.80q) =\n%#v, %#v\noracle:\n%#v, %#v", name, body, got, err, want, werr)
		}
		if cerr := d.Check(body); !reflect.DeepEqual(cerr, err) {
			t.Fatalf("%s: Check(%.80q) = %#v, Decode error %#v", name, body, cerr, err)
		}
		if code, want := d.ErrorCode(body), oracleErrorCode(d, body); code != want {
			t.Fatalf("%s: ErrorCode(%.80q) = %q, oracle %q", name, body, code, want)
		}
		decoded = decoded || got != nil
	}
	return decoded
}

// TestR14_2_DecodeAgreesWithEncodingJSON checks the decoder against the
// oracle on every seed, and that it decodes the common shapes.
func TestR14_2_DecodeAgreesWithEncodingJSON(t *testing.T) {
	t.Parallel()
	for i, s := range decodeSeeds {
		decoded := checkDecode(t, []byte(s))
		if i < 4 {
			assert.True(t, decoded, "the common body %.60q did not decode", s)
		}
	}
}

// TestR13_2_DecodeRefusesWhatTheObserverCannotScan checks, in every
// dialect, that a body nested deeper than the observer scans is malformed
// even when the nesting comes before choices, so that everything Decode
// returns was also observed; one level less decodes.
func TestR13_2_DecodeRefusesWhatTheObserverCannotScan(t *testing.T) {
	t.Parallel()
	deep := func(n int) []byte {
		return []byte(`{"x":` + strings.Repeat("[", n) + strings.Repeat("]", n) + `,"choices":[{"message":{"content":"deep"}}]}`)
	}
	for name, d := range decodeDialects {
		comp, err := d.Decode(deep(511)) // with the top object, 512 levels
		require.NoError(t, err, name)
		assert.Equal(t, "deep", comp.Message.Content, name)
		for _, n := range []int{512, 600} {
			comp, err = d.Decode(deep(n))
			assert.Nil(t, comp, name)
			var pe *codec.ProtocolError
			require.ErrorAs(t, err, &pe, name)
			assert.Equal(t, "response is nested too deeply", pe.What, name)
			assert.Equal(t, err, d.Check(deep(n)), name)
		}
	}
}

// TestDecodeKeepsNoReferenceToTheBody checks that a decoded completion
// shares no memory with the body: overwriting the body afterwards changes
// nothing decoded.
func TestDecodeKeepsNoReferenceToTheBody(t *testing.T) {
	t.Parallel()
	d := decodeDialects["openai"]
	want, err := oracleDecode(d, []byte(decodeSeeds[1]))
	require.NoError(t, err)
	body := []byte(decodeSeeds[1])
	comp, err := d.Decode(body)
	require.NoError(t, err)
	for i := range body {
		body[i] = 'x'
	}
	assert.Equal(t, want, comp)
}

// corpora are the codecs' FuzzDecode corpora, also run by FuzzDecodeOracle.
var corpora = []string{
	filepath.Join("..", "..", "openai", "testdata", "fuzz", "FuzzDecode"),
	filepath.Join("..", "..", "omlx", "testdata", "fuzz", "FuzzDecode"),
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

// FuzzDecodeOracle checks Decode, Check and ErrorCode of every dialect
// against the oracle built on encoding/json (oracle_test.go).
func FuzzDecodeOracle(f *testing.F) {
	for _, s := range decodeSeeds {
		f.Add([]byte(s))
	}
	for _, dir := range corpora {
		files, _ := filepath.Glob(filepath.Join(dir, "*"))
		for _, name := range files {
			if b, err := os.ReadFile(name); err == nil {
				if s, ok := corpusBytes(string(b)); ok {
					f.Add([]byte(s))
				}
			}
		}
	}
	f.Fuzz(func(t *testing.T, body []byte) { checkDecode(t, body) })
}

// TestR14_2_DecodeRandomShapesAgreeWithEncodingJSON builds many bodies from
// parts of every shape the decoder reads (members of each type,
// duplicates, escaped and look-alike keys) and checks every dialect against
// the oracle.
func TestR14_2_DecodeRandomShapesAgreeWithEncodingJSON(t *testing.T) {
	t.Parallel()
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
		return members([]string{"content", "reasoning_content", "reasoning", "tool_calls", "function_call", "role", "Content", "con\\u0074ent", "tool\\u005fcalls"},
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
	decoded := 0
	for range 3000 {
		if checkDecode(t, []byte(body())) {
			decoded++
		}
	}
	t.Logf("%d random bodies decoded", decoded)
	if decoded < 100 {
		t.Errorf("only %d random bodies decoded", decoded)
	}
}
