package anthropic

import (
	"encoding/json"
	"errors"
	"strings"
	"unicode/utf8"

	"github.com/recourse-dev/recourse/chat"
	"github.com/recourse-dev/recourse/codec"
	"github.com/recourse-dev/recourse/codecs/internal/frames"
	"github.com/recourse-dev/recourse/codecs/internal/jsonscan"
	"github.com/recourse-dev/recourse/codecs/internal/openaiwire"
	"github.com/recourse-dev/recourse/codecs/internal/sse"
)

// ErrIncomplete is the End error of a stream that reached HTTP EOF before
// its terminal event (message_stop, an incomplete stop reason or error):
// it fails closed, never a success (R22.4).
var ErrIncomplete = errors.New("recourse: messages stream ended before message_stop")

// block is one content block of the stream, by its index.
type block struct {
	typ       string
	id, name  string
	args      strings.Builder
	thinking  strings.Builder
	signature string
	closed    bool
}

// StreamDecoder is the codec.StreamDecoder of one attempt of a streamed
// Messages API request: it frames the SSE stream and queues one
// codec.Frame per event (R22.4). message_start, ping and unknown events
// carry no output; any content_block_start or content_block_delta does; a
// message_stop after a stop reason is the accepted end; a max_tokens or
// model_context_window_exceeded stop reason ends the stream at once as a
// length finish (for a drop-in or proxy client, with
// codec.RequestInfo.ProviderFinish, the stream goes on to message_stop, its
// accepted end with finish length, R13.3); an error event is a *codec.ProviderError whose Status is
// the one its type names. A StreamDecoder is used by one attempt and is
// not safe for concurrent use; the Attempt serializes access to it.
type StreamDecoder struct {
	front  sse.Front
	q      frames.Queue
	counts codec.Counts

	discardText bool
	// providerFinish makes a length stop reason, for a drop-in or proxy
	// client, the provider's answer that message_stop ends like any
	// other, with no tool call complete (codec.RequestInfo.ProviderFinish,
	// R13.3).
	providerFinish  bool
	content, reason strings.Builder
	blocks          map[int]*block
	order           []int
	id, model, stop string
	usage           *chat.Usage
	// scratch unescapes the text of the fast path (fast.go); reference,
	// set by tests only, turns that path off.
	scratch   []byte
	reference bool
}

var (
	_ codec.StreamDecoder = (*StreamDecoder)(nil)
	_ codec.BufferFreer   = (*StreamDecoder)(nil)
)

// NewStreamDecoder returns the stream decoder for a request described by
// info: with info.DropText its terminal Completion has empty Content and
// Reasoning, with info.TypedFrames only error frames carry Raw, and with
// info.ProviderFinish a length stop reason ends at message_stop as the
// provider's answer instead of an incomplete_completion error frame.
// [Codec.NewObserver] returns one for a streaming request.
func NewStreamDecoder(info codec.RequestInfo) *StreamDecoder {
	d := &StreamDecoder{discardText: info.DropText, providerFinish: info.ProviderFinish}
	d.q.ErrorRawOnly = info.TypedFrames
	return d
}

// FreeBuffers gives the decoder's line buffer back for the next stream's
// decoder (codec.BufferFreer).
func (d *StreamDecoder) FreeBuffers() { d.front.Free() }

// Observed returns the semantic evidence decoded so far (R13.2): the sum
// of the queued frames' counts plus, to fail closed, one byte or fragment
// for each block start or delta that carries no deliverable text (an empty
// text or thinking start, a redacted thinking block, a server tool's use
// or result, a citation), so that any content block makes a failure not
// resendable.
func (d *StreamDecoder) Observed() codec.Counts { return d.counts }

// Next returns the next queued frame, or ok=false when none is queued.
func (d *StreamDecoder) Next() (codec.Frame, bool) { return d.q.Next() }

// MessageID returns the ID of the message that message_start announced,
// or "".
func (d *StreamDecoder) MessageID() string { return d.id }

// Usage returns the usage the stream reported so far — message_start's
// input tokens, then message_delta's — or nil: what an attempt cost even
// when it fails later.
func (d *StreamDecoder) Usage() *chat.Usage {
	if d.usage == nil {
		return nil
	}
	u := *d.usage
	return &u
}

