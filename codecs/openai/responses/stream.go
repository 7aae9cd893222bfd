package responses

import (
	"bytes"
	"errors"
	"strings"
	"unicode/utf8"

	"github.com/recourse-dev/recourse/chat"
	"github.com/recourse-dev/recourse/codec"
	"github.com/recourse-dev/recourse/codecs/internal/frames"
	"github.com/recourse-dev/recourse/codecs/internal/openaiwire"
	"github.com/recourse-dev/recourse/codecs/internal/sse"
)

// ErrIncomplete is the End error of a stream that reached HTTP EOF before
// its terminal event (response.completed, response.incomplete,
// response.failed or error): it fails closed (R19.4).
var ErrIncomplete = errors.New("recourse: responses stream ended before its terminal event")

// lifecycle lists the stream events that carry no output (R19.3): they
// are frames with an Index but no semantic evidence.
var lifecycle = map[string]bool{
	"response.created":                      true,
	"response.queued":                       true,
	"response.in_progress":                  true,
	"response.output_item.done":             true,
	"response.content_part.added":           true,
	"response.content_part.done":            true,
	"response.output_text.done":             true,
	"response.output_text.annotation.added": true,
	"response.refusal.done":                 true,
	"response.function_call_arguments.done": true,
	"response.reasoning_text.done":          true,
	"response.reasoning_summary_part.added": true,
	"response.reasoning_summary_part.done":  true,
	"response.reasoning_summary_text.done":  true,
}

// call is a tool call being assembled from a stream.
type call struct {
	id, name string
	args     strings.Builder
	// final holds the arguments of the call's output_item.done, which win
	// over the deltas when set.
	final    string
	hasFinal bool
}

// StreamDecoder is the codec.StreamDecoder of one attempt of a streamed
// Responses API request: it frames the SSE stream, classifies each event
// (R19.3) and queues one codec.Frame per event. It also keeps the resume
// position a later background resume will need: [StreamDecoder.ResponseID],
// [StreamDecoder.DeliveredSequence] and [StreamDecoder.FrameSequence]. A StreamDecoder is used by one
// attempt and is not safe for concurrent use; the Attempt serializes access
// to it.
type StreamDecoder struct {
	front sse.Front
	q     frames.Queue
	// seqs runs beside q: the sequence_number of each queued frame, or -1.
	seqs    []int64
	seqHead int
	counts  codec.Counts

	discardText     bool
	content, reason strings.Builder
	refused         bool
	calls           map[int]*call
	id, model       string
	delivered       int64
	hasDelivered    bool
	last            int64 // of the frame Next returned last, or -1
	background      bool
	// providerFinish makes response.incomplete the accepted end
	// (codec.RequestInfo.ProviderFinish).
	providerFinish bool
	// skip is the highest sequence number read so far, or the cursor of a
	// resume read (-1: none): an event at or below it was handed over
	// before, or repeats one that was, and is dropped (R19.9).
	skip int64
	// scratch unescapes the delta of the fast path (fast.go); reference,
	// set by tests only, turns that path off.
	scratch   []byte
	reference bool
}

var (
	_ codec.StreamDecoder = (*StreamDecoder)(nil)
	_ codec.BufferFreer   = (*StreamDecoder)(nil)
)

// FreeBuffers gives the decoder's line buffer back for the next stream's
// decoder (codec.BufferFreer); its queued frames own their bytes and stay
// valid, and a Write afterwards starts a new buffer. The engine calls it
// when the stream's body is closed.
func (d *StreamDecoder) FreeBuffers() { d.front.Free() }

// NewStreamDecoder returns the stream decoder for a request described by
// info: with info.DropText its terminal Completion has empty Content and
// Reasoning (no text is accumulated, so a stream holds memory bounded by
// its tool calls and one event), and with info.TypedFrames only error
// frames carry Raw. [Codec.NewObserver] returns one for a streaming
// request.
func NewStreamDecoder(info codec.RequestInfo) *StreamDecoder {
	d := &StreamDecoder{discardText: info.DropText, delivered: -1, last: -1, skip: -1, background: info.Background,
		providerFinish: info.ProviderFinish}
	d.q.ErrorRawOnly = info.TypedFrames
	return d
}

