package jsonscan

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

// valueSeeds are documents for the Valid and reader tests, valid or not.
var valueSeeds = []string{
	``, ` `, `{}`, `[]`, `null`, `true`, `false`, `0`, `-0`, `1.5e+3`, `-12.0E-1`, `"x"`,
	` {"a" : [1, {"b":null}, "c\"\\\/\b\f\n\r\t\u00e9"] , "d":{}} `,
	`{"k":"\ud83d\ude42\ud800\udc00\ud800x\udc00"}`,
	"{\"k\":\"\xff\xfe ok \xe2\x82\"}",
	`[1,]`, `{"a":1,}`, `{"a"}`, `{"a":}`, `[1 2]`, `01`, `1.`, `1e`, `-`, `.5`, `"\x"`, `"\u12G4"`,
	"\"a\x01b\"", `{"a":1}{}`, `[`, `{`, `{"a":[}`, `[{]`, `nul`, `truex`, `[1]]`, `{"a":1}}`,
	`{"id":"c","choices":[{"message":{"content":"hi"},"finish_reason":"stop"}],"usage":{"prompt_tokens":1}}`,
}

// scannerAccepts is the definition Valid must match: a Scanner with no rules
// scans p to Complete without an error.
func scannerAccepts(p []byte) bool {
	s := NewScanner(nil)
	return s.Write(p) == nil && s.Complete()
}

func TestValid(t *testing.T) {
	deep := func(n int) string { return strings.Repeat("[", n) + strings.Repeat("]", n) }
	docs := append([]string{deep(MaxDepth), deep(MaxDepth + 1), deep(MaxDepth + 1)[1:]}, valueSeeds...)
	for _, doc := range docs {
		if got, want := Valid([]byte(doc)), scannerAccepts([]byte(doc)); got != want {
			t.Errorf("Valid(%.40q) = %v, want %v", doc, got, want)
		}
	}
	if !Valid([]byte(deep(MaxDepth))) || Valid([]byte(deep(MaxDepth+1))) {
		t.Errorf("Valid does not nest exactly MaxDepth containers deep")
	}
}

func TestValidAllocations(t *testing.T) {
	doc := []byte(valueSeeds[len(valueSeeds)-1])
	if n := testing.AllocsPerRun(100, func() { Valid(doc) }); n != 0 {
		t.Errorf("Valid allocates %v times, want 0", n)
	}
}

// checkReaders compares the readers with encoding/json on a valid document:
// every object's members (last duplicate wins, as in a map) and every
// array's elements are the raw values encoding/json.RawMessage holds, and
// every string decodes as encoding/json decodes it.
func checkReaders(t *testing.T, v []byte) {
	t.Helper()
	switch v[0] {
	case '{':
		var want map[string]json.RawMessage
		if err := json.Unmarshal(v, &want); err != nil {
			t.Fatalf("json.Unmarshal: %v", err)
		}
		got := map[string]json.RawMessage{}
		for m := ObjectMembers(v); ; {
			key, escaped, val, ok := m.Next()
			if !ok {
				break
			}
			if escaped != bytes.ContainsRune(key, '\\') {
				t.Errorf("key %q: escaped = %v", key, escaped)
			}
			quoted := append(append([]byte{'"'}, key...), '"')
			got[string(Unquote(nil, quoted))] = val
			checkReaders(t, val)
		}
		if len(got) != len(want) {
			t.Fatalf("%d members, want %d", len(got), len(want))
		}
		for k, w := range want {
			if !bytes.Equal(got[k], w) {
				t.Errorf("member %q = %q, want %q", k, got[k], w)
			}
		}
	case '[':
		var want []json.RawMessage
		if err := json.Unmarshal(v, &want); err != nil {
			t.Fatalf("json.Unmarshal: %v", err)
		}
		var got []json.RawMessage
		for e := ArrayElements(v); ; {
			val, ok := e.Next()
			if !ok {
				break
			}
			got = append(got, val)
			checkReaders(t, val)
		}
		if len(got) != len(want) {
			t.Fatalf("%d elements, want %d", len(got), len(want))
		}
		for i := range want {
			if !bytes.Equal(got[i], want[i]) {
				t.Errorf("element %d = %q, want %q", i, got[i], want[i])
			}
		}
	case '"':
		var want string
		if err := json.Unmarshal(v, &want); err != nil {
			t.Fatalf("json.Unmarshal: %v", err)
		}
		if got := string(Unquote([]byte("prefix"), v)); got != "prefix"+want {
			t.Errorf("Unquote(%q) = %q, want %q", v, got, "prefix"+want)
		}
	}
}

func TestReaders(t *testing.T) {
	for _, doc := range valueSeeds {
		if Valid([]byte(doc)) {
			checkReaders(t, TrimSpace([]byte(doc)))
		}
	}
}

func FuzzValid(f *testing.F) {
	for _, s := range valueSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, p []byte) {
		got := Valid(p)
		if want := scannerAccepts(p); got != want {
			t.Fatalf("Valid = %v, Scanner accepts: %v", got, want)
		}
		if got != (json.Valid(p) && jsonDepth(p) <= MaxDepth) {
			t.Fatalf("Valid = %v, encoding/json disagrees", got)
		}
		if got {
			checkReaders(t, TrimSpace(p))
		}
		checkValidContainers(t, p)
	})
}

// checkValidContainers checks that ValidObject and ValidArray, with
// SkipValid for each member or element, agree with Valid.
func checkValidContainers(t *testing.T, p []byte) {
	t.Helper()
	i := SkipSpace(p, 0)
	if i >= len(p) || p[i] != '{' && p[i] != '[' {
		return
	}
	var end int
	if p[i] == '{' {
		end = ValidObject(p, i, 0, func(key []byte, escaped bool, v int) int {
			if escaped != bytes.ContainsRune(key, '\\') {
				t.Errorf("key %q: escaped = %v", key, escaped)
			}
			return SkipValid(p, v, 1)
		})
	} else {
		end = ValidArray(p, i, 0, func(_, v int) int { return SkipValid(p, v, 1) })
	}
	if got, want := end >= 0 && SkipSpace(p, end) == len(p), Valid(p); got != want {
		t.Errorf("ValidObject/ValidArray(%.40q) = %d, Valid = %v", p, end, want)
	}
}

func TestValidContainers(t *testing.T) {
	deep := func(n int) string { return strings.Repeat("[", n) + strings.Repeat("]", n) }
	for _, doc := range append([]string{deep(MaxDepth), deep(MaxDepth + 1), `{"a":` + deep(MaxDepth-1) + `}`,
		`{"a":` + deep(MaxDepth) + `}`}, valueSeeds...) {
		checkValidContainers(t, []byte(doc))
	}
}

// TestTrimSpace checks that TrimSpace trims exactly JSON's whitespace, on
// bytes of any kind.
func TestTrimSpace(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"": "", " \t\r\n": "", " a b\t\n": "a b", "\v{}\f": "\v{}\f", "\u00a0a": "\u00a0a", "x": "x",
		" \xff ": "\xff", "{\"a\":1} \r\n": `{"a":1}`,
	} {
		assert.Equal(t, want, string(TrimSpace([]byte(in))), "TrimSpace(%q)", in)
	}
}
