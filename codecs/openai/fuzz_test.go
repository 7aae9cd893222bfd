package openai_test

import (
	"encoding/json"
	"errors"
	"reflect"
	"testing"
	"unicode/utf8"

	"github.com/recourse-dev/recourse/codec"
	"github.com/recourse-dev/recourse/codecs/openai"
)

// decodeSeeds are added to both fuzz targets; more live in
// testdata/fuzz/FuzzDecode.
var decodeSeeds = []string{
	fullResponse,
	observerBody,
	`{"choices":[{"message":{"content":"hi"},"finish_reason":"stop"}]}`,
	`{"choices":[{"message":{"reasoning_content":"r","reasoning":"s","content":null}}]}`,
	`{"choices":[{"message":{"function_call":{"name":"f","arguments":"{\"a\":"}}}]}`,
	`{"ch\u006fices":[{"m\u0065ssage":{"con\u0074ent":"\ud83d\ude42\ud800"}}]}`,
	`{"error":{"message":"m","type":"requests","param":null,"code":"rate_limit_exceeded"}}`,
	`{"error":{"message":"m","code":null}}`,
	`{"error":"boom"}`,
	`{"object":"error","message":"m","type":"BadRequestError","code":400}`,
	`{"choices":[{"message":{"content":"cut`,
	"{\"choices\":[{\"message\":{\"content\":\"\xff\"}}]}",
	`{"choices":[]}`,
	`[]`,
	`null`,
	``,
}

// FuzzDecode checks that Decode never panics, returns exactly one of a
// completion and an error, returns only *codec.ProviderError or
// *codec.ProtocolError, and that a decoded completion was also counted by
// the observer (it never under-reports what Decode finds).
func FuzzDecode(f *testing.F) {
	for _, s := range decodeSeeds {
		f.Add([]byte(s))
	}
	c := openai.New()
	f.Fuzz(func(t *testing.T, body []byte) {
		comp, err := c.Decode(body)
		if (comp == nil) == (err == nil) {
			t.Fatalf("Decode returned completion %v and error %v", comp, err)
		}
		// Check judges every body as Decode does, error for error.
		if cerr := c.Check(body); !reflect.DeepEqual(cerr, err) {
			t.Fatalf("Check = %v, Decode error %v", cerr, err)
		}
		if err != nil {
			var pv *codec.ProviderError
			var pr *codec.ProtocolError
			if !errors.As(err, &pv) && !errors.As(err, &pr) {
				t.Fatalf("Decode error %T, want *codec.ProviderError or *codec.ProtocolError", err)
			}
			return
		}
		if !utf8.Valid(body) || !json.Valid(body) {
			t.Fatalf("Decode accepted a body that is not valid UTF-8 JSON")
		}
		if comp.Message.Role != "assistant" {
			t.Errorf("Role = %q, want assistant", comp.Message.Role)
		}
		for _, tc := range comp.Message.ToolCalls {
			if tc.Arguments != nil && !json.Valid(tc.Arguments) {
				t.Errorf("tool call arguments %q are not valid JSON", tc.Arguments)
			}
		}
		o := c.NewObserver(codec.RequestInfo{Operation: codec.Ordinary})
		o.Write(body)
		got := o.Observed()
		m := comp.Message
		if got.ContentBytes < int64(len(m.Content)) || got.ReasoningBytes < int64(len(m.Reasoning)) ||
			got.CompletedToolCalls < int64(len(m.ToolCalls)) {
			t.Errorf("observer counted %+v, less than decoded: %d content, %d reasoning bytes, %d tool calls",
				got, len(m.Content), len(m.Reasoning), len(m.ToolCalls))
		}
	})
}

// FuzzErrorCode checks that ErrorCode never panics and that a code it finds
// is the code of the *codec.ProviderError that Decode returns.
func FuzzErrorCode(f *testing.F) {
	for _, s := range decodeSeeds {
		f.Add([]byte(s))
	}
	c := openai.New()
	f.Fuzz(func(t *testing.T, body []byte) {
		code := c.ErrorCode(body)
		if code == "" || !utf8.Valid(body) {
			return
		}
		_, err := c.Decode(body)
		var pv *codec.ProviderError
		if !errors.As(err, &pv) || pv.Code != code {
			t.Errorf("ErrorCode = %q but Decode returned %v", code, err)
		}
	})
}
