package ndjson

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func BenchmarkKeepalive(b *testing.B) {
	frame := []byte("\n")
	f := NewFramer(0)
	b.ReportAllocs()
	b.SetBytes(int64(len(frame)))
	for b.Loop() {
		f.Write(frame)
		l, ok, err := f.Next()
		if !ok || err != nil || !l.Blank {
			b.Fatal("no blank line")
		}
		if _, ok, _ := f.Next(); ok {
			b.Fatal("unexpected line")
		}
	}
}

func BenchmarkContentFrame(b *testing.B) {
	frame := []byte(ollamaChunk + "\n")
	f := NewFramer(0)
	b.ReportAllocs()
	b.SetBytes(int64(len(frame)))
	for b.Loop() {
		f.Write(frame)
		l, ok, err := f.Next()
		if !ok || err != nil || l.Blank {
			b.Fatal("no line")
		}
		if _, ok, _ := f.Next(); ok {
			b.Fatal("unexpected line")
		}
	}
}

// BenchmarkContentFrameSplit feeds each line in two Writes that straddle
// line boundaries, so that the buffer always holds a partial line and must
// be compacted.
func BenchmarkContentFrameSplit(b *testing.B) {
	frame := []byte(ollamaChunk + "\n")
	half := len(frame) / 2
	f := NewFramer(0)
	f.Write(frame[:half])
	b.ReportAllocs()
	b.SetBytes(int64(len(frame)))
	for b.Loop() {
		f.Write(frame[half:])
		f.Write(frame[:half])
		l, ok, err := f.Next()
		if !ok || err != nil || l.Blank {
			b.Fatal("no line")
		}
		if _, ok, _ := f.Next(); ok {
			b.Fatal("unexpected line")
		}
	}
}

// TestSteadyStateAllocs guards the benchmarks' zero-allocation property in
// ordinary test runs.
func TestSteadyStateAllocs(t *testing.T) {
	for _, frame := range [][]byte{[]byte("\n"), []byte(ollamaChunk + "\n")} {
		f := NewFramer(0)
		allocs := testing.AllocsPerRun(1000, func() {
			f.Write(frame)
			if _, ok, err := f.Next(); !ok || err != nil {
				panic("no line")
			}
		})
		assert.Equal(t, 0.0, allocs, "%q", frame)
	}
}
