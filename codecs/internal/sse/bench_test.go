package sse

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// contentFrame is a typical OpenAI-style content delta event (about 150 bytes).
var contentFrame = []byte("data: {\"id\":\"chatcmpl-1\",\"object\":\"chat.completion.chunk\",\"created\":1760054400,\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Hel\"},\"finish_reason\":null}]}\n\n")

func BenchmarkKeepalive(b *testing.B) {
	frame := []byte(": keep-alive\n\n")
	f := NewFramer(0)
	b.ReportAllocs()
	b.SetBytes(int64(len(frame)))
	for b.Loop() {
		f.Write(frame)
		ev, ok, err := f.Next()
		if !ok || err != nil || !ev.Keepalive() {
			b.Fatal("no keepalive event")
		}
		if _, ok, _ := f.Next(); ok {
			b.Fatal("unexpected event")
		}
	}
}

func BenchmarkContentFrame(b *testing.B) {
	f := NewFramer(0)
	b.ReportAllocs()
	b.SetBytes(int64(len(contentFrame)))
	for b.Loop() {
		f.Write(contentFrame)
		ev, ok, err := f.Next()
		if !ok || err != nil || !ev.HasData {
			b.Fatal("no data event")
		}
		if _, ok, _ := f.Next(); ok {
			b.Fatal("unexpected event")
		}
	}
}

// BenchmarkContentFrameSplit feeds each event in two Writes that straddle
// event boundaries, so that the buffer always holds a partial event and must
// be compacted.
func BenchmarkContentFrameSplit(b *testing.B) {
	f := NewFramer(0)
	half := len(contentFrame) / 2
	f.Write(contentFrame[:half])
	b.ReportAllocs()
	b.SetBytes(int64(len(contentFrame)))
	for b.Loop() {
		f.Write(contentFrame[half:])
		f.Write(contentFrame[:half])
		ev, ok, err := f.Next()
		if !ok || err != nil || !ev.HasData {
			b.Fatal("no data event")
		}
		if _, ok, _ := f.Next(); ok {
			b.Fatal("unexpected event")
		}
	}
}

// TestSteadyStateAllocs guards the benchmarks' zero-allocation property in
// ordinary test runs.
func TestSteadyStateAllocs(t *testing.T) {
	for _, frame := range [][]byte{[]byte(": keep-alive\n\n"), contentFrame, []byte("data: a\r\ndata: b\r\n\r\n")} {
		f := NewFramer(0)
		allocs := testing.AllocsPerRun(1000, func() {
			f.Write(frame)
			if _, ok, err := f.Next(); !ok || err != nil {
				panic("no event")
			}
		})
		assert.Equal(t, 0.0, allocs, "%q", frame)
	}
}
