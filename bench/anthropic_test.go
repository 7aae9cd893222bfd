package bench

import (
	"errors"
	"strings"
	"testing"

	"github.com/recourse-dev/recourse/codec"
	"github.com/recourse-dev/recourse/codecs/anthropic"
	"github.com/recourse-dev/recourse/codecs/openai"
	"github.com/recourse-dev/recourse/recoursetest"
)

// decoderSide returns a side that writes payload, a whole stream, to a new
// stream decoder of c (as the engine does for a drop-in stream: text
// dropped, bytes kept) in reads of 4 KiB, takes every frame, and checks
// that the stream ended accepted.
func decoderSide(name string, c codec.Codec, payload []byte) side {
	return timed(name, func() error {
		o := c.NewObserver(codec.RequestInfo{Model: "m", Operation: codec.Streaming, DropText: true})
		d := o.(codec.StreamDecoder)
		done := false
		for i := 0; i < len(payload); i += 4 << 10 {
			d.Write(payload[i:min(len(payload), i+4<<10)])
			for f, ok := d.Next(); ok; f, ok = d.Next() {
				if f.Err != nil {
					return f.Err
				}
				done = done || f.Done
			}
		}
		if err := d.End(); err != nil || !done {
			return errors.Join(err, errors.New("bench: the stream did not end accepted"))
		}
		if fr, ok := d.(codec.BufferFreer); ok {
			fr.FreeBuffers()
		}
		return nil
	})
}

// BenchmarkAnthropicDecoder1000 decodes the same 1000-delta text as a
// Messages API stream (codecs/anthropic's stream decoder: one
// content_block_delta event per delta) and as a chat-completions stream
// (codecs/openai's), each from memory with no network: the cost per frame
// of the Messages API decoder against the chat decoder's, in one run.
func BenchmarkAnthropicDecoder1000(b *testing.B) {
	text := contents(streamChunks)
	claude := decoderSide("anthropic", anthropic.New(), []byte(strings.Join(recoursetest.AnthropicEvents(text...), "")))
	chat := decoderSide("chat", openai.New(), []byte(strings.Join(recoursetest.OpenAIStream(text...), "")))
	b.Run("anthropic", func(b *testing.B) { leaf(b, claude) })
	b.Run("chat", func(b *testing.B) { leaf(b, chat) })
	b.Run("ratio", func(b *testing.B) { compare(b, 1, claude, chat) })
}
