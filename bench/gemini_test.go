package bench

import (
	"errors"
	"strconv"
	"testing"

	"github.com/recourse-dev/recourse/codec"
	"github.com/recourse-dev/recourse/codecs/gemini"
	"github.com/recourse-dev/recourse/codecs/openai"
	"github.com/recourse-dev/recourse/recoursetest"
)

// geminiFrames is the number of content frames of the decoder benchmark.
const geminiFrames = 1000

// decodeAll writes the events of one stream to a fresh decoder of cdc,
// takes every frame, and fails unless the stream was accepted.
func decodeAll(cdc codec.Codec, events [][]byte) error {
	d := cdc.NewObserver(codec.RequestInfo{Operation: codec.Streaming, DropText: true}).(codec.StreamDecoder)
	done := false
	take := func() {
		for f, ok := d.Next(); ok; f, ok = d.Next() {
			done = done || f.Done
		}
	}
	for _, ev := range events {
		d.Write(ev)
		take()
	}
	if err := d.End(); err != nil {
		return err
	}
	take()
	if !done {
		return errors.New("the stream was not accepted")
	}
	return nil
}

// BenchmarkGeminiStreamDecoder: the Gemini codec's stream decoder over a
// 1000-frame streamGenerateContent?alt=sse answer versus the OpenAI chat
// codec's over the 1000-chunk chat stream of the same text, in memory, no
// network, every event written as its own Write (as a flushed stream
// arrives). ns/frame and chat-ns/frame divide an op by the frames.
func BenchmarkGeminiStreamDecoder(b *testing.B) {
	deltas := make([]string, geminiFrames)
	for i := range deltas {
		deltas[i] = "token " + strconv.Itoa(i) + " "
	}
	toBytes := func(evs []string) [][]byte {
		out := make([][]byte, len(evs))
		for i, e := range evs {
			out[i] = []byte(e)
		}
		return out
	}
	gem, chat := toBytes(recoursetest.GeminiStream(deltas...)), toBytes(recoursetest.OpenAIStream(deltas...))
	gc, oc := gemini.New(), openai.New()
	sides := []side{
		timed("gemini", func() error { return decodeAll(gc, gem) }),
		timed("chat", func() error { return decodeAll(oc, chat) }),
	}
	b.Run("ratio", func(b *testing.B) {
		t := compare(b, 1, sides[0], sides[1])
		b.ReportMetric(t[0].ns/geminiFrames, "ns/frame")
		b.ReportMetric(t[1].ns/geminiFrames, "chat-ns/frame")
		b.ReportMetric(t[0].allocs/geminiFrames, "allocs/frame")
		b.ReportMetric(t[1].allocs/geminiFrames, "chat-allocs/frame")
	})
}
