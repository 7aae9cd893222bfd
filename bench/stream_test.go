package bench

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/recourse-dev/recourse/codec"
	"github.com/recourse-dev/recourse/codecs/openai"
	"github.com/recourse-dev/recourse/recoursetest"
)

// streamChunks is the number of content chunks of BenchmarkStream1000.
const streamChunks = 1000

// stream1000 is the streaming comparison: the native chunk API versus raw
// net/http line splitting and raw net/http plus json.Unmarshal.
type stream1000 struct {
	recourse, rawLines, rawJSON side
}

func newStream1000(tb testing.TB) *stream1000 {
	events := recoursetest.OpenAIStream(contents(streamChunks)...)
	payload := []byte(strings.Join(events, ""))
	srv := server(tb, func(w http.ResponseWriter, r *http.Request) {
		drainRequest(r)
		sseHeaders(w)
		_, _ = w.Write(payload)
	})
	url := srv.URL + "/v1/chat/completions"
	raw := rawClient(tb)
	native := nativeClient(tb, srv.URL)
	br := bufio.NewReader(nil)

	// The raw sides encode their request each call, as recourse does.
	return &stream1000{
		recourse: nativeStreamSide(native, streamChunks),
		// raw-lines splits lines and counts data lines: the floor.
		rawLines: rawLinesSide("raw-lines", raw, url, br, len(events)),
		// raw-json also decodes every chunk and keeps the text, as a
		// client that does something with the stream must.
		rawJSON: timed("raw-json", func() error {
			body, err := rawStreamBody()
			if err != nil {
				return err
			}
			resp, err := post(raw, url, body)
			if err != nil {
				return err
			}
			defer resp.Body.Close()
			var text strings.Builder
			n, done := 0, false
			err = readLines(resp.Body, br, func(p []byte) bool {
				if string(p) == "[DONE]" {
					done = true
					return false
				}
				var c rawChunk
				if json.Unmarshal(p, &c) != nil {
					return false
				}
				if len(c.Choices) > 0 && c.Choices[0].Delta.Content != nil && *c.Choices[0].Delta.Content != "" {
					text.WriteString(*c.Choices[0].Delta.Content)
					n++
				}
				return true
			})
			if err == nil && (n != streamChunks || !done) {
				err = fmt.Errorf("%d content chunks, done %v", n, done)
			}
			return err
		}),
	}
}

// BenchmarkStream1000 reads a 1000-chunk OpenAI SSE stream through the
// native Client.Stream and through raw net/http.
func BenchmarkStream1000(b *testing.B) {
	s := newStream1000(b)
	b.Run("raw-lines", func(b *testing.B) { leaf(b, s.rawLines) })
	b.Run("raw-json", func(b *testing.B) { leaf(b, s.rawJSON) })
	b.Run("recourse", func(b *testing.B) { leaf(b, s.recourse) })
	b.Run("ratio", func(b *testing.B) { compare(b, 1, s.recourse, s.rawLines, s.rawJSON) })
}

// firstChunk is the time-to-first-chunk comparison.
type firstChunk struct {
	recourse, raw side
	// floor is the raw side doing only the work the contract requires of
	// a native stream besides (floor_test.go): the call's IDs, the
	// connection trace, and the codec's stream decoder in place of
	// json.Unmarshal, its frames being what the native client hands on.
	floor side
}

