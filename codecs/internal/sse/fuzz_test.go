package sse

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/assert"
)

// fuzzSeeds are real-shaped OpenAI and oMLX stream fragments.
var fuzzSeeds = []string{
	"data: {\"id\":\"c1\",\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Hel\"},\"finish_reason\":null}]}\n\n",
	": keep-alive\n\n",
	"data: {\"model\":\"keepalive\"}\n\n",
	"data: {\"error\":{\"message\":\"x\",\"type\":\"server_error\"}}\n\n",
	"data: [DONE]\n\n",
	"data:[DONE]\r\n\r\n",
	"event: error\ndata: {\"error\":{\"message\":\"overloaded\"}}\n\n",
	"  data: {\"choices\":[{\"delta\":{\"content\":\"lo\"}}]}\r\n\r\n: ping\r\r\ndata: [DONE]\r\r",
	"\xEF\xBB\xBF\n\ndata: a\ndata: b\n\nid: 1\nretry: 10\n\n",
}

// FuzzFramer checks that framing never panics, that the Raw of the events
// plus the buffered tail reproduces the input exactly, that splitting the
// input into two Writes does not change the events, and that the result
// agrees with a whole-input reference implementation of the rules.
func FuzzFramer(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add([]byte(s), uint(len(s)/2), uint16(0))
	}
	f.Fuzz(func(t *testing.T, in []byte, split uint, limit uint16) {
		at := int(split % uint(len(in)+1))
		whole := NewFramer(int(limit))
		evs1, err1 := feed(t, whole, in)
		halves := NewFramer(int(limit))
		evs2, err2 := feed(t, halves, in[:at], in[at:])

		if (err1 == nil) != (err2 == nil) {
			t.Fatalf("split at %d changes the error: %v vs %v", at, err1, err2)
		}
		sameEvents(t, evs1, evs2, in, at, "split at %d", at)
		if err1 != nil {
			frameErr(t, err1)
			frameErr(t, err2)
			return
		}
		assert.Equal(t, string(in), joinRaw(evs1)+string(whole.tail()), "one Write")
		assert.Equal(t, string(in), joinRaw(evs2)+string(halves.tail()), "split at %d", at)

		ref, refTail := reference(in)
		assert.Equal(t, ref, evs1, "reference")
		assert.Equal(t, string(refTail), string(whole.tail()), "reference tail")
		if len(refTail) == len(in) {
			refTail = bytes.TrimPrefix(refTail, []byte(bom))
		}
		pending := len(bytes.Trim(refTail, " \t\r\n")) > 0
		assert.Equal(t, pending, whole.Pending(), "Pending")
		assert.Equal(t, pending, halves.Pending(), "Pending after split at %d", at)
	})
}