// Observed returns the semantic evidence decoded so far (R13.2): the sum of
// the queued frames' Semantic counts and the completed tool calls of the
// terminal frame, plus, to fail closed, the evidence of an output event
// this decoder does not deliver (an unknown *.delta event counts its delta
// bytes as content, an output item other than a message, a reasoning item
// or a function call counts as a tool fragment).
func (d *StreamDecoder) Observed() codec.Counts { return d.counts }

// Next returns the next queued frame, or ok=false when none is queued.
func (d *StreamDecoder) Next() (codec.Frame, bool) {
	f, ok := d.q.Next()
	if !ok {
		d.seqs, d.seqHead = d.seqs[:0], 0
		return f, false
	}
	d.last = d.seqs[d.seqHead]
	if d.last >= 0 {
		d.delivered, d.hasDelivered = d.last, true
	}
	d.seqHead++
	return f, true
}

// ResponseID returns the ID of the response the stream is producing, as the
// provider sent it in the response of response.created (or of the first
// event carrying one), or "" before such an event was decoded. A background
// resume (GET /v1/responses/{id}?stream=true) names the response by it.
func (d *StreamDecoder) ResponseID() string { return d.id }

// DeliveredSequence returns the sequence_number of the last frame that Next
// returned whose event carried one, and ok=false when no such frame was
// returned yet. Frames are returned in wire order, so a background resume
// asks for the events after it (starting_after); frames still queued were
// not handed over and are not counted. Sequence numbers are kept as sent:
// the decoder does not check that they increase.
func (d *StreamDecoder) DeliveredSequence() (seq int64, ok bool) {
	return d.delivered, d.hasDelivered
}

// FrameSequence returns the sequence_number of the event of the frame that
// Next returned last, and ok=false when that frame's event carried none (a
// keepalive, a malformed event, an event without one) or Next returned no
// frame yet. Called after each Next, it reads every frame's sequence number
// in wire order.
func (d *StreamDecoder) FrameSequence() (seq int64, ok bool) {
	return d.last, d.last >= 0
}

// End reports an incomplete stream unless the terminal frame was decoded.
// After an error frame it returns nil: the frame carries the error. A
// streaming request answered with a plain JSON error object instead of an
// event stream ({"error":{…}} in a 2xx) ends with a *codec.ProviderError:
// the provider refused the request, which is never resent (R4.7).
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
		d.push(codec.Frame{Err: err}, -1)
	}
}

// push queues f with the sequence number of its event (-1: none) and adds
// its evidence to the counts.
func (d *StreamDecoder) push(f codec.Frame, seq int64) {
	d.skip = max(d.skip, seq)
	d.counts = d.counts.Add(f.Semantic())
	d.q.Push(f)
	d.seqs = append(d.seqs, seq)
}

func (d *StreamDecoder) malformed(raw []byte, what string, err error) {
	d.push(codec.Frame{Raw: raw, Err: openaiwire.ProtocolError(what, err)}, -1)
}

// fast decodes ev on the fast delta path and reports whether it could
// (a plain text, refusal, reasoning or arguments delta).
func (d *StreamDecoder) fast(ev sse.Event) bool {
	f, seq, kind, ok := fastDelta(ev, &d.scratch)
	if !ok {
		return false
	}
	if seq >= 0 && seq <= d.skip {
		// Nothing the consumer had is handed over again (R19.9).
		return true
	}
	d.refused = d.refused || kind == refusalDelta
	if kind == argumentsPiece {
		fr := f.Fragments[0]
		d.call(fr.Index).args.WriteString(fr.Arguments)
	}
	d.keep(f)
	d.push(f, seq)
	return true
}

