// Package ssechat decodes OpenAI-style chat completion streams
// (Server-Sent Events of chat.completion.chunk objects) into layer.Frames.
// The OpenAI and oMLX codecs share it.
//
// Acceptance (R13.3): a finish reason of "stop" or "tool_calls" (or the
// legacy "function_call") followed by "data: [DONE]" ends the stream. A
// "length" finish (or any other finish reason) is terminal at once, even
// without [DONE]: the frame keeps its content and its finish reason, its
// Completion holds only the provider evidence seen so far (model, id, usage;
// no message), and its error is a *layer.StreamError with reason
// incomplete_completion. [DONE]
// without an accepted finish is a *layer.ProtocolError. A data event with a
// top-level "error" other than null, a vLLM {"object":"error"} event, or any
// event named "error" (with or without data) is an in-band
// *layer.ProviderError, even when [DONE] follows. EOF before acceptance is an
// incomplete stream (End returns ErrIncomplete); that includes a [DONE] event
// whose terminating blank line never arrived.
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
	"bytes"
	"encoding/json"
	"errors"
	"github.com/recourse-dev/recourse/codecs/internal/frames"
	"sort"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/recourse-dev/recourse/chat"
	"github.com/recourse-dev/recourse/codecs/internal/jsonscan"
	"github.com/recourse-dev/recourse/codecs/internal/sse"
	"github.com/recourse-dev/recourse/layer"
)

// ErrIncomplete is the End error of a stream that reached HTTP EOF before
// its terminal frame.
var ErrIncomplete = errors.New("recourse: stream ended before its terminal frame")

// Decoder is a layer.StreamDecoder for one attempt. It is not safe for
// concurrent use.
type Decoder struct {
	framer  *sse.Framer
	q       frames.Queue
	counts  layer.Counts
	finish  string
	calls   map[int]*chat.ToolCallFragment
	content strings.Builder
	reason  strings.Builder
	model   string
	id      string
	usage   *chat.Usage
	legacy  *chat.ToolCallFragment
	// discardText leaves the terminal Completion's Content and Reasoning
	// empty instead of accumulating them (layer.RequestInfo.DropText).
	discardText bool
	// sniffed: the first non-space byte arrived; plain: it was '{', so
	// the answer is a JSON document, not an event stream, and its first
	// bytes are kept in doc (at most maxDoc) for End.
	sniffed, plain bool
	doc            []byte
	// memo is the scan of the last chunk that had a string content, the
	// one the next chunk of the stream most likely repeats.
	memo scanMemo
}

// maxDoc bounds the bytes of a plain JSON answer that End inspects.
const maxDoc = 64 << 10

// New returns a decoder that keeps every frame's Raw and accumulates the
// text (NewFor with the zero RequestInfo).
func New() *Decoder { return NewFor(layer.RequestInfo{}) }

// NewFor returns a decoder for a request described by info: with
// info.DropText its terminal Completion has empty Content and Reasoning (no
// text is accumulated), and with info.TypedFrames only error frames carry
// Raw.
func NewFor(info layer.RequestInfo) *Decoder {
	d := &Decoder{framer: sse.NewFramer(0), discardText: info.DropText}
	d.q.ErrorRawOnly = info.TypedFrames
	return d
}

var _ layer.StreamDecoder = (*Decoder)(nil)

// Observed returns the semantic evidence decoded so far.
func (d *Decoder) Observed() layer.Counts { return d.counts }

// Next returns the next queued frame.
func (d *Decoder) Next() (layer.Frame, bool) { return d.q.Next() }

// End reports an incomplete stream unless the terminal frame was decoded.
// After an error frame it returns nil: the frame carries the error.
//
// A streaming request answered with a plain JSON error object instead of
// an event stream (`{"error":{…}}` in a 2xx) ends with a
// *layer.ProviderError: the provider refused the request, which is never
// eligible for a resend (R4.7).
func (d *Decoder) End() error {
	if d.q.Ended() {
		return nil
	}
	if d.plain {
		if pe := jsonError(d.doc); pe != nil {
			return pe
		}
	}
	return ErrIncomplete
}

