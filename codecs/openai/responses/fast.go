package responses

import (
	"bytes"
	"unicode/utf8"

	"github.com/recourse-dev/recourse/chat"
	"github.com/recourse-dev/recourse/codec"
	"github.com/recourse-dev/recourse/codecs/internal/jsonscan"
	"github.com/recourse-dev/recourse/codecs/internal/sse"
)

// fastDelta below decodes the events that make up nearly all of a stream,
// the text deltas (response.output_text.delta, response.refusal.delta and
// the two reasoning deltas), the pieces of a function call's arguments
// (response.function_call_arguments.delta, whose output_index must then be
// absent or plain digits), and the lifecycle events without a response
// member (such as response.output_text.done, which repeats the whole text,
// and the response.output_item.done of an item other than a function call),
// without encoding/json: one validating pass over the event's data
// (jsonscan.ValidObject, SkipValid) that records the raw values of type,
// sequence_number, output_index, delta and item, keys compared exactly,
// byte for byte. It decides nothing itself: whenever an event is not of
// that plain shape (another type, an "error" event field, a response
// member, an escaped or repeated key, a sequence number that is not plain
// digits, an output_index that is not plain digits, a delta that is not a
// string, invalid or too deeply nested JSON)
// it reports ok=false and the reference path of StreamDecoder.event, which
// handles every event, decides. So it yields exactly the frame the
// reference yields for the same event, only sooner (fast_test.go checks
// this on every event of the package's tests and by fuzzing).

// deltaKind is the kind of event the fast path decodes.
type deltaKind uint8

const (
	notDelta       deltaKind = iota // left to the reference
	lifecycleEvent                  // no evidence: a frame with Raw only
	itemDoneEvent                   // response.output_item.done: lifecycle unless a function call
	contentDelta
	refusalDelta
	reasoningDelta
	argumentsPiece // response.function_call_arguments.delta: one tool fragment
)

// maxFastIndex bounds the output_index the fast path reads; a larger one,
// which no provider sends, is left to the reference (whose int it must fit
// on every platform).
const maxFastIndex = 1<<31 - 1

// deltaType returns the kind of the raw (unescaped) event type t.
func deltaType(t []byte) deltaKind {
	switch string(t) {
	case "response.output_text.delta":
		return contentDelta
	case "response.refusal.delta":
		return refusalDelta
	case "response.reasoning_text.delta", "response.reasoning_summary_text.delta":
		return reasoningDelta
	case "response.function_call_arguments.delta":
		return argumentsPiece
	case "response.output_item.done":
		// In the lifecycle list, but its function_call item completes a
		// tool call, which the reference decodes.
		return itemDoneEvent
	}
	if lifecycle[string(t)] {
		return lifecycleEvent
	}
	return notDelta
}

// fastDelta decodes ev when it is a text delta, a function call's
// arguments delta or a lifecycle event of the plain shape: the frame the
// reference would push, its sequence number (-1: none) and the event's
// kind. scratch is reused to unescape a delta; the frame's text is a string
// of its own. For an arguments delta the frame's one fragment carries the
// output index and the piece, which the caller adds to that call's
// arguments as the reference does.
func fastDelta(ev sse.Event, scratch *[]byte) (f codec.Frame, seq int64, kind deltaKind, ok bool) {
	if ev.Done || ev.Event == "error" {
		return f, 0, notDelta, false
	}
	data := bytes.TrimSpace(ev.Data)
	if len(data) == 0 || data[0] != '{' || !utf8.Valid(data) {
		return f, 0, notDelta, false
	}
	var typ, num, index, delta, item []byte
	end := jsonscan.ValidObject(data, 0, 0, func(key []byte, escaped bool, v int) int {
		if escaped {
			return -1
		}
		switch string(key) { // a repeated key (Once: -1) is the reference's
		case "type":
			return jsonscan.Once(&typ, data, v, 1)
		case "sequence_number":
			return jsonscan.Once(&num, data, v, 1)
		case "output_index":
			return jsonscan.Once(&index, data, v, 1)
		case "delta":
			return jsonscan.Once(&delta, data, v, 1)
		case "item":
			return jsonscan.Once(&item, data, v, 1)
		case "response":
			return -1 // the reference remembers its id and model
		}
		return jsonscan.SkipValid(data, v, 1)
	})
	if end != len(data) || len(typ) < 2 || typ[0] != '"' {
		return f, 0, notDelta, false
	}
	if kind = deltaType(typ[1 : len(typ)-1]); kind == notDelta {
		return f, 0, notDelta, false
	}
	seq = -1
	if num != nil {
		if seq, ok = jsonscan.PlainInt(num); !ok {
			return f, 0, notDelta, false
		}
	}
	f.Raw = ev.Raw // Push copies what it keeps
	switch kind {
	case lifecycleEvent:
		return f, seq, kind, true
	case itemDoneEvent:
		if !otherItem(item) {
			return f, 0, notDelta, false
		}
		return f, seq, lifecycleEvent, true
	}
	text, ok := jsonscan.Text(delta, scratch)
	if !ok {
		return f, 0, notDelta, false
	}
	switch kind {
	case reasoningDelta:
		f.Reasoning = string(text)
	case argumentsPiece:
		i := int64(0) // absent: the reference's default
		if index != nil {
			if i, ok = jsonscan.PlainInt(index); !ok || i > maxFastIndex {
				return f, 0, notDelta, false
			}
		}
		f.Fragments = []chat.ToolCallFragment{{Index: int(i), Arguments: string(text)}}
	default:
		f.Content = string(text)
	}
	return f, seq, kind, true
}

// otherItem reports whether item, a raw value of a valid document, is an
// object whose type is a plain string other than "function_call", or
// absent: an item whose done event is lifecycle only. It reports false for
// any other item, which the reference decides.
func otherItem(item []byte) bool {
	if len(item) == 0 || item[0] != '{' {
		return false
	}
	var typ []byte
	m := jsonscan.ObjectMembers(item)
	for key, escaped, val, ok := m.Next(); ok; key, escaped, val, ok = m.Next() {
		if escaped {
			return false
		}
		if string(key) == "type" {
			if typ != nil {
				return false
			}
			typ = val
		}
	}
	if typ == nil {
		return true
	}
	if len(typ) < 2 || typ[0] != '"' || bytes.IndexByte(typ, '\\') >= 0 {
		return false
	}
	return string(typ) != `"function_call"`
}
