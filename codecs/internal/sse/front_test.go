package sse

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/recourse-dev/recourse/codec"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// collect writes each of parts to f and returns the Raw of the events it
// handed over, and the last error Write returned.
func collect(t *testing.T, f *Front, parts ...string) (raws []string, err error) {
	t.Helper()
	for _, p := range parts {
		if e := f.Write([]byte(p), func(ev Event) bool {
			raws = append(raws, string(ev.Raw))
			return true
		}); e != nil {
			err = e
		}
	}
	return raws, err
}

// TestR13_10_FrontSniffsAPlainDocument proves the shared SSE front end's
// reading of an answer: a JSON document is recognised after any run of
// JSON whitespace, even one split across writes, and kept whole from the
// first byte; a byte that is whitespace to unicode.IsSpace but not to JSON
// makes the answer an event stream, of which nothing is kept.
func TestR13_10_FrontSniffsAPlainDocument(t *testing.T) {
	const doc = `{"error":{"message":"overloaded"}}`
	for _, ws := range []string{" ", "\t", "\r", "\n", " \t\r\n"} {
		t.Run(fmt.Sprintf("after %q", ws), func(t *testing.T) {
			f := NewFront("{")
			raws, err := collect(t, &f, ws, doc)
			require.NoError(t, err)
			assert.Empty(t, raws)
			got, ok := f.Document()
			require.True(t, ok, "a document after JSON whitespace is a plain answer")
			assert.Equal(t, doc, string(got), "the document is kept from its first byte")

			f = NewFront("{")
			_, err = collect(t, &f, ws+doc)
			require.NoError(t, err)
			got, ok = f.Document()
			require.True(t, ok)
			assert.Equal(t, ws+doc, string(got))
		})
	}
	for _, lead := range []string{"\v", "\f", "\u00a0", "\u0085", "\ufeff"} {
		t.Run(fmt.Sprintf("not after %q", lead), func(t *testing.T) {
			f := NewFront("{")
			_, err := collect(t, &f, lead+doc)
			require.NoError(t, err)
			got, ok := f.Document()
			assert.False(t, ok, "%q is not JSON whitespace: the answer is a stream", lead)
			assert.Nil(t, got, "nothing is kept of a stream")
		})
	}
	t.Run("openers", func(t *testing.T) {
		f := NewFront("{[")
		_, err := collect(t, &f, "\n", `[{"error":{"code":429}}]`)
		require.NoError(t, err)
		_, ok := f.Document()
		assert.True(t, ok, "an array opens a document when the front says so")

		f = NewFront("{")
		_, err = collect(t, &f, `[{"error":{"code":429}}]`)
		require.NoError(t, err)
		_, ok = f.Document()
		assert.False(t, ok, "an array is no document for an object-only front")

		var zero Front
		_, err = collect(t, &zero, " ", `{"error":{}}`)
		require.NoError(t, err)
		_, ok = zero.Document()
		assert.True(t, ok, "the zero Front reads an object as a document")
		zero = Front{}
		_, err = collect(t, &zero, `[{"error":{}}]`)
		require.NoError(t, err)
		_, ok = zero.Document()
		assert.False(t, ok, "the zero Front reads only an object as a document")
		zero.Free()
	})
	t.Run("stream", func(t *testing.T) {
		f := NewFront("{")
		raws, err := collect(t, &f, "\n", "data: {\"a\":1}\n", "\n: ping\n\n")
		require.NoError(t, err)
		assert.Equal(t, []string{"\ndata: {\"a\":1}\n\n", ": ping\n\n"}, raws)
		_, ok := f.Document()
		assert.False(t, ok, "an event stream is no document")
	})
}

// TestR13_10_FrontBoundsTheDocument proves that the front end keeps at
// most MaxDocument bytes of a plain document, the first ones, however the
// document is split across writes.
func TestR13_10_FrontBoundsTheDocument(t *testing.T) {
	body := []byte(`{"error":"` + strings.Repeat("x", MaxDocument) + `"}`)
	for _, chunk := range []int{1 << 10, 7919, len(body)} {
		f := NewFront("{")
		for p := body; len(p) > 0; {
			n := min(chunk, len(p))
			require.NoError(t, f.Write(p[:n], func(Event) bool { return true }))
			p = p[n:]
		}
		got, ok := f.Document()
		require.True(t, ok)
		assert.Len(t, got, MaxDocument, "chunks of %d", chunk)
		assert.True(t, bytes.Equal(body[:MaxDocument], got), "the first bytes are kept, chunks of %d", chunk)
	}
}

// TestR13_10_FrontReportsAnOversizedEvent proves that an event over the
// framer's limit ends the stream with a *codec.ProtocolError holding the
// *FrameError, whose text holds no byte of the stream, and that the error
// stays: the events after it are never handed over.
func TestR13_10_FrontReportsAnOversizedEvent(t *testing.T) {
	f := NewFront("{")
	raws, err := collect(t, &f, "data: 1\n\n", "data: canary"+strings.Repeat("x", DefaultMaxEventBytes)+"\n\n")
	require.Error(t, err)
	assert.Equal(t, []string{"data: 1\n\n"}, raws, "the event before the oversized one is handed over")
	var pe *codec.ProtocolError
	require.ErrorAs(t, err, &pe)
	assert.Equal(t, "oversized SSE event", pe.What)
	frameErr(t, pe.Err, "the framer's error is kept in Err, unreachable by Unwrap")
	assert.NotContains(t, err.Error(), "canary")

	raws, err = collect(t, &f, "data: 2\n\n")
	require.Error(t, err, "the error is sticky")
	assert.Empty(t, raws)
}