// ClosedReasoning returns the text and signature of the thinking blocks
// the stream has closed (content_block_stop) with a signature, joined, and
// the signature of the last one: what a continuation may commit (R22.7).
// An open thinking block is never included.
func (d *StreamDecoder) ClosedReasoning() (text, signature string) {
	var sb strings.Builder
	for _, i := range d.order {
		b := d.blocks[i]
		if b.typ == "thinking" && b.closed && b.signature != "" {
			sb.WriteString(b.thinking.String())
			signature = b.signature
		}
	}
	return sb.String(), signature
}

// End reports an incomplete stream unless its terminal frame was decoded.
// After an error frame it returns nil: the frame carries the error. A
// streaming request answered with a plain JSON error document instead of
// an event stream ends with its *codec.ProviderError.
func (d *StreamDecoder) End() error {
	if d.q.Ended() {
		return nil
	}
	if doc, ok := d.front.Document(); ok {
		if pe := openaiwire.DocumentError(doc, providerError); pe != nil {
			return pe
		}
	}
	return ErrIncomplete
}

// Write frames and decodes p. Bytes after the terminal frame are ignored.
func (d *StreamDecoder) Write(p []byte) {
	if err := d.front.Decode(p, d.q.Ended, d.event); err != nil {
		d.push(codec.Frame{Err: err})
	}
}

func (d *StreamDecoder) push(f codec.Frame) {
	d.counts = d.counts.Add(f.Semantic())
	if !d.discardText {
		d.content.WriteString(f.Content)
		d.reason.WriteString(f.Reasoning)
	}
	d.q.Push(f)
}

func (d *StreamDecoder) malformed(raw []byte, what string, err error) {
	d.push(codec.Frame{Raw: raw, Err: openaiwire.ProtocolError(what, err)})
}

// event decodes one SSE event into one frame.
func (d *StreamDecoder) event(ev sse.Event) {
	raw := ev.Raw // Push copies what it keeps
	if !d.reference {
		if fe, ok := fastDelta(ev, &d.scratch); ok {
			f := codec.Frame{Raw: raw}
			if what := d.applyDelta(fe.index, fe.typ, fe.text, &f); what != "" {
				d.malformed(raw, what, nil)
				return
			}
			d.push(f)
			return
		}
	}
	data := jsonscan.TrimSpace(ev.Data)
	switch {
	case len(data) == 0 && ev.Event == "error":
		d.push(codec.Frame{Raw: raw, Err: &codec.ProviderError{}})
		return
	case len(data) == 0:
		// Comments, an event field alone, blank data (R14.2).
		d.push(codec.Frame{Raw: raw, Keepalive: true})
		return
	case !utf8.Valid(data):
		d.malformed(raw, "stream event is not valid UTF-8", nil)
		return
	}
	top, err := openaiwire.ParseObject(data, "stream event")
	if err != nil || top == nil {
		if ev.Event == "error" {
			d.push(codec.Frame{Raw: raw, Err: &codec.ProviderError{}})
			return
		}
		d.malformed(raw, "stream event is not a JSON object", err)
		return
	}
	var typ string
	if err := top.Get("type", &typ); err != nil {
		d.malformed(raw, "stream event type is not a string", err)
		return
	}
	if typ == "" {
		typ = ev.Event
	}
	f := codec.Frame{Raw: raw}
	if what := d.typed(typ, top, &f); what != "" {
		d.malformed(raw, what, nil)
		return
	}
	d.push(f)
}

// typed decodes the event top of type typ into f; it returns what makes
// the event malformed, or "".
func (d *StreamDecoder) typed(typ string, top openaiwire.Object, f *codec.Frame) string {
	switch typ {
	case "":
		return "stream event has no type"
	case "ping":
		f.Keepalive = true
	case "message_start":
		return d.messageStart(top)
	case "content_block_start":
		return d.blockStart(top, f)
	case "content_block_delta":
		return d.blockDelta(top, f)
	case "content_block_stop":
		var idx int
		if err := top.Get("index", &idx); err != nil {
			return "content_block_stop index is not an integer"
		}
		if b := d.blocks[idx]; b != nil && !b.closed {
			b.closed = true
			if b.typ == "thinking" {
				// The block's text is final: its signature goes with it.
				f.ReasoningSignature = b.signature
			}
		}
	case "message_delta":
		return d.messageDelta(top, f)
	case "message_stop":
		if d.stop == "" {
			return "message_stop before a stop_reason"
		}
		d.done(f)
	case "error":
		pe := providerError(top)
		if pe == nil {
			pe = &codec.ProviderError{}
		}
		f.Err = pe
		// What the attempt cost so far (message_start's input usage)
		// stays in the failure's evidence, even when it is resent.
		f.Completion = &chat.Completion{Model: d.model, ID: d.id, Usage: d.Usage()}
	}
	// Any other event is one the provider may add: no output (R22.4).
	return ""
}

