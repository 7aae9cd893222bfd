package main

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/packages/ssestream"

	"github.com/recourse-dev/recourse/codec"
	anthropiccodec "github.com/recourse-dev/recourse/codecs/anthropic"
	"github.com/recourse-dev/recourse/recoursetest"
)

// payload is a 1000-delta Messages API stream.
func payload() []byte {
	text := make([]string, 1000)
	for i := range text {
		text[i] = fmt.Sprintf(" w%d", i)
	}
	return []byte(strings.Join(recoursetest.AnthropicEvents(text...), ""))
}

// recourseParse decodes p with the codec's stream decoder, as the engine
// does under a drop-in client (text dropped, frames kept).
func recourseParse(p []byte) error {
	d := anthropiccodec.NewStreamDecoder(codec.RequestInfo{Operation: codec.Streaming, DropText: true})
	for i := 0; i < len(p); i += 4 << 10 {
		d.Write(p[i:min(len(p), i+4<<10)])
		for f, ok := d.Next(); ok; f, ok = d.Next() {
			if f.Err != nil {
				return f.Err
			}
		}
	}
	return d.End()
}

// sdkParse decodes p with anthropic-sdk-go's own stream reader into its
// event union, as a caller of NewStreaming does.
func sdkParse(p []byte) error {
	resp := &http.Response{StatusCode: 200, Header: http.Header{"Content-Type": {"text/event-stream"}}, Body: io.NopCloser(bytes.NewReader(p))}
	s := ssestream.NewStream[anthropic.MessageStreamEventUnion](ssestream.NewDecoder(resp), nil)
	n := 0
	for s.Next() {
		n++
	}
	if n == 0 {
		return fmt.Errorf("no events")
	}
	return s.Err()
}

// BenchmarkStreamParse1000 parses one 1000-delta stream with recourse's
// stream decoder (what recovery adds under the SDK) and with the SDK's own
// reader (what the SDK does anyway); ratio runs both interleaved in one
// run and reports x-time-vs-sdk, the recourse time over the SDK's.
func BenchmarkStreamParse1000(b *testing.B) {
	p := payload()
	for name, f := range map[string]func([]byte) error{"recourse": recourseParse, "sdk": sdkParse} {
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if err := f(p); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
	b.Run("ratio", func(b *testing.B) {
		var rt, st time.Duration
		for b.Loop() {
			t0 := time.Now()
			if err := recourseParse(p); err != nil {
				b.Fatal(err)
			}
			t1 := time.Now()
			if err := sdkParse(p); err != nil {
				b.Fatal(err)
			}
			rt, st = rt+t1.Sub(t0), st+time.Since(t1)
		}
		b.ReportMetric(float64(rt)/float64(st), "x-time-vs-sdk")
	})
}
