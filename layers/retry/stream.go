package retry

import (
	"errors"
	"io"
	"net"
	"net/http"
	"sync"
	"sync/atomic"

	"github.com/recourse-dev/recourse/codec"
	"github.com/recourse-dev/recourse/internal/attempt"
	"github.com/recourse-dev/recourse/layer"
)

// streamBody is the consumer's view of a recovering stream (R13). It reads
// the current attempt's body, hands over only whole frames, and when the
// attempt fails before any semantic evidence it runs the decision plane and
// continues from a new attempt; after semantic evidence it ends with the
// typed interrupted error. As an io.ReadCloser it returns the frames' exact
// bytes (drop-in use); as a layer.FrameReader it returns typed frames.
type streamBody struct {
	c       *call
	n       int
	a       *attempt.Attempt
	resp    *http.Response
	buf     *[readBufferSize]byte // from readBuffers while reading; back on Close
	readErr error
	err     error // sticky: io.EOF after the terminal frame, or the final error
	raw     []byte
	// state says who may touch the stream: idle, a Read or NextFrame
	// running on the reading goroutine (busy), busy with a Close asked for
	// by another goroutine (closing: the reader finishes it as it
	// returns), or closed.
	state atomic.Int32
	// tail holds the raw bytes of an in-band provider error frame that ended
	// the stream: a drop-in client reads them before the typed error, so it
	// reports the provider's error as it would without recourse.
	tail []byte
	// got holds, while capture is on, the current attempt's last bytes as
	// read (at most about 2×MaxEvidenceBytes): the evidence of a capture
	// failure (R10.5, R12.3).
	got []byte
	// framed says that an in-band error frame (the provider's or the
	// codec's) was handed over: the read error follows.
	framed bool
	// atEOF says that the current attempt's body reached HTTP EOF and its
	// decoder was ended; endErr is the decoder's verdict.
	atEOF  bool
	endErr error
	// held holds, for a drop-in stream, the frames without semantic
	// evidence read since the stream began — its preamble: a chat stream's
	// role chunk, the Responses API's response.created,
	// response.in_progress and the first output item — until the first
	// frame with evidence or the terminal frame comes, so that a resend
	// before output drops them and the reader sees one preamble (R13.9);
	// heldBytes counts their bytes. out holds the frames released, to hand
	// over in order.
	held      []codec.Frame
	heldBytes int
	out       []codec.Frame
	// shown says that a frame with evidence or the terminal frame was
	// handed over, or that the preamble outgrew maxHeld: nothing is held
	// after it.
	shown bool
}

// maxHeld bounds the preamble a drop-in stream holds (R13.9): a provider's
// preamble is a few hundred bytes to a few KiB; beyond this bound it is
// handed over as it stands, and holding ends.
const maxHeld = 1 << 20

func (c *call) openStream(n int, resp *http.Response) *http.Response {
	c.stream = true
	b := &streamBody{c: c, n: n, a: c.cur, resp: resp}
	c.lc.Result.LogicalID, c.lc.Result.Stream = c.logical, b
	out := *resp
	out.Body = b
	out.ContentLength = -1
	return &out
}

// The states of a streamBody.
const (
	idle int32 = iota
	busy
	closing
	closed
)

// enter marks the stream busy for a Read or NextFrame; it reports false
// once the stream is closed.
func (b *streamBody) enter() bool {
	return b.state.CompareAndSwap(idle, busy)
}

// leave marks the stream idle again; when a Close came meanwhile it
// finishes that close here, on the reading goroutine, and reports true.
func (b *streamBody) leave() bool {
	if b.state.CompareAndSwap(busy, idle) {
		return false
	}
	b.state.Store(closed)
	b.finishClose()
	return true
}

// closedErr is what a read of a closed stream returns: its final error, or
// errClosed.
func (b *streamBody) closedErr() error {
	if b.err != nil {
		return b.err
	}
	return errClosed
}

// NextFrame returns the next frame of the stream. For a drop-in stream the
// frames without evidence that open it come with its first frame with
// evidence, or its terminal frame (R13.9); when the stream ends before,
// they are left to Read.
func (b *streamBody) NextFrame() (codec.Frame, error) {
	if !b.enter() {
		return codec.Frame{}, b.closedErr()
	}
	f, err := b.next()
	if b.leave() {
		return codec.Frame{}, errClosed
	}
	return f, err
}