// messageStart keeps the ID, model and input usage of message_start.
func (d *StreamDecoder) messageStart(top openaiwire.Object) string {
	var msg openaiwire.Object
	if err := top.Get("message", &msg); err != nil {
		return "message_start message is not an object"
	}
	if err := msg.Get("id", &d.id); err != nil {
		return "message_start id is not a string"
	}
	if err := msg.Get("model", &d.model); err != nil {
		return "message_start model is not a string"
	}
	if msg.Has("usage") {
		u, err := usageOf(msg, d.usage)
		if err != nil {
			return "message_start usage is malformed"
		}
		d.usage = u
	}
	return ""
}

// blockStart decodes content_block_start: every block start is output.
func (d *StreamDecoder) blockStart(top openaiwire.Object, f *codec.Frame) string {
	var idx int
	if err := top.Get("index", &idx); err != nil || !top.Has("index") || idx < 0 {
		return "content_block_start index is not a non-negative integer"
	}
	var cb openaiwire.Object
	if err := top.Get("content_block", &cb); err != nil || cb == nil {
		return "content_block_start content_block is not an object"
	}
	if d.blocks[idx] != nil {
		return "content_block_start repeats an index"
	}
	b := &block{typ: cb.Str("type")}
	if d.blocks == nil {
		d.blocks = make(map[int]*block, 4)
	}
	d.blocks[idx] = b
	d.order = append(d.order, idx)
	switch b.typ {
	case "text":
		if err := cb.Get("text", &f.Content); err != nil {
			return "text block text is not a string"
		}
		if f.Content == "" {
			d.counts.ContentBytes++
		}
	case "thinking":
		if err := cb.Get("thinking", &f.Reasoning); err != nil {
			return "thinking block text is not a string"
		}
		_ = cb.Get("signature", &b.signature)
		b.thinking.WriteString(f.Reasoning)
		if f.Reasoning == "" {
			d.counts.ReasoningBytes++
		}
	case "tool_use":
		if err := cb.Get("id", &b.id); err != nil {
			return "tool_use id is not a string"
		}
		if err := cb.Get("name", &b.name); err != nil || b.name == "" {
			return "tool_use has no name"
		}
		f.Fragments = []chat.ToolCallFragment{{Index: idx, ID: b.id, Name: b.name}}
	case "redacted_thinking":
		d.counts.ReasoningBytes++
	default:
		// A server tool's use (already run and billed at the provider)
		// or result, or a block type the provider may add: output this
		// decoder does not deliver.
		d.counts.ToolFragments++
	}
	return ""
}

// blockDelta decodes content_block_delta: every delta is output.
func (d *StreamDecoder) blockDelta(top openaiwire.Object, f *codec.Frame) string {
	var idx int
	if err := top.Get("index", &idx); err != nil {
		return "content_block_delta index is not an integer"
	}
	var delta openaiwire.Object
	if err := top.Get("delta", &delta); err != nil || delta == nil {
		if d.open(idx) == nil {
			return "content_block_delta for a block that is not open"
		}
		return "content_block_delta delta is not an object"
	}
	typ := delta.Str("type")
	field := deltaField[typ]
	var text string
	if field != "" {
		if err := delta.Get(field, &text); err != nil {
			if d.open(idx) == nil {
				return "content_block_delta for a block that is not open"
			}
			return typ + " " + field + " is not a string"
		}
	}
	if typ == "signature_delta" {
		var sig string
		if err := delta.Get("signature", &sig); err != nil {
			return "signature_delta signature is not a string"
		}
		text = sig
	}
	return d.applyDelta(idx, typ, text, f)
}

