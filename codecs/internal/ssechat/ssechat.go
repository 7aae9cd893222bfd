// Package ssechat decodes OpenAI-style chat completion streams
// (Server-Sent Events of chat.completion.chunk objects) into codec.Frame values.
// The OpenAI and oMLX codecs share it.
//
// Acceptance (R13.3): a finish reason of "stop" or "tool_calls" (or the
// legacy "function_call") followed by "data: [DONE]" ends the stream. A
// "length" finish (or any other finish reason) is terminal at once, even
// without [DONE]: the frame keeps its content and its finish reason, its
// Completion holds only the provider evidence seen so far (model, id, usage;
// no message), and its error is a *codec.IncompleteError (an
// incomplete_completion to the caller). With
// codec.RequestInfo.ProviderFinish (a drop-in stream), a documented finish
// ("length", "content_filter") is the provider's answer instead: its chunk
// is an ordinary frame and [DONE] ends the stream with a Done frame whose
// Completion keeps that finish, the text and the provider evidence, but no
// tool call. [DONE]
// without an accepted finish is a *codec.ProtocolError. A data event with a
// top-level "error" other than null, a vLLM {"object":"error"} event, or any
// event named "error" (with or without data) is an in-band
// *codec.ProviderError, even when [DONE] follows. EOF before acceptance is an
// incomplete stream (End returns ErrIncomplete); that includes a [DONE] event
// whose terminating blank line never arrived. After an accepted finish, that
// error is also codec.ErrNoEndMarker.
//
// Keepalives (R14.2) carry no semantics and no Index: SSE comments (":
// keep-alive", ": OPENROUTER PROCESSING"), events with no data or only
// whitespace data, and chunks with no choices, no usage and no id, such as
// oMLX's {"model":"keepalive"} (whose model is not the answering model).
//
// JSON is decoded, not pattern-matched (R14.2): whitespace-prefixed data
// lines are data lines, escaped keys ("con\u0074ent") mean what they
// decode to, and text that looks like a key inside a string is that
// string's content. Keys are matched exactly after unescaping, as OpenAI's
// clients and the non-streaming codecs do; encoding/json's case-insensitive
// struct matching would read "Content" as content. Of duplicate keys the
// last counts, as in encoding/json.
//
// Frames other than keepalives and malformed-frame errors are numbered from
// 1 (Frame.Index). Observed is always the sum of the queued frames'
// Semantic counts. Every frame's Raw is the exact bytes of its event
// (preceded by stray blank lines), so the Raw of all frames concatenated is
// the stream up to the end of the last frame. One exception is inherent to
// SSE framing: a "\r" line end completes an event, so when a terminal
// event's final "\r\n" is split between two Writes, the "\n" arrives after
// the terminal frame and belongs to no frame.
package ssechat

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/recourse-dev/recourse/chat"
	"github.com/recourse-dev/recourse/codec"
	"github.com/recourse-dev/recourse/codecs/internal/frames"
	"github.com/recourse-dev/recourse/codecs/internal/jsonscan"
	"github.com/recourse-dev/recourse/codecs/internal/sse"
)

// ErrIncomplete is the End error of a stream that reached HTTP EOF before
// its terminal frame.
var ErrIncomplete = errors.New("recourse: stream ended before its terminal frame")

// errNoEndMarker is the End error of a stream that reached HTTP EOF after
// an accepted finish but before [DONE]: it is ErrIncomplete and
// codec.ErrNoEndMarker, so that the failure's text says what was missing.
var errNoEndMarker = fmt.Errorf("%w: %w", ErrIncomplete, codec.ErrNoEndMarker)

// Decoder is a codec.StreamDecoder for one attempt. It is not safe for
// concurrent use.
type Decoder struct {
	front   sse.Front
	q       frames.Queue
	counts  codec.Counts
	finish  string
	calls   map[int]*chat.ToolCallFragment
	content strings.Builder
	reason  strings.Builder
	model   string
	id      string
	usage   *chat.Usage
	legacy  *chat.ToolCallFragment
	// discardText leaves the terminal Completion's Content and Reasoning
	// empty instead of accumulating them (codec.RequestInfo.DropText).
	discardText bool
	// providerFinish ends a stream with a documented finish other than an
	// accepted one at its [DONE] like an accepted finish
	// (codec.RequestInfo.ProviderFinish).
	providerFinish bool
	// memo is the scan of the last chunk that had a string content, the
	// one the next chunk of the stream most likely repeats.
	memo scanMemo
}

// New returns a decoder that keeps every frame's Raw and accumulates the
// text (NewFor with the zero RequestInfo).
func New() *Decoder { return NewFor(codec.RequestInfo{}) }