// jsonError returns the provider error of a JSON error document, or nil.
func jsonError(doc []byte) *layer.ProviderError {
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
		return &layer.ProviderError{Message: msg}
	}
	pe := &layer.ProviderError{Code: o.Type, Message: o.Message}
	if c, ok := o.Code.(string); ok && c != "" {
		pe.Code = c
	}
	return pe
}

// Write frames and decodes p. Bytes after the terminal frame are ignored.
func (d *Decoder) Write(p []byte) {
	if d.q.Ended() {
		return
	}
	if !d.sniffed {
		if i := bytes.IndexFunc(p, func(r rune) bool { return !unicode.IsSpace(r) }); i >= 0 {
			d.sniffed, d.plain = true, p[i] == '{'
		}
	}
	if d.plain && len(d.doc) < maxDoc {
		d.doc = append(d.doc, p[:min(len(p), maxDoc-len(d.doc))]...)
	}
	d.framer.Write(p)
	for !d.q.Ended() {
		ev, ok, err := d.framer.Next()
		if err != nil {
			d.push(layer.Frame{Err: &layer.ProtocolError{What: "oversized SSE event", Err: err}})
			return
		}
		if !ok {
			return
		}
		d.event(ev)
	}
}

// push queues f. Frames other than keepalives and malformed-frame errors
// take the next Index.
func (d *Decoder) push(f layer.Frame) { d.q.Push(f) }

func protocolError(raw []byte, what string, err error) layer.Frame {
	return layer.Frame{Raw: raw, Err: &layer.ProtocolError{What: what, Err: err}}
}

func (d *Decoder) event(ev sse.Event) {
	raw := ev.Raw // Push copies what it keeps
	switch {
	case ev.Event == "error":
		d.push(layer.Frame{Raw: raw, Err: eventError(ev.Data)})
	case ev.Done:
		d.done(raw)
	case len(jsonscan.TrimSpace(ev.Data)) == 0:
		// No data (comments, an event or id field alone) or blank data.
		d.push(layer.Frame{Raw: raw, Keepalive: true})
	default:
		d.chunk(raw, ev.Data)
	}
}

