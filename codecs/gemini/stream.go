package gemini

import (
	"errors"
	"strings"
	"unicode/utf8"

	"github.com/recourse-dev/recourse/chat"
	"github.com/recourse-dev/recourse/codec"
	"github.com/recourse-dev/recourse/codecs/internal/frames"
	"github.com/recourse-dev/recourse/codecs/internal/jsonscan"
	"github.com/recourse-dev/recourse/codecs/internal/sse"
)

// ErrIncompleteStream is the End error of a stream that reached HTTP EOF
// before any candidate's finish reason.
var ErrIncompleteStream = errors.New("recourse: gemini stream ended before a finish reason")

// streamDecoder decodes a streamGenerateContent?alt=sse stream into
// codec.Frame values (R23.5):
//   - an event without data, or with blank data, is a keepalive;
//   - data: {"error":{…}} is a *codec.ProviderError whose Status is the
//     error's HTTP code (R23.3);
//   - data: {GenerateContentResponse} is a frame, read in one pass with its
//     keys matched exactly (R14.2): the first candidate's text parts are
//     its Content, thought parts its Reasoning, each functionCall
//     part one whole tool-call fragment (the API sends a call whole);
//   - a finish reason STOP or CONTINUATION is remembered, and the stream is
//     accepted at HTTP EOF with a Done frame of its own (no Raw) whose
//     Completion holds the text, the tool calls and the evidence; chunks
//     after the finish (usage alone) are ordinary frames;
//   - MAX_TOKENS and every other finish reason, and a prompt blocked
//     before any candidate, end the stream at once: the frame keeps its
//     content, its error is a *codec.IncompleteError with
//     the neutral finish reason ("length" for MAX_TOKENS), and its
//     Completion holds only the evidence — except MAX_TOKENS with
//     codec.RequestInfo.ProviderFinish (a drop-in client), which is
//     accepted at HTTP EOF like STOP, its Done frame completing no tool
//     call;
//   - data that is not valid UTF-8 or JSON, or not a response object, is a
//     *codec.ProtocolError.
//
// At EOF without an accepted finish, End reports ErrIncompleteStream, or,
// when the answer was one JSON error document instead of a stream, its
// *codec.ProviderError.
type streamDecoder struct {
	front    sse.Front
	q        frames.Queue
	counts   codec.Counts
	content  strings.Builder
	think    strings.Builder
	calls    []chat.ToolCall
	model    string
	id       string
	usage    *chat.Usage
	finish   string // the accepted finish reason, neutral; "" until one
	parts    []part // the last event's parts, an array reused by the next
	dropText bool
	// providerFinish makes MAX_TOKENS, for a drop-in client, an end
	// accepted at HTTP EOF like STOP, whose Done frame completes no tool
	// call (codec.RequestInfo.ProviderFinish, R13.3); provided says the
	// remembered finish is such a one.
	providerFinish, provided bool
	// ckpts are the checkpoints decoded and not yet handed over, in order;
	// at is the last one Next handed over, and outAfter says that a frame
	// with output was handed over after it (R23.9).
	ckpts    []checkpoint
	at       checkpoint
	outAfter bool
}

// checkpoint is a chunk that carried a continuation token the stream can
// be continued from (R23.9), and what the decoder had decoded up to and
// including it.
type checkpoint struct {
	index          int // the chunk's frame Index
	token          string
	content, think int // the lengths of the text decoded
	calls          int
	counts         codec.Counts
	model, id      string
	usage          *chat.Usage
}

func newStreamDecoder(info codec.RequestInfo) *streamDecoder {
	d := &streamDecoder{front: sse.NewFront("{["), dropText: info.DropText, providerFinish: info.ProviderFinish}
	d.q.ErrorRawOnly = info.TypedFrames
	return d
}

var (
	_ codec.StreamDecoder = (*streamDecoder)(nil)
	_ codec.BufferFreer   = (*streamDecoder)(nil)
)

// FreeBuffers gives the decoder's line buffer back (codec.BufferFreer).
func (d *streamDecoder) FreeBuffers() { d.front.Free() }

// Observed returns the semantic evidence decoded so far.
func (d *streamDecoder) Observed() codec.Counts { return d.counts }

// Next returns the next queued frame, and remembers the last checkpoint it
// handed over and whether output came after it (R23.9).
func (d *streamDecoder) Next() (codec.Frame, bool) {
	f, ok := d.q.Next()
	if !ok {
		return f, false
	}
	if len(d.ckpts) > 0 && f.Index == d.ckpts[0].index {
		d.at, d.outAfter = d.ckpts[0], false
		d.ckpts = d.ckpts[1:]
	} else if f.Content != "" || f.Reasoning != "" || len(f.Fragments) > 0 {
		d.outAfter = true
	}
	return f, true
}

// Write frames and decodes p. Bytes after a terminal or error frame are
// ignored.
func (d *streamDecoder) Write(p []byte) {
	if err := d.front.Decode(p, d.q.Ended, d.event); err != nil {
		d.q.Push(codec.Frame{Err: err})
	}
}

// End accepts a stream whose finish reason was STOP or CONTINUATION by
// queuing its Done frame, and otherwise reports why the stream is
// incomplete. After an error or terminal frame it returns nil.
func (d *streamDecoder) End() error {
	if d.q.Ended() {
		return nil
	}
	if d.finish != "" {
		comp := d.completion(true)
		if d.provided {
			// The provider's own limit: its answer, but no tool call of it
			// is complete (R13.4).
			comp.Message.ToolCalls = nil
		} else {
			d.counts.CompletedToolCalls += int64(len(d.calls))
		}
		d.q.Push(codec.Frame{Done: true, FinishReason: d.finish, Completion: comp})
		return nil
	}
	if doc, ok := d.front.Document(); ok {
		if st, ok := parseStatus(doc); ok {
			return statusError(&st)
		}
	}
	return ErrIncompleteStream
}

