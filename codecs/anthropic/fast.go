package anthropic

import (
	"unicode/utf8"

	"github.com/recourse-dev/recourse/codecs/internal/jsonscan"
	"github.com/recourse-dev/recourse/codecs/internal/sse"
)

// fastDelta below decodes the event that makes up nearly all of a stream,
// content_block_delta with a text_delta, thinking_delta or
// input_json_delta, without encoding/json: one validating pass over the
// event's data (jsonscan.ValidObject, SkipValid) that records the raw
// values of type and index and, inside delta, of type and the delta's
// text field, keys compared exactly, byte for byte. It decides nothing
// itself: whenever an event is not of that plain shape (another type, an
// "error" event field, an escaped or repeated key, an index that is not
// plain digits, a text that is not a string, invalid or too deeply nested
// JSON, invalid UTF-8) it reports ok=false and the reference path of
// StreamDecoder.event, which handles every event, decides. So it yields
// exactly what the reference yields for the same event, only sooner
// (fast_test.go checks this on every seed and by fuzzing).

// maxFastIndex bounds the block index the fast path reads; a larger one is
// left to the reference.
const maxFastIndex = 1<<31 - 1

// fastEvent is a plain content_block_delta decoded by fastDelta.
type fastEvent struct {
	index int
	typ   string // text_delta, thinking_delta or input_json_delta
	text  string // its text, thinking or partial_json, unescaped
}

// fastDelta decodes ev when it is a plain content_block_delta of a text,
// thinking or input JSON delta. scratch is reused to unescape the text.
func fastDelta(ev sse.Event, scratch *[]byte) (fe fastEvent, ok bool) {
	if ev.Event == "error" {
		return fe, false
	}
	data := jsonscan.TrimSpace(ev.Data)
	if len(data) == 0 || data[0] != '{' || !utf8.Valid(data) {
		return fe, false
	}
	var typ, index, delta []byte
	end := jsonscan.ValidObject(data, 0, 0, func(key []byte, escaped bool, v int) int {
		if escaped {
			return -1
		}
		switch string(key) { // a repeated key (Once: -1) is the reference's
		case "type":
			return jsonscan.Once(&typ, data, v, 1)
		case "index":
			return jsonscan.Once(&index, data, v, 1)
		case "delta":
			return jsonscan.Once(&delta, data, v, 1)
		}
		return jsonscan.SkipValid(data, v, 1)
	})
	if end != len(data) || string(typ) != `"content_block_delta"` || len(delta) == 0 || delta[0] != '{' {
		return fe, false
	}
	i, ok := jsonscan.PlainInt(index)
	if !ok || i > maxFastIndex {
		return fe, false
	}
	var dtyp, text, thinking, partial []byte
	m := jsonscan.ObjectMembers(delta)
	for key, escaped, val, more := m.Next(); more; key, escaped, val, more = m.Next() {
		if escaped {
			return fe, false
		}
		var dst *[]byte
		switch string(key) {
		case "type":
			dst = &dtyp
		case "text":
			dst = &text
		case "thinking":
			dst = &thinking
		case "partial_json":
			dst = &partial
		default:
			continue
		}
		if *dst != nil {
			return fe, false
		}
		*dst = val
	}
	var raw []byte
	switch string(dtyp) {
	case `"text_delta"`:
		fe.typ, raw = "text_delta", text
	case `"thinking_delta"`:
		fe.typ, raw = "thinking_delta", thinking
	case `"input_json_delta"`:
		fe.typ, raw = "input_json_delta", partial
	default:
		return fe, false
	}
	s, ok := jsonscan.Text(raw, scratch)
	if !ok {
		return fe, false
	}
	fe.index, fe.text = int(i), string(s)
	return fe, true
}