// TestR13_10_FrontStopsWhenTheDecoderEnds proves that the front end hands
// over no event after its decoder's callback reports the stream ended.
func TestR13_10_FrontStopsWhenTheDecoderEnds(t *testing.T) {
	f := NewFront("{")
	var raws []string
	require.NoError(t, f.Write([]byte("data: 1\n\ndata: 2\n\ndata: 3\n\n"), func(ev Event) bool {
		raws = append(raws, string(ev.Raw))
		return len(raws) < 2
	}))
	assert.Equal(t, []string{"data: 1\n\n", "data: 2\n\n"}, raws)
}

// TestR13_10_FrontDecodeIgnoresBytesAfterTheEnd proves Decode, a stream
// decoder's Write: events are handed over until the decoder's stream has
// ended (here at the second event), the rest of that write and every later
// write are ignored, and an oversized event is returned for the decoder to
// queue.
func TestR13_10_FrontDecodeIgnoresBytesAfterTheEnd(t *testing.T) {
	f := NewFront("{")
	var raws []string
	ended := func() bool { return len(raws) >= 2 }
	event := func(ev Event) { raws = append(raws, string(ev.Raw)) }
	require.NoError(t, f.Decode([]byte("data: 1\n\ndata: 2\n\ndata: 3\n\n"), ended, event))
	require.NoError(t, f.Decode([]byte("data: 4\n\n"), ended, event))
	assert.Equal(t, []string{"data: 1\n\n", "data: 2\n\n"}, raws)

	g := NewFront("{")
	raws = nil
	err := g.Decode([]byte("data: 1\n\ndata: "+strings.Repeat("x", DefaultMaxEventBytes)+"\n\n"), ended, event)
	var pe *codec.ProtocolError
	require.ErrorAs(t, err, &pe)
	assert.Equal(t, "oversized SSE event", pe.What)
	assert.Equal(t, []string{"data: 1\n\n"}, raws)
}

// TestR13_10_FrontAllocatesNothingPerEvent proves that handing events to
// a decoder's callback allocates nothing: the stream path runs it for
// every frame.
func TestR13_10_FrontAllocatesNothingPerEvent(t *testing.T) {
	f := NewFront("{")
	p := []byte("event: delta\ndata: {\"text\":\"hello\"}\n\n")
	n := 0
	var sink int
	allocs := testing.AllocsPerRun(1000, func() {
		_ = f.Write(p, func(ev Event) bool {
			n++
			sink += len(ev.Data)
			return true
		})
	})
	assert.Zero(t, allocs)
	assert.Positive(t, n)
	assert.Positive(t, sink)
}

// FuzzFront checks the front end against its definition on any input
// split in two writes: the answer is a document exactly when its first
// byte other than JSON whitespace is '{', the kept document is the
// answer's first bytes up to MaxDocument (from the write that holds its
// first byte), and the events' fields and the
// error do not depend on the split.
func FuzzFront(f *testing.F) {
	for _, s := range []string{"", " \n{\"error\":{}}", "\v{}", "\u00a0{}", "data: 1\n\n", ": ping\r\n\r\ndata: [DONE]\n\n", "\t\r\n"} {
		f.Add([]byte(s), uint16(len(s)/2))
	}
	f.Fuzz(func(t *testing.T, in []byte, cut uint16) {
		at := int(cut) % (len(in) + 1)
		run := func(parts ...[]byte) (raws []string, doc []byte, plain bool, failed bool) {
			fr := NewFront("{")
			for _, p := range parts {
				if err := fr.Write(p, func(ev Event) bool {
					// Not Raw: a "\r\n" split between writes ends an
					// event at its "\r", leaving the "\n" to no event.
					raws = append(raws, fmt.Sprintf("%q %t %q", ev.Event, ev.HasData, ev.Data))
					return true
				}); err != nil {
					failed = true
				}
			}
			doc, plain = fr.Document()
			return raws, doc, plain, failed
		}
		raws, doc, plain, failed := run(in)
		raws2, doc2, plain2, failed2 := run(in[:at], in[at:])
		assert.Equal(t, raws, raws2)
		assert.Equal(t, plain, plain2)
		assert.Equal(t, failed, failed2)
		rest := bytes.TrimLeft(in, " \t\r\n")
		assert.Equal(t, len(rest) > 0 && rest[0] == '{', plain)
		if !plain {
			assert.Nil(t, doc)
			return
		}
		// Whitespace-only writes before the document are not kept; the
		// write holding its first byte is kept whole, up to MaxDocument.
		for _, d := range [][]byte{doc, doc2} {
			assert.LessOrEqual(t, len(d), MaxDocument)
			trimmed := bytes.TrimLeft(d, " \t\r\n")
			assert.Equal(t, string(rest[:len(trimmed)]), string(trimmed))
			if len(in) <= MaxDocument {
				assert.Equal(t, string(rest), string(trimmed))
			}
		}
	})
}
