package gemini_test

import (
	"bytes"
	"errors"
	"net/url"
	"reflect"
	"testing"

	"github.com/recourse-dev/recourse/codec"
	"github.com/recourse-dev/recourse/codecs/gemini"
)

// feed writes parts to a fresh stream decoder and returns its frames, End's
// error and the counts.
func feed(parts [][]byte) ([]codec.Frame, error, codec.Counts) {
	d := gemini.New().NewObserver(codec.RequestInfo{Operation: codec.Streaming}).(codec.StreamDecoder)
	var out []codec.Frame
	take := func() {
		for f, ok := d.Next(); ok; f, ok = d.Next() {
			out = append(out, f)
		}
	}
	for _, p := range parts {
		d.Write(p)
		take()
	}
	err := d.End()
	take()
	return out, err, d.Observed()
}

// view is what a frame means, without its bytes.
type view struct {
	Index                   int
	Keepalive, Done         bool
	Content, Reasoning, Fin string
	Frags                   int
	ErrType                 string
}

func views(fs []codec.Frame) []view {
	out := make([]view, 0, len(fs))
	for _, f := range fs {
		v := view{Index: f.Index, Keepalive: f.Keepalive, Done: f.Done, Content: f.Content, Reasoning: f.Reasoning, Fin: f.FinishReason, Frags: len(f.Fragments)}
		if f.Err != nil {
			v.ErrType = reflect.TypeOf(f.Err).String()
		}
		out = append(out, v)
	}
	return out
}

// FuzzStreamDecoder feeds arbitrary bytes to the stream decoder in one
// Write, split at two fuzzed points, and (short inputs) a byte at a time,
// and checks that it never panics, that every split means the same frames,
// that nothing follows an error or Done frame, that Observed is the sum of
// the frames' semantics, that End is nil exactly after a terminal frame,
// and that the frames' bytes are a prefix of the input. Seeds: real-shaped
// streamGenerateContent?alt=sse streams (landscape-turn4.md §2).
func FuzzStreamDecoder(f *testing.F) {
	f.Add([]byte(ev(chunkHel)+ev(chunkLo)+ev(chunkUse)), uint16(10), uint16(100))
	f.Add([]byte(ev(chunkCall)), uint16(3), uint16(40))
	f.Add([]byte(ev(chunkHel)+ev(`{"error":{"code":503,"message":"m","status":"UNAVAILABLE"}}`)), uint16(5), uint16(90))
	f.Add([]byte(ev(`{"candidates":[{"content":{"parts":[{"text":"a"}]},"finishReason":"MAX_TOKENS"}]}`)), uint16(1), uint16(2))
	f.Add([]byte(ev(`{"candidates":[{"content":{"parts":[{"text":"a"}]},"finishReason":"CONTINUATION","continuationToken":"AA=="}]}`)), uint16(1), uint16(2))
	f.Add([]byte(`{"error":{"code":429,"status":"RESOURCE_EXHAUSTED"}}`), uint16(1), uint16(2))
	f.Fuzz(func(t *testing.T, data []byte, cut1, cut2 uint16) {
		a, b := int(cut1)%(len(data)+1), int(cut2)%(len(data)+1)
		if a > b {
			a, b = b, a
		}
		base, baseErr, counts := feed([][]byte{data})
		var raw []byte
		var sum codec.Counts
		for i, fr := range base {
			raw = append(raw, fr.Raw...)
			sum = sum.Add(fr.Semantic())
			if (fr.Err != nil || fr.Done) && i != len(base)-1 {
				t.Fatalf("frame %d ends the stream but frames follow", i)
			}
		}
		if !bytes.HasPrefix(data, raw) {
			t.Fatalf("Raw bytes are not a prefix of the input")
		}
		if sum != counts {
			t.Fatalf("Observed %+v, frames sum to %+v", counts, sum)
		}
		terminal := len(base) > 0 && (base[len(base)-1].Err != nil || base[len(base)-1].Done)
		if terminal != (baseErr == nil) {
			t.Fatalf("End() = %v with terminal frame %v", baseErr, terminal)
		}
		check := func(name string, parts [][]byte) {
			fs, err, _ := feed(parts)
			if !reflect.DeepEqual(views(base), views(fs)) {
				t.Fatalf("%s: frames differ:\n%+v\n%+v", name, views(base), views(fs))
			}
			if (err == nil) != (baseErr == nil) {
				t.Fatalf("%s: End() = %v, one write: %v", name, err, baseErr)
			}
		}
		check("split", [][]byte{data[:a], data[a:b], data[b:]})
		if len(data) <= 1024 {
			bytewise := make([][]byte, len(data))
			for i := range data {
				bytewise[i] = data[i : i+1]
			}
			check("byte at a time", bytewise)
		}
	})
}

// FuzzDecode checks that Decode, Check, ErrorCode and BodyHints never panic
// on any body, that Check agrees with Decode, and that Decode's errors are
// typed.
func FuzzDecode(f *testing.F) {
	f.Add([]byte(`{"candidates":[{"content":{"parts":[{"text":"hi"},{"functionCall":{"name":"f","args":{}}}]},"finishReason":"STOP"}]}`))
	f.Add([]byte(`[{"candidates":[{"content":{"parts":[{"text":"a"}]}}]}]`))
	f.Add([]byte(`{"error":{"code":429,"status":"RESOURCE_EXHAUSTED","details":[{"@type":"type.googleapis.com/google.rpc.RetryInfo","retryDelay":"58s"},{"@type":"type.googleapis.com/google.rpc.QuotaFailure","violations":[{"quotaId":"PerDay"}]}]}}`))
	f.Add([]byte(`data: {"error":{"code":503}}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		c := gemini.New()
		_ = c.ErrorCode(body)
		if h := c.BodyHints(body); h.RetryDelay < 0 {
			t.Fatalf("negative delay %v", h.RetryDelay)
		}
		comp, err := c.Decode(body)
		if (err == nil) != (c.Check(body) == nil) {
			t.Fatal("Check disagrees with Decode")
		}
		if err != nil {
			var pe *codec.ProtocolError
			var pv *codec.ProviderError
			if !errors.As(err, &pe) && !errors.As(err, &pv) || comp != nil {
				t.Fatalf("Decode error %T with completion %v", err, comp)
			}
		}
	})
}

// FuzzDescribeURL checks that a request path never panics DescribeURL or
// WithModelURL, and that a rewritten URL describes back as its new model
// with the operation it had.
func FuzzDescribeURL(f *testing.F) {
	f.Add("/v1beta/models/gemini-2.5-flash:streamGenerateContent", "alt=sse&key=k", "gemini-2.5-pro")
	f.Add("/v1/models/m:generateContent", "", "x")
	f.Add("/v1beta/models/a:b:generateContent", "", "y")
	f.Fuzz(func(t *testing.T, path, query, model string) {
		c := gemini.New()
		u := &url.URL{Scheme: "https", Host: "h", Path: path, RawQuery: query}
		info, err := c.DescribeURL(u, []byte(`{}`))
		nu, werr := c.WithModelURL(u, model)
		if err != nil || werr != nil {
			return
		}
		got, err := c.DescribeURL(nu, []byte(`{}`))
		if err != nil || got.Operation != info.Operation || got.Model != model && "models/"+got.Model != model {
			t.Fatalf("WithModelURL(%q, %q) describes as %+v, %v (was %+v)", path, model, got, err, info)
		}
	})
}
