package main

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"strconv"
	"testing"
	"time"

	"google.golang.org/genai"

	"github.com/recourse-dev/recourse/codec"
	"github.com/recourse-dev/recourse/codecs/gemini"
	"github.com/recourse-dev/recourse/recoursetest"
)

// memoryStream is a RoundTripper that answers every request with body, a
// text/event-stream held in memory: no network, so only parsing is timed.
type memoryStream struct{ body []byte }

func (m memoryStream) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Body != nil {
		_, _ = io.Copy(io.Discard, req.Body)
		req.Body.Close()
	}
	return &http.Response{StatusCode: 200, Header: http.Header{"Content-Type": {"text/event-stream"}},
		Body: io.NopCloser(bytes.NewReader(m.body)), Request: req}, nil
}

const benchFrames = 1000

// BenchmarkGenAIStreamParse compares, in one run and interleaved, the
// Gemini codec's stream decoder with go-genai's own parse of the same
// 1000-event streamGenerateContent?alt=sse answer held in memory: decoder
// writes each event to the decoder and takes its frames; genai reads the
// stream through GenerateContentStream over a RoundTripper that serves it
// from memory (its line scanner, JSON decoding into a map and conversion
// into GenerateContentResponse). It reports ns/frame for each side and
// x-time-decoder-vs-genai, the ratio of their totals.
func BenchmarkGenAIStreamParse(b *testing.B) {
	deltas := make([]string, benchFrames)
	for i := range deltas {
		deltas[i] = "token " + strconv.Itoa(i) + " "
	}
	events := recoursetest.GeminiStream(deltas...)
	var body []byte
	for _, e := range events {
		body = append(body, e...)
	}
	gc := gemini.New()
	decode := func() {
		d := gc.NewObserver(codec.RequestInfo{Operation: codec.Streaming, DropText: true}).(codec.StreamDecoder)
		for _, e := range events {
			d.Write([]byte(e))
			for _, ok := d.Next(); ok; _, ok = d.Next() {
			}
		}
		if err := d.End(); err != nil {
			b.Fatal(err)
		}
	}
	client, err := genai.NewClient(context.Background(), &genai.ClientConfig{
		APIKey: "bench", Backend: genai.BackendGeminiAPI,
		HTTPClient:  &http.Client{Transport: memoryStream{body: body}},
		HTTPOptions: genai.HTTPOptions{BaseURL: "http://memory.invalid/"},
	})
	if err != nil {
		b.Fatal(err)
	}
	parse := func() {
		n := 0
		for _, err := range client.Models.GenerateContentStream(context.Background(), "gemini-2.5-flash", genai.Text("hi"), nil) {
			if err != nil {
				b.Fatal(err)
			}
			n++
		}
		if n != benchFrames+1 {
			b.Fatalf("genai read %d responses", n)
		}
	}
	b.Run("ratio", func(b *testing.B) {
		var dec, gen time.Duration
		for i := 0; b.Loop(); i++ {
			first, second := decode, parse
			if i%2 == 1 {
				first, second = parse, decode
			}
			t0 := time.Now()
			first()
			t1 := time.Now()
			second()
			t2 := time.Now()
			if i%2 == 0 {
				dec, gen = dec+t1.Sub(t0), gen+t2.Sub(t1)
			} else {
				gen, dec = gen+t1.Sub(t0), dec+t2.Sub(t1)
			}
		}
		n := float64(b.N) * benchFrames
		b.ReportMetric(float64(dec)/n, "decoder-ns/frame")
		b.ReportMetric(float64(gen)/n, "genai-ns/frame")
		b.ReportMetric(float64(dec)/float64(gen), "x-time-decoder-vs-genai")
	})
}