// next returns the next frame for the consumer. A drop-in stream (whose
// frames carry their bytes) holds the frames without semantic evidence
// that open it until the first frame with evidence or the terminal frame,
// then hands them over before it, in order; a resend drops them (fail).
// Keepalives are never held: they keep a client's idle timer from
// expiring while the preamble waits. A preamble that outgrows maxHeld is
// handed over as it stands, and nothing is held after it.
func (b *streamBody) next() (codec.Frame, error) {
	for {
		if len(b.out) > 0 {
			f := b.out[0]
			b.out[0] = codec.Frame{}
			b.out = b.out[1:]
			return f, nil
		}
		f, err := b.nextFrame()
		if err != nil || b.shown || f.Keepalive || b.c.in.info.TypedFrames {
			return f, err
		}
		if !f.Done && !f.Semantic().Any() {
			b.held = append(b.held, f)
			b.heldBytes += len(f.Raw)
			if b.heldBytes > maxHeld {
				b.shown = true
				b.out, b.held, b.heldBytes = b.held, nil, 0
			}
			continue
		}
		b.shown = true
		if len(b.held) == 0 {
			return f, nil
		}
		b.out = append(b.held, f)
		b.held, b.heldBytes = nil, 0
	}
}

// takeHeld returns the bytes of the held frames, in order, and drops them.
func (b *streamBody) takeHeld() []byte {
	var raw []byte
	if b.heldBytes > 0 {
		raw = make([]byte, 0, b.heldBytes)
	}
	for _, f := range b.held {
		raw = append(raw, f.Raw...)
	}
	clear(b.held)
	b.held, b.heldBytes = b.held[:0], 0
	return raw
}

func (b *streamBody) nextFrame() (codec.Frame, error) {
	for {
		if b.err != nil {
			return codec.Frame{}, b.err
		}
		if b.c.ctx.Err() != nil {
			// Abort wins over queued content and completion (R13.5).
			b.fail(layer.CategoryCancellation, b.c.ctx.Err(), nil, nil)
			continue
		}
		if f, ok := b.a.NextFrame(); ok {
			if b.frame(&f) {
				return f, nil
			}
			continue
		}
		if b.readErr != nil {
			err := b.readErr
			if err == io.EOF && !b.atEOF {
				// The decoder may queue the frames of a final line left
				// without its terminator as it ends (R13.3): they are
				// handled before its verdict.
				b.atEOF, b.endErr = true, b.a.EndStream()
				continue
			}
			b.readErr = nil
			b.ended(err)
			continue
		}
		if b.buf == nil {
			b.buf = readBuffers.Get().(*[readBufferSize]byte)
		}
		n, err := b.resp.Body.Read(b.buf[:])
		if b.a.OnWire != nil {
			b.got = append(b.got, b.buf[:n]...)
			if len(b.got) > 2*MaxEvidenceBytes {
				// Bounded: only the last MaxEvidenceBytes are evidence.
				b.got = append([]byte(nil), b.got[len(b.got)-MaxEvidenceBytes:]...)
			}
		}
		if err != nil {
			if captureError(err) != nil {
				// The capture of the bytes just read failed: the frames
				// they completed are never handed over (R12.3). Every
				// earlier frame was taken before this read.
				b.discard()
				b.ended(err)
				continue
			}
			b.readErr = err
		}
	}
}

// discard drops the frames queued in the current attempt's decoder.
func (b *streamBody) discard() {
	for {
		if _, ok := b.a.NextFrame(); !ok {
			return
		}
	}
}

// frame handles telemetry, failures and the terminal frame; it reports
// whether f is to be handed to the consumer. Abort wins over queued content,
// telemetry and completion (R13.5): the context is checked after every
// event, so an observer that cancels stops the frame it was told about.
func (b *streamBody) frame(f *codec.Frame) (deliver bool) {
	c := b.c
	aborted := func() bool {
		if c.ctx.Err() != nil {
			b.fail(layer.CategoryCancellation, c.ctx.Err(), nil, nil)
			return true
		}
		return false
	}
	telemetry := c.d.facts.FrameTelemetry && !f.Keepalive && (f.Err == nil || isStreamError(f.Err))
	if telemetry {
		ev := c.event(layer.EventTelemetry)
		ev.Frame = f.Index
		if err := c.send(ev); err != nil {
			b.err = err
			return false
		}
		if aborted() {
			return false
		}
		if f.Metrics != nil {
			ev := c.event(layer.EventMetrics)
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
			b.fail(layer.CategoryProviderResponse, f.Err, nil, f)
		default:
			b.fail(layer.CategoryProtocol, f.Err, nil, f)
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
			b.fail(layer.CategoryCancellation, captureCause(ce), ce, nil)
		case c.ctx.Err() != nil:
			b.fail(layer.CategoryCancellation, c.ctx.Err(), nil, nil)
		default:
			b.fail(layer.CategoryTransport, captureCause(ce), ce, nil)
		}
		return false
	}
	if err := c.emit(layer.EventAttemptSucceeded, nil, 0, 0); err != nil {
		b.err = err
		return false
	}
	if c.ctx.Err() != nil {
		// An observer of attempt_succeeded cancelled the call: the
		// terminal frame is not handed over, and the attempt is recorded
		// as cancelled before the one cancelled event (R9.2, R13.5).
		b.a.SetDelivered(before)
		b.fail(layer.CategoryCancellation, c.ctx.Err(), nil, nil)
		return false
	}
	c.d.Succeeded()
	c.lc.Result.WireAttempts = c.wire
	if comp := f.Completion; comp != nil {
		c.lc.Result.Response = layer.ResponseEvidence{FinishReason: comp.FinishReason, Model: comp.Model, Usage: comp.Usage}
	}
	b.err, b.got = io.EOF, nil
	return true
}