// NewFor returns a decoder for a request described by info: with
// info.DropText its terminal Completion has empty Content and Reasoning (no
// text is accumulated), and with info.TypedFrames only error frames carry
// Raw.
func NewFor(info codec.RequestInfo) *Decoder {
	d := &Decoder{discardText: info.DropText, providerFinish: info.ProviderFinish}
	d.q.ErrorRawOnly = info.TypedFrames
	return d
}

var (
	_ codec.StreamDecoder = (*Decoder)(nil)
	_ codec.BufferFreer   = (*Decoder)(nil)
)

// FreeBuffers gives the decoder's line buffer back for the next stream's
// decoder (codec.BufferFreer); its queued frames own their bytes and stay
// valid.
func (d *Decoder) FreeBuffers() { d.front.Free() }

// Observed returns the semantic evidence decoded so far.
func (d *Decoder) Observed() codec.Counts { return d.counts }

// Next returns the next queued frame.
func (d *Decoder) Next() (codec.Frame, bool) { return d.q.Next() }

// End reports an incomplete stream unless the terminal frame was decoded.
// After an error frame it returns nil: the frame carries the error.
//
// A streaming request answered with a plain JSON error object instead of
// an event stream (`{"error":{…}}` in a 2xx) ends with a
// *codec.ProviderError: the provider refused the request, which is never
// eligible for a resend (R4.7).
func (d *Decoder) End() error {
	if d.q.Ended() {
		return nil
	}
	if doc, ok := d.front.Document(); ok {
		if pe := jsonError(doc); pe != nil {
			return pe
		}
	}
	if accepted(d.finish) || (d.providerFinish && codec.DocumentedFinish(d.finish)) {
		return errNoEndMarker
	}
	return ErrIncomplete
}

// jsonError returns the provider error of a JSON error document, or nil.
func jsonError(doc []byte) *codec.ProviderError {
	var v struct {
		Error json.RawMessage `json:"error"`
	}
	if json.Unmarshal(doc, &v) != nil || len(v.Error) == 0 || string(v.Error) == "null" {
		return nil
	}
	var o struct {
		Message string `json:"message"`
		Type    string `json:"type"`
		Code    any    `json:"code"`
	}
	if json.Unmarshal(v.Error, &o) != nil {
		var msg string
		if json.Unmarshal(v.Error, &msg) != nil {
			return nil
		}
		return &codec.ProviderError{Message: msg}
	}
	pe := &codec.ProviderError{Code: o.Type, Message: o.Message}
	if c, ok := o.Code.(string); ok && c != "" {
		pe.Code = c
	}
	return pe
}

// Write frames and decodes p. Bytes after the terminal frame are ignored.
func (d *Decoder) Write(p []byte) {
	if err := d.front.Decode(p, d.q.Ended, d.event); err != nil {
		d.push(codec.Frame{Err: err})
	}
}

// push queues f. Frames other than keepalives and malformed-frame errors
// take the next Index.
func (d *Decoder) push(f codec.Frame) { d.q.Push(f) }

func protocolError(raw []byte, what string, err error) codec.Frame {
	return codec.Frame{Raw: raw, Err: &codec.ProtocolError{What: what, Err: err}}
}

func (d *Decoder) event(ev sse.Event) {
	raw := ev.Raw // Push copies what it keeps
	switch {
	case ev.Event == "error":
		d.push(codec.Frame{Raw: raw, Err: eventError(ev.Data)})
	case ev.Done:
		d.done(raw)
	case len(jsonscan.TrimSpace(ev.Data)) == 0:
		// No data (comments, an event or id field alone) or blank data.
		d.push(codec.Frame{Raw: raw, Keepalive: true})
	default:
		d.chunk(raw, ev.Data)
	}
}

// eventError is the provider error of an "event: error" event, with the
// code and message of its data when that is a JSON error object.
func eventError(data []byte) *codec.ProviderError {
	if !utf8.Valid(data) || !validJSON(data) {
		return &codec.ProviderError{}
	}
	it, ok := object(data)
	if !ok {
		return &codec.ProviderError{}
	}
	var errv, code, message []byte
	for k, v, ok := it.NextName(); ok; k, v, ok = it.NextName() {
		switch string(k) {
		case "error":
			errv = v
		case "code":
			code = v
		case "message":
			message = v
		}
	}
	if errv != nil && !isNull(errv) {
		return providerError(errv)
	}
	return &codec.ProviderError{Code: strOr(code), Message: strOr(message)}
}

// providerError is the provider error of an "error" value: an object with
// code (kept only when a string) and message, or a string message.
func providerError(v []byte) *codec.ProviderError {
	if s, ok := str(v); ok {
		return &codec.ProviderError{Message: s}
	}
	pe := &codec.ProviderError{}
	if it, ok := object(v); ok {
		for k, v, ok := it.NextName(); ok; k, v, ok = it.NextName() {
			switch string(k) {
			case "code":
				pe.Code = strOr(v)
			case "message":
				pe.Message = strOr(v)
			}
		}
	}
	return pe
}
