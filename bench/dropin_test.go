package bench

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"runtime"
	"strings"
	"testing"

	"github.com/recourse-dev/recourse/recoursetest"
)

// dropIn is the drop-in comparison: the same POST through a plain
// http.Client and through http.Client{Transport: chain.Default(openai.New())}.
type dropIn struct {
	raw, recourse side
	// floor is the same POST through a plain http.Client doing only the
	// work the contract requires of a drop-in call (floor_test.go).
	floor side
}

func newDropIn(tb testing.TB) *dropIn {
	answer := []byte(recoursetest.OpenAIChat("Hello! How can I help you today?"))
	srv := server(tb, func(w http.ResponseWriter, r *http.Request) {
		drainRequest(r)
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("X-Request-Id", "req_bench")
		_, _ = w.Write(answer)
	})
	url := srv.URL + "/v1/chat/completions"
	body := encoded(tb, false)
	call := func(c *http.Client) func() error {
		return func() error {
			resp, err := post(c, url, body)
			if err != nil {
				return err
			}
			n, err := io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if err == nil && n != int64(len(answer)) {
				err = errors.New("short body")
			}
			return err
		}
	}
	return &dropIn{
		raw:      timed("raw", call(rawClient(tb))),
		recourse: timed("recourse", call(&http.Client{Transport: recourseChain(tb)})),
		floor:    timed("floor", call(floorClient(tb))),
	}
}

// BenchmarkDropIn compares a small JSON chat completion through a plain
// http.Client with the same call through the default recourse chain.
func BenchmarkDropIn(b *testing.B) {
	d := newDropIn(b)
	b.Run("raw", func(b *testing.B) { leaf(b, d.raw) })
	b.Run("recourse", func(b *testing.B) { leaf(b, d.recourse) })
	b.Run("ratio", func(b *testing.B) { compare(b, 16, d.recourse, d.raw) })
	b.Run("floor", func(b *testing.B) { reportFloor(b, compare(b, 16, d.recourse, d.raw, d.floor), "raw") })
}

// dropInStream is the drop-in streaming comparison: the same SSE answer read
// line by line through a plain http.Client and through
// http.Client{Transport: chain.Default(openai.New())}.
type dropInStream struct {
	n             int
	raw, recourse side
	// rawJSON and recJSON also decode every chunk with encoding/json and
	// keep its text, as an SDK reading the stream does; floorJSON does so
	// through a plain http.Client doing only the work the contract
	// requires of a drop-in stream (floor_test.go).
	rawJSON, recJSON, floorJSON side
	// held reads one stream and returns the live heap, after a GC, at its
	// [DONE] line, before the body is read to its end and closed.
	held       func(c *http.Client) (int64, error)
	rawc, recc *http.Client
}

func newDropInStream(tb testing.TB, chunks int) *dropInStream {
	events := recoursetest.OpenAIStream(contents(chunks)...)
	payload := []byte(strings.Join(events, ""))
	srv := server(tb, func(w http.ResponseWriter, r *http.Request) {
		drainRequest(r)
		sseHeaders(w)
		_, _ = w.Write(payload)
	})
	url := srv.URL + "/v1/chat/completions"
	body := encoded(tb, true)
	br := bufio.NewReader(nil)
	var text strings.Builder
	decode := func(c *http.Client) error {
		resp, err := post(c, url, body)
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		text.Reset()
		n, done := 0, false
		err = readLines(resp.Body, br, func(p []byte) bool {
			if string(p) == "[DONE]" {
				done = true
				return true
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
		if err == nil && (n != chunks || !done) {
			err = fmt.Errorf("%d content chunks, done %v", n, done)
		}
		return err
	}
	read := func(c *http.Client, atDone func()) error {
		resp, err := post(c, url, body)
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		n := 0
		err = readLines(resp.Body, br, func(p []byte) bool {
			n++
			if string(p) == "[DONE]" && atDone != nil {
				atDone()
			}
			return true
		})
		if err == nil && n != len(events) {
			err = fmt.Errorf("%d data lines, want %d", n, len(events))
		}
		return err
	}
	d := &dropInStream{n: chunks, rawc: rawClient(tb), recc: &http.Client{Transport: recourseChain(tb)}}
	d.raw = timed("raw", func() error { return read(d.rawc, nil) })
	d.recourse = timed("recourse", func() error { return read(d.recc, nil) })
	d.rawJSON = timed("raw-json", func() error { return decode(d.rawc) })
	d.recJSON = timed("recourse", func() error { return decode(d.recc) })
	floorc := floorClient(tb)
	d.floorJSON = timed("floor", func() error { return decode(floorc) })
	d.held = func(c *http.Client) (int64, error) {
		var ms runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&ms)
		before := int64(ms.HeapAlloc)
		var at int64
		err := read(c, func() {
			runtime.GC()
			runtime.ReadMemStats(&ms)
			at = int64(ms.HeapAlloc)
		})
		return at - before, err
	}
	return d
}

// BenchmarkDropInStream1000 reads a 1000-chunk OpenAI SSE stream line by
// line through a plain http.Client and through the default chain as its
// Transport (the drop-in path, where recourse frames and decodes every
// event). ratio: the client parses nothing (raw, the floor). json/ratio:
// the client also decodes every chunk with encoding/json and keeps its text
// on both sides (raw-json), as an SDK over the transport does anyway.
func BenchmarkDropInStream1000(b *testing.B) {
	d := newDropInStream(b, streamChunks)
	b.Run("ratio", func(b *testing.B) { compare(b, 1, d.recourse, d.raw) })
	b.Run("json/ratio", func(b *testing.B) { compare(b, 1, d.recJSON, d.rawJSON) })
	b.Run("json/floor", func(b *testing.B) { reportFloor(b, compare(b, 1, d.recJSON, d.rawJSON, d.floorJSON), "raw-json") })
}

// BenchmarkDropInStreamHeld reports the memory a long drop-in stream holds:
// the live heap (after a GC) at the [DONE] line of a 10,000- and a
// 100,000-chunk stream, minus the live heap before the call, through the
// default chain (held-B/op) and through a plain http.Client (raw-held-B/op),
// both reading line by line. extra-held-B/op is the difference; a drop-in
// stream costs O(1) memory when it does not grow with the chunks. Sides
// alternate, and each figure is the median over b.N streams.
func BenchmarkDropInStreamHeld(b *testing.B) {
	for _, n := range []int{10_000, 100_000} {
		d := newDropInStream(b, n)
		b.Run(fmt.Sprintf("chunks=%d", n), func(b *testing.B) {
			var rec, raw []float64
			for i := range b.N {
				clients := []*http.Client{d.recc, d.rawc}
				for j := range clients {
					c := clients[(i+j)%2]
					h, err := d.held(c)
					if err != nil {
						b.Fatal(err)
					}
					if c == d.recc {
						rec = append(rec, float64(h))
					} else {
						raw = append(raw, float64(h))
					}
				}
			}
			r, w := median(rec), median(raw)
			b.ReportMetric(r, "held-B/op")
			b.ReportMetric(w, "raw-held-B/op")
			b.ReportMetric(r-w, "extra-held-B/op")
		})
	}
}