// ended handles the end of the current attempt's body: HTTP EOF or a read error.
func (b *streamBody) ended(err error) {
	var ce *layer.CaptureError
	switch {
	case errors.As(err, &ce) && b.c.ctx.Err() != nil:
		// The hook failed because the call was cancelled (it cancelled the
		// context itself, or returned its error once it was done):
		// cancellation wins over the capture failure (R4.1, R9.1). The
		// hook's failure stays private evidence (CaptureCause).
		b.fail(layer.CategoryCancellation, captureCause(ce), ce, nil)
	case ce != nil:
		b.fail(layer.CategoryTransport, captureCause(ce), ce, nil)
	case err == io.EOF:
		cause := b.endErr
		if cause == nil {
			cause = io.ErrUnexpectedEOF
		}
		cat := layer.CategoryTransport
		var pe *codec.ProviderError
		if errors.As(cause, &pe) {
			// A provider error object instead of a stream: the provider
			// refused the request; never eligible (R4.7).
			cat = layer.CategoryProviderResponse
		}
		b.fail(cat, cause, nil, nil)
	default:
		cat := layer.CategoryTransport
		var ne net.Error
		if b.c.ctx.Err() != nil {
			cat = layer.CategoryCancellation
		} else if errors.As(err, &ne) && ne.Timeout() {
			cat = layer.CategoryClientTimeout
		}
		b.fail(cat, err, nil, nil)
	}
}