// deltaField names the text field of each delta type that carries one.
var deltaField = map[string]string{"text_delta": "text", "thinking_delta": "thinking", "input_json_delta": "partial_json"}

// open returns the open block of index idx, or nil.
func (d *StreamDecoder) open(idx int) *block {
	if b := d.blocks[idx]; b != nil && !b.closed {
		return b
	}
	return nil
}

// applyDelta applies a delta of type typ carrying text (the text,
// thinking, partial JSON or signature) to block idx, setting f's
// evidence; it returns what makes the event malformed, or "".
func (d *StreamDecoder) applyDelta(idx int, typ, text string, f *codec.Frame) string {
	b := d.open(idx)
	if b == nil {
		return "content_block_delta for a block that is not open"
	}
	switch typ {
	case "text_delta":
		f.Content = text
	case "thinking_delta":
		f.Reasoning = text
		b.thinking.WriteString(text)
	case "signature_delta":
		b.signature += text
	case "input_json_delta":
		if b.typ == "tool_use" {
			b.args.WriteString(text)
			f.Fragments = []chat.ToolCallFragment{{Index: idx, Arguments: text}}
		} else {
			d.counts.ToolFragments++
		}
	default:
		// citations_delta and delta types the provider may add: output
		// this decoder does not deliver.
		d.counts.ContentBytes++
	}
	return ""
}

// messageDelta keeps the stop reason and usage of message_delta. A stop
// reason that says the output was cut (max_tokens,
// model_context_window_exceeded) ends the stream at once: a
// *codec.IncompleteError (the engine's incomplete_completion) with finish
// "length", provider evidence only (R13.3, R22.4). With providerFinish it
// is the provider's answer instead: the frame carries the finish, and
// message_stop ends the stream (R13.3).
func (d *StreamDecoder) messageDelta(top openaiwire.Object, f *codec.Frame) string {
	var delta openaiwire.Object
	if err := top.Get("delta", &delta); err != nil {
		return "message_delta delta is not an object"
	}
	var stop string
	if err := delta.Get("stop_reason", &stop); err != nil {
		return "message_delta stop_reason is not a string"
	}
	if stop != "" {
		d.stop = stop
	}
	if top.Has("usage") {
		u, err := usageOf(top, d.usage)
		if err != nil {
			return "message_delta usage is malformed"
		}
		d.usage = u
	}
	if incomplete(d.stop) {
		finish := FinishReason(d.stop)
		if d.providerFinish {
			f.FinishReason = finish
			return ""
		}
		f.FinishReason = finish
		f.Completion = &chat.Completion{FinishReason: finish, Model: d.model, ID: d.id, Usage: d.Usage()}
		f.Err = &codec.IncompleteError{FinishReason: finish}
	}
	return ""
}

// done makes f the accepted terminal frame: the streamed text, the tool
// calls in block order, model, ID, usage and finish reason.
func (d *StreamDecoder) done(f *codec.Frame) {
	msg := chat.Message{Role: chat.Assistant, Content: d.content.String(), Reasoning: d.reason.String()}
	thinking := 0
	for _, i := range d.order {
		b := d.blocks[i]
		switch b.typ {
		case "thinking":
			thinking++
			msg.ReasoningSignature = b.signature
		case "tool_use":
			if incomplete(d.stop) {
				// The provider's own limit, taken as its answer: no tool
				// call of it is complete, its input may be cut (R13.4).
				continue
			}
			args := json.RawMessage(b.args.String())
			if len(jsonscan.TrimSpace(args)) == 0 {
				args = json.RawMessage(`{}`)
			} else if !isObject(args) {
				f.Err = openaiwire.ProtocolError("tool_use input is not a JSON object", nil)
				return
			}
			msg.ToolCalls = append(msg.ToolCalls, chat.ToolCall{ID: b.id, Name: b.name, Arguments: args})
		}
	}
	if thinking != 1 {
		msg.ReasoningSignature = ""
	}
	finish := FinishReason(d.stop)
	f.Done, f.FinishReason = true, finish
	f.Completion = &chat.Completion{Message: msg, FinishReason: finish, Model: d.model, ID: d.id, Usage: d.Usage()}
}
