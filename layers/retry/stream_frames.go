package retry

// stream_frames.go holds a recovering stream's handling of each decoded frame: telemetry, in-band failures and the terminal frame.

import (
	"errors"
	"io"

	"github.com/recourse-dev/recourse/codec"
	"github.com/recourse-dev/recourse/event"
	"github.com/recourse-dev/recourse/layer"
)

// frame handles telemetry, failures and the terminal frame; it reports
// whether f is to be handed to the consumer. Abort wins over queued content,
// telemetry and completion (R13.5): the context is checked after every
// event, so an observer that cancels stops the frame it was told about.
// It stays one function of more than 80 lines because its steps run in
// R13.5's order on one frame (telemetry, a failure, the capture's decision
// at the terminal frame, then the success), each able to end the attempt,
// with the delivered count to restore kept between them.
func (b *streamBody) frame(f *codec.Frame) (deliver bool) {
	c := b.c
	aborted := func() bool {
		if c.ctx.Err() != nil {
			b.fail(event.CategoryCancellation, c.ctx.Err(), nil, nil)
			return true
		}
		return false
	}
	telemetry := c.d.facts.FrameTelemetry && !f.Keepalive && (f.Err == nil || isStreamError(f.Err))
	if telemetry {
		ev := c.event(event.Telemetry)
		ev.Frame = f.Index
		if err := c.send(ev); err != nil {
			b.err = err
			return false
		}
		if aborted() {
			return false
		}
		if f.Metrics != nil {
			ev := c.event(event.Metrics)
			m := *f.Metrics
			ev.Metrics = &m
			if err := c.send(ev); err != nil {
				b.err = err
				return false
			}
			if aborted() {
				return false
			}
		}
	}
	if f.Err != nil {
		var pe *codec.ProviderError
		switch {
		case errors.As(f.Err, &pe), isStreamError(f.Err):
			b.fail(event.CategoryProviderResponse, f.Err, nil, f)
		default:
			b.fail(event.CategoryProtocol, f.Err, nil, f)
		}
		return false
	}
	if !f.Done {
		return true
	}
	if aborted() {
		return false
	}
	before := b.a.Progress().Delivered
	b.a.Deliver(codec.Counts{CompletedToolCalls: f.Semantic().CompletedToolCalls})
	b.a.Finish() // the sender keeps the connection for reuse
	// Closing the body takes the capture's end marker when HTTP EOF did not
	// come first. Its hook decides here, before the success is reported —
	// one decision, whichever read the end marker came with: a hook that
	// cancelled the call ends it cancelled, one that failed ends it
	// capture_failed, and attempt_succeeded is never followed by a failure
	// of the capture (R11, R12.3).
	var closeErr error
	if b.resp != nil && b.resp.Body != nil {
		closeErr = b.resp.Body.Close()
	}
	if ce := captureError(closeErr); ce != nil || c.ctx.Err() != nil {
		b.a.SetDelivered(before)
		switch {
		case c.ctx.Err() != nil && ce != nil:
			b.fail(event.CategoryCancellation, captureCause(ce), ce, nil)
		case c.ctx.Err() != nil:
			b.fail(event.CategoryCancellation, c.ctx.Err(), nil, nil)
		default:
			b.fail(event.CategoryTransport, captureCause(ce), ce, nil)
		}
		return false
	}
	if err := c.emit(event.AttemptSucceeded, nil, 0, 0); err != nil {
		b.err = err
		return false
	}
	if c.ctx.Err() != nil {
		// An observer of attempt_succeeded cancelled the call: the
		// terminal frame is not handed over, and the attempt is recorded
		// as cancelled before the one cancelled event (R9.2, R13.5).
		b.a.SetDelivered(before)
		b.fail(event.CategoryCancellation, c.ctx.Err(), nil, nil)
		return false
	}
	c.d.Succeeded()
	c.lc.Result.WireAttempts = c.wire
	if comp := f.Completion; comp != nil {
		c.lc.Result.Response = event.ResponseEvidence{FinishReason: comp.FinishReason, Model: comp.Model, Usage: comp.Usage}
	}
	b.err, b.got = io.EOF, nil
	return true
}

// captureError returns the *layer.CaptureError in err's chain, or nil. It
// answers io.EOF, the usual end of a body, without errors.As, whose target
// would cost every stream an allocation.
func captureError(err error) *layer.CaptureError {
	if err == nil || err == io.EOF {
		return nil
	}
	var ce *layer.CaptureError
	if errors.As(err, &ce) {
		return ce
	}
	return nil
}

// isStreamError reports whether err is a *layer.StreamError (a length or
// other incomplete finish). It keeps the target off the per-frame path's
// heap: a keepalive frame allocates nothing.
func isStreamError(err error) bool {
	var se *layer.StreamError
	return errors.As(err, &se)
}
