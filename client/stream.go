package client

import (
	"context"
	"errors"
	"io"
	"iter"

	"github.com/recourse-dev/recourse/chat"
	"github.com/recourse-dev/recourse/codec"
	"github.com/recourse-dev/recourse/event"
	"github.com/recourse-dev/recourse/internal/attempt"
	"github.com/recourse-dev/recourse/layer"
)

// StreamOption selects what a chunk stream delivers beside content.
type StreamOption func(*streamConfig)

type streamConfig struct{ reasoning, fragments bool }

// WithReasoning makes a chunk stream deliver reasoning text (R13.7).
func WithReasoning() StreamOption { return func(c *streamConfig) { c.reasoning = true } }

// WithToolFragments makes a chunk stream deliver tool-call fragments (R13.7).
func WithToolFragments() StreamOption { return func(c *streamConfig) { c.fragments = true } }

// ErrToolsNotSupported is the Detail of the event stream's error when the
// request has tools: single-turn event streams take none (R13.7).
var ErrToolsNotSupported = errors.New("recourse: event streams take no tools; use Stream or the broker")

// Stream runs a streamed completion and yields its chunks as they arrive:
// content, opt-in reasoning and tool-call fragments, then one Done chunk
// whose Completion carries the completed tool calls, finish reason, model
// and usage. Keepalives yield nothing. On failure it yields one error and
// stops: a *layer.RecoveryError (interrupted after semantic output,
// exhausted, cancelled, …), a *layer.PolicyError as the first and only item
// for an invalid per-call policy (R3.3), or an encode error. A consumer that
// stops ranging closes the stream; no incomplete text is kept anywhere, and
// with recovery on the open attempt is recorded as attempt_failed, followed
// by one cancelled event (R13.5).
// Cancelling ctx closes the local request even while the consumer is paused
// (R13.5); the typed cancellation is yielded at the next pull.
func (c *Client) Stream(ctx context.Context, req *chat.Request, opts ...StreamOption) iter.Seq2[chat.Chunk, error] {
	var cfg streamConfig
	for _, o := range opts {
		o(&cfg)
	}
	return func(yield func(chat.Chunk, error) bool) {
		fail := func(err error) { yield(chat.Chunk{}, err) }
		c.eachFrame(ctx, req, fail, func(fr layer.FrameReader, f codec.Frame) bool {
			ch := chat.Chunk{Frame: f.Index, Content: f.Content}
			d := codec.Counts{ContentBytes: int64(len(f.Content))}
			if cfg.reasoning {
				ch.Reasoning, ch.ReasoningSignature = f.Reasoning, f.ReasoningSignature
				d.ReasoningBytes = int64(len(f.Reasoning))
			}
			if cfg.fragments {
				ch.ToolCallFragments = f.Fragments
				d.ToolFragments = int64(len(f.Fragments))
			}
			if f.Done {
				ch.Done, ch.Completion = true, f.Completion
				d.CompletedToolCalls = f.Semantic().CompletedToolCalls
			} else if ch.Content == "" && ch.Reasoning == "" && ch.ReasoningSignature == "" && len(ch.ToolCallFragments) == 0 {
				return true
			}
			fr.Deliver(d)
			return yield(ch, nil)
		})
	}
}

// StreamEventType is the type of a StreamEvent.
type StreamEventType string

// The event stream's event types.
const (
	EventContent StreamEventType = "content"
	EventDone    StreamEventType = "done"
	EventError   StreamEventType = "error"
)

// StreamEvent is one item of an event stream.
type StreamEvent struct {
	// Type says which kind of event this is (EventContent, EventDone or
	// EventError) and so which of the other fields is set.
	Type StreamEventType
	// Text is the content of a content event.
	Text string
	// Completion is set on the done event.
	Completion *chat.Completion
	// Err is set on the error event: reason cancelled, interrupted_stream or
	// request_failed, with the *layer.RecoveryError when recovery ran.
	Err *layer.StreamError
}

// StreamEvents runs a streamed completion as events: content events, then
// a done event, or one error event. It takes no tools (R13.7) and delivers
// no reasoning, so delivered reasoning stays 0 (R13.2).
func (c *Client) StreamEvents(ctx context.Context, req *chat.Request) iter.Seq[StreamEvent] {
	return func(yield func(StreamEvent) bool) {
		if len(req.Tools) > 0 {
			yield(StreamEvent{Type: EventError, Err: &layer.StreamError{Reason: layer.StreamRequestFailed, Detail: ErrToolsNotSupported}})
			return
		}
		fail := func(err error) { yield(StreamEvent{Type: EventError, Err: streamError(err)}) }
		c.eachFrame(ctx, req, fail, func(fr layer.FrameReader, f codec.Frame) bool {
			if f.Done {
				fr.Deliver(codec.Counts{ContentBytes: int64(len(f.Content))})
				if f.Content != "" && !yield(StreamEvent{Type: EventContent, Text: f.Content}) {
					return false
				}
				yield(StreamEvent{Type: EventDone, Completion: f.Completion})
				return false
			}
			if f.Content == "" {
				return true
			}
			fr.Deliver(codec.Counts{ContentBytes: int64(len(f.Content))})
			return yield(StreamEvent{Type: EventContent, Text: f.Content})
		})
	}
}

