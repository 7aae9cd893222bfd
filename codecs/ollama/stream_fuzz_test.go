package ollama_test

import (
	"bytes"
	"testing"
)

// FuzzStreamDecoder feeds arbitrary bytes to the streaming observer in one
// Write and split at two fuzzed points (and, for short inputs, one byte at
// a time) and checks that:
//   - the decoder never panics;
//   - every way of writing yields the same frames (Index, Keepalive,
//     Content, Reasoning, fragments, finish reason, Done, Completion,
//     Metrics, and the error's type and safe fields), each with the same
//     Raw bytes;
//   - the invariants hold: nothing after an error or Done frame, Observed
//     never decreases and equals the sum of the frames' semantics,
//     keepalives and malformed lines are unnumbered and carry no metrics,
//     End is nil exactly after a terminal frame;
//   - the frames' Raw bytes concatenated are a prefix of the input.
//
// The seed corpus in testdata/fuzz/FuzzStreamDecoder holds real-shaped
// /api/chat streams (wire-and-peers.md §2.2 and §2.3).
func FuzzStreamDecoder(f *testing.F) {
	f.Add([]byte(contentOf("a")+"\n"+doneLine("stop")), uint16(10), uint16(100))
	f.Fuzz(func(t *testing.T, data []byte, cut1, cut2 uint16) {
		a, b := int(cut1)%(len(data)+1), int(cut2)%(len(data)+1)
		if a > b {
			a, b = b, a
		}
		base := feedStream(t, [][]byte{data})
		streamInvariants(t, base)
		if raw := rawOf(base.frames); !bytes.HasPrefix(data, raw) {
			t.Fatalf("Raw bytes of all frames are not a prefix of the input:\n raw %q\ninput %q", raw, data)
		}
		check := func(name string, r nresult) {
			t.Helper()
			streamInvariants(t, r)
			sameStream(t, nviews(base.frames), nviews(r.frames), name)
			for i := range r.frames {
				if !bytes.Equal(base.frames[i].Raw, r.frames[i].Raw) {
					t.Fatalf("%s: frame %d Raw = %q, want %q", name, i, r.frames[i].Raw, base.frames[i].Raw)
				}
			}
			if (base.end == nil) != (r.end == nil) {
				t.Fatalf("%s: End() = %v, one write: %v", name, r.end, base.end)
			}
		}
		check("split", feedStream(t, [][]byte{data[:a], data[a:b], data[b:]}))
		if len(data) <= 2048 {
			bytewise := make([][]byte, len(data))
			for i := range data {
				bytewise[i] = data[i : i+1]
			}
			check("byte at a time", feedStream(t, bytewise))
		}
	})
}
