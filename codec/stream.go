package codec

import (
	"errors"
	"slices"

	"github.com/recourse-dev/recourse/chat"
)

// ErrNoEndMarker is the error a stream decoder's End returns (wrapped, or
// as itself) for a stream that reached HTTP EOF after its accepted finish
// but before its end marker, such as OpenAI's data: [DONE] (R13.3): the
// stream may hold everything, but it cannot be told from one cut just
// before its end. The text of a layer.RecoveryError whose failure it caused says
// that the end marker was missing.
var ErrNoEndMarker = errors.New("recourse: the stream ended after its finish but without its end marker")

// Frame is one decoded frame of a streamed response.
type Frame struct {
	// Raw is the frame's exact bytes on the wire (owned by the Frame).
	Raw []byte
	// Index is the frame's index among the attempt's valid frames, counting
	// from 1 and restarting with every attempt (R13.6). Keepalives and
	// malformed frames have none: 0.
	Index int
	// Keepalive marks a frame without meaning: an SSE comment, an NDJSON
	// blank line, an oMLX keepalive chunk (R14.2).
	Keepalive bool
	// Reasoning is the frame's decoded reasoning delta (Ollama "thinking",
	// "reasoning_content" or "reasoning" of compatible servers), or "".
	Reasoning string
	// ReasoningSignature is the provider's signature of a reasoning block
	// that this frame closes (Anthropic's content_block_stop of a signed
	// thinking block), or "": the block's text is then final and may be
	// sent back with it (R22.7).
	ReasoningSignature string
	// Content is the frame's decoded content delta, or "".
	Content string
	// Fragments are the tool-call fragments of the frame (legacy
	// function_call deltas included).
	Fragments []chat.ToolCallFragment
	// FinishReason is the provider's finish or done reason, when the frame
	// carries one.
	FinishReason string
	// Done marks the accepted end of the stream (R13.3); Completion then
	// holds the completed tool calls and the provider evidence.
	Done bool
	// Completion is the accepted completion of a Done frame. A frame that
	// ends the stream with an incomplete finish (Err an *IncompleteError,
	// such as a length finish) carries only the provider evidence in it —
	// finish reason, model, ID, usage — and never a message or a tool call,
	// so that a failure keeps that evidence (R10.5, R13.3).
	Completion *chat.Completion
	// Metrics are an Ollama done frame's numbers (R13.6).
	Metrics *Metrics
	// Err ends the stream: a *ProviderError sent in-band, an
	// *IncompleteError for a finish that does not accept the completion
	// (a length finish), or a *ProtocolError for a malformed frame.
	Err error
}

// Semantic returns the semantic evidence the frame carries (R13.2).
func (f *Frame) Semantic() Counts {
	c := Counts{ReasoningBytes: int64(len(f.Reasoning)), ContentBytes: int64(len(f.Content)), ToolFragments: int64(len(f.Fragments))}
	if f.Done && f.Completion != nil {
		c.CompletedToolCalls = int64(len(f.Completion.Message.ToolCalls))
	}
	return c
}

// IncompleteError is the Err of a frame that ends a stream on a finish the
// provider sends for a completion it did not finish, such as a length
// finish (R13.3): the stream ended, but its completion is not accepted.
// The engine hands it to the caller as a *layer.StreamError with reason
// incomplete_completion and the same FinishReason. Its Error text is that
// StreamError's.
type IncompleteError struct {
	// FinishReason is the provider's finish or done reason, as sent, for
	// example "length".
	FinishReason string
}

// DocumentedFinish reports whether reason is a finish or done reason a
// provider documents: stop, length, content_filter, tool_calls,
// function_call (OpenAI's chat completions) or load, unload (Ollama). A
// decoder for a consumer that takes such a finish as the provider's answer
// (RequestInfo.ProviderFinish) ends the stream on it; only these are named
// in an error's text, since a finish reason is the provider's own string.
func DocumentedFinish(reason string) bool { return slices.Contains(documentedFinishes, reason) }

var documentedFinishes = []string{"stop", "length", "content_filter", "tool_calls", "function_call", "load", "unload"}

// Error returns the message of the stream error the engine makes of e.
func (e *IncompleteError) Error() string {
	s := "recourse: stream incomplete_completion"
	if e.FinishReason != "" {
		s += " (finish " + e.FinishReason + ")"
	}
	return s
}

// BufferFreer is implemented by a StreamDecoder whose buffers can serve
// another stream's decoder once its own stream is over. The engine calls
// FreeBuffers when the caller closes the stream's body, after which it
// neither writes to the decoder nor reads a frame from it. The decoder must keep no slice of what it gave back; the
// frames it queued stay valid, and a Write after FreeBuffers works, into
// new buffers.
type BufferFreer interface {
	FreeBuffers()
}

// StreamDecoder is the Observer a codec returns for a streaming request: as
// bytes arrive (Write) it frames and decodes them, counts their semantic
// evidence, and queues the frames for Next. Frames are queued in wire order;
// no frame is held back once its last byte arrived. A StreamDecoder is used
// by one attempt and is not safe for concurrent use; the Attempt serializes
// access to it.
type StreamDecoder interface {
	Observer
	// Next returns the next queued frame, or ok=false when none is queued.
	Next() (f Frame, ok bool)
	// End is called once, at HTTP EOF. It may queue the frames of a final
	// line left without its terminator (a codec decision, R13.3), which
	// the caller takes with Next before acting on the verdict; it returns
	// the error for a stream that ended before its terminal frame (an
	// incomplete stream), or nil when the terminal frame has been queued.
	End() error
}
