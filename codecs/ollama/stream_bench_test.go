package ollama_test

import (
	"testing"

	"github.com/recourse-dev/recourse/codec"
	"github.com/recourse-dev/recourse/codecs/ollama"
)

// contentLine is a typical /api/chat streaming line (wire-and-peers.md §2.2).
var contentLine = []byte(`{"model":"llama3.2","created_at":"2026-10-17T09:12:44.123456789Z","message":{"role":"assistant","content":" Hello"},"done":false}` + "\n")

func newStream(b testing.TB) codec.StreamDecoder {
	d, ok := ollama.New().NewObserver(codec.RequestInfo{Model: "llama3.2", Operation: codec.Streaming}).(codec.StreamDecoder)
	if !ok {
		b.Fatal("streaming observer is not a codec.StreamDecoder")
	}
	return d
}

func drainStream(d codec.StreamDecoder) int {
	n := 0
	for {
		if _, ok := d.Next(); !ok {
			return n
		}
		n++
	}
}

// BenchmarkOllamaContentLine writes and drains one content line per iteration.
func BenchmarkOllamaContentLine(b *testing.B) {
	d := newStream(b)
	b.ReportAllocs()
	b.SetBytes(int64(len(contentLine)))
	for b.Loop() {
		d.Write(contentLine)
		if drainStream(d) != 1 {
			b.Fatal("want one frame")
		}
	}
}

// BenchmarkOllamaKeepaliveLine writes and drains one blank keepalive line per
// iteration. The target is 0 allocations per keepalive frame.
func BenchmarkOllamaKeepaliveLine(b *testing.B) {
	d := newStream(b)
	blank := []byte("\n")
	b.ReportAllocs()
	b.SetBytes(int64(len(blank)))
	for b.Loop() {
		d.Write(blank)
		if drainStream(d) != 1 {
			b.Fatal("want one frame")
		}
	}
}
