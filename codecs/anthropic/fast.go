package anthropic

import (
	"bytes"
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
// It is one function of more than 80 lines because it is one pass over the
// event, its top-level members and then its delta's, each step able to leave
// the event to the reference decoder (ok false), and it runs once an event
// on the stream's fast path.
func fastDelta(ev sse.Event, scratch *[]byte) (fe fastEvent, ok bool) {
	if ev.Event == "error" {
		return fe, false
	}
	data := jsonscan.TrimSpace(ev.Data)
	if len(data) == 0 || data[0] != '{' || !utf8.Valid(data) {
		return fe, false
	}
	var typ, index, delta []byte
	seen := func(dst *[]byte, v int) int {
		if *dst != nil {
			return -1 // a repeated key: the reference decides which wins
		}
		end := jsonscan.SkipValid(data, v, 1)
		if end >= 0 {
			*dst = data[v:end]
		}
		return end
	}
	end := jsonscan.ValidObject(data, 0, 0, func(key []byte, escaped bool, v int) int {
		if escaped {
			return -1
		}
		switch string(key) {
		case "type":
			return seen(&typ, v)
		case "index":
			return seen(&index, v)
		case "delta":
			return seen(&delta, v)
		}
		return jsonscan.SkipValid(data, v, 1)
	})
	if end != len(data) || string(typ) != `"content_block_delta"` || len(delta) == 0 || delta[0] != '{' {
		return fe, false
	}
	i, ok := digits(index)
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
	if len(raw) < 2 || raw[0] != '"' {
		return fe, false
	}
	s := raw[1 : len(raw)-1]
	if bytes.IndexByte(s, '\\') >= 0 {
		*scratch = jsonscan.Unquote((*scratch)[:0], raw)
		s = *scratch
	}
	fe.index, fe.text = int(i), string(s)
	return fe, true
}

// digits returns the value of a JSON number made of decimal digits only
// (no sign, fraction or exponent) that fits an int64 with room to spare,
// and ok=false for any other number.
func digits(num []byte) (int64, bool) {
	if len(num) == 0 || len(num) > 18 {
		return 0, false
	}
	var n int64
	for _, c := range num {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int64(c-'0')
	}
	return n, true
}
