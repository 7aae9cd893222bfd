package anthropic_test

import (
	"strconv"
	"testing"

	"github.com/recourse-dev/recourse/codec"
	"github.com/recourse-dev/recourse/codecs/anthropic"
)

// ev is one SSE event of the Messages API stream, as Anthropic writes it.
func ev(typ, data string) string { return "event: " + typ + "\ndata: " + data + "\n\n" }

const (
	msgStart   = `{"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","model":"claude-m","content":[],"stop_reason":null,"usage":{"input_tokens":10,"cache_read_input_tokens":5,"output_tokens":1}}}`
	ping       = `{"type":"ping"}`
	textStart  = `{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`
	blockStop0 = `{"type":"content_block_stop","index":0}`
	msgStop    = `{"type":"message_stop"}`
	overloaded = `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`
)

func textDelta(i int, s string) string {
	return `{"type":"content_block_delta","index":` + itoa(i) + `,"delta":{"type":"text_delta","text":"` + s + `"}}`
}

func msgDelta(stop string, out int) string {
	return `{"type":"message_delta","delta":{"stop_reason":"` + stop + `","stop_sequence":null},"usage":{"output_tokens":` + itoa(out) + `}}`
}

func itoa(i int) string { return strconv.Itoa(i) }

// textStream is a whole stream answering "Hello".
func textStream() string {
	return ev("message_start", msgStart) + ev("ping", ping) + ev("content_block_start", textStart) +
		ev("content_block_delta", textDelta(0, "Hel")) + ev("content_block_delta", textDelta(0, "lo")) +
		ev("content_block_stop", blockStop0) + ev("message_delta", msgDelta("end_turn", 7)) + ev("message_stop", msgStop)
}

// decode writes s to a new stream decoder in chunks of n bytes (the whole
// at once when n is 0) and returns its frames and End's error.
func decode(t *testing.T, s string, n int) ([]codec.Frame, *anthropic.StreamDecoder, error) {
	t.Helper()
	d := anthropic.NewStreamDecoder(codec.RequestInfo{Model: "claude-m", Operation: codec.Streaming})
	var out []codec.Frame
	take := func() {
		for f, ok := d.Next(); ok; f, ok = d.Next() {
			out = append(out, f)
		}
	}
	if n == 0 {
		n = len(s) + 1
	}
	for i := 0; i < len(s); i += n {
		d.Write([]byte(s[i:min(len(s), i+n)]))
		take()
	}
	err := d.End()
	take()
	return out, d, err
}
