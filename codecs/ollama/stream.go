package ollama

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"

	"github.com/recourse-dev/recourse/codec"
	"github.com/recourse-dev/recourse/codecs/internal/frames"
	"github.com/recourse-dev/recourse/codecs/internal/jsonscan"

	"github.com/recourse-dev/recourse/chat"
	"github.com/recourse-dev/recourse/codecs/internal/ndjson"
)

// ErrIncompleteStream is the End error of a stream that reached HTTP EOF
// before its done:true line.
var ErrIncompleteStream = errors.New("recourse: ollama stream ended before done")

// streamDecoder decodes an /api/chat NDJSON stream into codec.Frame values. A
// blank line is a keepalive; a line with "error" is an in-band provider
// error (Ollama keeps status 200); a done:true line is the terminal frame:
// with done_reason "stop", or with none (an unknown finish: FinishReason
// "", as Decode reads the same unary answer), it is the accepted end
// (R13.3); done_reason "length" (or any other reason) ends the stream with
// an incomplete_completion error naming that reason — unless, with
// codec.RequestInfo.ProviderFinish (a drop-in stream), the reason is a
// documented one: that line is then the accepted end, without tool calls —,
// its content still counted,
// its metrics still reported (R13.6) and its provider evidence (model,
// usage) kept in a Completion without message (R10.5). Ollama sends whole
// tool calls, so every call is one fragment and becomes a completed call
// only at the accepted end.
// A line that is not valid UTF-8, not one JSON object, or does not match the
// /api/chat schema is a *codec.ProtocolError and carries no metrics.
//
// Frames other than keepalives and malformed-line errors are numbered from 1
// (Frame.Index, the progress index of R13.6). Every frame's Raw is its exact
// line, "\n" included (none for a final line framed at End).
//
// A line is a frame once its "\n" arrived. At HTTP EOF (End) a final line
// left without its "\n" is a frame too when it holds one whole JSON value —
// a done:true line so sent is the accepted end, as the official Ollama
// clients parse what remains buffered at the end (R13.3); a final line that
// is not a whole JSON value was cut, and the stream is incomplete
// (ErrIncompleteStream), as before.
type streamDecoder struct {
	framer  *ndjson.Framer
	q       frames.Queue
	counts  codec.Counts
	content strings.Builder
	think   strings.Builder
	calls   []chat.ToolCall
	model   string
	// dropText leaves the terminal Completion's Content and Reasoning empty
	// instead of accumulating them (codec.RequestInfo.DropText).
	dropText bool
	// providerFinish makes a done:true line with a documented done_reason
	// other than "stop" ("length", "load", "unload") the accepted end
	// (codec.RequestInfo.ProviderFinish).
	providerFinish bool
}

func newStreamDecoder(info codec.RequestInfo) *streamDecoder {
	d := &streamDecoder{framer: ndjson.NewFramer(0), dropText: info.DropText, providerFinish: info.ProviderFinish}
	d.q.ErrorRawOnly = info.TypedFrames
	return d
}

var (
	_ codec.StreamDecoder = (*streamDecoder)(nil)
	_ codec.BufferFreer   = (*streamDecoder)(nil)
)

// FreeBuffers gives the decoder's line buffer back for the next stream's
// decoder (codec.BufferFreer); its queued frames own their bytes and stay
// valid.
func (d *streamDecoder) FreeBuffers() { d.framer.Free() }

func (d *streamDecoder) Observed() codec.Counts { return d.counts }

func (d *streamDecoder) Next() (codec.Frame, bool) { return d.q.Next() }

// End frames a final unterminated line that holds one whole JSON value (its
// frames are queued for Next), then reports ErrIncompleteStream unless the
// terminal frame has been queued.
func (d *streamDecoder) End() error {
	if !d.q.Ended() {
		if l, ok := d.framer.Final(); ok && json.Valid(l.Value) {
			d.line(l)
		}
	}
	if d.q.Ended() {
		return nil
	}
	return ErrIncompleteStream
}

