// Package ssechat decodes OpenAI-style chat completion streams
// (Server-Sent Events of chat.completion.chunk objects) into layer.Frames.
// The OpenAI and oMLX codecs share it.
//
// Acceptance (R13.3): a finish reason of "stop" or "tool_calls" followed by
// "data: [DONE]" ends the stream. A "length" finish (or any other finish
// reason) is terminal at once, even without [DONE]: the frame's error is a
// *layer.StreamError with reason incomplete_completion. A data event with a
// top-level "error" object, or an "event: error", is an in-band provider
// error, even when [DONE] follows. EOF before acceptance is an incomplete
// stream. SSE comments, blank events and {"model":"keepalive"} chunks are
// keepalives (R14.2). JSON is decoded, not pattern-matched: escaped keys and
// whitespace-prefixed data lines mean what they say.
package ssechat

import (
	"bytes"
	"encoding/json"
	"errors"
	"sort"
	"strings"
	"unicode/utf8"

	"github.com/recourse-dev/recourse/chat"
	"github.com/recourse-dev/recourse/internal/sse"
	"github.com/recourse-dev/recourse/layer"
)

// ErrIncomplete is the End error of a stream that reached HTTP EOF before
// its terminal frame.
var ErrIncomplete = errors.New("recourse: stream ended before its terminal frame")

// Decoder is a layer.StreamDecoder for one attempt. It is not safe for
// concurrent use.
type Decoder struct {
	framer  *sse.Framer
	queue   []layer.Frame
	head    int
	counts  layer.Counts
	index   int
	finish  string
	calls   map[int]*chat.ToolCallFragment
	content strings.Builder
	reason  strings.Builder
	model   string
	id      string
	usage   *chat.Usage
	ended   bool // terminal frame (or error) emitted
	legacy  *chat.ToolCallFragment
}

// New returns a decoder.
func New() *Decoder { return &Decoder{framer: sse.NewFramer(0)} }

var _ layer.StreamDecoder = (*Decoder)(nil)

// Observed returns the semantic evidence decoded so far.
func (d *Decoder) Observed() layer.Counts { return d.counts }

// Next returns the next queued frame.
func (d *Decoder) Next() (layer.Frame, bool) {
	if d.head >= len(d.queue) {
		d.queue, d.head = d.queue[:0], 0
		return layer.Frame{}, false
	}
	f := d.queue[d.head]
	d.queue[d.head] = layer.Frame{}
	d.head++
	return f, true
}

// End reports an incomplete stream unless the terminal frame was decoded.
func (d *Decoder) End() error {
	if d.ended {
		return nil
	}
	return ErrIncomplete
}