// eachFrame opens a streamed request for req and calls frame with the
// reader and each frame it reads, until frame returns false or the stream
// ends (io.EOF). The error that opening or reading ends with goes to fail,
// while the reader is still open; the reader is closed before eachFrame
// returns. It is the frame loop of Stream and StreamEvents.
func (c *Client) eachFrame(ctx context.Context, req *chat.Request, fail func(error), frame func(layer.FrameReader, codec.Frame) bool) {
	fr, err := c.open(ctx, req)
	if err != nil {
		fail(err)
		return
	}
	defer fr.Close()
	for {
		f, err := fr.NextFrame()
		if err == io.EOF {
			return
		}
		if err != nil {
			fail(err)
			return
		}
		if !frame(fr, f) {
			return
		}
	}
}

// streamError maps a stream's error to the event API's StreamError.
func streamError(err error) *layer.StreamError {
	var re *layer.RecoveryError
	if errors.As(err, &re) {
		reason := layer.StreamRequestFailed
		switch {
		case re.Outcome == event.OutcomeCancelled:
			reason = layer.StreamCancelled
		case re.Outcome == event.OutcomeInterrupted && re.Failure.Acceptance == event.AcceptanceYes:
			reason = layer.StreamInterrupted
		}
		se := &layer.StreamError{Reason: reason, Recovery: re}
		if ev := event.Inspect(&re.Failure); ev != nil {
			var inner *layer.StreamError
			if errors.As(ev.Cause, &inner) {
				se.FinishReason = inner.FinishReason
			}
		}
		return se
	}
	var se *layer.StreamError
	if errors.As(err, &se) {
		return se
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return &layer.StreamError{Reason: layer.StreamCancelled, Detail: err}
	}
	return &layer.StreamError{Reason: layer.StreamRequestFailed, Detail: err}
}

// open sends a streaming request and returns its frame reader.
func (c *Client) open(ctx context.Context, req *chat.Request) (layer.FrameReader, error) {
	return c.openWithFallback(ctx, req)
}

// openOnce opens a streaming request on the client alone.
func (c *Client) openOnce(ctx context.Context, req *chat.Request) (layer.FrameReader, error) {
	r := *req
	r.Stream = true
	body, err := c.codec.Encode(&r)
	if err != nil {
		return nil, err
	}
	call := callFor(ctx, &r)
	hreq, err := c.newRequest(ctx, call, body, false)
	if err != nil {
		return nil, err
	}
	resp, err := c.chain.RoundTrip(hreq)
	if err != nil {
		return nil, err
	}
	if call.Result.Err != nil {
		resp.Body.Close()
		return nil, call.Result.Err
	}
	if call.Result.Stream != nil {
		return call.Result.Stream, nil
	}
	if resp.StatusCode/100 != 2 {
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		return nil, &StatusError{StatusCode: resp.StatusCode, Body: b}
	}
	dec, ok := c.codec.NewObserver(*call.Facts).(codec.StreamDecoder)
	if !ok {
		resp.Body.Close()
		return nil, errors.New("recourse: the codec decodes no stream frames")
	}
	return &plainFrames{ctx: ctx, body: resp.Body, dec: dec, buf: make([]byte, 32<<10)}, nil
}

// plainFrames reads frames from a stream without recovery (R1.1): errors
// are the transport's own or the decoder's.
type plainFrames struct {
	ctx     context.Context
	body    io.ReadCloser
	dec     codec.StreamDecoder
	buf     []byte
	readErr error // the body's error, taken once the frames read with it are handed over
	ended   bool  // End was called (at HTTP EOF)
	endErr  error // End's verdict
	err     error
}

func (p *plainFrames) NextFrame() (codec.Frame, error) {
	for {
		if p.err != nil {
			return codec.Frame{}, p.err
		}
		if f, ok := p.dec.Next(); ok {
			if f.Err != nil {
				p.err = attempt.FrameError(f.Err)
				continue
			}
			if f.Done {
				p.err = io.EOF
			}
			return f, nil
		}
		if err := p.readErr; err != nil {
			// Every frame of the bytes read with the error was handed over
			// first: a Read may return its last bytes together with io.EOF
			// (R1.1: as a plain client reads them).
			if err == io.EOF {
				if !p.ended {
					// End may queue the frames of a final line left
					// without its terminator (R13.3): they come first.
					p.ended, p.endErr = true, p.dec.End()
					continue
				}
				if err = p.endErr; err == nil {
					err = io.ErrUnexpectedEOF
				}
			}
			p.err = err
			continue
		}
		n, err := p.body.Read(p.buf)
		if n > 0 {
			p.dec.Write(p.buf[:n])
		}
		p.readErr = err
	}
}

func (p *plainFrames) Deliver(codec.Counts) {}

func (p *plainFrames) Close() error { return p.body.Close() }
