package anthropic

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/recourse-dev/recourse/codec"
)

// decodeBoth decodes body with the fast path on and off and returns both
// runs' frames, counts and End errors.
func decodeBoth(body []byte, step int) (fast, ref []codec.Frame, fc, rc codec.Counts, fe, re error) {
	run := func(reference bool) ([]codec.Frame, codec.Counts, error) {
		d := NewStreamDecoder(codec.RequestInfo{Operation: codec.Streaming})
		d.reference = reference
		var out []codec.Frame
		for i := 0; i < len(body); i += step {
			d.Write(body[i:min(len(body), i+step)])
			for f, ok := d.Next(); ok; f, ok = d.Next() {
				out = append(out, f)
			}
		}
		err := d.End()
		for f, ok := d.Next(); ok; f, ok = d.Next() {
			out = append(out, f)
		}
		return out, d.Observed(), err
	}
	fast, fc, fe = run(false)
	ref, rc, re = run(true)
	return
}

// sameDecoding fails unless the fast path decoded body exactly as the
// reference did.
func sameDecoding(t *testing.T, body []byte) {
	t.Helper()
	fast, ref, fc, rc, fe, re := decodeBoth(body, max(len(body), 1))
	if fc != rc || (fe == nil) != (re == nil) || len(fast) != len(ref) {
		t.Fatalf("fast path: %d frames %+v %v; reference: %d frames %+v %v", len(fast), fc, fe, len(ref), rc, re)
	}
	for i := range fast {
		a, b := fast[i], ref[i]
		if !reflect.DeepEqual(a.Raw, b.Raw) || a.Content != b.Content || a.Reasoning != b.Reasoning || a.ReasoningSignature != b.ReasoningSignature || a.Done != b.Done ||
			!reflect.DeepEqual(a.Fragments, b.Fragments) || !reflect.DeepEqual(a.Completion, b.Completion) || (a.Err == nil) != (b.Err == nil) {
			t.Fatalf("frame %d: fast %+v, reference %+v", i, a, b)
		}
	}
}

// TestR22_4_FastPathDecodesAsTheReference checks every seed stream and a
// few shapes the fast path must leave to the reference.
func TestR22_4_FastPathDecodesAsTheReference(t *testing.T) {
	files, _ := filepath.Glob(filepath.Join("testdata", "seeds", "*.sse"))
	if len(files) == 0 {
		t.Fatal("no seeds")
	}
	for _, name := range files {
		b, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		sameDecoding(t, b)
	}
	start := "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n"
	for _, delta := range []string{
		`{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"a\"b\u00e9"}}`,
		`{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"a","text":"b"}}`,
		`{"type":"content_block_delta","index":0,"index":1,"delta":{"type":"text_delta","text":"a"}}`,
		`{"type":"content_block_delta","index":1,"delta":{"type":"text_delta","text":"a"}}`,
		`{"type":"content_block_delta","index":-1,"delta":{"type":"text_delta","text":"a"}}`,
		`{"type":"content_block_delta","delta":{"type":"text_delta","text":"a"}}`,
		`{"type":"content_block_delta","index":0,"delta":{"type":"text_delta"}}`,
		`{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":1}}`,
		`{"type":"content_block_delta","index":0,"delta":{"t\u0079pe":"text_delta","text":"a"}}`,
		`{"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":"{"}}`,
		`{"type":"content_block_delta","index":0,"delta":{"type":"citations_delta","citation":{}}}`,
	} {
		sameDecoding(t, []byte(start+"event: content_block_delta\ndata: "+delta+"\n\n"))
	}
}

// FuzzFastPath checks that the fast path decodes any stream exactly as
// the reference does. Seeds: testdata/seeds/*.sse.
func FuzzFastPath(f *testing.F) {
	files, _ := filepath.Glob(filepath.Join("testdata", "seeds", "*.sse"))
	for _, name := range files {
		b, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, body []byte) { sameDecoding(t, body) })
}