// fail records the current attempt's failure and runs the decision plane;
// on an admitted resend it switches to the new attempt's body.
func (b *streamBody) fail(cat layer.Category, cause error, ce *layer.CaptureError, fr *codec.Frame) {
	c := b.c
	closeResp(b.resp)
	f := c.newFailure(b.a)
	f.Category = cat
	f.HTTPStatus = b.resp.StatusCode
	f.Acceptance = layer.AcceptanceYes
	ev := layer.Evidence{Cause: cause, Headers: b.resp.Header.Clone()}
	if cat == layer.CategoryCancellation {
		ev.Cause = c.ctx.Err()
	}
	if ce != nil {
		ev.CaptureCause, ev.Bytes = ce.Cause, b.got[max(0, len(b.got)-MaxEvidenceBytes):]
	}
	b.got = nil
	if fr != nil {
		f.Phase = layer.PhaseDecoding
		ev.Bytes = fr.Raw
		var pe *codec.ProviderError
		if errors.As(cause, &pe) {
			b.tail = fr.Raw
			c.noteCode(&f, &ev, pe.Code)
			if pe.Status >= 400 && pe.Status <= 599 && !f.Progress.Observed.Any() && !f.Progress.Delivered.Any() {
				// An in-band error that names its status, before any
				// output: the failure that status is (R23.3), so an
				// overload is resent like a 529 (R22.2).
				f.Category, f.HTTPStatus = layer.CategoryHTTP, pe.Status
				c.bodyHints(&f, fr.Raw)
			}
			c.quotaHint(&f, pe.Code)
		}
		ev.Response.FinishReason = fr.FinishReason
		if fr.Completion != nil {
			ev.Response.Model, ev.Response.Usage = fr.Completion.Model, fr.Completion.Usage
		}
	} else if pe := (*codec.ProviderError)(nil); cat == layer.CategoryProviderResponse && errors.As(cause, &pe) {
		// An error document in place of the stream (see ended).
		f.Phase = layer.PhaseDecoding
		c.noteCode(&f, &ev, pe.Code)
		c.quotaHint(&f, pe.Code)
	}
	noteStall(&f, cause)
	attachEvidence(&f, ev)
	f.Classification = c.d.Classify(&f, ce != nil, false)
	if cat != layer.CategoryCancellation {
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

// Deliver records evidence handed to the consumer.
func (b *streamBody) Deliver(cnt codec.Counts) { b.a.Deliver(cnt) }

// Read returns the exact bytes of whole frames (drop-in use). The frames
// without evidence that open the stream are held until its first frame
// with evidence or its terminal frame, and a resend drops them, so that
// the reader sees one preamble (R13.9). Three deliberate exceptions to
// the exact bytes: NDJSON blank keepalive lines are left out (they
// mean nothing, and the official Ollama client fails on them); an in-band
// provider error frame that ended the stream is handed over before the
// typed error, so the client reports the provider's error itself; and
// otherwise, when the stream ends with a *layer.RecoveryError other than a
// cancellation and the codec is a codec.ErrorFramer, its in-band error
// frame carrying the error's safe text comes before the read error, so a
// client that ignores its reader's error still fails. A cancelled stream
// returns the *layer.RecoveryError alone, which unwraps to the context's
// error (R9.1).
func (b *streamBody) Read(p []byte) (int, error) {
	if !b.enter() {
		return 0, b.closedErr()
	}
	n, err := b.read(p)
	if b.leave() {
		return 0, errClosed
	}
	return n, err
}

func (b *streamBody) read(p []byte) (int, error) {
	for len(b.raw) == 0 {
		f, err := b.next()
		if err != nil {
			if held := b.takeHeld(); len(held) > 0 && !b.cancelled(err) {
				// The stream ends: a held preamble comes before what ends
				// it, as the provider sent it, but abort wins over it
				// (R13.5).
				b.raw = held
				break
			}
			if len(b.tail) > 0 && err != io.EOF {
				b.raw, b.tail = b.tail, nil
				b.framed = true
				break
			}
			if fr := b.errorFrame(err); fr != nil {
				b.raw = fr
				break
			}
			return 0, err
		}
		if f.Keepalive && b.c.d.facts.HideKeepalives {
			continue
		}
		sem := f.Semantic()
		sem.CompletedToolCalls = 0
		b.a.Deliver(sem)
		b.raw = f.Raw
	}
	n := copy(p, b.raw)
	b.raw = b.raw[n:]
	return n, nil
}

// cancelled reports whether the stream's final error err is its
// cancellation: the call ended cancelled, or the reader closed the body.
func (b *streamBody) cancelled(err error) bool {
	var re *layer.RecoveryError
	return b.state.Load() >= closing || errors.Is(err, errClosed) ||
		(errors.As(err, &re) && re.Outcome == layer.OutcomeCancelled)
}

// errorFrame returns the codec's in-band error frame for the stream's final
// error err, once, or nil: none after a provider's own error frame, after
// Close, for an error that is not a *layer.RecoveryError, or for a
// cancellation — the caller who cancelled reads its context's error, which
// the *layer.RecoveryError unwraps to, as it would without recourse (R9.1).
func (b *streamBody) errorFrame(err error) []byte {
	var re *layer.RecoveryError
	if b.framed || b.state.Load() >= closing || !errors.As(err, &re) || re.Outcome == layer.OutcomeCancelled {
		return nil
	}
	ef, ok := b.c.t.l.codec.(codec.ErrorFramer)
	if !ok {
		return nil
	}
	b.framed = true
	return ef.ErrorFrame(re.Error())
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

// readBufferSize is the size of a stream body's read buffer.
const readBufferSize = 4 << 10

// readBuffers holds the read buffers of closed stream bodies for the next
// streams, so that a stream's read buffer costs no allocation in steady
// state.
var readBuffers = sync.Pool{New: func() any { return new([readBufferSize]byte) }}

// abandoned ends the lifecycle of a stream closed before its end (R13.5).
// There is no resend: the cancellation ends the call.
func (b *streamBody) abandoned() {
	c := b.c
	b.err = errClosed
	f := c.newFailure(b.a)
	f.Category, f.HTTPStatus, f.Acceptance = layer.CategoryCancellation, b.resp.StatusCode, layer.AcceptanceYes
	cause := c.ctx.Err()
	if cause == nil {
		cause = errClosed
	}
	f.Attach(layer.Evidence{Cause: cause, Headers: b.resp.Header.Clone()})
	f.Classification = c.d.Classify(&f, false, false)
	// The events' observer errors have nowhere to go: the consumer left.
	_, _, _ = c.afterFailure(&f, b.n, nil)
}

var errClosed = errors.New("recourse: stream closed")

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
