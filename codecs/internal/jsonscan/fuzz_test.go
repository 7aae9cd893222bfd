package jsonscan

import (
	"encoding/json"
	"errors"
	"testing"
	"unicode/utf8"
)

// fuzzRules mixes the real provider rules with one-letter paths so that the
// fuzzer reaches matching values easily. Some paths deliberately overlap.
var fuzzRules = Rules{
	Content: [][]string{
		{"choices", "message", "content"}, {"message", "content"}, {"content"},
		{"a"}, {"x", "y"},
	},
	Reasoning: [][]string{
		{"choices", "message", "reasoning_content"}, {"message", "thinking"},
		{"b"}, {"x", "y"},
	},
	ToolCalls: [][]string{
		{"choices", "message", "tool_calls"}, {"message", "tool_calls"}, {"tool_calls"},
		{"t"}, {"o"},
	},
	ToolObjects: [][]string{
		{"choices", "message", "function_call"}, {"function_call"},
		{"f"}, {"o"},
	},
}

// jsonDepth returns the maximum nesting depth of a syntactically valid JSON
// document.
func jsonDepth(doc []byte) int {
	depth, maxDepth := 0, 0
	inString, escaped := false, false
	for _, c := range doc {
		switch {
		case inString && escaped:
			escaped = false
		case inString && c == '\\':
			escaped = true
		case inString && c == '"':
			inString = false
		case inString:
		case c == '"':
			inString = true
		case c == '{' || c == '[':
			depth++
			maxDepth = max(maxDepth, depth)
		case c == '}' || c == ']':
			depth--
		}
	}
	return maxDepth
}

func FuzzScan(f *testing.F) {
	for _, tc := range docCases {
		f.Add([]byte(tc.doc), uint16(len(tc.doc)/2))
	}
	for _, s := range []string{
		``, ` `, `{}`, `[]`, `"x"`, `0`, `-1.5e+10`, `true`, `null`,
		`{"a":"\u00e9\ud83d\ude42"}`, `{"b":"\ud83d\ud83d\ude42\ude42"}`,
		`{"a":"\ud83dx","b":"\ude42"}`, `{"con\u0074ent":"abc"}`,
		`{"content_filter":"\"content\": \"x\""}`, `{"a":}`,
		`{"t":[{"a":[1,2,{"b":"c"}]},{}],"f":{"a":"b"},"o":[{}]}`,
		`{"x":{"y":["p","q"]}}`, "{\"a\":\"\xff\xfe\xe2\x82\"}",
		"    \n\t{\"a\":\"b\"}  ", `[[[[[[[[[[]]]]]]]]]]`, `{"a":1}{"a":2}`,
	} {
		f.Add([]byte(s), uint16(len(s)/3))
	}
	f.Fuzz(func(t *testing.T, data []byte, split uint16) {
		one := NewScanner(&fuzzRules)
		err1 := one.Write(data)

		k := int(split) % (len(data) + 1)
		two := NewScanner(&fuzzRules)
		err2 := two.Write(data[:k])
		if err2 == nil {
			err2 = two.Write(data[k:])
		}

		if one.Counts() != two.Counts() {
			t.Fatalf("split at %d: Counts %+v, one Write %+v", k, two.Counts(), one.Counts())
		}
		if (err1 == nil) != (err2 == nil) || one.Complete() != two.Complete() {
			t.Fatalf("split at %d: err %v complete %v, one Write err %v complete %v",
				k, err2, two.Complete(), err1, one.Complete())
		}
		c := one.Counts()
		if c.ContentBytes < 0 || c.ReasoningBytes < 0 || c.ToolFragments < 0 ||
			c.CompletedToolCalls < 0 || c.CompletedToolCalls > c.ToolFragments {
			t.Fatalf("impossible counts %+v", c)
		}

		if err1 != nil {
			var se1, se2 *SyntaxError
			if !errors.As(err1, &se1) || !errors.As(err2, &se2) {
				t.Fatalf("errors are not *SyntaxError: %v, %v", err1, err2)
			}
			if se1.Offset != se2.Offset {
				t.Fatalf("split at %d: offset %d, one Write offset %d", k, se2.Offset, se1.Offset)
			}
			if se1.Offset < 0 || se1.Offset >= int64(len(data)) {
				t.Fatalf("offset %d out of range [0,%d)", se1.Offset, len(data))
			}
			// The error is at the first bad byte: everything before it is
			// a valid prefix, with the same counts.
			pre := NewScanner(&fuzzRules)
			if err := pre.Write(data[:se1.Offset]); err != nil {
				t.Fatalf("prefix before error offset %d fails: %v", se1.Offset, err)
			}
			if pre.Counts() != c {
				t.Fatalf("prefix counts %+v, counts at error %+v", pre.Counts(), c)
			}
		}

		valid := json.Valid(data)
		if valid && jsonDepth(data) <= MaxDepth {
			if err1 != nil || !one.Complete() {
				t.Fatalf("valid JSON: err %v, complete %v", err1, one.Complete())
			}
			if utf8.Valid(data) {
				if want := oracleCounts(t, &fuzzRules, data); c != want {
					t.Fatalf("Counts %+v, encoding/json oracle %+v", c, want)
				}
			}
		}
		if err1 == nil && one.Complete() && !valid {
			t.Fatalf("Complete() on input encoding/json rejects")
		}
	})
}
