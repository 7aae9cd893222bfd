package openai

import (
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/recourse-dev/recourse/recoursetest"
)

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

// checkDescribe fails unless fastDescribe agrees with the reference,
// describe, on body, and reports whether the fast path decided.
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

func TestFastDescribeAgrees(t *testing.T) {
	for i, s := range describeSeeds {
		took := checkDescribe(t, []byte(s))
		if i < 2 && !took {
			t.Errorf("fastDescribe left the common body %.60q to the reference", s)
		}
	}
}

// TestDecodeAllocations pins the allocations of decoding a small
// completion: one for the completion and its usage, one for its text.
func TestDecodeAllocations(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector adds allocations")
	}
	body := []byte(recoursetest.OpenAIChat("Hello! How can I help you today?"))
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

func FuzzFastDescribe(f *testing.F) {
	addCorpus(f, describeSeeds)
	f.Fuzz(func(t *testing.T, body []byte) { checkDescribe(t, body) })
}

// TestFastRandomShapes builds many request bodies from parts of every shape
// fastDescribe reads (members of each type, duplicates, escaped and
// look-alike keys) and checks that it agrees with describe.
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
	fast := 0
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