func newFirstChunk(tb testing.TB) *firstChunk {
	events := recoursetest.OpenAIStream("Hello")
	head := []byte(events[0] + events[1]) // the role chunk and the first content chunk
	tail := []byte(strings.Join(events[2:], ""))
	release := make(chan struct{})
	srv := server(tb, func(w http.ResponseWriter, r *http.Request) {
		drainRequest(r)
		sseHeaders(w)
		_, _ = w.Write(head)
		w.(http.Flusher).Flush()
		select { // hold until the client has the first chunk
		case <-release:
		case <-r.Context().Done():
			return
		}
		_, _ = w.Write(tail)
	})
	url := srv.URL + "/v1/chat/completions"
	raw := rawClient(tb)
	native := nativeClient(tb, srv.URL)
	br := bufio.NewReader(nil)
	errNoChunk := errors.New("no content chunk")

	floorc, cdc := rawClient(tb), openai.New()
	var ids string
	return &firstChunk{
		floor: side{name: "floor", run: func() (time.Duration, error) {
			start := time.Now()
			ids = floorIDs()
			body, err := rawStreamBody()
			if err != nil {
				return 0, err
			}
			req, err := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
			if err != nil {
				return 0, err
			}
			req.Header.Set("Authorization", "Bearer sk-bench")
			req.Header.Set("Content-Type", "application/json")
			var connected bool
			resp, err := floorc.Do(traced(req, &connected))
			if err != nil {
				return 0, err
			}
			defer resp.Body.Close()
			if resp.StatusCode != http.StatusOK || !connected || ids == "" {
				return 0, fmt.Errorf("HTTP %d", resp.StatusCode)
			}
			dec := cdc.NewObserver(codec.RequestInfo{Model: chatRequest.Model, Operation: codec.Streaming}).(codec.StreamDecoder)
			var first time.Duration
			var buf [4096]byte
			for done := false; !done; {
				n, err := resp.Body.Read(buf[:])
				dec.Write(buf[:n])
				for f, ok := dec.Next(); ok; f, ok = dec.Next() {
					if f.Err != nil {
						return 0, f.Err
					}
					if first == 0 && f.Content != "" {
						first = time.Since(start)
						release <- struct{}{}
					}
					done = done || f.Done
				}
				if err == io.EOF && !done {
					return 0, dec.End()
				}
				if err != nil && err != io.EOF {
					return 0, err
				}
			}
			_, _ = io.Copy(io.Discard, resp.Body) // the end of the chunked body
			if first == 0 {
				return 0, errNoChunk
			}
			return first, nil
		}},
		recourse: side{name: "recourse", run: func() (time.Duration, error) {
			start := time.Now()
			var first time.Duration
			for ch, err := range native.Stream(context.Background(), chatRequest) {
				if err != nil {
					return 0, err
				}
				if first == 0 && ch.Content != "" {
					first = time.Since(start)
					release <- struct{}{}
				}
			}
			if first == 0 {
				return 0, errNoChunk
			}
			return first, nil
		}},
		raw: side{name: "raw", run: func() (time.Duration, error) {
			start := time.Now()
			body, err := rawStreamBody()
			if err != nil {
				return 0, err
			}
			resp, err := post(raw, url, body)
			if err != nil {
				return 0, err
			}
			defer resp.Body.Close()
			var first time.Duration
			err = readLines(resp.Body, br, func(p []byte) bool {
				if first > 0 || string(p) == "[DONE]" {
					return true
				}
				var c rawChunk
				if json.Unmarshal(p, &c) != nil {
					return false
				}
				if len(c.Choices) > 0 && c.Choices[0].Delta.Content != nil && *c.Choices[0].Delta.Content != "" {
					first = time.Since(start)
					release <- struct{}{}
				}
				return true
			})
			if err == nil && first == 0 {
				err = errNoChunk
			}
			return first, err
		}},
	}
}

// BenchmarkTimeToFirstChunk measures the time from sending a streamed
// request to holding its first content chunk, through the native
// Client.Stream and through raw net/http plus json.Unmarshal. The server
// flushes the first chunk at once and holds the rest of the stream until
// the client has it; the rest is then read to the end so the connection is
// reused. The ratio benchmark also reports diff-ns/op, the median over
// blocks of recourse minus raw per call.
func BenchmarkTimeToFirstChunk(b *testing.B) {
	f := newFirstChunk(b)
	b.Run("raw", func(b *testing.B) { firstLeaf(b, f.raw) })
	b.Run("recourse", func(b *testing.B) { firstLeaf(b, f.recourse) })
	b.Run("ratio", func(b *testing.B) {
		t := compare(b, 8, f.recourse, f.raw)
		b.ReportMetric(medianDiff(t[0], t[1]), "diff-ns/op")
	})
	b.Run("floor", func(b *testing.B) {
		t := compare(b, 8, f.recourse, f.raw, f.floor)
		reportFloor(b, t, "raw")
		b.ReportMetric(medianDiff(t[0], t[2]), "diff-vs-floor-ns/op")
	})
}