// eventError is the provider error of an "event: error" event, with the
// code and message of its data when that is a JSON error object.
func eventError(data []byte) *layer.ProviderError {
	if !utf8.Valid(data) || !validJSON(data) {
		return &layer.ProviderError{}
	}
	it, ok := object(data)
	if !ok {
		return &layer.ProviderError{}
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
	return &layer.ProviderError{Code: strOr(code), Message: strOr(message)}
}

// providerError is the provider error of an "error" value: an object with
// code (kept only when a string) and message, or a string message.
func providerError(v []byte) *layer.ProviderError {
	if s, ok := str(v); ok {
		return &layer.ProviderError{Message: s}
	}
	pe := &layer.ProviderError{}
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

// chunk decodes a data event that should hold a chat.completion.chunk.
func (d *Decoder) chunk(raw, data []byte) {
	if !utf8.Valid(data) {
		d.push(protocolError(raw, "stream event is not valid UTF-8", nil))
		return
	}
	var m topMembers
	if d.memo.reuse(data, &m) {
		// Same bytes as the last chunk but for its content string: the
		// same verdict and the same members.
	} else if m.scan(data) {
		d.memo.keep(data, &m)
	} else {
		// Not an object of plain keys that jsonscan validates: the
		// reference path decides (encoding/json's verdict, keys unescaped).
		if !validJSON(data) {
			var v json.RawMessage
			d.push(protocolError(raw, "stream event is not valid JSON", json.Unmarshal(data, &v)))
			return
		}
		top, ok := object(data)
		if !ok {
			d.push(protocolError(raw, "stream event is not a JSON object", nil))
			return
		}
		m = topMembers{}
		for k, v, ok := top.NextName(); ok; k, v, ok = top.NextName() {
			m.set(k, v)
		}
	}
	idv, modelv, errv, objectv, codev, messagev, choicesv, usagev := m.id, m.model, m.err, m.object, m.code, m.message, m.choices, m.usage
	if errv != nil && !isNull(errv) {
		d.push(layer.Frame{Raw: raw, Err: providerError(errv)})
		return
	}
	if strIs(objectv, "error") {
		// vLLM: {"object":"error","message":…,"type":…,"code":400}.
		d.push(layer.Frame{Raw: raw, Err: &layer.ProviderError{Code: strOr(codev), Message: strOr(messagev)}})
		return
	}
	// The id and model repeat in every chunk: reuse the strings.
	id, ok1 := optStrAs(idv, d.id)
	model, ok2 := optStrAs(modelv, d.model)
	if !ok1 || !ok2 {
		d.push(protocolError(raw, "chunk id or model is not a string", nil))
		return
	}
	u, ok := decodeUsage(usagev)
	if !ok {
		d.push(protocolError(raw, "chunk usage is not an object of integers", nil))
		return
	}
	f := layer.Frame{Raw: raw}
	var frags []chat.ToolCallFragment
	var legacy *chat.ToolCallFragment
	choices, ok := array(choicesv)
	if !ok && choicesv != nil && !isNull(choicesv) {
		d.push(protocolError(raw, "chunk choices is not an array", nil))
		return
	}
	nChoices := 0
	seen := false
	choice := func(c []byte, pre *choiceMembers) bool {
		nChoices++
		if seen {
			return true
		}
		var what string
		seen, what = decodeChoice(c, pre, &f, &frags, &legacy)
		if what != "" {
			d.push(protocolError(raw, what, nil))
			return false
		}
		return true
	}
	if m.elemsOK {
		// The scan recorded the elements, and the first one's members.
		for i, c := range m.elems[:m.nElems] {
			var pre *choiceMembers
			if i == 0 && m.c0OK {
				pre = &m.c0
			}
			if !choice(c, pre) {
				return
			}
		}
	} else {
		for c, ok := choices.Next(); ok; c, ok = choices.Next() {
			if !choice(c, nil) {
				return
			}
		}
	}
	if nChoices == 0 && u == nil && id == "" {
		// {"model":"keepalive"} and other chunks that carry nothing; their
		// model is not the answering model.
		f.Keepalive = true
		d.push(f)
		return
	}
	if model != "" {
		d.model = model
	}
	if id != "" {
		d.id = id
	}
	if u != nil {
		d.usage = u
	}
	f.Fragments = frags
	for _, fr := range frags {
		d.addFragment(fr)
	}
	if legacy != nil {
		f.Fragments = append(f.Fragments, *legacy)
		if d.legacy == nil {
			d.legacy = &chat.ToolCallFragment{}
		}
		d.legacy.Name += legacy.Name
		d.legacy.Arguments += legacy.Arguments
	}
	if f.FinishReason != "" {
		d.finish = f.FinishReason
	}
	if !d.discardText {
		d.content.WriteString(f.Content)
		d.reason.WriteString(f.Reasoning)
	}
	d.counts = d.counts.Add(f.Semantic())
	switch f.FinishReason {
	case "", "stop", "tool_calls", "function_call":
	default:
		// length (and any other finish) is terminal without [DONE] (R13.3).
		// The provider's evidence seen so far (model, id, usage) is kept for
		// Inspect, as an accepted completion's would be; no message, no
		// tool call (R10.5).
		f.Err = &layer.StreamError{Reason: layer.StreamIncompleteCompletion, FinishReason: f.FinishReason}
		f.Completion = &chat.Completion{FinishReason: f.FinishReason, Model: d.model, ID: d.id, Usage: d.usage}
	}
	d.push(f)
}

// choiceMembers are the raw members of a choice object that the decoder
// reads and, when deltaScanned, those of its delta object, as the one-pass
// scan of a chunk records them (of duplicate keys the last one wins).
type choiceMembers struct {
	index, delta, finish      []byte
	deltaScanned              bool
	content, rc, r, tools, fc []byte // of delta
}

// setDelta records the raw value v of the delta member named key.
func (m *choiceMembers) setDelta(key, v []byte) {
	switch string(key) {
	case "content":
		m.content = v
	case "reasoning_content":
		m.rc = v
	case "reasoning":
		m.r = v
	case "tool_calls":
		m.tools = v
	case "function_call":
		m.fc = v
	}
}

// decodeChoice decodes one element of choices into f, frags and legacy when
// its index is 0. It reports whether it did, or what is malformed. pre, when
// not nil, holds c's members as the chunk's scan recorded them.
func decodeChoice(c []byte, pre *choiceMembers, f *layer.Frame, frags *[]chat.ToolCallFragment, legacy **chat.ToolCallFragment) (used bool, what string) {
	var m choiceMembers
	if pre != nil {
		m = *pre
	} else {
		it, ok := object(c)
		if !ok {
			return false, "chunk choice is not an object"
		}
		for k, v, ok := it.NextName(); ok; k, v, ok = it.NextName() {
			switch string(k) {
			case "index":
				m.index = v
			case "delta":
				m.delta = v
			case "finish_reason":
				m.finish = v
			}
		}
	}
	indexv, deltav, finishv := m.index, m.delta, m.finish
	index, ok := optInt(indexv)
	if !ok {
		return false, "chunk choice index is not an integer"
	}
	if index != 0 {
		return false, "" // only the first choice is decoded (n = 1)
	}
	if f.FinishReason, ok = optStr(finishv); !ok {
		return false, "chunk finish_reason is not a string"
	}
	if deltav == nil || isNull(deltav) {
		return true, ""
	}
	if !m.deltaScanned {
		dl, ok := object(deltav)
		if !ok {
			return false, "chunk delta is not an object"
		}
		for k, v, ok := dl.NextName(); ok; k, v, ok = dl.NextName() {
			m.setDelta(k, v)
		}
	}
	contentv, rcv, rv, toolsv, fcv := m.content, m.rc, m.r, m.tools, m.fc
	var ok1, ok2, ok3 bool
	f.Content, ok1 = optStr(contentv)
	rc, ok2 := optStr(rcv)
	r, ok3 := optStr(rv)
	if !ok1 || !ok2 || !ok3 {
		return false, "chunk content or reasoning is not a string"
	}
	// A server that sends both names sends the same text twice; an empty
	// reasoning_content does not hide reasoning.
	if f.Reasoning = rc; rc == "" {
		f.Reasoning = r
	}
	tools, ok := array(toolsv)
	if !ok && toolsv != nil && !isNull(toolsv) {
		return false, "chunk tool_calls is not an array"
	}
	for tv, ok := tools.Next(); ok; tv, ok = tools.Next() {
		tc, ok := object(tv)
		if !ok {
			return false, "chunk tool call is not an object"
		}
		var ti, tid, tfn []byte
		for k, v, ok := tc.NextName(); ok; k, v, ok = tc.NextName() {
			switch string(k) {
			case "index":
				ti = v
			case "id":
				tid = v
			case "function":
				tfn = v
			}
		}
		var fr chat.ToolCallFragment
		var ok1, ok2 bool
		fr.Index, ok1 = optInt(ti)
		fr.ID, ok2 = optStr(tid)
		if !ok1 || !ok2 {
			return false, "chunk tool call index or id has the wrong type"
		}
		if what := decodeFunction(tfn, &fr); what != "" {
			return false, what
		}
		*frags = append(*frags, fr)
	}
	if fcv != nil && !isNull(fcv) {
		var fr chat.ToolCallFragment
		if _, ok := object(fcv); !ok {
			return false, "chunk function_call is not an object"
		}
		if what := decodeFunction(fcv, &fr); what != "" {
			return false, what
		}
		*legacy = &fr
	}
	return true, ""
}

// decodeFunction decodes {"name":…,"arguments":…} into fr. Arguments that
// are not a string (some compatible servers send an object) are kept as
// their JSON text.
func decodeFunction(v []byte, fr *chat.ToolCallFragment) (what string) {
	if v == nil || isNull(v) {
		return ""
	}
	it, ok := object(v)
	if !ok {
		return "chunk tool call function is not an object"
	}
	var namev, argsv []byte
	for k, v, ok := it.NextName(); ok; k, v, ok = it.NextName() {
		switch string(k) {
		case "name":
			namev = v
		case "arguments":
			argsv = v
		}
	}
	if fr.Name, ok = optStr(namev); !ok {
		return "chunk tool call name is not a string"
	}
	if argsv == nil || isNull(argsv) {
		return ""
	}
	if s, ok := str(argsv); ok {
		fr.Arguments = s
	} else {
		fr.Arguments = string(argsv)
	}
	return ""
}

// decodeUsage decodes a usage value; nil (and ok) when absent or null.
func decodeUsage(v []byte) (*chat.Usage, bool) {
	if v == nil || isNull(v) {
		return nil, true
	}
	it, ok := object(v)
	if !ok {
		return nil, false
	}
	u := &chat.Usage{}
	for k, v, ok := it.NextName(); ok; k, v, ok = it.NextName() {
		var n *int
		switch string(k) {
		case "prompt_tokens":
			n = &u.InputTokens
		case "completion_tokens":
			n = &u.OutputTokens
		default:
			continue
		}
		if *n, ok = optInt(v); !ok {
			return nil, false
		}
	}
	return u, true
}

func (d *Decoder) addFragment(fr chat.ToolCallFragment) {
	if d.calls == nil {
		d.calls = map[int]*chat.ToolCallFragment{}
	}
	acc, ok := d.calls[fr.Index]
	if !ok {
		acc = &chat.ToolCallFragment{Index: fr.Index}
		d.calls[fr.Index] = acc
	}
	if fr.ID != "" {
		acc.ID = fr.ID
	}
	acc.Name += fr.Name
	acc.Arguments += fr.Arguments
}

func (d *Decoder) done(raw []byte) {
	switch d.finish {
	case "stop", "tool_calls", "function_call":
	default:
		d.push(protocolError(raw, "stream ended without an accepted finish reason", nil))
		return
	}
	comp := &chat.Completion{
		Message:      chat.Message{Role: chat.Assistant, Content: d.content.String(), Reasoning: d.reason.String()},
		FinishReason: d.finish, Model: d.model, ID: d.id, Usage: d.usage,
	}
	idx := make([]int, 0, len(d.calls))
	for i := range d.calls {
		idx = append(idx, i)
	}
	sort.Ints(idx)
	for _, i := range idx {
		acc := d.calls[i]
		comp.Message.ToolCalls = append(comp.Message.ToolCalls, chat.ToolCall{ID: acc.ID, Name: acc.Name, Arguments: arguments(acc.Arguments)})
	}
	if d.legacy != nil {
		comp.Message.ToolCalls = append(comp.Message.ToolCalls, chat.ToolCall{Name: d.legacy.Name, Arguments: arguments(d.legacy.Arguments)})
	}
	f := layer.Frame{Raw: raw, Done: true, Completion: comp, FinishReason: d.finish}
	d.counts.CompletedToolCalls += int64(len(comp.Message.ToolCalls))
	d.push(f)
}

// topMembers holds the raw values of the top-level members of a chunk that
// the decoder reads; of duplicate keys the last one wins.
type topMembers struct {
	id, model, err, object, code, message, choices, usage []byte
	// elemsOK: the scan recorded the elements of choices (at most
	// maxElems) in elems, and c0OK: the members of the first one, an
	// object, in c0.
	elemsOK, c0OK bool
	nElems        int
	elems         [maxElems][]byte
	c0            choiceMembers
}

// maxElems is the most choices elements a chunk's scan records; a chunk
// with more is walked again.
const maxElems = 4

// set records the raw value v of the member named key (unescaped).
func (m *topMembers) set(key, v []byte) {
	switch string(key) {
	case "id":
		m.id = v
	case "model":
		m.model = v
	case "error":
		m.err = v
	case "object":
		m.object = v
	case "code":
		m.code = v
	case "message":
		m.message = v
	case "choices":
		m.choices = v
	case "usage":
		m.usage = v
	}
}

// scan validates data and records its members in one pass, for the common
// chunk: an object, nested at most jsonscan.MaxDepth deep, with no escaped
// key. It reports false for anything else (m is then to be discarded), and
// the reference path decides. A true result implies what validJSON and
// object would have found.
func (m *topMembers) scan(data []byte) bool {
	i := jsonscan.SkipSpace(data, 0)
	delta := func(key []byte, escaped bool, v int) int {
		if escaped {
			return -1
		}
		e := jsonscan.SkipValid(data, v, 4)
		if e >= 0 {
			m.c0.setDelta(key, data[v:e])
		}
		return e
	}
	choice := func(key []byte, escaped bool, v int) int {
		if escaped {
			return -1
		}
		var e int
		switch string(key) {
		case "delta":
			c := &m.c0
			c.deltaScanned, c.content, c.rc, c.r, c.tools, c.fc = false, nil, nil, nil, nil, nil
			if data[v] == '{' {
				e = jsonscan.ValidObject(data, v, 3, delta)
				c.deltaScanned = true
			} else {
				e = jsonscan.SkipValid(data, v, 3)
			}
			if e >= 0 {
				c.delta = data[v:e]
			}
		case "index", "finish_reason":
			if e = jsonscan.SkipValid(data, v, 3); e >= 0 {
				if key[0] == 'i' {
					m.c0.index = data[v:e]
				} else {
					m.c0.finish = data[v:e]
				}
			}
		default:
			e = jsonscan.SkipValid(data, v, 3)
		}
		return e
	}
	elem := func(n, v int) int {
		var e int
		if n == 0 && data[v] == '{' {
			e = jsonscan.ValidObject(data, v, 2, choice)
			m.c0OK = true
		} else {
			e = jsonscan.SkipValid(data, v, 2)
		}
		if e >= 0 {
			if n < maxElems {
				m.elems[n] = data[v:e]
				m.nElems = n + 1
			} else {
				m.elemsOK = false
			}
		}
		return e
	}
	end := jsonscan.ValidObject(data, i, 0, func(key []byte, escaped bool, v int) int {
		if escaped {
			return -1
		}
		var e int
		if string(key) == "choices" {
			// A later choices replaces everything of an earlier one.
			m.nElems, m.c0OK, m.c0 = 0, false, choiceMembers{}
			if data[v] == '[' {
				m.elemsOK = true
				e = jsonscan.ValidArray(data, v, 1, elem)
			} else {
				m.elemsOK = false
				e = jsonscan.SkipValid(data, v, 1)
			}
		} else {
			e = jsonscan.SkipValid(data, v, 1)
		}
		if e >= 0 {
			m.set(key, data[v:e])
		}
		return e
	})
	return end >= 0 && jsonscan.SkipSpace(data, end) == len(data)
}

// scanMemo remembers a chunk that topMembers.scan accepted and whose first
// choice's delta content is a string: doc is a copy of the chunk, m its
// members as slices of doc, and [at, end) the content string's bytes.
//
// Chunks of one stream differ mostly in that string: id, model, the
// choice's index and everything after the text repeat. A chunk that is the
// same bytes as doc but for another valid string at doc[at:end] gets the
// same verdict from scan, and the same members at shifted places: scan's
// every decision rests on the keys and on the first byte of values, and the
// string is a value whose first byte is a quote in both, a complete token
// nested alike, holding no member of its own. reuse checks exactly that
// and so spares the chunk its scan, whose verdict it equals.
type scanMemo struct {
	doc     []byte
	m       topMembers
	at, end int
	ok      bool
}

// maxMemo bounds the chunk a scanMemo copies.
const maxMemo = 4 << 10

// keep remembers data and its members m (slices of data), when data's
// content is a string.
func (s *scanMemo) keep(data []byte, m *topMembers) {
	s.ok = false
	c := m.c0.content
	if !m.c0OK || !m.c0.deltaScanned || len(c) < 2 || c[0] != '"' || len(data) > maxMemo {
		return
	}
	s.doc = append(s.doc[:0], data...)
	s.at = offset(data, c)
	s.end = s.at + len(c)
	s.m = *m
	s.m.remap(data, s.doc, 0, 0)
	s.ok = true
}

// reuse sets m to data's members and reports true when data is the
// remembered chunk with another valid string for its content; it leaves m
// alone and reports false otherwise.
func (s *scanMemo) reuse(data []byte, m *topMembers) bool {
	if !s.ok {
		return false
	}
	tail := len(s.doc) - s.end // the bytes after the content string
	end := len(data) - tail
	if end <= s.at || data[s.at] != '"' ||
		string(data[:s.at]) != string(s.doc[:s.at]) || string(data[end:]) != string(s.doc[s.end:]) {
		return false
	}
	if jsonscan.SkipValid(data, s.at, 4) != end {
		return false // not one valid string, as scan's delta member checks it
	}
	*m = s.m
	m.remap(s.doc, data, s.end, end-s.end)
	m.c0.content = data[s.at:end]
	return true
}

// offset is the index in b of v, a slice of b.
func offset(b, v []byte) int { return cap(b) - cap(v) }

// remap moves m's slices of from to the same places in to, shifting by
// shift each start or end at or after index after.
func (m *topMembers) remap(from, to []byte, after, shift int) {
	mv := func(v []byte) []byte {
		if v == nil {
			return nil
		}
		i := offset(from, v)
		j := i + len(v)
		if i >= after {
			i += shift
		}
		if j >= after {
			j += shift
		}
		return to[i:j] // two indices: offset needs the capacity
	}
	m.id, m.model, m.err, m.object = mv(m.id), mv(m.model), mv(m.err), mv(m.object)
	m.code, m.message, m.choices, m.usage = mv(m.code), mv(m.message), mv(m.choices), mv(m.usage)
	for k := range m.nElems {
		m.elems[k] = mv(m.elems[k])
	}
	c := &m.c0
	c.index, c.delta, c.finish = mv(c.index), mv(c.delta), mv(c.finish)
	c.content, c.rc, c.r, c.tools, c.fc = mv(c.content), mv(c.rc), mv(c.r), mv(c.tools), mv(c.fc)
}

// validJSON reports whether data is what encoding/json.Valid accepts. The
// allocation-free jsonscan.Valid decides almost every event at a fraction of
// json.Valid's cost; only a document it refuses (invalid, or nested deeper
// than jsonscan.MaxDepth) is asked of json.Valid, so the verdict is
// json.Valid's own.
func validJSON(data []byte) bool { return jsonscan.Valid(data) || json.Valid(data) }

// arguments keeps valid JSON argument text as it is, and wraps anything
// else as a JSON string so that it is never mistaken for an object.
func arguments(s string) json.RawMessage {
	if json.Valid([]byte(s)) {
		return json.RawMessage(s)
	}
	b, _ := json.Marshal(s)
	return b
}

// ---------------------------------------------------------------------------
// Exact-key access to JSON that json.Valid accepted, through jsonscan's
// iterators, which rely on that validation: they never see malformed input.

// object returns an iterator over v's members; ok is false when v is not
// an object (the zero iterator then yields nothing).
func object(v []byte) (jsonscan.Members, bool) {
	v = jsonscan.TrimSpace(v)
	if len(v) == 0 || v[0] != '{' {
		return jsonscan.Members{}, false
	}
	return jsonscan.ObjectMembers(v), true
}

// array returns an iterator over v's elements; ok is false when v is not
// an array (the zero iterator then yields nothing).
func array(v []byte) (jsonscan.Elements, bool) {
	v = jsonscan.TrimSpace(v)
	if len(v) == 0 || v[0] != '[' {
		return jsonscan.Elements{}, false
	}
	return jsonscan.ArrayElements(v), true
}

// str decodes a JSON string value.
func str(v []byte) (string, bool) {
	if len(v) < 2 || v[0] != '"' {
		return "", false
	}
	inner := v[1 : len(v)-1]
	if bytes.IndexByte(inner, '\\') < 0 {
		return string(inner), true
	}
	return string(jsonscan.Unquote(make([]byte, 0, len(inner)), v)), true
}

// strIs reports whether v is the JSON string s.
func strIs(v []byte, s string) bool {
	if len(v) >= 2 && v[0] == '"' && bytes.IndexByte(v, '\\') < 0 {
		return string(v[1:len(v)-1]) == s
	}
	t, ok := str(v)
	return ok && t == s
}

// optStrAs is optStr that returns prev, without allocating, when v is the
// JSON string prev.
func optStrAs(v []byte, prev string) (string, bool) {
	if prev != "" && strIs(v, prev) {
		return prev, true
	}
	return optStr(v)
}

// strOr returns the string value v, or "" when v is anything else.
func strOr(v []byte) string {
	s, _ := str(v)
	return s
}

// optStr decodes an optional string: absent or null is "".
func optStr(v []byte) (string, bool) {
	if v == nil || isNull(v) {
		return "", true
	}
	return str(v)
}

// optInt decodes an optional integer: absent or null is 0.
func optInt(v []byte) (int, bool) {
	if v == nil || isNull(v) {
		return 0, true
	}
	if len(v) == 1 && v[0] >= '0' && v[0] <= '9' {
		return int(v[0] - '0'), true
	}
	n, err := strconv.Atoi(string(v))
	return n, err == nil
}

func isNull(v []byte) bool { return string(v) == "null" }

// ---------------------------------------------------------------------------