// completion returns the stream's completion: with its message for an
// accepted end, with the evidence alone otherwise (R10.5).
func (d *streamDecoder) completion(accepted bool) *chat.Completion {
	c := &chat.Completion{FinishReason: d.finish, Model: d.model, ID: d.id, Usage: d.usage}
	if accepted {
		c.Message = chat.Message{Role: chat.Assistant, Content: d.content.String(), Reasoning: d.think.String(), ToolCalls: d.calls}
	}
	return c
}

func (d *streamDecoder) event(ev sse.Event) {
	raw := ev.Raw // Push copies what it keeps
	data := jsonscan.TrimSpace(ev.Data)
	switch {
	case ev.Event == "error":
		pe := &codec.ProviderError{}
		if st, ok := parseStatus(data); ok {
			pe = statusError(&st)
		}
		d.q.Push(codec.Frame{Raw: raw, Err: pe})
	case len(data) == 0:
		d.q.Push(codec.Frame{Raw: raw, Keepalive: true})
	default:
		d.chunk(raw, data)
	}
}

func protocolFrame(raw []byte, what string, err error) codec.Frame {
	return codec.Frame{Raw: raw, Err: &codec.ProtocolError{What: what, Err: err}}
}

// chunk decodes one data event.
// It is one function of more than 80 lines because its checks follow the
// precedence of a chunk's verdicts in reading order (UTF-8, JSON, schema,
// error, parts, finish), each early return ending the chunk.
func (d *streamDecoder) chunk(raw, data []byte) {
	if !utf8.Valid(data) {
		d.q.Push(protocolFrame(raw, "event data is not valid UTF-8", nil))
		return
	}
	if data[0] != '{' || !jsonscan.Valid(data) {
		d.q.Push(protocolFrame(raw, "event data is not a JSON object", nil))
		return
	}
	c, err := parseChunk(data, d.model, d.id, d.parts)
	d.parts = c.parts
	if err != nil {
		d.q.Push(protocolFrame(raw, "event does not match the GenerateContentResponse schema", err))
		return
	}
	if c.errv != nil {
		pe := &codec.ProviderError{}
		if st, ok := parseStatus(data); ok {
			pe = statusError(&st)
		}
		d.q.Push(codec.Frame{Raw: raw, Err: pe})
		return
	}
	if c.model != "" {
		d.model = c.model
	}
	if c.id != "" {
		d.id = c.id
	}
	if u := c.usage; u != nil {
		d.usage = &chat.Usage{InputTokens: u.PromptTokenCount, OutputTokens: u.CandidatesTokenCount + u.ThoughtsTokenCount}
	}
	f := codec.Frame{Raw: raw}
	finish := c.finish
	for _, p := range c.parts {
		switch {
		case p.call:
			tc, err := toolCall(p.callID, p.callName, p.args, len(d.calls))
			if err != nil {
				d.q.Push(codec.Frame{Raw: raw, Err: err})
				return
			}
			f.Fragments = append(f.Fragments, chat.ToolCallFragment{Index: len(d.calls), ID: tc.ID, Name: tc.Name, Arguments: string(tc.Arguments)})
			d.calls = append(d.calls, tc)
		case p.hasText && p.thought:
			f.Reasoning += p.text
		case p.hasText:
			f.Content += p.text
		}
	}
	if !c.hasCandidate && c.blockReason != "" {
		finish = c.blockReason
	}
	if !d.dropText {
		d.content.WriteString(f.Content)
		d.think.WriteString(f.Reasoning)
	}
	d.counts = d.counts.Add(f.Semantic())
	switch finish {
	case "", "FINISH_REASON_UNSPECIFIED":
		// A chunk mid-stream, a long decode's checkpoint (a continuation
		// token without a finish) or a usage chunk after the finish.
	case finishStop, finishContinuation:
		// Accepted at HTTP EOF: usage may follow (R23.5).
		d.finish = neutralFinish(finish)
		f.FinishReason = d.finish
	case finishMaxTokens:
		if !d.providerFinish {
			f.FinishReason = neutralFinish(finish)
			f.Err = &codec.IncompleteError{FinishReason: f.FinishReason}
			f.Completion = &chat.Completion{FinishReason: f.FinishReason, Model: d.model, ID: d.id, Usage: d.usage}
			break
		}
		// A drop-in client's length finish: the provider's answer,
		// accepted at HTTP EOF like STOP (R13.3).
		d.finish, d.provided = neutralFinish(finish), true
		f.FinishReason = d.finish
	default:
		f.FinishReason = neutralFinish(finish)
		f.Err = &codec.IncompleteError{FinishReason: f.FinishReason}
		f.Completion = &chat.Completion{FinishReason: f.FinishReason, Model: d.model, ID: d.id, Usage: d.usage}
	}
	d.q.Push(f)
	if c.token != "" && f.Err == nil && resumableFinish(finish) {
		d.ckpts = append(d.ckpts, checkpoint{
			index: d.q.Index(), token: c.token,
			content: d.content.Len(), think: d.think.Len(), calls: len(d.calls), counts: d.counts,
			model: d.model, id: d.id, usage: d.usage,
		})
	}
}

// resumableFinish reports whether a chunk with finish reason r and a
// continuation token is a checkpoint: no finish (an intermediate
// checkpoint) or CONTINUATION (the end of a hop), as go-genai reads the
// continuation protocol.
func resumableFinish(r string) bool {
	return r == "" || r == "FINISH_REASON_UNSPECIFIED" || r == finishContinuation
}
