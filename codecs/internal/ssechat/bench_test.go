package ssechat_test

import (
	"testing"

	"github.com/recourse-dev/recourse/codecs/internal/ssechat"
)

// keepaliveEvent is the comment oMLX sends before any data and every 10 s
// of prefill (wire-and-peers.md §3).
var keepaliveEvent = []byte(": keep-alive\n\n")

// contentEvent is a typical OpenAI content delta event (wire-and-peers.md §1.3).
var contentEvent = []byte(`data: {"id":"chatcmpl-B9MBs8CjcvOU2jLn4n570S5qMJKcT","object":"chat.completion.chunk","created":1741569952,"model":"gpt-4o-2024-08-06","service_tier":"default","system_fingerprint":"fp_eb9dce56a8","choices":[{"index":0,"delta":{"content":" Hello"},"logprobs":null,"finish_reason":null}],"usage":null}` + "\n\n")

// drain empties d's queue and returns the number of frames it held.
func drain(d *ssechat.Decoder) int {
	n := 0
	for {
		if _, ok := d.Next(); !ok {
			return n
		}
		n++
	}
}

// BenchmarkKeepaliveFrame writes and drains one ": keep-alive" event per
// iteration. The target is 0 allocations per keepalive frame.
func BenchmarkKeepaliveFrame(b *testing.B) {
	d := ssechat.New()
	b.ReportAllocs()
	b.SetBytes(int64(len(keepaliveEvent)))
	for b.Loop() {
		d.Write(keepaliveEvent)
		if drain(d) != 1 {
			b.Fatal("want one frame")
		}
	}
}

// BenchmarkContentFrame writes and drains one content delta event per
// iteration.
func BenchmarkContentFrame(b *testing.B) {
	d := ssechat.New()
	b.ReportAllocs()
	b.SetBytes(int64(len(contentEvent)))
	for b.Loop() {
		d.Write(contentEvent)
		if drain(d) != 1 {
			b.Fatal("want one frame")
		}
	}
}

// BenchmarkContentFrameByteAtATime feeds the content event one byte per
// Write, the worst split a slow connection can produce.
func BenchmarkContentFrameByteAtATime(b *testing.B) {
	d := ssechat.New()
	b.ReportAllocs()
	b.SetBytes(int64(len(contentEvent)))
	for b.Loop() {
		for i := range contentEvent {
			d.Write(contentEvent[i : i+1])
		}
		if drain(d) != 1 {
			b.Fatal("want one frame")
		}
	}
}