// Write frames and decodes p.
func (d *Decoder) Write(p []byte) {
	if d.ended {
		return
	}
	d.framer.Write(p)
	for !d.ended {
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

func (d *Decoder) push(f layer.Frame) {
	if f.Err != nil || f.Done {
		d.ended = true
	}
	if f.Err == nil && !f.Keepalive {
		f.Index = d.index
		d.index++
	}
	d.queue = append(d.queue, f)
}

type delta struct {
	Content          *string `json:"content"`
	ReasoningContent *string `json:"reasoning_content"`
	Reasoning        *string `json:"reasoning"`
	ToolCalls        []struct {
		Index    int    `json:"index"`
		ID       string `json:"id"`
		Function struct {
			Name      string `json:"name"`
			Arguments string `json:"arguments"`
		} `json:"function"`
	} `json:"tool_calls"`
	FunctionCall *struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	} `json:"function_call"`
}

type chunk struct {
	ID      string          `json:"id"`
	Model   string          `json:"model"`
	Error   json.RawMessage `json:"error"`
	Object  string          `json:"object"`
	Message string          `json:"message"`
	Choices []struct {
		Index        int     `json:"index"`
		Delta        delta   `json:"delta"`
		FinishReason *string `json:"finish_reason"`
	} `json:"choices"`
	Usage *struct {
		PromptTokens     int `json:"prompt_tokens"`
		CompletionTokens int `json:"completion_tokens"`
	} `json:"usage"`
}

func (d *Decoder) event(ev sse.Event) {
	raw := bytes.Clone(ev.Raw)
	if ev.Keepalive() {
		d.push(layer.Frame{Raw: raw, Keepalive: true})
		return
	}
	if ev.Done {
		d.done(raw)
		return
	}
	if !ev.HasData {
		// An event with only an event: field carries nothing.
		d.push(layer.Frame{Raw: raw, Keepalive: true})
		return
	}
	if !utf8.Valid(ev.Data) {
		d.push(layer.Frame{Raw: raw, Err: &layer.ProtocolError{What: "stream event is not valid UTF-8"}})
		return
	}
	var c chunk
	if err := json.Unmarshal(ev.Data, &c); err != nil {
		if ev.Event == "error" {
			d.push(layer.Frame{Raw: raw, Err: &layer.ProviderError{}})
			return
		}
		d.push(layer.Frame{Raw: raw, Err: &layer.ProtocolError{What: "stream event is not a JSON chunk", Err: err}})
		return
	}
	if ev.Event == "error" || (len(c.Error) > 0 && string(c.Error) != "null") || c.Object == "error" {
		d.push(layer.Frame{Raw: raw, Err: providerError(c)})
		return
	}
	if c.Model != "" {
		d.model = c.Model
	}
	if c.ID != "" {
		d.id = c.ID
	}
	if c.Usage != nil {
		d.usage = &chat.Usage{InputTokens: c.Usage.PromptTokens, OutputTokens: c.Usage.CompletionTokens}
	}
	f := layer.Frame{Raw: raw}
	if len(c.Choices) == 0 && c.Usage == nil && c.ID == "" {
		f.Keepalive = true // {"model":"keepalive"} and other empty chunks
	}
	for _, ch := range c.Choices {
		if ch.Index != 0 {
			continue
		}
		dl := ch.Delta
		if dl.Content != nil {
			f.Content = *dl.Content
		}
		if dl.ReasoningContent != nil {
			f.Reasoning = *dl.ReasoningContent
		} else if dl.Reasoning != nil {
			f.Reasoning = *dl.Reasoning
		}
		for _, tc := range dl.ToolCalls {
			fr := chat.ToolCallFragment{Index: tc.Index, ID: tc.ID, Name: tc.Function.Name, Arguments: tc.Function.Arguments}
			f.Fragments = append(f.Fragments, fr)
			d.addFragment(fr)
		}
		if fc := dl.FunctionCall; fc != nil {
			fr := chat.ToolCallFragment{Index: 0, Name: fc.Name, Arguments: fc.Arguments}
			f.Fragments = append(f.Fragments, fr)
			if d.legacy == nil {
				d.legacy = &chat.ToolCallFragment{}
			}
			d.legacy.Name += fc.Name
			d.legacy.Arguments += fc.Arguments
		}
		if ch.FinishReason != nil && *ch.FinishReason != "" {
			d.finish = *ch.FinishReason
			f.FinishReason = d.finish
		}
	}
	d.content.WriteString(f.Content)
	d.reason.WriteString(f.Reasoning)
	d.counts = d.counts.Add(f.Semantic())
	switch f.FinishReason {
	case "", "stop", "tool_calls", "function_call":
	default:
		// length (and any other finish) is terminal without [DONE] (R13.3).
		f.Err = &layer.StreamError{Reason: layer.StreamIncompleteCompletion, FinishReason: f.FinishReason}
	}
	d.push(f)
}

func providerError(c chunk) *layer.ProviderError {
	var obj struct {
		Code    any    `json:"code"`
		Message string `json:"message"`
	}
	pe := &layer.ProviderError{Message: c.Message}
	if json.Unmarshal(c.Error, &obj) == nil {
		if s, ok := obj.Code.(string); ok {
			pe.Code = s
		}
		pe.Message = obj.Message
	} else {
		var s string
		if json.Unmarshal(c.Error, &s) == nil {
			pe.Message = s
		}
	}
	return pe
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
		d.push(layer.Frame{Raw: raw, Err: &layer.ProtocolError{What: "stream ended without an accepted finish reason"}})
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

// arguments keeps valid JSON argument text as it is, and wraps anything
// else as a JSON string so that it is never mistaken for an object.
func arguments(s string) json.RawMessage {
	if json.Valid([]byte(s)) {
		return json.RawMessage(s)
	}
	b, _ := json.Marshal(s)
	return b
}