// firstLeaf runs s as an ordinary benchmark whose ns/op is the time to the
// first chunk, not the time of the whole stream.
func firstLeaf(b *testing.B, s side) {
	if _, err := s.run(); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	var total time.Duration
	for b.Loop() {
		d, err := s.run()
		if err != nil {
			b.Fatal(err)
		}
		total += d
	}
	b.ReportMetric(float64(total)/float64(b.N), "ns/op")
}

// frames streams n frames of one kind through the whole default chain and
// the native Client.Stream.
type frames struct {
	n   atomic.Int64
	run func(n int) error
}

var (
	keepaliveFrame = []byte(": keep-alive\n\n")
	contentFrame   = []byte(recoursetest.OpenAIStream("tok")[1])
)

// newFrames returns a stream of a role chunk, n copies of frame, one
// content chunk, the finish and usage chunks and [DONE].
func newFrames(tb testing.TB, frame []byte) *frames {
	events := recoursetest.OpenAIStream("end")
	head := []byte(events[0])
	tail := []byte(strings.Join(events[1:], ""))
	const perWrite = 256
	block := []byte(strings.Repeat(string(frame), perWrite))
	f := &frames{}
	srv := server(tb, func(w http.ResponseWriter, r *http.Request) {
		drainRequest(r)
		sseHeaders(w)
		_, _ = w.Write(head)
		n := int(f.n.Load())
		for ; n >= perWrite; n -= perWrite {
			if _, err := w.Write(block); err != nil {
				return
			}
		}
		_, _ = w.Write(block[:n*len(frame)])
		_, _ = w.Write(tail)
	})
	native := nativeClient(tb, srv.URL)
	content := string(frame) != string(keepaliveFrame)
	f.run = func(n int) error {
		f.n.Store(int64(n))
		want := 1
		if content {
			want += n
		}
		got, done, err := streamAll(native)
		if err == nil && (got != want || !done) {
			err = fmt.Errorf("%d content chunks, want %d; done %v", got, want, done)
		}
		return err
	}
	return f
}

// benchFrames streams b.N frames in one request and reports allocs/op and
// B/op per frame, without the cost of the same stream with no frame
// (the least of five runs).
func benchFrames(b *testing.B, frame []byte) {
	f := newFrames(b, frame)
	var ms runtime.MemStats
	measure := func(n int) (allocs, bytes uint64) {
		runtime.ReadMemStats(&ms)
		m0, a0 := ms.Mallocs, ms.TotalAlloc
		if err := f.run(n); err != nil {
			b.Fatal(err)
		}
		runtime.ReadMemStats(&ms)
		return ms.Mallocs - m0, ms.TotalAlloc - a0
	}
	fixedAllocs, fixedBytes := uint64(1<<63), uint64(1<<63)
	for range 5 {
		a, by := measure(0)
		fixedAllocs, fixedBytes = min(fixedAllocs, a), min(fixedBytes, by)
	}
	b.ResetTimer()
	allocs, bytes := measure(b.N)
	b.StopTimer()
	n := float64(b.N)
	perFrame := max(float64(allocs)-float64(fixedAllocs), 0) / n
	bytesPerFrame := max(float64(bytes)-float64(fixedBytes), 0) / n
	b.ReportMetric(perFrame, "allocs/op")
	b.ReportMetric(bytesPerFrame, "B/op")
	b.ReportMetric(perFrame, "allocs/frame") // unrounded: allocs/op prints whole numbers
	b.ReportMetric(bytesPerFrame, "B/frame")
	b.ReportMetric(float64(fixedAllocs), "allocs/stream")
}

// BenchmarkKeepaliveFrame reports the allocations per SSE keepalive comment
// read through the whole chain and the native Client.Stream (one op is one
// keepalive frame).
func BenchmarkKeepaliveFrame(b *testing.B) { benchFrames(b, keepaliveFrame) }

// BenchmarkContentFrame reports the allocations per OpenAI content chunk
// read through the whole chain and the native Client.Stream (one op is one
// content frame).
func BenchmarkContentFrame(b *testing.B) { benchFrames(b, contentFrame) }
