package anthropic_test

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/recourse-dev/recourse/codec"
	"github.com/recourse-dev/recourse/codecs/anthropic"
)

// seeds adds every file of testdata/seeds matching pattern to f.
func seeds(f *testing.F, pattern string) {
	files, err := filepath.Glob(filepath.Join("testdata", "seeds", pattern))
	if err != nil || len(files) == 0 {
		f.Fatalf("no seeds for %s: %v", pattern, err)
	}
	for _, name := range files {
		b, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
}

// FuzzDecode checks that Decode never panics, returns exactly one of a
// completion and an error, only *codec.ProviderError or
// *codec.ProtocolError, accepts only JSON objects, agrees with ErrorCode,
// returns arguments that are JSON, and never returns more text than its
// observer counted (R13.2). Seeds: testdata/seeds/*.json.
func FuzzDecode(f *testing.F) {
	seeds(f, "*.json")
	c := anthropic.New()
	f.Fuzz(func(t *testing.T, body []byte) {
		comp, err := c.Decode(body)
		if (comp == nil) == (err == nil) {
			t.Fatalf("Decode returned %v and %v", comp, err)
		}
		if err != nil {
			var pv *codec.ProviderError
			var pr *codec.ProtocolError
			if !errors.As(err, &pv) && !errors.As(err, &pr) {
				t.Fatalf("Decode error %T", err)
			}
			if pv != nil && c.ErrorCode(body) != pv.Code {
				t.Fatalf("ErrorCode %q, Decode's code %q", c.ErrorCode(body), pv.Code)
			}
			if c.Check(body) == nil {
				t.Fatal("Check accepts what Decode refuses")
			}
			return
		}
		var oracle map[string]json.RawMessage
		if json.Unmarshal(body, &oracle) != nil || oracle == nil {
			t.Fatal("Decode accepted a body that is not a JSON object")
		}
		for _, tc := range comp.Message.ToolCalls {
			if !json.Valid(tc.Arguments) {
				t.Fatalf("arguments %q are not JSON", tc.Arguments)
			}
		}
		o := c.NewObserver(codec.RequestInfo{Operation: codec.Ordinary})
		o.Write(body)
		got := o.Observed()
		if got.ContentBytes < int64(len(comp.Message.Content)) || got.ReasoningBytes < int64(len(comp.Message.Reasoning)) {
			t.Fatalf("observer counted %+v, Decode returned %d content and %d reasoning bytes", got, len(comp.Message.Content), len(comp.Message.Reasoning))
		}
	})
}

// FuzzStreamDecoder checks that the stream decoder never panics, that what
// it decides does not depend on how the stream is split (whole, then byte
// by byte), that its counts never fall, that only its last frame ends the
// stream, that a Done frame's tool calls are JSON objects, and that End
// after a stream without a terminal frame is an error. Seeds:
// testdata/seeds/*.sse.
func FuzzStreamDecoder(f *testing.F) {
	seeds(f, "*.sse")
	f.Fuzz(func(t *testing.T, body []byte) {
		run := func(step int) ([]codec.Frame, codec.Counts, error) {
			d := anthropic.NewStreamDecoder(codec.RequestInfo{Operation: codec.Streaming})
			var out []codec.Frame
			var prev codec.Counts
			for i := 0; i < len(body); i += step {
				d.Write(body[i:min(len(body), i+step)])
				now := d.Observed()
				if now.ContentBytes < prev.ContentBytes || now.ReasoningBytes < prev.ReasoningBytes || now.ToolFragments < prev.ToolFragments {
					t.Fatalf("counts fell from %+v to %+v", prev, now)
				}
				prev = now
				for fr, ok := d.Next(); ok; fr, ok = d.Next() {
					out = append(out, fr)
				}
			}
			err := d.End()
			for fr, ok := d.Next(); ok; fr, ok = d.Next() {
				out = append(out, fr)
			}
			return out, d.Observed(), err
		}
		whole, wc, werr := run(max(len(body), 1))
		bytewise, bc, berr := run(1)
		if len(whole) != len(bytewise) || wc != bc || (werr == nil) != (berr == nil) {
			t.Fatalf("split changes the result: %d/%d frames, %+v/%+v, %v/%v", len(whole), len(bytewise), wc, bc, werr, berr)
		}
		for i, fr := range whole {
			end := fr.Done || fr.Err != nil
			if end != (i == len(whole)-1 && end) {
				t.Fatalf("frame %d of %d ends the stream", i, len(whole))
			}
			if fr.Done {
				for _, tc := range fr.Completion.Message.ToolCalls {
					if !json.Valid(tc.Arguments) || tc.Arguments[0] != '{' {
						t.Fatalf("arguments %q", tc.Arguments)
					}
				}
			}
		}
		ended := len(whole) > 0 && (whole[len(whole)-1].Done || whole[len(whole)-1].Err != nil)
		if !ended && werr == nil {
			t.Fatal("End = nil for a stream without a terminal frame")
		}
	})
}