func (d *streamDecoder) Write(p []byte) {
	if d.q.Ended() {
		return
	}
	d.framer.Write(p)
	for !d.q.Ended() {
		line, ok, err := d.framer.Next()
		if err != nil {
			d.push(codec.Frame{Err: &codec.ProtocolError{What: "oversized NDJSON line", Err: err}})
			return
		}
		if !ok {
			return
		}
		d.line(line)
	}
}

// push queues f. Frames other than keepalives and malformed-line errors
// take the next Index.
func (d *streamDecoder) push(f codec.Frame) { d.q.Push(f) }

func (d *streamDecoder) line(l ndjson.Line) {
	raw := l.Raw // Push copies what it keeps
	if l.Blank {
		d.push(codec.Frame{Raw: raw, Keepalive: true})
		return
	}
	if err := checkObject(l.Value); err != nil {
		d.push(codec.Frame{Raw: raw, Err: err})
		return
	}
	if err := providerError(l.Value); err != nil {
		d.push(codec.Frame{Raw: raw, Err: err})
		return
	}
	var r wireResponse
	if err := json.Unmarshal(l.Value, &r); err != nil {
		d.push(codec.Frame{Raw: raw, Err: &codec.ProtocolError{What: "line does not match the /api/chat schema", Err: err}})
		return
	}
	if r.Model != "" {
		d.model = r.Model
	}
	f := codec.Frame{Raw: raw}
	if m := r.Message; m != nil {
		f.Content, f.Reasoning = m.Content, m.Thinking
		for _, tc := range m.ToolCalls {
			if tc.Function == nil || tc.Function.Name == "" {
				d.push(codec.Frame{Raw: raw, Err: &codec.ProtocolError{What: "tool call has no function name"}})
				return
			}
			args := tc.Function.Arguments
			if t := jsonscan.TrimSpace(args); len(t) == 0 || string(t) == "null" {
				args = json.RawMessage("{}")
			} else if t[0] != '{' {
				d.push(codec.Frame{Raw: raw, Err: &codec.ProtocolError{What: "tool call arguments are not a JSON object"}})
				return
			}
			f.Fragments = append(f.Fragments, chat.ToolCallFragment{Index: len(d.calls), ID: tc.ID, Name: tc.Function.Name, Arguments: string(args)})
			d.calls = append(d.calls, chat.ToolCall{ID: tc.ID, Name: tc.Function.Name, Arguments: bytes.Clone(args)})
		}
	}
	if !d.dropText {
		d.content.WriteString(f.Content)
		d.think.WriteString(f.Reasoning)
	}
	d.counts = d.counts.Add(f.Semantic())
	if r.Done == nil || !*r.Done {
		d.push(f)
		return
	}
	f.FinishReason = r.DoneReason
	if m, err := DecodeMetrics(l.Value); err == nil {
		f.Metrics = m
	}
	comp := &chat.Completion{FinishReason: r.DoneReason, Model: d.model}
	comp.Usage = r.usage()
	if r.DoneReason != "stop" && r.DoneReason != "" && d.providerFinish && codec.DocumentedFinish(r.DoneReason) {
		// A drop-in client's length finish: the end the provider sent,
		// with its text and evidence, never a tool call (R13.3, R13.4).
		comp.Message = chat.Message{Role: chat.Assistant, Content: d.content.String(), Reasoning: d.think.String()}
		f.Done, f.Completion = true, comp
		d.push(f)
		return
	}
	if r.DoneReason != "stop" && r.DoneReason != "" {
		// The provider's evidence (model, usage) is kept for Inspect, as an
		// accepted completion's would be; no message, no tool call (R10.5,
		// R13.3).
		f.Err = &codec.IncompleteError{FinishReason: r.DoneReason}
		f.Completion = comp
		d.push(f)
		return
	}
	comp.Message = chat.Message{Role: chat.Assistant, Content: d.content.String(), Reasoning: d.think.String(), ToolCalls: d.calls}
	f.Done, f.Completion = true, comp
	d.counts.CompletedToolCalls += int64(len(d.calls))
	d.push(f)
}