// event decodes one SSE event into one frame.
func (d *StreamDecoder) event(ev sse.Event) {
	if !d.reference && d.fast(ev) {
		return
	}
	raw := ev.Raw // Push copies what it keeps
	data := bytes.TrimSpace(ev.Data)
	switch {
	case len(data) == 0 && ev.Event == "error":
		d.push(codec.Frame{Raw: raw, Err: &codec.ProviderError{}}, -1)
		return
	case len(data) == 0:
		// Comments, an event or id field alone, or blank data (R14.2).
		d.push(codec.Frame{Raw: raw, Keepalive: true}, -1)
		return
	case ev.Done:
		d.malformed(raw, "stream ended with [DONE] before its terminal event", nil)
		return
	case !utf8.Valid(data):
		d.malformed(raw, "stream event is not valid UTF-8", nil)
		return
	}
	top, err := openaiwire.ParseObject(data, "stream event")
	if err != nil || top == nil {
		if ev.Event == "error" {
			d.push(codec.Frame{Raw: raw, Err: &codec.ProviderError{}}, -1)
			return
		}
		d.malformed(raw, "stream event is not a JSON object", err)
		return
	}
	seq := int64(-1)
	if top.Has("sequence_number") {
		if err := top.Get("sequence_number", &seq); err != nil || seq < 0 {
			d.malformed(raw, "stream event sequence_number is not a non-negative integer", err)
			return
		}
	}
	if seq >= 0 && seq <= d.skip {
		// Nothing the consumer had is handed over again (R19.9): not on
		// a resume read, nor an event a provider sent twice.
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
	if typ == "error" || ev.Event == "error" {
		d.push(codec.Frame{Raw: raw, Err: eventError(top)}, seq)
		return
	}
	var resp openaiwire.Object
	if err := top.Get("response", &resp); err != nil {
		d.malformed(raw, "stream event response is not an object", err)
		return
	}
	if resp != nil {
		if err := d.remember(resp); err != nil {
			d.push(codec.Frame{Raw: raw, Err: err}, -1)
			return
		}
	}
	f := codec.Frame{Raw: raw}
	if what := d.typed(typ, top, resp, &f); what != "" {
		d.malformed(raw, what, nil)
		return
	}
	d.keep(f)
	d.push(f, seq)
}

// typed decodes the event top of type typ (with its response member resp,
// or nil) into f; it returns what makes the event malformed, or "".
func (d *StreamDecoder) typed(typ string, top, resp openaiwire.Object, f *codec.Frame) (what string) {
	switch typ {
	case "":
		what = "stream event has no type"
	case "response.output_text.delta":
		f.Content, what = d.delta(top)
	case "response.refusal.delta":
		f.Content, what = d.delta(top)
		d.refused = true
	case "response.reasoning_text.delta", "response.reasoning_summary_text.delta":
		f.Reasoning, what = d.delta(top)
	case "response.function_call_arguments.delta":
		what = d.argumentsDelta(top, f)
	case "response.output_item.added":
		what = d.itemAdded(top, f)
	case "response.output_item.done":
		what = d.itemDone(top)
	case "response.completed":
		d.completed(f, resp)
	case "response.incomplete":
		d.incomplete(f, resp)
	case "response.failed":
		f.Err = failedError(resp)
	default:
		if !lifecycle[typ] {
			d.unknown(typ, top)
		}
	}
	return what
}

// keep accumulates f's text for the terminal Completion, unless the request
// drops it.
func (d *StreamDecoder) keep(f codec.Frame) {
	if !d.discardText {
		d.content.WriteString(f.Content)
		d.reason.WriteString(f.Reasoning)
	}
}

// remember keeps the ID and model of the response an event carries.
func (d *StreamDecoder) remember(resp openaiwire.Object) error {
	var id, model string
	if err := resp.Get("id", &id); err != nil {
		return openaiwire.ProtocolError("stream response id is not a string", err)
	}
	if err := resp.Get("model", &model); err != nil {
		return openaiwire.ProtocolError("stream response model is not a string", err)
	}
	if d.id == "" {
		d.id = id
	}
	if model != "" {
		d.model = model
	}
	return nil
}

// delta returns the "delta" string of a text delta event.
func (d *StreamDecoder) delta(top openaiwire.Object) (string, string) {
	var s string
	if err := top.Get("delta", &s); err != nil {
		return "", "stream event delta is not a string"
	}
	return s, ""
}

// evidence is the provider evidence of the response of a terminal event,
// and the protocol error of a usage that is not one.
func (d *StreamDecoder) evidence(resp openaiwire.Object) (*chat.Completion, error) {
	comp := &chat.Completion{Model: d.model, ID: d.id}
	if resp.Has("usage") {
		u, err := decodeUsage(resp)
		if err != nil {
			return nil, err
		}
		comp.Usage = u
	}
	return comp, nil
}

// completed decodes response.completed, the accepted end (R19.4): the Done
// frame whose Completion holds the streamed text, the assembled tool calls,
// the model, ID and usage. A completed event whose response says it is
// incomplete or failed ends the stream as that status does.
func (d *StreamDecoder) completed(f *codec.Frame, resp openaiwire.Object) {
	switch resp.Str("status") {
	case "incomplete":
		d.incomplete(f, resp)
		return
	case "failed":
		f.Err = failedError(resp)
		return
	}
	comp, err := d.evidence(resp)
	if err != nil {
		f.Err = err
		return
	}
	comp.Message = chat.Message{Role: chat.Assistant, Content: d.content.String(), Reasoning: d.reason.String(), ToolCalls: d.toolCalls()}
	comp.FinishReason = completedFinish(len(comp.Message.ToolCalls) > 0, d.refused)
	f.Done, f.Completion, f.FinishReason = true, comp, comp.FinishReason
}

// incomplete decodes response.incomplete: terminal at once with an
// *codec.IncompleteError (R13.3, R19.4) whose finish
// reason maps incomplete_details.reason; its Completion carries only the
// provider evidence, never a message or a tool call. With
// codec.RequestInfo.ProviderFinish (a drop-in stream) it is the provider's
// answer instead: the Done frame, whose Completion has that finish, the
// evidence and the text, and no tool call (R13.3, R13.4).
func (d *StreamDecoder) incomplete(f *codec.Frame, resp openaiwire.Object) {
	var details openaiwire.Object
	_ = resp.Get("incomplete_details", &details) // a malformed detail is no reason
	finish := incompleteFinish(details.Str("reason"))
	comp, err := d.evidence(resp)
	if err != nil {
		// The stream still ended incomplete: only its evidence is lost.
		comp = &chat.Completion{Model: d.model, ID: d.id}
	}
	comp.FinishReason = finish
	f.FinishReason, f.Completion = finish, comp
	if d.providerFinish {
		comp.Message = chat.Message{Role: chat.Assistant, Content: d.content.String(), Reasoning: d.reason.String()}
		f.Done = true
		return
	}
	f.Err = &codec.IncompleteError{FinishReason: finish}
}

// eventError is the provider error of an error event: its code and message
// at the top level, or those of a nested "error" object.
func eventError(top openaiwire.Object) *codec.ProviderError {
	if pe := providerError(top); pe != nil {
		return pe
	}
	return &codec.ProviderError{Code: top.Str("code"), Message: top.Str("message")}
}

// unknown accounts an event type this decoder does not know: one that
// carries a delta, or whose type ends in ".delta", is output it does not
// deliver, and is observed as content (its delta's bytes, at least 1) so
// that a failure after it is never resent; any other is lifecycle.
func (d *StreamDecoder) unknown(typ string, top openaiwire.Object) {
	if !top.Has("delta") && !strings.HasSuffix(typ, ".delta") {
		return
	}
	var s string
	n := int64(1)
	if top.Get("delta", &s) == nil && len(s) > 0 {
		n = int64(len(s))
	}
	d.counts.ContentBytes += n
}
