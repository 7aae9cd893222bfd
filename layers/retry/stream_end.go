package retry

// stream_end.go holds how a recovering stream's attempt ends (EOF, a read error, a failure and its resend) and how the stream closes.

import (
	"errors"
	"io"
	"net"

	"github.com/recourse-dev/recourse/codec"
	"github.com/recourse-dev/recourse/event"
	"github.com/recourse-dev/recourse/layer"
)

// ended handles the end of the current attempt's body: HTTP EOF or a read error.
func (b *streamBody) ended(err error) {
	var ce *layer.CaptureError
	switch {
	case errors.As(err, &ce) && b.c.ctx.Err() != nil:
		// The hook failed because the call was cancelled (it cancelled the
		// context itself, or returned its error once it was done):
		// cancellation wins over the capture failure (R4.1, R9.1). The
		// hook's failure stays private evidence (CaptureCause).
		b.fail(event.CategoryCancellation, captureCause(ce), ce, nil)
	case ce != nil:
		b.fail(event.CategoryTransport, captureCause(ce), ce, nil)
	case err == io.EOF:
		cause := b.endErr
		if cause == nil {
			cause = io.ErrUnexpectedEOF
		}
		cat := event.CategoryTransport
		var pe *codec.ProviderError
		if errors.As(cause, &pe) {
			// A provider error object instead of a stream: the provider
			// refused the request; never eligible (R4.7).
			cat = event.CategoryProviderResponse
		}
		b.fail(cat, cause, nil, nil)
	default:
		cat := event.CategoryTransport
		var ne net.Error
		if b.c.ctx.Err() != nil {
			cat = event.CategoryCancellation
		} else if errors.As(err, &ne) && ne.Timeout() {
			cat = event.CategoryClientTimeout
		}
		b.fail(cat, err, nil, nil)
	}
}

// fail records the current attempt's failure and runs the decision plane;
// on an admitted resend it switches to the new attempt's body.
func (b *streamBody) fail(cat event.Category, cause error, ce *layer.CaptureError, fr *codec.Frame) {
	c := b.c
	closeResp(b.resp)
	f := c.newFailure(b.a)
	f.Category = cat
	f.HTTPStatus = b.resp.StatusCode
	f.Acceptance = event.AcceptanceYes
	ev := event.Evidence{Cause: cause, Headers: b.resp.Header.Clone()}
	if cat == event.CategoryCancellation {
		ev.Cause = c.ctx.Err()
	}
	if ce != nil {
		ev.CaptureCause, ev.Bytes = ce.Cause, b.got[max(0, len(b.got)-MaxEvidenceBytes):]
	}
	b.got = nil
	if fr != nil {
		f.Phase = event.PhaseDecoding
		ev.Bytes = fr.Raw
		var pe *codec.ProviderError
		if errors.As(cause, &pe) {
			b.tail = fr.Raw
			c.noteCode(&f, &ev, pe.Code)
			if pe.Status >= 400 && pe.Status <= 599 && !f.Progress.Observed.Any() && !f.Progress.Delivered.Any() {
				// An in-band error that names its status, before any
				// output: the failure that status is (R23.3), so an
				// overload is resent like a 529 (R22.2).
				f.Category, f.HTTPStatus = event.CategoryHTTP, pe.Status
				c.bodyHints(&f, fr.Raw)
			}
			c.quotaHint(&f, pe.Code)
		}
		ev.Response.FinishReason = fr.FinishReason
		if fr.Completion != nil {
			ev.Response.Model, ev.Response.Usage = fr.Completion.Model, fr.Completion.Usage
		}
	} else if pe := (*codec.ProviderError)(nil); cat == event.CategoryProviderResponse && errors.As(cause, &pe) {
		// An error document in place of the stream (see ended).
		f.Phase = event.PhaseDecoding
		c.noteCode(&f, &ev, pe.Code)
		c.quotaHint(&f, pe.Code)
	}
	noteStall(&f, cause)
	attachEvidence(&f, ev)
	f.Classification = c.d.Classify(&f, ce != nil, false)
	if cat != event.CategoryCancellation {
		c.noteResume(b.a, &f, resumable(cat, ce, fr))
	}
	resp, err := c.loop(b.n+1, &f, nil)
	if err != nil {
		b.err = err
		return
	}
	if c.resume == nil {
		// A resend: its own preamble replaces the held one (R13.9). A
		// resume read continues after the held frames, which stay.
		clear(b.held)
		b.held, b.heldBytes = b.held[:0], 0
	}
	b.n, b.a, b.resp, b.readErr = c.wire, c.cur, resp, nil
	b.atEOF, b.endErr = false, nil
	b.tail = nil // the failed attempt's in-band error frame is not the new one's
}

// Close releases the current attempt's body. A stream closed before its
// end — its consumer stopped ranging, or a drop-in client closed the body
// early — keeps no incomplete text and sends nothing more, and its
// lifecycle ends like a cancellation's: the open attempt is recorded as
// attempt_failed (category cancellation), then one cancelled event
// (R13.5). Close may be called from another goroutine while a Read or
// NextFrame waits — for the provider, a backoff or an admission hook —:
// it then cancels the call's context, so that the wait ends at once, no
// attempt is started after it, and the reader finishes the close as it
// returns errClosed. Close is idempotent and safe for concurrent use.
func (b *streamBody) Close() error {
	for {
		switch b.state.Load() {
		case idle:
			if !b.state.CompareAndSwap(idle, closed) {
				continue
			}
			b.finishClose()
			return nil
		case busy:
			if !b.state.CompareAndSwap(busy, closing) {
				continue
			}
			if b.c.stop != nil {
				b.c.stop(errClosed)
			}
			return nil
		default:
			return nil
		}
	}
}

// finishClose closes the stream on the goroutine that owns it.
func (b *streamBody) finishClose() {
	closeResp(b.resp)
	if b.err == nil {
		b.abandoned()
	}
	// b.err is set now, so nothing reads into the buffer again, nor
	// writes to the attempt's decoder: its line buffer can serve the next
	// stream.
	b.a.FreeBuffers()
	if b.buf != nil {
		readBuffers.Put(b.buf)
		b.buf = nil
	}
	if b.c.stop != nil {
		b.c.stop(errClosed)
	}
}

// abandoned ends the lifecycle of a stream closed before its end (R13.5).
// There is no resend: the cancellation ends the call.
func (b *streamBody) abandoned() {
	c := b.c
	b.err = errClosed
	f := c.newFailure(b.a)
	f.Category, f.HTTPStatus, f.Acceptance = event.CategoryCancellation, b.resp.StatusCode, event.AcceptanceYes
	cause := c.ctx.Err()
	if cause == nil {
		cause = errClosed
	}
	f.Attach(event.Evidence{Cause: cause, Headers: b.resp.Header.Clone()})
	f.Classification = c.d.Classify(&f, false, false)
	// The events' observer errors have nowhere to go: the consumer left.
	_, _, _ = c.afterFailure(&f, b.n, nil)
}

var errClosed = errors.New("recourse: stream closed")
