package responses_test

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/recourse-dev/recourse/codec"
	"github.com/recourse-dev/recourse/codecs/openai/responses"
)

// FuzzDecode checks that Decode never panics, returns exactly one of a
// completion and an error, returns only *codec.ProviderError or
// *codec.ProtocolError, accepts only what encoding/json accepts (the
// decoder is encoding/json with exact keys; there is no fast path to hold
// against it), and that the observer never counts less text than Decode
// finds. Seeds live in testdata/fuzz/FuzzDecode.
func FuzzDecode(f *testing.F) {
	f.Add([]byte(unary("completed", []any{reasoningItem("r"), msgItem(outputText("hi")), callItem("c", "f", `{}`)}, nil)))
	c := responses.New()
	f.Fuzz(func(t *testing.T, body []byte) {
		comp, err := c.Decode(body)
		if (comp == nil) == (err == nil) {
			t.Fatalf("Decode returned completion %v and error %v", comp, err)
		}
		_ = c.ErrorCode(body)
		if err != nil {
			var pv *codec.ProviderError
			var pr *codec.ProtocolError
			if !errors.As(err, &pv) && !errors.As(err, &pr) {
				t.Fatalf("Decode error %T, want *codec.ProviderError or *codec.ProtocolError", err)
			}
			if pv != nil && c.ErrorCode(body) != "" && c.ErrorCode(body) != pv.Code {
				t.Fatalf("ErrorCode = %q, Decode's code %q", c.ErrorCode(body), pv.Code)
			}
			return
		}
		var oracle map[string]json.RawMessage
		if !utf8.Valid(body) || json.Unmarshal(body, &oracle) != nil || oracle == nil {
			t.Fatalf("Decode accepted a body encoding/json does not take as an object")
		}
		if comp.Message.Role != "assistant" || comp.FinishReason == "" {
			t.Errorf("Role %q, finish %q", comp.Message.Role, comp.FinishReason)
		}
		for _, tc := range comp.Message.ToolCalls {
			if tc.Arguments != nil && !json.Valid(tc.Arguments) {
				t.Errorf("tool call arguments %q are not valid JSON", tc.Arguments)
			}
		}
		o := c.NewObserver(codec.RequestInfo{Operation: codec.Ordinary})
		o.Write(body)
		got := o.Observed()
		if got.ContentBytes+got.ReasoningBytes < int64(len(comp.Message.Content)+len(comp.Message.Reasoning)) {
			t.Errorf("observer counted %+v, less than the %d+%d decoded bytes", got, len(comp.Message.Content), len(comp.Message.Reasoning))
		}
	})
}

// streamRun is what a decoder made of a stream.
type streamRun struct {
	frames   []codec.Frame
	observed codec.Counts
	end      error
	id       string
	seq      int64
	seqOK    bool
}

func runStream(stream []byte, split int) streamRun {
	d := responses.NewStreamDecoder(codec.RequestInfo{Operation: codec.Streaming})
	var r streamRun
	for i := 0; i < len(stream); i += split {
		d.Write(stream[i:min(i+split, len(stream))])
		for f, ok := d.Next(); ok; f, ok = d.Next() {
			f.Raw = nil // split-dependent at a "\r\n" (package sse)
			r.frames = append(r.frames, f)
		}
	}
	r.observed, r.end, r.id = d.Observed(), d.End(), d.ResponseID()
	r.seq, r.seqOK = d.DeliveredSequence()
	return r
}

// FuzzStreamDecoder checks that the stream decoder never panics, decodes
// the same frames whatever the split, ends with a typed error, never
// reports less evidence than its frames carry, and that an accepted end
// holds exactly the content its frames delivered. Seeds live in
// testdata/fuzz/FuzzStreamDecoder.
func FuzzStreamDecoder(f *testing.F) {
	f.Add([]byte(strings.Join(textStream("Hel", "lo"), "")), uint8(3))
	f.Fuzz(func(t *testing.T, stream []byte, split uint8) {
		n := int(split)%17 + 1
		if len(stream) > 4096 {
			// Byte-sized writes of a long event cost the framer a scan of
			// its buffer each: keep a long input to a few hundred writes.
			n = max(n, len(stream)/256)
		}
		whole := runStream(stream, max(len(stream), 1))
		pieces := runStream(stream, n)
		if !reflect.DeepEqual(whole, pieces) {
			t.Fatalf("split %d decodes differently:\n%+v\n%+v", n, whole, pieces)
		}
		var sum codec.Counts
		var content strings.Builder
		for i, fr := range whole.frames {
			sum = sum.Add(fr.Semantic())
			content.WriteString(fr.Content)
			if fr.Err != nil {
				var pv *codec.ProviderError
				var pr *codec.ProtocolError
				var ie *codec.IncompleteError
				if !errors.As(fr.Err, &pv) && !errors.As(fr.Err, &pr) && !errors.As(fr.Err, &ie) {
					t.Fatalf("frame error %T", fr.Err)
				}
			}
			if (fr.Err != nil || fr.Done) && i != len(whole.frames)-1 {
				t.Fatalf("a frame follows the end")
			}
			if fr.Done && fr.Completion.Message.Content != content.String() {
				t.Fatalf("completion content %q, delivered %q", fr.Completion.Message.Content, content.String())
			}
		}
		o := whole.observed
		if o.ContentBytes < sum.ContentBytes || o.ReasoningBytes != sum.ReasoningBytes || o.ToolFragments < sum.ToolFragments || o.CompletedToolCalls != sum.CompletedToolCalls {
			t.Fatalf("observed %+v, frames %+v", o, sum)
		}
		if whole.end != nil && !errors.Is(whole.end, responses.ErrIncomplete) {
			var pv *codec.ProviderError
			if !errors.As(whole.end, &pv) {
				t.Fatalf("End error %T", whole.end)
			}
		}
	})
}
